//! Refinement by step simulation under a refinement mapping.
//!
//! Every concrete step must map to a stutter (the image is unchanged) or to a step of the
//! abstract model, and every initial state must map to an abstract initial state.

use std::collections::HashSet;

use crate::report::AbstractStep;
use crate::spec::Spec;

/// How one concrete step was matched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepMatch {
    Stutter,
    /// The abstract action the step simulates, as the abstract model formats it.
    Simulates(String),
}

/// A refinement property over concrete states `S`, with the abstract model hidden behind it.
pub trait Refinement<S>: Send + Sync {
    /// The property name, as the reference names it (`RefSafeSpec`, `RefinesAtomic`).
    fn name(&self) -> &'static str;

    /// `Err` holds the abstract image of an initial state that is not an abstract initial state.
    fn check_init(&self, state: &S) -> Result<(), AbstractStep>;

    fn check_step(&self, before: &S, after: &S) -> Result<StepMatch, AbstractStep>;

    /// Checks every step out of `before` at once, returning the failures with their index in
    /// `afters`. The explorer's hot path: the image of `before` and its abstract successors are
    /// computed once per state, not once per step.
    fn check_steps(&self, before: &S, afters: &[S]) -> Vec<(usize, AbstractStep)> {
        afters
            .iter()
            .enumerate()
            .filter_map(|(i, after)| self.check_step(before, after).err().map(|e| (i, e)))
            .collect()
    }

    /// The abstract model's name and the image of `state` under the mapping, by variable: what
    /// the explorer shows beside each concrete state. `None` for a refinement without one.
    fn image(&self, _state: &S) -> Option<(String, Vec<(String, String)>)> {
        None
    }
}

type Mapping<S, A> = Box<dyn Fn(&S) -> A + Send + Sync>;

/// A refinement of abstract model `A` through a mapping function.
pub struct MappedRefinement<S, A: Spec> {
    name: &'static str,
    abstract_model: A,
    map: Mapping<S, A::State>,
    abstract_inits: HashSet<A::State>,
}

impl<S, A: Spec> MappedRefinement<S, A> {
    pub fn new(
        name: &'static str,
        abstract_model: A,
        map: impl Fn(&S) -> A::State + Send + Sync + 'static,
    ) -> Self {
        let abstract_inits = abstract_model.init_states().into_iter().collect();
        MappedRefinement {
            name,
            abstract_model,
            map: Box::new(map),
            abstract_inits,
        }
    }

    fn render(&self, state: &A::State) -> Vec<(String, String)> {
        self.abstract_model
            .variables(state)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    }
}

impl<S, A: Spec> Refinement<S> for MappedRefinement<S, A> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn image(&self, state: &S) -> Option<(String, Vec<(String, String)>)> {
        let full = std::any::type_name::<A>();
        let short = full.split('<').next().unwrap_or(full);
        let short = short.rsplit("::").next().unwrap_or(short);
        Some((short.to_string(), self.render(&(self.map)(state))))
    }

    fn check_init(&self, state: &S) -> Result<(), AbstractStep> {
        let image = (self.map)(state);
        if self.abstract_inits.contains(&image) {
            Ok(())
        } else {
            Err(AbstractStep {
                before: Vec::new(),
                after: self.render(&image),
            })
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
            let shown = format!("{action:?}");
            if self.abstract_model.next_state(&from, action).as_ref() == Some(&to) {
                return Ok(StepMatch::Simulates(shown));
            }
        }
        Err(AbstractStep {
            before: self.render(&from),
            after: self.render(&to),
        })
    }

    fn check_steps(&self, before: &S, afters: &[S]) -> Vec<(usize, AbstractStep)> {
        let from = (self.map)(before);
        let mut successors: Option<Vec<A::State>> = None;
        let mut failures = Vec::new();
        for (i, after) in afters.iter().enumerate() {
            let to = (self.map)(after);
            if to == from {
                continue;
            }
            let successors =
                successors.get_or_insert_with(|| self.abstract_model.next_states(&from));
            if !successors.contains(&to) {
                failures.push((
                    i,
                    AbstractStep {
                        before: self.render(&from),
                        after: self.render(&to),
                    },
                ));
            }
        }
        failures
    }
}
