//! A conformance target: an implementation built one way, the model it must (or must not)
//! follow, and how it is exercised; its result, and the one judge of every result.

use std::sync::Arc;
use std::time::{Duration, Instant};

use loadbearing_expected::progress::{grouped, Line as ProgressLine};
use loadbearing_specs::first_write::atomic::CasFirstWriteAtomic;
use loadbearing_specs::first_write::register::AtomicRow;
use loadbearing_specs::first_write::trace::FirstWriteEvent;
use loadbearing_trace::history::ModelSteps;
use loadbearing_trace::{
    check_history, to_history_ndjson, to_ndjson, validate, Budget, Conform, Divergence,
    HistoryOutcome, HistoryVerdict, Limits, Sequential, Timed, TraceEvent,
};
use serde::Serialize;

use crate::backend::{Backend, BackendKind};
use crate::error::Error;
use crate::mismatch::Mismatch;
use crate::replays::ReplayOutcome;
use crate::target_id::TargetId;
use loadbearing_specs::Configured;

pub use crate::model_name::ModelName;

/// What a target must show.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Expect {
    /// The implementation as designed: every trace is a behaviour of the model, and every
    /// model path driven through it agrees with the model.
    Conforms,
    /// A planted mutant (or a rejected design): conformance must catch it.
    Diverges,
}

impl Expect {
    pub fn name(self) -> &'static str {
        match self {
            Expect::Conforms => "conforms",
            Expect::Diverges => "diverges",
        }
    }
}

/// One conformance target. The table of them is `targets::ALL`.
pub trait Target: Sync {
    /// Which target this is.
    fn id(&self) -> TargetId;

    /// The name `conform` takes and reports.
    fn name(&self) -> &'static str {
        self.id().name()
    }

    /// The model the implementation's traces are validated against, on `backend`: named by its
    /// type ([`ModelName::of`]), and held to it by [`TargetResult::tally`], which refuses a
    /// trace validated against any other.
    fn model(&self, backend: BackendKind) -> ModelName;

    /// The backends it runs on; the first is its default.
    fn backends(&self) -> &'static [BackendKind];

    /// What it must show.
    fn expect(&self) -> Expect;

    /// Exercises the implementation, both ways, and records what it saw in `result` (the
    /// verdict is [`TargetResult::judge`]'s, from what was recorded).
    fn run(&self, settings: &Settings, result: &mut TargetResult) -> Result<(), Error>;
}

/// How a target runs.
pub struct Settings {
    pub backend: Backend,
    /// Traces per target (runs of the implementation; for the model paths, random walks).
    pub traces: usize,
    /// Concurrent writers in the store races and group commits.
    pub writers: usize,
    pub seed: u64,
    /// Where to write every trace validated (`conform --save DIR`): `DIR/<target>/NNNN.ndjson`,
    /// each one `conform --trace FILE --model <the target's model>` reads back.
    pub save: Option<std::path::PathBuf>,
}

#[derive(Clone, Debug, Serialize)]
pub struct TargetResult {
    pub target: TargetId,
    pub model: ModelName,
    pub backend: &'static str,
    pub seed: u64,
    pub traces: usize,
    pub events: usize,
    pub conforming: usize,
    pub divergences: Vec<Divergence>,
    /// Divergences found in all (only the first few are kept in `divergences`).
    pub divergent_traces: usize,
    /// Traces the search could not decide within its budget: neither conforming nor
    /// diverging, so a target with one is not ok whatever it must show.
    pub undecided_traces: usize,
    /// Histories (of writers that ran concurrently) that no order of the model explains: the
    /// first few, each with the search's verdict. Absent from the JSON when there is none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub histories: Vec<FailedHistory>,
    /// What this target must show.
    pub expected: Expect,
    pub ok: bool,
    pub seconds: f64,
    /// Time spent validating traces (the rest drives the implementation).
    pub validation_seconds: f64,
    /// Model → implementation: model steps driven, and the mismatches between the
    /// implementation and the model.
    pub steps: usize,
    pub mismatches: Vec<Mismatch>,
    /// Must-fail configs whose counterexample was driven through the implementation.
    pub replays: Vec<Replay>,
    /// Why the target could not run to its end (its server did not start, its harness failed):
    /// it then shows nothing and is not ok, and the run it belongs to is incomplete. Absent
    /// from the JSON of a target that ran. Shared, so that a result stays cloneable.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "as_message")]
    pub error: Option<Arc<Error>>,
    /// The live line of a long run (stderr; not part of the result).
    #[serde(skip)]
    progress: Line,
    /// Where each trace validated is written, and the first write that failed.
    #[serde(skip)]
    saving: Option<Saving>,
}

/// A run's traces written as they are validated.
#[derive(Clone, Debug)]
struct Saving {
    dir: std::path::PathBuf,
    failed: Option<Arc<std::io::Error>>,
}

impl Saving {
    /// Writes trace number `n` (1-based); a failed write is kept and ends the run.
    fn write(&mut self, n: usize, ndjson: &str) {
        if self.failed.is_none() {
            if let Err(e) = std::fs::write(self.dir.join(format!("{n:04}.ndjson")), ndjson) {
                self.failed = Some(Arc::new(e));
            }
        }
    }
}

/// The progress line a result carries while its target runs; a copy of a result has none.
#[derive(Default)]
struct Line(Option<ProgressLine>);

impl Clone for Line {
    fn clone(&self) -> Line {
        Line(None)
    }
}

impl std::fmt::Debug for Line {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Line")
    }
}

/// A history no order of the model explains: the operations as NDJSON (what `conform --trace`
/// reads back), and the search's verdict, as data and for people.
#[derive(Clone, Debug, Serialize)]
pub struct FailedHistory {
    pub history: String,
    /// Each operation's interval and what it did, in the history's order (what the verdict's
    /// operation indexes point into): the data a timeline is drawn from.
    pub operations: Vec<Interval>,
    pub verdict: HistoryVerdict,
    pub text: String,
}

/// One operation of a history: called at `call`, returned at `ret` (never: `None`).
#[derive(Clone, Debug, Serialize)]
pub struct Interval {
    pub call: u64,
    pub ret: Option<u64>,
    pub what: String,
}

/// A must-fail config's counterexample driven through the broken and the guarded
/// implementation.
#[derive(Clone, Debug, Serialize)]
pub struct Replay {
    pub config: String,
    /// The model steps, in order.
    pub steps: Vec<String>,
    /// What the broken implementation did (the violation, reproduced).
    pub broken: String,
    /// What the guarded implementation did with the same schedule.
    pub guarded: String,
    /// The same, typed: what the verdict was judged on.
    pub broken_outcome: ReplayOutcome,
    pub guarded_outcome: ReplayOutcome,
}

impl TargetResult {
    /// A target's result before it has run on `backend`: nothing seen yet.
    fn new(target: &dyn Target, backend: BackendKind, seed: u64) -> TargetResult {
        TargetResult {
            target: target.id(),
            model: target.model(backend),
            backend: backend.name(),
            seed,
            traces: 0,
            events: 0,
            conforming: 0,
            divergences: Vec::new(),
            divergent_traces: 0,
            undecided_traces: 0,
            histories: Vec::new(),
            expected: target.expect(),
            ok: false,
            seconds: 0.0,
            validation_seconds: 0.0,
            steps: 0,
            mismatches: Vec::new(),
            replays: Vec::new(),
            error: None,
            progress: Line(None),
            saving: None,
        }
    }

    /// The result of a target that could not run on `backend`: `error`, after `spent`.
    pub fn errored(
        target: &dyn Target,
        backend: BackendKind,
        seed: u64,
        error: Error,
        spent: Duration,
    ) -> TargetResult {
        TargetResult {
            seconds: spent.as_secs_f64(),
            error: Some(Arc::new(error)),
            ..TargetResult::new(target, backend, seed)
        }
    }

    /// Judges and keeps one replayed counterexample: each run, whether it showed the config's
    /// violation and what it did; `broken` is `None` where this target does not drive the
    /// broken implementation.
    pub fn replayed(
        &mut self,
        spec: &crate::replays::ReplaySpec,
        steps: Vec<String>,
        broken: Option<(bool, String)>,
        guarded: (bool, String),
    ) {
        let outcome = |showed: bool| ReplayOutcome::of(spec.shows, showed);
        let broken_outcome = broken
            .as_ref()
            .map_or(ReplayOutcome::NotDriven, |(showed, _)| outcome(*showed));
        let guarded_outcome = outcome(guarded.0);
        self.mismatches.extend(crate::mismatch::judge_replay(
            spec,
            broken_outcome,
            guarded_outcome,
        ));
        self.replays.push(Replay {
            config: spec.config.clone(),
            steps,
            broken: broken.map_or("not driven".into(), |(_, did)| did),
            guarded: guarded.1,
            broken_outcome,
            guarded_outcome,
        });
    }

    /// Counts one trace of `events` events validated against model `M` (a mismatch when the
    /// target declares another), and saves it (`ndjson`) when the run saves its traces.
    fn count<M: Configured>(&mut self, events: usize, ndjson: impl FnOnce() -> String) {
        if ModelName::of::<M>() != self.model {
            self.mismatches.push(Mismatch::ModelDiffers {
                declared: self.model,
                validated: ModelName::of::<M>(),
            });
        }
        self.traces += 1;
        self.events += events;
        if let Some(saving) = &mut self.saving {
            saving.write(self.traces, &ndjson());
        }
    }

    /// Validates one trace and counts it; the first few divergences are kept. A trace validated
    /// against another model than the one the target declares is a mismatch.
    pub fn tally<M: Conform + Configured>(&mut self, model: &M, events: &[M::Event]) {
        self.count::<M>(events.len(), || to_ndjson(events));
        let validating = Instant::now();
        let verdict = validate(model, events, Limits::default());
        self.validation_seconds += validating.elapsed().as_secs_f64();
        if verdict.conforming {
            self.conforming += 1;
        } else if verdict.incomplete.is_some() {
            self.undecided_traces += 1;
        } else {
            self.divergent_traces += 1;
            if self.divergences.len() < 3 {
                self.divergences.extend(verdict.divergence);
            }
        }
        let (target, backend, traces, events) =
            (self.target, self.backend, self.traces, self.events);
        if let Some(line) = &mut self.progress.0 {
            line.tick_with(|p| {
                format!(
                    "  … {target} on {backend}: {traces} traces, {} events, {:.0}s",
                    grouped(events as u64),
                    p.seconds()
                )
            });
        }
    }

    /// Judges one history (operations with call and return times: writers that really ran
    /// concurrently) and counts it; the first few that are not linearizable are kept. A search
    /// that runs out of its budget counts against the target: unknown is never conforming.
    pub fn tally_history<M: Conform + Configured>(&mut self, model: &M, history: &[Timed<M::Event>])
    where
        M::State: std::hash::Hash + Eq,
    {
        self.tally_judged::<M, _>(&ModelSteps { model }, history);
    }

    /// Judges one first-write history by the atomic model's row judge, which compares what a
    /// read found whole (value and tombstone too, which the model's own state does not hold).
    pub fn tally_rows(&mut self, model: &CasFirstWriteAtomic, history: &[Timed<FirstWriteEvent>]) {
        self.tally_judged::<CasFirstWriteAtomic, _>(&AtomicRow { model }, history);
    }

    /// Judges one history by `steps`, a sequential face of model `M`, and counts it.
    fn tally_judged<M: Configured, S: Sequential>(&mut self, steps: &S, history: &[Timed<S::Op>])
    where
        S::Op: TraceEvent,
    {
        self.count::<M>(history.len(), || to_history_ndjson(history));
        let validating = Instant::now();
        let verdict = check_history(steps, history, Budget::default());
        self.validation_seconds += validating.elapsed().as_secs_f64();
        if verdict.conforming() {
            self.conforming += 1;
        } else if matches!(verdict.outcome, HistoryOutcome::Unknown { .. }) {
            self.undecided_traces += 1;
        } else {
            self.divergent_traces += 1;
            if self.histories.len() < 3 {
                self.histories.push(FailedHistory {
                    history: to_history_ndjson(history),
                    operations: history
                        .iter()
                        .map(|op| Interval {
                            call: op.call,
                            ret: op.ret,
                            what: steps.describe(&op.event),
                        })
                        .collect(),
                    text: verdict.text(),
                    verdict,
                });
            }
        }
    }

    /// The verdict, the same for every target: no mismatch between a driven model path and
    /// the implementation (a replayed counterexample that did not do what it must is one),
    /// and the traces show what the target must show: all of them conform, or at least one
    /// diverges.
    pub fn judge(&mut self) {
        // A target that must conform and checked nothing (no trace validated, no model step
        // driven) would pass vacuously: that is a mismatch, not a pass.
        if self.expected == Expect::Conforms && self.traces == 0 && self.steps == 0 {
            self.mismatches.push(Mismatch::NothingChecked);
        }
        let traces_as_expected = self.undecided_traces == 0
            && match self.expected {
                Expect::Conforms => self.conforming == self.traces,
                Expect::Diverges => self.divergent_traces > 0,
            };
        self.ok = traces_as_expected && self.mismatches.is_empty();
    }
}

/// An error as its message: what the JSON of a target that could not run carries.
fn as_message<S: serde::Serializer>(error: &Option<Arc<Error>>, out: S) -> Result<S::Ok, S::Error> {
    match error {
        Some(error) => out.collect_str(error),
        None => out.serialize_none(),
    }
}

/// Whether `target` can run on `kind` in this build: one it runs on, and compiled in.
pub fn check_backend(target: &dyn Target, kind: BackendKind) -> Result<(), Error> {
    if !target.backends().contains(&kind) {
        return Err(Error::WrongBackend {
            target: target.name(),
            runs_on: target.backends(),
            backend: kind,
        });
    }
    if !kind.compiled_in() {
        return Err(Error::NotCompiled(kind));
    }
    Ok(())
}

/// Runs `target` on `settings.backend`, which must be one it runs on.
pub fn run(target: &dyn Target, settings: &Settings) -> Result<TargetResult, Error> {
    check_backend(target, settings.backend.kind())?;
    let started = Instant::now();
    let mut result = TargetResult::new(target, settings.backend.kind(), settings.seed);
    result.progress.0 = Some(ProgressLine::new());
    if let Some(dir) = &settings.save {
        let dir = dir.join(target.name());
        std::fs::create_dir_all(&dir)?;
        result.saving = Some(Saving { dir, failed: None });
    }
    target.run(settings, &mut result)?;
    if let Some(failed) = result.saving.take().and_then(|s| s.failed) {
        return Err(Error::Save(failed));
    }
    // Dropping the line erases it from the terminal, before the result is printed.
    result.progress.0 = None;
    result.judge();
    result.seconds = started.elapsed().as_secs_f64();
    Ok(result)
}
