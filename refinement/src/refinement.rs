//! Refinement by step simulation: what a refinement property answers about concrete states.
//!
//! Every concrete step must map to a stutter (the image is unchanged) or to a step of the
//! abstract model, and every initial state must map to an abstract initial state. The one
//! implementation, through a mapping function, is [`MappedRefinement`](crate::MappedRefinement).

use crate::image::{AbstractAction, AbstractState, AbstractStep};

/// How one concrete step was matched.
#[derive(Clone, Debug)]
pub enum StepMatch {
    Stutter,
    /// The abstract action the step simulates (the first, in the abstract model's order).
    Simulates(AbstractAction),
}

/// A refinement property over concrete states `S`, with the abstract model hidden behind it.
/// [`MappedRefinement`](crate::MappedRefinement) is the one a design writes: a mapping from its
/// states to an abstract model's.
///
/// ```
/// use loadbearing_refinement::{MappedRefinement, Refinement, StepMatch};
/// # use loadbearing_refinement::{Model, Property, Spec, Variables};
/// # struct Counter;
/// # impl Model for Counter {
/// #     type State = u8;
/// #     type Action = ();
/// #     fn init_states(&self) -> Vec<u8> { vec![0] }
/// #     fn actions(&self, n: &u8, a: &mut Vec<()>) { if *n < 3 { a.push(()) } }
/// #     fn next_state(&self, n: &u8, _: ()) -> Option<u8> { Some(n + 1) }
/// # }
/// # impl Spec for Counter {
/// #     fn variables(&self, n: &u8) -> Variables { vec![("n", n.into())] }
/// # }
/// // A design whose state is (count, steps taken), mapped to Counter by its count.
/// let refines: Box<dyn Refinement<(u8, u8)>> =
///     Box::new(MappedRefinement::new("RefCounter", Counter, |s: &(u8, u8)| s.0));
/// assert!(refines.check_init(&(0, 0)).is_ok());
/// assert!(matches!(refines.check_step(&(0, 0), &(1, 1)), Ok(StepMatch::Simulates(_))));
/// assert!(matches!(refines.check_step(&(1, 1), &(1, 2)), Ok(StepMatch::Stutter)));
/// assert!(refines.check_step(&(1, 1), &(3, 2)).is_err()); // a jump Counter cannot take
/// ```
pub trait Refinement<S>: Send + Sync {
    /// The property name, as the reference names it (`RefSafeSpec`, `RefinesAtomic`).
    fn name(&self) -> &'static str;

    /// The name of the abstract model the property maps onto (`SingleWriterStore`).
    fn abstract_model(&self) -> &str;

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

    /// The image of `state` under the mapping: what the explorer shows beside each concrete
    /// state.
    fn image(&self, state: &S) -> AbstractState;
}
