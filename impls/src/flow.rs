//! The partition flow: assign → recover from the store → fold events → flush (periodic and on
//! revoke) → revoke (docs/models/cassandra.md, the Cassandra model's owner and zombie).
//!
//! Two flows may own the same partition at once: a revoked owner that has not noticed yet keeps
//! folding and flushes on revoke. Nothing in the flow stops it; only the store's guard does.
//! [`Ownership`] is the group coordinator's view (who owns the partition now); the flow reads it
//! only to label its writes (`Write` for the owner, `ZombieWrite` for a revoked flow), never to
//! gate them.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::buffer::{Pending, SnapshotBuffer};
use crate::store::{Conflict, Mode, Offset, Read, ReadError, SnapshotStore, WriteError};
use crate::trace::{no_trace, FlowPhase, SharedTracer, Step};

/// One input record of the partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub key: String,
    pub offset: Offset,
    pub payload: Vec<u8>,
}

impl Record {
    pub fn new(key: &str, offset: Offset, payload: &[u8]) -> Self {
        Record {
            key: key.to_string(),
            offset,
            payload: payload.to_vec(),
        }
    }
}

/// What folding one record does to the key's state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FoldOutcome {
    Put(Vec<u8>),
    Delete,
    Keep,
}

/// The user's fold: the key's current state (None when absent) and the record.
pub type FoldFn = Arc<dyn Fn(Option<&[u8]>, &Record) -> FoldOutcome + Send + Sync>;

/// A fold that appends each payload to the state, one per line (the models' "set of offsets").
pub fn append_fold() -> FoldFn {
    Arc::new(|state: Option<&[u8]>, record: &Record| {
        let mut v = state.map(<[u8]>::to_vec).unwrap_or_default();
        if !v.is_empty() {
            v.push(b'\n');
        }
        v.extend_from_slice(&record.payload);
        FoldOutcome::Put(v)
    })
}

/// The group coordinator's view: the current generation of each partition.
#[derive(Debug, Default)]
pub struct Ownership {
    generations: Mutex<HashMap<u32, u64>>,
}

impl Ownership {
    pub fn new() -> Arc<Self> {
        Arc::new(Ownership::default())
    }
    /// Hand the partition to a new owner: returns its generation (1, 2, …).
    pub fn assign(&self, partition: u32) -> u64 {
        let mut g = self.generations.lock().unwrap_or_else(|e| e.into_inner());
        let next = g.get(&partition).copied().unwrap_or(0) + 1;
        g.insert(partition, next);
        next
    }
    pub fn is_current(&self, partition: u32, generation: u64) -> bool {
        let g = self.generations.lock().unwrap_or_else(|e| e.into_inner());
        g.get(&partition) == Some(&generation)
    }
}

/// Flow settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowConfig {
    /// The replay fence in the buffer (the fixed design); `false` is ReplayFence `Fix = false`.
    pub replay_fence: bool,
    /// Flush when this much time passed since the last flush (checked on every record).
    pub flush_interval: Option<Duration>,
    /// The committed offset the flow resumes at (the position before any record).
    pub resume_at: Offset,
    /// A broken build, planted for conformance; [`Planted::None`] everywhere else.
    pub planted: Planted,
}

/// The flow built broken one way, as one of the Cassandra model's knob flips: the mutants
/// `conform` runs to show that each guard is load-bearing (docs/conformance.md). Never set
/// outside a conformance harness.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Planted {
    /// The flow as designed.
    #[default]
    None,
    /// Recovery reads a tombstone as an absent key, so a deleted key recovers with no floor
    /// (the model's `TombFloor = false`: the read path is not tombstone-aware).
    NoTombFloor,
    /// The owner's flush defers every write of a key it has never seen durable (not read back
    /// present, never written), its delete included, while its position moves past them (the
    /// model's `SkipTomb = true`: a deferred flush, and the delete of a never-persisted key a
    /// no-op). A revoked flow's flush on revoke still writes.
    DeferNeverPersisted,
}

impl FlowConfig {
    /// The config a flow over `store` should run with (C-wiring): the replay fence where the
    /// store fences writes by offset, off over a last-write-wins store, where it guards
    /// nothing and only drops records.
    pub fn for_store(store: &dyn SnapshotStore) -> Self {
        FlowConfig {
            replay_fence: store.options().mode != Mode::LastWriteWins,
            ..FlowConfig::default()
        }
    }
}

/// The fixed design over a guarded store; [`FlowConfig::for_store`] picks by the store.
impl Default for FlowConfig {
    fn default() -> Self {
        FlowConfig {
            replay_fence: true,
            flush_interval: None,
            resume_at: 0,
            planted: Planted::None,
        }
    }
}

/// Why the flow stopped or a flush did not complete.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FlowError {
    /// The current owner's write was refused by its own recovered high water (the liveness
    /// bug the replay fence fixes). The flow is dead.
    SelfFenced(Conflict),
    /// A revoked flow's write was refused: the guard stopped a stale writer. The flow is dead.
    Fenced(Conflict),
    /// A write failed or its outcome is unknown; the entry stays dirty for the next flush.
    Write(WriteError),
    Read(ReadError),
    /// The flow already stopped.
    Stopped,
}

impl std::fmt::Display for FlowError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FlowError::SelfFenced(c) => {
                write!(f, "self-fenced: {}", WriteError::Conflict(c.clone()))
            }
            FlowError::Fenced(c) => write!(f, "fenced: {}", WriteError::Conflict(c.clone())),
            FlowError::Write(e) => write!(f, "{e}"),
            FlowError::Read(e) => write!(f, "{e}"),
            FlowError::Stopped => write!(f, "the flow already stopped"),
        }
    }
}

impl std::error::Error for FlowError {}

/// One owner's processing of one partition.
pub struct PartitionFlow<S: SnapshotStore> {
    partition: u32,
    generation: u64,
    store: S,
    buffer: SnapshotBuffer,
    fold: FoldFn,
    ownership: Arc<Ownership>,
    tracer: SharedTracer,
    loaded: HashSet<String>,
    /// Keys this flow has seen durable, read back present or written: kept only for
    /// [`Planted::DeferNeverPersisted`].
    durable: HashSet<String>,
    position: Offset,
    config: FlowConfig,
    last_flush: Instant,
    stopped: bool,
}

impl<S: SnapshotStore> PartitionFlow<S> {
    /// The coordinator assigns the partition: a new generation, nothing loaded yet.
    pub fn assign(
        partition: u32,
        ownership: &Arc<Ownership>,
        store: S,
        fold: FoldFn,
        config: FlowConfig,
    ) -> Self {
        Self::assign_traced(partition, ownership, store, fold, config, no_trace())
    }

    pub fn assign_traced(
        partition: u32,
        ownership: &Arc<Ownership>,
        store: S,
        fold: FoldFn,
        config: FlowConfig,
        tracer: SharedTracer,
    ) -> Self {
        let generation = ownership.assign(partition);
        tracer.step(&Step::Phase {
            partition,
            generation,
            phase: FlowPhase::Assigned,
        });
        PartitionFlow {
            partition,
            generation,
            store,
            buffer: SnapshotBuffer::traced(config.replay_fence, tracer.clone()),
            fold,
            ownership: ownership.clone(),
            tracer,
            loaded: HashSet::new(),
            durable: HashSet::new(),
            position: config.resume_at,
            config,
            last_flush: Instant::now(),
            stopped: false,
        }
    }

    /// The offset of the last record handled (the resume offset before any).
    pub fn position(&self) -> Offset {
        self.position
    }

    /// The in-memory state of a key.
    pub fn state(&self, key: &str) -> Option<&[u8]> {
        self.buffer.get(key)
    }

    pub fn store(&self) -> &S {
        &self.store
    }

    /// Recover these keys from the store now (otherwise each key is recovered on first use).
    pub fn recover(&mut self, keys: &[&str]) -> Result<(), FlowError> {
        self.check_running()?;
        for key in keys {
            self.load(key)?;
        }
        self.tracer.step(&Step::Phase {
            partition: self.partition,
            generation: self.generation,
            phase: FlowPhase::Recovered,
        });
        Ok(())
    }

    fn load(&mut self, key: &str) -> Result<(), FlowError> {
        if self.loaded.contains(key) {
            return Ok(());
        }
        let read = self.store.read(key).map_err(FlowError::Read)?;
        if read != Read::Absent {
            self.seen_durable(key);
        }
        let seeded = match (&read, self.config.planted) {
            (Read::Tombstone { .. }, Planted::NoTombFloor) => &Read::Absent,
            _ => &read,
        };
        self.buffer.recovered(key, seeded);
        self.tracer.step(&Step::OwnerRecover {
            partition: self.partition,
            generation: self.generation,
            key: key.to_string(),
            read,
        });
        self.loaded.insert(key.to_string());
        Ok(())
    }

    /// Drop a key's in-memory state, if nothing of it waits to be flushed, so the next record
    /// (or [`PartitionFlow::recover`]) reloads it from the store: what a flow does with a key it
    /// deleted (the Cassandra model's `ownerLoaded = false` after a delete, then
    /// `OwnerRecover`). Returns whether the key was evicted.
    pub fn evict(&mut self, key: &str) -> bool {
        if self.buffer.is_key_dirty(key) {
            return false;
        }
        self.buffer.recovered(key, &Read::Absent);
        self.loaded.remove(key)
    }

    fn check_running(&self) -> Result<(), FlowError> {
        if self.stopped {
            Err(FlowError::Stopped)
        } else {
            Ok(())
        }
    }

    /// Fold one record into the key's state (recovering the key first), then flush if the
    /// periodic flush is due.
    pub fn handle(&mut self, record: &Record) -> Result<(), FlowError> {
        self.check_running()?;
        self.load(&record.key)?;
        let outcome = (self.fold)(self.buffer.get(&record.key), record);
        self.tracer.step(&Step::OwnerFold {
            partition: self.partition,
            generation: self.generation,
            key: record.key.clone(),
            offset: record.offset,
        });
        match outcome {
            FoldOutcome::Put(v) => {
                self.buffer.append(&record.key, record.offset, v);
            }
            FoldOutcome::Delete => {
                self.buffer.delete(&record.key, record.offset);
            }
            FoldOutcome::Keep => {}
        }
        self.position = record.offset;
        if let Some(interval) = self.config.flush_interval {
            if self.last_flush.elapsed() >= interval {
                self.flush()?;
            }
        }
        Ok(())
    }

    /// A timer deletes the key at the flow's current position (e.g. an expiry tick).
    pub fn tick_delete(&mut self, key: &str) -> Result<(), FlowError> {
        self.check_running()?;
        self.load(key)?;
        self.buffer.expire(key, self.position);
        Ok(())
    }

    /// Notes that `key` is durable, for [`Planted::DeferNeverPersisted`] only: the flow as
    /// designed keeps no such set.
    fn seen_durable(&mut self, key: &str) {
        if self.config.planted == Planted::DeferNeverPersisted {
            self.durable.insert(key.to_string());
        }
    }

    /// Whether the planted [`Planted::DeferNeverPersisted`] holds back the owner's write of
    /// `key`: a key it never saw durable.
    fn defers(&self, key: &str) -> bool {
        self.config.planted == Planted::DeferNeverPersisted
            && !self.durable.contains(key)
            && self.ownership.is_current(self.partition, self.generation)
    }

    /// Write every buffered change. Returns how many writes landed.
    pub fn flush(&mut self) -> Result<usize, FlowError> {
        self.check_running()?;
        let mut landed = 0;
        for pending in self.buffer.pending() {
            if self.defers(pending.key()) {
                // The planted deferral: nothing written, the entry counted as flushed.
                self.buffer.flushed(pending.key(), pending.offset());
                continue;
            }
            let outcome = match &pending {
                Pending::Persist { key, offset, value } => self.store.persist(key, *offset, value),
                Pending::Delete { key, offset } => self.store.delete(key, *offset),
            };
            let owner = self.ownership.is_current(self.partition, self.generation);
            let step = if owner {
                Step::Write {
                    partition: self.partition,
                    generation: self.generation,
                    key: pending.key().to_string(),
                    presented: pending.offset(),
                    kind: pending.kind(),
                    outcome: outcome.clone(),
                }
            } else {
                Step::ZombieWrite {
                    partition: self.partition,
                    generation: self.generation,
                    key: pending.key().to_string(),
                    offset: pending.offset(),
                    kind: pending.kind(),
                    outcome: outcome.clone(),
                }
            };
            self.tracer.step(&step);
            match outcome {
                Ok(()) => {
                    self.seen_durable(pending.key());
                    self.buffer.flushed(pending.key(), pending.offset());
                    landed += 1;
                }
                Err(WriteError::Conflict(c)) => {
                    self.stopped = true;
                    let phase = if owner {
                        FlowPhase::SelfFenced
                    } else {
                        FlowPhase::Fenced
                    };
                    self.tracer.step(&Step::Phase {
                        partition: self.partition,
                        generation: self.generation,
                        phase,
                    });
                    return Err(if owner {
                        FlowError::SelfFenced(c)
                    } else {
                        FlowError::Fenced(c)
                    });
                }
                Err(e) => return Err(FlowError::Write(e)),
            }
        }
        self.last_flush = Instant::now();
        self.tracer.step(&Step::Phase {
            partition: self.partition,
            generation: self.generation,
            phase: FlowPhase::Flushed,
        });
        Ok(landed)
    }

    /// Flush on revoke, then stop. The flush result is returned; the flow is gone either way.
    pub fn revoke(mut self) -> Result<usize, FlowError> {
        let result = self.flush();
        self.tracer.step(&Step::Phase {
            partition: self.partition,
            generation: self.generation,
            phase: FlowPhase::Revoked,
        });
        result
    }
}
