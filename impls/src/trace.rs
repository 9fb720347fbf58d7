//! Step events: every component reports what it did, named after the model action it
//! corresponds to, so a trace of a real run can be checked against the models.
//!
//! | event | model (specs/src) | emitted by |
//! |---|---|---|
//! | `Update1`, `Insert`, `RetryUpdate` | `CasFirstWrite` | the Cassandra compound, and its PostgreSQL rendition |
//! | `Persist` | `CasFirstWriteAtomic::Persist` | SQLite / PostgreSQL: one atomic conditional upsert |
//! | `ReapRow` | `ReapRow` | a store that removes or skips an expired row |
//! | `Fold`, `Write` | `ReplayFence` | the snapshot buffer: its decision, the offset it presents |
//! | `OwnerRecover`, `OwnerFold`, `ZombieWrite` | `Cassandra` | the partition flow |
//! | `Phase` | (orchestration, no model action) | the partition flow |

use std::sync::{Arc, Mutex};

use crate::store::{Offset, Payload, Read, WriteError};

/// A persist or a tombstone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteKind {
    Persist,
    Delete,
}

// Here rather than beside `Payload` in store.rs: the store knows nothing of traces, so the two
// modules do not import each other.
impl Payload<'_> {
    /// How a trace names a write of this payload.
    pub(crate) fn kind(&self) -> WriteKind {
        match self {
            Payload::Value(_) => WriteKind::Persist,
            Payload::Tombstone => WriteKind::Delete,
        }
    }
}

/// What one statement did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StatementOutcome {
    Applied,
    /// The condition failed on a present row holding `stored`.
    NotApplied {
        stored: Offset,
    },
    /// A conditional UPDATE (`Update1`/`RetryUpdate`) found no row. (An `Insert` that finds
    /// a row is `NotApplied` with that row's offset.)
    RowAbsent,
    /// An `INSERT … IF NOT EXISTS` lost to a row that is there with its guard expired (a
    /// TTL is per cell): the row fences nothing, and the writer claims it with a repair.
    GuardExpired,
    /// Sent, outcome unknown.
    Indeterminate(String),
    /// Known not applied (not sent, or refused before execution).
    Failed(String),
}

/// How a store's outcome for a whole write is reported as one statement's outcome.
impl From<&Result<(), WriteError>> for StatementOutcome {
    fn from(outcome: &Result<(), WriteError>) -> Self {
        match outcome {
            Ok(()) => StatementOutcome::Applied,
            Err(WriteError::Conflict(c)) => StatementOutcome::NotApplied { stored: c.stored },
            Err(WriteError::Indeterminate { reason, .. }) => {
                StatementOutcome::Indeterminate(reason.clone())
            }
            Err(WriteError::Failed { reason, .. }) => StatementOutcome::Failed(reason.clone()),
        }
    }
}

/// The snapshot buffer's decision on one appended record or delete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FoldDecision {
    /// Buffered; the key's buffered offset is now `buffered`.
    Buffered { buffered: Offset },
    /// Dropped by the replay fence: at or below the buffered offset (a replay of a record the
    /// buffered value already folded).
    DroppedBelowFence { buffered: Offset },
    /// A delete, to be presented at `presented` (max of its offset and the buffered one when
    /// the fence is on).
    DeleteGated { presented: Offset },
}

/// The partition flow's lifecycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowPhase {
    Assigned,
    Recovered,
    Flushed,
    Revoked,
    /// The owner's own write was refused: it fenced itself (the ReplayFence liveness bug).
    SelfFenced,
    /// A revoked owner's write was refused: the guard did its job.
    Fenced,
}

/// One step event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// CasFirstWrite `Update1`: the first `UPDATE … IF offset <= ?`.
    Update1 {
        backend: &'static str,
        key: String,
        offset: Offset,
        kind: WriteKind,
        outcome: StatementOutcome,
    },
    /// CasFirstWrite `Insert`: `INSERT … IF NOT EXISTS` after Update1 found no row.
    Insert {
        backend: &'static str,
        key: String,
        offset: Offset,
        kind: WriteKind,
        outcome: StatementOutcome,
    },
    /// CasFirstWrite `RetryUpdate`: the one retry after a lost insert race.
    RetryUpdate {
        backend: &'static str,
        key: String,
        offset: Offset,
        kind: WriteKind,
        outcome: StatementOutcome,
    },
    /// The compound's `UPDATE … IF offset = null`: the claim of a row whose guard expired
    /// (the model's `Insert`: to it the row is absent).
    Repair {
        backend: &'static str,
        key: String,
        offset: Offset,
        kind: WriteKind,
        outcome: StatementOutcome,
    },
    /// CasFirstWriteAtomic `Persist`: one atomic conditional upsert (SQLite, PostgreSQL).
    Persist {
        backend: &'static str,
        key: String,
        offset: Offset,
        kind: WriteKind,
        outcome: StatementOutcome,
    },
    /// `ReapRow`: an expired row was found and treated as absent or removed.
    ReapRow {
        backend: &'static str,
        key: String,
        offset: Offset,
    },
    /// ReplayFence `Fold`: the buffer's decision on an append or delete at `offset`.
    Fold {
        key: String,
        offset: Offset,
        kind: WriteKind,
        decision: FoldDecision,
    },
    /// ReplayFence `Write`: the owner's write presented at `presented`, and its outcome.
    Write {
        partition: u32,
        generation: u64,
        key: String,
        presented: Offset,
        kind: WriteKind,
        outcome: Result<(), WriteError>,
    },
    /// Cassandra `OwnerRecover`: the flow loaded the key from the store.
    OwnerRecover {
        partition: u32,
        generation: u64,
        key: String,
        read: Read,
    },
    /// Cassandra `OwnerFold`: the flow folded the record at `offset` into its state.
    OwnerFold {
        partition: u32,
        generation: u64,
        key: String,
        offset: Offset,
    },
    /// Cassandra `ZombieWrite`: a flow that no longer owns the partition (and has not noticed)
    /// wrote, and the outcome.
    ZombieWrite {
        partition: u32,
        generation: u64,
        key: String,
        offset: Offset,
        kind: WriteKind,
        outcome: Result<(), WriteError>,
    },
    /// The flow's lifecycle.
    Phase {
        partition: u32,
        generation: u64,
        phase: FlowPhase,
    },
}

/// Which statement of the first-write compound (`CasFirstWrite`) a step reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompoundStep {
    Update1,
    Insert,
    RetryUpdate,
    Repair,
}

impl CompoundStep {
    /// The step event for this statement.
    pub fn step(
        self,
        backend: &'static str,
        key: String,
        offset: Offset,
        kind: WriteKind,
        outcome: StatementOutcome,
    ) -> Step {
        match self {
            CompoundStep::Update1 => Step::Update1 {
                backend,
                key,
                offset,
                kind,
                outcome,
            },
            CompoundStep::Insert => Step::Insert {
                backend,
                key,
                offset,
                kind,
                outcome,
            },
            CompoundStep::RetryUpdate => Step::RetryUpdate {
                backend,
                key,
                offset,
                kind,
                outcome,
            },
            CompoundStep::Repair => Step::Repair {
                backend,
                key,
                offset,
                kind,
                outcome,
            },
        }
    }
}

impl Step {
    /// The model action name this event corresponds to.
    pub fn action(&self) -> &'static str {
        match self {
            Step::Update1 { .. } => "Update1",
            Step::Insert { .. } => "Insert",
            Step::RetryUpdate { .. } => "RetryUpdate",
            Step::Repair { .. } => "Repair",
            Step::Persist { .. } => "Persist",
            Step::ReapRow { .. } => "ReapRow",
            Step::Fold { .. } => "Fold",
            Step::Write { .. } => "Write",
            Step::OwnerRecover { .. } => "OwnerRecover",
            Step::OwnerFold { .. } => "OwnerFold",
            Step::ZombieWrite { .. } => "ZombieWrite",
            Step::Phase { .. } => "Phase",
        }
    }
}

/// Receives step events. The default does nothing, so tracing costs nothing unless asked.
pub trait Tracer: Send + Sync {
    fn step(&self, _step: &Step) {}
}

/// The default tracer: drops every event.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoTrace;

impl Tracer for NoTrace {}

/// A shared handle to a tracer.
pub type SharedTracer = Arc<dyn Tracer>;

/// A tracer that does nothing, as a shared handle.
pub fn no_trace() -> SharedTracer {
    Arc::new(NoTrace)
}

/// Keeps every event in order (for tests and conformance).
#[derive(Debug, Default)]
pub struct Recorder {
    steps: Mutex<Vec<Step>>,
}

impl Recorder {
    pub fn new() -> Arc<Self> {
        Arc::new(Recorder::default())
    }
    /// A copy of the events so far.
    pub fn steps(&self) -> Vec<Step> {
        self.steps.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
    /// The action names so far, in order.
    pub fn actions(&self) -> Vec<&'static str> {
        self.steps().iter().map(Step::action).collect()
    }
}

impl Tracer for Recorder {
    fn step(&self, step: &Step) {
        self.steps
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(step.clone());
    }
}
