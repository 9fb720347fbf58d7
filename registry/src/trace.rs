//! One trace file judged against one model: a sequence (the file's order is the order things
//! happened) or a history (events with `call` and `ret` times: only the times order them), both
//! by the one history search (a sequence is the history in which each event returns before
//! the next is called), so a trace and the same events as a history get one verdict. The
//! first-write models are fitted to the trace first, so a real store's offsets and writers
//! reach them in the model's terms, or as an error naming the bound they exceed; a value any
//! other model cannot hold is an error naming its bound too ([`Conform::beyond`]).

use loadbearing_refinement::conform::history::{
    search_history, sequence_as_history, ModelSteps, Progress,
};
use loadbearing_refinement::conform::{
    parse_trace, validate, Beyond, Conform, HistoryOutcome, HistoryVerdict, Limits, Sequential,
    Spent, Timed, Trace, TraceError, TraceEvent, Verdict,
};
use loadbearing_specs::first_write::atomic::CasFirstWriteAtomic;
use loadbearing_specs::first_write::compound::CasFirstWrite;
use loadbearing_specs::first_write::real::{fit, Fitting, Unrepresentable};
use loadbearing_specs::first_write::register::AtomicRow;
use loadbearing_specs::first_write::trace::FirstWriteEvent;
use serde::Serialize;

/// How far a trace is searched, and who hears of a long search.
#[derive(Clone, Copy, Default)]
pub struct TraceOptions {
    /// How much of the search it may spend before it answers unknown (`limits.budget`), and
    /// for a sequence the states shown per divergence.
    pub limits: Limits,
    /// Read a sequence as a history (each event returns before the next is called; one with
    /// no outcome never returns) and report it as one.
    pub as_history: bool,
    /// Told where a long history search is, every few thousand configurations.
    pub progress: Option<fn(&Progress)>,
}

/// Reads an NDJSON trace: a sequence, a history, or a sequence read as a history when the
/// options say so.
pub fn read_trace<E: TraceEvent>(
    ndjson: &str,
    options: &TraceOptions,
) -> Result<Trace<E>, TraceError> {
    Ok(match parse_trace::<E>(ndjson)? {
        Trace::Sequence(events) if options.as_history => {
            Trace::History(sequence_as_history(&events))
        }
        trace => trace,
    })
}

/// What a trace file was found to be.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Judgement {
    /// A sequence, and the model path it follows or where it diverged.
    Sequence(Verdict),
    /// A history, and whether some order its times allow is a behaviour of the model.
    History(HistoryVerdict),
}

/// A trace file's judgement, and how the trace was fitted to the model when it was.
#[derive(Clone, Debug, Serialize)]
pub struct TraceReport {
    #[serde(flatten)]
    pub judgement: Judgement,
    /// The first-write models: the real offset of each model offset and the write of each
    /// model writer (absent when the trace is in the model's own terms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fitting: Option<Fitting>,
    /// The file was a sequence, judged as the history of its events (each returning before
    /// the next is called).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub from_sequence: bool,
}

/// How the judgement reads for a CI: as expected, a finding, or undecided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Conforms,
    Diverges,
    /// The search ran out of a budget: neither conforms nor diverges.
    Unknown(Spent),
}

impl TraceReport {
    pub fn decision(&self) -> Decision {
        match &self.judgement {
            Judgement::Sequence(v) => match v.incomplete {
                Some(spent) => Decision::Unknown(spent),
                None if v.conforming => Decision::Conforms,
                None => Decision::Diverges,
            },
            Judgement::History(verdict) => match verdict.outcome {
                HistoryOutcome::Linearizable { .. } => Decision::Conforms,
                HistoryOutcome::NotLinearizable(_) => Decision::Diverges,
                HistoryOutcome::Unknown { spent, .. } => Decision::Unknown(spent),
            },
        }
    }

    /// Each event of the report as the file wrote it (`as_written`, by index): the model judged
    /// them fitted (its offsets ranks, its writers a write each), which the legend explains.
    pub fn show_as_written(&mut self, as_written: &[String]) {
        let line = |i: usize| as_written.get(i).cloned();
        match &mut self.judgement {
            Judgement::Sequence(v) => {
                if let Some(d) = &mut v.divergence {
                    if let Some(written) = line(d.matched) {
                        d.event = serde_json::from_str(&written).unwrap_or(d.event.take());
                        d.as_written = written;
                    }
                }
            }
            Judgement::History(v) => {
                let placed = match &mut v.outcome {
                    HistoryOutcome::Linearizable { orders } => orders
                        .iter_mut()
                        .flat_map(|o| o.placed.iter_mut())
                        .collect(),
                    HistoryOutcome::NotLinearizable(why) => {
                        for r in &mut why.refused {
                            r.what = line(r.op).unwrap_or(r.what.clone());
                        }
                        why.placed.iter_mut().collect()
                    }
                    HistoryOutcome::Unknown { .. } => Vec::new(),
                };
                for p in placed {
                    if let Some(written) = p.op.and_then(line) {
                        p.what = written;
                    }
                }
            }
        }
    }

    /// For people: the verdict (a divergence, the failed part of a history, or a history's
    /// order, one step a line), then the fitting's legend when the model saw other numbers
    /// than the file's.
    pub fn text(&self, model: &str) -> String {
        let mut out = match &self.judgement {
            Judgement::Sequence(v) => match (&v.divergence, v.incomplete) {
                (_, Some(spent)) => format!(
                    "unknown against {model}: the search spent {spent} before it could tell\n"
                ),
                (None, None) => format!(
                    "{} events conform to {model}; model path: {}\n",
                    v.events,
                    v.witness.clone().unwrap_or_default().join(", ")
                ),
                (Some(d), None) => format!("does not conform to {model}\n{}", d.text()),
            },
            Judgement::History(verdict) if self.from_sequence => format!(
                "sequence against {model}, as the history of its events (each returning before the next is called): {}",
                verdict.text()
            ),
            Judgement::History(verdict) => {
                format!("history against {model}: {}", verdict.text())
            }
        };
        if let Some(fitting) = self.fitting.as_ref().filter(|f| !f.is_identity()) {
            out.push_str(&fitting.to_string());
        }
        out
    }
}

/// Why a trace file could not be judged.
#[derive(Debug, thiserror::Error)]
pub enum TraceProblem {
    #[error(transparent)]
    Trace(#[from] TraceError),
    #[error(transparent)]
    Unrepresentable(#[from] Unrepresentable),
    /// A value past what the model holds, at its line.
    #[error("{}", .beyond.text(*.line))]
    Beyond { line: usize, beyond: Beyond },
}

/// The first value past what `model` holds, at its line of the file.
fn within<M: Conform>(model: &M, trace: &Trace<M::Event>) -> Result<(), TraceProblem> {
    let (events, lines): (Vec<M::Event>, Vec<usize>) = match trace {
        Trace::Sequence(events) => (events.clone(), (1..=events.len()).collect()),
        Trace::History(ops) => ops.iter().map(|op| (op.event.clone(), op.line)).unzip(),
    };
    match model.beyond(&events) {
        Some(beyond) => Err(TraceProblem::Beyond {
            line: lines.get(beyond.event).copied().unwrap_or(beyond.event + 1),
            beyond,
        }),
        None => Ok(()),
    }
}

/// Judges a parsed trace against `model`: a value it cannot hold is an error, not a verdict.
pub fn judge<M: Conform>(
    model: &M,
    trace: Trace<M::Event>,
    options: &TraceOptions,
    fitting: Option<Fitting>,
) -> Result<TraceReport, TraceProblem>
where
    M::State: Eq,
{
    within(model, &trace)?;
    let judgement = match trace {
        Trace::Sequence(events) => Judgement::Sequence(validate(model, &events, options.limits)),
        Trace::History(ops) => judge_history(&ModelSteps { model }, &ops, options),
    };
    Ok(TraceReport {
        judgement,
        fitting,
        from_sequence: false,
    })
}

fn judge_history<S: Sequential>(
    face: &S,
    ops: &[Timed<S::Op>],
    options: &TraceOptions,
) -> Judgement {
    let mut progress = |at: &Progress| {
        if let Some(tell) = options.progress {
            tell(at)
        }
    };
    Judgement::History(search_history(
        face,
        ops,
        options.limits.budget,
        &mut progress,
    ))
}

/// Judges a first-write trace against CasFirstWriteAtomic on each key's row with the store's
/// own offsets and payloads (`AtomicRow`: the model's steps, with no bound on writes, writers
/// or offsets). A sequence is the history in which each event returns before the next is
/// called: one judge for both.
pub fn judge_atomic(
    model: CasFirstWriteAtomic,
    trace: Trace<FirstWriteEvent>,
    options: &TraceOptions,
) -> Result<TraceReport, Unrepresentable> {
    let (ops, from_sequence) = match trace {
        Trace::History(ops) => (ops, false),
        Trace::Sequence(events) => (sequence_as_history(&events), true),
    };
    Ok(TraceReport {
        judgement: judge_history(&AtomicRow { model: &model }, &ops, options),
        fitting: None,
        from_sequence,
    })
}

/// Fits a first-write trace to the model (offsets by rank, a model writer per write), sizes
/// the model to it, and judges it.
pub fn judge_fitted<M: FitsFirstWrites>(
    mut model: M,
    mut trace: Trace<FirstWriteEvent>,
    options: &TraceOptions,
) -> Result<TraceReport, TraceProblem>
where
    M::State: Eq,
{
    // The events as the file wrote them, for the report: the model sees them fitted.
    let as_written: Vec<String> = trace.events().map(TraceEvent::to_line).collect();
    let fitting = fit_trace(&mut trace)?;
    model.size_to(&fitting);
    let mut report = judge(&model, trace, options, Some(fitting))?;
    report.show_as_written(&as_written);
    Ok(report)
}

/// A first-write model sized to a fitted trace: as many writers as the trace has writes, as
/// many offsets as it names.
pub trait FitsFirstWrites: Conform<Event = FirstWriteEvent> {
    fn size_to(&mut self, fitting: &Fitting);
}

impl FitsFirstWrites for CasFirstWrite {
    fn size_to(&mut self, fitting: &Fitting) {
        self.writers = fitting.writers();
        self.max_offset = fitting.max_offset();
    }
}

impl FitsFirstWrites for CasFirstWriteAtomic {
    fn size_to(&mut self, fitting: &Fitting) {
        self.writers = fitting.writers();
        self.max_offset = fitting.max_offset();
    }
}

/// Fits a first-write trace to the models (offsets by rank, a model writer per write), in the
/// order the writers made their statements: the file's for a sequence, the calls' for a
/// history.
pub fn fit_trace(trace: &mut Trace<FirstWriteEvent>) -> Result<Fitting, Unrepresentable> {
    match trace {
        Trace::Sequence(events) => fit(events),
        Trace::History(ops) => {
            // The fitting gives the trace's writes the model's writers: one key's writes.
            let mut keys: Vec<_> = ops.iter().filter_map(|op| op.key.as_ref()).collect();
            keys.sort_unstable();
            keys.dedup();
            if keys.len() > 1 {
                return Err(Unrepresentable::Keys { keys: keys.len() });
            }
            let mut order: Vec<usize> = (0..ops.len()).collect();
            order.sort_by_key(|&i| (ops[i].call, i));
            let mut events: Vec<FirstWriteEvent> =
                order.iter().map(|&i| ops[i].event.clone()).collect();
            let fitting = fit(&mut events)?;
            for (&i, event) in order.iter().zip(events) {
                ops[i].event = event;
            }
            Ok(fitting)
        }
    }
}
