//! Step events of the Kafka design, named after the actions of the Kafka (docs/models/kafka.md), Epoch
//! (docs/models/epoch.md) and GroupCommit (docs/models/groupcommit.md) models.
//!
//! | event | model action | emitted by |
//! |---|---|---|
//! | `OwnerFold`, `OwnerRecover` | Kafka / Epoch `OwnerFold`, `OwnerRecover` | `flow::KafkaFlow` (also sent to the store's [`Tracer`] as its own `Step`s) |
//! | `Rebalance` | Kafka / Epoch `Rebalance` | a member whose assignment came with a new generation |
//! | `Poll` | Kafka `Poll` | the rebalance callback: the generation it captured and the flows it tore down, one step |
//! | `ZombieCommit` | Kafka / Epoch `ZombieCommit(m)` | a revoked flow's transaction, accepted or rejected |
//! | `ZombieInit` | Epoch `ZombieInit` | a producer with a stable `transactional.id` initialised (it takes the highest epoch) |
//! | `offer`, `acq`, `commit`, `await_`, `sched` | GroupCommit's process steps | `group_commit::GroupCommit` |
//! | `transaction` | none: the outcome of the transaction a `commit` started | `group_commit::GroupCommit` |
//! | `FlowsLive` | FlowsAlive `Rebalance` | `flow::FlowRegistry::report`, after a changed assignment's flows are open |
//! | `Teardown` | FlowsAlive `Teardown(p)` | a deferred teardown (the planted mutant) when it completes |
//!
//! The modules that emit these events depend on this one, not the other way round.
//!
//! The store crate's [`Tracer`] takes the store's own [`Step`] enum, which has no variant for
//! these actions, so a [`KafkaTracer`] is a [`Tracer`] that also takes [`KafkaStep`]s: one object
//! sees the store's events and the Kafka events in one order. [`KafkaRecorder`] keeps both.

use std::sync::{Arc, Mutex};

use loadbearing_impls::trace::{Step, Tracer};

/// How a transaction ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TxnOutcome {
    Committed,
    /// The broker rejected the transaction through a fence (the error code's name), and it
    /// was aborted.
    Fenced(String),
    /// Refused before anything was sent (no group metadata, an ungated offset, a fenced flow
    /// failing fast).
    Refused(String),
    /// Failed for another reason, and aborted.
    Failed(String),
    /// The commit was sent and its outcome is unknown (the error code's name).
    Indeterminate(String),
}

/// One Kafka step event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KafkaStep {
    /// `OwnerFold`: the flow folded the input record at `offset` into the key's state.
    OwnerFold {
        partition: i32,
        generation: i32,
        key: String,
        offset: i64,
    },
    /// `OwnerRecover`: the flow read the snapshot topic (read_committed, up to the high
    /// watermark) and loaded `keys` snapshots.
    OwnerRecover {
        partition: i32,
        generation: i32,
        keys: usize,
    },
    /// `Rebalance`: the group moved to `generation`; `partitions` were assigned to `member`.
    Rebalance {
        member: String,
        generation: i32,
        partitions: Vec<i32>,
    },
    /// `Poll`: the consumer ran the rebalance callback: it captured `generation` and tore down
    /// the flows of `torn_down` in the same step (the capture-coupling guard).
    Poll {
        member: String,
        generation: i32,
        torn_down: Vec<i32>,
    },
    /// `ZombieCommit(m)`: a revoked flow's transaction carrying the fold at `offset`.
    ZombieCommit {
        partition: i32,
        generation: i32,
        offset: i64,
        outcome: TxnOutcome,
    },
    /// `ZombieInit`: a producer with the stable `transactional_id` initialised (Epoch design).
    ZombieInit { transactional_id: String },
    /// GroupCommit `offer`: writer `writer` queued its write.
    Offer {
        partition: i32,
        writer: u64,
        key: String,
        offset: i64,
    },
    /// GroupCommit `acq`: writer `writer` took the per-partition lock.
    Acq { partition: i32, writer: u64 },
    /// GroupCommit `commit`: `writer` drained `writes` queued writes (possibly none) for one
    /// transaction with the input offset `offset` (the next to consume; -1: none). Emitted
    /// where the model's step happens: the drain and the read of the scheduled offset.
    Commit {
        partition: i32,
        writer: u64,
        writes: usize,
        offset: i64,
    },
    /// How that transaction ended (none when an empty queue left nothing to commit).
    Transaction {
        partition: i32,
        writer: u64,
        writes: usize,
        offset: i64,
        outcome: TxnOutcome,
    },
    /// GroupCommit `await_`: writer `writer` has its own outcome.
    Await {
        partition: i32,
        writer: u64,
        outcome: TxnOutcome,
    },
    /// GroupCommit `sched`: the flow scheduled input offset `offset` for the next commit.
    Sched { partition: i32, offset: i64 },
    /// FlowsAlive `Rebalance`: the member's assignment changed to `owned`; `live` are its
    /// partitions with a flow not torn down, once the new partitions' flows are open.
    FlowsLive {
        member: String,
        owned: Vec<i32>,
        live: Vec<i32>,
    },
    /// FlowsAlive `Teardown`: a revoked flow's teardown completed after its revoke returned.
    Teardown { member: String, partition: i32 },
}

impl KafkaStep {
    /// The model action name this event corresponds to.
    pub fn action(&self) -> &'static str {
        match self {
            KafkaStep::OwnerFold { .. } => "OwnerFold",
            KafkaStep::OwnerRecover { .. } => "OwnerRecover",
            KafkaStep::Rebalance { .. } => "Rebalance",
            KafkaStep::Poll { .. } => "Poll",
            KafkaStep::ZombieCommit { .. } => "ZombieCommit",
            KafkaStep::ZombieInit { .. } => "ZombieInit",
            KafkaStep::Offer { .. } => "offer",
            KafkaStep::Acq { .. } => "acq",
            KafkaStep::Commit { .. } => "commit",
            KafkaStep::Transaction { .. } => "transaction",
            KafkaStep::Await { .. } => "await_",
            KafkaStep::Sched { .. } => "sched",
            KafkaStep::FlowsLive { .. } => "FlowsLive",
            KafkaStep::Teardown { .. } => "Teardown",
        }
    }
}

/// A [`Tracer`] that also receives the Kafka step events. Both default to doing nothing.
pub trait KafkaTracer: Tracer {
    fn kafka(&self, _step: &KafkaStep) {}
}

/// Drops every event.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoKafkaTrace;

impl Tracer for NoKafkaTrace {}
impl KafkaTracer for NoKafkaTrace {}

pub type SharedKafkaTracer = Arc<dyn KafkaTracer>;

pub fn no_trace() -> SharedKafkaTracer {
    Arc::new(NoKafkaTrace)
}

/// One recorded event: the store's or a Kafka one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    Store(Step),
    Kafka(KafkaStep),
}

impl Event {
    pub fn action(&self) -> &'static str {
        match self {
            Event::Store(s) => s.action(),
            Event::Kafka(k) => k.action(),
        }
    }
}

/// Keeps every event in order (tests, conformance).
#[derive(Debug, Default)]
pub struct KafkaRecorder {
    events: Mutex<Vec<Event>>,
}

impl KafkaRecorder {
    pub fn new() -> Arc<Self> {
        Arc::new(KafkaRecorder::default())
    }
    pub fn events(&self) -> Vec<Event> {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
    /// The Kafka events only.
    pub fn kafka_steps(&self) -> Vec<KafkaStep> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::Kafka(k) => Some(k),
                Event::Store(_) => None,
            })
            .collect()
    }
    /// The action names so far, in order.
    pub fn actions(&self) -> Vec<&'static str> {
        self.events().iter().map(Event::action).collect()
    }
    pub fn count(&self, action: &str) -> usize {
        self.actions().iter().filter(|a| **a == action).count()
    }
}

impl Tracer for KafkaRecorder {
    fn step(&self, step: &Step) {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Event::Store(step.clone()));
    }
}

impl KafkaTracer for KafkaRecorder {
    fn kafka(&self, step: &KafkaStep) {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Event::Kafka(step.clone()));
    }
}
