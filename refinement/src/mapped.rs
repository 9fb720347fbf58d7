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

/// One thread's room for an abstract state's actions and the successors computed so far,
/// emptied and filled again for each concrete state.
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

/// A refinement of abstract model `A` through a mapping function: every step of the concrete
/// model must map to a step of `A`, or leave the image unchanged (a stutter), and every initial
/// state must map to one of `A`'s. A model names it in [`Spec::refinements`]; a check lists it
/// among its properties by name, and a step that maps to no step of `A` is its counterexample.
///
/// ```
/// use loadbearing_refinement::{check, CheckSpec, Options, Outcome};
/// use loadbearing_refinement::{MappedRefinement, Model, Property, Refinement, Spec, Variables};
///
/// /// The abstract spec: a counter that only ever goes up by one, to 3.
/// struct Counter;
/// impl Model for Counter {
///     type State = u8;
///     type Action = ();
///     fn init_states(&self) -> Vec<u8> {
///         vec![0]
///     }
///     fn actions(&self, n: &u8, actions: &mut Vec<()>) {
///         if *n < 3 {
///             actions.push(());
///         }
///     }
///     fn next_state(&self, n: &u8, _: ()) -> Option<u8> {
///         Some(n + 1)
///     }
/// }
/// impl Spec for Counter {
///     fn variables(&self, n: &u8) -> Variables {
///         vec![("n", n.into())]
///     }
/// }
///
/// /// The design: a counter with a log of what it did; `skips` lets it jump by two.
/// struct Logged {
///     skips: bool,
/// }
/// impl Model for Logged {
///     type State = (u8, u8); // (count, steps taken)
///     type Action = u8; // how far a step goes
///     fn init_states(&self) -> Vec<(u8, u8)> {
///         vec![(0, 0)]
///     }
///     fn actions(&self, s: &(u8, u8), actions: &mut Vec<u8>) {
///         if s.0 < 3 {
///             actions.push(1);
///         }
///         if self.skips && s.0 < 2 {
///             actions.push(2);
///         }
///     }
///     fn next_state(&self, s: &(u8, u8), by: u8) -> Option<(u8, u8)> {
///         Some((s.0 + by, s.1 + 1))
///     }
///     fn properties(&self) -> Vec<Property<Self>> {
///         vec![]
///     }
/// }
/// impl Spec for Logged {
///     fn variables(&self, s: &(u8, u8)) -> Variables {
///         vec![("count", s.0.into()), ("steps", s.1.into())]
///     }
///     fn refinements(&self) -> Vec<Box<dyn Refinement<(u8, u8)>>> {
///         // The image of a state is its count; the log is the design's own business.
///         vec![Box::new(MappedRefinement::new("RefCounter", Counter, |s: &(u8, u8)| s.0))]
///     }
/// }
///
/// let spec = CheckSpec {
///     properties: vec!["RefCounter".into()],
///     fair: false,
///     allow_end_states: true,
///     symmetry: vec![],
/// };
/// let holds = check(&Logged { skips: false }, &spec, &Options::default()).unwrap();
/// assert_eq!(holds.outcome, Outcome::Holds);
/// // A jump by two maps to no step of Counter: the shortest path to it is one step long.
/// let fails = check(&Logged { skips: true }, &spec, &Options::default()).unwrap();
/// assert_eq!(fails.outcome, Outcome::Violates("RefCounter".into()));
/// assert_eq!(fails.counterexample.unwrap().path.len(), 1);
/// ```
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
        // The abstract actions out of `from`, listed when a step that is no stutter first
        // asks; their successors computed in order only as far as a step's image needs (most
        // steps map to a stutter or to one abstract step), and kept for the next step.
        let mut listed = false;
        let mut stepped = 0;
        let mut failures = Vec::new();
        for (i, after) in afters.iter().enumerate() {
            let to = (self.map)(after);
            if to == from {
                continue;
            }
            if !listed {
                actions.clear();
                successors.clear();
                self.abstract_model.actions(&from, actions);
                listed = true;
            }
            let mut simulated = successors.contains(&to);
            while !simulated && stepped < actions.len() {
                let action = actions[stepped].clone();
                stepped += 1;
                if let Some(next) = self.abstract_model.next_state(&from, action) {
                    simulated = next == to;
                    successors.push(next);
                }
            }
            if !simulated {
                failures.push((i, self.finding(Some(from.clone()), to)));
            }
        }
        failures
    }
}

#[cfg(test)]
mod tests {
    use crate::model::Model;

    use super::*;
    use crate::spec::Variables;

    /// A counter that may add 1, 2 or 3, and refuses to pass 4 (so an action can give no
    /// state): the abstract side of the tests.
    struct Adder;

    impl Model for Adder {
        type State = u8;
        type Action = u8;

        fn init_states(&self) -> Vec<u8> {
            vec![0]
        }

        fn actions(&self, _: &u8, actions: &mut Vec<u8>) {
            actions.extend([1, 2, 3]);
        }

        fn next_state(&self, s: &u8, add: u8) -> Option<u8> {
            (s + add <= 4).then_some(s + add)
        }
    }

    impl Spec for Adder {
        fn variables(&self, s: &u8) -> Variables {
            vec![("n", s.into())]
        }
    }

    fn failing(refinement: &MappedRefinement<u8, Adder>, before: u8, afters: &[u8]) -> Vec<usize> {
        let failures = refinement.check_steps(&before, afters);
        failures.into_iter().map(|(i, _)| i).collect()
    }

    #[test]
    fn every_step_is_judged_whatever_order_the_abstract_successors_are_needed_in() {
        let refinement = MappedRefinement::new("RefinesAdder", Adder, |s: &u8| *s);
        // 1 + 3 is met after its successor was computed for 1 + 1 and 1 + 2 on the way to it;
        // 1 + 1 is then found among those kept; 1 itself is a stutter; 7 is no abstract step.
        assert_eq!(failing(&refinement, 1, &[4, 2, 1, 7, 3]), [3]);
        // Past 4 the abstract model has no successor for that action: 3 + 2 is refused.
        assert_eq!(failing(&refinement, 3, &[5, 4]), [0]);
        // Going back is never a step, even after the actions were all stepped.
        assert_eq!(failing(&refinement, 2, &[4, 0, 3]), [1]);
        assert!(failing(&refinement, 0, &[]).is_empty());
    }
}
