//! Conformance of the partition flows (impls/src/flow.rs) to the Cassandra model (docs/models/cassandra.md)
//! and of the owner's restart to the ReplayFence model (docs/models/replayfence.md), both ways.
//!
//! Implementation → model: an owner flow and revoked ("zombie") flows of one partition overlap
//! on one store; a seeded schedule decides which flow does what when. The owner flushes after
//! every record, so its fold and its write are one model step (`OwnerFold`), logged when the
//! write happens with its outcome and the row read back. A zombie folds records in memory (no
//! model step: the model's zombie writes the correct fold at any offset) and its flush is the
//! model's `ZombieWrite(m)`. The events are composed from the flow-level steps (`Write`,
//! `ZombieWrite`), never the store's statements, so every backend reads the same way.
//!
//! Model → implementation: the must-fail configs' counterexamples drive the matching broken
//! implementation and the guarded one step by step, comparing the row after every step.

use std::sync::Arc;

use loadbearing_impls::flow::{
    FlowConfig, FlowError, FoldFn, FoldOutcome, Ownership, PartitionFlow, Record,
};
use loadbearing_impls::trace::{Recorder, Step};
use loadbearing_impls::{Mode, SnapshotStore, WriteError};
use loadbearing_specs::cassandra::trace::FlowEvent;
use loadbearing_specs::cassandra::{Cassandra, CassandraAction, CassandraState};
use loadbearing_specs::replay_fence::trace::ReplayEvent;
use loadbearing_specs::replay_fence::{ReplayAction, ReplayFence, ReplayState};
use loadbearing_specs::vocab::{Cell, Offsets, Op, Ops};
use stateright::Model;

use super::{
    cell_of, contents_of, counterexample, Cx, Replay, Rng, Settings, StoreFactory, Target,
    TargetResult,
};

/// Offsets of a flow trace: the Cassandra model's MaxOffset (small: the checker enumerates
/// nothing per offset, but the owner and zombies should collide often).
pub const FLOW_MAX_OFFSET: u8 = 5;
/// Revoked flows overlapping the owner in each trace.
pub const ZOMBIES: usize = 2;
const PARTITION: u32 = 0;
/// The payload of a delete record (the harness fold turns it into a delete).
const DELETE: &[u8] = b"delete";

type Flow = PartitionFlow<Box<dyn SnapshotStore>>;

pub fn run(target: Target, settings: &Settings, result: &mut TargetResult) -> Result<(), String> {
    match target {
        Target::Flow | Target::FlowLww | Target::FlowHardDelete => {
            run_flows(target, settings, result)
        }
        Target::Fence | Target::FenceOff => run_fence(target, settings, result),
        _ => Err(format!("{}: not a flow target", target.name())),
    }
}

// ----------------------------------------------------------------------------------------------
// The implementation's vocabulary, rendered as the models'

/// The fold of the harness: a `delete` record deletes the key, any other appends its payload
/// (the record's offset) as a line, so a row's value is the model's set of offsets.
fn harness_fold() -> FoldFn {
    let append = loadbearing_impls::flow::append_fold();
    Arc::new(move |state: Option<&[u8]>, record: &Record| {
        if record.payload == DELETE {
            FoldOutcome::Delete
        } else {
            append(state, record)
        }
    })
}

fn record(key: &str, log: Ops, offset: u8) -> Record {
    match log.at(offset) {
        Op::Persist => Record::new(key, offset as u64, offset.to_string().as_bytes()),
        Op::Delete => Record::new(key, offset as u64, DELETE),
    }
}

fn read_cell(store: &dyn SnapshotStore, key: &str) -> Result<Cell, String> {
    cell_of(&store.read(key).map_err(|e| e.to_string())?)
}

/// The write a flush made (the flow's `Write` or `ZombieWrite` step), if it made one.
struct Written {
    offset: u64,
    applied: Option<bool>,
}

fn written(steps: &[Step]) -> Option<Written> {
    steps.iter().rev().find_map(|step| {
        let (offset, outcome) = match step {
            Step::Write {
                presented, outcome, ..
            } => (*presented, outcome),
            Step::ZombieWrite {
                offset, outcome, ..
            } => (*offset, outcome),
            Step::Update1 { .. }
            | Step::Insert { .. }
            | Step::RetryUpdate { .. }
            | Step::Persist { .. }
            | Step::ReapRow { .. }
            | Step::Fold { .. }
            | Step::OwnerRecover { .. }
            | Step::OwnerFold { .. }
            | Step::Phase { .. } => return None,
        };
        let applied = match outcome {
            Ok(()) => Some(true),
            Err(WriteError::Conflict(_)) => Some(false),
            // Unknown or not sent: the row read back decides.
            Err(_) => None,
        };
        Some(Written { offset, applied })
    })
}

/// A flow and the steps it reported, read incrementally.
struct Traced {
    flow: Flow,
    steps: Arc<Recorder>,
    seen: usize,
    alive: bool,
}

impl Traced {
    fn new(
        ownership: &Arc<Ownership>,
        factory: &StoreFactory,
        config: FlowConfig,
    ) -> Result<Traced, String> {
        let steps = Recorder::new();
        let store = factory.open(loadbearing_impls::trace::no_trace())?;
        let flow = PartitionFlow::assign_traced(
            PARTITION,
            ownership,
            store,
            harness_fold(),
            config,
            steps.clone(),
        );
        Ok(Traced {
            flow,
            steps,
            seen: 0,
            alive: true,
        })
    }

    /// The steps reported since the last call.
    fn fresh(&mut self) -> Vec<Step> {
        let all = self.steps.steps();
        let fresh = all[self.seen..].to_vec();
        self.seen = all.len();
        fresh
    }

    /// Flushes; a refused write stops the flow (its error is returned), any other failure is
    /// the harness's.
    fn flush(&mut self) -> Result<Option<FlowError>, String> {
        match self.flow.flush() {
            Ok(_) => Ok(None),
            Err(e @ (FlowError::SelfFenced(_) | FlowError::Fenced(_))) => {
                self.alive = false;
                Ok(Some(e))
            }
            Err(e) => Err(format!("flush: {e}")),
        }
    }

    fn handle(&mut self, record: &Record) -> Result<(), String> {
        self.flow.handle(record).map_err(|e| format!("handle: {e}"))
    }
}

/// Who flushed: the owner (`OwnerFold`) or revoked flow `z` (`ZombieWrite`, 0-based here).
#[derive(Clone, Copy)]
enum Writer {
    Owner,
    Zombie(usize),
}

/// The event of a flush that wrote: its offset and op, the outcome and the row read back.
fn write_event(by: Writer, log: Ops, w: &Written, row: Cell) -> FlowEvent {
    let (offset, op) = (w.offset, log.at(w.offset as u8));
    let (applied, presented, stored) = (w.applied, Some(w.offset), Some(row));
    match by {
        Writer::Owner => FlowEvent::OwnerFold {
            offset,
            op,
            applied,
            presented,
            stored,
        },
        Writer::Zombie(z) => FlowEvent::ZombieWrite {
            zombie: z as u8 + 1,
            offset,
            op,
            applied,
            presented,
            stored,
        },
    }
}

// ----------------------------------------------------------------------------------------------
// Owner and zombies on one store: the Cassandra model

/// One partition: revoked flows (assigned first, so older generations) and the current owner,
/// all recovered while the row is still absent (the model's initial state).
struct Partition {
    key: String,
    log: Ops,
    max: u8,
    reader: Box<dyn SnapshotStore>,
    owner: Traced,
    zombies: Vec<Zombie>,
}

struct Zombie {
    traced: Traced,
    /// The next offset it folds.
    next: u8,
    /// Folded since its last flush.
    dirty: bool,
}

impl Partition {
    fn new(
        factory: &StoreFactory,
        key: &str,
        log: Ops,
        max: u8,
        zombies: usize,
    ) -> Result<Partition, String> {
        let ownership = Ownership::new();
        let config = FlowConfig::default();
        let mut revoked = Vec::new();
        for _ in 0..zombies {
            revoked.push(Zombie {
                traced: Traced::new(&ownership, factory, config)?,
                next: 1,
                dirty: false,
            });
        }
        let mut owner = Traced::new(&ownership, factory, config)?;
        for flow in revoked
            .iter_mut()
            .map(|z| &mut z.traced)
            .chain(std::iter::once(&mut owner))
        {
            flow.flow
                .recover(&[key])
                .map_err(|e| format!("recover: {e}"))?;
            // The initial load is the model's initial state (loaded, empty), not a step.
            flow.fresh();
        }
        Ok(Partition {
            key: key.to_string(),
            log,
            max,
            reader: factory.open(loadbearing_impls::trace::no_trace())?,
            owner,
            zombies: revoked,
        })
    }

    fn row(&self) -> Result<Cell, String> {
        read_cell(self.reader.as_ref(), &self.key)
    }

    /// `OwnerFold`: the owner handles its next record and flushes it.
    fn owner_fold(&mut self) -> Result<Option<FlowEvent>, String> {
        owner_fold(&mut self.owner, self.reader.as_ref(), &self.key, self.log)
    }

    /// `OwnerRecover`: the owner evicts the key and reloads it from the store.
    fn owner_recover(&mut self) -> Result<FlowEvent, String> {
        self.owner.flow.evict(&self.key);
        self.owner
            .flow
            .recover(&[&self.key])
            .map_err(|e| format!("recover: {e}"))?;
        self.owner.fresh();
        let state = match self.owner.flow.state(&self.key) {
            Some(value) => contents_of(value)?,
            None => Offsets::EMPTY,
        };
        Ok(FlowEvent::OwnerRecover {
            owner_state: Some(state),
            stored: Some(self.row()?),
        })
    }

    /// A zombie folds its next record in memory: no model step.
    fn zombie_fold(&mut self, z: usize) -> Result<(), String> {
        zombie_fold(&mut self.zombies[z], &self.key, self.log)
    }

    /// `ZombieWrite(m)`: a zombie flushes its fold at m.
    fn zombie_flush(&mut self, z: usize) -> Result<Option<FlowEvent>, String> {
        zombie_flush(
            z,
            &mut self.zombies[z],
            self.reader.as_ref(),
            &self.key,
            self.log,
        )
    }

    /// `ZombieWrite(m)` on demand (replay): a fresh revoked flow, recovered at the start,
    /// folds `1..=m` and flushes.
    fn zombie_write(&mut self, m: u8) -> Result<Option<FlowEvent>, String> {
        let z = self
            .zombies
            .iter()
            .position(|z| z.next == 1 && z.traced.alive)
            .ok_or("the replay has used every revoked flow")?;
        while self.zombies[z].next <= m {
            self.zombie_fold(z)?;
        }
        self.zombie_flush(z)
    }

    /// What the seeded schedule may do next.
    fn choices(&self) -> Vec<Choice> {
        let mut out = Vec::new();
        if self.owner.alive && (self.owner.flow.position() as u8) < self.max {
            out.push(Choice::OwnerFold);
        }
        for (z, zombie) in self.zombies.iter().enumerate() {
            if !zombie.traced.alive {
                continue;
            }
            if zombie.next <= self.max {
                out.push(Choice::ZombieFold(z));
            }
            if zombie.dirty {
                out.push(Choice::ZombieFlush(z));
            }
        }
        out
    }
}

#[derive(Clone, Copy, Debug)]
enum Choice {
    OwnerFold,
    ZombieFold(usize),
    ZombieFlush(usize),
}

/// One trace: the owner and the zombies interleaved by the seeded schedule until every flow
/// has folded the whole log and flushed (or was fenced).
pub fn flow_trace(
    factory: &StoreFactory,
    key: &str,
    log: Ops,
    rng: &mut Rng,
) -> Result<Vec<FlowEvent>, String> {
    let mut p = Partition::new(factory, key, log, FLOW_MAX_OFFSET, ZOMBIES)?;
    let mut events = Vec::new();
    loop {
        let choices = p.choices();
        if choices.is_empty() {
            break;
        }
        let event = match choices[rng.below(choices.len() as u64) as usize] {
            Choice::OwnerFold => p.owner_fold()?,
            Choice::ZombieFold(z) => {
                p.zombie_fold(z)?;
                None
            }
            Choice::ZombieFlush(z) => p.zombie_flush(z)?,
        };
        events.extend(event);
    }
    Ok(events)
}

/// `OwnerFold`: the owner handles its next record and flushes it; the event carries the write
/// and the row read back.
fn owner_fold(
    owner: &mut Traced,
    reader: &dyn SnapshotStore,
    key: &str,
    log: Ops,
) -> Result<Option<FlowEvent>, String> {
    let o = owner.flow.position() as u8 + 1;
    owner.handle(&record(key, log, o))?;
    owner.flush()?;
    let steps = owner.fresh();
    let row = read_cell(reader, key)?;
    Ok(Some(match written(&steps) {
        Some(w) => write_event(Writer::Owner, log, &w, row),
        // Nothing written (the buffer dropped the record): the fold alone, and the row.
        None => FlowEvent::OwnerFold {
            offset: o as u64,
            op: log.at(o),
            applied: None,
            presented: None,
            stored: Some(row),
        },
    }))
}

/// A zombie folds its next record (no model step: the model's zombie writes a correct fold).
fn zombie_fold(zombie: &mut Zombie, key: &str, log: Ops) -> Result<(), String> {
    zombie.traced.handle(&record(key, log, zombie.next))?;
    zombie.next += 1;
    zombie.dirty = true;
    zombie.traced.fresh();
    Ok(())
}

/// `ZombieWrite(m)`: zombie `z` flushes its fold at m.
fn zombie_flush(
    z: usize,
    zombie: &mut Zombie,
    reader: &dyn SnapshotStore,
    key: &str,
    log: Ops,
) -> Result<Option<FlowEvent>, String> {
    zombie.dirty = false;
    zombie.traced.flush()?;
    let steps = zombie.traced.fresh();
    let row = read_cell(reader, key)?;
    Ok(written(&steps).map(|w| write_event(Writer::Zombie(z), log, &w, row)))
}

/// The same flows on real threads, one per flow, each on its own course (a zombie folds and
/// flushes at seeded points); which flow steps next is up to the OS. A turnstile makes each
/// step (the flow's write and the row read back) one critical section, so the recorded order
/// is the order the store applied the writes.
pub fn racing_flow_trace(
    factory: &StoreFactory,
    key: &str,
    log: Ops,
    seed: u64,
) -> Result<Vec<FlowEvent>, String> {
    let Partition {
        key,
        log,
        max,
        reader,
        mut owner,
        mut zombies,
    } = Partition::new(factory, key, log, FLOW_MAX_OFFSET, ZOMBIES)?;
    let recorded = std::sync::Mutex::new(Vec::new());
    // Every flow starts at once, so that none finishes before the others begin.
    let start = std::sync::Barrier::new(1 + zombies.len());
    let (turnstile, reader, key, start) = (&recorded, reader.as_ref(), key.as_str(), &start);
    std::thread::scope(|scope| {
        let mut runs = vec![scope.spawn(move || -> Result<(), String> {
            start.wait();
            while owner.alive && (owner.flow.position() as u8) < max {
                let mut events = turnstile.lock().unwrap_or_else(|e| e.into_inner());
                events.extend(owner_fold(&mut owner, reader, key, log)?);
                drop(events);
                std::thread::yield_now();
            }
            Ok(())
        })];
        for (z, zombie) in zombies.iter_mut().enumerate() {
            let mut rng = Rng::new(seed.wrapping_add(z as u64 + 1));
            runs.push(scope.spawn(move || -> Result<(), String> {
                start.wait();
                while zombie.traced.alive {
                    let can_fold = zombie.next <= max;
                    if !can_fold && !zombie.dirty {
                        break;
                    }
                    let mut events = turnstile.lock().unwrap_or_else(|e| e.into_inner());
                    if can_fold && (!zombie.dirty || rng.below(2) == 0) {
                        zombie_fold(zombie, key, log)?;
                    } else {
                        events.extend(zombie_flush(z, zombie, reader, key, log)?);
                    }
                    drop(events);
                    std::thread::yield_now();
                }
                Ok(())
            }));
        }
        runs.into_iter()
            .map(|run| run.join().expect("flow thread"))
            .collect::<Result<Vec<()>, String>>()
    })?;
    let events = recorded.into_inner().unwrap_or_else(|e| e.into_inner());
    Ok(events)
}

fn flow_mode(target: Target) -> Mode {
    match target {
        Target::FlowLww => Mode::LastWriteWins,
        Target::FlowHardDelete => Mode::HardDelete,
        _ => Mode::Guarded,
    }
}

fn guarded_model(max_offset: u8) -> Cassandra {
    Cassandra {
        max_offset,
        guarded: true,
        tombstone: true,
    }
}

fn run_flows(target: Target, settings: &Settings, result: &mut TargetResult) -> Result<(), String> {
    result.model = "Cassandra";
    let factory = StoreFactory::new(settings.backend.clone(), flow_mode(target), target.name())?;
    let model = guarded_model(FLOW_MAX_OFFSET);
    let mut rng = Rng::new(settings.seed);
    // Seeded schedules (reproducible), then the same flows racing on threads.
    for round in 0..settings.traces {
        let log = Ops((rng.below(1 << FLOW_MAX_OFFSET) as u32) << 1);
        let events = flow_trace(&factory, &format!("flow{round}"), log, &mut rng)?;
        result.tally(&model, &events);
    }
    for round in 0..settings.traces {
        let log = Ops((rng.below(1 << FLOW_MAX_OFFSET) as u32) << 1);
        let key = format!("race{round}");
        let events = racing_flow_trace(&factory, &key, log, rng.next_u64())?;
        result.tally(&model, &events);
    }
    let replayed = match target {
        Target::Flow => {
            // The guarded flow under both counterexamples' schedules: refused, never corrupted.
            let unguarded =
                replay_cassandra_cx(settings, "cassandra_unguarded", Mode::LastWriteWins)?;
            let notomb = replay_cassandra_cx(settings, "cassandra_notomb", Mode::HardDelete)?;
            result.steps += unguarded.steps + notomb.steps;
            result.replays.push(unguarded.record());
            result.replays.push(notomb.record());
            result.mismatches.extend(unguarded.guarded_mismatches);
            result.mismatches.extend(notomb.guarded_mismatches);
            true
        }
        Target::FlowLww => {
            let r = replay_cassandra_cx(settings, "cassandra_unguarded", Mode::LastWriteWins)?;
            result.steps += r.steps;
            result.replays.push(r.record());
            result.mismatches.extend(r.mismatches());
            r.reproduced() && r.refused()
        }
        _ => {
            let mut all = true;
            for config in ["cassandra_notomb", "cassandra_notomb_refines"] {
                let r = replay_cassandra_cx(settings, config, Mode::HardDelete)?;
                result.steps += r.steps;
                result.replays.push(r.record());
                result.mismatches.extend(r.mismatches());
                all &= r.reproduced() && r.refused();
            }
            all
        }
    };
    result.ok = if target.is_mutant() {
        result.divergent_traces > 0 && replayed && result.mismatches.is_empty()
    } else {
        result.conforming == result.traces && result.mismatches.is_empty()
    };
    Ok(())
}

// ----------------------------------------------------------------------------------------------
// Model → implementation: the Cassandra counterexamples

/// What a replay of one schedule on one implementation showed.
#[derive(Debug, Default)]
pub struct CassandraReplay {
    /// Row mismatches between the implementation and the model, after each step.
    pub mismatches: Vec<String>,
    /// A present row's offset went down (a stale overwrite landed).
    pub regressed: bool,
    /// A live row held contents other than the correct fold at its offset.
    pub corrupted: bool,
    /// A write was refused by the guard.
    pub refused: bool,
    /// A present row disappeared (a hard delete): the mapped hwm moved back.
    pub vanished: bool,
    /// The rows after each step, for the report.
    pub rows: Vec<Cell>,
    pub steps: usize,
}

/// Drives `path` on flows over a store of `mode`, from `init`, comparing the row with
/// `model`'s after every step. The replay stops where the owner is fenced: the implementation
/// refused the rest of the schedule.
pub fn replay_cassandra(
    factory: &StoreFactory,
    key: &str,
    model: &Cassandra,
    init: &CassandraState,
    path: &[CassandraAction],
) -> Result<CassandraReplay, String> {
    let zombies = path
        .iter()
        .filter(|a| matches!(a, CassandraAction::ZombieWrite(_)))
        .count();
    let mut p = Partition::new(factory, key, init.op, model.max_offset, zombies)?;
    let mut out = CassandraReplay::default();
    let mut state = init.clone();
    for (i, action) in path.iter().enumerate() {
        if !p.owner.alive && !matches!(action, CassandraAction::ZombieWrite(_)) {
            break;
        }
        let before = p.row()?;
        let event = match action {
            CassandraAction::OwnerFold => p.owner_fold()?,
            CassandraAction::OwnerRecover => Some(p.owner_recover()?),
            CassandraAction::ZombieWrite(m) => p.zombie_write(*m)?,
        };
        state = model
            .next_state(&state, *action)
            .ok_or_else(|| format!("step {} {action:?} is not enabled in the model", i + 1))?;
        let after = p.row()?;
        out.steps += 1;
        out.rows.push(after);
        out.refused |= event
            .as_ref()
            .and_then(FlowEvent::write)
            .and_then(|w| w.applied)
            == Some(false);
        out.regressed |= before.present && after.present && after.offset < before.offset;
        // A present row removed: the mapped high water falls back to 0.
        out.vanished |= before.present && !after.present;
        out.corrupted |= after.present
            && !after.deleted
            && after.contents != init.op.correct_contents(after.offset);
        if after != state.stored {
            out.mismatches.push(format!(
                "{key}: after step {} {} the store holds {after}, the model {}",
                i + 1,
                model.format_action(action),
                state.stored
            ));
        }
    }
    Ok(out)
}

/// A counterexample replayed on the broken implementation and on the guarded one.
pub struct CxReplay {
    pub config: &'static str,
    /// The model steps, as the checker shows them.
    pub shown: Vec<String>,
    pub broken: CassandraReplay,
    pub guarded: CassandraReplay,
    pub guarded_mismatches: Vec<String>,
    pub steps: usize,
}

impl CxReplay {
    /// The violation really appears on the broken implementation.
    pub fn reproduced(&self) -> bool {
        match self.config {
            "cassandra_unguarded" => self.broken.regressed,
            "cassandra_notomb_refines" => self.broken.vanished,
            _ => self.broken.corrupted,
        }
    }

    /// On the guarded implementation the violation never appeared (for the stale overwrite,
    /// because the guard refused the write).
    pub fn refused(&self) -> bool {
        !self.guarded.regressed && !self.guarded.corrupted && !self.guarded.vanished
    }

    /// For the result's `replays`: what each implementation did with the schedule.
    pub fn record(&self) -> Replay {
        let did = |r: &CassandraReplay| {
            let facts: Vec<&str> = [
                (r.regressed, "a lower offset overwrote a higher one"),
                (
                    r.vanished,
                    "a present row vanished (the mapped high water fell back to 0)",
                ),
                (
                    r.corrupted,
                    "a live row holds contents other than the correct fold",
                ),
                (r.refused, "a write was refused (typed conflict)"),
            ]
            .into_iter()
            .filter_map(|(happened, fact)| happened.then_some(fact))
            .collect();
            let what = if facts.is_empty() {
                "no write refused, no violation".to_string()
            } else {
                facts.join("; ")
            };
            format!("rows {}: {what}", render_rows(&r.rows))
        };
        Replay {
            config: self.config.to_string(),
            steps: self.shown.clone(),
            broken: did(&self.broken),
            guarded: did(&self.guarded),
        }
    }

    pub fn mismatches(&self) -> Vec<String> {
        let mut all = self.broken.mismatches.clone();
        all.extend(self.guarded_mismatches.iter().cloned());
        if !self.reproduced() {
            all.push(format!(
                "{}'s counterexample did not reproduce on the broken store (rows: {})",
                self.config,
                render_rows(&self.broken.rows)
            ));
        }
        if !self.refused() {
            all.push(format!(
                "{}'s counterexample was not refused by the guarded store (rows: {})",
                self.config,
                render_rows(&self.guarded.rows)
            ));
        }
        all
    }
}

fn render_rows(rows: &[Cell]) -> String {
    rows.iter()
        .map(Cell::to_string)
        .collect::<Vec<_>>()
        .join(" → ")
}

/// `config`'s counterexample on flows over a `broken` store (against the config's model), and
/// the same schedule on the guarded store (against the guarded model).
pub fn replay_cassandra_cx(
    settings: &Settings,
    config: &'static str,
    broken: Mode,
) -> Result<CxReplay, String> {
    let Cx {
        model,
        states,
        path,
    } = counterexample::<Cassandra>(config)?;
    let init = &states[0];
    let broken_store = StoreFactory::new(settings.backend.clone(), broken, "cx_broken")?;
    let guarded_store = StoreFactory::new(settings.backend.clone(), Mode::Guarded, "cx_guarded")?;
    let broken = replay_cassandra(&broken_store, "cx", &model, init, &path)?;
    let guarded = replay_cassandra(
        &guarded_store,
        "cx",
        &guarded_model(model.max_offset),
        init,
        &path,
    )?;
    Ok(CxReplay {
        config,
        shown: path.iter().map(|a| model.format_action(a)).collect(),
        steps: broken.steps + guarded.steps,
        guarded_mismatches: guarded.mismatches.clone(),
        broken,
        guarded,
    })
}

// ----------------------------------------------------------------------------------------------
// The owner's restart below its recovered high water: the ReplayFence model

/// A restarted owner: a previous incarnation folded `1..=hw` and flushed; the new owner resumes
/// at the committed offset 0 and recovers the key at hw.
struct Restart {
    key: String,
    reader: Box<dyn SnapshotStore>,
    owner: Traced,
    hw: u8,
    /// Folded since the last write.
    dirty: bool,
}

impl Restart {
    fn new(factory: &StoreFactory, key: &str, hw: u8, fence: bool) -> Result<Restart, String> {
        let ownership = Ownership::new();
        let mut previous = Traced::new(&ownership, factory, FlowConfig::default())?;
        for o in 1..=hw {
            previous.handle(&Record::new(key, o as u64, o.to_string().as_bytes()))?;
        }
        previous
            .flow
            .revoke()
            .map_err(|e| format!("previous owner: {e}"))?;
        let config = FlowConfig {
            replay_fence: fence,
            ..FlowConfig::default()
        };
        let mut owner = Traced::new(&ownership, factory, config)?;
        owner
            .flow
            .recover(&[key])
            .map_err(|e| format!("recover: {e}"))?;
        owner.fresh();
        Ok(Restart {
            key: key.to_string(),
            reader: factory.open(loadbearing_impls::trace::no_trace())?,
            owner,
            hw,
            dirty: false,
        })
    }

    fn cur(&self) -> u8 {
        self.owner.flow.position() as u8
    }

    /// `Fold`: the owner handles its next record.
    fn fold(&mut self) -> Result<ReplayEvent, String> {
        let o = self.cur() + 1;
        self.owner
            .handle(&Record::new(&self.key, o as u64, o.to_string().as_bytes()))?;
        self.owner.fresh();
        self.dirty = true;
        Ok(ReplayEvent::Fold {
            offset: o as u64,
            hw: Some(self.hw as u64),
        })
    }

    /// `Write`: flush what is buffered; with nothing buffered, a timer deletes the key at the
    /// flow's position (`tick_delete`), which is a write of the key at cur too.
    fn write(&mut self, tick: bool) -> Result<Option<ReplayEvent>, String> {
        if tick {
            self.owner
                .flow
                .tick_delete(&self.key)
                .map_err(|e| format!("tick: {e}"))?;
        }
        let error = self.owner.flush()?;
        self.dirty = false;
        let steps = self.owner.fresh();
        let Some(w) = written(&steps) else {
            return Ok(None);
        };
        let stored = self
            .reader
            .read(&self.key)
            .map_err(|e| e.to_string())?
            .offset()
            .unwrap_or(0);
        Ok(Some(ReplayEvent::Write {
            presented: Some(w.offset),
            stored: Some(stored),
            self_fenced: Some(matches!(error, Some(FlowError::SelfFenced(_)))),
            hw: Some(self.hw as u64),
        }))
    }
}

pub const FENCE_MAX_OFFSET: u8 = 5;

pub fn fence_trace(
    factory: &StoreFactory,
    key: &str,
    fence: bool,
    rng: &mut Rng,
) -> Result<Vec<ReplayEvent>, String> {
    let hw = 1 + rng.below(FENCE_MAX_OFFSET as u64) as u8;
    let mut r = Restart::new(factory, key, hw, fence)?;
    let mut events = Vec::new();
    while r.owner.alive {
        let folding = r.cur() < FENCE_MAX_OFFSET;
        // Fold most of the time; flush, or tick, now and then; end with a flush.
        let event = match (folding, rng.below(6)) {
            (true, 0..=2) => Some(r.fold()?),
            (true, 3 | 4) | (false, _) => r.write(false)?,
            (true, _) => r.write(true)?,
        };
        events.extend(event);
        if !folding {
            break;
        }
    }
    Ok(events)
}

fn run_fence(target: Target, settings: &Settings, result: &mut TargetResult) -> Result<(), String> {
    result.model = "ReplayFence";
    let fence = target == Target::Fence;
    let factory = StoreFactory::new(settings.backend.clone(), Mode::Guarded, target.name())?;
    let model = ReplayFence {
        max_offset: FENCE_MAX_OFFSET,
        fix: true,
    };
    let mut rng = Rng::new(settings.seed);
    for round in 0..settings.traces {
        let events = fence_trace(&factory, &format!("fence{round}"), fence, &mut rng)?;
        result.tally(&model, &events);
    }
    // The safety counterexample (a self-fence) and the liveness one (the owner never
    // completes): the same broken write, the second read as OwnerCompletes failing.
    let mut reproduced = true;
    for config in ["replay_fix_off", "replay_fix_off_live"] {
        let cx = replay_fence_cx(settings, config)?;
        result.steps += cx.steps;
        let did = |r: &FenceReplay| {
            if r.self_fenced {
                "the owner self-fenced (FlowError::SelfFenced) and never completes".to_string()
            } else if r.completed {
                "the owner completed".to_string()
            } else {
                "the owner neither completed nor self-fenced".to_string()
            }
        };
        result.replays.push(Replay {
            config: config.into(),
            steps: cx.shown.clone(),
            broken: did(&cx.broken),
            guarded: did(&cx.fixed),
        });
        if fence {
            result
                .mismatches
                .extend(cx.fixed.mismatches.iter().cloned());
            if cx.fixed.self_fenced || !cx.fixed.completed {
                result.mismatches.push(format!(
                    "{config}'s schedule: the owner with the fence on did not complete"
                ));
            }
        } else {
            result
                .mismatches
                .extend(cx.broken.mismatches.iter().cloned());
            if !cx.broken.self_fenced {
                result.mismatches.push(format!(
                    "{config}'s schedule: the owner without the fence did not self-fence"
                ));
            }
            reproduced &= cx.broken.self_fenced && !cx.fixed.self_fenced && cx.fixed.completed;
        }
    }
    result.ok = if fence {
        result.conforming == result.traces && result.mismatches.is_empty()
    } else {
        result.divergent_traces > 0 && reproduced && result.mismatches.is_empty()
    };
    Ok(())
}

/// One ReplayFence schedule driven on a restarted owner.
#[derive(Debug, Default)]
pub struct FenceReplay {
    pub mismatches: Vec<String>,
    /// The owner's flow stopped with `FlowError::SelfFenced`.
    pub self_fenced: bool,
    /// After the schedule, the owner folded the rest of the log and flushed without error.
    pub completed: bool,
    pub steps: usize,
}

/// Drives `path` (ReplayFence actions) on a restarted owner, comparing the stored offset and
/// the self-fence with `model`'s after every step; then lets the owner finish the log.
pub fn replay_fence(
    factory: &StoreFactory,
    key: &str,
    model: &ReplayFence,
    init: &ReplayState,
    path: &[ReplayAction],
) -> Result<FenceReplay, String> {
    let mut r = Restart::new(factory, key, init.hw, model.fix)?;
    let mut out = FenceReplay::default();
    let mut state = init.clone();
    for (i, action) in path.iter().enumerate() {
        match action {
            ReplayAction::Fold => {
                r.fold()?;
            }
            ReplayAction::Write => {
                let tick = !r.dirty;
                r.write(tick)?;
            }
            ReplayAction::Halted => continue,
        }
        out.steps += 1;
        state = model
            .next_state(&state, *action)
            .ok_or_else(|| format!("step {} {action:?} is not enabled in the model", i + 1))?;
        let stored = r
            .reader
            .read(key)
            .map_err(|e| e.to_string())?
            .offset()
            .unwrap_or(0);
        out.self_fenced |= !r.owner.alive;
        if stored != state.stored as u64 || r.owner.alive == state.self_fenced {
            out.mismatches.push(format!(
                "{key}: after step {} {action:?} the store holds offset {stored} (owner self-fenced: {}), the model stored={} selfFenced={}",
                i + 1,
                !r.owner.alive,
                state.stored,
                state.self_fenced
            ));
        }
        if !r.owner.alive {
            break;
        }
    }
    if r.owner.alive {
        while r.cur() < model.max_offset {
            r.fold()?;
        }
        r.write(false)?;
        out.completed = r.owner.alive;
    }
    Ok(out)
}

/// A ReplayFence config's counterexample (`replay_fix_off`, `replay_fix_off_live`) on the owner
/// without the fence (it must self-fence) and with it (it must complete).
pub struct FenceCx {
    /// The model steps, as the checker shows them.
    pub shown: Vec<String>,
    pub broken: FenceReplay,
    pub fixed: FenceReplay,
    pub steps: usize,
}

pub fn replay_fence_cx(settings: &Settings, config: &str) -> Result<FenceCx, String> {
    let Cx {
        model,
        states,
        path,
    } = counterexample::<ReplayFence>(config)?;
    let factory = StoreFactory::new(settings.backend.clone(), Mode::Guarded, "fence_cx")?;
    let broken = replay_fence(&factory, "cx_off", &model, &states[0], &path)?;
    let fixed_model = ReplayFence {
        fix: true,
        ..model.clone()
    };
    let fixed = replay_fence(&factory, "cx_on", &fixed_model, &states[0], &path)?;
    Ok(FenceCx {
        shown: path.iter().map(|a| model.format_action(a)).collect(),
        steps: broken.steps + fixed.steps,
        broken,
        fixed,
    })
}
