//! Model → libdb: a path of the SSI model driven through a flavour step by step. Each model
//! action is a point of one transaction's thread (Begin, a statement, CHECK, the commit record,
//! END, an abort), and each point waits for the one before it on the path, so libdb takes the
//! path's steps in the path's order: Begin and the statements through the API, CHECK and the
//! record as the points inside `DB_TXN->commit` the hooks reach, END as commit's return. The
//! steps a transaction has left after the path wait for the path's last step.

use std::fmt;
use std::time::Duration;

use loadbearing_specs::ssi::{Phase, Ssi, SsiAction, SsiState, Status};
use loadbearing_ssi_engine::conform::{self, Divergence};
use loadbearing_ssi_engine::program::{script, Outcome};
use loadbearing_ssi_engine::tier::{Point, Scenario, Schedule, Wait};
use loadbearing_ssi_engine::trace::SsiEvent;
use stateright::Model;

use crate::db::Flavour;
use crate::store::{SetupError, Shape};
use crate::tier::{attempt, checked_model, model_of};

/// A path the replay cannot place on libdb's threads.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("the workload `{0}` has no script")]
    NoScript(String),
    #[error(
        "{0} transactions abort by their own choice on this path; the tier gives one that choice"
    )]
    TwoAppAborts(usize),
    #[error(transparent)]
    Setup(#[from] SetupError),
}

/// What libdb did on a model path.
#[derive(Debug)]
pub struct LibdbReplay {
    pub flavour: Flavour,
    /// The path, as the model names its steps.
    pub path: Vec<String>,
    pub outcome: Outcome,
    pub trace: Vec<SsiEvent>,
    /// The flavour's model's verdict on the trace (None: a workload outside the model on
    /// libdb, `tier::writes_share_a_page`).
    pub conformance: Option<Result<(), Divergence>>,
    /// Waits that timed out: a step of the path that libdb's threads could not reach in order.
    pub timeouts: usize,
}

impl LibdbReplay {
    /// The refusals libdb returned, one per refused step: `T2 Write(bob) failed SnapshotUnsafe`.
    pub fn refusals(&self) -> Vec<String> {
        self.trace
            .iter()
            .filter(|e| e.failed().is_some())
            .map(SsiEvent::brief)
            .collect()
    }
}

impl fmt::Display for LibdbReplay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} ({}), serializable: {}",
            self.flavour,
            self.outcome.summary(),
            self.outcome.state_text(),
            self.outcome.serializable
        )?;
        let refusals = self.refusals();
        if !refusals.is_empty() {
            write!(f, "; refused: {}", refusals.join(", "))?;
        }
        Ok(())
    }
}

fn point_of(action: &SsiAction) -> (usize, Point) {
    match *action {
        SsiAction::Begin(t) => (t as usize, Point::Begin),
        SsiAction::Exec(t, i) => (t as usize, Point::Stmt(i as usize)),
        SsiAction::Check(t) => (t as usize, Point::Check),
        SsiAction::Record(t) => (t as usize, Point::Record),
        SsiAction::End(t) => (t as usize, Point::End),
        SsiAction::AppAbort(t) => (t as usize, Point::AppAbort),
        SsiAction::Cleanup(t) => (t as usize, Point::Cleanup),
    }
}

/// Transaction t's next point after the path, from the model's last state (None: finished).
fn next_point(model: &Ssi, s: &SsiState, t: usize) -> Option<Point> {
    let txn = &s.txns[t];
    match (txn.status, txn.phase) {
        (Status::Idle, _) => Some(Point::Begin),
        (Status::Running, Phase::Exec) if (txn.pc as usize) < model.workload.programs[t].len() => {
            Some(Point::Stmt(txn.pc as usize))
        }
        (Status::Running, Phase::Exec) => Some(Point::Check),
        (Status::Running, Phase::Checked) => Some(Point::Record),
        (Status::Running, Phase::Recorded) => Some(Point::End),
        (Status::Aborted, _) if !txn.cleaned => Some(Point::Cleanup),
        _ => None,
    }
}

/// The path as a scenario: every point waits for the path's previous one.
pub fn scenario_of(model: &Ssi, path: &[SsiAction]) -> Result<Scenario, ReplayError> {
    let points: Vec<(usize, Point)> = path.iter().map(point_of).collect();
    let mut waits: Vec<Wait> = points
        .windows(2)
        .map(|pair| Wait {
            t: pair[1].0,
            at: pair[1].1,
            u: pair[0].0,
            after: pair[0].1,
        })
        .collect();
    let mut state = model.init_states().remove(0);
    for a in path {
        state = model
            .next_state(&state, *a)
            .expect("a model path's actions are enabled");
    }
    if let Some(&(u, after)) = points.last() {
        for t in 0..model.workload.programs.len() {
            if let Some(at) = next_point(model, &state, t) {
                waits.push(Wait { t, at, u, after });
            }
        }
    }
    let aborting: Vec<usize> = points
        .iter()
        .filter(|(_, p)| *p == Point::AppAbort)
        .map(|(t, _)| *t)
        .collect();
    if aborting.len() > 1 {
        return Err(ReplayError::TwoAppAborts(aborting.len()));
    }
    // The tier runs scenarios by a compiled-in workload's name.
    let script = loadbearing_specs::ssi::workload::NAMES
        .iter()
        .copied()
        .find(|n| *n == model.workload.name)
        .ok_or_else(|| ReplayError::NoScript(model.workload.name.clone()))?;
    Ok(Scenario {
        name: "model path",
        script,
        timing: "the model path's order",
        waits,
        app_abort: aborting.first().copied(),
    })
}

/// Drives `path` of `model` through `flavour` (keys placed one btree per model page).
pub fn replay(
    flavour: Flavour,
    model: &Ssi,
    path: &[SsiAction],
) -> Result<LibdbReplay, ReplayError> {
    let program = script(&model.workload.name)
        .ok_or_else(|| ReplayError::NoScript(model.workload.name.clone()))?;
    let scenario = scenario_of(model, path)?;
    // No jitter: the waits alone order the steps.
    let sched = Schedule::new(scenario.waits.clone(), Duration::from_secs(5), 0, 1);
    let run = attempt(&scenario, Shape::Databases, flavour, &sched)?;
    let conformance =
        checked_model(flavour, &program).map(|m| conform::validate(&m, &run.trace).map(|_| ()));
    Ok(LibdbReplay {
        flavour,
        path: path.iter().map(|a| model.format_action(a)).collect(),
        outcome: run.outcome,
        trace: run.trace,
        conformance,
        timeouts: run.timeouts,
    })
}

/// A must-fail `ssi_*` config's counterexample on real libdb: on the flavour that implements its
/// variant, and on the fix.
#[derive(Debug)]
pub struct ConfigReplay {
    pub config: String,
    /// The property the config violates.
    pub property: String,
    pub broken: LibdbReplay,
    pub fixed: LibdbReplay,
}

impl ConfigReplay {
    /// The broken flavour committed a history with no serial order (for a `Serializable`
    /// counterexample: the violation, reproduced on real code).
    pub fn reproduced(&self) -> bool {
        !self.broken.outcome.serializable
    }

    /// The fix stayed serializable on the same schedule.
    pub fn refused_by_fix(&self) -> bool {
        self.fixed.outcome.serializable
    }
}

/// Why a must-fail config has no replay on libdb.
#[derive(Debug)]
pub struct NotReplayable {
    pub config: String,
    pub why: String,
    /// For a variant libdb has but with versions published at END: its path driven through
    /// that flavour anyway, for what the real engine does with it (not judged: the path
    /// assumes a visibility libdb does not have).
    pub on_libdb: Option<LibdbReplay>,
}

/// Why the replays could not be made (not an outcome: a broken suite or libdb setup).
#[derive(Debug, thiserror::Error)]
pub enum ConfigReplayError {
    #[error("the built-in suite: {0}")]
    Suite(String),
    #[error("{config}: {why}")]
    Config { config: String, why: String },
    #[error("{config}: {source}")]
    Replay {
        config: String,
        #[source]
        source: ReplayError,
    },
}

/// The flavour implementing `model`'s variant, if libdb has one: the variant's knobs, with
/// versions published at the commit record as libdb publishes them (`VisibleAtRecord`).
pub fn flavour_of(model: &Ssi) -> Option<Flavour> {
    let program = script(&model.workload.name)?;
    Flavour::ALL
        .into_iter()
        .find(|f| model_of(*f, &program).as_ref() == Some(model))
}

/// The flavour that has `model`'s variant but publishes versions at the commit record, where
/// `model` publishes them at END.
fn flavour_at_record(model: &Ssi) -> Option<Flavour> {
    if model.visible_at_record {
        return None;
    }
    flavour_of(&Ssi {
        visible_at_record: true,
        ..model.clone()
    })
}

/// Every must-fail `ssi_*` config: those whose variant libdb has, replayed on it and on the fix
/// (the model's shortest counterexample, found here); the others, with the reason.
pub fn must_fail_replays() -> Result<(Vec<ConfigReplay>, Vec<NotReplayable>), ConfigReplayError> {
    use loadbearing_expected::suite::{built_in_shared, Expected};
    use loadbearing_specs::Configured;
    let suite = built_in_shared().map_err(|e| ConfigReplayError::Suite(e.to_string()))?;
    let (mut done, mut skipped) = (Vec::new(), Vec::new());
    for config in suite.iter().filter(|c| c.suite == "ssi") {
        let Expected::Violates(property) = &config.expected else {
            continue;
        };
        let problem = |why: String| ConfigReplayError::Config {
            config: config.name.clone(),
            why,
        };
        let model = Ssi::from_knobs(&config.constants).map_err(|e| problem(e.to_string()))?;
        let flavour = flavour_of(&model);
        let at_record = flavour_at_record(&model);
        if flavour.is_none() && at_record.is_none() {
            skipped.push(NotReplayable {
                config: config.name.clone(),
                why: "no libdb flavour has its variant".into(),
                on_libdb: None,
            });
            continue;
        }
        let report = loadbearing_expected::run::check_model(
            &model,
            config,
            &loadbearing_refinement::check::Options::default(),
        )
        .map_err(|e| problem(e.to_string()))?;
        let cx = report
            .counterexample
            .ok_or_else(|| problem("the model found no counterexample".into()))?;
        let (path, _) = cx.path.into_parts();
        let replayed = |f| {
            replay(f, &model, &path).map_err(|source| ConfigReplayError::Replay {
                config: config.name.clone(),
                source,
            })
        };
        let Some(flavour) = flavour else {
            let f = at_record.expect("checked above");
            skipped.push(NotReplayable {
                config: config.name.clone(),
                why: format!(
                    "its versions are published at END, {f}'s at the commit record: its \
                     counterpart is the ssi_libdb_* config"
                ),
                on_libdb: Some(replayed(f)?),
            });
            continue;
        };
        done.push(ConfigReplay {
            config: config.name.clone(),
            property: property.clone(),
            broken: replayed(flavour)?,
            fixed: replayed(Flavour::Fix)?,
        });
    }
    Ok((done, skipped))
}
