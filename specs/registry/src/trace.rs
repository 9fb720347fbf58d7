//! One trace file judged against one model: a sequence (today's NDJSON: the file's order is
//! the order things happened) by the trace validator, a history (events with `call` and `ret`
//! times: only the times order them) by the linearizability search over the model's steps.
//! The first-write models are fitted to the trace first, so a real store's offsets and writers
//! reach them in the model's terms, or as an error naming the bound they exceed.

use loadbearing_refinement::conform::history::{check_history, sequence_as_history, ModelSteps};
use loadbearing_refinement::conform::{
    parse_trace, validate, Budget, Conform, HistoryOutcome, HistoryVerdict, Limits, Timed, Trace,
    TraceError, TraceEvent, Verdict,
};
use loadbearing_specs::first_write::atomic::CasFirstWriteAtomic;
use loadbearing_specs::first_write::compound::CasFirstWrite;
use loadbearing_specs::first_write::real::{fit, Fitting, Unrepresentable};
use loadbearing_specs::first_write::register::AtomicRow;
use loadbearing_specs::first_write::trace::FirstWriteEvent;
use serde::Serialize;

/// How far a trace is searched.
#[derive(Clone, Copy, Debug, Default)]
pub struct TraceOptions {
    /// For a sequence: the silent steps between two events, the states shown.
    pub limits: Limits,
    /// For a history: how much of the search it may spend before it answers unknown.
    pub budget: Budget,
    /// Read a sequence as a history (each event returns before the next is called; one with
    /// no outcome never returns) and judge it by the history search.
    pub as_history: bool,
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
    History {
        #[serde(flatten)]
        verdict: HistoryVerdict,
        /// Each operation's line in the file, by its index in the history.
        #[serde(skip)]
        lines: Vec<usize>,
    },
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
}

/// How the judgement reads for a CI: as expected, a finding, or undecided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Conforms,
    Diverges,
    /// The history search ran out of its budget: neither conforms nor diverges.
    Unknown,
}

impl TraceReport {
    pub fn decision(&self) -> Decision {
        match &self.judgement {
            Judgement::Sequence(v) if v.conforming => Decision::Conforms,
            Judgement::Sequence(_) => Decision::Diverges,
            Judgement::History { verdict, .. } => match verdict.outcome {
                HistoryOutcome::Linearizable => Decision::Conforms,
                HistoryOutcome::NotLinearizable(_) => Decision::Diverges,
                HistoryOutcome::Unknown { .. } => Decision::Unknown,
            },
        }
    }

    /// For people: the verdict (a divergence, or the failed part of a history, one operation
    /// a line), then the fitting's legend when the model saw other numbers than the file's.
    pub fn text(&self, model: &str) -> String {
        let mut out = match &self.judgement {
            Judgement::Sequence(v) => match &v.divergence {
                None => format!(
                    "{} events conform to {model}; model path: {}\n",
                    v.events,
                    v.witness.clone().unwrap_or_default().join(", ")
                ),
                Some(d) => format!("does not conform to {model}\n{}", d.text()),
            },
            Judgement::History { verdict, lines } => {
                let line_of = |i: usize| lines.get(i).copied().unwrap_or(0);
                format!("history against {model}: {}", verdict.text(&line_of))
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
}

/// Judges a parsed trace against `model`.
pub fn judge<M: Conform>(
    model: &M,
    trace: Trace<M::Event>,
    options: &TraceOptions,
    fitting: Option<Fitting>,
) -> TraceReport
where
    M::State: Eq,
{
    let judgement = match trace {
        Trace::Sequence(events) => Judgement::Sequence(validate(model, &events, options.limits)),
        Trace::History(ops) => judge_history(&ModelSteps { model }, &ops, options),
    };
    TraceReport { judgement, fitting }
}

fn judge_history<S: loadbearing_refinement::conform::Sequential>(
    face: &S,
    ops: &[Timed<S::Op>],
    options: &TraceOptions,
) -> Judgement {
    Judgement::History {
        verdict: check_history(face, ops, options.budget),
        lines: ops.iter().map(|op| op.line).collect(),
    }
}

/// Judges a first-write trace against CasFirstWriteAtomic. A history (or a sequence read as
/// one) is judged on each key's row with the store's own offsets and payloads (`AtomicRow`:
/// the model's steps, with no bound on writes or offsets); so is a sequence that says what the
/// row holds beyond its offset (a value, a tombstone, a delete), which the model's own state
/// cannot; any other sequence is fitted to the model and validated as before.
pub fn judge_atomic(
    model: CasFirstWriteAtomic,
    trace: Trace<FirstWriteEvent>,
    options: &TraceOptions,
) -> Result<TraceReport, Unrepresentable> {
    let ops = match trace {
        Trace::History(ops) => ops,
        Trace::Sequence(events) if events.iter().any(FirstWriteEvent::says_payload) => {
            sequence_as_history(&events)
        }
        sequence => return judge_fitted(model, sequence, options),
    };
    Ok(TraceReport {
        judgement: judge_history(&AtomicRow { model: &model }, &ops, options),
        fitting: None,
    })
}

/// Fits a first-write trace to the model (offsets by rank, a model writer per write), sizes
/// the model to it, and judges it.
pub fn judge_fitted<M: FitsFirstWrites>(
    mut model: M,
    mut trace: Trace<FirstWriteEvent>,
    options: &TraceOptions,
) -> Result<TraceReport, Unrepresentable>
where
    M::State: Eq,
{
    let fitting = fit_trace(&mut trace)?;
    model.size_to(&fitting);
    Ok(judge(&model, trace, options, Some(fitting)))
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
            let mut keys: Vec<&str> = ops.iter().filter_map(|op| op.key.as_deref()).collect();
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
