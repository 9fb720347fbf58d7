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
