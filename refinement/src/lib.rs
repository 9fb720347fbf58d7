//! Our explicit-state engine over Stateright's public `Model` API.
//!
//! Stateright's own checkers do not return shortest counterexamples from their parallel BFS, check
//! `eventually` without cycles or fairness, and know nothing of refinement. This crate does those
//! three things, with typed outcomes so a caller can tell *which* property failed.

pub mod check;
pub mod conform;
pub mod explore;
pub mod fingerprint;
pub mod graph;
pub mod liveness;
pub mod refinement;
pub mod report;
pub mod spec;
pub mod view;
pub mod visited;

pub use check::{check, CheckSpec, Options, SpecError};
pub use refinement::{MappedRefinement, Refinement, StepMatch};
pub use report::{Counterexample, Outcome, Report, Step};
pub use spec::{Spec, Variables};
