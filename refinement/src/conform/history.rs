//! Histories: operations with call and return times, judged against a model.
//!
//! An operation was called at `call` and returned at `ret`, on one clock (`call <= ret`); one
//! that never returned has an unknown outcome. Operation A precedes B iff A returned before B
//! was called (`A.ret < B.call`); overlapping operations may take effect in either order. A
//! history conforms when some order of its operations that respects precedence is a behaviour
//! of the model (linearizability, Herlihy and Wing): each known operation takes effect at one
//! point between its call and its return; one of unknown outcome at some point after its call,
//! or never.
//!
//! The search is Wing and Gong's, with Lowe's memoisation: a configuration is the set of
//! operations placed and the model state, and a configuration already explored is not explored
//! again. The history is split by the key each operation names ([`Timed::key`]) and by
//! [`Sequential::key`], and each part judged alone (Horn and Kroening's P-compositionality:
//! linearizability is local, so a history is linearizable iff each key's is): operations on
//! different keys never constrain each other.
//! A search that runs out of its budget answers [`HistoryOutcome::Unknown`], never a verdict.
//!
//! What a model contributes is a [`Sequential`] face: the states an operation may lead to from
//! a state, or why it cannot take effect there. [`ModelSteps`] is that face for any [`Conform`]
//! model, built from the model's own actions; a model may offer a cheaper one (a key's row
//! instead of every writer's state) as long as each step is the model's.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::hash::Hash;
use std::time::{Duration, Instant};

use hashbrown::HashSet;
use serde::Serialize;

use super::wire::Timed;
use super::Conform;

/// A model read as a sequential object: the states an operation may lead to.
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

    /// The states after `op`, whose outcome is unknown, from `state` if it took effect there
    /// (none: it cannot; it may still never take effect).
    fn step_unknown(&self, state: &Self::State, op: &Self::Op, after: &mut Vec<Self::State>);

    /// Whether an operation of unknown outcome may be taken as often as the search likes: its
    /// effect taken twice is never another state than taken once (a guarded write of a value
    /// that can only grow). Such an operation is not tracked as placed, which keeps a history
    /// with many unanswered operations from the exponential search over which of them landed.
    fn repeatable(&self, _op: &Self::Op) -> bool {
        false
    }

    /// Which of a part's operations are repeatable: each by [`Sequential::repeatable`] unless
    /// the answer depends on the part's other operations (two writes of one offset with
    /// different values, say), which a model says by overriding this.
    fn repeatable_in(&self, part: &[&Self::Op]) -> Vec<bool> {
        part.iter().map(|op| self.repeatable(op)).collect()
    }

    /// Whether a repeatable operation changes nothing from `state`, nor from any state the
    /// model reaches from it (a guarded write below a row that can only grow). The search then
    /// stops offering it below this point, which keeps the operations still to choose from
    /// few when many unanswered ones are pending.
    fn settled(&self, _state: &Self::State, _op: &Self::Op) -> bool {
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
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            configurations: 20_000_000,
            time: None,
        }
    }
}

/// Which budget a search ran out of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Spent {
    Configurations,
    Time,
}

impl fmt::Display for Spent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Spent::Configurations => write!(f, "the configuration budget"),
            Spent::Time => write!(f, "the time budget"),
        }
    }
}

/// One operation placed in an order the model allows, with the state after it.
#[derive(Clone, Debug, Serialize)]
pub struct Placed {
    /// The operation's index in the history (`None`: a silent step of the model).
    pub op: Option<usize>,
    pub what: String,
    pub state: String,
}

/// An operation that had to take effect next and could not, and why.
#[derive(Clone, Debug, Serialize)]
pub struct Refused {
    pub op: usize,
    pub what: String,
    pub why: String,
}

/// Why a part of the history is no behaviour of the model: the longest order of its operations
/// the model allows (the longest linearizable prefix), and at its end, each operation that
/// could have come next with why the model refused it.
#[derive(Clone, Debug, Serialize)]
pub struct NotLinearizable {
    /// The part (its key, as the model names it).
    pub key: String,
    /// The operations of the part, by index in the history.
    pub ops: Vec<usize>,
    /// The longest order found, from the part's initial state.
    pub initial: String,
    pub placed: Vec<Placed>,
    /// The state where it ended.
    pub state: String,
    pub refused: Vec<Refused>,
    /// Known operations of the part left unplaced there.
    pub unplaced: Vec<usize>,
}

/// The verdict on a history.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum HistoryOutcome {
    /// Every part has an order the model allows.
    Linearizable,
    /// A part has none: the first such part, explained.
    NotLinearizable(Box<NotLinearizable>),
    /// The search ran out of its budget before it could tell.
    Unknown { spent: Spent },
}

/// What a search found, and what it cost.
#[derive(Clone, Debug, Serialize)]
pub struct HistoryVerdict {
    pub operations: usize,
    pub parts: usize,
    /// Configurations explored, over every part.
    pub configurations: u64,
    #[serde(flatten)]
    pub outcome: HistoryOutcome,
}

impl HistoryVerdict {
    pub fn conforming(&self) -> bool {
        matches!(self.outcome, HistoryOutcome::Linearizable)
    }

    /// For people: the verdict, and for a part with no order, what could be placed and what
    /// could not, one operation a line.
    pub fn text(&self, history_lines: &dyn Fn(usize) -> usize) -> String {
        let mut out = String::new();
        match &self.outcome {
            HistoryOutcome::Linearizable => {
                let _ = writeln!(
                    out,
                    "linearizable: {} operations in {} part(s), {} configurations explored",
                    self.operations, self.parts, self.configurations
                );
            }
            HistoryOutcome::Unknown { spent } => {
                let _ = writeln!(
                    out,
                    "unknown: the search spent {spent} ({} configurations) before it could tell",
                    self.configurations
                );
            }
            HistoryOutcome::NotLinearizable(why) => out.push_str(&why.text(history_lines)),
        }
        out
    }
}

impl NotLinearizable {
    /// The failed part for people: the longest order the model allows, then each operation
    /// that had to come next and why the model refused it.
    pub fn text(&self, line_of: &dyn Fn(usize) -> usize) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "not linearizable: key {}: no order of its {} operations is a behaviour of the model",
            self.key,
            self.ops.len()
        );
        let _ = writeln!(
            out,
            "the longest order the model allows places {} of them, from {}:",
            self.placed.iter().filter(|p| p.op.is_some()).count(),
            self.initial
        );
        for p in &self.placed {
            match p.op {
                Some(op) => {
                    let _ = writeln!(out, "  line {:>5}  {}  → {}", line_of(op), p.what, p.state);
                }
                None => {
                    let _ = writeln!(out, "              {}  → {}", p.what, p.state);
                }
            }
        }
        let _ = writeln!(
            out,
            "then nothing the history allows next fits, in {}:",
            self.state
        );
        for r in &self.refused {
            let _ = writeln!(out, "  line {:>5}  {}: {}", line_of(r.op), r.what, r.why);
        }
        if self.refused.is_empty() {
            let _ = writeln!(
                out,
                "  (no operation may come next: each left must wait for one that was refused)"
            );
        }
        let _ = writeln!(
            out,
            "{} operation(s) with a known outcome never placed",
            self.unplaced.len()
        );
        out
    }
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
    let started = Instant::now();
    // A part is one key's operations: the key the history names (`Timed::key`), and within it
    // the model's own (`Sequential::key`).
    let mut parts: BTreeMap<(Option<&str>, S::Key), Vec<usize>> = BTreeMap::new();
    for (i, op) in history.iter().enumerate() {
        parts
            .entry((op.key.as_deref(), model.key(&op.event)))
            .or_default()
            .push(i);
    }
    let mut verdict = HistoryVerdict {
        operations: history.len(),
        parts: parts.len(),
        configurations: 0,
        outcome: HistoryOutcome::Linearizable,
    };
    for (key, ops) in &parts {
        let mut search = Search {
            model,
            history,
            ops,
            repeatable: Vec::new(),
            explored: verdict.configurations,
            budget,
            started,
        };
        let found = search.run(&key.0, &key.1);
        verdict.configurations = search.explored;
        match found {
            Found::Order => {}
            Found::None(failure) => {
                verdict.outcome = HistoryOutcome::NotLinearizable(failure);
                return verdict;
            }
            Found::OutOfBudget(spent) => {
                verdict.outcome = HistoryOutcome::Unknown { spent };
                return verdict;
            }
        }
    }
    verdict
}

/// A part as people read it: the key the history names, the model's key, or both.
fn part_name<K: fmt::Debug>(named: &Option<&str>, key: &K) -> String {
    let model = format!("{key:?}");
    match (named, model.as_str()) {
        (None, _) => model,
        (Some(named), "()") => format!("{named:?}"),
        (Some(named), _) => format!("{named:?} {model}"),
    }
}

enum Found {
    Order,
    None(Box<NotLinearizable>),
    OutOfBudget(Spent),
}

/// The call and return entries of a part's operations in time order, as a doubly linked list
/// over an array, so that placing an operation (unlinking both its entries) and taking it back
/// are constant time ("dancing links").
struct Entries {
    /// Per entry: the operation (its index in the part) and whether it is the call.
    op: Vec<usize>,
    is_call: Vec<bool>,
    /// Per entry: the previous and next entry; entry 0 is the head, `NONE` the end.
    prev: Vec<usize>,
    next: Vec<usize>,
    /// Per operation of the part: its call entry and its return entry (`NONE`: unknown).
    call_of: Vec<usize>,
    ret_of: Vec<usize>,
}

const NONE: usize = usize::MAX;

impl Entries {
    fn new<E>(history: &[Timed<E>], ops: &[usize]) -> Entries {
        // (time, calls before returns at one instant: intervals are closed, so an operation
        // returning at t and one called at t overlap, part index)
        let mut events: Vec<(u64, u8, usize)> = Vec::with_capacity(ops.len() * 2);
        for (k, &i) in ops.iter().enumerate() {
            events.push((history[i].call, 0, k));
            if let Some(r) = history[i].ret {
                events.push((r, 1, k));
            }
        }
        events.sort_unstable();
        let n = events.len() + 1;
        let mut entries = Entries {
            op: vec![NONE; n],
            is_call: vec![false; n],
            prev: (0..n).map(|e| e.wrapping_sub(1)).collect(),
            next: (1..=n).collect(),
            call_of: vec![NONE; ops.len()],
            ret_of: vec![NONE; ops.len()],
        };
        entries.prev[0] = NONE;
        entries.next[n - 1] = NONE;
        for (e, &(_, kind, k)) in events.iter().enumerate() {
            let e = e + 1;
            entries.op[e] = k;
            entries.is_call[e] = kind == 0;
            if kind == 0 {
                entries.call_of[k] = e;
            } else {
                entries.ret_of[k] = e;
            }
        }
        entries
    }

    fn unlink(&mut self, e: usize) {
        let (p, n) = (self.prev[e], self.next[e]);
        self.next[p] = n;
        if n != NONE {
            self.prev[n] = p;
        }
    }

    fn relink(&mut self, e: usize) {
        let (p, n) = (self.prev[e], self.next[e]);
        self.next[p] = e;
        if n != NONE {
            self.prev[n] = e;
        }
    }

    /// Takes operation `k` out of the list (its return first linked back last).
    fn lift(&mut self, k: usize) {
        self.unlink(self.call_of[k]);
        if self.ret_of[k] != NONE {
            self.unlink(self.ret_of[k]);
        }
    }

    fn unlift(&mut self, k: usize) {
        if self.ret_of[k] != NONE {
            self.relink(self.ret_of[k]);
        }
        self.relink(self.call_of[k]);
    }

    /// The operations that may take effect next: every call before the first return still in
    /// the list (each is minimal in the precedence among the operations not yet placed).
    fn candidates(&self, into: &mut Vec<usize>) {
        into.clear();
        let mut e = self.next[0];
        while e != NONE && self.is_call[e] {
            into.push(self.op[e]);
            e = self.next[e];
        }
    }
}

/// The set of a part's operations placed so far, as bits.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Placement(Box<[u64]>);

impl Placement {
    fn new(n: usize) -> Placement {
        Placement(vec![0; n.div_ceil(64)].into_boxed_slice())
    }

    fn flip(&mut self, k: usize) {
        self.0[k / 64] ^= 1 << (k % 64);
    }
}

/// A choice at a configuration: an operation of the part (`None`: a silent step) and the state
/// after it.
struct Choice<St> {
    op: Option<usize>,
    after: St,
}

struct Frame<St> {
    /// The state this frame's choices start from.
    state: St,
    choices: Vec<Choice<St>>,
    next: usize,
    /// The choice this frame took to reach the frame above it, undone when it is popped.
    taken: Option<Option<usize>>,
    /// Repeatable operations settled in this frame's state, taken out of the entries here and
    /// put back when it is popped.
    settled: Vec<usize>,
}

struct Search<'a, S: Sequential> {
    model: &'a S,
    history: &'a [Timed<S::Op>],
    /// The part: indices into `history`.
    ops: &'a [usize],
    /// Per operation of the part, whether it is repeatable (`Sequential::repeatable_in`).
    repeatable: Vec<bool>,
    explored: u64,
    budget: Budget,
    started: Instant,
}

impl<S: Sequential> Search<'_, S> {
    fn op(&self, k: usize) -> &S::Op {
        &self.history[self.ops[k]].event
    }

    fn known(&self, k: usize) -> bool {
        self.history[self.ops[k]].ret.is_some()
    }

    /// Whether operation `k` is placed once (tracked) or may be taken again (repeatable).
    fn tracked(&self, k: usize) -> bool {
        self.known(k) || !self.repeatable[k]
    }

    fn out_of_budget(&self) -> Option<Spent> {
        if self.explored >= self.budget.configurations {
            return Some(Spent::Configurations);
        }
        if let Some(limit) = self.budget.time {
            // The clock is read every few thousand configurations.
            if self.explored.is_multiple_of(4096) && self.started.elapsed() >= limit {
                return Some(Spent::Time);
            }
        }
        None
    }

    fn choices(
        &self,
        state: &S::State,
        candidates: &[usize],
        after: &mut Vec<S::State>,
    ) -> Vec<Choice<S::State>> {
        let mut choices = Vec::new();
        for &k in candidates {
            after.clear();
            if self.known(k) {
                let _ = self.model.step(state, self.op(k), after);
            } else {
                self.model.step_unknown(state, self.op(k), after);
                // A repeatable operation that changes nothing leads back to this very
                // configuration (nothing placed, the same state): no choice.
                if !self.tracked(k) {
                    after.retain(|next| next != state);
                }
            }
            for next in after.drain(..) {
                choices.push(Choice {
                    op: Some(k),
                    after: next,
                });
            }
        }
        after.clear();
        self.model.silent(state, after);
        for next in after.drain(..) {
            choices.push(Choice {
                op: None,
                after: next,
            });
        }
        choices
    }

    /// The operations that may take effect next from `state`, after taking out of the entries
    /// every repeatable one settled there (returned, to put back).
    fn candidates(
        &self,
        entries: &mut Entries,
        state: &S::State,
        candidates: &mut Vec<usize>,
    ) -> Vec<usize> {
        entries.candidates(candidates);
        let mut settled = Vec::new();
        candidates.retain(|&k| {
            let settles = !self.tracked(k) && self.model.settled(state, self.op(k));
            if settles {
                entries.lift(k);
                settled.push(k);
            }
            !settles
        });
        settled
    }

    fn run(&mut self, named: &Option<&str>, key: &S::Key) -> Found {
        let n = self.ops.len();
        let history = self.history;
        let part: Vec<&S::Op> = self.ops.iter().map(|&i| &history[i].event).collect();
        self.repeatable = self.model.repeatable_in(&part);
        let initial = self.model.init(key, &part);
        let mut entries = Entries::new(self.history, self.ops);
        let mut known_left = (0..n).filter(|&k| self.known(k)).count();
        if known_left == 0 {
            return Found::Order;
        }
        if initial.is_empty() {
            // No state of the model starts this part: no order of it is a behaviour.
            let none = "(no initial state of the model fits this part's operations)".to_string();
            return Found::None(Box::new(NotLinearizable {
                key: part_name(named, key),
                ops: self.ops.to_vec(),
                initial: none.clone(),
                placed: Vec::new(),
                state: none,
                refused: Vec::new(),
                unplaced: (0..n)
                    .filter(|&k| self.known(k))
                    .map(|k| self.ops[k])
                    .collect(),
            }));
        }
        let mut seen: HashSet<(Placement, S::State)> = HashSet::new();
        let mut placement = Placement::new(n);
        let mut candidates = Vec::new();
        let mut after = Vec::new();
        // The deepest dead end: the longest order the model allows, for the report. It is
        // recorded when a frame is exhausted, so a history that conforms pays nothing for it.
        let mut best = Deepest {
            initial: initial[0].clone(),
            order: Vec::new(),
        };
        for start in &initial {
            if !seen.insert((placement.clone(), start.clone())) {
                continue;
            }
            let settled = self.candidates(&mut entries, start, &mut candidates);
            let mut stack = vec![Frame {
                state: start.clone(),
                choices: self.choices(start, &candidates, &mut after),
                next: 0,
                taken: None,
                settled,
            }];
            while let Some(top) = stack.last_mut() {
                let Some(choice) = top.choices.get(top.next) else {
                    // Every choice here is explored: a dead end. Keep it if it is the deepest
                    // yet, then take back the step that led here.
                    if stack.len() > best.order.len() + 1 || best.order.is_empty() {
                        best = Deepest {
                            initial: start.clone(),
                            order: stack
                                .iter()
                                .skip(1)
                                .map(|f| (f.taken.flatten(), f.state.clone()))
                                .collect(),
                        };
                    }
                    let frame = stack.pop().expect("the top frame");
                    for &k in frame.settled.iter().rev() {
                        entries.unlift(k);
                    }
                    if let Some(Some(k)) = frame.taken {
                        if self.tracked(k) {
                            entries.unlift(k);
                            placement.flip(k);
                            if self.known(k) {
                                known_left += 1;
                            }
                        }
                    }
                    continue;
                };
                top.next += 1;
                let (op, next) = (choice.op, choice.after.clone());
                let tracked = op.is_some_and(|k| self.tracked(k));
                if tracked {
                    placement.flip(op.expect("a tracked choice is an operation"));
                }
                if !seen.insert((placement.clone(), next.clone())) {
                    if tracked {
                        placement.flip(op.expect("a tracked choice is an operation"));
                    }
                    continue;
                }
                self.explored += 1;
                if let Some(spent) = self.out_of_budget() {
                    return Found::OutOfBudget(spent);
                }
                if let Some(k) = op.filter(|_| tracked) {
                    entries.lift(k);
                    if self.known(k) {
                        known_left -= 1;
                    }
                }
                if known_left == 0 {
                    return Found::Order;
                }
                let settled = self.candidates(&mut entries, &next, &mut candidates);
                let choices = self.choices(&next, &candidates, &mut after);
                stack.push(Frame {
                    state: next,
                    choices,
                    next: 0,
                    taken: Some(op),
                    settled,
                });
            }
        }
        Found::None(Box::new(self.explain(named, key, best)))
    }

    /// The report of a part with no order: the longest order found, with the state after each
    /// step, and why each operation that could come next was refused there.
    fn explain(
        &self,
        named: &Option<&str>,
        key: &S::Key,
        best: Deepest<S::State>,
    ) -> NotLinearizable {
        let mut entries = Entries::new(self.history, self.ops);
        let placed: Vec<Placed> = best
            .order
            .iter()
            .map(|(op, state)| {
                if let Some(k) = op.filter(|&k| self.tracked(k)) {
                    entries.lift(k);
                }
                Placed {
                    op: op.map(|k| self.ops[k]),
                    what: op.map_or("(a silent step of the model)".to_string(), |k| {
                        self.model.describe(self.op(k))
                    }),
                    state: self.model.describe_state(state),
                }
            })
            .collect();
        let end = best.order.last().map_or(&best.initial, |(_, state)| state);
        let mut candidates = Vec::new();
        entries.candidates(&mut candidates);
        let mut after = Vec::new();
        let refused = candidates
            .iter()
            .filter(|&&k| self.known(k))
            .map(|&k| {
                after.clear();
                let why = match self.model.step(end, self.op(k), &mut after) {
                    Err(why) => why.to_string(),
                    Ok(()) => {
                        "allowed here, but no order from here places every operation".to_string()
                    }
                };
                Refused {
                    op: self.ops[k],
                    what: self.model.describe(self.op(k)),
                    why,
                }
            })
            .collect();
        let placed_ops: Vec<usize> = best.order.iter().filter_map(|(op, _)| *op).collect();
        NotLinearizable {
            key: part_name(named, key),
            ops: self.ops.to_vec(),
            initial: self.model.describe_state(&best.initial),
            placed,
            state: self.model.describe_state(end),
            refused,
            unplaced: (0..self.ops.len())
                .filter(|k| self.known(*k) && !placed_ops.contains(k))
                .map(|k| self.ops[k])
                .collect(),
        }
    }
}

/// The deepest dead end of a search: where it started and each step taken (an operation of
/// the part, or a silent step) with the state after it.
struct Deepest<St> {
    initial: St,
    order: Vec<(Option<usize>, St)>,
}

/// Any [`Conform`] model as a sequential object: an operation's steps are the model actions its
/// event reports whose observation fits (a stutter where the event reports none), an unknown
/// operation's steps are the actions the model would place silently for it
/// ([`Conform::unresolved`]), and the model's silent actions may happen anywhere. A part (the
/// operations on one key the history names, or the whole history) starts from the states the
/// model builds from that part's events.
pub struct ModelSteps<'a, M: Conform> {
    pub model: &'a M,
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
        self.model.initial_candidates(&events)
    }

    fn step(
        &self,
        state: &M::State,
        event: &M::Event,
        after: &mut Vec<M::State>,
    ) -> Result<(), String> {
        let model = self.model;
        if model.is_stutter(event) {
            return match model.observe(state, state, event) {
                Ok(()) => {
                    after.push(state.clone());
                    Ok(())
                }
                Err(why) => Err(why.to_string()),
            };
        }
        let mut actions = Vec::new();
        model.actions(state, &mut actions);
        let mut why_not = Vec::new();
        for action in actions {
            if !model.reports(&action, event) {
                continue;
            }
            let shown = model.format_action(&action);
            match model.next_state(state, action) {
                None => why_not.push(format!("{shown}: not enabled")),
                Some(next) => match model.observe(state, &next, event) {
                    Ok(()) => after.push(next),
                    Err(why) => why_not.push(format!("{shown}: {why}")),
                },
            }
        }
        if !after.is_empty() {
            return Ok(());
        }
        Err(if why_not.is_empty() {
            model
                .disabled_reason(state, event)
                .unwrap_or_else(|| format!("no allowed action reports `{}`", event_action(event)))
        } else {
            why_not.join("; ")
        })
    }

    fn step_unknown(&self, state: &M::State, event: &M::Event, after: &mut Vec<M::State>) {
        for action in self.model.unresolved(std::slice::from_ref(event)) {
            if let Some(next) = self.model.next_state(state, action) {
                after.push(next);
            }
        }
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
mod tests {
    use super::*;

    /// A register per key: writes set it, reads must see it; a write of unknown outcome may
    /// land or not.
    #[derive(Clone, Debug, PartialEq, Eq)]
    enum RegOp {
        Write { key: u8, value: u8 },
        Read { key: u8, value: u8 },
    }

    struct Register;

    impl Sequential for Register {
        type Op = RegOp;
        type State = u8;
        type Key = u8;
        type Why = String;

        fn key(&self, op: &RegOp) -> u8 {
            match op {
                RegOp::Write { key, .. } | RegOp::Read { key, .. } => *key,
            }
        }

        fn init(&self, _key: &u8, _ops: &[&RegOp]) -> Vec<u8> {
            vec![0]
        }

        fn step(&self, state: &u8, op: &RegOp, after: &mut Vec<u8>) -> Result<(), String> {
            match op {
                RegOp::Write { value, .. } => {
                    after.push(*value);
                    Ok(())
                }
                RegOp::Read { value, .. } if value == state => {
                    after.push(*state);
                    Ok(())
                }
                RegOp::Read { value, .. } => {
                    Err(format!("read {value}, the register holds {state}"))
                }
            }
        }

        fn step_unknown(&self, _state: &u8, op: &RegOp, after: &mut Vec<u8>) {
            if let RegOp::Write { value, .. } = op {
                after.push(*value);
            }
        }

        fn describe(&self, op: &RegOp) -> String {
            format!("{op:?}")
        }
    }

    /// A register that keeps the largest value written: a write of unknown outcome may be
    /// taken any number of times, and one at or below the register never changes it again.
    struct MaxRegister;

    impl Sequential for MaxRegister {
        type Op = RegOp;
        type State = u8;
        type Key = u8;
        type Why = String;

        fn key(&self, op: &RegOp) -> u8 {
            Register.key(op)
        }

        fn init(&self, _key: &u8, _ops: &[&RegOp]) -> Vec<u8> {
            vec![0]
        }

        fn step(&self, state: &u8, op: &RegOp, after: &mut Vec<u8>) -> Result<(), String> {
            match op {
                RegOp::Write { value, .. } => {
                    after.push(*value.max(state));
                    Ok(())
                }
                read => Register.step(state, read, after),
            }
        }

        fn step_unknown(&self, state: &u8, op: &RegOp, after: &mut Vec<u8>) {
            if let RegOp::Write { value, .. } = op {
                after.push(*value.max(state));
            }
        }

        fn repeatable(&self, op: &RegOp) -> bool {
            matches!(op, RegOp::Write { .. })
        }

        fn settled(&self, state: &u8, op: &RegOp) -> bool {
            matches!(op, RegOp::Write { value, .. } if value <= state)
        }

        fn describe(&self, op: &RegOp) -> String {
            format!("{op:?}")
        }
    }

    fn op(call: u64, ret: Option<u64>, event: RegOp) -> Timed<RegOp> {
        Timed {
            call,
            ret,
            key: None,
            event,
            line: 0,
        }
    }

    fn w(value: u8) -> RegOp {
        RegOp::Write { key: 0, value }
    }

    fn r(value: u8) -> RegOp {
        RegOp::Read { key: 0, value }
    }

    fn verdict(history: &[Timed<RegOp>]) -> HistoryVerdict {
        check_history(&Register, history, Budget::default())
    }

    #[test]
    fn overlapping_operations_may_take_effect_in_either_order() {
        // w1 and w2 overlap; a later read of 1 needs w2 before w1.
        let h = [
            op(0, Some(10), w(1)),
            op(1, Some(9), w(2)),
            op(11, Some(12), r(1)),
        ];
        assert!(verdict(&h).conforming());
    }

    #[test]
    fn precedence_is_respected() {
        // w1 returns before w2 is called: a later read of 1 is stale.
        let h = [
            op(0, Some(1), w(1)),
            op(2, Some(3), w(2)),
            op(4, Some(5), r(1)),
        ];
        let v = verdict(&h);
        let HistoryOutcome::NotLinearizable(why) = &v.outcome else {
            panic!("{v:?}");
        };
        assert_eq!(why.placed.len(), 2, "{why:?}");
        assert_eq!(why.refused[0].op, 2);
        assert_eq!(why.refused[0].why, "read 1, the register holds 2");
        assert_eq!(why.unplaced, [2]);
    }

    #[test]
    fn touching_intervals_overlap() {
        // A returns at 5, B is called at 5: closed intervals, so B may go first.
        let h = [op(0, Some(5), w(1)), op(5, Some(6), r(0))];
        assert!(verdict(&h).conforming());
    }

    #[test]
    fn an_unknown_write_lands_after_its_call_or_never() {
        // Unknown write of 7 called at 4: a read at 5..6 may see it, a read before 4 may not.
        let lands = [op(4, None, w(7)), op(5, Some(6), r(7))];
        assert!(verdict(&lands).conforming());
        let never = [op(4, None, w(7)), op(5, Some(6), r(0))];
        assert!(verdict(&never).conforming());
        let before_its_call = [op(4, None, w(7)), op(1, Some(2), r(7))];
        assert!(!verdict(&before_its_call).conforming());
    }

    #[test]
    fn keys_are_judged_apart() {
        let h = [
            op(0, Some(1), RegOp::Write { key: 1, value: 3 }),
            op(2, Some(3), RegOp::Read { key: 2, value: 0 }),
            op(4, Some(5), RegOp::Read { key: 1, value: 3 }),
        ];
        let v = verdict(&h);
        assert!(v.conforming());
        assert_eq!(v.parts, 2);
    }

    #[test]
    fn a_budget_hit_is_unknown_never_a_verdict() {
        let h: Vec<Timed<RegOp>> = (0..40)
            .map(|i| op(0, Some(100), w(i as u8)))
            .chain([op(101, Some(102), r(200))])
            .collect();
        let v = check_history(
            &Register,
            &h,
            Budget {
                configurations: 1000,
                time: None,
            },
        );
        assert!(
            matches!(
                v.outcome,
                HistoryOutcome::Unknown {
                    spent: Spent::Configurations
                }
            ),
            "{v:?}"
        );
    }

    #[test]
    fn keys_the_history_names_are_judged_apart() {
        // The model's key is one (0); the history's keys split it.
        let named = |key: &str, o: Timed<RegOp>| Timed {
            key: Some(key.to_string()),
            ..o
        };
        let h = [
            named("a", op(0, Some(1), w(1))),
            named("b", op(2, Some(3), r(0))),
            named("a", op(4, Some(5), r(1))),
        ];
        let v = verdict(&h);
        assert!(v.conforming(), "{v:?}");
        assert_eq!(v.parts, 2);
        let h = [
            named("a", op(0, Some(1), w(1))),
            named("a", op(2, Some(3), r(0))),
        ];
        let HistoryOutcome::NotLinearizable(why) = verdict(&h).outcome else {
            panic!("a stale read on one key");
        };
        // The history's key, then the model's own.
        assert_eq!(why.key, "\"a\" 0");
    }

    #[test]
    fn a_part_the_model_cannot_start_is_no_behaviour() {
        struct NoStart;
        impl Sequential for NoStart {
            type Op = RegOp;
            type State = u8;
            type Key = u8;
            type Why = String;
            fn key(&self, op: &RegOp) -> u8 {
                Register.key(op)
            }
            fn init(&self, _key: &u8, _ops: &[&RegOp]) -> Vec<u8> {
                Vec::new()
            }
            fn step(&self, s: &u8, op: &RegOp, after: &mut Vec<u8>) -> Result<(), String> {
                Register.step(s, op, after)
            }
            fn step_unknown(&self, s: &u8, op: &RegOp, after: &mut Vec<u8>) {
                Register.step_unknown(s, op, after)
            }
            fn describe(&self, op: &RegOp) -> String {
                format!("{op:?}")
            }
        }
        let v = check_history(&NoStart, &[op(0, Some(1), w(1))], Budget::default());
        assert!(
            matches!(v.outcome, HistoryOutcome::NotLinearizable(_)),
            "{v:?}"
        );
        // With nothing known to place there is nothing to refuse.
        let v = check_history(&NoStart, &[op(0, None, w(1))], Budget::default());
        assert!(v.conforming(), "{v:?}");
    }

    /// Every order of a small history, tried by brute force, agrees with the search.
    #[test]
    fn the_search_agrees_with_brute_force_on_random_histories() {
        for max in [false, true] {
            agrees_with_brute_force(max);
        }
    }

    /// `max`: the register keeps the largest value, whose unknown writes are repeatable and
    /// settle (the search's shortcuts for them are checked too).
    fn agrees_with_brute_force(max: bool) {
        let mut rng = fastrand::Rng::with_seed(7);
        let mut seen = [0; 2];
        for _ in 0..400 {
            let n = rng.usize(1..=6);
            let h: Vec<Timed<RegOp>> = (0..n)
                .map(|_| {
                    let call = rng.u64(0..10);
                    let ret = (!rng.bool() || rng.u8(0..4) > 0).then(|| call + rng.u64(0..6));
                    let value = rng.u8(0..3);
                    let event = if ret.is_some() && rng.bool() {
                        r(value)
                    } else {
                        w(value)
                    };
                    op(call, ret, event)
                })
                .collect();
            let expected = brute_force(&h, max);
            let found = if max {
                check_history(&MaxRegister, &h, Budget::default())
            } else {
                verdict(&h)
            };
            assert_eq!(found.conforming(), expected, "max {max}: {h:?}");
            seen[expected as usize] += 1;
        }
        // Both verdicts were exercised, often.
        assert!(seen[0] > 50 && seen[1] > 50, "{seen:?}");
    }

    /// Some subset of the unknown operations and some order of it with every known operation,
    /// respecting precedence and the register.
    fn brute_force(h: &[Timed<RegOp>], max: bool) -> bool {
        let unknown: Vec<usize> = (0..h.len()).filter(|&i| h[i].ret.is_none()).collect();
        for mask in 0..(1u32 << unknown.len()) {
            let chosen: Vec<usize> = (0..h.len())
                .filter(|&i| {
                    h[i].ret.is_some()
                        || unknown
                            .iter()
                            .position(|&u| u == i)
                            .is_some_and(|p| mask & (1 << p) != 0)
                })
                .collect();
            if permutations_fit(h, &chosen, &mut Vec::new(), 0, max) {
                return true;
            }
        }
        false
    }

    fn permutations_fit(
        h: &[Timed<RegOp>],
        left: &[usize],
        order: &mut Vec<usize>,
        state: u8,
        max: bool,
    ) -> bool {
        if left.is_empty() {
            return true;
        }
        for (p, &i) in left.iter().enumerate() {
            // i may go next only if no other remaining operation must precede it.
            if left.iter().any(|&j| j != i && h[j].precedes(&h[i])) {
                continue;
            }
            let next = match &h[i].event {
                RegOp::Write { value, .. } if max => *value.max(&state),
                RegOp::Write { value, .. } => *value,
                RegOp::Read { value, .. } if *value == state => state,
                RegOp::Read { .. } => continue,
            };
            let rest: Vec<usize> = left
                .iter()
                .enumerate()
                .filter(|(q, _)| *q != p)
                .map(|(_, &j)| j)
                .collect();
            order.push(i);
            if permutations_fit(h, &rest, order, next, max) {
                return true;
            }
            order.pop();
        }
        false
    }
}
