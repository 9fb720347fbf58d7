//! Conformance of the partition flows (impls/src/flow.rs) to the Cassandra model
//! (docs/models/cassandra.md), both ways.
//!
//! Implementation → model: an owner flow and revoked ("zombie") flows of one partition overlap
//! on one store; a seeded schedule decides which flow does what when. The owner flushes after
//! every record, so its fold and its write are one model step (`OwnerFold`), logged when the
//! write happens with its outcome and the row read back. A zombie folds records in memory (no
//! model step: the model's zombie writes the correct fold at any offset) and its flush is the
//! model's `ZombieWrite(m)`. The events are composed from the flow-level steps (`Write`,
//! `ZombieWrite`), never the store's statements, so every backend reads the same way
//! ([`crate::partition_flow`], which the #835 Cassandra family shares).
//!
//! Model → implementation: the must-fail configs' counterexamples drive the matching broken
//! implementation and the guarded one step by step, comparing the row after every step.

use loadbearing_impls::flow::{FlowConfig, Ownership};
use loadbearing_impls::{Mode, SnapshotStore};
use loadbearing_refinement::Model;
use loadbearing_specs::cassandra::model::{Cassandra, CassandraAction, CassandraState};
use loadbearing_specs::cassandra::trace::FlowEvent;
use loadbearing_specs::infra::vocab::{Cell, Offsets, Ops};

use crate::backend::BackendKind;
use crate::driver::{self, Applied, Compare, Harness};
use crate::error::{ConfigProblem, Error, HarnessError};
use crate::mismatch::Mismatch;
use crate::observe::contents_of;
use crate::replays::ReplaySpec;
use crate::replays::{self, ReplayOutcome, Violation};
use crate::schedule::{Schedule, Seeded, Turnstile};
use crate::stores::{StoreFactory, STORES};
use crate::target::{Expect, ModelName, Replay, Settings, Target, TargetResult};
use crate::target_id::TargetId;
use crate::{counterexample, Cx};

use crate::partition_flow::{
    read_cell, record, write_event, written, zombie_fold, Traced, Writer, Zombie, FLOW_MAX_OFFSET,
    ZOMBIES,
};

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

impl Partition {
    fn new(
        factory: &StoreFactory,
        key: &str,
        log: Ops,
        max: u8,
        zombies: usize,
    ) -> Result<Partition, Error> {
        let ownership = Ownership::new();
        let revoked = (0..zombies)
            .map(|_| Zombie::recovered(&ownership, factory, key))
            .collect::<Result<Vec<_>, _>>()?;
        let owner = Traced::recovered(&ownership, factory, FlowConfig::default(), key)?;
        Ok(Partition {
            key: key.to_string(),
            log,
            max,
            reader: factory.open(loadbearing_impls::trace::no_trace())?,
            owner,
            zombies: revoked,
        })
    }

    fn row(&self) -> Result<Cell, Error> {
        read_cell(self.reader.as_ref(), &self.key)
    }

    /// `OwnerFold`: the owner handles its next record and flushes it.
    fn owner_fold(&mut self) -> Result<Option<FlowEvent>, Error> {
        owner_fold(&mut self.owner, self.reader.as_ref(), &self.key, self.log)
    }

    /// `OwnerRecover`: the owner evicts the key and reloads it from the store.
    fn owner_recover(&mut self) -> Result<FlowEvent, Error> {
        self.owner.reload(&self.key)?;
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
    fn zombie_fold(&mut self, z: usize) -> Result<(), Error> {
        zombie_fold(&mut self.zombies[z], &self.key, self.log)
    }

    /// `ZombieWrite(m)`: a zombie flushes its fold at m.
    fn zombie_flush(&mut self, z: usize) -> Result<Option<FlowEvent>, Error> {
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
    fn zombie_write(&mut self, m: u8) -> Result<Option<FlowEvent>, Error> {
        let z = self
            .zombies
            .iter()
            .position(|z| z.next == 1 && z.traced.alive)
            .ok_or_else(|| {
                HarnessError::out_of_order(
                    format!("ZombieWrite({m})"),
                    "every revoked flow is used",
                )
            })?;
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

/// One trace: the owner and the zombies interleaved by the schedule until every flow has
/// folded the whole log and flushed (or was fenced).
pub fn flow_trace(
    factory: &StoreFactory,
    key: &str,
    log: Ops,
    schedule: &mut dyn Schedule,
) -> Result<Vec<FlowEvent>, Error> {
    let mut p = Partition::new(factory, key, log, FLOW_MAX_OFFSET, ZOMBIES)?;
    let mut events = Vec::new();
    loop {
        let choices = p.choices();
        let Some(chosen) = (!choices.is_empty())
            .then(|| schedule.pick(choices.len()))
            .flatten()
        else {
            break;
        };
        let event = match choices[chosen] {
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
) -> Result<Option<FlowEvent>, Error> {
    let o = owner.flow.position() as u8 + 1;
    owner.handle(&record(key, log, o))?;
    owner.flush()?;
    let steps = owner.fresh();
    let row = read_cell(reader, key)?;
    Ok(Some(match written(&steps) {
        Some(w) => write_event(Writer::Owner, log, &w, Some(row)),
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

/// `ZombieWrite(m)`: zombie `z` flushes its fold at m.
fn zombie_flush(
    z: usize,
    zombie: &mut Zombie,
    reader: &dyn SnapshotStore,
    key: &str,
    log: Ops,
) -> Result<Option<FlowEvent>, Error> {
    zombie.dirty = false;
    zombie.traced.flush()?;
    let steps = zombie.traced.fresh();
    let row = read_cell(reader, key)?;
    Ok(written(&steps).map(|w| write_event(Writer::Zombie(z), log, &w, Some(row))))
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
) -> Result<Vec<FlowEvent>, Error> {
    let Partition {
        key,
        log,
        max,
        reader,
        mut owner,
        mut zombies,
    } = Partition::new(factory, key, log, FLOW_MAX_OFFSET, ZOMBIES)?;
    let recorded = std::sync::Mutex::new(Vec::new());
    let turnstile = Turnstile::default();
    // Every flow starts at once, so that none finishes before the others begin.
    let start = std::sync::Barrier::new(1 + zombies.len());
    let (recorded, turnstile, reader, key, start) =
        (&recorded, &turnstile, reader.as_ref(), key.as_str(), &start);
    let record = |events: Option<FlowEvent>| {
        recorded
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(events)
    };
    std::thread::scope(|scope| {
        let mut runs = vec![scope.spawn(move || -> Result<(), Error> {
            start.wait();
            while owner.alive && (owner.flow.position() as u8) < max {
                turnstile.step(0, || -> Result<(), Error> {
                    record(owner_fold(&mut owner, reader, key, log)?);
                    Ok(())
                })?;
                std::thread::yield_now();
            }
            Ok(())
        })];
        for (z, zombie) in zombies.iter_mut().enumerate() {
            let mut schedule = Seeded::new(seed.wrapping_add(z as u64 + 1));
            runs.push(scope.spawn(move || -> Result<(), Error> {
                start.wait();
                while zombie.traced.alive {
                    let can_fold = zombie.next <= max;
                    if !can_fold && !zombie.dirty {
                        break;
                    }
                    turnstile.step(z + 1, || -> Result<(), Error> {
                        if can_fold && (!zombie.dirty || schedule.below(2) == 0) {
                            zombie_fold(zombie, key, log)
                        } else {
                            record(zombie_flush(z, zombie, reader, key, log)?);
                            Ok(())
                        }
                    })?;
                    std::thread::yield_now();
                }
                Ok(())
            }));
        }
        runs.into_iter()
            .map(|run| run.join().expect("flow thread"))
            .collect::<Result<Vec<()>, Error>>()
    })?;
    let events = std::mem::take(&mut *recorded.lock().unwrap_or_else(|e| e.into_inner()));
    Ok(events)
}

fn guarded_model(max_offset: u8) -> Cassandra {
    Cassandra {
        max_offset,
        guarded: true,
        tombstone: true,
    }
}

/// An owner and zombie partition flows overlapping on one store built `mode`, against the
/// guarded Cassandra model; then the must-fail configs' counterexamples the replay data names
/// for it driven through the flows: a mutant's must reproduce on its broken store and be
/// refused by the guarded one; the guarded target drives them on the guarded store only.
pub struct FlowTarget {
    id: TargetId,
    mode: Mode,
    expect: Expect,
}

/// The flows on the guarded store: the guarded flow under the mutants' counterexamples'
/// schedules is refused, never corrupted.
pub static FLOW: FlowTarget = FlowTarget {
    id: TargetId::Flow,
    mode: Mode::Guarded,
    expect: Expect::Conforms,
};

/// The same flows on the last-write-wins store (planted mutant).
pub static FLOW_LWW: FlowTarget = FlowTarget {
    id: TargetId::FlowLww,
    mode: Mode::LastWriteWins,
    expect: Expect::Diverges,
};

/// The same flows with the tombstone turned into a hard delete (planted mutant).
pub static FLOW_HARD_DELETE: FlowTarget = FlowTarget {
    id: TargetId::FlowHardDelete,
    mode: Mode::HardDelete,
    expect: Expect::Diverges,
};

const FLOW_TARGETS: [&FlowTarget; 3] = [&FLOW, &FLOW_LWW, &FLOW_HARD_DELETE];

/// The store mode of the flow target that reproduces `spec` (the broken build its
/// counterexample runs on).
fn broken_mode(spec: &ReplaySpec) -> Result<Mode, Error> {
    FLOW_TARGETS
        .iter()
        .find(|t| replays::reproduces(spec, t.id))
        .map(|t| t.mode)
        .ok_or_else(|| {
            Error::config(
                &spec.config,
                ConfigProblem::NoBrokenBuild { family: "flow" },
            )
        })
}

impl Target for FlowTarget {
    fn id(&self) -> TargetId {
        self.id
    }

    fn model(&self, _: BackendKind) -> ModelName {
        ModelName::of::<Cassandra>()
    }

    fn backends(&self) -> &'static [BackendKind] {
        STORES
    }

    fn expect(&self) -> Expect {
        self.expect
    }

    fn run(&self, settings: &Settings, result: &mut TargetResult) -> Result<(), Error> {
        let factory = StoreFactory::new(settings.backend.clone(), self.mode, self.id.name())?;
        let model = guarded_model(FLOW_MAX_OFFSET);
        let mut schedule = Seeded::new(settings.seed);
        // Seeded schedules (reproducible), then the same flows racing on threads.
        for round in 0..settings.traces {
            let log = Ops((schedule.below(1 << FLOW_MAX_OFFSET) as u32) << 1);
            let events = flow_trace(&factory, &format!("flow{round}"), log, &mut schedule)?;
            result.tally(&model, &events);
        }
        for round in 0..settings.traces {
            let log = Ops((schedule.below(1 << FLOW_MAX_OFFSET) as u32) << 1);
            let key = format!("race{round}");
            let events = racing_flow_trace(&factory, &key, log, schedule.next_u64())?;
            result.tally(&model, &events);
        }
        for spec in replays::driven_by(self.id)? {
            let r = replay_cassandra_cx(settings, &spec.config, broken_mode(&spec)?)?;
            result.steps += r.steps;
            let reproducing = replays::reproduces(&spec, self.id);
            let (broken, guarded) = (r.outcome(&r.broken, spec.shows), r.guarded_outcome());
            if reproducing {
                result
                    .mismatches
                    .extend(r.broken.mismatches.iter().cloned());
            }
            result
                .mismatches
                .extend(r.guarded_mismatches.iter().cloned());
            // The guarded target drives only the guarded store's refusal.
            let judged_broken = if reproducing {
                broken
            } else {
                ReplayOutcome::NotDriven
            };
            result
                .mismatches
                .extend(crate::mismatch::judge_replay(&spec, judged_broken, guarded));
            result.replays.push(r.record(broken, guarded));
        }
        Ok(())
    }
}

// ----------------------------------------------------------------------------------------------
// Model → implementation: the Cassandra counterexamples

/// What a replay of one schedule on one implementation showed.
#[derive(Debug, Default)]
pub struct CassandraReplay {
    /// Row mismatches between the implementation and the model, after each step.
    pub mismatches: Vec<Mismatch>,
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

/// The partition's flows under the Cassandra model's steps. Once the owner is fenced the
/// implementation refused the rest of the schedule: only zombie writes go on.
impl Harness for Partition {
    type Step = CassandraAction;
    type Observed = Cell;

    fn apply(&mut self, action: &CassandraAction) -> Result<Applied, Error> {
        if !self.owner.alive && !matches!(action, CassandraAction::ZombieWrite(_)) {
            return Ok(Applied::Halted);
        }
        let event = match action {
            CassandraAction::OwnerFold => self.owner_fold()?,
            CassandraAction::OwnerRecover => Some(self.owner_recover()?),
            CassandraAction::ZombieWrite(m) => self.zombie_write(*m)?,
        };
        let refused = event
            .as_ref()
            .and_then(FlowEvent::write)
            .and_then(|w| w.applied)
            == Some(false);
        Ok(if refused {
            Applied::Refused
        } else {
            Applied::Taken
        })
    }

    fn observe(&mut self) -> Result<Cell, Error> {
        self.row()
    }
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
) -> Result<CassandraReplay, Error> {
    let zombies = path
        .iter()
        .filter(|a| matches!(a, CassandraAction::ZombieWrite(_)))
        .count();
    let mut p = Partition::new(factory, key, init.op, model.max_offset, zombies)?;
    let driven = driver::drive(model, init, path, &mut p, |s| s.stored, Compare::Always)?;
    let mut out = CassandraReplay {
        steps: driven.steps,
        refused: driven.first_refused().is_some(),
        rows: driven.observed[1..].to_vec(),
        mismatches: driven.records(key),
        ..CassandraReplay::default()
    };
    for (before, after) in driven.transitions() {
        out.regressed |= before.present && after.present && after.offset < before.offset;
        // A present row removed: the mapped high water falls back to 0.
        out.vanished |= before.present && !after.present;
        out.corrupted |= after.present
            && !after.deleted
            && after.contents != init.op.correct_contents(after.offset);
    }
    Ok(out)
}

/// A counterexample replayed on the broken implementation and on the guarded one.
pub struct CxReplay {
    pub config: String,
    /// The model steps, as the checker shows them.
    pub shown: Vec<String>,
    pub broken: CassandraReplay,
    pub guarded: CassandraReplay,
    pub guarded_mismatches: Vec<Mismatch>,
    pub steps: usize,
}

impl CassandraReplay {
    /// Whether `violation` showed on this run (the violations a flow over a store can show).
    pub fn shows(&self, violation: Violation) -> bool {
        match violation {
            Violation::StaleOverwrite => self.regressed,
            Violation::RowVanished => self.vanished,
            Violation::CorruptFold => self.corrupted,
            _ => false,
        }
    }

    /// The first of the violations a flow can show that did show.
    fn any_violation(&self) -> Option<Violation> {
        [
            Violation::StaleOverwrite,
            Violation::RowVanished,
            Violation::CorruptFold,
        ]
        .into_iter()
        .find(|v| self.shows(*v))
    }
}

impl CxReplay {
    /// The broken run's outcome for the config's violation.
    pub fn outcome(&self, run: &CassandraReplay, violation: Violation) -> ReplayOutcome {
        ReplayOutcome::of(violation, run.shows(violation))
    }

    /// On the guarded implementation no violation may appear (for the stale overwrite, because
    /// the guard refused the write).
    pub fn guarded_outcome(&self) -> ReplayOutcome {
        match self.guarded.any_violation() {
            Some(v) => ReplayOutcome::Reproduced(v),
            None => ReplayOutcome::Refused,
        }
    }

    /// For the result's `replays`: what each implementation did with the schedule.
    pub fn record(&self, broken: ReplayOutcome, guarded: ReplayOutcome) -> Replay {
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
            config: self.config.clone(),
            steps: self.shown.clone(),
            broken: did(&self.broken),
            guarded: did(&self.guarded),
            broken_outcome: broken,
            guarded_outcome: guarded,
        }
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
    config: &str,
    broken: Mode,
) -> Result<CxReplay, Error> {
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
        config: config.to_string(),
        shown: path.iter().map(|a| model.format_action(a)).collect(),
        steps: broken.steps + guarded.steps,
        guarded_mismatches: guarded.mismatches.clone(),
        broken,
        guarded,
    })
}
