//! GroupCommit (docs/models/groupcommit.md): snapshot writes are queued; whoever takes the per-partition lock
//! drains up to `cap` queued writes into one transaction, which also commits the latest
//! scheduled input offset with the consumer's live group metadata.
//!
//! The model's processes map one to one: a writer calls [`GroupCommit::write`], which is
//! `offer` (queue the write), `acq` (take the lock), `commit` (drain up to `cap` and run one
//! transaction; on an empty queue it still commits the scheduled offset if it moved) and
//! `await_` (its own outcome). The flow calls [`GroupCommit::schedule`] (`sched`), which only
//! accepts an offset once every write below it is durable, so the committed offset never leads
//! the durable writes (`INV_OffsetWithinDurable`).
//!
//! Every transaction carries an input offset: it starts at the seed (the offset the partition
//! was assigned at), so even the first flush is gated by the group-generation fence. The
//! transaction sends the offsets before any record, so a fenced writer never puts a record in
//! the snapshot topic.
//!
//! The producer is a trait ([`TxnProducer`]): the real one is the `kafka` module's
//! `KafkaTxnProducer` (feature `kafka`), the in-memory one [`MemProducer`] (tests, no broker).

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::trace::{KafkaStep, SharedKafkaTracer, TxnOutcome};

/// The default number of writes drained into one transaction.
pub const DEFAULT_CAP: usize = 256;

/// The default payload one transaction drains at most (K-5: the cap keeps a transaction well
/// inside `transaction.timeout.ms`). A count alone bounds nothing for large snapshots: 256
/// writes of 10 KiB commit in 160-200 ms on the benchmark broker (`group_commit_bench`), so
/// 8 MiB is about 0.7 s against the 10 s timeout. A single write larger than this goes alone.
pub const DEFAULT_MAX_TXN_BYTES: usize = 8 << 20;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A consumer's group metadata, as the transactional offset commit carries it (KIP-447).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupMetadata {
    pub group_id: String,
    /// -1 when the consumer is not a member (never joined, or left the group).
    pub generation_id: i32,
    /// Empty when the consumer is not a member.
    pub member_id: String,
    pub group_instance_id: Option<String>,
}

impl GroupMetadata {
    /// Metadata naming only the group (generation -1, no member): what the pre-KIP-447 Epoch
    /// design sends. The broker accepts such a transactional offset commit in any group state.
    pub fn group_only(group_id: &str) -> Self {
        GroupMetadata {
            group_id: group_id.to_string(),
            generation_id: -1,
            member_id: String::new(),
            group_instance_id: None,
        }
    }

    /// Does this carry a generation, so that the broker checks it? A generation of -1 (with
    /// no member id) is accepted by the broker in any group state: that is "missing". A
    /// generation with an empty member id is left to the broker (UNKNOWN_MEMBER_ID).
    pub fn is_member(&self) -> bool {
        self.generation_id >= 0
    }
}

/// Where the live group metadata comes from: read once per transaction, never cached.
pub trait GroupMetadataSource: Send + Sync {
    fn current(&self) -> Option<GroupMetadata>;
}

impl<F: Fn() -> Option<GroupMetadata> + Send + Sync> GroupMetadataSource for F {
    fn current(&self) -> Option<GroupMetadata> {
        self()
    }
}

/// The input partition whose offset the transactions commit.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InputPartition {
    pub topic: String,
    pub partition: i32,
}

impl InputPartition {
    pub fn new(topic: &str, partition: i32) -> Self {
        InputPartition {
            topic: topic.to_string(),
            partition,
        }
    }
}

/// One snapshot write: the fold of `key` up to input offset `offset`, or its deletion
/// (`value = None`, a tombstone carrying the offset).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotWrite {
    pub key: String,
    pub offset: i64,
    pub value: Option<Vec<u8>>,
}

impl SnapshotWrite {
    pub fn persist(key: &str, offset: i64, value: &[u8]) -> Self {
        SnapshotWrite {
            key: key.to_string(),
            offset,
            value: Some(value.to_vec()),
        }
    }
    pub fn delete(key: &str, offset: i64) -> Self {
        SnapshotWrite {
            key: key.to_string(),
            offset,
            value: None,
        }
    }
}

/// How a producer error is to be handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorClass {
    /// A fence: a stale generation (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID)
    /// or a newer producer epoch (PRODUCER_FENCED). The writer is no longer the owner.
    Fenced,
    /// The transaction failed and was (or must be) aborted; the producer is still usable.
    Abortable,
    /// The call timed out or lost the broker and may be retried. Before the commit this is
    /// as good as a failure (the transaction is aborted, or the broker aborts it when it times
    /// out); from the commit on, its effect is unknown until a retry learns it.
    Retriable,
    /// The producer is unusable.
    Fatal,
}

/// A producer call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnError {
    pub class: ErrorClass,
    /// The broker's or client's error name, e.g. `ILLEGAL_GENERATION`.
    pub code: String,
    pub message: String,
}

impl fmt::Display for TxnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({:?}): {}", self.code, self.class, self.message)
    }
}

/// The transactional producer GroupCommit drives.
pub trait TxnProducer: Send {
    fn begin(&mut self) -> Result<(), TxnError>;
    /// Add the input offset commit to the transaction, with this group metadata.
    fn send_offsets(
        &mut self,
        input: &InputPartition,
        offset: i64,
        meta: &GroupMetadata,
    ) -> Result<(), TxnError>;
    fn send(&mut self, write: &SnapshotWrite) -> Result<(), TxnError>;
    fn commit(&mut self) -> Result<(), TxnError>;
    fn abort(&mut self) -> Result<(), TxnError>;
}

/// Which fence the offset commit relies on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fence {
    /// KIP-447: the consumer's live group metadata (generation, member id). The design.
    Generation,
    /// The rejected Epoch design: a stable `transactional.id`, producer-epoch fencing only;
    /// offsets are committed with the group id alone.
    ProducerEpoch { group_id: String },
    /// No fence: the plain producer of issue #732 (the offset is not part of the write).
    Unfenced,
}

/// Why a write or commit did not land.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommitError {
    /// The broker rejected the transaction through a fence; it was aborted. The writer no
    /// longer owns the partition and every later flush fails fast.
    Fenced { code: String, message: String },
    /// An earlier transaction was fenced: nothing was sent.
    AlreadyFenced { code: String },
    /// The consumer has no live group metadata (not a member, or generation -1): a commit
    /// without it would pass the broker in any group state, so nothing was sent.
    MissingGroupMetadata { got: Option<GroupMetadata> },
    /// The transaction failed and was aborted (the writes did not land).
    Failed { code: String, message: String },
    /// The commit was sent and its outcome is unknown (it timed out through every retry, or
    /// the producer died in it): the writes may or may not have landed. Never reported as
    /// either; a recovery read learns which.
    Indeterminate { code: String, message: String },
    /// `schedule(offset)` would let the committed offset lead a write that is not durable.
    Ungated { offset: i64, pending: i64 },
    /// The flow was torn down (its partition was revoked): nothing was sent.
    TornDown,
    /// An earlier transaction left the producer in a state nobody knows (its abort failed, its
    /// commit was never answered, or a fatal error): nothing was sent. The flow must be opened
    /// again with a new producer (which fences this one's open transaction).
    ProducerBroken { why: String },
}

impl fmt::Display for CommitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommitError::Fenced { code, message } => {
                write!(f, "fenced by the broker ({code}): {message}")
            }
            CommitError::AlreadyFenced { code } => {
                write!(
                    f,
                    "an earlier transaction was fenced ({code}); nothing sent"
                )
            }
            CommitError::MissingGroupMetadata { got } => write!(
                f,
                "no live group metadata (got {got:?}): refusing to commit an offset the \
                 broker would not fence"
            ),
            CommitError::Failed { code, message } => {
                write!(f, "transaction aborted ({code}): {message}")
            }
            CommitError::Indeterminate { code, message } => write!(
                f,
                "the commit was sent and its outcome is unknown ({code}): {message}"
            ),
            CommitError::TornDown => write!(f, "the flow was torn down by a rebalance"),
            CommitError::ProducerBroken { why } => write!(
                f,
                "the producer is unusable since an earlier transaction ({why}); nothing sent"
            ),
            CommitError::Ungated { offset, pending } => write!(
                f,
                "offset {offset} not scheduled: the write at offset {pending} is not durable"
            ),
        }
    }
}

impl std::error::Error for CommitError {}

impl CommitError {
    pub fn is_fence(&self) -> bool {
        matches!(
            self,
            CommitError::Fenced { .. } | CommitError::AlreadyFenced { .. }
        )
    }

    /// How a trace names this refusal as a transaction's end.
    pub fn outcome(&self) -> TxnOutcome {
        match self {
            CommitError::Fenced { code, .. } => TxnOutcome::Fenced(code.clone()),
            CommitError::Failed { code, .. } => TxnOutcome::Failed(code.clone()),
            CommitError::Indeterminate { code, .. } => TxnOutcome::Indeterminate(code.clone()),
            other => TxnOutcome::Refused(other.to_string()),
        }
    }
}

/// A write landed in a committed transaction of `batch` writes, which also committed input
/// offset `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Committed {
    pub batch: usize,
    pub offset: i64,
}

/// Counters, for the tests and the benchmark.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub begins: u64,
    pub commits: u64,
    pub aborts: u64,
    /// Transactions whose commit was sent and whose outcome stayed unknown.
    pub indeterminate: u64,
    /// Transactions that carried no write (offset only).
    pub offset_only: u64,
    pub max_batch: usize,
    pub writes_committed: u64,
}

struct Waiter {
    id: u64,
    write: SnapshotWrite,
    outcome: Mutex<Option<Result<Committed, CommitError>>>,
    ready: Condvar,
}

impl Waiter {
    fn set(&self, r: Result<Committed, CommitError>) {
        *lock(&self.outcome) = Some(r);
        self.ready.notify_all();
    }
    fn wait(&self) -> Result<Committed, CommitError> {
        let mut g = lock(&self.outcome);
        loop {
            if let Some(r) = g.as_ref() {
                return r.clone();
            }
            g = self.ready.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }
}

struct Offsets {
    /// `oc`: the offset scheduled for the next transaction (starts at the seed; None only
    /// when unseeded and nothing was scheduled yet).
    scheduled: Option<i64>,
    /// `co`: the offset the last committed transaction carried (None before the first).
    committed: Option<i64>,
    /// The offsets of offered writes not yet durable, per key. A failed write stays until a
    /// later write of the same key at an offset at least as high is durable.
    pending: HashMap<String, BTreeSet<i64>>,
    /// The offset the partition was assigned at, if seeded: what `committed` stands for
    /// before the first commit.
    start: Option<i64>,
}

impl Offsets {
    /// `write` is durable at its offset: it covers the key's lower pending writes too.
    fn clear_pending(&mut self, write: &SnapshotWrite) {
        if let Some(m) = self.pending.get_mut(&write.key) {
            m.retain(|&off| off > write.offset);
            if m.is_empty() {
                self.pending.remove(&write.key);
            }
        }
    }

    /// A scheduled offset not yet committed (the marker lane holds a marker).
    fn marker_queued(&self) -> bool {
        self.scheduled.is_some() && self.scheduled != self.committed.or(self.start)
    }
}

/// How often a timed-out commit is retried before its outcome is reported unknown.
pub const COMMIT_RETRIES: usize = 2;

/// How a transaction that did not commit ended, as far as the producer knows.
enum Unresolved {
    /// It did not commit: it failed before the commit was sent (begin, the offsets, a
    /// record), or the commit was refused (fenced, or must be aborted).
    NotCommitted(TxnError),
    /// The commit was sent and nothing says whether it landed.
    Unknown(TxnError),
}

/// `call`, retried while it times out, [`COMMIT_RETRIES`] times at most (librdkafka allows a
/// timed-out commit or abort to be called again: it resumes the same one, and a retry after it
/// landed returns success).
fn retried(mut call: impl FnMut() -> Result<(), TxnError>) -> Result<(), TxnError> {
    let mut tries = 0;
    loop {
        match call() {
            Err(e) if e.class == ErrorClass::Retriable && tries < COMMIT_RETRIES => tries += 1,
            done => return done,
        }
    }
}

/// Group commit for one input partition.
pub struct GroupCommit<P: TxnProducer> {
    input: InputPartition,
    cap: usize,
    max_txn_bytes: usize,
    fence: Fence,
    /// The per-partition lock: holding the producer is holding the lock.
    txn: Mutex<P>,
    queue: Mutex<VecDeque<Arc<Waiter>>>,
    offsets: Mutex<Offsets>,
    meta: Arc<dyn GroupMetadataSource>,
    fenced: Mutex<Option<String>>,
    /// Set once the producer is in a state nobody knows (an abort that failed through its
    /// retries, a fatal error): why. Every later transaction is refused unsent.
    broken: Mutex<Option<String>>,
    torn_down: Mutex<bool>,
    next_writer: AtomicU64,
    stats: Mutex<Stats>,
    tracer: SharedKafkaTracer,
    gated: bool,
    lanes: Lanes,
}

/// A writer's queued write, from `offer` to `await_`.
pub struct Ticket(Arc<Waiter>);

impl Ticket {
    /// The writer's id in the trace events.
    pub fn writer(&self) -> u64 {
        self.0.id
    }
}

/// The per-partition lock, held from `acq` to `commit`.
pub struct Held<'a, P> {
    producer: MutexGuard<'a, P>,
    writer: u64,
}

/// GroupCommit settings.
#[derive(Clone, Debug)]
pub struct GroupCommitConfig {
    pub input: InputPartition,
    /// Writes drained into one transaction at most (≥ 1).
    pub cap: usize,
    /// Key and value bytes drained into one transaction at most; the first write is always
    /// taken, whatever its size.
    pub max_txn_bytes: usize,
    /// The offset the partition was assigned at: every transaction carries an offset, the
    /// first one this.
    pub seed: i64,
    /// `false` is the Kafka model's `Seeded = false` (the broken variant, for tests): until
    /// the first `schedule`, transactions carry no offset, so nothing fences them.
    pub seeded: bool,
    pub fence: Fence,
    /// `false` is GroupCommit's `Gated = false` (a planted mutant, for conformance tests only):
    /// the flow may schedule an offset while writes below it are not durable yet.
    pub gated: bool,
    /// How the offset's marker lane behaves: [`Lanes::Own`] is the design; the others are
    /// planted mutants, for conformance tests only.
    pub lanes: Lanes,
}

/// The marker lane (K-5, GroupCommitLanes): the design, and a planted mutant per guard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lanes {
    /// The offset rides every transaction and takes no write slot; `commit_marker` commits a
    /// moved offset alone; a write counts as durable once its transaction committed.
    Own,
    /// TEST-ONLY PLANTED MUTANT (`SharedBudget`): a moved offset takes one of the cap's slots.
    SharedBudget,
    /// TEST-ONLY PLANTED MUTANT (`MarkerSelfCommit = FALSE`, D-3 as found): `commit_marker`
    /// does nothing, so an offset waits for the next write to carry it.
    NoMarkerTrigger,
    /// TEST-ONLY PLANTED MUTANT (`AtomicDurable = FALSE`): a write counts as durable once it is
    /// drained into a transaction, before that transaction commits (or aborts).
    EagerDurable,
}

impl GroupCommitConfig {
    pub fn new(input: InputPartition, seed: i64) -> Self {
        GroupCommitConfig {
            input,
            cap: DEFAULT_CAP,
            max_txn_bytes: DEFAULT_MAX_TXN_BYTES,
            seed,
            seeded: true,
            fence: Fence::Generation,
            gated: true,
            lanes: Lanes::Own,
        }
    }
    pub fn cap(mut self, cap: usize) -> Self {
        self.cap = cap.max(1);
        self
    }
    pub fn max_txn_bytes(mut self, bytes: usize) -> Self {
        self.max_txn_bytes = bytes;
        self
    }
    /// Drop the seed (the `kafka_unseeded` variant; tests only).
    pub fn unseeded(mut self) -> Self {
        self.seeded = false;
        self
    }
    pub fn fence(mut self, fence: Fence) -> Self {
        self.fence = fence;
        self
    }
    /// Drop the gate on `schedule` (the `gc_ungated` variant; conformance tests only).
    pub fn ungated(mut self) -> Self {
        self.gated = false;
        self
    }
    /// A planted marker-lane mutant (conformance tests only).
    pub fn planted_lanes(mut self, lanes: Lanes) -> Self {
        self.lanes = lanes;
        self
    }
}

impl<P: TxnProducer> GroupCommit<P> {
    pub fn new(
        producer: P,
        config: GroupCommitConfig,
        meta: Arc<dyn GroupMetadataSource>,
        tracer: SharedKafkaTracer,
    ) -> Self {
        GroupCommit {
            input: config.input,
            cap: config.cap.max(1),
            max_txn_bytes: config.max_txn_bytes,
            fence: config.fence,
            txn: Mutex::new(producer),
            queue: Mutex::new(VecDeque::new()),
            offsets: Mutex::new(Offsets {
                scheduled: config.seeded.then_some(config.seed),
                committed: None,
                pending: HashMap::new(),
                start: config.seeded.then_some(config.seed),
            }),
            meta,
            fenced: Mutex::new(None),
            broken: Mutex::new(None),
            torn_down: Mutex::new(false),
            next_writer: AtomicU64::new(1),
            stats: Mutex::new(Stats::default()),
            tracer,
            gated: config.gated,
            lanes: config.lanes,
        }
    }

    pub fn input(&self) -> &InputPartition {
        &self.input
    }

    pub fn stats(&self) -> Stats {
        lock(&self.stats).clone()
    }

    /// `oc`: the offset the next transaction carries.
    pub fn scheduled(&self) -> Option<i64> {
        lock(&self.offsets).scheduled
    }

    /// `co`: the offset the last committed transaction carried.
    pub fn committed(&self) -> Option<i64> {
        lock(&self.offsets).committed
    }

    /// The fence error code, once a transaction was fenced.
    pub fn fenced(&self) -> Option<String> {
        lock(&self.fenced).clone()
    }

    /// Tear the flow down: take the per-partition lock (so no transaction is in flight) and
    /// refuse every later one. The rebalance callback calls this for each revoked partition
    /// before it returns, so no flow of a revoked partition outlives the capture of the new
    /// generation (the capture-coupling guard).
    pub fn tear_down(&self) {
        let _held = lock(&self.txn);
        *lock(&self.torn_down) = true;
    }

    pub fn is_torn_down(&self) -> bool {
        *lock(&self.torn_down)
    }

    /// Run `f` on the producer while holding the per-partition lock (tests).
    pub fn with_producer<R>(&self, f: impl FnOnce(&mut P) -> R) -> R {
        f(&mut lock(&self.txn))
    }

    /// Write one snapshot: `offer`, `acq`, `commit`, `await_`, as each writer of the model
    /// does once. Returns this write's own outcome, whichever writer's transaction carried it.
    ///
    /// One commit per writer is enough: every writer that offered commits once afterwards and
    /// each commit on a non-empty queue drains at least one write, so the queue never holds
    /// more writes than there are writers still to commit, and the last of them drains it.
    pub fn write(&self, write: SnapshotWrite) -> Result<Committed, CommitError> {
        let ticket = self.offer(write);
        let held = self.acquire(&ticket);
        // Each drained writer gets its outcome through its ticket, this one included.
        let _ = self.commit(held);
        self.await_(ticket)
    }

    /// `offer`: queue the write. The event is emitted in the queue's critical section, so the
    /// trace shows the writes in queue order.
    pub fn offer(&self, write: SnapshotWrite) -> Ticket {
        let id = self.next_writer.fetch_add(1, Ordering::Relaxed);
        lock(&self.offsets)
            .pending
            .entry(write.key.clone())
            .or_default()
            .insert(write.offset);
        let waiter = Arc::new(Waiter {
            id,
            write,
            outcome: Mutex::new(None),
            ready: Condvar::new(),
        });
        let mut queue = lock(&self.queue);
        self.tracer.kafka(&KafkaStep::Offer {
            partition: self.input.partition,
            writer: id,
            key: waiter.write.key.clone(),
            offset: waiter.write.offset,
        });
        queue.push_back(waiter.clone());
        Ticket(waiter)
    }

    /// `acq`: take the per-partition lock (blocks while another writer holds it).
    pub fn acquire(&self, ticket: &Ticket) -> Held<'_, P> {
        let producer = lock(&self.txn);
        self.tracer.kafka(&KafkaStep::Acq {
            partition: self.input.partition,
            writer: ticket.0.id,
        });
        Held {
            producer,
            writer: ticket.0.id,
        }
    }

    /// `commit`: drain up to `cap` queued writes into one transaction with the scheduled
    /// offset, hand each drained writer its outcome, and release the lock.
    pub fn commit(&self, mut held: Held<'_, P>) -> Result<Committed, CommitError> {
        let writer = held.writer;
        self.commit_locked(&mut held.producer, writer, false)
    }

    /// `await_`: this write's outcome (blocks until a commit carried it).
    pub fn await_(&self, ticket: Ticket) -> Result<Committed, CommitError> {
        let outcome = ticket.0.wait();
        self.trace_await(&ticket, &outcome);
        outcome
    }

    /// `await_` if it is enabled: the outcome once a commit carried the write, else `None`.
    pub fn try_await(&self, ticket: &Ticket) -> Option<Result<Committed, CommitError>> {
        let outcome = lock(&ticket.0.outcome).clone()?;
        self.trace_await(ticket, &outcome);
        Some(outcome)
    }

    fn trace_await(&self, ticket: &Ticket, outcome: &Result<Committed, CommitError>) {
        self.tracer.kafka(&KafkaStep::Await {
            partition: self.input.partition,
            writer: ticket.0.id,
            outcome: match outcome {
                Ok(_) => TxnOutcome::Committed,
                Err(e) => e.outcome(),
            },
        });
    }

    /// A transaction now even if nothing is queued and the offset did not move (the revoke
    /// path: an offset-only transaction). Queued writes are drained into it as usual.
    pub fn commit_now(&self) -> Result<Committed, CommitError> {
        let mut producer = lock(&self.txn);
        self.tracer.kafka(&KafkaStep::Acq {
            partition: self.input.partition,
            writer: 0,
        });
        self.commit_locked(&mut producer, 0, true)
    }

    /// The marker lane's own trigger (K-5, `MarkerSelfCommit`): an offset-only transaction
    /// when the scheduled offset moved past the committed one and no write is queued to carry
    /// it; nothing when it did not move. Without it the committed offset trails the durable
    /// snapshots until the next write (`gclanes_starve`), and a successor replays that much.
    pub fn commit_marker(&self) -> Result<Committed, CommitError> {
        if self.lanes == Lanes::NoMarkerTrigger {
            let offset = lock(&self.offsets).scheduled.unwrap_or(-1);
            return Ok(Committed { batch: 0, offset });
        }
        let mut producer = lock(&self.txn);
        self.tracer.kafka(&KafkaStep::Acq {
            partition: self.input.partition,
            writer: 0,
        });
        self.commit_locked(&mut producer, 0, false)
    }

    /// `sched`: the next transaction commits input offset `offset` (the next offset to
    /// consume). Refused while a write of an input offset below it is not durable.
    pub fn schedule(&self, offset: i64) -> Result<(), CommitError> {
        let mut o = lock(&self.offsets);
        let lowest = o.pending.values().filter_map(|m| m.first()).min();
        if let Some(&pending) = lowest {
            if pending < offset && self.gated {
                return Err(CommitError::Ungated { offset, pending });
            }
        }
        if o.scheduled.is_none_or(|s| offset > s) {
            o.scheduled = Some(offset);
            // Inside the critical section: a commit reading the offset after this is traced
            // after it.
            self.tracer.kafka(&KafkaStep::Sched {
                partition: self.input.partition,
                offset,
            });
        }
        Ok(())
    }

    /// `commit`: drain up to `cap` queued writes into one transaction with the scheduled
    /// offset, and hand each drained writer its outcome. Holds the lock (`producer`).
    fn commit_locked(
        &self,
        producer: &mut P,
        writer: u64,
        force: bool,
    ) -> Result<Committed, CommitError> {
        let partition = self.input.partition;
        // The model's commit is one atomic step: drain the queue, read the scheduled offset.
        // Both happen here, under the queue's and the offsets' locks, and the `commit` event
        // with them; the transaction's outcome follows as its own event.
        let (batch, offset, committed) = {
            let mut q = lock(&self.queue);
            let mut o = lock(&self.offsets);
            let room = match self.lanes {
                Lanes::SharedBudget if o.marker_queued() => self.cap - 1,
                _ => self.cap,
            };
            let n = q.len().min(room).min(self.fit_bytes(&q));
            let batch: Vec<Arc<Waiter>> = q.drain(..n).collect();
            if self.lanes == Lanes::EagerDurable {
                for w in &batch {
                    o.clear_pending(&w.write);
                }
            }
            self.tracer.kafka(&KafkaStep::Commit {
                partition,
                writer,
                writes: batch.len(),
                offset: o.scheduled.unwrap_or(-1),
            });
            (batch, o.scheduled, o.committed)
        };
        let trace = |writes: usize, outcome: TxnOutcome| {
            self.tracer.kafka(&KafkaStep::Transaction {
                partition,
                writer,
                writes,
                offset: offset.unwrap_or(-1),
                outcome,
            })
        };
        if batch.is_empty() && committed == offset && !force {
            // The model's commit on an empty queue: co := oc changes nothing; no transaction.
            return Ok(Committed {
                batch: 0,
                offset: offset.unwrap_or(-1),
            });
        }
        let result = self.transact(producer, &batch, offset);
        match &result {
            Ok(c) => {
                let mut o = lock(&self.offsets);
                if offset.is_some() {
                    o.committed = offset;
                }
                for w in &batch {
                    o.clear_pending(&w.write);
                }
                // Inside the critical section: a `schedule` that these durable writes let
                // through is traced after the commit that made them durable.
                trace(batch.len(), TxnOutcome::Committed);
                drop(o);
                let mut s = lock(&self.stats);
                s.max_batch = s.max_batch.max(c.batch);
                s.writes_committed += c.batch as u64;
                if c.batch == 0 {
                    s.offset_only += 1;
                }
                drop(s);
            }
            Err(e) => trace(batch.len(), e.outcome()),
        }
        for w in &batch {
            debug_assert!(w.id != 0);
            w.set(result.clone());
        }
        result
    }

    /// How many queued writes, from the front, fit the byte budget (at least one).
    fn fit_bytes(&self, queue: &VecDeque<Arc<Waiter>>) -> usize {
        let mut bytes = 0usize;
        let fitting = queue
            .iter()
            .take_while(|w| {
                bytes += w.write.key.len() + w.write.value.as_ref().map_or(0, Vec::len);
                bytes <= self.max_txn_bytes
            })
            .count();
        fitting.max(1)
    }

    /// One transaction: begin, the offsets (the fence check, before any record), the
    /// records, commit; abort on any failure.
    fn transact(
        &self,
        producer: &mut P,
        batch: &[Arc<Waiter>],
        offset: Option<i64>,
    ) -> Result<Committed, CommitError> {
        if let Some(code) = self.fenced() {
            return Err(CommitError::AlreadyFenced { code });
        }
        if let Some(why) = self.broken() {
            return Err(CommitError::ProducerBroken { why });
        }
        if *lock(&self.torn_down) {
            return Err(CommitError::TornDown);
        }
        let meta = match (&self.fence, offset) {
            // Unseeded and nothing scheduled: no offset, so no metadata (and no fence).
            (_, None) | (Fence::Unfenced, _) => None,
            (Fence::Generation, Some(_)) => match self.meta.current() {
                Some(m) if m.is_member() => Some(m),
                got => return Err(CommitError::MissingGroupMetadata { got }),
            },
            (Fence::ProducerEpoch { group_id }, Some(_)) => {
                Some(GroupMetadata::group_only(group_id))
            }
        };
        lock(&self.stats).begins += 1;
        producer.begin().map_err(|e| self.failed(e))?;
        let sent = (|| {
            if let (Some(offset), Some(meta)) = (offset, &meta) {
                producer.send_offsets(&self.input, offset, meta)?;
            }
            for w in batch {
                producer.send(&w.write)?;
            }
            Ok(())
        })();
        let committed = sent
            .map_err(Unresolved::NotCommitted)
            .and_then(|()| Self::commit_resolved(producer));
        match committed {
            Ok(()) => {
                lock(&self.stats).commits += 1;
                Ok(Committed {
                    batch: batch.len(),
                    offset: offset.unwrap_or(-1),
                })
            }
            Err(Unresolved::NotCommitted(e)) => {
                lock(&self.stats).aborts += 1;
                if e.class == ErrorClass::Fatal {
                    self.break_producer(&e);
                } else if let Err(a) = retried(|| producer.abort()) {
                    // The transaction did not commit either way (no commit was sent, or the
                    // broker refused it; an open one is aborted by the broker when it times
                    // out), but the producer could not end it: its next transaction would
                    // start from a state nobody knows.
                    self.break_producer(&a);
                }
                Err(self.failed(e))
            }
            Err(Unresolved::Unknown(e)) => {
                // The producer is still in its commit: nothing can begin after it.
                self.break_producer(&e);
                lock(&self.stats).indeterminate += 1;
                Err(CommitError::Indeterminate {
                    code: e.code,
                    message: e.message,
                })
            }
        }
    }

    fn break_producer(&self, e: &TxnError) {
        lock(&self.broken).get_or_insert_with(|| e.to_string());
    }

    /// Why the producer is unusable, once it is (see [`CommitError::ProducerBroken`]).
    pub fn broken(&self) -> Option<String> {
        lock(&self.broken).clone()
    }

    /// The commit, [`retried`] while it times out, so that a broker back within the retries
    /// resolves it either way.
    fn commit_resolved(producer: &mut P) -> Result<(), Unresolved> {
        retried(|| producer.commit()).map_err(|e| match e.class {
            // A refusal the broker or client states: it did not commit.
            ErrorClass::Fenced | ErrorClass::Abortable => Unresolved::NotCommitted(e),
            // Out of retries, or the producer died mid-commit.
            ErrorClass::Retriable | ErrorClass::Fatal => Unresolved::Unknown(e),
        })
    }

    fn failed(&self, e: TxnError) -> CommitError {
        if e.class == ErrorClass::Fenced {
            *lock(&self.fenced) = Some(e.code.clone());
            CommitError::Fenced {
                code: e.code,
                message: e.message,
            }
        } else {
            CommitError::Failed {
                code: e.code,
                message: e.message,
            }
        }
    }
}

/// What an in-memory producer was asked to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemCall {
    Begin,
    Offsets { offset: i64, meta: GroupMetadata },
    Send(SnapshotWrite),
    Commit,
    Abort,
}

/// The in-memory producer's shared state: the calls, the committed writes and offset, and the
/// faults to inject.
#[derive(Debug, Default)]
pub struct MemLog {
    pub calls: Vec<MemCall>,
    /// Writes of committed transactions, in commit order.
    pub durable: Vec<SnapshotWrite>,
    /// The input offset of the last committed transaction.
    pub committed_offset: Option<i64>,
    /// The coordinator's live generation: an offset commit carrying a member of another
    /// generation is rejected with ILLEGAL_GENERATION (None: accept all).
    pub live_generation: Option<i32>,
    /// Fail the commit of the n-th transaction (1-based) with an abortable error.
    pub fail_commit_at: Option<u64>,
    /// How long a commit takes (a broker round trip), so that writers queue meanwhile.
    pub commit_latency: Option<std::time::Duration>,
    in_txn: bool,
    txn_offset: Option<i64>,
    txn_writes: Vec<SnapshotWrite>,
    commits_tried: u64,
}

/// An in-memory transactional producer (no broker).
#[derive(Clone, Debug, Default)]
pub struct MemProducer {
    pub log: Arc<Mutex<MemLog>>,
}

impl MemProducer {
    pub fn new() -> Self {
        MemProducer::default()
    }
    pub fn log(&self) -> MutexGuard<'_, MemLog> {
        lock(&self.log)
    }
}

fn mem_err(class: ErrorClass, code: &str, message: &str) -> TxnError {
    TxnError {
        class,
        code: code.to_string(),
        message: message.to_string(),
    }
}

impl TxnProducer for MemProducer {
    fn begin(&mut self) -> Result<(), TxnError> {
        let mut l = self.log();
        l.calls.push(MemCall::Begin);
        if l.in_txn {
            return Err(mem_err(
                ErrorClass::Fatal,
                "STATE",
                "begin inside a transaction",
            ));
        }
        l.in_txn = true;
        l.txn_offset = None;
        l.txn_writes.clear();
        Ok(())
    }
    fn send_offsets(
        &mut self,
        _input: &InputPartition,
        offset: i64,
        meta: &GroupMetadata,
    ) -> Result<(), TxnError> {
        let mut l = self.log();
        l.calls.push(MemCall::Offsets {
            offset,
            meta: meta.clone(),
        });
        if let Some(live) = l.live_generation {
            if meta.is_member() && meta.generation_id != live {
                return Err(mem_err(
                    ErrorClass::Fenced,
                    "ILLEGAL_GENERATION",
                    "stale generation",
                ));
            }
        }
        l.txn_offset = Some(offset);
        Ok(())
    }
    fn send(&mut self, write: &SnapshotWrite) -> Result<(), TxnError> {
        let mut l = self.log();
        l.calls.push(MemCall::Send(write.clone()));
        l.txn_writes.push(write.clone());
        Ok(())
    }
    fn commit(&mut self) -> Result<(), TxnError> {
        let latency = self.log().commit_latency;
        if let Some(d) = latency {
            std::thread::sleep(d);
        }
        let mut l = self.log();
        l.calls.push(MemCall::Commit);
        l.commits_tried += 1;
        if l.fail_commit_at == Some(l.commits_tried) {
            return Err(mem_err(
                ErrorClass::Abortable,
                "INJECTED",
                "injected commit failure",
            ));
        }
        l.in_txn = false;
        let writes = std::mem::take(&mut l.txn_writes);
        l.durable.extend(writes);
        if let Some(o) = l.txn_offset.take() {
            l.committed_offset = Some(o);
        }
        Ok(())
    }
    fn abort(&mut self) -> Result<(), TxnError> {
        let mut l = self.log();
        l.calls.push(MemCall::Abort);
        l.in_txn = false;
        l.txn_writes.clear();
        l.txn_offset = None;
        Ok(())
    }
}
