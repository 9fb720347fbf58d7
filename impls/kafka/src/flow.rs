//! One partition's snapshot flow over group commit, and the group member whose rebalance
//! callback tears flows down.
//!
//! A [`KafkaFlow`] is created on assignment with its GroupCommit seeded at the assigned offset;
//! it recovers the snapshot partition (read_committed), folds input records into per-key
//! state, and flushes the dirty keys as concurrent group-committed writes; once they are
//! durable it schedules its position as the next offset to commit (`sched`). On revoke it
//! flushes and forces an offset-only transaction.
//!
//! A [`Member`] is a consumer in the group. Its rebalance callback tears down the flows of
//! revoked partitions (taking each one's transaction lock) before the consumer can join the
//! next generation, and reports the generation it captured with the flows it tore down as one
//! `Poll` step. Eager rebalancing guarantees the order: librdkafka joins the new generation
//! only after the application served the revoke.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use loadbearing_impls::store::Read;
use loadbearing_impls::trace::Step;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext, Rebalance};
use rdkafka::message::Message;
use rdkafka::ClientContext;

use crate::group_commit::{CommitError, GroupCommit, SnapshotWrite, TxnProducer};
use crate::kafka::{committed_of, group_metadata_of};
use crate::trace::{KafkaStep, SharedKafkaTracer, TxnOutcome};

/// How the flow's commits are labelled in the trace: the model's owner, or a revoked flow that
/// has not noticed (the zombie). Labels only; nothing is gated on them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Owner,
    Zombie,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct KeyState {
    offset: i64,
    value: Option<Vec<u8>>,
    dirty: bool,
}

/// One partition's flow.
pub struct KafkaFlow<P: TxnProducer + 'static> {
    partition: i32,
    generation: i32,
    commit: Arc<GroupCommit<P>>,
    state: HashMap<String, KeyState>,
    /// The next input offset to consume (Kafka's committed-offset convention).
    position: i64,
    role: Role,
    tracer: SharedKafkaTracer,
}

impl<P: TxnProducer + 'static> KafkaFlow<P> {
    /// A flow assigned at `position` (the committed offset, or 0), over a GroupCommit that
    /// was seeded with it.
    pub fn new(
        commit: Arc<GroupCommit<P>>,
        position: i64,
        generation: i32,
        tracer: SharedKafkaTracer,
    ) -> Self {
        KafkaFlow {
            partition: commit.input().partition,
            generation,
            commit,
            state: HashMap::new(),
            position,
            role: Role::Owner,
            tracer,
        }
    }

    /// Label this flow's later commits as a zombie's (tests).
    pub fn mark_zombie(&mut self) {
        self.role = Role::Zombie;
    }

    pub fn commit(&self) -> &Arc<GroupCommit<P>> {
        &self.commit
    }

    pub fn position(&self) -> i64 {
        self.position
    }

    pub fn value(&self, key: &str) -> Option<&[u8]> {
        self.state.get(key).and_then(|s| s.value.as_deref())
    }

    /// `OwnerRecover`: load recovered snapshots.
    pub fn recover(&mut self, snapshots: HashMap<String, Read>) {
        let keys = snapshots.len();
        for (key, read) in snapshots {
            self.tracer.step(&Step::OwnerRecover {
                partition: self.partition as u32,
                generation: self.generation.max(0) as u64,
                key: key.clone(),
                read: read.clone(),
            });
            let (offset, value) = match read {
                Read::Live { offset, value } => (offset as i64, Some(value)),
                Read::Tombstone { offset } => (offset as i64, None),
                Read::Absent => continue,
            };
            self.state.insert(
                key,
                KeyState {
                    offset,
                    value,
                    dirty: false,
                },
            );
        }
        self.tracer.kafka(&KafkaStep::OwnerRecover {
            partition: self.partition,
            generation: self.generation,
            keys,
        });
    }

    /// `OwnerFold`: fold the input record at `offset` (append its payload, one per line; an
    /// empty payload deletes the key).
    pub fn fold(&mut self, key: &str, offset: i64, payload: &[u8]) {
        let entry = self.state.entry(key.to_string()).or_insert(KeyState {
            offset: -1,
            value: None,
            dirty: false,
        });
        if payload.is_empty() {
            entry.value = None;
        } else {
            let mut v = entry.value.take().unwrap_or_default();
            if !v.is_empty() {
                v.push(b'\n');
            }
            v.extend_from_slice(payload);
            entry.value = Some(v);
        }
        entry.offset = offset;
        entry.dirty = true;
        self.position = self.position.max(offset + 1);
        self.tracer.step(&Step::OwnerFold {
            partition: self.partition as u32,
            generation: self.generation.max(0) as u64,
            key: key.to_string(),
            offset: offset.max(0) as u64,
        });
        self.tracer.kafka(&KafkaStep::OwnerFold {
            partition: self.partition,
            generation: self.generation,
            key: key.to_string(),
            offset,
        });
    }

    /// Flush every dirty key as concurrent group-committed writes; once all are durable,
    /// schedule the position as the next offset to commit. Returns the writes that landed.
    pub fn flush(&mut self) -> Result<usize, CommitError> {
        let dirty: Vec<SnapshotWrite> = self
            .state
            .iter()
            .filter(|(_, s)| s.dirty)
            .map(|(k, s)| SnapshotWrite {
                key: k.clone(),
                offset: s.offset,
                value: s.value.clone(),
            })
            .collect();
        let commit = &self.commit;
        let results: Vec<(SnapshotWrite, Result<_, CommitError>)> = std::thread::scope(|s| {
            let handles: Vec<_> = dirty
                .into_iter()
                .map(|w| {
                    std::thread::Builder::new()
                        .stack_size(256 * 1024)
                        .spawn_scoped(s, move || {
                            let r = commit.write(w.clone());
                            (w, r)
                        })
                        .expect("spawn a writer thread")
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("writer thread"))
                .collect()
        });
        let mut landed = 0;
        let mut first_err = None;
        for (w, r) in results {
            if self.role == Role::Zombie {
                self.tracer.kafka(&KafkaStep::ZombieCommit {
                    partition: self.partition,
                    generation: self.generation,
                    offset: w.offset,
                    outcome: match &r {
                        Ok(_) => TxnOutcome::Committed,
                        Err(CommitError::Fenced { code, .. }) => TxnOutcome::Fenced(code.clone()),
                        Err(e) => TxnOutcome::Refused(e.to_string()),
                    },
                });
            }
            match r {
                Ok(_) => {
                    if let Some(s) = self.state.get_mut(&w.key) {
                        if s.offset == w.offset {
                            s.dirty = false;
                        }
                    }
                    landed += 1;
                }
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_err {
            return Err(e);
        }
        self.commit.schedule(self.position)?;
        Ok(landed)
    }

    /// Commit the scheduled offset now (an offset-only transaction when nothing is queued).
    pub fn commit_offset(&self) -> Result<(), CommitError> {
        self.commit.commit_now().map(|_| ())
    }

    /// Flush on revoke, force an offset-only transaction, and tear the flow down.
    pub fn revoke(mut self) -> Result<usize, CommitError> {
        let flushed = self.flush();
        let offset = self.commit_offset();
        self.commit.tear_down();
        let n = flushed?;
        offset?;
        Ok(n)
    }
}

/// Something the rebalance callback can tear down.
pub trait TearDown: Send + Sync {
    fn tear_down(&self);
}

impl<P: TxnProducer> TearDown for GroupCommit<P> {
    fn tear_down(&self) {
        GroupCommit::tear_down(self)
    }
}

/// The member's consumer context: the rebalance callback.
pub struct MemberContext {
    name: String,
    tracer: SharedKafkaTracer,
    flows: Mutex<HashMap<i32, Arc<dyn TearDown>>>,
    torn_down: Mutex<Vec<i32>>,
    assigned: Mutex<Option<Vec<i32>>>,
}

impl ClientContext for MemberContext {}

impl ConsumerContext for MemberContext {
    fn pre_rebalance(&self, _consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Revoke(tpl) = rebalance {
            let mut flows = self.flows.lock().unwrap_or_else(|e| e.into_inner());
            let mut torn = self.torn_down.lock().unwrap_or_else(|e| e.into_inner());
            for e in tpl.elements() {
                if let Some(flow) = flows.remove(&e.partition()) {
                    flow.tear_down();
                    torn.push(e.partition());
                }
            }
            *self.assigned.lock().unwrap_or_else(|e| e.into_inner()) = None;
        }
    }

    fn post_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Assign(tpl) = rebalance {
            let partitions: Vec<i32> = tpl.elements().iter().map(|e| e.partition()).collect();
            let generation = group_metadata_of(consumer).map_or(-1, |m| m.generation_id);
            let torn_down =
                std::mem::take(&mut *self.torn_down.lock().unwrap_or_else(|e| e.into_inner()));
            self.tracer.kafka(&KafkaStep::Poll {
                member: self.name.clone(),
                generation,
                torn_down,
            });
            self.tracer.kafka(&KafkaStep::Rebalance {
                member: self.name.clone(),
                generation,
                partitions: partitions.clone(),
            });
            *self.assigned.lock().unwrap_or_else(|e| e.into_inner()) = Some(partitions);
        }
    }
}

/// A consumer in the group, with the rebalance callback above.
pub struct Member {
    pub consumer: Arc<BaseConsumer<MemberContext>>,
    pub name: String,
}

/// Consumer settings for a member.
#[derive(Clone, Debug)]
pub struct MemberConfig {
    pub session_timeout: Duration,
    pub max_poll_interval: Duration,
}

impl Default for MemberConfig {
    fn default() -> Self {
        MemberConfig {
            session_timeout: Duration::from_secs(6),
            max_poll_interval: Duration::from_secs(30),
        }
    }
}

impl Member {
    pub fn join(
        bootstrap: &str,
        group: &str,
        topic: &str,
        name: &str,
        config: &MemberConfig,
        tracer: SharedKafkaTracer,
    ) -> Result<Member, String> {
        let context = MemberContext {
            name: name.to_string(),
            tracer,
            flows: Mutex::new(HashMap::new()),
            torn_down: Mutex::new(Vec::new()),
            assigned: Mutex::new(None),
        };
        let consumer: BaseConsumer<MemberContext> = ClientConfig::new()
            .set("bootstrap.servers", bootstrap)
            .set("group.id", group)
            .set("client.id", name)
            .set("enable.auto.commit", "false")
            .set("isolation.level", "read_committed")
            .set("auto.offset.reset", "earliest")
            .set("partition.assignment.strategy", "range")
            .set(
                "session.timeout.ms",
                config.session_timeout.as_millis().to_string(),
            )
            .set(
                "heartbeat.interval.ms",
                (config.session_timeout.as_millis() / 4)
                    .max(100)
                    .to_string(),
            )
            .set(
                "max.poll.interval.ms",
                config.max_poll_interval.as_millis().to_string(),
            )
            .set("log_level", "3")
            .create_with_context(context)
            .map_err(|e| format!("consumer {name}: {e}"))?;
        consumer
            .subscribe(&[topic])
            .map_err(|e| format!("subscribe {name}: {e}"))?;
        Ok(Member {
            consumer: Arc::new(consumer),
            name: name.to_string(),
        })
    }

    /// The partitions of the last assignment (None while unassigned).
    pub fn assigned(&self) -> Option<Vec<i32>> {
        self.consumer
            .context()
            .assigned
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Poll (running the rebalance callback) until assigned or `timeout`; the records
    /// polled meanwhile are returned.
    pub fn poll_until_assigned(&self, timeout: Duration) -> Result<Vec<InputRecord>, String> {
        let deadline = Instant::now() + timeout;
        let mut records = Vec::new();
        loop {
            if let Some(a) = self.assigned() {
                if !a.is_empty() {
                    return Ok(records);
                }
            }
            if Instant::now() > deadline {
                return Err(format!("{} not assigned within {timeout:?}", self.name));
            }
            records.extend(self.poll(Duration::from_millis(100))?);
        }
    }

    /// One poll: at most one record (the rebalance callback runs inside).
    pub fn poll(&self, timeout: Duration) -> Result<Option<InputRecord>, String> {
        match self.consumer.poll(timeout) {
            None => Ok(None),
            Some(Ok(m)) => Ok(Some(InputRecord {
                partition: m.partition(),
                offset: m.offset(),
                key: m
                    .key()
                    .map(|k| String::from_utf8_lossy(k).into_owned())
                    .unwrap_or_default(),
                payload: m.payload().unwrap_or_default().to_vec(),
            })),
            // Consumer errors are events (a timed-out join, a lost session): librdkafka goes
            // on by itself. Report them and carry on.
            Some(Err(e)) => {
                eprintln!("{} poll: {e}", self.name);
                Ok(None)
            }
        }
    }

    /// Poll until `n` records arrived (or `timeout`).
    pub fn poll_records(&self, n: usize, timeout: Duration) -> Result<Vec<InputRecord>, String> {
        let deadline = Instant::now() + timeout;
        let mut out = Vec::new();
        while out.len() < n {
            if Instant::now() > deadline {
                return Err(format!(
                    "{}: {} of {n} records within {timeout:?}",
                    self.name,
                    out.len()
                ));
            }
            out.extend(self.poll(Duration::from_millis(100))?);
        }
        Ok(out)
    }

    /// Register a flow so the rebalance callback tears it down when its partition is revoked.
    pub fn register(&self, partition: i32, flow: Arc<dyn TearDown>) {
        self.consumer
            .context()
            .flows
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(partition, flow);
    }

    /// The committed offset of an assigned partition (read_committed: stable offsets only).
    pub fn committed(&self, topic: &str, partition: i32) -> Result<Option<i64>, String> {
        committed_of(&self.consumer, topic, partition)
    }
}

/// One input record as the member polled it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputRecord {
    pub partition: i32,
    pub offset: i64,
    pub key: String,
    pub payload: Vec<u8>,
}
