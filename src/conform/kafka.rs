//! Conformance of the Kafka targets (SPECS.md §3, §4): an owner and a revoked (zombie) flow
//! on the generation-fenced design, its planted mutants and the rejected Epoch design.
//!
//! Implementation → model: a seeded schedule drives the flows ([`KafkaFlow`] over
//! [`GroupCommit`]) one step at a time: the owner folds the next record and flushes it (the
//! model's `OwnerFold` writes the topic at each fold, so fold + transaction are one step, its
//! event emitted once the outcome is known), recovers after a delete evicted its key, the
//! coordinator rebalances, the zombie's consumer polls (capturing the new generation, and in
//! the coupled design tearing the flow down in the same callback), the zombie commits its
//! fold at some offset `m`. Each step's recorded [`KafkaStep`]s become one NDJSON [`Event`]
//! carrying what it observed (the transaction's outcome, the topic's last record for the key).
//!
//! Model → implementation: the must-fail configs' counterexamples drive the broken variant
//! (the stale write must land and the topic must regress) and the guarded design (it must
//! refuse where the guarded model refuses), comparing the topic with the model's after every
//! step; random walks of the guarded model drive the guarded design the same way.
//!
//! Backend: `memory`, the in-memory transactional producer ([`MemProducer`]), whose shared log
//! checks the offset commit's generation like the group coordinator. The rebalance callback of
//! a real consumer ([`loadbearing_impls_kafka::flow::Member`]) needs a broker; on memory the
//! harness plays the member: it captures the generation and (coupled) tears the flow down in
//! one step, as `MemberContext::pre_rebalance` does.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};

use loadbearing_impls::store::Read;
use loadbearing_impls::trace::{Step, Tracer};
use loadbearing_impls_kafka::flow::KafkaFlow;
use loadbearing_impls_kafka::group_commit::{
    CommitError, ErrorClass, Fence, GroupCommit, GroupCommitConfig, GroupMetadata, InputPartition,
    MemProducer, SnapshotWrite, TxnError, TxnProducer,
};
use loadbearing_impls_kafka::trace::{KafkaRecorder, KafkaStep, KafkaTracer, TxnOutcome};
use loadbearing_refinement::conform::{validate, Event, Limits};
use loadbearing_refinement::Options;
use loadbearing_specs::epoch::{Epoch, EpochAction};
use loadbearing_specs::kafka::{Kafka, KafkaAction, KafkaState};
use loadbearing_specs::vocab::{Cell, Offsets, Op, Ops};
use loadbearing_specs::Configured;
use stateright::Model;

use super::{Backend, Rng, Settings, Target, TargetResult};

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
    pub const GUARDED: Variant = Variant {
        coupled: true,
        seeded: true,
        design: Design::Generation,
    };

    pub fn of(target: Target) -> Variant {
        let g = Variant::GUARDED;
        match target {
            Target::KafkaDecoupled => Variant {
                coupled: false,
                ..g
            },
            Target::KafkaUnseeded => Variant { seeded: false, ..g },
            Target::KafkaUnfenced => Variant {
                design: Design::Unfenced,
                ..g
            },
            Target::Epoch => Variant {
                design: Design::ProducerEpoch,
                ..g
            },
            _ => g,
        }
    }
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

/// The in-memory producer, with producer epochs for the Epoch design: `init` hands out the next
/// epoch of the stable transactional id, and a producer whose epoch is no longer the highest is
/// fenced (PRODUCER_FENCED), as the transaction coordinator does.
#[derive(Clone)]
struct Producer {
    mem: MemProducer,
    epoch: Option<(Arc<Mutex<u32>>, u32)>,
}

impl Producer {
    fn plain(mem: &MemProducer) -> Producer {
        Producer {
            mem: mem.clone(),
            epoch: None,
        }
    }

    /// `initTransactions` with the stable id: the new producer takes the highest epoch.
    fn init(mem: &MemProducer, epochs: &Arc<Mutex<u32>>) -> Producer {
        let mut max = epochs.lock().unwrap_or_else(|e| e.into_inner());
        *max += 1;
        Producer {
            mem: mem.clone(),
            epoch: Some((epochs.clone(), *max)),
        }
    }

    fn check_epoch(&self) -> Result<(), TxnError> {
        if let Some((epochs, mine)) = &self.epoch {
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
}

impl TxnProducer for Producer {
    fn begin(&mut self) -> Result<(), TxnError> {
        self.check_epoch()?;
        self.mem.begin()
    }
    fn send_offsets(
        &mut self,
        input: &InputPartition,
        offset: i64,
        meta: &GroupMetadata,
    ) -> Result<(), TxnError> {
        self.check_epoch()?;
        self.mem.send_offsets(input, offset, meta)
    }
    fn send(&mut self, write: &SnapshotWrite) -> Result<(), TxnError> {
        self.mem.send(write)
    }
    fn commit(&mut self) -> Result<(), TxnError> {
        self.check_epoch()?;
        self.mem.commit()
    }
    fn abort(&mut self) -> Result<(), TxnError> {
        self.mem.abort()
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

fn op_name(op: Op) -> &'static str {
    match op {
        Op::Persist => "persist",
        Op::Delete => "delete",
    }
}

/// The input record at offset `o`: a persist carries its offset, a delete is empty.
fn payload(ops: Ops, o: u8) -> Vec<u8> {
    match ops.at(o) {
        Op::Persist => o.to_string().into_bytes(),
        Op::Delete => Vec::new(),
    }
}

/// A folded value (one payload per line) as the model's set of offsets.
fn contents(value: &[u8]) -> Offsets {
    String::from_utf8_lossy(value)
        .lines()
        .filter_map(|l| l.parse::<u8>().ok())
        .fold(Offsets::EMPTY, Offsets::with)
}

/// One key's owner and zombie flows over one shared in-memory log.
pub struct World {
    variant: Variant,
    ops: Ops,
    max: u8,
    mem: MemProducer,
    live_gen: Arc<AtomicI32>,
    captured: Arc<AtomicI32>,
    epochs: Arc<Mutex<u32>>,
    sink: Arc<Sink>,
    seen: usize,
    owner_commit: Arc<GroupCommit<Producer>>,
    /// None while the key is evicted (after a delete), until the owner recovers.
    owner: Option<KafkaFlow<Producer>>,
    owner_pos: u8,
    rebalanced: bool,
    zombie: Option<Arc<GroupCommit<Producer>>>,
}

impl World {
    pub fn new(variant: Variant, ops: Ops, max: u8) -> World {
        let mem = MemProducer::new();
        mem.log().live_generation = Some(1);
        let live_gen = Arc::new(AtomicI32::new(1));
        let epochs = Arc::new(Mutex::new(0));
        let sink = Arc::new(Sink::default());
        let producer = match variant.design {
            Design::ProducerEpoch => Producer::init(&mem, &epochs),
            _ => Producer::plain(&mem),
        };
        let owner_commit = group_commit(variant, producer, member_meta(&live_gen, "owner"), &sink);
        let owner = KafkaFlow::new(owner_commit.clone(), 0, 1, sink.clone());
        World {
            variant,
            ops,
            max,
            mem,
            live_gen,
            captured: Arc::new(AtomicI32::new(0)),
            epochs,
            sink,
            seen: 0,
            owner_commit,
            owner: Some(owner),
            owner_pos: 0,
            rebalanced: false,
            zombie: None,
        }
    }

    /// The compacted topic's last durable record for the key.
    pub fn topic(&self) -> Cell {
        let log = self.mem.log();
        match log.durable.iter().rev().find(|w| w.key == KEY) {
            None => Cell::ABSENT,
            Some(w) => match &w.value {
                Some(v) => Cell::snap(w.offset as u8, contents(v)),
                None => Cell::tomb(w.offset as u8),
            },
        }
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
            let live = self.live_gen.load(Ordering::SeqCst);
            if !epoch && self.captured.load(Ordering::SeqCst) != live {
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
    pub fn apply(&mut self, mv: Move) -> Result<Event, String> {
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

    fn owner_fold(&mut self) -> Result<Event, String> {
        let o = self.owner_pos + 1;
        let ops = self.ops;
        let flow = self.owner.as_mut().ok_or("the owner's key is evicted")?;
        let before = flow.value(KEY).map(<[u8]>::to_vec);
        flow.fold(KEY, o as i64, &payload(ops, o));
        let result = flow.flush();
        let fenced_by_epoch = matches!(&result, Err(CommitError::Fenced { code, .. })
            if code == "PRODUCER_FENCED");
        if self.variant.design == Design::ProducerEpoch && fenced_by_epoch {
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
        let offset = offset.ok_or("the owner's fold recorded no OwnerFold step")?;
        let outcome = outcome.ok_or("the owner's flush recorded no outcome")?;
        Ok(Event::new(Some("owner"), "OwnerFold")
            .arg("offset", offset)
            .arg("op", op_name(ops.at(o)))
            .var("committed", outcome == TxnOutcome::Committed)
            .var("outcome", format!("{outcome:?}"))
            .var("topic", self.topic().to_string()))
    }

    /// The Epoch design's owner after PRODUCER_FENCED: a new producer (init, the highest
    /// epoch), its state before the fold restored, the fold redone and flushed.
    fn restart_owner(&mut self, before: Option<Vec<u8>>, o: u8) -> Result<(), String> {
        let producer = Producer::init(&self.mem, &self.epochs);
        let meta = member_meta(&self.live_gen, "owner");
        self.owner_commit = group_commit(self.variant, producer, meta, &self.sink);
        let generation = self.live_gen.load(Ordering::SeqCst);
        let mut flow = KafkaFlow::new(
            self.owner_commit.clone(),
            o as i64,
            generation,
            self.sink.clone(),
        );
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

    fn owner_recover(&mut self) -> Result<Event, String> {
        if self.owner.is_some() {
            return Err("the owner's key is loaded: nothing to recover".into());
        }
        let read = match self.topic() {
            c if !c.present => Read::Absent,
            c if c.deleted => Read::Tombstone {
                offset: c.offset as u64,
            },
            c => Read::Live {
                offset: c.offset as u64,
                value: self.durable_value(),
            },
        };
        let generation = self.live_gen.load(Ordering::SeqCst);
        let mut flow = KafkaFlow::new(
            self.owner_commit.clone(),
            self.owner_pos as i64 + 1,
            generation,
            self.sink.clone(),
        );
        flow.recover(HashMap::from([(KEY.to_string(), read)]));
        let state = flow.value(KEY).map(contents).unwrap_or(Offsets::EMPTY);
        self.owner = Some(flow);
        let steps = self.fresh();
        if !steps
            .iter()
            .any(|s| matches!(s, KafkaStep::OwnerRecover { .. }))
        {
            return Err("the owner's recovery recorded no OwnerRecover step".into());
        }
        Ok(Event::new(Some("owner"), "OwnerRecover")
            .var("ownerState", state.to_string())
            .var("topic", self.topic().to_string()))
    }

    fn durable_value(&self) -> Vec<u8> {
        let log = self.mem.log();
        log.durable
            .iter()
            .rev()
            .find(|w| w.key == KEY)
            .and_then(|w| w.value.clone())
            .unwrap_or_default()
    }

    /// The coordinator moves the group to the next generation; the partition goes to the new
    /// owner while the old one's flow lives on with the generation it captured (the zombie).
    fn rebalance(&mut self) -> Result<Event, String> {
        if self.rebalanced {
            return Err("the harness rebalances once".into());
        }
        let old = self.live_gen.fetch_add(1, Ordering::SeqCst);
        let new = old + 1;
        self.mem.log().live_generation = Some(new);
        self.rebalanced = true;
        if self.variant.design != Design::ProducerEpoch {
            self.captured.store(old, Ordering::SeqCst);
            let meta = member_meta(&self.captured, "zombie");
            let producer = Producer::plain(&self.mem);
            self.zombie = Some(group_commit(self.variant, producer, meta, &self.sink));
        }
        self.sink.kafka(&KafkaStep::Rebalance {
            member: "owner".into(),
            generation: new,
            partitions: vec![0],
        });
        let generation = self
            .fresh()
            .iter()
            .find_map(|s| match s {
                KafkaStep::Rebalance { generation, .. } => Some(*generation),
                _ => None,
            })
            .ok_or("no Rebalance step recorded")?;
        Ok(Event::new(Some("coordinator"), "Rebalance").var("liveGen", generation))
    }

    /// The zombie's consumer runs the rebalance callback: it captures the live generation and,
    /// coupled, tears the revoked flow down before returning (`MemberContext::pre_rebalance`).
    fn poll(&mut self) -> Result<Event, String> {
        let zombie = self.zombie.clone().ok_or("no zombie to poll")?;
        let generation = self.live_gen.load(Ordering::SeqCst);
        self.captured.store(generation, Ordering::SeqCst);
        let mut torn_down = Vec::new();
        if self.variant.coupled {
            zombie.tear_down();
            torn_down.push(0);
        }
        self.sink.kafka(&KafkaStep::Poll {
            member: "zombie".into(),
            generation,
            torn_down,
        });
        self.fresh()
            .iter()
            .find_map(|s| match s {
                KafkaStep::Poll {
                    generation,
                    torn_down,
                    ..
                } => Some(
                    Event::new(Some("zombie"), "Poll")
                        .var("zCapturedGen", *generation)
                        .var("tornDown", !torn_down.is_empty()),
                ),
                _ => None,
            })
            .ok_or_else(|| "no Poll step recorded".to_string())
    }

    /// Epoch: the stale owner initialises its producer with the stable id, late: it takes the
    /// highest epoch.
    fn zombie_init(&mut self) -> Result<Event, String> {
        if self.variant.design != Design::ProducerEpoch {
            // The generation designs have no stable id: nothing to initialise (a stutter).
            return Ok(Event::new(Some("zombie"), "ZombieInit"));
        }
        let producer = Producer::init(&self.mem, &self.epochs);
        let meta = member_meta(&self.captured, "zombie");
        self.zombie = Some(group_commit(self.variant, producer, meta, &self.sink));
        self.sink.kafka(&KafkaStep::ZombieInit {
            transactional_id: format!("{GROUP}-snapshots-0"),
        });
        if !self
            .fresh()
            .iter()
            .any(|s| matches!(s, KafkaStep::ZombieInit { .. }))
        {
            return Err("no ZombieInit step recorded".into());
        }
        Ok(Event::new(Some("zombie"), "ZombieInit"))
    }

    /// The zombie's flow folds the records up to `m` (its own, stale view) and flushes.
    fn zombie_commit(&mut self, m: u8) -> Result<Event, String> {
        let commit = self.zombie.clone().ok_or("no zombie flow")?;
        let generation = self.captured.load(Ordering::SeqCst);
        let mut flow = KafkaFlow::new(commit, 0, generation, self.sink.clone());
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
            .ok_or("the zombie's flush recorded no ZombieCommit step")?;
        Ok(Event::new(Some("zombie"), "ZombieCommit")
            .arg("offset", m)
            .arg("op", op_name(ops.at(m)))
            .var("accepted", outcome == TxnOutcome::Committed)
            .var("outcome", format!("{outcome:?}"))
            .var("topic", self.topic().to_string()))
    }
}

/// A member's live group metadata: the generation it holds now.
fn member_meta(
    generation: &Arc<AtomicI32>,
    member: &str,
) -> Arc<dyn loadbearing_impls_kafka::group_commit::GroupMetadataSource> {
    let generation = generation.clone();
    let member = member.to_string();
    Arc::new(move || {
        Some(GroupMetadata {
            group_id: GROUP.into(),
            generation_id: generation.load(Ordering::SeqCst),
            member_id: member.clone(),
            group_instance_id: None,
        })
    })
}

fn group_commit(
    variant: Variant,
    producer: Producer,
    meta: Arc<dyn loadbearing_impls_kafka::group_commit::GroupMetadataSource>,
    sink: &Arc<Sink>,
) -> Arc<GroupCommit<Producer>> {
    let mut config =
        GroupCommitConfig::new(InputPartition::new(INPUT, 0), 0).fence(match variant.design {
            Design::Generation => Fence::Generation,
            Design::Unfenced => Fence::Unfenced,
            Design::ProducerEpoch => Fence::ProducerEpoch {
                group_id: GROUP.into(),
            },
        });
    if !variant.seeded {
        config = config.unseeded();
    }
    Arc::new(GroupCommit::new(producer, config, meta, sink.clone()))
}

/// One seeded trace: a random log, then random steps among those the implementation can take.
pub fn trace(variant: Variant, rng: &mut Rng) -> Result<Vec<Event>, String> {
    let ops = Ops((rng.below(1 << MAX_OFFSET) as u32) << 1);
    let mut world = World::new(variant, ops, MAX_OFFSET);
    let mut events = Vec::new();
    for _ in 0..MAX_STEPS {
        let moves = world.moves();
        if moves.is_empty() || (world.owner_done() && rng.below(3) == 0) {
            break;
        }
        let mv = moves[rng.below(moves.len() as u64) as usize];
        events.push(world.apply(mv)?);
    }
    Ok(events)
}

/// What one replay of a model path did to the implementation.
#[derive(Clone, Debug, Default)]
pub struct Replayed {
    pub events: Vec<Event>,
    /// The topic after each step.
    pub topics: Vec<Cell>,
    /// A zombie commit was accepted.
    pub zombie_landed: bool,
    /// The topic's last record for the key moved to a lower offset (or vanished).
    pub regressed: bool,
    pub mismatches: Vec<String>,
}

/// Drives `variant` through `moves` from log `ops`, comparing the topic after each step with
/// `expected[i]` (the model's).
pub fn drive(variant: Variant, ops: Ops, max: u8, moves: &[Move], expected: &[Cell]) -> Replayed {
    let mut world = World::new(variant, ops, max);
    let mut out = Replayed::default();
    for (i, (mv, want)) in moves.iter().zip(expected).enumerate() {
        let before = world.topic();
        match world.apply(*mv) {
            Ok(event) => {
                out.zombie_landed |= event.action == "ZombieCommit"
                    && event.vars.get("accepted") == Some(&serde_json::Value::Bool(true));
                out.events.push(event);
            }
            Err(e) => out.mismatches.push(format!(
                "step {} {mv:?}: the implementation cannot take it: {e}",
                i + 1
            )),
        }
        let after = world.topic();
        out.regressed |= before.present && (!after.present || after.offset < before.offset);
        if after != *want {
            out.mismatches.push(format!(
                "{variant:?}, log {}: after step {} {mv:?} the topic holds {after}, the model's {want}",
                ops.render(max),
                i + 1
            ));
        }
        out.topics.push(after);
    }
    out
}

/// The guarded model's topic along `moves`: a step the guarded model does not enable is
/// refused there (its state stays), and must be refused by the guarded implementation too.
fn guarded_topics(guarded: &Kafka, init: &KafkaState, moves: &[Move]) -> Vec<Cell> {
    let mut state = init.clone();
    let mut topics = Vec::new();
    for mv in moves {
        if let Some(action) = mv.kafka_action() {
            let mut enabled = Vec::new();
            guarded.actions(&state, &mut enabled);
            if enabled.contains(&action) {
                state = guarded.next_state(&state, action).expect("enabled");
            }
        }
        topics.push(state.topic);
    }
    topics
}

/// A must-fail config's counterexample replayed on the broken variant and the guarded design.
#[derive(Clone, Debug)]
pub struct CxReplay {
    pub config: &'static str,
    pub log: String,
    pub path: Vec<Move>,
    pub broken: Replayed,
    pub guarded: Replayed,
}

/// Which config's counterexample a mutant replays. The unfenced variant checks no generation,
/// so nothing gates its zombie: Seeded = false is the model of that too.
fn cx_config(target: Target) -> Option<&'static str> {
    match target {
        Target::KafkaDecoupled => Some("kafka_decoupled"),
        Target::KafkaUnseeded | Target::KafkaUnfenced => Some("kafka_unseeded"),
        Target::Epoch => Some("epoch_refines"),
        _ => None,
    }
}

/// A counterexample on its model: the initial state and the actions.
struct Cx<M: Model> {
    model: M,
    init: M::State,
    path: Vec<M::Action>,
}

/// The shortest counterexample of a config, as the model's initial state and its actions
/// (recovered by replaying the named actions on the model).
fn counterexample<M: Configured>(name: &str) -> Result<Cx<M>, String> {
    let config = crate::suite::load(&crate::suite::default_path())
        .map_err(|e| e.to_string())?
        .into_iter()
        .find(|c| c.name == name)
        .ok_or_else(|| format!("no config {name}"))?;
    let model = M::from_knobs(&config.constants);
    let judged = crate::run::run(&config, &Options::default())?;
    let cx = judged
        .report
        .counterexample
        .ok_or_else(|| format!("{name} has no counterexample"))?;
    let vars = |s: &M::State| -> Vec<(String, String)> {
        model
            .variables(s)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    };
    let init = model
        .init_states()
        .into_iter()
        .find(|s| vars(s) == cx.steps[0].state)
        .ok_or_else(|| format!("{name}: the counterexample's initial state"))?;
    let mut state = init.clone();
    let mut path = Vec::new();
    for step in &cx.steps[1..] {
        let mut actions = Vec::new();
        model.actions(&state, &mut actions);
        let action = actions
            .into_iter()
            .find(|a| Some(model.format_action(a)) == step.action)
            .ok_or_else(|| format!("{name}: step {:?} replays on the model", step.action))?;
        state = model
            .next_state(&state, action.clone())
            .ok_or("an enabled action has a successor")?;
        path.push(action);
    }
    Ok(Cx { model, init, path })
}

/// The topics along a model path.
fn model_topics<M: Model>(
    model: &M,
    init: &M::State,
    path: &[M::Action],
    topic: fn(&M::State) -> Cell,
) -> Vec<Cell>
where
    M::State: Clone,
    M::Action: Clone,
{
    let mut state = init.clone();
    path.iter()
        .map(|a| {
            state = model.next_state(&state, a.clone()).expect("replayed");
            topic(&state)
        })
        .collect()
}

/// Replays the mutant's config counterexample on its variant and on the guarded design.
pub fn replay_counterexample(target: Target) -> Result<CxReplay, String> {
    let config =
        cx_config(target).ok_or_else(|| format!("{}: no counterexample", target.name()))?;
    let (max, ops, path, broken_topics) = if target == Target::Epoch {
        let Cx { model, init, path } = counterexample::<Epoch>(config)?;
        let topics = model_topics(&model, &init, &path, |s| s.topic);
        let moves: Vec<Move> = path.into_iter().map(Move::of_epoch).collect();
        (model.max_offset, init.op, moves, topics)
    } else {
        let Cx { model, init, path } = counterexample::<Kafka>(config)?;
        let topics = model_topics(&model, &init, &path, |s| s.topic);
        let moves: Vec<Move> = path.into_iter().map(Move::of_kafka).collect();
        (model.max_offset, init.op, moves, topics)
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
        .ok_or("the guarded model has the log")?;
    let guarded_topics = guarded_topics(&guarded, &guarded_init, &path);
    Ok(CxReplay {
        config,
        log: ops.render(max),
        broken: drive(Variant::of(target), ops, max, &path, &broken_topics),
        guarded: drive(Variant::GUARDED, ops, max, &path, &guarded_topics),
        path,
    })
}

/// Random walks of the guarded model driven on the guarded design.
fn guarded_walks(settings: &Settings, result: &mut TargetResult) {
    let model = Kafka {
        max_offset: MAX_OFFSET,
        coupled: true,
        seeded: true,
    };
    let mut rng = Rng::new(settings.seed ^ 0x5EED);
    let inits = model.init_states();
    for _ in 0..settings.traces {
        let init = inits[rng.below(inits.len() as u64) as usize].clone();
        let mut state = init.clone();
        let mut path = Vec::new();
        for _ in 0..MAX_STEPS {
            let mut actions = Vec::new();
            model.actions(&state, &mut actions);
            if actions.is_empty() {
                break;
            }
            let action = actions[rng.below(actions.len() as u64) as usize];
            state = model.next_state(&state, action).expect("enabled");
            path.push(action);
        }
        let topics = model_topics(&model, &init, &path, |s| s.topic);
        let moves: Vec<Move> = path.into_iter().map(Move::of_kafka).collect();
        let replayed = drive(Variant::GUARDED, init.op, MAX_OFFSET, &moves, &topics);
        result.steps += moves.len();
        result.mismatches.extend(replayed.mismatches);
    }
}

/// Checks the replayed counterexample's facts; what is missing goes to the mismatches.
fn judge_cx(cx: &CxReplay, result: &mut TargetResult) {
    result.steps += cx.broken.topics.len() + cx.guarded.topics.len();
    let shown: Vec<String> = cx.path.iter().map(|m| format!("{m:?}")).collect();
    let schedule = format!("{} ({}, log {})", cx.config, shown.join(", "), cx.log);
    if !cx.broken.zombie_landed || !cx.broken.regressed {
        result.mismatches.push(format!(
            "{schedule} on the broken variant: zombie commit landed {}, topic regressed {}",
            cx.broken.zombie_landed, cx.broken.regressed
        ));
    }
    if cx.guarded.zombie_landed || cx.guarded.regressed {
        result.mismatches.push(format!(
            "{schedule} on the guarded design: zombie commit landed {}, topic regressed {}",
            cx.guarded.zombie_landed, cx.guarded.regressed
        ));
    }
    result
        .mismatches
        .extend(cx.broken.mismatches.iter().cloned());
    result
        .mismatches
        .extend(cx.guarded.mismatches.iter().cloned());
}

pub fn run(target: Target, settings: &Settings, result: &mut TargetResult) -> Result<(), String> {
    if let Backend::Kafka(_) = settings.backend {
        return Err(format!(
            "{}: the kafka backend is not implemented yet; use --backend memory",
            target.name()
        ));
    }
    let variant = Variant::of(target);
    let guarded = Kafka {
        max_offset: MAX_OFFSET,
        coupled: true,
        seeded: true,
    };
    let epoch = Epoch {
        max_offset: MAX_OFFSET,
    };
    result.model = "Kafka";
    let mut rng = Rng::new(settings.seed);
    let (mut epoch_conforming, mut epoch_first) = (0, None);
    for n in 0..settings.traces {
        let events = trace(variant, &mut rng)?;
        result.tally(&guarded, &events);
        if target == Target::Epoch {
            // Against its own model. Not part of `ok`: the Epoch model's owner writes the
            // correct fold, while the implementation's owner writes its in-memory state, which
            // is wrong once it recovered a snapshot the zombie wrote at another offset (the
            // model under-approximates that corruption). Reported, not hidden.
            match validate(&epoch, &events, Limits::default()).divergence {
                None => epoch_conforming += 1,
                Some(d) => {
                    epoch_first.get_or_insert_with(|| format!("trace {}: {}", n + 1, d.text()));
                }
            }
        }
    }
    if target == Target::Epoch {
        eprintln!(
            "epoch: {epoch_conforming} of {} traces conform to the Epoch model{}",
            settings.traces,
            epoch_first.map_or(String::new(), |d| format!(
                "; the first that does not:\n{d}"
            ))
        );
    }
    if target.is_mutant() {
        let cx = replay_counterexample(target)?;
        judge_cx(&cx, result);
        result.ok = result.divergent_traces > 0 && result.mismatches.is_empty();
    } else {
        guarded_walks(settings, result);
        result.ok = result.conforming == result.traces && result.mismatches.is_empty();
    }
    Ok(())
}
