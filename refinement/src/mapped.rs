//! A refinement of an abstract model through a mapping function on states.
//!
//! Kept apart from the `Refinement` trait because it needs `Spec` (the abstract model's), while
//! `Spec` needs the trait (a model lists its refinements): the trait module imports neither.

use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::Arc;

use thread_local::ThreadLocal;

use crate::image::{AbstractAction, AbstractState, AbstractStep};
use crate::refinement::{Refinement, StepMatch};
use crate::spec::Spec;

type Mapping<S, A> = Box<dyn Fn(&S) -> A + Send + Sync>;

/// One thread's room for an abstract state's actions and successors, emptied and filled again
/// for each concrete state.
struct Scratch<A: Spec> {
    actions: Vec<A::Action>,
    successors: Vec<A::State>,
}

impl<A: Spec> Default for Scratch<A> {
    fn default() -> Self {
        Scratch {
            actions: Vec::new(),
            successors: Vec::new(),
        }
    }
}

/// A refinement of abstract model `A` through a mapping function.
pub struct MappedRefinement<S, A: Spec> {
    name: &'static str,
    abstract_name: Arc<str>,
    abstract_model: Arc<A>,
    map: Mapping<S, A::State>,
    abstract_inits: HashSet<A::State>,
    /// Per search thread. A vector of successors made and freed for every concrete state
    /// (the abstract model's `next_states`) cost a tenth of a refinement search's time.
    scratch: ThreadLocal<RefCell<Scratch<A>>>,
}

/// A model's name as people know it: its type's name without the module path or parameters.
fn short_type_name<A>() -> &'static str {
    let full = std::any::type_name::<A>();
    let short = full.split('<').next().unwrap_or(full);
    short.rsplit("::").next().unwrap_or(short)
}

impl<S, A: Spec + 'static> MappedRefinement<S, A> {
    pub fn new(
        name: &'static str,
        abstract_model: A,
        map: impl Fn(&S) -> A::State + Send + Sync + 'static,
    ) -> Self {
        let abstract_inits = abstract_model.init_states().into_iter().collect();
        MappedRefinement {
            name,
            abstract_name: short_type_name::<A>().into(),
            abstract_model: Arc::new(abstract_model),
            map: Box::new(map),
            abstract_inits,
            scratch: ThreadLocal::new(),
        }
    }

    fn state(&self, state: A::State) -> AbstractState {
        AbstractState::new(&self.abstract_model, state)
    }

    fn finding(&self, before: Option<A::State>, after: A::State) -> AbstractStep {
        AbstractStep {
            model: Arc::clone(&self.abstract_name),
            before: before.map(|s| self.state(s)),
            after: self.state(after),
        }
    }
}

impl<S, A: Spec + 'static> Refinement<S> for MappedRefinement<S, A> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn abstract_model(&self) -> &str {
        &self.abstract_name
    }

    fn image(&self, state: &S) -> AbstractState {
        self.state((self.map)(state))
    }

    fn check_init(&self, state: &S) -> Result<(), AbstractStep> {
        let image = (self.map)(state);
        if self.abstract_inits.contains(&image) {
            Ok(())
        } else {
            Err(self.finding(None, image))
        }
    }

    fn check_step(&self, before: &S, after: &S) -> Result<StepMatch, AbstractStep> {
        let from = (self.map)(before);
        let to = (self.map)(after);
        if from == to {
            return Ok(StepMatch::Stutter);
        }
        let mut actions = Vec::new();
        self.abstract_model.actions(&from, &mut actions);
        for action in actions {
            if self
                .abstract_model
                .next_state(&from, action.clone())
                .as_ref()
                == Some(&to)
            {
                return Ok(StepMatch::Simulates(AbstractAction::new(
                    &self.abstract_model,
                    action,
                )));
            }
        }
        Err(self.finding(Some(from), to))
    }

    fn check_steps(&self, before: &S, afters: &[S]) -> Vec<(usize, AbstractStep)> {
        let from = (self.map)(before);
        let mut scratch = self.scratch.get_or_default().borrow_mut();
        let Scratch {
            actions,
            successors,
        } = &mut *scratch;
        let mut computed = false;
        let mut failures = Vec::new();
        for (i, after) in afters.iter().enumerate() {
            let to = (self.map)(after);
            if to == from {
                continue;
            }
            // Once a state, when its first step that is no stutter asks.
            if !computed {
                actions.clear();
                successors.clear();
                self.abstract_model.actions(&from, actions);
                successors.extend(
                    actions
                        .drain(..)
                        .filter_map(|action| self.abstract_model.next_state(&from, action)),
                );
                computed = true;
            }
            if !successors.contains(&to) {
                failures.push((i, self.finding(Some(from.clone()), to)));
            }
        }
        failures
    }
}
