//! How a model's own states and actions become the abstract values of [`crate::image`]: each
//! keeps its model, so it renders by that model's variables and action format.

use std::any::Any;
use std::sync::Arc;

use crate::image::{Abstract, AbstractAction, AbstractActionOf, AbstractState, AbstractStateOf};
use crate::shown_value::Shown;
use crate::spec::Spec;

struct Of<A: Spec, T> {
    model: Arc<A>,
    value: T,
}

impl<A: Spec + 'static, T: Send + Sync + 'static> Abstract for Of<A, T> {
    fn value(&self) -> &dyn Any {
        &self.value
    }
}

impl<A: Spec + 'static> AbstractStateOf for Of<A, A::State> {
    fn variables(&self) -> Vec<(String, Shown)> {
        self.model
            .variables(&self.value)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    }
}

impl<A: Spec + 'static> AbstractActionOf for Of<A, A::Action> {
    fn shown(&self) -> String {
        self.model.format_action(&self.value)
    }
}

impl AbstractState {
    pub fn new<A: Spec + 'static>(model: &Arc<A>, state: A::State) -> Self {
        AbstractState(Arc::new(Of {
            model: Arc::clone(model),
            value: state,
        }))
    }
}

impl AbstractAction {
    pub fn new<A: Spec + 'static>(model: &Arc<A>, action: A::Action) -> Self {
        AbstractAction(Arc::new(Of {
            model: Arc::clone(model),
            value: action,
        }))
    }
}
