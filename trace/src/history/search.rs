//! One part of a history, searched by just-in-time linearization (Lowe's, Knossos's linear
//! checker): the part's calls and returns are read in time order, and the search keeps every
//! *configuration* consistent with what it has read — a model state, which of the operations
//! still pending it has already placed, and which operations of unknown outcome it has used.
//!
//! At a call nothing is placed: the operation only becomes pending. At the return of operation
//! `k` every configuration must have placed `k`: from each, the search places pending
//! operations, operations of unknown outcome and the model's silent steps in every order the
//! model allows, and keeps the configurations whose last step placed `k` (ones that would place
//! more after `k` are reached again at the next return). A configuration with nothing left is
//! a history with no order; one left when every operation with a known outcome has returned is
//! a linearization, read back along its steps.
//!
//! What keeps the configurations few:
//! - an operation returned is placed in every configuration, so only the pending ones are
//!   remembered (a bit a slot, the slots reused);
//! - a configuration is dropped when another in the same state, with the same pending
//!   operations placed, used no more of each unknown class (it can do everything the first can:
//!   dominance, which settles many unknown operations whose choice does not matter);
//! - unknown operations whose effects are identical form one class, used as a count (the
//!   earliest-called first: taking a later-called one never allows more);
//! - the model's hints, each a fact about its steps that the oracle tests hold it to
//!   ([`Sequential::doomed`], [`Sequential::blind`], [`Sequential::settled`],
//!   [`Sequential::repeatable_in`]).
//!
//! The memory held is the configurations of the current return and the steps that lead to
//! them (shared), not every configuration ever seen.

use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Instant;

use hashbrown::HashMap;

use super::sets::{Slots, Used};
use super::{Budget, Progress, Sequential, Spent};
use crate::wire::Timed;
use loadbearing_refinement::budget::resident_bytes;
use loadbearing_refinement::fingerprint::fingerprint;

/// How a configuration was reached: one step back to the previous one, to the part's start.
pub(crate) struct Node<St> {
    pub step: Step,
    pub state: St,
    pub prev: Option<Rc<Node<St>>>,
}

/// One step of an order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// The part's initial state.
    Start,
    /// Operation `k` of the part took effect here (one of unknown outcome too).
    Op(usize),
    /// A silent step of the model.
    Silent,
}

impl<St: Clone> Node<St> {
    /// The steps from the start to this node, in order (the start's state first).
    pub(crate) fn order(self: &Rc<Self>) -> (St, Vec<(Step, St)>) {
        let mut steps = Vec::new();
        let mut at = Some(self);
        let mut initial = self.state.clone();
        while let Some(node) = at {
            match node.step {
                Step::Start => initial = node.state.clone(),
                step => steps.push((step, node.state.clone())),
            }
            at = node.prev.as_ref();
        }
        steps.reverse();
        (initial, steps)
    }
}

struct Config<St> {
    node: Rc<Node<St>>,
    placed: Slots,
    used: Used,
    /// The last step placed an operation of unknown outcome: a blind operation placed right
    /// after it would erase it, which the configuration without it does better.
    after_unknown: bool,
}

impl<St> Config<St> {
    fn state(&self) -> &St {
        &self.node.state
    }
}

impl<St> Clone for Config<St> {
    fn clone(&self) -> Self {
        Config {
            node: Rc::clone(&self.node),
            placed: self.placed.clone(),
            used: self.used.clone(),
            after_unknown: self.after_unknown,
        }
    }
}

/// A step from a configuration: what it takes, the state it leads to, the slot of the pending
/// operation it places (if it places one) and the unknown class it uses (if it uses one).
struct Move<St> {
    step: Step,
    state: St,
    slot: Option<usize>,
    class: Option<u32>,
}

/// Operations of unknown outcome with identical effects, the earliest-called first.
pub(super) struct Class {
    pub(super) members: Vec<usize>,
    /// How many of them have been called so far.
    called: u32,
    /// Taken any number of times ([`Sequential::repeatable_in`]): not counted.
    pub(super) repeatable: bool,
    /// Its operations are blind ([`Sequential::blind`]).
    blind: bool,
}

/// What the search of one part found.
pub(crate) enum Searched<St> {
    /// An order of every operation with a known outcome: the last step of it (`None` for a
    /// part with no such operation and no initial state, which needs none).
    Order {
        last: Option<Rc<Node<St>>>,
    },
    /// No order: the operation whose return found no configuration that could place it, the
    /// configuration that placed the most before it (the longest order the model allows) with
    /// the pending operations it had not placed, and every configuration the search held there.
    None {
        due: usize,
        /// `None` when the model has no initial state for the part.
        deepest: Option<Rc<Node<St>>>,
        unplaced_pending: Vec<usize>,
        held: Vec<Rc<Node<St>>>,
    },
    Spent(Spent),
}

/// The counters one history's search shares across its parts.
pub(super) struct Meter<'p> {
    pub budget: Budget,
    pub started: Instant,
    pub configurations: u64,
    /// The most configurations held at one return, over every part.
    pub widest: usize,
    pub progress: &'p mut dyn FnMut(&Progress),
    /// Where the search is, for the progress line.
    pub part: usize,
    pub parts: usize,
    pub events_done: usize,
    pub events: usize,
}

impl Meter<'_> {
    /// Counts one configuration; a spent budget, if any (the clock is read every few thousand,
    /// the resident memory, a system call, every few tens of thousands).
    fn count(&mut self, held: usize) -> Option<Spent> {
        self.configurations += 1;
        if self.configurations >= self.budget.configurations {
            return Some(Spent::Configurations(self.budget.configurations));
        }
        if self.configurations.is_multiple_of(4096) {
            if let Some(limit) = self.budget.time {
                if self.started.elapsed() >= limit {
                    return Some(Spent::Time(limit.as_millis() as u64));
                }
            }
            if self.configurations.is_multiple_of(65_536) {
                if let Some(max) = self.budget.memory {
                    if resident_bytes().is_some_and(|held| held >= max) {
                        return Some(Spent::Memory(max));
                    }
                }
            }
            (self.progress)(&Progress {
                part: self.part,
                parts: self.parts,
                events_done: self.events_done,
                events: self.events,
                held,
                configurations: self.configurations,
                seconds: self.started.elapsed().as_secs_f64(),
            });
        }
        None
    }
}

/// One part's operations and what the search knows of each.
pub(super) struct Part<'a, S: Sequential> {
    pub(super) model: &'a S,
    pub(super) ops: Vec<&'a Timed<S::Op>>,
    /// Per operation: its class when its outcome is unknown.
    pub(super) class: Vec<Option<u32>>,
    pub(super) classes: Vec<Class>,
    /// Per operation with a known outcome: its slot while it is pending.
    slot: Vec<usize>,
    /// The operations with a known outcome called and not yet returned, in call order.
    pending: Vec<usize>,
    /// The classes of unknown outcome called so far, in the order of their first call.
    called_classes: Vec<u32>,
    /// Whether any class is not blind.
    unblind_classes: bool,
    free_slots: Vec<usize>,
    width: usize,
}

/// The closure of one return: every configuration reached on the way, deduplicated by
/// dominance.
struct Held<St> {
    configs: Vec<Config<St>>,
    dead: Vec<bool>,
    /// By the hash of (state, placed): the configurations in that state with those placed.
    index: HashMap<u64, Vec<usize>>,
}

impl<St: Clone + Eq + std::hash::Hash> Held<St> {
    fn new() -> Self {
        Held {
            configs: Vec::new(),
            dead: Vec::new(),
            index: HashMap::new(),
        }
    }

    /// Adds `config` unless one held dominates it (same state and placed, used within its
    /// used); drops the held ones it dominates. Its index when added.
    fn add(&mut self, config: Config<St>) -> Option<usize> {
        let key = fingerprint(&(config.state(), &config.placed));
        let same = self.index.entry(key).or_default();
        for &i in same.iter() {
            let held = &self.configs[i];
            if self.dead[i] || held.state() != config.state() || held.placed != config.placed {
                continue;
            }
            if held.used.within(&config.used) {
                return None;
            }
            if config.used.within(&held.used) {
                self.dead[i] = true;
            }
        }
        same.push(self.configs.len());
        self.configs.push(config);
        self.dead.push(false);
        Some(self.configs.len() - 1)
    }

    fn alive(self) -> impl Iterator<Item = Config<St>> {
        self.configs
            .into_iter()
            .zip(self.dead)
            .filter(|(_, dead)| !dead)
            .map(|(c, _)| c)
    }
}

impl<'a, S: Sequential> Part<'a, S> {
    pub(super) fn new(model: &'a S, ops: Vec<&'a Timed<S::Op>>) -> Self {
        let events: Vec<&S::Op> = ops.iter().map(|op| &op.event).collect();
        let repeatable = model.repeatable_in(&events);
        // The classes of unknown outcome: each operation joins the first class whose first
        // member has the same effect (and is as repeatable), in call order.
        let mut by_call: Vec<usize> = (0..ops.len()).filter(|&k| ops[k].ret.is_none()).collect();
        by_call.sort_by_key(|&k| (ops[k].call, k));
        let mut class = vec![None; ops.len()];
        let mut classes: Vec<Class> = Vec::new();
        for k in by_call {
            let joined = classes.iter().position(|c| {
                let first = c.members[0];
                c.repeatable == repeatable[k] && model.same_effect(&ops[first].event, &ops[k].event)
            });
            let at = joined.unwrap_or_else(|| {
                classes.push(Class {
                    members: Vec::new(),
                    called: 0,
                    repeatable: repeatable[k],
                    blind: model.blind(&ops[k].event),
                });
                classes.len() - 1
            });
            classes[at].members.push(k);
            class[k] = Some(at as u32);
        }
        let width = width(&ops);
        let unblind_classes = classes.iter().any(|c| !c.blind);
        Part {
            called_classes: Vec::new(),
            unblind_classes,
            model,
            slot: vec![usize::MAX; ops.len()],
            ops,
            class,
            classes,
            pending: Vec::new(),
            free_slots: Vec::new(),
            width,
        }
    }

    fn op(&self, k: usize) -> &S::Op {
        &self.ops[k].event
    }

    /// Searches the part from its initial states.
    pub(super) fn search(
        mut self,
        initial: Vec<S::State>,
        meter: &mut Meter,
    ) -> Searched<S::State> {
        // Calls before returns at one instant: intervals are closed, so an operation returning
        // at t and one called at t overlap.
        let mut events: Vec<(u64, bool, usize)> = Vec::with_capacity(self.ops.len() * 2);
        for (k, op) in self.ops.iter().enumerate() {
            events.push((op.call, false, k));
            if let Some(ret) = op.ret {
                events.push((ret, true, k));
            }
        }
        events.sort_unstable();
        meter.events = events.len();
        let mut known_left = self.ops.iter().filter(|op| op.ret.is_some()).count();
        let mut frontier: Vec<Config<S::State>> = Vec::new();
        let mut starts = Held::new();
        for state in initial {
            starts.add(Config {
                node: Rc::new(Node {
                    step: Step::Start,
                    state,
                    prev: None,
                }),
                placed: Slots::empty(self.width),
                used: Used::default(),
                after_unknown: false,
            });
        }
        frontier.extend(starts.alive());
        for (at, &(_, is_return, k)) in events.iter().enumerate() {
            if known_left == 0 {
                break;
            }
            meter.events_done = at;
            if !is_return {
                self.called(k);
                continue;
            }
            match self.advance(k, frontier, meter) {
                Ok(next) => frontier = next,
                Err(stop) => return stop,
            }
            meter.widest = meter.widest.max(frontier.len());
            self.returned(k);
            known_left -= 1;
        }
        meter.events_done = events.len();
        Searched::Order {
            last: frontier.into_iter().next().map(|config| config.node),
        }
    }

    fn called(&mut self, k: usize) {
        match self.class[k] {
            Some(class) => {
                let class_of = &mut self.classes[class as usize];
                if class_of.called == 0 {
                    self.called_classes.push(class);
                }
                class_of.called += 1;
            }
            None => {
                let slot = self.free_slots.pop().unwrap_or(self.pending.len());
                self.slot[k] = slot;
                self.pending.push(k);
            }
        }
    }

    fn returned(&mut self, k: usize) {
        self.pending.retain(|&j| j != k);
        self.free_slots.push(self.slot[k]);
    }

    /// Whether a pending operation the configuration has not placed can never take effect
    /// from its state, nor from any the model reaches from it.
    fn doomed(&self, config: &Config<S::State>) -> bool {
        self.pending.iter().any(|&j| {
            !config.placed.contains(self.slot[j]) && self.model.doomed(config.state(), self.op(j))
        })
    }

    /// Every configuration from `frontier` whose last step places `k` (which returns now), with
    /// `k`'s slot freed; or why there is none.
    fn advance(
        &self,
        k: usize,
        frontier: Vec<Config<S::State>>,
        meter: &mut Meter,
    ) -> Result<Vec<Config<S::State>>, Searched<S::State>> {
        let slot_k = self.slot[k];
        let mut held = Held::new();
        let mut placed_k = Held::new();
        let mut queue = VecDeque::new();
        // The configuration that placed the most, for the report (doomed ones count: they
        // are orders the model allows, which only later fail).
        let mut deepest: Option<Config<S::State>> = None;
        let deeper = |deepest: &mut Option<Config<S::State>>, config: &Config<S::State>| {
            if deepest
                .as_ref()
                .is_none_or(|d| config.placed.len() > d.placed.len())
            {
                *deepest = Some(config.clone());
            }
        };
        for config in frontier {
            deeper(&mut deepest, &config);
            if self.doomed(&config) {
                continue;
            }
            if config.placed.contains(slot_k) {
                placed_k.add(config);
            } else if let Some(i) = held.add(config) {
                queue.push_back(i);
            }
        }
        let mut after = Vec::new();
        let mut next: Vec<Move<S::State>> = Vec::new();
        while let Some(i) = queue.pop_front() {
            if held.dead[i] {
                continue;
            }
            next.clear();
            self.moves(&held.configs[i], &mut after, &mut next);
            let from = held.configs[i].clone();
            for Move {
                step,
                state,
                slot,
                class,
            } in next.drain(..)
            {
                let mut placed = from.placed.clone();
                if let Some(slot) = slot {
                    placed.insert(slot);
                }
                let used = match class {
                    Some(class) if !self.classes[class as usize].repeatable => {
                        from.used.plus(class)
                    }
                    _ => from.used.clone(),
                };
                let config = Config {
                    node: Rc::new(Node {
                        step,
                        state,
                        prev: Some(Rc::clone(&from.node)),
                    }),
                    placed,
                    used,
                    after_unknown: class.is_some(),
                };
                if let Some(spent) = meter.count(held.configs.len() + placed_k.configs.len()) {
                    return Err(Searched::Spent(spent));
                }
                deeper(&mut deepest, &config);
                if self.doomed(&config) {
                    continue;
                }
                if slot == Some(slot_k) {
                    placed_k.add(config);
                } else if let Some(j) = held.add(config) {
                    queue.push_back(j);
                }
            }
        }
        let mut results: Vec<Config<S::State>> = placed_k
            .alive()
            .map(|mut c| {
                c.placed.remove(slot_k);
                c
            })
            .collect();
        if results.is_empty() {
            let deepest = deepest.expect("the frontier of a return is never empty");
            let unplaced_pending = self
                .pending
                .iter()
                .copied()
                .filter(|&j| !deepest.placed.contains(self.slot[j]))
                .collect();
            return Err(Searched::None {
                due: k,
                deepest: Some(deepest.node),
                unplaced_pending,
                held: held.alive().map(|c| c.node).collect(),
            });
        }
        // A configuration from the frontier that had placed k already is kept as it was: it
        // may have been the one step of it no other reaches.
        results.shrink_to_fit();
        Ok(results)
    }

    /// The steps the model allows from a configuration: a pending operation it has not placed
    /// (its slot), an operation of unknown outcome (its class), a silent step.
    fn moves(
        &self,
        config: &Config<S::State>,
        after: &mut Vec<S::State>,
        out: &mut Vec<Move<S::State>>,
    ) {
        let state = config.state();
        let model = self.model;
        for &j in &self.pending {
            if config.placed.contains(self.slot[j]) {
                continue;
            }
            let op = self.op(j);
            if config.after_unknown && model.blind(op) {
                continue;
            }
            after.clear();
            if model.apply(state, op, after) {
                for next in after.drain(..) {
                    out.push(Move {
                        step: Step::Op(j),
                        state: next,
                        slot: Some(self.slot[j]),
                        class: None,
                    });
                }
            }
        }
        // An operation of unknown outcome placed where every pending operation left is blind
        // is erased by the blind one placed after it, in every configuration with that one
        // placed last (the configuration without it reaches the same state, having used
        // less): such a step is worth taking only where something left could observe it.
        let observed = self
            .pending
            .iter()
            .any(|&j| !config.placed.contains(self.slot[j]) && !model.blind(self.op(j)));
        let available = |c: usize| {
            let class = &self.classes[c];
            let used = if class.repeatable {
                0
            } else {
                config.used.count(c as u32)
            };
            (used < class.called).then(|| class.members[used as usize])
        };
        // Past a blind operation of unknown outcome nothing blind may come next (it would erase
        // it), so it leads somewhere only where a pending operation that is not blind fits
        // after it, an unknown one that is not blind may follow, or a silent step.
        let unblind_unknown = self.unblind_classes
            && self
                .called_classes
                .iter()
                .any(|&c| !self.classes[c as usize].blind && available(c as usize).is_some());
        let mut scratch = Vec::new();
        let leads_on = |next: &S::State, scratch: &mut Vec<S::State>| {
            unblind_unknown
                || self.pending.iter().any(|&j| {
                    let op = self.op(j);
                    scratch.clear();
                    !config.placed.contains(self.slot[j])
                        && !model.blind(op)
                        && model.apply(next, op, scratch)
                })
                || {
                    scratch.clear();
                    model.silent(next, scratch);
                    !scratch.is_empty()
                }
        };
        for c in self
            .called_classes
            .iter()
            .map(|&c| c as usize)
            .filter(|_| observed)
        {
            let Some(member) = available(c) else {
                continue;
            };
            let op = self.op(member);
            let blind = self.classes[c].blind;
            if (config.after_unknown && blind) || model.settled(state, op) {
                continue;
            }
            after.clear();
            model.step_unknown(state, op, after);
            for next in after.drain(..) {
                // Taking it and changing nothing is never better than not taking it.
                if next != *state && (!blind || leads_on(&next, &mut scratch)) {
                    out.push(Move {
                        step: Step::Op(member),
                        state: next,
                        slot: None,
                        class: Some(c as u32),
                    });
                }
            }
        }
        after.clear();
        model.silent(state, after);
        for next in after.drain(..) {
            if next != *state {
                out.push(Move {
                    step: Step::Silent,
                    state: next,
                    slot: None,
                    class: None,
                });
            }
        }
    }
}

/// The most operations with a known outcome pending at once: the slots a part needs.
fn width<E>(ops: &[&Timed<E>]) -> usize {
    let mut events: Vec<(u64, bool)> = ops
        .iter()
        .filter_map(|op| Some([(op.call, false), (op.ret?, true)]))
        .flatten()
        .collect();
    events.sort_unstable();
    let (mut open, mut most) = (0usize, 0usize);
    for (_, is_return) in events {
        if is_return {
            open -= 1;
        } else {
            open += 1;
            most = most.max(open);
        }
    }
    most
}
