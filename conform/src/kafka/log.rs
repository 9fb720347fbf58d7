//! The records a world's flows consume and the topic they write: in memory, or on a real
//! broker, read back read_committed after every step; and the steps the harness takes.

use super::*;

/// A step the harness can take: the model's actions, as the implementation performs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Move {
    OwnerFold,
    OwnerRecover,
    Rebalance,
    Poll,
    ZombieInit,
    ZombieCommit(u8),
}

impl Move {
    pub(super) fn of_kafka(action: KafkaAction) -> Move {
        match action {
            KafkaAction::OwnerFold => Move::OwnerFold,
            KafkaAction::OwnerRecover => Move::OwnerRecover,
            KafkaAction::Rebalance => Move::Rebalance,
            KafkaAction::Poll => Move::Poll,
            KafkaAction::ZombieCommit(m) => Move::ZombieCommit(m),
        }
    }

    pub(super) fn of_epoch(action: EpochAction) -> Move {
        match action {
            EpochAction::OwnerFold => Move::OwnerFold,
            EpochAction::OwnerRecover => Move::OwnerRecover,
            EpochAction::Rebalance => Move::Rebalance,
            EpochAction::ZombieInit => Move::ZombieInit,
            EpochAction::ZombieCommit(m) => Move::ZombieCommit(m),
        }
    }

    /// The Kafka model's action for this step (`ZombieInit` is none: a stutter there).
    pub(super) fn kafka_action(self) -> Option<KafkaAction> {
        Some(match self {
            Move::OwnerFold => KafkaAction::OwnerFold,
            Move::OwnerRecover => KafkaAction::OwnerRecover,
            Move::Rebalance => KafkaAction::Rebalance,
            Move::Poll => KafkaAction::Poll,
            Move::ZombieCommit(m) => KafkaAction::ZombieCommit(m),
            Move::ZombieInit => return None,
        })
    }
}

/// The input record at offset `o`: a persist carries its offset, a delete is empty.
pub(super) fn payload(ops: Ops, o: u8) -> Vec<u8> {
    match ops.at(o) {
        Op::Persist => o.to_string().into_bytes(),
        Op::Delete => Vec::new(),
    }
}

/// Where the flows write and whose generations they carry.
pub(super) enum Log {
    /// One shared in-memory log; the coordinator's generation is `live_gen`.
    Mem {
        mem: MemProducer,
        live_gen: Arc<AtomicI32>,
        epochs: Arc<Mutex<u32>>,
    },
    /// A real broker: the topics and group are this world's own; member `a` is the consumer
    /// whose generation the flows carry, `b` the member whose join makes the rebalance.
    #[cfg(feature = "kafka")]
    Real(Box<RealLog>),
}

#[cfg(feature = "kafka")]
pub(super) struct RealLog {
    pub(super) bootstrap: String,
    pub(super) snapshots: String,
    pub(super) group: String,
    pub(super) a: Member,
    pub(super) b: Option<Member>,
    /// The generation `a` joined at: event generations are counted from it (the model's 1).
    pub(super) base: i32,
}

#[cfg(feature = "kafka")]
pub(super) static NAMES: AtomicU64 = AtomicU64::new(0);

/// A name no other world (or earlier run on the same broker) uses.
#[cfg(feature = "kafka")]
pub(super) fn unique(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "conform-{name}-{}-{nanos:x}-{}",
        std::process::id(),
        NAMES.fetch_add(1, Ordering::Relaxed)
    )
}

#[cfg(feature = "kafka")]
pub(super) const JOIN_TIMEOUT: Duration = Duration::from_secs(60);

#[cfg(feature = "kafka")]
impl RealLog {
    pub(super) fn open(bootstrap: &str) -> Result<(RealLog, String), Error> {
        let input = unique("in");
        let snapshots = unique("snap");
        let group = unique("g");
        create_topics(bootstrap, &[(&input, 1, false), (&snapshots, 1, true)])
            .map_err(Error::open("creating the world's topics"))?;
        let a = Member::join(
            bootstrap,
            &group,
            &input,
            "A",
            &MemberConfig::default(),
            no_trace(),
        )
        .map_err(Error::open("member A joining"))?;
        a.poll_until_assigned(JOIN_TIMEOUT)
            .map_err(Error::open("member A's assignment"))?;
        let base = group_metadata_of(&a.consumer)
            .map(|m| m.generation_id)
            .filter(|g| *g >= 0)
            .ok_or_else(|| {
                HarnessError::not_recorded("generation of member A after its assignment")
            })?;
        let log = RealLog {
            bootstrap: bootstrap.to_string(),
            snapshots,
            group,
            a,
            b: None,
            base,
        };
        Ok((log, input))
    }

    pub(super) fn live(&self) -> GroupMetadata {
        group_metadata_of(&self.a.consumer)
            .unwrap_or_else(|| GroupMetadata::group_only(&self.group))
    }

    /// Keeps both members inside `max.poll.interval` (their rebalance callbacks run here).
    pub(super) fn keep_alive(&self) {
        let _ = self.a.poll(Duration::ZERO);
        if let Some(b) = &self.b {
            let _ = b.poll(Duration::ZERO);
        }
    }

    /// Member B joins; both poll until A is a member of the next generation.
    pub(super) fn rebalance(&mut self, input: &str) -> Result<(), Error> {
        let before = self.live().generation_id;
        let b = Member::join(
            &self.bootstrap,
            &self.group,
            input,
            "B",
            &MemberConfig::default(),
            no_trace(),
        )
        .map_err(Error::open("member B joining"))?;
        let deadline = Instant::now() + JOIN_TIMEOUT;
        while self.live().generation_id == before
            || self.a.assigned().is_none()
            || b.assigned().is_none()
        {
            if Instant::now() > deadline {
                return Err(HarnessError::timed_out(
                    format!("a generation after {before}"),
                    JOIN_TIMEOUT,
                ));
            }
            self.a
                .poll(Duration::from_millis(50))
                .map_err(Error::open("member A polling"))?;
            b.poll(Duration::from_millis(50))
                .map_err(Error::open("member B polling"))?;
        }
        self.b = Some(b);
        Ok(())
    }

    pub(super) fn last_record(&self) -> Result<Option<Read>, Error> {
        recover(&self.bootstrap, &self.snapshots, 0, &recovery_budget())
            .map(|mut m| m.remove(KEY))
            .map_err(|e| Error::Open {
                what: "reading the snapshot topic back",
                reason: e.to_string(),
            })
    }
}

impl Log {
    pub(super) fn live_generation(&self) -> i32 {
        match self {
            Log::Mem { live_gen, .. } => live_gen.load(Ordering::SeqCst),
            #[cfg(feature = "kafka")]
            Log::Real(r) => r.live().generation_id,
        }
    }

    /// The model's number for an implementation generation.
    pub(super) fn model_generation(&self, generation: i32) -> i32 {
        match self {
            Log::Mem { .. } => generation,
            #[cfg(feature = "kafka")]
            Log::Real(r) => generation - r.base + 1,
        }
    }

    /// The live metadata of the member whose partition the owner holds.
    pub(super) fn live_meta(&self) -> GroupMetadata {
        match self {
            Log::Mem { live_gen, .. } => GroupMetadata {
                group_id: GROUP.into(),
                generation_id: live_gen.load(Ordering::SeqCst),
                member_id: "A".into(),
                group_instance_id: None,
            },
            #[cfg(feature = "kafka")]
            Log::Real(r) => r.live(),
        }
    }

    pub(super) fn owner_meta(&self) -> Arc<dyn GroupMetadataSource> {
        match self {
            Log::Mem { live_gen, .. } => {
                let live_gen = live_gen.clone();
                Arc::new(move || {
                    Some(GroupMetadata {
                        group_id: GROUP.into(),
                        generation_id: live_gen.load(Ordering::SeqCst),
                        member_id: "A".into(),
                        group_instance_id: None,
                    })
                })
            }
            #[cfg(feature = "kafka")]
            Log::Real(r) => Arc::new(LiveGroupMetadata(r.a.consumer.clone())),
        }
    }

    pub(super) fn group_id(&self) -> String {
        match self {
            Log::Mem { .. } => GROUP.into(),
            #[cfg(feature = "kafka")]
            Log::Real(r) => r.group.clone(),
        }
    }

    /// A producer for `role`; in the Epoch design every producer shares the stable id, so each
    /// new one takes the highest epoch.
    #[cfg_attr(not(feature = "kafka"), allow(unused_variables))] // `role` names a real producer
    pub(super) fn producer(&self, design: Design, role: &str) -> Result<Producer, Error> {
        match self {
            Log::Mem { mem, epochs, .. } => Ok(match design {
                Design::ProducerEpoch => Producer::init(mem, epochs),
                _ => Producer::plain(mem),
            }),
            #[cfg(feature = "kafka")]
            Log::Real(r) => {
                let id = match design {
                    Design::ProducerEpoch => format!("{}-snapshots-0", r.group),
                    _ => unique(role),
                };
                KafkaTxnProducer::new(&r.bootstrap, &id, &r.snapshots, 0)
                    .map(|p| Producer::Real(Box::new(p)))
                    .map_err(|e| Error::Open {
                        what: "a transactional producer",
                        reason: format!("{role}'s: {e}"),
                    })
            }
        }
    }

    pub(super) fn last_record(&self) -> Result<Option<Read>, Error> {
        match self {
            Log::Mem { mem, .. } => {
                let log = mem.log();
                Ok(log
                    .durable
                    .iter()
                    .rev()
                    .find(|w| w.key == KEY)
                    .map(|w| match &w.value {
                        Some(v) => Read::Live {
                            offset: w.offset as u64,
                            value: v.clone(),
                        },
                        None => Read::Tombstone {
                            offset: w.offset as u64,
                        },
                    }))
            }
            #[cfg(feature = "kafka")]
            Log::Real(r) => r.last_record(),
        }
    }
}
