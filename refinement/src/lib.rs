//! Our explicit-state engine over a model's states and steps (`Model`, Stateright's shape).
//!
//! Stateright's own checkers do not return shortest counterexamples from their parallel BFS, check
//! `eventually` without cycles or fairness, and know nothing of refinement. This crate does those
//! three things, with typed outcomes so a caller can tell *which* property failed, and typed
//! paths so a caller can drive an implementation along them.

mod abstract_of;
pub mod allocator;
mod bits;
pub mod budget;
pub mod check;
mod components;
#[cfg(feature = "distributed")]
pub mod distributed;
mod erased;
pub mod explore;
mod extend;
pub mod fingerprint;
pub mod floor;
pub mod graph;
mod huge_pages;
mod image;
mod liveness;
mod mapped;
mod model;
pub mod path;
mod prefetch;
pub mod progress;
pub mod refinement;
mod report;
pub mod shown;
mod shown_value;
mod spec;
pub mod symmetry;
mod tarjan;
mod threads;
pub mod view;
mod visited;
mod zeroed;

pub use budget::{Exhausted, Limit};
pub use check::{check, CheckSpec, Options, SpecError};
pub use erased::{erase, AnyReport};
pub use image::{AbstractAction, AbstractState, AbstractStep};
pub use mapped::MappedRefinement;
pub use model::{Expectation, Model, Property};
pub use path::Path;
pub use refinement::{Refinement, StepMatch};
pub use report::{Counterexample, CounterexampleOf, Outcome, Report, ReportOf};
pub use shown::{ShownAbstractStep, ShownPath, ShownStep};
pub use shown_value::Shown;
pub use spec::{EventuallyAlways, Spec, Symmetry, Variables};
