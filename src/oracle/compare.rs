//! The judge against the oracle on generated histories, model by model: each history judged
//! as `conform --trace` judges it and by the naive checker, and, as a sequence (the same
//! events in call order, no times), judged again both ways. Every disagreement is kept, with
//! the history, to become a regression test.

use std::fmt;

use loadbearing_registry::trace::{
    fit_trace, judge_atomic, judge_fitted, FitsFirstWrites, TraceProblem,
};
use loadbearing_specs::cassandra::model::{Cassandra, CassandraAction, CassandraState};
use loadbearing_specs::cassandra::model_835::{
    Cassandra835, Cassandra835Action, Cassandra835State,
};
use loadbearing_specs::cassandra::trace::FlowEvent;
use loadbearing_specs::first_write::atomic::CasFirstWriteAtomic;
use loadbearing_specs::first_write::compound::CasFirstWrite;
use loadbearing_specs::first_write::trace::FirstWriteEvent;
use loadbearing_trace::history::sequence_as_history;
use loadbearing_trace::{judge, Decision, Judgement, TraceOptions, TraceReport};
use loadbearing_trace::{to_history_ndjson, Conform, HistoryVerdict, Timed, Trace, TraceEvent};
use serde::Serialize;

use super::first_write::{self, AtomicRowRef, CompoundRef, Shape};
use super::generate::{self, Render};
use super::{linearizable, ModelRef};

/// A model that reads histories, as the comparison runs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Case {
    /// CasFirstWriteAtomic, guarded, on each key's row (values, tombstones, deletes).
    AtomicGuarded,
    /// CasFirstWriteAtomic with Guarded=false: last-write-wins.
    AtomicLastWriteWins,
    /// CasFirstWriteAtomic with Reap: a TTL may empty the row at any time.
    AtomicReap,
    /// CasFirstWrite, the three statements, fitted to the model.
    Compound,
    /// CasFirstWrite with Reap (a reported `ReapRow`).
    CompoundReap,
    /// Cassandra (the `flow` vocabulary), from walks of the model.
    Cassandra,
    /// Cassandra835, the evolved design, from walks of the model.
    Cassandra835,
}

impl Case {
    pub const ALL: [Case; 7] = [
        Case::AtomicGuarded,
        Case::AtomicLastWriteWins,
        Case::AtomicReap,
        Case::Compound,
        Case::CompoundReap,
        Case::Cassandra,
        Case::Cassandra835,
    ];
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Case::AtomicGuarded => "CasFirstWriteAtomic",
            Case::AtomicLastWriteWins => "CasFirstWriteAtomic Guarded=false",
            Case::AtomicReap => "CasFirstWriteAtomic Reap=true",
            Case::Compound => "CasFirstWrite",
            Case::CompoundReap => "CasFirstWrite Reap=true",
            Case::Cassandra => "Cassandra",
            Case::Cassandra835 => "Cassandra835",
        })
    }
}

/// One history on which the judge and the oracle disagree.
#[derive(Clone, Debug, Serialize)]
pub struct Disagreement {
    /// As a history, or as the sequence of its events.
    pub as_sequence: bool,
    pub judge: String,
    pub oracle: bool,
    pub history: String,
}

/// What a comparison found.
#[derive(Clone, Debug, Serialize)]
pub struct Tally {
    /// The model, as `Case` names it (or a design's own).
    pub case: String,
    /// Histories generated, each judged as a history and as a sequence.
    pub histories: usize,
    pub agreed: usize,
    /// Of the histories, how many the oracle calls linearizable.
    pub linearizable: usize,
    /// Judgements the judge could not make within its budget (never a disagreement hidden).
    pub undecided: usize,
    /// Histories with a value past the model's bounds (a wrong answer can plant one), which
    /// the judge refuses to judge, naming the bound: no verdict to compare.
    pub refused: usize,
    pub disagreements: Vec<Disagreement>,
}

impl Tally {
    pub fn all_agree(&self) -> bool {
        self.disagreements.is_empty() && self.undecided == 0
    }
}

/// A judge's verdict in a word.
fn word(judged: &Result<TraceReport, TraceProblem>) -> Result<bool, String> {
    match judged {
        Ok(report) => match report.decision() {
            Decision::Conforms => Ok(true),
            Decision::Diverges => Ok(false),
            Decision::Unknown(spent) => Err(format!("unknown ({spent})")),
        },
        Err(problem) => Err(format!("error: {problem}")),
    }
}

/// Runs `n` histories of `case` from `seed`.
pub fn run(case: Case, n: usize, seed: u64) -> Tally {
    let label = case.to_string();
    match case {
        Case::AtomicGuarded | Case::AtomicLastWriteWins | Case::AtomicReap => {
            let (guarded, reap) = match case {
                Case::AtomicGuarded => (true, false),
                Case::AtomicLastWriteWins => (false, false),
                _ => (true, true),
            };
            let model = atomic(guarded, reap);
            atomic_histories(&label, n, seed, guarded, reap, |trace| {
                judge_atomic(model.clone(), trace, &options()).map_err(Into::into)
            })
        }
        Case::Compound | Case::CompoundReap => {
            let reap = case == Case::CompoundReap;
            compound_histories(&label, n, seed, reap, |trace| {
                judge_fitted(compound(reap), trace, &options())
            })
        }
        Case::Cassandra => {
            let mut tally = Tally::new(label);
            for i in 0..n {
                let mut rng = fastrand::Rng::with_seed(seed.wrapping_add(i as u64));
                let model = Cassandra {
                    max_offset: 3,
                    guarded: rng.bool(),
                    tombstone: rng.bool(),
                };
                tally.walked(&mut rng, &model, &render_cassandra);
            }
            tally
        }
        Case::Cassandra835 => walks(
            &label,
            &Cassandra835::design(3),
            &render_cassandra_835,
            n,
            seed,
        ),
    }
}

fn options() -> TraceOptions {
    TraceOptions::default()
}

/// A history search's verdict as `conform --trace` reports it.
fn reported(verdict: HistoryVerdict) -> Result<TraceReport, TraceProblem> {
    Ok(TraceReport::of(Judgement::History(verdict)))
}

/// The events of a trace as a history (a sequence's: each returning before the next call).
fn as_history(trace: Trace<FirstWriteEvent>) -> Vec<Timed<FirstWriteEvent>> {
    match trace {
        Trace::Sequence(events) => sequence_as_history(&events),
        Trace::History(ops) => ops,
    }
}

/// The comparison on `n` walks of a model of any design (from `seed`), each rendered as its
/// events by `render`, with one wrong answer half the time: judged as `conform --trace` judges
/// the model's traces and by the naive checker stepping the model's own actions.
pub fn walks<M: Conform>(label: &str, model: &M, render: Render<M>, n: usize, seed: u64) -> Tally
where
    M::State: Eq + std::hash::Hash,
{
    let mut tally = Tally::new(label.to_string());
    for i in 0..n {
        let mut rng = fastrand::Rng::with_seed(seed.wrapping_add(i as u64));
        tally.walked(&mut rng, model, render);
    }
    tally
}

/// `n` generated histories of the compound (from `seed`; with a reap or not), each judged by
/// `judge` and by the compound's reference.
fn compound_histories(
    label: &str,
    n: usize,
    seed: u64,
    reap: bool,
    judge: impl Fn(Trace<FirstWriteEvent>) -> Result<TraceReport, TraceProblem>,
) -> Tally {
    let mut tally = Tally::new(label.to_string());
    let shape = Shape {
        guarded: true,
        reap,
        compound: true,
        payloads: false,
        keys: false,
    };
    let oracle = |h: &[Timed<FirstWriteEvent>]| {
        let (steps, writes) = first_write::writes_of(h);
        let reference = CompoundRef {
            guarded: true,
            insert_if_not_exists: true,
            retry: true,
            reap,
            writes,
        };
        linearizable(&reference, &steps)
    };
    for i in 0..n {
        let mut rng = fastrand::Rng::with_seed(seed.wrapping_add(i as u64));
        let history = first_write_history(&mut rng, shape);
        tally.compare(&history, &judge, oracle);
    }
    tally
}

/// `n` generated histories of the atomic row (from `seed`), each judged by `judge` and by the
/// row's reference.
fn atomic_histories(
    label: &str,
    n: usize,
    seed: u64,
    guarded: bool,
    reap: bool,
    judge: impl Fn(Trace<FirstWriteEvent>) -> Result<TraceReport, TraceProblem>,
) -> Tally {
    let mut tally = Tally::new(label.to_string());
    let shape = Shape {
        guarded,
        reap,
        compound: false,
        payloads: true,
        keys: true,
    };
    let reference = AtomicRowRef { guarded, reap };
    for i in 0..n {
        let mut rng = fastrand::Rng::with_seed(seed.wrapping_add(i as u64));
        let history = first_write_history(&mut rng, shape);
        tally.compare(&history, &judge, |h| linearizable(&reference, h));
    }
    tally
}

/// The comparison of the compound's histories with a judge of the caller's (a face of the
/// model the trace is fitted to, as `conform --trace` fits it): how a planted bug in a face is
/// shown to be caught.
pub fn compound_with(
    n: usize,
    seed: u64,
    reap: bool,
    judge: impl Fn(&CasFirstWrite, &[Timed<FirstWriteEvent>]) -> HistoryVerdict,
) -> Tally {
    compound_histories(
        "CasFirstWrite (a face of the caller's)",
        n,
        seed,
        reap,
        |trace| {
            let mut trace = Trace::History(as_history(trace));
            let fitting = fit_trace(&mut trace)?;
            let mut model = compound(reap);
            model.size_to(&fitting);
            reported(judge(&model, &as_history(trace)))
        },
    )
}

/// The comparison of the atomic row's histories with a judge of the caller's.
pub fn atomic_with(
    n: usize,
    seed: u64,
    guarded: bool,
    reap: bool,
    judge: impl Fn(&CasFirstWriteAtomic, &[Timed<FirstWriteEvent>]) -> HistoryVerdict,
) -> Tally {
    let model = atomic(guarded, reap);
    atomic_histories(
        "CasFirstWriteAtomic (a face of the caller's)",
        n,
        seed,
        guarded,
        reap,
        |trace| reported(judge(&model, &as_history(trace))),
    )
}

/// CasFirstWriteAtomic with these guards (its writers and offsets are the row judge's own).
fn atomic(guarded: bool, reap: bool) -> CasFirstWriteAtomic {
    CasFirstWriteAtomic {
        writers: 2,
        max_offset: 2,
        guarded,
        reap,
    }
}

/// CasFirstWrite as the suite's configs build it (guarded, insert-if-not-exists, one retry).
fn compound(reap: bool) -> CasFirstWrite {
    CasFirstWrite {
        writers: 2,
        max_offset: 2,
        guarded: true,
        reap,
        insert_if_not_exists: true,
        retry: true,
        spec_guarded: true,
    }
}

/// A first-write history, with one wrong answer half the time.
fn first_write_history(rng: &mut fastrand::Rng, shape: Shape) -> Vec<Timed<FirstWriteEvent>> {
    let mut history = first_write::history(rng, shape);
    if rng.bool() {
        first_write::perturb(rng, &mut history, shape.payloads);
    }
    history
}

impl Tally {
    fn new(case: String) -> Tally {
        Tally {
            case,
            histories: 0,
            agreed: 0,
            linearizable: 0,
            undecided: 0,
            refused: 0,
            disagreements: Vec::new(),
        }
    }

    /// A walk of `model`, with one wrong answer half the time, judged by the model's own face.
    fn walked<M: Conform>(&mut self, rng: &mut fastrand::Rng, model: &M, render: Render<M>)
    where
        M::State: Eq + std::hash::Hash,
    {
        let steps = rng.usize(3..=10);
        let mut history = generate::walk(model, rng, steps, render, true);
        if rng.bool() {
            generate::perturb(rng, &mut history);
        }
        let reference = ModelRef { model };
        self.compare(
            &history,
            |trace| Ok(judge(model, trace, &options())?),
            |h| linearizable(&reference, h),
        );
    }

    /// One history judged both ways, and the same events as a sequence judged both ways.
    fn compare<E: TraceEvent>(
        &mut self,
        history: &[Timed<E>],
        judge: impl Fn(Trace<E>) -> Result<TraceReport, TraceProblem>,
        oracle: impl Fn(&[Timed<E>]) -> bool,
    ) {
        self.histories += 1;
        let expected = oracle(history);
        self.linearizable += expected as usize;
        self.one(
            false,
            history,
            judge(Trace::History(history.to_vec())),
            expected,
        );
        // The same events in call order, as one key's sequence (each returns before the next
        // is called; one with no outcome never returns).
        let mut by_call: Vec<&Timed<E>> = history.iter().collect();
        by_call.sort_by_key(|op| (op.key.clone(), op.call, op.line));
        let keyed: Vec<_> = by_call.iter().map(|op| op.key.clone()).collect();
        if keyed.windows(2).all(|w| w[0] == w[1]) {
            let events: Vec<E> = by_call.iter().map(|op| op.event.clone()).collect();
            let as_history = sequence_as_history(&events);
            let expected = oracle(&as_history);
            self.one(true, &as_history, judge(Trace::Sequence(events)), expected);
        }
    }

    fn one<E: TraceEvent>(
        &mut self,
        as_sequence: bool,
        history: &[Timed<E>],
        judged: Result<TraceReport, TraceProblem>,
        expected: bool,
    ) {
        if let Err(TraceProblem::Beyond(_)) = judged {
            self.refused += 1;
            return;
        }
        match word(&judged) {
            Ok(verdict) if verdict == expected => self.agreed += 1,
            Ok(verdict) => self.disagreements.push(Disagreement {
                as_sequence,
                judge: if verdict {
                    "linearizable"
                } else {
                    "not linearizable"
                }
                .into(),
                oracle: expected,
                history: to_history_ndjson(history),
            }),
            Err(why) => {
                self.undecided += 1;
                self.disagreements.push(Disagreement {
                    as_sequence,
                    judge: why,
                    oracle: expected,
                    history: to_history_ndjson(history),
                });
            }
        }
    }
}

/// The first event that reports `action` from `before` and fits its step to `after`, of the
/// candidates in the order given (the most that can be said first).
fn first_fitting<M: Conform>(
    model: &M,
    before: &M::State,
    action: &M::Action,
    after: &M::State,
    candidates: impl IntoIterator<Item = M::Event>,
) -> Option<M::Event> {
    candidates.into_iter().find(|event| {
        if model.is_stutter(event) {
            return false;
        }
        model.reports(action, event) && model.observe(before, after, event).is_ok()
    })
}

/// A flow write's events, with each answer the implementation could give.
fn flow_writes(
    zombie: Option<u8>,
    offset: u8,
    op: loadbearing_specs::infra::vocab::Op,
    stored: loadbearing_specs::infra::vocab::Cell,
    max: u8,
) -> Vec<FlowEvent> {
    let mut out = Vec::new();
    for applied in [Some(true), Some(false), None] {
        for presented in std::iter::once(Some(offset as u64))
            .chain((0..=max as u64).map(Some))
            .chain([None])
        {
            let (offset, stored) = (offset as u64, Some(stored));
            out.push(match zombie {
                None => FlowEvent::OwnerFold {
                    offset,
                    op,
                    applied,
                    presented,
                    stored,
                },
                Some(zombie) => FlowEvent::ZombieWrite {
                    zombie,
                    offset,
                    op,
                    applied,
                    presented,
                    stored,
                },
            });
        }
    }
    out
}

fn render_cassandra(
    model: &Cassandra,
    before: &CassandraState,
    action: &CassandraAction,
    after: &CassandraState,
) -> Option<FlowEvent> {
    let candidates = match *action {
        CassandraAction::OwnerFold => {
            let o = before.owner_pos + 1;
            flow_writes(None, o, before.op.at(o), after.stored, model.max_offset)
        }
        CassandraAction::ZombieWrite(m) => {
            flow_writes(Some(1), m, before.op.at(m), after.stored, model.max_offset)
        }
        CassandraAction::OwnerRecover => vec![FlowEvent::OwnerRecover {
            owner_state: Some(after.owner_state),
            stored: Some(after.stored),
        }],
    };
    first_fitting(model, before, action, after, candidates)
}

fn render_cassandra_835(
    model: &Cassandra835,
    before: &Cassandra835State,
    action: &Cassandra835Action,
    after: &Cassandra835State,
) -> Option<FlowEvent> {
    let recovered = FlowEvent::OwnerRecover {
        owner_state: Some(after.owner_state),
        stored: Some(after.store),
    };
    let candidates = match *action {
        Cassandra835Action::OwnerFold => {
            let o = before.owner_pos + 1;
            flow_writes(None, o, before.op.at(o), after.store, model.max_offset)
        }
        Cassandra835Action::ZombieWrite(m) => {
            flow_writes(Some(1), m, before.op.at(m), after.store, model.max_offset)
        }
        Cassandra835Action::OwnerRecover => vec![recovered],
        Cassandra835Action::Handover(c) => vec![FlowEvent::Handover {
            resume_at: c as u64,
            owner_state: Some(after.owner_state),
            stored: Some(after.store),
        }],
        Cassandra835Action::SpuriousConflict
        | Cassandra835Action::ReseedFloor(_)
        | Cassandra835Action::Reap => Vec::new(),
    };
    first_fitting(model, before, action, after, candidates)
}
