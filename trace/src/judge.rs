//! One trace file judged against one model: a sequence (the file's order is the order things
//! happened) or a history (events with `call` and `ret` times: only the times order them), both
//! by the one history search (a sequence is the history in which each event returns before
//! the next is called), so a trace and the same events as a history get one verdict. A value
//! the model cannot hold is an error naming its bound ([`Conform::beyond`]), never a verdict.
//!
//! The judgement has one type from here to the command line: [`TraceReport`], whose
//! [`Decision`] the CLI maps to an exit code.

use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::history::{search_history, sequence_as_history, ModelSteps, Progress};
use crate::{
    parse_trace, validate, Beyond, Conform, HistoryOutcome, HistoryVerdict, Limits, Sequential,
    Spent, Timed, Trace, TraceError, TraceEvent, Verdict,
};

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

/// How a trace's numbers were fitted to the model before it was judged (a store's offsets
/// ranked, its writes given the model's writers): the mapping as data, and its legend for
/// people when the model saw other numbers than the file's.
#[derive(Clone, Debug)]
pub struct Legend {
    /// The mapping, as the report's `fitting` field.
    pub data: Value,
    /// What people read under the verdict; `None` when the model saw the file's own numbers.
    pub text: Option<String>,
}

impl Serialize for Legend {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.data.serialize(serializer)
    }
}

/// A trace file's judgement, and how the trace was fitted to the model when it was.
#[derive(Clone, Debug, Serialize)]
pub struct TraceReport {
    #[serde(flatten)]
    pub judgement: Judgement,
    /// How the trace was fitted to the model (absent when the trace is in the model's own
    /// terms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fitting: Option<Legend>,
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
    /// A judgement of a trace in the model's own terms.
    pub fn of(judgement: Judgement) -> TraceReport {
        TraceReport {
            judgement,
            fitting: None,
            from_sequence: false,
        }
    }

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
        if let Some(legend) = self.fitting.as_ref().and_then(|f| f.text.as_ref()) {
            out.push_str(legend);
        }
        out
    }
}

/// A value of the trace past what the model holds, at its line of the file.
#[derive(Debug, thiserror::Error)]
#[error("{}", .beyond.text(*.line))]
pub struct BeyondAt {
    pub line: usize,
    pub beyond: Beyond,
}

/// The first value past what `model` holds, at its line of the file.
fn within<M: Conform>(model: &M, trace: &Trace<M::Event>) -> Result<(), BeyondAt> {
    let (events, lines): (Vec<M::Event>, Vec<usize>) = match trace {
        Trace::Sequence(events) => (events.clone(), (1..=events.len()).collect()),
        Trace::History(ops) => ops.iter().map(|op| (op.event.clone(), op.line)).unzip(),
    };
    match model.beyond(&events) {
        Some(beyond) => Err(BeyondAt {
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
) -> Result<TraceReport, BeyondAt>
where
    M::State: Eq,
{
    within(model, &trace)?;
    Ok(TraceReport::of(match trace {
        Trace::Sequence(events) => Judgement::Sequence(validate(model, &events, options.limits)),
        Trace::History(ops) => judge_history(&ModelSteps { model }, &ops, options),
    }))
}

/// Judges a history against a sequential face of a model (its steps, or a face of its own such
/// as a row that holds a store's real offsets).
pub fn judge_history<S: Sequential>(
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
