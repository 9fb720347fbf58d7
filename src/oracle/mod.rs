//! The history judge held to an oracle of our own: a naive, obviously right checker of the
//! same question, and seeded generators of small histories to ask it on.
//!
//! The naive checker ([`linearizable`]) tries every subset of the operations of unknown outcome
//! and, for each, every order of the chosen operations that respects real time (an operation
//! that returned before another was called comes first), stepping a [`Reference`] — the model's
//! definition as plain code — through the order with the model's silent steps allowed between
//! any two operations. It keeps no memo and takes no shortcut but one: an order whose prefix
//! the model refuses is not extended. A history over several keys is linearizable iff each
//! key's operations are (the judge's P-compositionality is not assumed: each key is simply
//! its own model here too).
//!
//! The references are written from the models' definitions, not from the judge's faces:
//! [`first_write::AtomicRowRef`] (the guarded or last-write-wins upsert on a row with values,
//! tombstones, deletes and a TTL's reap) and [`first_write::CompoundRef`] (the three
//! statements of CasFirstWrite on a row, each write its own), and [`ModelRef`], which steps any
//! model's own actions (`Model::actions`, `next_state`) through its trace adapter (`reports`,
//! `observe`, `unresolved`, `is_silent`) one event at a time.
//!
//! `compare` runs both on generated histories (`generate`) and counts agreements; the tests
//! run a few hundred a model, `loadbearing bench --histories --oracle N` runs N.

use std::collections::HashSet;
use std::hash::Hash;

use loadbearing_trace::{Conform, Key, Timed};

pub mod compare;
pub mod first_write;
pub mod generate;

/// A model's definition as the naive checker steps it.
pub trait Reference {
    type Op;
    type State: Clone + Eq + Hash;

    /// The states a key's operations may start from.
    fn init(&self, ops: &[&Self::Op]) -> Vec<Self::State>;

    /// The states after an operation whose outcome is known, from `state` (none: it does not
    /// fit there).
    fn step(&self, state: &Self::State, op: &Self::Op) -> Vec<Self::State>;

    /// The states after an operation of unknown outcome taking effect at `state`.
    fn step_unknown(&self, state: &Self::State, op: &Self::Op) -> Vec<Self::State>;

    /// The states one silent step of the model leads to.
    fn silent(&self, _state: &Self::State) -> Vec<Self::State> {
        Vec::new()
    }
}

/// Whether some subset of the unknown operations and some order of them with every known one,
/// respecting real time, is a behaviour of the reference — key by key.
pub fn linearizable<R: Reference>(reference: &R, history: &[Timed<R::Op>]) -> bool {
    let mut keys: Vec<Option<&Key>> = history.iter().map(|op| op.key.as_ref()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter().all(|key| {
        let part: Vec<&Timed<R::Op>> = history.iter().filter(|op| op.key.as_ref() == key).collect();
        part_linearizable(reference, &part)
    })
}

fn part_linearizable<R: Reference>(reference: &R, part: &[&Timed<R::Op>]) -> bool {
    let events: Vec<&R::Op> = part.iter().map(|op| &op.event).collect();
    let initial = reference.init(&events);
    let unknown: Vec<usize> = (0..part.len()).filter(|&i| part[i].ret.is_none()).collect();
    assert!(
        unknown.len() < 20,
        "the naive checker is for small histories"
    );
    (0u32..1 << unknown.len()).any(|mask| {
        let chosen: Vec<usize> = (0..part.len())
            .filter(|&i| {
                part[i].ret.is_some()
                    || unknown
                        .iter()
                        .position(|&u| u == i)
                        .is_some_and(|p| mask >> p & 1 == 1)
            })
            .collect();
        some_order(reference, part, &chosen, initial.clone())
    })
}

/// Whether some order of `left` respecting real time takes the reference from one of `states`
/// through every operation of it.
fn some_order<R: Reference>(
    reference: &R,
    part: &[&Timed<R::Op>],
    left: &[usize],
    states: Vec<R::State>,
) -> bool {
    if states.is_empty() {
        return false;
    }
    if left.is_empty() {
        return true;
    }
    let states = closure(reference, states);
    left.iter().enumerate().any(|(at, &i)| {
        // i may come next only if no other operation left must come before it.
        let waits = left
            .iter()
            .any(|&j| j != i && part[j].ret.is_some_and(|ret| ret < part[i].call));
        if waits {
            return false;
        }
        let op = &part[i].event;
        let next: Vec<R::State> = distinct(states.iter().flat_map(|s| {
            if part[i].ret.is_some() {
                reference.step(s, op)
            } else {
                reference.step_unknown(s, op)
            }
        }));
        let rest: Vec<usize> = left
            .iter()
            .enumerate()
            .filter(|&(k, _)| k != at)
            .map(|(_, &j)| j)
            .collect();
        some_order(reference, part, &rest, next)
    })
}

/// Every state reachable by silent steps (the states themselves included).
fn closure<R: Reference>(reference: &R, states: Vec<R::State>) -> Vec<R::State> {
    let mut seen: HashSet<R::State> = states.iter().cloned().collect();
    let mut all = states;
    let mut at = 0;
    while at < all.len() {
        for next in reference.silent(&all[at]) {
            if seen.insert(next.clone()) {
                all.push(next);
            }
        }
        at += 1;
    }
    all
}

fn distinct<S: Clone + Eq + Hash>(states: impl Iterator<Item = S>) -> Vec<S> {
    let mut seen = HashSet::new();
    states.filter(|s| seen.insert(s.clone())).collect()
}

/// Any model, from its own definition: an event with a known outcome is a stutter its adapter
/// accepts unchanged or an enabled action it reports whose step it observes; one of unknown
/// outcome an enabled action among those it leaves unresolved; the model's silent actions may
/// come between any two. The adapter's initial states for the key's events.
pub struct ModelRef<'a, M> {
    pub model: &'a M,
}

impl<M: Conform> Reference for ModelRef<'_, M>
where
    M::State: Eq + Hash,
{
    type Op = M::Event;
    type State = M::State;

    fn init(&self, ops: &[&M::Event]) -> Vec<M::State> {
        let events: Vec<M::Event> = ops.iter().map(|&e| e.clone()).collect();
        self.model.initial_candidates(&events)
    }

    fn step(&self, state: &M::State, event: &M::Event) -> Vec<M::State> {
        let model = self.model;
        if model.is_stutter(event) {
            return match model.observe(state, state, event) {
                Ok(()) => vec![state.clone()],
                Err(_) => Vec::new(),
            };
        }
        enabled(model, state)
            .into_iter()
            .filter(|a| model.reports(a, event))
            .filter_map(|a| model.next_state(state, a))
            .filter(|next| model.observe(state, next, event).is_ok())
            .collect()
    }

    fn step_unknown(&self, state: &M::State, event: &M::Event) -> Vec<M::State> {
        let model = self.model;
        let unresolved = model.unresolved(std::slice::from_ref(event));
        enabled(model, state)
            .into_iter()
            .filter(|a| unresolved.contains(a))
            .filter_map(|a| model.next_state(state, a))
            .filter(|next| model.observe(state, next, event).is_ok())
            .collect()
    }

    fn silent(&self, state: &M::State) -> Vec<M::State> {
        enabled(self.model, state)
            .into_iter()
            .filter(|a| self.model.is_silent(a))
            .filter_map(|a| self.model.next_state(state, a))
            .collect()
    }
}

fn enabled<M: Conform>(model: &M, state: &M::State) -> Vec<M::Action> {
    let mut actions = Vec::new();
    model.actions(state, &mut actions);
    actions
}
