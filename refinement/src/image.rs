//! The abstract side of a refinement as values: the abstract model's states and actions in its
//! own types, behind the concrete model's `dyn Refinement`. Each value keeps the abstract model
//! it belongs to, so it is shown (by variable, or as the abstract model formats an action) only
//! where a person reads it, and a caller that knows the abstract model takes the typed value
//! back with `downcast_ref`. A model's values become abstract values in `abstract_of`, the one
//! place that knows the `Spec` trait, so these types sit below it.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use crate::shown_value::Shown;

/// What every abstract value offers without naming its model's types.
pub(crate) trait Abstract: Send + Sync {
    fn value(&self) -> &dyn Any;
}

pub(crate) trait AbstractStateOf: Abstract {
    fn variables(&self) -> Vec<(String, Shown)>;
}

pub(crate) trait AbstractActionOf: Abstract {
    fn shown(&self) -> String;
}

/// A state of a refinement's abstract model.
#[derive(Clone)]
pub struct AbstractState(pub(crate) Arc<dyn AbstractStateOf>);

impl AbstractState {
    /// The state's variables by the abstract model's names, as that model renders them.
    pub fn variables(&self) -> Vec<(String, Shown)> {
        self.0.variables()
    }

    /// The typed state, when `T` is the abstract model's state type.
    pub fn downcast_ref<T: 'static>(&self) -> Option<&T> {
        self.0.value().downcast_ref()
    }
}

impl fmt::Debug for AbstractState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.variables()).finish()
    }
}

/// An action of a refinement's abstract model: the step a concrete step simulates.
#[derive(Clone)]
pub struct AbstractAction(pub(crate) Arc<dyn AbstractActionOf>);

impl AbstractAction {
    /// The typed action, when `T` is the abstract model's action type.
    pub fn downcast_ref<T: 'static>(&self) -> Option<&T> {
        self.0.value().downcast_ref()
    }
}

/// As the abstract model formats the action.
impl fmt::Display for AbstractAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.shown())
    }
}

impl fmt::Debug for AbstractAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.shown())
    }
}

/// A concrete step (or initial state) that maps to no step (or initial state) of the abstract
/// model, and is no stutter: the refinement's finding.
#[derive(Clone, Debug)]
pub struct AbstractStep {
    /// The abstract model's name (`SingleWriterStore`).
    pub model: Arc<str>,
    /// The image of the state the step leaves; `None` when an initial state maps to no
    /// abstract initial state.
    pub before: Option<AbstractState>,
    /// The image of the state the step reaches (or of the initial state).
    pub after: AbstractState,
}
