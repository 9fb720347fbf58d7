//! The `loadbearing` CLI's library half: the suite of configs, running and judging them, and
//! rendering results for people and for machines.

pub mod bench;
#[cfg(feature = "targets")]
pub mod bench_engines;
pub mod bench_histories;
pub mod cli;
#[cfg(feature = "targets")]
pub mod conform_table;
pub mod docs;
pub mod explore;
pub mod histories;
#[cfg(feature = "targets")]
pub mod isolation;
pub mod junit;
pub mod mutate;
pub mod oracle;
pub mod render;
pub mod report;
#[cfg(feature = "actors")]
pub mod run_actors;
pub mod sequence;
pub mod tlc;
pub mod trace;
pub mod typed_value;
pub mod verdict;
#[cfg(feature = "targets")]
pub mod workload;

pub use verdict::Verdict;

// The suite, the judge and conformance moved into crates of their own; these names keep the
// CLI modules and the integration tests reading as before.
#[cfg(feature = "targets")]
pub use loadbearing_conform as conform;
pub use loadbearing_expected::{run, suite};
