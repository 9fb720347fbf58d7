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
use std::sync::Arc;

use loadbearing_impls::store::Read;
use loadbearing_impls::trace::Step;

use crate::group_commit::{CommitError, GroupCommit, SnapshotWrite, TxnProducer};
use crate::trace::{KafkaStep, SharedKafkaTracer, TxnOutcome};

// The group member is a real consumer (rdkafka); the flow itself runs over any producer, the
// in-memory one included, so it builds without the `kafka` feature.
#[cfg(feature = "kafka")]
mod member;
mod registry;
#[cfg(feature = "kafka")]
pub use member::{Member, MemberConfig, MemberContext};
pub use registry::{FlowRegistry, TeardownMode};

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
    /// The offset the key's snapshot was recovered at: a record at or below it is a replay
    /// (the committed input offset lags the snapshots by up to a group-commit round) and is
    /// already in the value (K-4).
    recovered_at: Option<i64>,
}

/// What [`KafkaFlow::fold`] did with a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Folded {
    Folded,
    /// At or below the offset its key was recovered at: dropped, the position moves past it.
    Replay {
        recovered_at: i64,
    },
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
    /// K-4's filter (on by default; see [`KafkaFlow::without_replay_filter`]).
    replay_filter: bool,
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
            replay_filter: true,
            tracer,
        }
    }

    /// Fold replays of a recovered snapshot again, as the #828 Kafka model's owner does (that
    /// model predates K-4): for conformance against it, and to show `kafka_lag_nofilter`.
    pub fn without_replay_filter(mut self) -> Self {
        self.replay_filter = false;
        self
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
                    recovered_at: Some(offset),
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
    /// empty payload deletes the key), unless it is a replay of what the key's recovered
    /// snapshot already holds (the model's `o <= recoveredAt` filter).
    pub fn fold(&mut self, key: &str, offset: i64, payload: &[u8]) -> Folded {
        let entry = self.state.entry(key.to_string()).or_insert(KeyState {
            offset: -1,
            value: None,
            dirty: false,
            recovered_at: None,
        });
        let replay = entry
            .recovered_at
            .filter(|r| self.replay_filter && offset <= *r);
        if let Some(recovered_at) = replay {
            self.position = self.position.max(offset + 1);
            return Folded::Replay { recovered_at };
        }
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
        Folded::Folded
    }

    /// Flush every dirty key as concurrent group-committed writes; once all are durable,
    /// schedule the position as the next offset to commit and commit it (an offset-only
    /// transaction, when it moved). Returns the writes that landed.
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
                        Err(e) => e.outcome(),
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
        self.commit.commit_marker()?;
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
    fn is_torn_down(&self) -> bool;
}

impl<P: TxnProducer> TearDown for GroupCommit<P> {
    fn tear_down(&self) {
        GroupCommit::tear_down(self)
    }
    fn is_torn_down(&self) -> bool {
        GroupCommit::is_torn_down(self)
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
