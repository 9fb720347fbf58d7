//! Neither model nor engine: an SSI workload (the user's input — transactions as programs of
//! reads and conditional writes) and a schedule pinned over it, the serial-order oracle, and the
//! anomaly classifier of a history (Adya's dependency graph). The SSI model
//! (`loadbearing_specs::ssi`, which re-exports these modules under its own paths) and the SSI
//! engine (`impls/ssi`) both build on them; keeping them here lets the engine know nothing of
//! the model.

pub mod anomaly;
pub mod schedule;
pub mod serial;
pub mod workload;
