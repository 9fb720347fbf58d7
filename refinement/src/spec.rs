//! What a model offers the engine beyond Stateright's `Model`.

use std::fmt::Debug;
use std::hash::Hash;

use crate::model::Model;
use crate::shown_value::Shown;

use crate::refinement::Refinement;

/// A set of interchangeable values of one model instance: its name as the spec gives it
/// (`Writers`) and how many it holds. A spec declares its own (`Spec::symmetries`); the
/// reduction by them is `symmetry`'s.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symmetry {
    pub name: &'static str,
    pub size: usize,
}

/// A state's variables by the spec's names, each as the model shows it ([`Shown`]).
pub type Variables = Vec<(&'static str, Shown)>;

/// A `<>[]P` property: on every fair behaviour, P eventually holds and then holds for good.
/// Stateright's `Property` kinds stop at `<>P`, which is weaker (a behaviour may pass through
/// P and leave it again), so a model declares these separately.
pub struct EventuallyAlways<M: Model> {
    pub name: &'static str,
    pub condition: fn(&M, &M::State) -> bool,
}

impl<M: Model> EventuallyAlways<M> {
    pub fn new(name: &'static str, condition: fn(&M, &M::State) -> bool) -> Self {
        EventuallyAlways { name, condition }
    }
}

impl<M: Model> Clone for EventuallyAlways<M> {
    fn clone(&self) -> Self {
        EventuallyAlways {
            name: self.name,
            condition: self.condition,
        }
    }
}

/// A Stateright model with the extras our checks need: named variables for readable
/// counterexamples, weak-fairness groups for liveness, and refinement mappings.
///
/// Stutter steps (an enabled action that changes nothing, such as a rejected write) are returned
/// by `next_state` as `Some(state.clone())`, so a state that can only stutter is not a deadlock.
pub trait Spec:
    Model<
        State: Clone + Hash + Eq + Debug + Send + Sync,
        Action: Clone + Debug + PartialEq + Send + Sync,
    > + Send
    + Sync
{
    /// The state's variables, in the spec's order.
    fn variables(&self, state: &Self::State) -> Variables;

    /// Names of the weakly-fair action groups of the spec's `Spec` formula, e.g. `OwnerFold` or
    /// `writer 2` (all steps of one process together).
    fn fairness_groups(&self) -> Vec<String> {
        Vec::new()
    }

    /// The weakly-fair group an action belongs to, as an index into `fairness_groups`.
    fn fairness_group(&self, _action: &Self::Action) -> Option<usize> {
        None
    }

    /// The model's `<>[]P` properties, checked under its weak fairness like `eventually` ones.
    fn eventually_always(&self) -> Vec<EventuallyAlways<Self>> {
        Vec::new()
    }

    /// The refinement properties this model can be checked against.
    fn refinements(&self) -> Vec<Box<dyn Refinement<Self::State>>> {
        Vec::new()
    }

    /// Sets of interchangeable values (processes, keys) this instance may be reduced by: every
    /// permutation of one maps behaviours to behaviours and keeps every safety property's
    /// verdict. A model declares one only where that is so.
    fn symmetries(&self) -> Vec<Symmetry> {
        Vec::new()
    }

    /// `state` with the values of symmetry `symmetry` renamed: value `i` becomes
    /// `permutation[i]`.
    fn permute(&self, state: &Self::State, _symmetry: usize, _permutation: &[u8]) -> Self::State {
        state.clone()
    }

    /// The representative of `state`'s orbit under symmetry `symmetry`, when the model can
    /// name it directly (say, by sorting the processes' local states): the same state for
    /// every state of the orbit, and one of them. `None` (the default): the engine takes the
    /// least fingerprint over every permutation, which costs a factorial.
    fn canonical(&self, _state: &Self::State, _symmetry: usize) -> Option<Self::State> {
        None
    }

    /// How many states `state`'s orbit under symmetry `symmetry` holds (its distinct images),
    /// when the model can count them directly (say, from how many processes share each local
    /// state). `None` (the default): the engine counts the distinct images, a factorial.
    fn orbit_size(&self, _state: &Self::State, _symmetry: usize) -> Option<u64> {
        None
    }

    /// A number every step that changes the state increases (a variant), when the model has
    /// one: its state graph then has no cycle. A search building the liveness graph checks it
    /// on every step it takes; where it held, no walk looks for a cycle (a fair lasso then
    /// needs a state that may stutter forever), and a model whose variant fails on some step
    /// is checked as if it had declared none. Such a model's graph is first built without its
    /// edges, and built again with them only where the variant does not settle every temporal
    /// property. `None` (the default): no variant.
    fn variant(&self, _state: &Self::State) -> Option<u64> {
        None
    }

    /// The party that takes an action (owner, zombie, writer w1, T1…): a swimlane column.
    fn actor(&self, _action: &Self::Action) -> String {
        "system".to_string()
    }

    /// Why a counterexample violates `property`, in the model's own terms, where the last state
    /// alone does not say it (SSI: the dependency cycle, `T1 -rw(bob)-> T2 -rw(alice)-> T1`).
    /// Printed with the violation; `None` (the default): the property's name says enough.
    fn explain_violation(
        &self,
        _property: &str,
        _path: &crate::path::Path<Self::State, Self::Action>,
    ) -> Option<String> {
        None
    }
}
