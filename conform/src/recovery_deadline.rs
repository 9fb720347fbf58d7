//! Conformance of the recovery read's tripwire (`impls/kafka/src/recovery.rs`,
//! `read_to_target` with its `RecoveryBudget`) to the RecoveryDeadline model, both
//! ways, on a scripted log and a scripted clock: the model's tick is [`TICK`] of the read's
//! clock, in which the log hands over a record or not, and the member is evicted when the read
//! is still running at the poll deadline (`Deadline` ticks).
//!
//! Implementation → model: seeded scripts (a progressing read, and a hung one) through the
//! loop; the harness records each tick, and the loop's end as `Complete`, `TripFail` or
//! `Evict`. Every trace is held to the design's model (`TripAt = 2`, `Deadline = 4`, the
//! no-progress tripwire): `recovery-deadline` must conform, its three planted mutants must
//! diverge.
//!
//! Model → implementation: each mutant's must-fail counterexample becomes a script, driven
//! through the mutant (it must show the violation) and through the design (it must not; for
//! `recoverydeadline_late` the design refuses the budget itself).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use loadbearing_impls_kafka::recovery::{
    read_to_target, Clock, Deployment, Ends, LogError, RecoveryBudget, RecoveryError, SnapshotLog,
    SnapshotRecord, TripRule,
};
use loadbearing_specs::recovery::deadline::{DeadlineAction, RecoveryDeadline};
use loadbearing_specs::recovery::deadline_trace::DeadlineEvent;

use crate::backend::BackendKind;
use crate::error::{Error, HarnessError};
use crate::must_fail::{self, replay_each, Showed};
use crate::replays::Violation;
use crate::schedule::{Schedule, Seeded};
use crate::target::{Expect, ModelName, Settings, Target, TargetResult};
use crate::target_id::TargetId;

/// One model tick of the read's clock.
pub const TICK: Duration = Duration::from_secs(10);
/// The design's tripwire and poll deadline, in ticks (`recoverydeadline_holds`).
const TRIP_AT: u16 = 2;
const DEADLINE: u16 = 4;

/// The deployment the ticks stand for: the poll deadline is `DEADLINE` ticks; a healthy park
/// (5 s transactions, a 4 s abort scan) is under one tick.
fn deployment() -> Deployment {
    Deployment {
        txn_timeout: Duration::from_secs(5),
        abort_scan: Duration::from_secs(4),
        max_poll_interval: TICK * u32::from(DEADLINE),
    }
}

/// How the read loop is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Build {
    /// The design: the no-progress rule, the budget checked.
    Guarded,
    /// The tripwire on total time (planted).
    Total,
    /// No tripwire (planted).
    Never,
    /// The budget not checked against the poll deadline (planted).
    Unchecked,
}

impl Build {
    /// The budget this build reads with, for a tripwire of `trip_at` ticks; the design refuses
    /// a budget outside the window.
    fn budget(self, trip_at: u16) -> Result<RecoveryBudget, String> {
        let stall = TICK * u32::from(trip_at);
        match self {
            Build::Guarded => {
                RecoveryBudget::new(stall, deployment()).map_err(|e| format!("refused: {e}"))
            }
            Build::Total => Ok(RecoveryBudget::planted(
                stall,
                deployment(),
                TripRule::Total,
            )),
            Build::Never => Ok(RecoveryBudget::planted(
                stall,
                deployment(),
                TripRule::Never,
            )),
            Build::Unchecked => Ok(RecoveryBudget::planted(
                stall,
                deployment(),
                TripRule::NoProgress,
            )),
        }
    }

    /// The tripwire this build runs with in its own traces: the late mutant's is past the
    /// deadline (`recoverydeadline_late`'s TripAt).
    fn trip_at(self) -> u16 {
        match self {
            Build::Unchecked => DEADLINE + 1,
            _ => TRIP_AT,
        }
    }
}

pub struct RecoveryDeadlineTarget {
    id: TargetId,
    build: Build,
}

pub static RECOVERY_DEADLINE: RecoveryDeadlineTarget = RecoveryDeadlineTarget {
    id: TargetId::RecoveryDeadline,
    build: Build::Guarded,
};

pub static RECOVERY_DEADLINE_TOTAL: RecoveryDeadlineTarget = RecoveryDeadlineTarget {
    id: TargetId::RecoveryDeadlineTotal,
    build: Build::Total,
};

pub static RECOVERY_DEADLINE_NOTRIP: RecoveryDeadlineTarget = RecoveryDeadlineTarget {
    id: TargetId::RecoveryDeadlineNotrip,
    build: Build::Never,
};

pub static RECOVERY_DEADLINE_UNCHECKED: RecoveryDeadlineTarget = RecoveryDeadlineTarget {
    id: TargetId::RecoveryDeadlineUnchecked,
    build: Build::Unchecked,
};

const IN_PROCESS: &[BackendKind] = &[BackendKind::Memory];

impl Target for RecoveryDeadlineTarget {
    fn id(&self) -> TargetId {
        self.id
    }

    fn model(&self, _: BackendKind) -> ModelName {
        ModelName::of::<RecoveryDeadline>()
    }

    fn backends(&self) -> &'static [BackendKind] {
        IN_PROCESS
    }

    fn expect(&self) -> Expect {
        if self.build == Build::Guarded {
            Expect::Conforms
        } else {
            Expect::Diverges
        }
    }

    fn run(&self, settings: &Settings, result: &mut TargetResult) -> Result<(), Error> {
        let mut schedule = Seeded::new(settings.seed);
        let budget = self
            .build
            .budget(self.build.trip_at())
            .map_err(HarnessError::failed("the tripwire's budget"))?;
        // A steady read (which a total-time tripwire fails) and a hung one (which only a
        // tripwire before the deadline fails loudly) every time, then seeded scripts.
        let fixed = [
            vec![true; usize::from(DEADLINE)],
            vec![false; usize::from(DEADLINE)],
        ];
        let seeded: Vec<Vec<bool>> = (0..settings.traces)
            .map(|_| script(&mut schedule))
            .collect();
        for script in fixed.iter().chain(&seeded) {
            let healthy = script.iter().any(|&advances| advances);
            let run = run_script(script, &budget)?;
            result.tally(&design(healthy), &run.events);
        }
        replay_counterexamples(self.id, self.build, result)
    }
}

/// The design's model, over a log that can progress or not.
fn design(healthy_progress: bool) -> RecoveryDeadline {
    RecoveryDeadline {
        trip_at: TRIP_AT,
        deadline: DEADLINE,
        tripwire: true,
        no_progress_trip: true,
        healthy_progress,
    }
}

/// A seeded script: a hung read one time in three (nothing ever arrives), else up to
/// `DEADLINE` ticks of records arriving or not.
fn script(schedule: &mut dyn Schedule) -> Vec<bool> {
    if schedule.below(3) == 0 {
        return vec![false; usize::from(DEADLINE)];
    }
    let ticks = 1 + schedule.below(u64::from(DEADLINE)) as usize;
    let mut script: Vec<bool> = (0..ticks).map(|_| schedule.below(2) == 1).collect();
    *script.last_mut().expect("at least one tick") = true;
    script
}

/// What one scripted read did.
struct Run {
    events: Vec<DeadlineEvent>,
    /// Ticks without progress when the tripwire fired, if it did.
    tripped_after: Option<u16>,
    evicted: bool,
}

/// The read of a log that hands over a record in each tick the script says, through `budget`.
fn run_script(script: &[bool], budget: &RecoveryBudget) -> Result<Run, Error> {
    let time = Rc::new(Cell::new(Duration::ZERO));
    let events = Rc::new(RefCell::new(Vec::new()));
    let records = script.iter().filter(|&&a| a).count() as i64;
    // A hung log's target is one record that never comes.
    let target = records.max(1);
    let mut log = TickLog {
        time: time.clone(),
        script: script.to_vec(),
        target,
        next: 0,
        noprog: 0,
        events: events.clone(),
        evict_next: false,
    };
    let outcome = read_to_target(&mut log, &ScriptedClock(time), budget);
    let noprog = log.noprog;
    let mut run = Run {
        events: Vec::new(),
        tripped_after: None,
        evicted: false,
    };
    match outcome {
        Ok(_) => events.borrow_mut().push(DeadlineEvent::Complete),
        Err(RecoveryError::Stalled { .. }) => {
            events.borrow_mut().push(DeadlineEvent::TripFail);
            run.tripped_after = Some(noprog);
        }
        Err(RecoveryError::Client(e)) if e.what == EVICTED => run.evicted = true,
        Err(e) => return Err(HarnessError::failed("the scripted read")(e)),
    }
    run.events = events.take();
    Ok(run)
}

/// The `LogError::what` of the eviction.
const EVICTED: &str = "evicted at max.poll.interval.ms";

struct ScriptedClock(Rc<Cell<Duration>>);

impl Clock for ScriptedClock {
    fn now(&self) -> Duration {
        self.0.get()
    }
}

/// The partition as the script has it: in tick `k` (1-based) a record arrives at the tick's
/// end if `script[k - 1]`; past the script nothing does.
struct TickLog {
    time: Rc<Cell<Duration>>,
    script: Vec<bool>,
    target: i64,
    next: i64,
    /// Consecutive ticks without a record.
    noprog: u16,
    events: Rc<RefCell<Vec<DeadlineEvent>>>,
    /// The deadline passed in a tick that brought a record: evicted at the next poll unless
    /// that record completed the read.
    evict_next: bool,
}

impl TickLog {
    fn evict(&mut self) -> Result<Option<SnapshotRecord>, LogError> {
        self.events.borrow_mut().push(DeadlineEvent::Evict);
        Err(LogError {
            what: EVICTED,
            reason: "the read was still running at the poll deadline".into(),
        })
    }
}

impl SnapshotLog for TickLog {
    fn target(&mut self) -> Result<i64, LogError> {
        Ok(self.target)
    }

    fn start(&mut self) -> Result<(), LogError> {
        Ok(())
    }

    fn position(&mut self) -> i64 {
        self.next
    }

    fn poll(&mut self, wait: Duration) -> Result<Option<SnapshotRecord>, LogError> {
        if self.evict_next {
            return self.evict();
        }
        let before = self.time.get();
        let after = before + wait;
        self.time.set(after);
        let tick = (after.as_millis() / TICK.as_millis()) as usize;
        if tick == (before.as_millis() / TICK.as_millis()) as usize {
            return Ok(None);
        }
        let advances = self.script.get(tick - 1).copied().unwrap_or(false);
        self.events.borrow_mut().push(if advances {
            DeadlineEvent::Progress
        } else {
            DeadlineEvent::Stall
        });
        let at_deadline = tick >= usize::from(DEADLINE);
        if !advances {
            self.noprog += 1;
            return if at_deadline { self.evict() } else { Ok(None) };
        }
        self.noprog = 0;
        self.evict_next = at_deadline;
        self.next += 1;
        Ok(Some(SnapshotRecord {
            position: self.next - 1,
            key: "k".into(),
            offset: Some(self.next as u64),
            value: Some(vec![]),
        }))
    }

    fn ends_now(&mut self, _: Duration) -> Result<Ends, LogError> {
        Ok(Ends {
            high: self.target,
            stable: self.next,
        })
    }
}

/// A model path as a script: a record in each `Progress` tick.
fn script_of(path: &[DeadlineAction]) -> Vec<bool> {
    path.iter()
        .filter_map(|a| match a {
            DeadlineAction::Progress => Some(true),
            DeadlineAction::Stall => Some(false),
            _ => None,
        })
        .collect()
}

/// What a run showed of `violation`: a read failed while it was progressing, or the member
/// evicted with the read running.
fn shows(violation: Violation, run: &Run) -> bool {
    match violation {
        Violation::ProgressingReadFailed => run.tripped_after.is_some_and(|n| n < TRIP_AT),
        Violation::SilentEviction => run.evicted,
        _ => false,
    }
}

fn describe(run: &Result<Run, String>) -> String {
    match run {
        Err(refused) => refused.clone(),
        Ok(run) => {
            let ticks: Vec<&str> = run
                .events
                .iter()
                .map(loadbearing_trace::TraceEvent::action)
                .collect();
            ticks.join(", ")
        }
    }
}

/// Each counterexample `target` drives: through its own `build` where it must reproduce it
/// (a mutant's own config), and through the design.
fn replay_counterexamples(
    target: TargetId,
    build: Build,
    result: &mut TargetResult,
) -> Result<(), Error> {
    replay_each::<RecoveryDeadline>(target, result, |spec, cx, replayed, _| {
        let build = match replayed {
            must_fail::Build::Broken => build,
            must_fail::Build::Designed => Build::Guarded,
        };
        // A budget the design refuses is a refusal: nothing ran to show anything.
        let run = match build.budget(cx.model.trip_at) {
            Err(refused) => Err(refused),
            Ok(budget) => Ok(run_padded(
                &script_of(&cx.path),
                &budget,
                cx.model.healthy_progress,
            )?),
        };
        Ok(Showed {
            violation: run.as_ref().is_ok_and(|run| shows(spec.shows, run)),
            did: describe(&run),
        })
    })
}

/// A healthy path's read must not complete within the path: one more record is due, far past
/// the deadline (`run_script` takes the target from the records the script brings).
fn run_padded(script: &[bool], budget: &RecoveryBudget, healthy: bool) -> Result<Run, Error> {
    if !healthy {
        return run_script(script, budget);
    }
    let mut padded = script.to_vec();
    padded.resize(usize::from(DEADLINE) * 4, false);
    padded.push(true);
    run_script(&padded, budget)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_design_trips_after_two_stalls_and_completes_a_progressing_read() {
        let budget = Build::Guarded.budget(TRIP_AT).unwrap();
        let hung = run_script(&[false; 4], &budget).unwrap();
        assert_eq!(
            hung.events,
            vec![
                DeadlineEvent::Stall,
                DeadlineEvent::Stall,
                DeadlineEvent::TripFail
            ]
        );
        let slow = run_script(&[true, false, true, true], &budget).unwrap();
        assert_eq!(slow.events.last(), Some(&DeadlineEvent::Complete));
        let total = Build::Total.budget(TRIP_AT).unwrap();
        let failed = run_script(&[true, true, true, true], &total).unwrap();
        assert_eq!(failed.tripped_after, Some(0), "{:?}", failed.events);
        assert!(Build::Guarded.budget(DEADLINE + 1).is_err());
    }
}
