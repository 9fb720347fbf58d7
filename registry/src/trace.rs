//! First-write traces fitted to the first-write models: a real store's offsets ranked and its
//! writes given the model's writers (or an error naming the bound they exceed), the model sized
//! to the trace, and the trace judged by `loadbearing_trace`'s one judge. CasFirstWriteAtomic's
//! traces are judged on the row instead (`AtomicRow`: the store's own offsets and payloads).

use loadbearing_specs::first_write::atomic::CasFirstWriteAtomic;
use loadbearing_specs::first_write::compound::CasFirstWrite;
use loadbearing_specs::first_write::real::{fit, Fitting, Unrepresentable};
use loadbearing_specs::first_write::register::AtomicRow;
use loadbearing_specs::first_write::trace::FirstWriteEvent;
use loadbearing_trace::history::sequence_as_history;
use loadbearing_trace::{
    judge, judge_history, BeyondAt, Conform, Legend, Trace, TraceError, TraceEvent, TraceOptions,
    TraceReport,
};

/// Why a trace file could not be judged.
#[derive(Debug, thiserror::Error)]
pub enum TraceProblem {
    #[error(transparent)]
    Trace(#[from] TraceError),
    #[error(transparent)]
    Unrepresentable(#[from] Unrepresentable),
    /// A value past what the model holds, at its line.
    #[error(transparent)]
    Beyond(#[from] BeyondAt),
}

/// How a fitting reads in a report: the mapping as data, its legend when the model saw other
/// numbers than the file's.
fn legend(fitting: &Fitting) -> Legend {
    Legend {
        data: serde_json::to_value(fitting).expect("a fitting is plain data"),
        text: (!fitting.is_identity()).then(|| fitting.to_string()),
    }
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
        from_sequence,
        ..TraceReport::of(judge_history(&AtomicRow { model: &model }, &ops, options))
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
    let mut report = judge(&model, trace, options)?;
    report.fitting = Some(legend(&fitting));
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
