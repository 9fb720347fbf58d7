//! Conformance of the Kafka targets (docs/models/kafka.md, docs/models/epoch.md): an owner and a revoked (zombie) flow
//! on the generation-fenced design, its planted mutants and the rejected Epoch design.
//!
//! Implementation → model: a seeded schedule drives the flows ([`KafkaFlow`] over
//! [`GroupCommit`]) one step at a time: the owner folds the next record and flushes it (the
//! model's `OwnerFold` writes the topic at each fold, so fold + transaction are one step, its
//! event emitted once the outcome is known), recovers after a delete evicted its key, the
//! coordinator rebalances, the zombie's consumer polls (capturing the new generation, and in
//! the coupled design tearing the flow down in the same callback), the zombie commits its
//! fold at some offset `m`. Each step's recorded [`KafkaStep`]s become one NDJSON [`KafkaEvent`]
//! carrying what it observed (the transaction's outcome, the topic's last record for the key).
//!
//! Model → implementation: the must-fail configs' counterexamples drive the broken variant
//! (the stale write must land and the topic must regress) and the guarded design (it must
//! refuse where the guarded model refuses), comparing the topic with the model's after every
//! step; random walks of the guarded model drive the guarded design the same way.
//!
//! Backends. `memory`: the in-memory transactional producer ([`MemProducer`]), whose shared
//! log checks the offset commit's generation like the group coordinator. `kafka`: a real
//! broker; each world has its own topics and group, member A's generation is what the flows
//! carry (the owner its live one, the zombie the one captured before member B's join moved the
//! group on), the producers are real transactional producers (the Epoch design's share one
//! stable `transactional.id`), and the topic is read back read_committed after every step.
//! On both, the harness plays the zombie's rebalance callback: it captures the live generation
//! and (coupled) tears the flow down in one step, as `MemberContext::pre_rebalance` does; the
//! fences themselves are the implementation's and the coordinator's.

use std::collections::HashMap;
#[cfg(feature = "kafka")]
use std::sync::atomic::AtomicU64;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
#[cfg(feature = "kafka")]
use std::time::{Duration, Instant};

use loadbearing_impls::store::Read;
use loadbearing_impls::trace::{Step, Tracer};
use loadbearing_impls_kafka::flow::{FlowRegistry, KafkaFlow, TeardownMode};
#[cfg(feature = "kafka")]
use loadbearing_impls_kafka::flow::{Member, MemberConfig};
use loadbearing_impls_kafka::group_commit::{
    CommitError, ErrorClass, Fence, GroupCommit, GroupCommitConfig, GroupMetadata,
    GroupMetadataSource, InputPartition, MemProducer, SnapshotWrite, TxnError, TxnProducer,
};
#[cfg(feature = "kafka")]
use loadbearing_impls_kafka::harness::recovery_budget;
#[cfg(feature = "kafka")]
use loadbearing_impls_kafka::kafka::{
    create_topics, group_metadata_of, recover, KafkaTxnProducer, LiveGroupMetadata,
};
#[cfg(feature = "kafka")]
use loadbearing_impls_kafka::trace::no_trace;
use loadbearing_impls_kafka::trace::{KafkaRecorder, KafkaStep, KafkaTracer};
use loadbearing_refinement::conform::{validate, Limits};
use loadbearing_specs::kafka::trace::KafkaEvent;

use crate::mismatch::Mismatch;
use crate::producer::{outcome_of, PRODUCERS};
use loadbearing_refinement::Model;
use loadbearing_specs::epoch::model::{Epoch, EpochAction};
use loadbearing_specs::infra::vocab::{Cell, Offsets, Op, Ops};
use loadbearing_specs::kafka::model::{Kafka, KafkaAction, KafkaState};
use loadbearing_specs::one_key::OneKey;
use loadbearing_specs::Configured;

use crate::backend::{Backend, BackendKind};
use crate::driver::{drive_expecting, refusing_states, Applied, Compare, Harness};
use crate::error::{Error, HarnessError};
use crate::observe::{cell_as_set, contents_as_set};
use crate::paths::random_walk;
use crate::replays::ReplaySpec;
use crate::replays::{self, ReplayOutcome, Violation};
use crate::schedule::{Schedule, Seeded};
use crate::target::{Expect, ModelName, Replay, Settings, Target, TargetResult};
use crate::target_id::TargetId;
use crate::{counterexample, Cx};

/// Events at offsets `1..=MAX_OFFSET`: small, so that zombie commits collide with the owner.
pub const MAX_OFFSET: u8 = 4;
const KEY: &str = "k";
const GROUP: &str = "loadbearing-conform";
const INPUT: &str = "input";
/// Steps per trace at most (the owner needs `MAX_OFFSET` folds plus recoveries).
const MAX_STEPS: usize = 4 * MAX_OFFSET as usize;

/// Which fence the transactions rely on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Design {
    /// KIP-447: the offset commit carries the consumer's generation.
    Generation,
    /// No generation check (`Fence::Unfenced`).
    Unfenced,
    /// The rejected Epoch design: a stable transactional id, producer epochs only.
    ProducerEpoch,
}

/// One build of the implementation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variant {
    /// Capturing the new generation tears the revoked flow down in the same step.
    pub coupled: bool,
    /// Every transaction carries an input offset, from the assignment's seed on.
    pub seeded: bool,
    pub design: Design,
}

impl Variant {
    /// How this build's rebalance callback tears a revoked flow down.
    pub fn teardown(self) -> TeardownMode {
        if self.coupled {
            TeardownMode::Awaited
        } else {
            TeardownMode::Detached
        }
    }

    pub const GUARDED: Variant = Variant {
        coupled: true,
        seeded: true,
        design: Design::Generation,
    };
}

/// The recorder behind every flow, muted while the harness rebuilds a flow's state (a zombie's
/// stale fold, an owner's restart) so that only the steps the model sees are recorded.
#[derive(Default)]
struct Sink {
    rec: KafkaRecorder,
    muted: AtomicBool,
}

impl Tracer for Sink {
    fn step(&self, step: &Step) {
        if !self.muted.load(Ordering::SeqCst) {
            self.rec.step(step);
        }
    }
}

impl KafkaTracer for Sink {
    fn kafka(&self, step: &KafkaStep) {
        if !self.muted.load(Ordering::SeqCst) {
            self.rec.kafka(step);
        }
    }
}

/// The transactional producer of one flow: the in-memory one (with producer epochs for the
/// Epoch design: `init` hands out the next epoch of the stable transactional id, and a producer
/// whose epoch is no longer the highest is fenced with PRODUCER_FENCED, as the transaction
/// coordinator does), or the real one, whose epochs and fences are the broker's.
enum Producer {
    Mem {
        mem: MemProducer,
        epoch: Option<(Arc<Mutex<u32>>, u32)>,
    },
    #[cfg(feature = "kafka")]
    Real(Box<KafkaTxnProducer>),
}

impl Producer {
    fn plain(mem: &MemProducer) -> Producer {
        Producer::Mem {
            mem: mem.clone(),
            epoch: None,
        }
    }

    /// `initTransactions` with the stable id: the new producer takes the highest epoch.
    fn init(mem: &MemProducer, epochs: &Arc<Mutex<u32>>) -> Producer {
        let mut max = epochs.lock().unwrap_or_else(|e| e.into_inner());
        *max += 1;
        Producer::Mem {
            mem: mem.clone(),
            epoch: Some((epochs.clone(), *max)),
        }
    }

    fn check_epoch(&self) -> Result<(), TxnError> {
        if let Producer::Mem {
            epoch: Some((epochs, mine)),
            ..
        } = self
        {
            let max = *epochs.lock().unwrap_or_else(|e| e.into_inner());
            if max > *mine {
                return Err(TxnError {
                    class: ErrorClass::Fenced,
                    code: "PRODUCER_FENCED".into(),
                    message: format!("epoch {mine}, the coordinator's is {max}"),
                });
            }
        }
        Ok(())
    }

    fn inner(&mut self) -> &mut dyn TxnProducer {
        match self {
            Producer::Mem { mem, .. } => mem,
            #[cfg(feature = "kafka")]
            Producer::Real(p) => p.as_mut(),
        }
    }
}

impl TxnProducer for Producer {
    fn begin(&mut self) -> Result<(), TxnError> {
        self.check_epoch()?;
        self.inner().begin()
    }
    fn send_offsets(
        &mut self,
        input: &InputPartition,
        offset: i64,
        meta: &GroupMetadata,
    ) -> Result<(), TxnError> {
        self.check_epoch()?;
        self.inner().send_offsets(input, offset, meta)
    }
    fn send(&mut self, write: &SnapshotWrite) -> Result<(), TxnError> {
        self.inner().send(write)
    }
    fn commit(&mut self) -> Result<(), TxnError> {
        self.check_epoch()?;
        self.inner().commit()
    }
    fn abort(&mut self) -> Result<(), TxnError> {
        self.inner().abort()
    }
}

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
    fn of_kafka(action: KafkaAction) -> Move {
        match action {
            KafkaAction::OwnerFold => Move::OwnerFold,
            KafkaAction::OwnerRecover => Move::OwnerRecover,
            KafkaAction::Rebalance => Move::Rebalance,
            KafkaAction::Poll => Move::Poll,
            KafkaAction::ZombieCommit(m) => Move::ZombieCommit(m),
        }
    }

    fn of_epoch(action: EpochAction) -> Move {
        match action {
            EpochAction::OwnerFold => Move::OwnerFold,
            EpochAction::OwnerRecover => Move::OwnerRecover,
            EpochAction::Rebalance => Move::Rebalance,
            EpochAction::ZombieInit => Move::ZombieInit,
            EpochAction::ZombieCommit(m) => Move::ZombieCommit(m),
        }
    }

    /// The Kafka model's action for this step (`ZombieInit` is none: a stutter there).
    fn kafka_action(self) -> Option<KafkaAction> {
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
fn payload(ops: Ops, o: u8) -> Vec<u8> {
    match ops.at(o) {
        Op::Persist => o.to_string().into_bytes(),
        Op::Delete => Vec::new(),
    }
}

/// Where the flows write and whose generations they carry.
enum Log {
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
struct RealLog {
    bootstrap: String,
    snapshots: String,
    group: String,
    a: Member,
    b: Option<Member>,
    /// The generation `a` joined at: event generations are counted from it (the model's 1).
    base: i32,
}

#[cfg(feature = "kafka")]
static NAMES: AtomicU64 = AtomicU64::new(0);

/// A name no other world (or earlier run on the same broker) uses.
#[cfg(feature = "kafka")]
fn unique(name: &str) -> String {
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
const JOIN_TIMEOUT: Duration = Duration::from_secs(60);

#[cfg(feature = "kafka")]
impl RealLog {
    fn open(bootstrap: &str) -> Result<(RealLog, String), Error> {
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

    fn live(&self) -> GroupMetadata {
        group_metadata_of(&self.a.consumer)
            .unwrap_or_else(|| GroupMetadata::group_only(&self.group))
    }

    /// Keeps both members inside `max.poll.interval` (their rebalance callbacks run here).
    fn keep_alive(&self) {
        let _ = self.a.poll(Duration::ZERO);
        if let Some(b) = &self.b {
            let _ = b.poll(Duration::ZERO);
        }
    }

    /// Member B joins; both poll until A is a member of the next generation.
    fn rebalance(&mut self, input: &str) -> Result<(), Error> {
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

    fn last_record(&self) -> Result<Option<Read>, Error> {
        recover(&self.bootstrap, &self.snapshots, 0, &recovery_budget())
            .map(|mut m| m.remove(KEY))
            .map_err(|e| Error::Open {
                what: "reading the snapshot topic back",
                reason: e.to_string(),
            })
    }
}

impl Log {
    fn live_generation(&self) -> i32 {
        match self {
            Log::Mem { live_gen, .. } => live_gen.load(Ordering::SeqCst),
            #[cfg(feature = "kafka")]
            Log::Real(r) => r.live().generation_id,
        }
    }

    /// The model's number for an implementation generation.
    fn model_generation(&self, generation: i32) -> i32 {
        match self {
            Log::Mem { .. } => generation,
            #[cfg(feature = "kafka")]
            Log::Real(r) => generation - r.base + 1,
        }
    }

    /// The live metadata of the member whose partition the owner holds.
    fn live_meta(&self) -> GroupMetadata {
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

    fn owner_meta(&self) -> Arc<dyn GroupMetadataSource> {
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

    fn group_id(&self) -> String {
        match self {
            Log::Mem { .. } => GROUP.into(),
            #[cfg(feature = "kafka")]
            Log::Real(r) => r.group.clone(),
        }
    }

    /// A producer for `role`; in the Epoch design every producer shares the stable id, so each
    /// new one takes the highest epoch.
    #[cfg_attr(not(feature = "kafka"), allow(unused_variables))] // `role` names a real producer
    fn producer(&self, design: Design, role: &str) -> Result<Producer, Error> {
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

    fn last_record(&self) -> Result<Option<Read>, Error> {
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

/// One key's owner and zombie flows over one log.
pub struct World {
    variant: Variant,
    ops: Ops,
    max: u8,
    log: Log,
    input: String,
    /// The generation metadata the zombie's flow carries (the one its consumer captured).
    captured: Arc<Mutex<GroupMetadata>>,
    sink: Arc<Sink>,
    seen: usize,
    owner_commit: Arc<GroupCommit<Producer>>,
    /// None while the key is evicted (after a delete), until the owner recovers.
    owner: Option<KafkaFlow<Producer>>,
    owner_pos: u8,
    rebalanced: bool,
    zombie: Option<Arc<GroupCommit<Producer>>>,
    /// The member's flows: the zombie's is registered on its partition, and the rebalance
    /// callback revokes it through this registry, built as the variant says (the design tears
    /// the flow down in the revoke; the decoupled mutant does not).
    flows: FlowRegistry,
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

    fn captured(&self) -> GroupMetadata {
        self.captured
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn owner_done(&self) -> bool {
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

    fn muted<R>(&self, f: impl FnOnce() -> R) -> R {
        self.sink.muted.store(true, Ordering::SeqCst);
        let r = f();
        self.sink.muted.store(false, Ordering::SeqCst);
        r
    }

    /// The Kafka steps recorded since the last call.
    fn fresh(&mut self) -> Vec<KafkaStep> {
        let all = self.sink.rec.kafka_steps();
        let new = all[self.seen.min(all.len())..].to_vec();
        self.seen = all.len();
        new
    }

    fn owner_fold(&mut self) -> Result<KafkaEvent, Error> {
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
    fn restart_owner(&mut self, before: Option<Vec<u8>>, o: u8) -> Result<(), Error> {
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
    fn owner_recover(&mut self) -> Result<KafkaEvent, Error> {
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
    fn rebalance(&mut self) -> Result<KafkaEvent, Error> {
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
    fn poll(&mut self) -> Result<KafkaEvent, Error> {
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
    fn start_zombie(&mut self) -> Result<(), Error> {
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
    fn zombie_init(&mut self) -> Result<KafkaEvent, Error> {
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
    fn zombie_commit(&mut self, m: u8) -> Result<KafkaEvent, Error> {
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
fn zombie_meta(captured: &Arc<Mutex<GroupMetadata>>) -> Arc<dyn GroupMetadataSource> {
    let captured = captured.clone();
    Arc::new(move || Some(captured.lock().unwrap_or_else(|e| e.into_inner()).clone()))
}

fn group_commit(
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

/// One seeded trace: a random log, then random steps among those the implementation can take.
pub fn trace(variant: Variant, schedule: &mut dyn Schedule) -> Result<Vec<KafkaEvent>, Error> {
    trace_on(&Backend::MEMORY, variant, schedule)
}

/// One seeded trace on `backend`.
pub fn trace_on(
    backend: &Backend,
    variant: Variant,
    schedule: &mut dyn Schedule,
) -> Result<Vec<KafkaEvent>, Error> {
    let ops = Ops((schedule.below(1 << MAX_OFFSET) as u32) << 1);
    let mut world = World::new(variant, ops, MAX_OFFSET, backend)?;
    let mut events = Vec::new();
    for _ in 0..MAX_STEPS {
        let moves = world.moves();
        if moves.is_empty() || (world.owner_done() && schedule.below(3) == 0) {
            break;
        }
        let Some(chosen) = schedule.pick(moves.len()) else {
            break;
        };
        events.push(world.apply(moves[chosen])?);
    }
    Ok(events)
}

/// What one replay of a model path did to the implementation.
#[derive(Clone, Debug, Default)]
pub struct Replayed {
    pub events: Vec<KafkaEvent>,
    /// The topic after each step.
    pub topics: Vec<Cell>,
    /// A zombie commit was accepted.
    pub zombie_landed: bool,
    /// The topic's last record for the key moved to a lower offset (or vanished).
    pub regressed: bool,
    pub mismatches: Vec<Mismatch>,
}

/// The world under the model's steps, as the harness's moves. A step the implementation cannot
/// take is a mismatch, and the path goes on.
struct Driving<'a> {
    world: &'a mut World,
    events: Vec<KafkaEvent>,
}

impl Harness for Driving<'_> {
    type Step = Move;
    type Observed = Cell;

    fn apply(&mut self, mv: &Move) -> Result<Applied, Error> {
        Ok(match self.world.apply(*mv) {
            Ok(event) => {
                let refused = matches!(
                    &event,
                    KafkaEvent::ZombieCommit { outcome: Some(outcome), .. } if !outcome.committed()
                );
                self.events.push(event);
                if refused {
                    Applied::Refused
                } else {
                    Applied::Taken
                }
            }
            Err(e) => Applied::Failed(e.to_string()),
        })
    }

    fn observe(&mut self) -> Result<Cell, Error> {
        self.world.topic()
    }
}

/// Drives `variant` through `moves` from log `ops`, comparing the topic after each step with
/// `expected[i]` (the model's).
pub fn drive(
    backend: &Backend,
    variant: Variant,
    ops: Ops,
    max: u8,
    moves: &[Move],
    expected: &[Cell],
) -> Result<Replayed, Error> {
    let mut world = World::new(variant, ops, max, backend)?;
    let mut driving = Driving {
        world: &mut world,
        events: Vec::new(),
    };
    let driven = drive_expecting(
        &mut driving,
        moves.iter().copied().zip(expected.iter().copied()),
        Compare::Always,
    )?;
    let zombie_landed = driving.events.iter().any(|event| {
        matches!(
            event,
            KafkaEvent::ZombieCommit { outcome: Some(outcome), .. } if outcome.committed()
        )
    });
    let context = format!("{variant:?}, log {}", ops.render(max));
    let regressed = driven
        .transitions()
        .any(|(before, after)| before.present && (!after.present || after.offset < before.offset));
    Ok(Replayed {
        events: driving.events,
        topics: driven.observed[1..].to_vec(),
        zombie_landed,
        regressed,
        mismatches: driven.records(context),
    })
}

/// The guarded model's topic along `moves`: a step the guarded model does not enable is
/// refused there (its state stays), and must be refused by the guarded implementation too.
fn guarded_topics(guarded: &Kafka, init: &KafkaState, moves: &[Move]) -> Vec<Cell> {
    refusing_states(guarded, init, moves, |mv| mv.kafka_action())
        .iter()
        .map(|s| s.topic)
        .collect()
}

/// A must-fail config's counterexample replayed on the broken variant and the guarded design.
#[derive(Clone, Debug)]
pub struct CxReplay {
    pub spec: ReplaySpec,
    pub log: String,
    pub path: Vec<Move>,
    pub broken: Replayed,
    pub guarded: Replayed,
}

/// A config's counterexample as the harness's moves: MaxOffset, the log, the moves, and the
/// model's topic after each step.
fn schedule_of<M: Configured + OneKey>(
    config: &str,
    to_move: fn(M::Action) -> Move,
) -> Result<(u8, Ops, Vec<Move>, Vec<Cell>), Error> {
    let Cx {
        model,
        states,
        path,
    } = counterexample::<M>(config)?;
    let topics = states[1..].iter().map(M::row).collect();
    let moves = path.into_iter().map(to_move).collect();
    Ok((model.max_offset(), M::log(&states[0]), moves, topics))
}

/// Replays the mutant's config counterexample on its variant and on the guarded design.
pub fn replay_counterexample(target: &KafkaTarget) -> Result<CxReplay, Error> {
    replay_counterexample_on(&Backend::MEMORY, target)
}

/// The must-fail config `target` reproduces (the replay data's), on `backend`.
pub fn replay_counterexample_on(
    backend: &Backend,
    target: &KafkaTarget,
) -> Result<CxReplay, Error> {
    let spec = replays::driven_by(target.id)?
        .into_iter()
        .next()
        .ok_or_else(|| {
            HarnessError::out_of_order(target.name(), "the replay data gives it no counterexample")
        })?;
    replay_config_on(backend, target, spec)
}

fn replay_config_on(
    backend: &Backend,
    target: &KafkaTarget,
    spec: ReplaySpec,
) -> Result<CxReplay, Error> {
    // The model's topic after each step: what the broken variant must show. The counterexample
    // is a path of the config's model, the Kafka one or the rejected Epoch design's.
    let model = crate::suite_config(&spec.config)?.model;
    let (max, ops, path, broken_topics) = if model == <Epoch as Configured>::NAME {
        schedule_of::<Epoch>(&spec.config, Move::of_epoch)?
    } else {
        schedule_of::<Kafka>(&spec.config, Move::of_kafka)?
    };
    let guarded = Kafka {
        max_offset: max,
        coupled: true,
        seeded: true,
    };
    let guarded_init = guarded
        .init_states()
        .into_iter()
        .find(|s| s.op == ops)
        .ok_or_else(|| HarnessError::outside("the guarded model's log", ops))?;
    let guarded_topics = guarded_topics(&guarded, &guarded_init, &path);
    Ok(CxReplay {
        log: ops.render(max),
        broken: drive(backend, target.variant, ops, max, &path, &broken_topics)?,
        guarded: drive(backend, Variant::GUARDED, ops, max, &path, &guarded_topics)?,
        path,
        spec,
    })
}

/// Random walks of the guarded model driven on the guarded design.
fn guarded_walks(settings: &Settings, result: &mut TargetResult) -> Result<(), Error> {
    let model = Kafka {
        max_offset: MAX_OFFSET,
        coupled: true,
        seeded: true,
    };
    let mut schedule = Seeded::new(settings.seed ^ 0x5EED);
    let inits = model.init_states();
    for _ in 0..settings.traces {
        let init = inits[schedule.below(inits.len() as u64) as usize].clone();
        let (path, states) = random_walk(&model, init.clone(), &mut schedule, MAX_STEPS, |_| false);
        let topics: Vec<Cell> = states[1..].iter().map(|s| s.topic).collect();
        let moves: Vec<Move> = path.into_iter().map(Move::of_kafka).collect();
        let replayed = drive(
            &settings.backend,
            Variant::GUARDED,
            init.op,
            MAX_OFFSET,
            &moves,
            &topics,
        )?;
        result.steps += moves.len();
        result.mismatches.extend(replayed.mismatches);
    }
    Ok(())
}

impl Replayed {
    /// The broken variant reproduced the zombie's violation: its commit landed and the topic
    /// moved back.
    fn reproduced(&self) -> ReplayOutcome {
        ReplayOutcome::of(
            Violation::ZombieCommitLanded,
            self.zombie_landed && self.regressed,
        )
    }

    /// The guarded design refused it: no zombie commit landed, and the topic never moved back.
    fn refused(&self) -> ReplayOutcome {
        ReplayOutcome::of(
            Violation::ZombieCommitLanded,
            self.zombie_landed || self.regressed,
        )
    }
}

/// Judges the replayed counterexample by its typed outcomes; what is missing goes to the
/// mismatches.
fn judge_cx(cx: &CxReplay, result: &mut TargetResult) {
    result.steps += cx.broken.topics.len() + cx.guarded.topics.len();
    let shown: Vec<String> = cx.path.iter().map(|m| format!("{m:?}")).collect();
    let schedule = format!("{} ({}, log {})", cx.spec.config, shown.join(", "), cx.log);
    let (broken, guarded) = (cx.broken.reproduced(), cx.guarded.refused());
    for m in crate::mismatch::judge_replay(&cx.spec, broken, guarded) {
        result.mismatches.push(m.with_context(format!(
            "{schedule}: on the broken variant zombie commit landed {}, topic regressed {}; on the guarded design {}, {}",
            cx.broken.zombie_landed, cx.broken.regressed, cx.guarded.zombie_landed, cx.guarded.regressed
        )));
    }
    result
        .mismatches
        .extend(cx.broken.mismatches.iter().cloned());
    result
        .mismatches
        .extend(cx.guarded.mismatches.iter().cloned());
    let did = |r: &Replayed| {
        let topics: Vec<String> = r.topics.iter().map(Cell::to_string).collect();
        let what = match (r.zombie_landed, r.regressed) {
            (true, true) => "the zombie's commit landed and the topic moved back",
            (true, false) => "the zombie's commit landed",
            (false, true) => "the topic moved back",
            (false, false) => {
                "the zombie's commit was refused or never sent; the topic never moved back"
            }
        };
        format!("topic {}: {what}", topics.join(" → "))
    };
    result.replays.push(Replay {
        config: format!("{} (log {})", cx.spec.config, cx.log),
        steps: shown,
        broken: did(&cx.broken),
        guarded: did(&cx.guarded),
        broken_outcome: broken,
        guarded_outcome: guarded,
    });
}

/// An owner and a revoked flow on one build of the Kafka design, against the guarded Kafka
/// model; then random walks of the guarded model (the design as built) or the must-fail
/// config's counterexample (a mutant).
pub struct KafkaTarget {
    id: TargetId,
    variant: Variant,
}

impl KafkaTarget {
    /// The build of the implementation it runs.
    pub fn variant(&self) -> Variant {
        self.variant
    }
}

/// Owner and revoked flows on the generation-fenced Kafka design.
pub static KAFKA: KafkaTarget = KafkaTarget {
    id: TargetId::Kafka,
    variant: Variant::GUARDED,
};

/// The capture decoupled from the teardown (planted mutant).
pub static KAFKA_DECOUPLED: KafkaTarget = KafkaTarget {
    id: TargetId::KafkaDecoupled,
    variant: Variant {
        coupled: false,
        ..Variant::GUARDED
    },
};

/// Transactions carrying no offset until the first schedule (planted mutant).
pub static KAFKA_UNSEEDED: KafkaTarget = KafkaTarget {
    id: TargetId::KafkaUnseeded,
    variant: Variant {
        seeded: false,
        ..Variant::GUARDED
    },
};

/// The generation not checked (planted mutant). It checks no generation, so nothing gates its
/// zombie: `Seeded = false` is the model of that too.
pub static KAFKA_UNFENCED: KafkaTarget = KafkaTarget {
    id: TargetId::KafkaUnfenced,
    variant: Variant {
        design: Design::Unfenced,
        ..Variant::GUARDED
    },
};

/// The rejected producer-epoch design, against the Kafka model (its counterexample must land on
/// the implementation); also validated against its own Epoch model, reported, not judged.
pub static EPOCH: KafkaTarget = KafkaTarget {
    id: TargetId::Epoch,
    variant: Variant {
        design: Design::ProducerEpoch,
        ..Variant::GUARDED
    },
};

impl Target for KafkaTarget {
    fn id(&self) -> TargetId {
        self.id
    }

    fn model(&self, _: BackendKind) -> ModelName {
        ModelName::of::<Kafka>()
    }

    fn backends(&self) -> &'static [BackendKind] {
        PRODUCERS
    }

    fn expect(&self) -> Expect {
        if self.variant == Variant::GUARDED {
            Expect::Conforms
        } else {
            Expect::Diverges
        }
    }

    fn run(&self, settings: &Settings, result: &mut TargetResult) -> Result<(), Error> {
        let guarded = Kafka {
            max_offset: MAX_OFFSET,
            coupled: true,
            seeded: true,
        };
        let epoch = Epoch {
            max_offset: MAX_OFFSET,
        };
        let own_model = self.variant.design == Design::ProducerEpoch;
        let mut schedule = Seeded::new(settings.seed);
        let (mut epoch_conforming, mut epoch_first) = (0, None);
        for n in 0..settings.traces {
            let events = trace_on(&settings.backend, self.variant, &mut schedule)?;
            result.tally(&guarded, &events);
            if own_model {
                // Against its own model. Not part of `ok`: the Epoch model's owner writes the
                // correct fold, while the implementation's owner writes its in-memory state,
                // which is wrong once it recovered a snapshot the zombie wrote at another
                // offset (the model under-approximates that corruption). Reported, not hidden.
                match validate(&epoch, &events, Limits::default()).divergence {
                    None => epoch_conforming += 1,
                    Some(d) => {
                        epoch_first.get_or_insert_with(|| format!("trace {}: {}", n + 1, d.text()));
                    }
                }
            }
        }
        if own_model {
            eprintln!(
                "epoch: {epoch_conforming} of {} traces conform to the Epoch model{}",
                settings.traces,
                epoch_first.map_or(String::new(), |d| format!(
                    "; the first that does not:\n{d}"
                ))
            );
        }
        if self.variant == Variant::GUARDED {
            guarded_walks(settings, result)?;
        }
        for spec in replays::driven_by(self.id)? {
            let cx = replay_config_on(&settings.backend, self, spec)?;
            judge_cx(&cx, result);
        }
        Ok(())
    }
}
