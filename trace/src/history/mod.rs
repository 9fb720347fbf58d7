//! Histories: operations with call and return times, judged against a model.
//!
//! An operation was called at `call` and returned at `ret`, on one clock (`call <= ret`); one
//! that never returned has an unknown outcome. Operation A precedes B iff A returned before B
//! was called (`A.ret < B.call`); overlapping operations may take effect in either order. A
//! history conforms when some order of its operations that respects precedence is a behaviour
//! of the model (linearizability, Herlihy and Wing): each known operation takes effect at one
//! point between its call and its return; one of unknown outcome at some point after its call,
//! or never; the model's silent steps at any point, any number of times.
//!
//! The history is split by the key each operation names ([`Timed::key`]) and by
//! [`Sequential::key`], and each part judged alone (Horn and Kroening's P-compositionality:
//! linearizability is local, so a history is linearizable iff each key's is): operations on
//! different keys never constrain each other. Each part is searched by just-in-time
//! linearization (`search.rs`). A search that runs out of its budget (configurations, time,
//! memory) answers [`HistoryOutcome::Unknown`], naming the budget and the part, never a verdict;
//! one that finds an order shows it ([`PartOrder`]); one that finds none shows the longest order
//! the model allows and why nothing could come next ([`NotLinearizable`]).
//!
//! What a model contributes is a [`Sequential`] face: the states an operation may lead to from
//! a state, or why it cannot take effect there. [`ModelSteps`] is that face for any [`Conform`]
//! model, built from the model's own actions; a model may offer a cheaper one (a key's row
//! instead of every writer's state) as long as each step is the model's.
//!
//! A sequence (the order events happened in, no times) is the history in which each event
//! returns before the next is called ([`sequence_as_history`]): `validate` judges it by this
//! same search, so a sequence and the same events as a history get one verdict.

use std::collections::BTreeMap;
use std::fmt;
use std::hash::Hash;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::wire::{Key, Timed};
use super::Conform;

mod greedy;
mod search;
mod sets;
mod verdict;

pub use verdict::{
    HistoryOutcome, HistoryVerdict, NotLinearizable, PartName, PartOrder, PartSearched, Placed,
    Refused,
};

use search::{Meter, Part};
pub(crate) use search::{Searched, Step};

/// A model read as a sequential object: the states an operation may lead to.
///
/// Besides its steps, a face may state facts about them that let the search skip work
/// ([`Sequential::doomed`], [`Sequential::blind`], [`Sequential::same_effect`],
/// [`Sequential::repeatable_in`], [`Sequential::settled`]). Each must hold of every state and
/// every operation: a wrong one is a wrong verdict. The defaults state nothing.
pub trait Sequential {
    type Op;
    type State: Clone + Eq + Hash + fmt::Debug;
    /// The part of the history an operation belongs to; parts are judged apart.
    type Key: Clone + Eq + Hash + Ord + fmt::Debug;
    /// Why an operation with a known outcome cannot take effect from a state.
    type Why: fmt::Display;

    fn key(&self, op: &Self::Op) -> Self::Key;

    /// The states a part may start from (one, unless what the history reveals leaves a choice).
    fn init(&self, key: &Self::Key, ops: &[&Self::Op]) -> Vec<Self::State>;

    /// The states after `op`, whose outcome is known, from `state` (pushed onto `after`), or
    /// why none fits what it observed.
    fn step(
        &self,
        state: &Self::State,
        op: &Self::Op,
        after: &mut Vec<Self::State>,
    ) -> Result<(), Self::Why>;

    /// [`Sequential::step`] without the reason: whether any state fits (the search's inner
    /// step, where a reason built and dropped costs more than the step).
    fn apply(&self, state: &Self::State, op: &Self::Op, after: &mut Vec<Self::State>) -> bool {
        self.step(state, op, after).is_ok() && !after.is_empty()
    }

    /// The states after `op`, whose outcome is unknown, from `state` if it took effect there
    /// (none: it cannot take effect there; it may still never take effect).
    fn step_unknown(&self, state: &Self::State, op: &Self::Op, after: &mut Vec<Self::State>);

    /// Whether an operation of unknown outcome may be taken as often as the search likes: its
    /// effect taken twice is never another state than taken once (a guarded write of a value
    /// that can only grow). Such an operation is not counted as used, which keeps a history
    /// with many unanswered operations from the search over which of them landed.
    fn repeatable(&self, _op: &Self::Op) -> bool {
        false
    }

    /// Which of a part's operations are repeatable: each by [`Sequential::repeatable`] unless
    /// the answer depends on the part's other operations (two writes of one offset with
    /// different values, say), which a model says by overriding this.
    fn repeatable_in(&self, part: &[&Self::Op]) -> Vec<bool> {
        part.iter().map(|op| self.repeatable(op)).collect()
    }

    /// Whether an operation of unknown outcome changes nothing from `state`, nor from any
    /// state the model reaches from it (a guarded write below a row that can only grow): the
    /// search stops offering it there.
    fn settled(&self, _state: &Self::State, _op: &Self::Op) -> bool {
        false
    }

    /// Whether two operations of unknown outcome have identical effects from every state (two
    /// writes of one value by two clients): the search uses them as a count, not a set.
    fn same_effect(&self, _a: &Self::Op, _b: &Self::Op) -> bool {
        false
    }

    /// Whether an operation with a known outcome can never take effect from `state`, nor from
    /// any state the model reaches from it (a write acknowledged below a row that only grows):
    /// a configuration that has still to place it is dropped at once.
    fn doomed(&self, _state: &Self::State, _op: &Self::Op) -> bool {
        false
    }

    /// Whether an operation takes effect from every state, to the same states whatever the
    /// state before (a last-write-wins write): one placed right after an operation of unknown
    /// outcome erases it, so the search does not place it there.
    fn blind(&self, _op: &Self::Op) -> bool {
        false
    }

    /// Steps no operation reports (a TTL reaping a row), which may happen at any point.
    fn silent(&self, _state: &Self::State, _after: &mut Vec<Self::State>) {}

    /// The operation as people read it.
    fn describe(&self, op: &Self::Op) -> String;

    /// The state as people read it.
    fn describe_state(&self, state: &Self::State) -> String {
        format!("{state:?}")
    }
}

/// How far a history search may go before it answers [`HistoryOutcome::Unknown`].
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Configurations (operations placed, model state) explored, over every part.
    pub configurations: u64,
    pub time: Option<Duration>,
    /// Resident memory the process may hold, in bytes.
    pub memory: Option<u64>,
}

impl Budget {
    pub const DEFAULT_CONFIGURATIONS: u64 = 20_000_000;
}

impl Default for Budget {
    /// 20 million configurations, no time limit, nine tenths of the machine's memory.
    fn default() -> Self {
        Budget {
            configurations: Budget::DEFAULT_CONFIGURATIONS,
            time: None,
            memory: loadbearing_refinement::budget::default_max_memory(),
        }
    }
}

/// Which budget a search ran out of, and its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "budget", content = "limit")]
pub enum Spent {
    Configurations(u64),
    /// Milliseconds.
    Time(u64),
    /// Bytes of resident memory.
    Memory(u64),
}

impl Spent {
    /// The budget's one-word name, as `incomplete (memory)` shows it.
    pub fn kind(&self) -> &'static str {
        match self {
            Spent::Configurations(_) => "configurations",
            Spent::Time(_) => "time",
            Spent::Memory(_) => "memory",
        }
    }
}

impl fmt::Display for Spent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Spent::Configurations(n) => write!(
                f,
                "the configuration budget ({n} configurations; raise it with --max-configurations)"
            ),
            Spent::Time(ms) => write!(
                f,
                "the time budget ({:?}; raise it with --timeout-secs)",
                Duration::from_millis(*ms)
            ),
            Spent::Memory(bytes) => write!(
                f,
                "the memory budget ({} MiB resident; raise it with --max-memory)",
                bytes >> 20
            ),
        }
    }
}

/// Where a long search is, for a progress line.
#[derive(Clone, Debug)]
pub struct Progress {
    /// The part being searched (0-based) of how many.
    pub part: usize,
    pub parts: usize,
    /// Calls and returns of the part read so far, of how many.
    pub events_done: usize,
    pub events: usize,
    /// Configurations held at the current return.
    pub held: usize,
    /// Configurations explored so far, over every part.
    pub configurations: u64,
    pub seconds: f64,
}

/// A sequence read as a history: each event returns before the next is called, and an event
/// with no outcome never returns (it may take effect any time after its place, or never).
pub fn sequence_as_history<E: super::TraceEvent>(events: &[E]) -> Vec<Timed<E>> {
    events
        .iter()
        .enumerate()
        .map(|(i, e)| Timed {
            call: 2 * i as u64,
            ret: e.has_outcome().then_some(2 * i as u64),
            key: None,
            event: e.clone(),
            line: i + 1,
        })
        .collect()
}

/// Judges `history` against the model's sequential face.
pub fn check_history<S: Sequential>(
    model: &S,
    history: &[Timed<S::Op>],
    budget: Budget,
) -> HistoryVerdict {
    search_history(model, history, budget, &mut |_| {})
}

/// [`check_history`], telling `progress` where it is every few thousand configurations.
pub fn search_history<S: Sequential>(
    model: &S,
    history: &[Timed<S::Op>],
    budget: Budget,
    progress: &mut dyn FnMut(&Progress),
) -> HistoryVerdict {
    let parts = partition(model, history);
    let mut meter = Meter {
        budget,
        started: Instant::now(),
        configurations: 0,
        widest: 0,
        progress,
        part: 0,
        parts: parts.len(),
        events_done: 0,
        events: 0,
    };
    let mut verdict = HistoryVerdict {
        operations: history.len(),
        parts: parts.len(),
        configurations: 0,
        widest: 0,
        searched: Vec::with_capacity(parts.len()),
        outcome: HistoryOutcome::Linearizable { orders: Vec::new() },
    };
    let mut orders = Vec::with_capacity(parts.len());
    for (p, ((named, key), ops)) in parts.iter().enumerate() {
        meter.part = p;
        let before = meter.configurations;
        let name = PartName::new(named.as_ref(), key);
        let found = search_part(model, history, key, ops, &mut meter, true);
        verdict.searched.push(PartSearched {
            part: name.clone(),
            operations: ops.len(),
            configurations: meter.configurations - before,
        });
        verdict.configurations = meter.configurations;
        verdict.widest = meter.widest;
        match found {
            Searched::Order { last } => {
                orders.push(verdict::order(model, history, ops, name, last.as_ref()))
            }
            Searched::None {
                due,
                deepest,
                unplaced_pending,
                ..
            } => {
                verdict.outcome = HistoryOutcome::NotLinearizable(Box::new(verdict::failure(
                    model,
                    history,
                    ops,
                    name,
                    due,
                    &deepest,
                    &unplaced_pending,
                )));
                return verdict;
            }
            Searched::Spent(spent) => {
                verdict.outcome = HistoryOutcome::Unknown { part: name, spent };
                return verdict;
            }
        }
    }
    verdict.outcome = HistoryOutcome::Linearizable { orders };
    verdict
}

/// The whole history searched as one part (a sequence's: it names no key), with the search's
/// typed result and the most configurations it held at one return.
pub(crate) fn search_whole<S: Sequential>(
    model: &S,
    history: &[Timed<S::Op>],
    budget: Budget,
) -> (Searched<S::State>, usize) {
    let Some(first) = history.first() else {
        return (Searched::Order { last: None }, 0);
    };
    let mut quiet = |_: &Progress| {};
    let mut meter = Meter {
        budget,
        started: Instant::now(),
        configurations: 0,
        widest: 0,
        progress: &mut quiet,
        part: 0,
        parts: 1,
        events_done: 0,
        events: 0,
    };
    let ops: Vec<usize> = (0..history.len()).collect();
    let found = search_part(
        model,
        history,
        &model.key(&first.event),
        &ops,
        &mut meter,
        false,
    );
    (found, meter.widest)
}

/// The parts of a history: per key the history names (`Timed::key`) and, within it, the
/// model's own (`Sequential::key`), each part's operations by index.
type Parts<K> = BTreeMap<(Option<Key>, K), Vec<usize>>;

fn partition<S: Sequential>(model: &S, history: &[Timed<S::Op>]) -> Parts<S::Key> {
    let mut parts: Parts<S::Key> = BTreeMap::new();
    for (i, op) in history.iter().enumerate() {
        parts
            .entry((op.key.clone(), model.key(&op.event)))
            .or_default()
            .push(i);
    }
    parts
}

/// Searches one part from the model's initial states for it: with `greedy`, first the fast
/// path that only ever finds orders (`greedy.rs`), then, when it finds none, the complete search.
fn search_part<S: Sequential>(
    model: &S,
    history: &[Timed<S::Op>],
    key: &S::Key,
    ops: &[usize],
    meter: &mut Meter,
    greedy: bool,
) -> Searched<S::State> {
    let timed: Vec<&Timed<S::Op>> = ops.iter().map(|&i| &history[i]).collect();
    let events: Vec<&S::Op> = timed.iter().map(|op| &op.event).collect();
    let initial = model.init(key, &events);
    let known = timed.iter().any(|op| op.ret.is_some());
    if initial.is_empty() && known {
        // No state of the model starts this part: no order of it is a behaviour (the report
        // says so: it places nothing from no state).
        return Searched::None {
            due: (0..timed.len())
                .find(|&k| timed[k].ret.is_some())
                .expect("a known operation"),
            deepest: None,
            unplaced_pending: Vec::new(),
            held: Vec::new(),
        };
    }
    let part = Part::new(model, timed);
    if greedy {
        // A few configurations an operation: a linearizable part needs about one.
        let limit = (4 * ops.len() as u64 + 1024).min(
            meter
                .budget
                .configurations
                .saturating_sub(meter.configurations),
        );
        let (found, explored) = part.greedy(&initial, limit);
        meter.configurations += explored;
        if let Some(last) = found {
            return Searched::Order { last: Some(last) };
        }
    }
    part.search(initial, meter)
}

/// Any [`Conform`] model as a sequential object: an operation's steps are the model actions its
/// event reports whose observation fits (a stutter where the event reports none), an unknown
/// operation's steps are the actions the model would place for it ([`Conform::unresolved`]) that
/// it enables where it is placed, and the model's silent actions may happen anywhere. A part
/// (the operations on one key the history names, or the whole history) starts from the states
/// the model builds from that part's events.
pub struct ModelSteps<'a, M: Conform> {
    pub model: &'a M,
}

impl<M: Conform> ModelSteps<'_, M> {
    /// The model actions that report `event` from `state` and fit what it observed, with the
    /// state each leads to; `why_not` collects why the others do not (when asked).
    fn reported(
        &self,
        state: &M::State,
        event: &M::Event,
        after: &mut Vec<M::State>,
        mut why_not: Option<&mut Vec<String>>,
    ) {
        let model = self.model;
        if model.is_stutter(event) {
            match model.observe(state, state, event) {
                Ok(()) => after.push(state.clone()),
                Err(why) => {
                    if let Some(why_not) = why_not {
                        why_not.push(why.to_string());
                    }
                }
            }
            return;
        }
        let mut actions = Vec::new();
        model.actions(state, &mut actions);
        for action in actions {
            if !model.reports(&action, event) {
                continue;
            }
            let shown = why_not.as_ref().map(|_| model.format_action(&action));
            match model.next_state(state, action) {
                None => {
                    if let (Some(why_not), Some(shown)) = (why_not.as_deref_mut(), shown) {
                        why_not.push(format!("{shown}: not enabled"));
                    }
                }
                Some(next) => match model.observe(state, &next, event) {
                    Ok(()) => after.push(next),
                    Err(why) => {
                        if let (Some(why_not), Some(shown)) = (why_not.as_deref_mut(), shown) {
                            why_not.push(format!("{shown}: {why}"));
                        }
                    }
                },
            }
        }
    }
}

impl<M: Conform> Sequential for ModelSteps<'_, M>
where
    M::State: Hash + Eq,
{
    type Op = M::Event;
    type State = M::State;
    type Key = ();
    type Why = String;

    fn key(&self, _op: &M::Event) {}

    fn init(&self, _key: &(), ops: &[&M::Event]) -> Vec<M::State> {
        let events: Vec<M::Event> = ops.iter().map(|&op| op.clone()).collect();
        let mut seen = std::collections::HashSet::new();
        self.model
            .initial_candidates(&events)
            .into_iter()
            .filter(|s| seen.insert(loadbearing_refinement::fingerprint::fingerprint(s)))
            .collect()
    }

    fn step(
        &self,
        state: &M::State,
        event: &M::Event,
        after: &mut Vec<M::State>,
    ) -> Result<(), String> {
        let mut why_not = Vec::new();
        self.reported(state, event, after, Some(&mut why_not));
        if !after.is_empty() {
            return Ok(());
        }
        Err(if why_not.is_empty() {
            self.model
                .disabled_reason(state, event)
                .unwrap_or_else(|| format!("no allowed action reports `{}`", event_action(event)))
        } else {
            why_not.join("; ")
        })
    }

    fn apply(&self, state: &M::State, event: &M::Event, after: &mut Vec<M::State>) -> bool {
        self.reported(state, event, after, None);
        !after.is_empty()
    }

    /// Only where the model enables the action, and where what identifies the event fits
    /// the step (`observe`: an unanswered statement names its writer's offset): it takes
    /// effect as the model's step would, or not at all.
    fn step_unknown(&self, state: &M::State, event: &M::Event, after: &mut Vec<M::State>) {
        let model = self.model;
        let unresolved = model.unresolved(std::slice::from_ref(event));
        if unresolved.is_empty() {
            return;
        }
        let mut actions = Vec::new();
        model.actions(state, &mut actions);
        for action in actions {
            if unresolved.contains(&action) {
                if let Some(next) = model.next_state(state, action) {
                    if model.observe(state, &next, event).is_ok() {
                        after.push(next);
                    }
                }
            }
        }
    }

    /// Two unanswered events that read the same (the model's adapter sees nothing else).
    fn same_effect(&self, a: &M::Event, b: &M::Event) -> bool {
        use super::TraceEvent;
        a.to_line() == b.to_line()
    }

    fn silent(&self, state: &M::State, after: &mut Vec<M::State>) {
        let mut actions = Vec::new();
        self.model.actions(state, &mut actions);
        for action in actions {
            if self.model.is_silent(&action) {
                if let Some(next) = self.model.next_state(state, action) {
                    after.push(next);
                }
            }
        }
    }

    fn describe(&self, event: &M::Event) -> String {
        use super::TraceEvent;
        event.to_line()
    }

    fn describe_state(&self, state: &M::State) -> String {
        self.model
            .variables(state)
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("  ")
    }
}

fn event_action<E: super::TraceEvent>(event: &E) -> String {
    event.action().to_string()
}

#[cfg(test)]
mod tests;
