//! What a model offers the engine beyond Stateright's `Model`.

use std::fmt::Debug;
use std::hash::Hash;

use crate::model::Model;
use crate::shown_value::Shown;

use crate::refinement::Refinement;

/// A set of interchangeable values of one model instance: its name as the spec gives it
/// (`Writers`) and how many it holds. A spec declares its own (`Spec::symmetries`); the
/// reduction by them is `symmetry`'s.
///
/// ```
/// use loadbearing_refinement::{Model, Spec, Symmetry, Variables};
///
/// /// Two clients, each holding a flag; which is which does not matter.
/// struct Pair;
/// impl Model for Pair {
///     type State = [bool; 2];
///     type Action = usize;
///     fn init_states(&self) -> Vec<[bool; 2]> { vec![[false, false]] }
///     fn actions(&self, _: &[bool; 2], a: &mut Vec<usize>) { a.extend([0, 1]) }
///     fn next_state(&self, s: &[bool; 2], c: usize) -> Option<[bool; 2]> {
///         let mut next = *s;
///         next[c] = true;
///         Some(next)
///     }
/// }
/// impl Spec for Pair {
///     fn variables(&self, s: &[bool; 2]) -> Variables {
///         vec![("c1", s[0].into()), ("c2", s[1].into())]
///     }
///     fn symmetries(&self) -> Vec<Symmetry> {
///         vec![Symmetry { name: "Clients", size: 2 }]
///     }
///     /// One representative of each orbit: the flags sorted.
///     fn canonical(&self, s: &[bool; 2], _symmetry: usize) -> Option<[bool; 2]> {
///         let mut sorted = *s;
///         sorted.sort();
///         Some(sorted)
///     }
/// }
///
/// assert_eq!(Pair.canonical(&[true, false], 0), Some([false, true]));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symmetry {
    pub name: &'static str,
    pub size: usize,
}

/// A state's variables by the spec's names, each as the model shows it ([`Shown`]).
///
/// ```
/// use loadbearing_refinement::{Shown, Variables};
///
/// let vars: Variables = vec![("n", 2u8.into()), ("log", Shown::sequence([1u8, 2]))];
/// assert_eq!(vars[1].1.text(), "<1, 2>");
/// ```
pub type Variables = Vec<(&'static str, Shown)>;

/// A `<>[]P` property: on every fair behaviour, P eventually holds and then holds for good.
/// Stateright's `Property` kinds stop at `<>P`, which is weaker (a behaviour may pass through
/// P and leave it again), so a model declares these separately.
///
/// ```
/// use loadbearing_refinement::EventuallyAlways;
/// # use loadbearing_refinement::{Model, Property, Spec, Variables};
/// # struct Counter;
/// # impl Model for Counter {
/// #     type State = u8;
/// #     type Action = ();
/// #     fn init_states(&self) -> Vec<u8> { vec![0] }
/// #     fn actions(&self, n: &u8, a: &mut Vec<()>) { if *n < 3 { a.push(()) } }
/// #     fn next_state(&self, n: &u8, _: ()) -> Option<u8> { Some(n + 1) }
/// # }
/// impl Spec for Counter {
///     fn variables(&self, n: &u8) -> Variables {
///         vec![("n", n.into())]
///     }
///     fn eventually_always(&self) -> Vec<EventuallyAlways<Self>> {
///         vec![EventuallyAlways::new("SettlesAtThree", |_, n| *n == 3)]
///     }
/// }
///
/// assert_eq!(Counter.eventually_always()[0].name, "SettlesAtThree");
/// ```
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
/// ```
/// use loadbearing_refinement::{check, CheckSpec, Options, Outcome, ShownPath};
/// # use loadbearing_refinement::{Model, Property, Spec, Variables};
/// # struct Counter;
/// # impl Model for Counter {
/// #     type State = u8;
/// #     type Action = ();
/// #     fn init_states(&self) -> Vec<u8> { vec![0] }
/// #     fn actions(&self, n: &u8, a: &mut Vec<()>) { if *n < 3 { a.push(()) } }
/// #     fn next_state(&self, n: &u8, _: ()) -> Option<u8> { Some(n + 1) }
/// # }
/// impl Spec for Counter {
///     fn variables(&self, n: &u8) -> Variables {
///         vec![("n", n.into())]
///     }
///     fn actor(&self, _: &()) -> String {
///         "counter".into()
///     }
/// }
///
/// // A property the spec names is checked; its counterexample reads by the spec's variables.
/// struct Bounded;
/// let spec = CheckSpec {
///     properties: vec!["BelowThree".into()],
///     fair: false,
///     allow_end_states: true,
///     symmetry: vec![],
/// };
/// # impl Model for Bounded {
/// #     type State = u8;
/// #     type Action = ();
/// #     fn init_states(&self) -> Vec<u8> { Counter.init_states() }
/// #     fn actions(&self, n: &u8, a: &mut Vec<()>) { Counter.actions(n, a) }
/// #     fn next_state(&self, n: &u8, a: ()) -> Option<u8> { Counter.next_state(n, a) }
/// #     fn properties(&self) -> Vec<Property<Self>> {
/// #         vec![Property::always("BelowThree", |_, n| *n < 3)]
/// #     }
/// # }
/// # impl Spec for Bounded {
/// #     fn variables(&self, n: &u8) -> Variables { Counter.variables(n) }
/// # }
/// let report = check(&Bounded, &spec, &Options::default()).unwrap();
/// assert_eq!(report.outcome, Outcome::Violates("BelowThree".into()));
/// let shown = ShownPath::of(&Bounded, &report.counterexample.unwrap());
/// assert_eq!(shown.steps.last().unwrap().state[0].1.text(), "3");
/// ```
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
