//! loadbearing: a model checker that proves each concurrency guard of a design is
//! load-bearing — the design holds with the guard, and the checker finds the shortest concrete
//! failure without it — and judges a real implementation's runs against the model.
//!
//! This is the front door for a design of your own: everything it needs, from this one crate.
//! A design is a [`Model`] (states, actions, properties) with a [`Spec`] (its variables by name,
//! its refinements and symmetries), its constants declared as knobs ([`knobs`]) and its guards
//! ([`Guard`]), so that [`Configured`] builds it from a suite file's constants. A model whose
//! implementation logs what it does reads those logs through [`Conform`] ([`conformance`]).
//! [`main_with`] is then the whole command line on it: `check`, `trace`, `mutate`,
//! `conform --trace`, `report`, `docs`, `list` (and `explore` with the feature `explorer`).
//!
//! ```toml
//! [dependencies]
//! loadbearing = { git = "…", default-features = false }
//! ```
//!
//! `default-features = false` compiles the engine, the built-in models and suites and the
//! design commands, and none of the project's implementations, harnesses, real engines, timely
//! or web servers (features `targets`, `distributed`, `explorer`, `actors`).
//! `docs/your-own-design.md` walks through a design from an empty crate.
//!
//! ```
//! use loadbearing::{Model, Property};
//!
//! /// A counter that must never pass 3: it stops there.
//! struct Counter;
//!
//! impl Model for Counter {
//!     type State = u8;
//!     type Action = ();
//!     fn init_states(&self) -> Vec<u8> {
//!         vec![0]
//!     }
//!     fn actions(&self, n: &u8, actions: &mut Vec<()>) {
//!         if *n < 3 {
//!             actions.push(());
//!         }
//!     }
//!     fn next_state(&self, n: &u8, _: ()) -> Option<u8> {
//!         Some(n + 1)
//!     }
//!     fn properties(&self) -> Vec<Property<Self>> {
//!         vec![Property::always("AtMostThree", |_, n| *n <= 3)]
//!     }
//! }
//!
//! assert_eq!(Counter.next_states(&2), vec![3]);
//! ```
#![warn(missing_docs)]

pub use loadbearing_refinement::{
    EventuallyAlways, Expectation, MappedRefinement, Model, Property, Refinement, Spec, Symmetry,
    Variables,
};
pub use loadbearing_registry::{model_entry, ModelEntry};
pub use loadbearing_specs::{Configured, Guard, Under};

pub use cli::{main_with, Design};
pub use loadbearing_refinement::conform::Conform;

/// A design's constants: each a knob with a name, a meaning and a range, read from a suite
/// file or `--set NAME=VALUE`, and the parameters a model is built from.
pub mod knobs {
    pub use loadbearing_specs::infra::knobs::{
        Constants, Flag, Kind, Knob, KnobError, Nat, Params, Resolved, Value,
    };
}

/// Judging an implementation's runs against the model: its vocabulary of events
/// ([`TraceEvent`]), how the model reads them ([`Conform`]), traces as sequences or histories
/// with call and return times, the values a model cannot hold ([`Beyond`]), and the judge
/// (`conform --trace FILE --model YourModel` runs [`judge`] through [`conformance_entry`]).
pub mod conformance {
    pub use loadbearing_refinement::conform::{
        check_history, search_history, Budget, HistoryOutcome, HistoryVerdict, NotLinearizable,
        PartName, PartOrder, Placed, Progress, Refused, Sequential, Spent,
    };
    pub use loadbearing_refinement::conform::{
        parse_trace, to_history_ndjson, to_ndjson, Beyond, Bound, Conform, Key, Limits, LineError,
        Timed, Trace, TraceError, TraceEvent, Verdict,
    };
    pub use loadbearing_registry::trace::{
        judge, read_trace, Decision, Judgement, TraceOptions, TraceProblem, TraceReport,
    };
    pub use loadbearing_registry::{conformance_entry, ConformEntry};
}

// The command line's own modules: what `main_with` runs. Public for the project's tests and
// benchmarks, not part of the front door.
#[doc(hidden)]
pub mod bench;
#[cfg(feature = "targets")]
#[doc(hidden)]
pub mod bench_engines;
#[doc(hidden)]
pub mod bench_histories;
#[doc(hidden)]
pub mod cli;
#[cfg(feature = "targets")]
#[doc(hidden)]
pub mod conform_table;
#[doc(hidden)]
pub mod docs;
#[doc(hidden)]
pub mod explore;
#[doc(hidden)]
pub mod histories;
#[cfg(feature = "targets")]
#[doc(hidden)]
pub mod isolation;
#[doc(hidden)]
pub mod junit;
#[doc(hidden)]
pub mod mutate;
#[doc(hidden)]
pub mod oracle;
#[doc(hidden)]
pub mod render;
#[doc(hidden)]
pub mod report;
#[cfg(feature = "actors")]
#[doc(hidden)]
pub mod run_actors;
#[doc(hidden)]
pub mod sequence;
#[doc(hidden)]
pub mod tlc;
#[doc(hidden)]
pub mod trace;
#[doc(hidden)]
pub mod typed_value;
#[doc(hidden)]
pub mod verdict;
#[cfg(feature = "targets")]
#[doc(hidden)]
pub mod workload;

#[doc(hidden)]
pub use verdict::Verdict;

// The suite, the judge and conformance are crates of their own; these names keep the CLI
// modules and the integration tests reading as before.
#[cfg(feature = "targets")]
#[doc(hidden)]
pub use loadbearing_conform as conform;
#[doc(hidden)]
pub use loadbearing_expected::{run, suite};
