//! Conformance of the partition flows (impls/src/flow.rs) to the evolved Cassandra model
//! (docs/models/cassandra835.md), both ways.
//!
//! What the evolved model adds to the 24-config one is the owner's life across a refused
//! write and a handover: a refused write tears the owner down, and a new incarnation resumes at
//! the committed offset (the last record whose flush completed) and recovers the key; a
//! handover starts a new owner at a committed offset that may trail the row. Either way the
//! new owner replays records its recovered row already lies past, and the monotone buffer must
//! drop them. The harness plays that life on the real flow: the owner flushes after every
//! record (`OwnerFold`); a refused write stops the flow (`FlowError::SelfFenced`), and the
//! harness starts the next incarnation (`OwnerRecover`, logged); a handover is a new flow at a
//! lower `resume_at` (`Handover`); revoked flows write their folds as the 24-config harness's
//! zombies do (`ZombieWrite`).
//!
//! Implementation → model: seeded schedules of those steps, validated against the design's
//! constants. Model → implementation: the knob-flip must-fail configs' counterexamples driven on
//! the flow built that broken way and on the flow as designed, comparing the row after every
//! step; a liveness counterexample (a livelock) is then followed by the owner trying to finish
//! the log.

use std::sync::Arc;

use crate::replays::ReplaySpec;
use loadbearing_impls::flow::{FlowConfig, Ownership, Planted};
use loadbearing_impls::{Mode, SnapshotStore};
use loadbearing_refinement::Model;
use loadbearing_specs::cassandra::model_835::{
    Cassandra835, Cassandra835Action, Cassandra835State, HANDOVER_LIMIT,
};
use loadbearing_specs::cassandra::trace::FlowEvent;
use loadbearing_specs::infra::vocab::{Cell, Offsets, Op, Ops};

use crate::backend::BackendKind;
use crate::driver::{self, Applied, Compare, Harness};
use crate::error::ValueError;
use crate::error::{ConfigProblem, Error, HarnessError};
use crate::mismatch::Mismatch;
use crate::observe::{cell_as_set, cell_of, contents_as_set};
use crate::partition_flow::{
    record, write_event, written, zombie_fold, Traced, Writer, Zombie, FLOW_MAX_OFFSET, ZOMBIES,
};
use crate::replays::{self, Violation};
use crate::schedule::{Schedule, Seeded};
use crate::stores::{StoreFactory, STORES};
use crate::target::{Expect, ModelName, Settings, Target, TargetResult};
use crate::target_id::TargetId;
use crate::{counterexample, Cx};

/// Steps of one seeded trace at most: a broken owner can livelock (conflict, recover, the
/// same conflict), so a trace ends here even when the owner never reaches the end of the log.
const TRACE_STEPS: usize = 60;
/// Incarnations an owner may go through while it tries to finish the log after a replayed
/// path: more than the log has records, so an owner that still has not finished is caught in
/// a livelock (each refused write a new incarnation that meets the same refusal).
const FINISH_ATTEMPTS: usize = 2 * FLOW_MAX_OFFSET as usize + 2;

/// How one target builds the flow and the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Build {
    mode: Mode,
    /// The buffer's replay fence (the model's `Fix`).
    fence: bool,
    planted: Planted,
}

impl Build {
    const DESIGN: Build = Build {
        mode: Mode::Guarded,
        fence: true,
        planted: Planted::None,
    };

    /// The config an owner incarnation resuming at `resume_at` runs with.
    fn owner_config(self, resume_at: u8) -> FlowConfig {
        FlowConfig {
            replay_fence: self.fence,
            resume_at: resume_at as u64,
            planted: self.planted,
            ..FlowConfig::default()
        }
    }
}

// ----------------------------------------------------------------------------------------------
// The owner's incarnations and the zombies on one store

/// One partition's key: the current owner incarnation, the revoked flows, and what the group
/// has committed.
struct Partition<'a> {
    factory: &'a StoreFactory,
    build: Build,
    key: String,
    log: Ops,
    max: u8,
    reader: Box<dyn SnapshotStore>,
    ownership: Arc<Ownership>,
    owner: Traced,
    /// The committed input offset: the last record whose flush completed (landed, or wrote
    /// nothing); a new incarnation resumes here.
    committed: u8,
    handovers: u8,
    zombies: Vec<Zombie>,
    /// Every event so far, in order.
    events: Vec<FlowEvent>,
    /// A row was read back with a record folded twice into its value (a replay folded again,
    /// which only a broken build writes): no model row is that, so the trace ends there.
    folded_twice: bool,
}

impl<'a> Partition<'a> {
    fn new(
        factory: &'a StoreFactory,
        build: Build,
        key: &str,
        log: Ops,
        max: u8,
        zombies: usize,
    ) -> Result<Partition<'a>, Error> {
        let ownership = Ownership::new();
        // The revoked flows are built as designed: the planted break is the owner's.
        let revoked = (0..zombies)
            .map(|_| Zombie::recovered(&ownership, factory, key))
            .collect::<Result<Vec<_>, _>>()?;
        let owner = Traced::recovered(&ownership, factory, build.owner_config(0), key)?;
        Ok(Partition {
            factory,
            build,
            key: key.to_string(),
            log,
            max,
            reader: factory.open(loadbearing_impls::trace::no_trace())?,
            ownership,
            owner,
            committed: 0,
            handovers: 0,
            zombies: revoked,
            events: Vec::new(),
            folded_twice: false,
        })
    }

    /// The row as a set of offsets, a line folded twice collapsed (what the schedule and the
    /// driver compare; [`Partition::row_seen`] is what an event carries).
    fn row(&self) -> Result<Cell, Error> {
        Ok(cell_as_set(&self.reader.read(&self.key)?)?)
    }

    /// The row read back for an event: `None` when its value folds a record twice.
    fn row_seen(&mut self) -> Result<Option<Cell>, Error> {
        match cell_of(&self.reader.read(&self.key)?) {
            Ok(cell) => Ok(Some(cell)),
            Err(ValueError::FoldedTwice(_)) => {
                self.folded_twice = true;
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The owner was torn down by a refused write and waits for its next incarnation.
    fn torn_down(&self) -> bool {
        !self.owner.alive
    }

    fn position(&self) -> u8 {
        self.owner.flow.position() as u8
    }

    /// `OwnerFold`: the owner handles its next record and flushes it. A refused write tears
    /// it down; otherwise the record is committed.
    fn owner_fold(&mut self) -> Result<FlowEvent, Error> {
        if self.torn_down() {
            self.owner_recover()?;
        }
        let o = self.position() + 1;
        self.owner.handle(&record(&self.key, self.log, o))?;
        self.owner.flush()?;
        let steps = self.owner.fresh();
        let stored = self.row_seen()?;
        let event = match written(&steps) {
            Some(w) => write_event(Writer::Owner, self.log, &w, stored),
            // Nothing written (the buffer dropped the record): the fold alone, and the row.
            None => FlowEvent::OwnerFold {
                offset: o as u64,
                op: self.log.at(o),
                applied: None,
                presented: None,
                stored,
            },
        };
        if self.owner.alive {
            self.committed = o;
            // The model's owner evicts a key whose delete it executed and reloads it before
            // its next record (`OwnerRecover`, silent: the flow loads an evicted key when it
            // next handles it). A delete dropped over a recovered live snapshot is skipped by
            // the fold's filter and evicts nothing: the owner still holds that snapshot.
            if self.log.at(o) == Op::Delete && self.owner.flow.state(&self.key).is_none() {
                self.owner.flow.evict(&self.key);
            }
        }
        self.events.push(event.clone());
        Ok(event)
    }

    /// A new owner incarnation resuming at `resume_at`, the key recovered from the store.
    fn incarnate(&mut self, resume_at: u8) -> Result<(), Error> {
        let config = self.build.owner_config(resume_at);
        self.owner = Traced::recovered(&self.ownership, self.factory, config, &self.key)?;
        Ok(())
    }

    /// What the owner holds for the key (as a set: a broken build may have folded a record
    /// twice, which the row it writes shows).
    fn owner_state(&self) -> Result<Offsets, Error> {
        Ok(match self.owner.flow.state(&self.key) {
            Some(value) => contents_as_set(value)?,
            None => Offsets::EMPTY,
        })
    }

    /// `OwnerRecover`: a torn-down owner's next incarnation resumes at the committed offset
    /// and recovers; a live owner (after a delete) evicts the key and reloads it.
    fn owner_recover(&mut self) -> Result<FlowEvent, Error> {
        if self.torn_down() {
            self.incarnate(self.committed)?;
        } else {
            self.owner.reload(&self.key)?;
        }
        let event = FlowEvent::OwnerRecover {
            owner_state: Some(self.owner_state()?),
            stored: self.row_seen()?,
        };
        self.events.push(event.clone());
        Ok(event)
    }

    /// `Handover(c)`: a new owner takes over at the committed offset `c` and recovers.
    fn handover(&mut self, c: u8) -> Result<FlowEvent, Error> {
        self.incarnate(c)?;
        self.committed = c;
        self.handovers += 1;
        let event = FlowEvent::Handover {
            resume_at: c as u64,
            owner_state: Some(self.owner_state()?),
            stored: self.row_seen()?,
        };
        self.events.push(event.clone());
        Ok(event)
    }

    fn zombie_fold(&mut self, z: usize) -> Result<(), Error> {
        zombie_fold(&mut self.zombies[z], &self.key, self.log)
    }

    /// `ZombieWrite(m)`: zombie `z` flushes its fold at m (no event if it had nothing new).
    fn zombie_flush(&mut self, z: usize) -> Result<Option<FlowEvent>, Error> {
        let zombie = &mut self.zombies[z];
        zombie.dirty = false;
        zombie.traced.flush()?;
        let steps = zombie.traced.fresh();
        let Some(w) = written(&steps) else {
            return Ok(None);
        };
        let stored = self.row_seen()?;
        let event = write_event(Writer::Zombie(z), self.log, &w, stored);
        self.events.push(event.clone());
        Ok(Some(event))
    }

    /// `ZombieWrite(m)` on demand (replay): an unused revoked flow folds `1..=m` and flushes.
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
    fn choices(&self) -> Result<Vec<Choice>, Error> {
        let mut out = Vec::new();
        if self.torn_down() {
            out.push(Choice::OwnerRecover);
        } else if self.position() < self.max {
            out.push(Choice::OwnerFold);
        }
        if self.handovers < HANDOVER_LIMIT {
            let row = self.row()?;
            if row.present {
                out.push(Choice::Handover(row.offset));
            }
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
        Ok(out)
    }

    /// The owner tries to finish the log, a new incarnation after each refused write. Whether
    /// it finished within [`FINISH_ATTEMPTS`] incarnations.
    fn finish(&mut self) -> Result<bool, Error> {
        let mut incarnations = 0;
        while self.position() < self.max || self.torn_down() {
            if self.torn_down() {
                incarnations += 1;
                if incarnations > FINISH_ATTEMPTS {
                    return Ok(false);
                }
                self.owner_recover()?;
            } else {
                self.owner_fold()?;
            }
        }
        Ok(true)
    }

    /// A committed delete with a live row at or below it: the key came back.
    fn resurrected(&self, row: Cell) -> bool {
        row.present
            && !row.deleted
            && (1..=self.committed).any(|d| self.log.at(d) == Op::Delete && row.offset <= d)
    }
}

#[derive(Clone, Copy, Debug)]
enum Choice {
    OwnerFold,
    OwnerRecover,
    /// A handover, resuming at an offset the schedule draws at or below the row's.
    Handover(u8),
    ZombieFold(usize),
    ZombieFlush(usize),
}

/// One seeded trace: the owner's incarnations, handovers and the zombies interleaved until
/// nothing is left to do (or [`TRACE_STEPS`]).
fn seeded_trace(
    factory: &StoreFactory,
    build: Build,
    key: &str,
    log: Ops,
    schedule: &mut Seeded,
) -> Result<Vec<FlowEvent>, Error> {
    let mut p = Partition::new(factory, build, key, log, FLOW_MAX_OFFSET, ZOMBIES)?;
    for _ in 0..TRACE_STEPS {
        if p.folded_twice {
            break;
        }
        let choices = p.choices()?;
        if choices.is_empty() {
            break;
        }
        // A handover now and then: one draw in eight, when one is possible.
        let handover = choices
            .iter()
            .position(|c| matches!(c, Choice::Handover(_)))
            .filter(|_| schedule.below(8) == 0);
        let others: Vec<Choice> = choices
            .iter()
            .copied()
            .filter(|c| !matches!(c, Choice::Handover(_)))
            .collect();
        let chosen = match handover {
            Some(i) => choices[i],
            None if others.is_empty() => break,
            None => others[schedule.below(others.len() as u64) as usize],
        };
        match chosen {
            Choice::OwnerFold => {
                p.owner_fold()?;
            }
            Choice::OwnerRecover => {
                p.owner_recover()?;
            }
            Choice::Handover(up_to) => {
                let c = schedule.below(up_to as u64 + 1) as u8;
                p.handover(c)?;
            }
            Choice::ZombieFold(z) => p.zombie_fold(z)?,
            Choice::ZombieFlush(z) => {
                p.zombie_flush(z)?;
            }
        }
    }
    Ok(p.events)
}

// ----------------------------------------------------------------------------------------------
// Model → implementation: the must-fail configs' counterexamples

/// The flow under the evolved model's steps. The steps the flow has no counterpart for (the
/// spurious conflict the store's compound hides, the post-read init, the TTL reap) cannot be
/// taken: the configs that need them are not replayed (docs/conformance.md says why).
impl Harness for Partition<'_> {
    type Step = Cassandra835Action;
    type Observed = Cell;

    fn apply(&mut self, action: &Cassandra835Action) -> Result<Applied, Error> {
        let event = match action {
            Cassandra835Action::OwnerFold => Some(self.owner_fold()?),
            Cassandra835Action::OwnerRecover => Some(self.owner_recover()?),
            Cassandra835Action::Handover(c) => Some(self.handover(*c)?),
            Cassandra835Action::ZombieWrite(m) => self.zombie_write(*m)?,
            Cassandra835Action::SpuriousConflict
            | Cassandra835Action::ReseedFloor(_)
            | Cassandra835Action::Reap => {
                return Ok(Applied::Failed(format!(
                    "the flow has no counterpart of {action:?}"
                )))
            }
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

/// What one counterexample's schedule did on one build of the flow.
#[derive(Debug, Default)]
pub struct Replay835 {
    /// Row mismatches between the implementation and the model, after each step.
    pub mismatches: Vec<Mismatch>,
    /// A present row's offset went down (a stale overwrite landed).
    pub regressed: bool,
    /// A present row disappeared.
    pub vanished: bool,
    /// A live row held contents other than the correct fold at its offset.
    pub corrupted: bool,
    /// A live row sat at or below a committed delete.
    pub resurrected: bool,
    /// A write was refused by the guard.
    pub refused: bool,
    /// After the path the owner finished the log.
    pub completed: bool,
    /// The rows after each step of the path.
    pub rows: Vec<Cell>,
    /// The flow's events, the path's and the finish's.
    pub events: Vec<FlowEvent>,
    pub steps: usize,
}

impl Replay835 {
    /// Whether `violation` showed (the violations an owner over a store can show).
    pub fn shows(&self, violation: Violation) -> bool {
        match violation {
            Violation::StaleOverwrite => self.regressed,
            Violation::RowVanished => self.vanished,
            Violation::CorruptFold => self.corrupted,
            Violation::ResurrectedKey => self.resurrected,
            Violation::NeverCompletes => !self.completed,
            _ => false,
        }
    }

    /// What the run did, for the result's `replays`.
    fn did(&self) -> String {
        let facts: Vec<&str> = [
            (self.regressed, "a lower offset overwrote a higher one"),
            (self.vanished, "a present row vanished"),
            (
                self.corrupted,
                "a live row holds contents other than the correct fold",
            ),
            (self.resurrected, "a deleted key came back below its delete"),
            (self.refused, "a write was refused (typed conflict)"),
            (
                !self.completed,
                "the owner never finished the log (each incarnation refused again)",
            ),
        ]
        .into_iter()
        .filter_map(|(happened, fact)| happened.then_some(fact))
        .collect();
        let rows: Vec<String> = self.rows.iter().map(Cell::to_string).collect();
        let what = if facts.is_empty() {
            "no violation, the owner finished the log".to_string()
        } else {
            facts.join("; ")
        };
        format!("rows {}: {what}", rows.join(" → "))
    }
}

/// Drives `path` on the flow built `build` from `init`, comparing the row with `model`'s after
/// every step, then lets the owner finish the log.
fn replay(
    factory: &StoreFactory,
    build: Build,
    key: &str,
    model: &Cassandra835,
    init: &Cassandra835State,
    path: &[Cassandra835Action],
) -> Result<Replay835, Error> {
    let zombies = path
        .iter()
        .filter(|a| matches!(a, Cassandra835Action::ZombieWrite(_)))
        .count();
    let mut p = Partition::new(factory, build, key, init.op, model.max_offset, zombies)?;
    let driven = driver::drive(model, init, path, &mut p, |s| s.store, Compare::Always)?;
    let mut out = Replay835 {
        steps: driven.steps,
        refused: driven.first_refused().is_some(),
        rows: driven.observed[1..].to_vec(),
        mismatches: driven.records(key),
        ..Replay835::default()
    };
    for (before, after) in driven.transitions() {
        out.regressed |= before.present && after.present && after.offset < before.offset;
        out.vanished |= before.present && !after.present;
    }
    // The violations on a row are judged on every row the key went through, the finish's too.
    out.resurrected = p.resurrected(p.row()?);
    out.completed = p.finish()?;
    let last = p.row()?;
    out.rows.push(last);
    out.corrupted = p.folded_twice;
    for row in &out.rows {
        out.corrupted |=
            row.present && !row.deleted && row.contents != init.op.correct_contents(row.offset);
    }
    out.events = std::mem::take(&mut p.events);
    Ok(out)
}

/// The violations an owner over a store can show: the design shows none of them.
const GUARDED_VIOLATIONS: [Violation; 5] = [
    Violation::StaleOverwrite,
    Violation::RowVanished,
    Violation::CorruptFold,
    Violation::ResurrectedKey,
    Violation::NeverCompletes,
];

/// The flow built as each target builds it: the design, or one knob flip of the model.
pub struct Cassandra835Target {
    id: TargetId,
    build: Build,
}

/// The flow as designed.
pub static CASSANDRA_835: Cassandra835Target = Cassandra835Target {
    id: TargetId::Cassandra835,
    build: Build::DESIGN,
};

/// A last-write-wins store: no offset condition (`Guarded = false`).
pub static CASSANDRA_835_LWW: Cassandra835Target = Cassandra835Target {
    id: TargetId::Cassandra835Lww,
    build: Build {
        mode: Mode::LastWriteWins,
        ..Build::DESIGN
    },
};

/// A delete that removes the row (`Tombstone = false`).
pub static CASSANDRA_835_HARD_DELETE: Cassandra835Target = Cassandra835Target {
    id: TargetId::Cassandra835HardDelete,
    build: Build {
        mode: Mode::HardDelete,
        ..Build::DESIGN
    },
};

/// No monotone buffer (`Fix = false`).
pub static CASSANDRA_835_FIX_OFF: Cassandra835Target = Cassandra835Target {
    id: TargetId::Cassandra835FixOff,
    build: Build {
        fence: false,
        ..Build::DESIGN
    },
};

/// A recovery that reads a tombstone as an absent key (`TombFloor = false`).
pub static CASSANDRA_835_NO_TOMB_FLOOR: Cassandra835Target = Cassandra835Target {
    id: TargetId::Cassandra835NoTombFloor,
    build: Build {
        planted: Planted::NoTombFloor,
        ..Build::DESIGN
    },
};

/// The deferred flush of a never-persisted key, its delete a no-op (`SkipTomb = true`).
pub static CASSANDRA_835_SKIP_TOMB: Cassandra835Target = Cassandra835Target {
    id: TargetId::Cassandra835SkipTomb,
    build: Build {
        planted: Planted::DeferNeverPersisted,
        ..Build::DESIGN
    },
};

const TARGETS: [&Cassandra835Target; 6] = [
    &CASSANDRA_835,
    &CASSANDRA_835_LWW,
    &CASSANDRA_835_HARD_DELETE,
    &CASSANDRA_835_FIX_OFF,
    &CASSANDRA_835_NO_TOMB_FLOOR,
    &CASSANDRA_835_SKIP_TOMB,
];

/// The build of the target that reproduces `spec`.
fn broken_build(spec: &ReplaySpec) -> Result<Build, Error> {
    TARGETS
        .iter()
        .find(|t| replays::reproduces(spec, t.id))
        .map(|t| t.build)
        .ok_or_else(|| {
            Error::config(
                &spec.config,
                ConfigProblem::NoBrokenBuild {
                    family: "cassandra-835",
                },
            )
        })
}

impl Target for Cassandra835Target {
    fn id(&self) -> TargetId {
        self.id
    }

    fn model(&self, _: BackendKind) -> ModelName {
        ModelName::of::<Cassandra835>()
    }

    fn backends(&self) -> &'static [BackendKind] {
        STORES
    }

    fn expect(&self) -> Expect {
        if self.build == Build::DESIGN {
            Expect::Conforms
        } else {
            Expect::Diverges
        }
    }

    fn run(&self, settings: &Settings, result: &mut TargetResult) -> Result<(), Error> {
        let factory = StoreFactory::new(settings.backend.clone(), self.build.mode, self.id.name())?;
        let model = Cassandra835::design(FLOW_MAX_OFFSET);
        let mut schedule = Seeded::new(settings.seed);
        for round in 0..settings.traces {
            let log = Ops((schedule.below(1 << FLOW_MAX_OFFSET) as u32) << 1);
            let key = format!("c835_{round}");
            let events = seeded_trace(&factory, self.build, &key, log, &mut schedule)?;
            result.tally(&model, &events);
        }
        for spec in replays::driven_by(self.id)? {
            let Cx {
                model: broken_model,
                states,
                path,
            } = counterexample::<Cassandra835>(&spec.config)?;
            let init = &states[0];
            let reproducing = replays::reproduces(&spec, self.id);
            let guarded_store =
                StoreFactory::new(settings.backend.clone(), Mode::Guarded, "c835_cx")?;
            let guarded = replay(
                &guarded_store,
                Build::DESIGN,
                "cx_design",
                &Cassandra835::design(broken_model.max_offset),
                init,
                &path,
            )?;
            result.steps += guarded.steps;
            result.mismatches.extend(guarded.mismatches.iter().cloned());
            let broken = if reproducing {
                let build = broken_build(&spec)?;
                let store = StoreFactory::new(settings.backend.clone(), build.mode, "c835_cx")?;
                let run = replay(&store, build, "cx_broken", &broken_model, init, &path)?;
                result.steps += run.steps;
                result.mismatches.extend(run.mismatches.iter().cloned());
                // The broken flow's own events under the counterexample's schedule are one of
                // its traces: the design model must refuse them.
                result.tally(&Cassandra835::design(broken_model.max_offset), &run.events);
                Some((run.shows(spec.shows), run.did()))
            } else {
                None
            };
            let shown = path.iter().map(|a| broken_model.format_action(a)).collect();
            // The design must show none of the violations, not only the config's.
            if let Some(other) = GUARDED_VIOLATIONS
                .into_iter()
                .find(|v| *v != spec.shows && guarded.shows(*v))
            {
                result.mismatches.push(Mismatch::DesignShowed {
                    config: spec.config.clone(),
                    violation: other,
                });
            }
            let guarded_showed = guarded.shows(spec.shows);
            result.replayed(&spec, shown, broken, (guarded_showed, guarded.did()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Backend;
    use loadbearing_trace::{validate, Limits};

    fn sqlite(mode: Mode) -> StoreFactory {
        let backend = Backend::embedded(BackendKind::SQLITE).expect("sqlite is embedded");
        StoreFactory::new(backend, mode, "c835_test").unwrap()
    }

    fn replayed(build: Build, config: &str) -> (Replay835, Replay835) {
        let Cx {
            model,
            states,
            path,
        } = counterexample::<Cassandra835>(config).unwrap();
        let broken = replay(
            &sqlite(build.mode),
            build,
            "broken",
            &model,
            &states[0],
            &path,
        );
        let design = Cassandra835::design(model.max_offset);
        let guarded = replay(
            &sqlite(Mode::Guarded),
            Build::DESIGN,
            "guarded",
            &design,
            &states[0],
            &path,
        );
        (broken.unwrap(), guarded.unwrap())
    }

    /// D-11's path: after the handover to 0 the replayed delete at 1 lies below the recovered
    /// Snap(2). Without the fence every incarnation is refused again; with it the replay is
    /// dropped (not written as a tombstone at 2) and the owner finishes with the exact fold.
    #[test]
    fn the_replay_window_livelocks_without_the_fence_and_drops_the_replayed_delete_with_it() {
        let fix_off = CASSANDRA_835_FIX_OFF.build;
        let (broken, guarded) = replayed(fix_off, "cassandra_replay_fixoff");
        assert!(broken.mismatches.is_empty(), "{:?}", broken.mismatches);
        assert!(broken.shows(Violation::NeverCompletes), "{broken:?}");
        assert!(guarded.mismatches.is_empty(), "{:?}", guarded.mismatches);
        assert!(guarded.completed && !guarded.corrupted, "{guarded:?}");
        assert_eq!(
            guarded.rows.last(),
            Some(&Cell::snap(3, Offsets::EMPTY.with(2).with(3)))
        );
    }

    /// The broken flow's own events under a counterexample are refused by the design model,
    /// and the design's seeded traces conform.
    #[test]
    fn the_design_conforms_and_each_mutant_is_refused_under_its_counterexample() {
        let design = Cassandra835::design(FLOW_MAX_OFFSET);
        let factory = sqlite(Mode::Guarded);
        let mut schedule = Seeded::new(5);
        for round in 0..20 {
            let log = Ops((schedule.below(1 << FLOW_MAX_OFFSET) as u32) << 1);
            let key = format!("t{round}");
            let events = seeded_trace(&factory, Build::DESIGN, &key, log, &mut schedule).unwrap();
            let verdict = validate(&design, &events, Limits::default());
            assert!(
                verdict.conforming,
                "{}",
                verdict.divergence.map(|d| d.text()).unwrap_or_default()
            );
        }
        for (target, config) in [
            (&CASSANDRA_835_LWW, "kafka-flow-835/cassandra_unguarded"),
            (
                &CASSANDRA_835_HARD_DELETE,
                "kafka-flow-835/cassandra_notomb",
            ),
            (&CASSANDRA_835_FIX_OFF, "cassandra_replay_fixoff"),
            (&CASSANDRA_835_NO_TOMB_FLOOR, "cassandra_tombstone_replay"),
            (&CASSANDRA_835_SKIP_TOMB, "cassandra_skiptomb"),
        ] {
            let (broken, guarded) = replayed(target.build, config);
            let model = Cassandra835::design(3);
            let verdict = validate(&model, &broken.events, Limits::default());
            assert!(
                !verdict.conforming,
                "{}: the mutant's trace conformed",
                target.name()
            );
            assert!(
                !GUARDED_VIOLATIONS.iter().any(|v| guarded.shows(*v)),
                "{config}: {guarded:?}"
            );
        }
    }
}
