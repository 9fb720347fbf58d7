//! A model as the engine explores it: the states a system can be in, the actions it may take
//! from each, and the properties it must have.
//!
//! The shape is Stateright's `Model` (the same names and meanings, so a Stateright model ports
//! by changing an import), declared here so that the engine, and a design built on it, depend
//! on no more than they use: Stateright, and the web server its explorer brings, come in only
//! with the explorer and the actor models (features `explorer`, `actors`).

use std::fmt::Debug;

/// A system as states and steps.
///
/// ```
/// use loadbearing_refinement::{Model, Property};
///
/// /// A counter that stops at 3.
/// struct Ticker;
///
/// impl Model for Ticker {
///     type State = u8;
///     type Action = ();
///     fn init_states(&self) -> Vec<u8> {
///         vec![0]
///     }
///     fn actions(&self, s: &u8, actions: &mut Vec<()>) {
///         if *s < 3 {
///             actions.push(());
///         }
///     }
///     fn next_state(&self, s: &u8, _: ()) -> Option<u8> {
///         Some(s + 1)
///     }
///     fn properties(&self) -> Vec<Property<Self>> {
///         vec![Property::always("AtMostThree", |_, s| *s <= 3)]
///     }
/// }
///
/// assert_eq!(Ticker.next_states(&1), vec![2]);
/// assert_eq!(Ticker.properties()[0].name, "AtMostThree");
/// ```
pub trait Model: Sized {
    /// What the system remembers.
    type State;
    /// A step it may take.
    type Action;

    /// The states the system may start in.
    fn init_states(&self) -> Vec<Self::State>;

    /// The actions enabled in `state`, pushed onto `actions`.
    fn actions(&self, state: &Self::State, actions: &mut Vec<Self::Action>);

    /// The state `action` leads to from `last_state` (`None`: it changes nothing that counts,
    /// or is not possible after all).
    fn next_state(&self, last_state: &Self::State, action: Self::Action) -> Option<Self::State>;

    /// The action as people read it (a counterexample's steps, the explorer).
    fn format_action(&self, action: &Self::Action) -> String
    where
        Self::Action: Debug,
    {
        format!("{action:?}")
    }

    /// Every state one step from `last_state`.
    fn next_states(&self, last_state: &Self::State) -> Vec<Self::State> {
        let mut actions = Vec::new();
        self.actions(last_state, &mut actions);
        actions
            .into_iter()
            .filter_map(|action| self.next_state(last_state, action))
            .collect()
    }

    /// The properties the system must have.
    fn properties(&self) -> Vec<Property<Self>> {
        Vec::new()
    }

    /// A picture of the run from `init` through `actions` (an actor system's sequence
    /// diagram), when the model draws one.
    fn as_svg(&self, _init: &Self::State, _actions: &[Self::Action]) -> Option<String> {
        None
    }
}

/// A property of a model: a name, what is expected of it, and the condition on a state.
///
/// ```
/// use loadbearing_refinement::Expectation;
/// # use loadbearing_refinement::{Model, Property, Spec, Variables};
/// # struct Counter;
/// # impl Model for Counter {
/// #     type State = u8;
/// #     type Action = ();
/// #     fn init_states(&self) -> Vec<u8> { vec![0] }
/// #     fn actions(&self, n: &u8, a: &mut Vec<()>) { if *n < 3 { a.push(()) } }
/// #     fn next_state(&self, n: &u8, _: ()) -> Option<u8> { Some(n + 1) }
/// # }
/// let bounded: Property<Counter> = Property::always("AtMostThree", |_, n| *n <= 3);
/// let reaches: Property<Counter> = Property::sometimes("ReachesTwo", |_, n| *n == 2);
/// assert_eq!(bounded.expectation, Expectation::Always);
/// assert_eq!(reaches.expectation, Expectation::Sometimes);
/// assert!((bounded.condition)(&Counter, &3) && !(bounded.condition)(&Counter, &4));
/// ```
pub struct Property<M: Model> {
    pub expectation: Expectation,
    pub name: &'static str,
    pub condition: fn(&M, &M::State) -> bool,
}

impl<M: Model> Property<M> {
    /// Holds in every reachable state (a safety property): a violation is a counterexample.
    pub fn always(name: &'static str, condition: fn(&M, &M::State) -> bool) -> Property<M> {
        Property {
            expectation: Expectation::Always,
            name,
            condition,
        }
    }

    /// Becomes true on every behaviour (a liveness property, under the model's fairness).
    pub fn eventually(name: &'static str, condition: fn(&M, &M::State) -> bool) -> Property<M> {
        Property {
            expectation: Expectation::Eventually,
            name,
            condition,
        }
    }

    /// Holds in some reachable state: a witness that something is possible (no vacuous pass).
    pub fn sometimes(name: &'static str, condition: fn(&M, &M::State) -> bool) -> Property<M> {
        Property {
            expectation: Expectation::Sometimes,
            name,
            condition,
        }
    }
}

impl<M: Model> Clone for Property<M> {
    fn clone(&self) -> Self {
        Property {
            expectation: self.expectation.clone(),
            name: self.name,
            condition: self.condition,
        }
    }
}

/// What a property expects of the states: what a config's failure means (`Always`: a state
/// breaks it; `Sometimes`: no state reaches it; `Eventually`: a fair behaviour never does).
///
/// ```
/// use loadbearing_refinement::Expectation;
/// # use loadbearing_refinement::{Model, Property, Spec, Variables};
/// # struct Counter;
/// # impl Model for Counter {
/// #     type State = u8;
/// #     type Action = ();
/// #     fn init_states(&self) -> Vec<u8> { vec![0] }
/// #     fn actions(&self, n: &u8, a: &mut Vec<()>) { if *n < 3 { a.push(()) } }
/// #     fn next_state(&self, n: &u8, _: ()) -> Option<u8> { Some(n + 1) }
/// # }
/// let fair: Property<Counter> = Property::eventually("ReachesThree", |_, n| *n == 3);
/// assert_eq!(fair.expectation, Expectation::Eventually);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Expectation {
    /// True in every reachable state.
    Always,
    /// Eventually true on every behaviour.
    Eventually,
    /// True in at least one reachable state.
    Sometimes,
}
