//! One key's owner and zombie flows over one log, stepped by the harness as the model's
//! actions: what every Kafka target drives.

use super::*;

/// One key's owner and zombie flows over one log.
pub struct World {
    pub(super) variant: Variant,
    pub(super) ops: Ops,
    pub(super) max: u8,
    pub(super) log: Log,
    pub(super) input: String,
    /// The generation metadata the zombie's flow carries (the one its consumer captured).
    pub(super) captured: Arc<Mutex<GroupMetadata>>,
    pub(super) sink: Arc<Sink>,
    pub(super) seen: usize,
    pub(super) owner_commit: Arc<GroupCommit<Producer>>,
    /// None while the key is evicted (after a delete), until the owner recovers.
    pub(super) owner: Option<KafkaFlow<Producer>>,
    pub(super) owner_pos: u8,
    pub(super) rebalanced: bool,
    pub(super) zombie: Option<Arc<GroupCommit<Producer>>>,
    /// The member's flows: the zombie's is registered on its partition, and the rebalance
    /// callback revokes it through this registry, built as the variant says (the design tears
    /// the flow down in the revoke; the decoupled mutant does not).
    pub(super) flows: FlowRegistry,
}

impl World {
    /// A world on the in-memory log.
    pub fn memory(variant: Variant, ops: Ops, max: u8) -> World {
        World::new(variant, ops, max, &Backend::MEMORY).expect("the memory log opens")
    }

    pub fn new(variant: Variant, ops: Ops, max: u8, backend: &Backend) -> Result<World, Error> {
        let (log, input) = match backend.kind() {
            BackendKind::Memory => {
                let mem = MemProducer::new();
                mem.log().live_generation = Some(1);
                let log = Log::Mem {
                    mem,
                    live_gen: Arc::new(AtomicI32::new(1)),
                    epochs: Arc::new(Mutex::new(0)),
                };
                (log, INPUT.to_string())
            }
            #[cfg(feature = "kafka")]
            BackendKind::Kafka => {
                let (real, input) = RealLog::open(backend.address()?)?;
                (Log::Real(Box::new(real)), input)
            }
            other if !PRODUCERS.contains(&other) => {
                return Err(Error::Unsupported {
                    needs: "the Kafka design runs on memory or kafka",
                    backend: other,
                })
            }
            other => return Err(Error::NotCompiled(other)),
        };
        let sink = Arc::new(Sink::default());
        let producer = log.producer(variant.design, "owner")?;
        let owner_commit = group_commit(variant, &input, &log, producer, log.owner_meta(), &sink);
        let generation = log.live_generation();
        let owner = KafkaFlow::new(owner_commit.clone(), 0, generation, sink.clone())
            .without_replay_filter();
        let captured = Arc::new(Mutex::new(GroupMetadata::group_only(&log.group_id())));
        let flows = FlowRegistry::new("A", variant.teardown(), sink.clone());
        Ok(World {
            variant,
            ops,
            max,
            log,
            input,
            captured,
            sink,
            seen: 0,
            owner_commit,
            owner: Some(owner),
            owner_pos: 0,
            rebalanced: false,
            zombie: None,
            flows,
        })
    }

    /// The compacted topic's last durable record for the key.
    pub fn topic(&self) -> Result<Cell, Error> {
        match self.log.last_record()? {
            None => Ok(Cell::ABSENT),
            Some(read) => Ok(cell_as_set(&read)?),
        }
    }

    pub(super) fn captured(&self) -> GroupMetadata {
        self.captured
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(super) fn owner_done(&self) -> bool {
        self.owner_pos == self.max && self.owner.is_some()
    }

    /// What the implementation can do next, as its own state says.
    pub fn moves(&self) -> Vec<Move> {
        let mut moves = Vec::new();
        match &self.owner {
            Some(_) if self.owner_pos < self.max => moves.push(Move::OwnerFold),
            Some(_) => {}
            None => moves.push(Move::OwnerRecover),
        }
        if !self.rebalanced {
            moves.push(Move::Rebalance);
        }
        let epoch = self.variant.design == Design::ProducerEpoch;
        if epoch && self.rebalanced && self.zombie.is_none() {
            moves.push(Move::ZombieInit);
        }
        if let Some(z) = &self.zombie {
            if !epoch && self.captured().generation_id != self.log.live_generation() {
                moves.push(Move::Poll);
            }
            // A torn-down flow is gone: it takes no more steps.
            if !z.is_torn_down() {
                moves.extend((1..=self.max).map(Move::ZombieCommit));
            }
        }
        moves
    }

    /// Takes one step and returns its event.
    pub fn apply(&mut self, mv: Move) -> Result<KafkaEvent, Error> {
        #[cfg(feature = "kafka")]
        if let Log::Real(r) = &self.log {
            r.keep_alive();
        }
        match mv {
            Move::OwnerFold => self.owner_fold(),
            Move::OwnerRecover => self.owner_recover(),
            Move::Rebalance => self.rebalance(),
            Move::Poll => self.poll(),
            Move::ZombieInit => self.zombie_init(),
            Move::ZombieCommit(m) => self.zombie_commit(m),
        }
    }

    pub(super) fn muted<R>(&self, f: impl FnOnce() -> R) -> R {
        self.sink.muted.store(true, Ordering::SeqCst);
        let r = f();
        self.sink.muted.store(false, Ordering::SeqCst);
        r
    }

    /// The Kafka steps recorded since the last call.
    pub(super) fn fresh(&mut self) -> Vec<KafkaStep> {
        let all = self.sink.rec.kafka_steps();
        let new = all[self.seen.min(all.len())..].to_vec();
        self.seen = all.len();
        new
    }

    pub(super) fn owner_fold(&mut self) -> Result<KafkaEvent, Error> {
        let o = self.owner_pos + 1;
        let ops = self.ops;
        let flow = self
            .owner
            .as_mut()
            .ok_or_else(|| HarnessError::out_of_order("OwnerFold", "the owner's key is evicted"))?;
        let before = flow.value(KEY).map(<[u8]>::to_vec);
        flow.fold(KEY, o as i64, &payload(ops, o));
        let result = flow.flush();
        if self.variant.design == Design::ProducerEpoch
            && result.as_ref().is_err_and(CommitError::is_fence)
        {
            // A later init with the stable id fenced the owner: it restarts its producer
            // (taking the highest epoch back) and retries the same fold, one model step.
            self.restart_owner(before, o)?;
        }
        if ops.at(o) == Op::Delete {
            self.owner = None; // the key is evicted
        }
        self.owner_pos = o;
        let steps = self.fresh();
        let offset = steps.iter().find_map(|s| match s {
            KafkaStep::OwnerFold { offset, .. } => Some(*offset),
            _ => None,
        });
        let outcome = steps.iter().rev().find_map(|s| match s {
            KafkaStep::Await { outcome, .. } => Some(outcome.clone()),
            _ => None,
        });
        let offset = offset
            .ok_or_else(|| HarnessError::not_recorded("OwnerFold step of the owner's fold"))?;
        let outcome =
            outcome.ok_or_else(|| HarnessError::not_recorded("outcome of the owner's flush"))?;
        Ok(KafkaEvent::OwnerFold {
            offset: offset as u64,
            op: ops.at(o),
            outcome: outcome_of(&outcome),
            topic: Some(self.topic()?),
        })
    }

    /// The Epoch design's owner after a fence: a new producer (init, the highest epoch), its
    /// state before the fold restored, the fold redone and flushed.
    pub(super) fn restart_owner(&mut self, before: Option<Vec<u8>>, o: u8) -> Result<(), Error> {
        let producer = self.log.producer(self.variant.design, "owner")?;
        let meta = self.log.owner_meta();
        self.owner_commit = group_commit(
            self.variant,
            &self.input,
            &self.log,
            producer,
            meta,
            &self.sink,
        );
        let generation = self.log.live_generation();
        let mut flow = KafkaFlow::new(
            self.owner_commit.clone(),
            o as i64,
            generation,
            self.sink.clone(),
        )
        .without_replay_filter();
        let restored = match before {
            Some(value) => Read::Live {
                offset: (o - 1) as u64,
                value,
            },
            None => Read::Absent,
        };
        let ops = self.ops;
        self.muted(|| {
            flow.recover(HashMap::from([(KEY.to_string(), restored)]));
            flow.fold(KEY, o as i64, &payload(ops, o));
        });
        let _ = flow.flush(); // its outcome is recorded (Await)
        self.owner = Some(flow);
        Ok(())
    }

    // Every flow here runs without K-4's replay filter: the #828 Kafka model this target checks
    // has its owner fold the next offset whatever it recovered (its zombie may have written
    // above it), so the filter's drop would be a step the model does not take.
    pub(super) fn owner_recover(&mut self) -> Result<KafkaEvent, Error> {
        if self.owner.is_some() {
            return Err(HarnessError::out_of_order(
                "OwnerRecover",
                "the owner's key is loaded: nothing to recover",
            ));
        }
        let read = self.log.last_record()?.unwrap_or(Read::Absent);
        let generation = self.log.live_generation();
        let mut flow = KafkaFlow::new(
            self.owner_commit.clone(),
            self.owner_pos as i64 + 1,
            generation,
            self.sink.clone(),
        )
        .without_replay_filter();
        flow.recover(HashMap::from([(KEY.to_string(), read)]));
        let state = match flow.value(KEY) {
            Some(value) => contents_as_set(value)?,
            None => Offsets::EMPTY,
        };
        self.owner = Some(flow);
        let steps = self.fresh();
        if !steps
            .iter()
            .any(|s| matches!(s, KafkaStep::OwnerRecover { .. }))
        {
            return Err(HarnessError::not_recorded(
                "OwnerRecover step of the owner's recovery",
            ));
        }
        Ok(KafkaEvent::OwnerRecover {
            owner_state: Some(state),
            topic: Some(self.topic()?),
        })
    }

    /// The group moves to the next generation; the partition's new owner carries it, while the
    /// old owner's flow lives on with the generation it captured (the zombie).
    pub(super) fn rebalance(&mut self) -> Result<KafkaEvent, Error> {
        if self.rebalanced {
            return Err(HarnessError::out_of_order(
                "Rebalance",
                "the harness rebalances once",
            ));
        }
        let old = self.log.live_meta();
        match &mut self.log {
            Log::Mem { mem, live_gen, .. } => {
                let new = live_gen.fetch_add(1, Ordering::SeqCst) + 1;
                mem.log().live_generation = Some(new);
            }
            #[cfg(feature = "kafka")]
            Log::Real(r) => r.rebalance(&self.input)?,
        }
        self.rebalanced = true;
        if self.variant.design != Design::ProducerEpoch {
            *self.captured.lock().unwrap_or_else(|e| e.into_inner()) = old;
            self.start_zombie()?;
        }
        self.sink.kafka(&KafkaStep::Rebalance {
            member: "B".into(),
            generation: self.log.live_generation(),
            partitions: vec![0],
        });
        let generation = self
            .fresh()
            .iter()
            .find_map(|s| match s {
                KafkaStep::Rebalance { generation, .. } => Some(*generation),
                _ => None,
            })
            .ok_or_else(|| HarnessError::not_recorded("Rebalance step"))?;
        Ok(KafkaEvent::Rebalance {
            live_gen: u64::try_from(self.log.model_generation(generation)).ok(),
        })
    }

    /// The zombie's consumer runs the rebalance callback: it captures the live generation and,
    /// coupled, tears the revoked flow down before returning (`MemberContext::pre_rebalance`).
    pub(super) fn poll(&mut self) -> Result<KafkaEvent, Error> {
        let zombie = self
            .zombie
            .clone()
            .ok_or_else(|| HarnessError::out_of_order("Poll", "no zombie to poll"))?;
        let live = self.log.live_meta();
        let generation = live.generation_id;
        *self.captured.lock().unwrap_or_else(|e| e.into_inner()) = live;
        self.flows.register(0, zombie);
        let torn_down = self.flows.revoke(&[0]);
        self.sink.kafka(&KafkaStep::Poll {
            member: "A".into(),
            generation,
            torn_down,
        });
        let step = self.fresh().into_iter().find_map(|s| match s {
            KafkaStep::Poll {
                generation,
                torn_down,
                ..
            } => Some((generation, torn_down)),
            _ => None,
        });
        let (generation, torn_down) =
            step.ok_or_else(|| HarnessError::not_recorded("Poll step"))?;
        Ok(KafkaEvent::Poll {
            z_captured_gen: u64::try_from(self.log.model_generation(generation)).ok(),
            torn_down: Some(!torn_down.is_empty()),
        })
    }

    /// The revoked owner's group commit: its own producer, the generation it captured.
    pub(super) fn start_zombie(&mut self) -> Result<(), Error> {
        let producer = self.log.producer(self.variant.design, "zombie")?;
        let meta = zombie_meta(&self.captured);
        self.zombie = Some(group_commit(
            self.variant,
            &self.input,
            &self.log,
            producer,
            meta,
            &self.sink,
        ));
        Ok(())
    }

    /// Epoch: the stale owner initialises its producer with the stable id, late: it takes the
    /// highest epoch.
    pub(super) fn zombie_init(&mut self) -> Result<KafkaEvent, Error> {
        if self.variant.design != Design::ProducerEpoch {
            // The generation designs have no stable id: nothing to initialise (a stutter).
            return Ok(KafkaEvent::ZombieInit {});
        }
        self.start_zombie()?;
        self.sink.kafka(&KafkaStep::ZombieInit {
            transactional_id: format!("{}-snapshots-0", self.log.group_id()),
        });
        if !self
            .fresh()
            .iter()
            .any(|s| matches!(s, KafkaStep::ZombieInit { .. }))
        {
            return Err(HarnessError::not_recorded("ZombieInit step"));
        }
        Ok(KafkaEvent::ZombieInit {})
    }

    /// The zombie's flow folds the records up to `m` (its own, stale view) and flushes.
    pub(super) fn zombie_commit(&mut self, m: u8) -> Result<KafkaEvent, Error> {
        let commit = self
            .zombie
            .clone()
            .ok_or_else(|| HarnessError::out_of_order("ZombieCommit", "no zombie flow"))?;
        let generation = self.captured().generation_id;
        let mut flow =
            KafkaFlow::new(commit, 0, generation, self.sink.clone()).without_replay_filter();
        flow.mark_zombie();
        let ops = self.ops;
        self.muted(|| {
            for j in 1..=m {
                flow.fold(KEY, j as i64, &payload(ops, j));
            }
        });
        let _ = flow.flush(); // the outcome is in the ZombieCommit step
        let outcome = self
            .fresh()
            .iter()
            .find_map(|s| match s {
                KafkaStep::ZombieCommit { outcome, .. } => Some(outcome.clone()),
                _ => None,
            })
            .ok_or_else(|| HarnessError::not_recorded("ZombieCommit step of the zombie's flush"))?;
        Ok(KafkaEvent::ZombieCommit {
            offset: m as u64,
            op: ops.at(m),
            outcome: outcome_of(&outcome),
            topic: Some(self.topic()?),
        })
    }
}

/// The zombie's flow carries the metadata its consumer captured, not the live one.
pub(super) fn zombie_meta(captured: &Arc<Mutex<GroupMetadata>>) -> Arc<dyn GroupMetadataSource> {
    let captured = captured.clone();
    Arc::new(move || Some(captured.lock().unwrap_or_else(|e| e.into_inner()).clone()))
}

pub(super) fn group_commit(
    variant: Variant,
    input: &str,
    log: &Log,
    producer: Producer,
    meta: Arc<dyn GroupMetadataSource>,
    sink: &Arc<Sink>,
) -> Arc<GroupCommit<Producer>> {
    let mut config =
        GroupCommitConfig::new(InputPartition::new(input, 0), 0).fence(match variant.design {
            Design::Generation => Fence::Generation,
            Design::Unfenced => Fence::Unfenced,
            Design::ProducerEpoch => Fence::ProducerEpoch {
                group_id: log.group_id(),
            },
        });
    if !variant.seeded {
        config = config.unseeded();
    }
    Arc::new(GroupCommit::new(producer, config, meta, sink.clone()))
}
