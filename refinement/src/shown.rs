//! A path as people read it, made from the typed path at the edge (tables, JSON, pictures):
//! each step's actor and action as the model formats them, the state by the model's variable
//! names, and only the variables the step changed. Nothing reads these strings back.

use serde::Serialize;

use crate::image::AbstractStep;
use crate::report::CounterexampleOf;
use crate::shown_value::Shown;
use crate::spec::Spec;

/// One state on a shown path, with the action that reached it (`None` for the initial state).
#[derive(Clone, Debug, Serialize)]
pub struct ShownStep {
    pub action: Option<String>,
    pub actor: Option<String>,
    pub state: Vec<(String, Shown)>,
    /// The variables this step changed, with their new values.
    pub changed: Vec<(String, Shown)>,
}

/// The abstract images of a step that breaks a refinement, by the abstract model's variables.
#[derive(Clone, Debug, Serialize)]
pub struct ShownAbstractStep {
    /// The abstract model's name.
    pub model: String,
    /// Empty when an initial state maps to no abstract initial state.
    pub before: Vec<(String, Shown)>,
    pub after: Vec<(String, Shown)>,
}

impl ShownAbstractStep {
    pub fn of(step: &AbstractStep) -> Self {
        ShownAbstractStep {
            model: step.model.to_string(),
            before: step
                .before
                .as_ref()
                .map(|s| s.variables())
                .unwrap_or_default(),
            after: step.after.variables(),
        }
    }
}

/// A counterexample (or witness) as people read it.
#[derive(Clone, Debug, Serialize)]
pub struct ShownPath {
    pub property: String,
    pub steps: Vec<ShownStep>,
    /// See [`crate::Counterexample::loop_start`].
    pub loop_start: Option<usize>,
    pub abstract_step: Option<ShownAbstractStep>,
    pub fairness_note: Option<String>,
    /// Why the path violates the property, where the model says more than its name
    /// ([`Spec::explain_violation`]).
    pub explanation: Option<String>,
}

impl ShownPath {
    /// `cx` as `model` shows its states and actions.
    pub fn of<M: Spec>(model: &M, cx: &CounterexampleOf<M>) -> Self {
        let mut steps = vec![shown_step(model, None, None, cx.path.init())];
        for (before, action, after) in cx.path.transitions() {
            steps.push(shown_step(model, Some(action), Some(before), after));
        }
        ShownPath {
            property: cx.property.clone(),
            steps,
            loop_start: cx.loop_start,
            abstract_step: cx.abstract_step.as_ref().map(ShownAbstractStep::of),
            fairness_note: cx.fairness_note.clone(),
            explanation: model.explain_violation(&cx.property, &cx.path),
        }
    }

    /// The number of transitions on the path (the initial state is not a transition).
    pub fn len(&self) -> usize {
        self.steps.len().saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The actions as the model formats them, in order.
    pub fn actions(&self) -> Vec<String> {
        self.steps.iter().filter_map(|s| s.action.clone()).collect()
    }
}

fn shown_step<M: Spec>(
    model: &M,
    action: Option<&M::Action>,
    before: Option<&M::State>,
    after: &M::State,
) -> ShownStep {
    let now = model.variables(after);
    let changed = match before {
        None => Vec::new(),
        Some(before) => {
            let then = model.variables(before);
            now.iter()
                .zip(then)
                .filter(|(n, t)| n.1 != t.1)
                .map(|(n, _)| (n.0.to_string(), n.1.clone()))
                .collect()
        }
    };
    ShownStep {
        action: action.map(|a| model.format_action(a)),
        actor: action.map(|a| model.actor(a)),
        state: now.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        changed,
    }
}
