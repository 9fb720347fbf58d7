//! An MVCC key-value engine with serializable snapshot isolation as libdb implements it — the
//! engine the SSI model (`loadbearing_specs::ssi`, docs/models/ssi.md) describes — its isolation tier,
//! and PostgreSQL at SERIALIZABLE as a second opinion.
//!
//! - [`engine`]: the engine, step by step, with the model's knobs as [`engine::Variant`]s.
//! - [`trace`]: step events (NDJSON) emitted under the engine's mutex.
//! - [`program`]: the model's workloads (and a predicate one) run as transactions.
//! - [`replay`]: a model counterexample's action names driven through the engine.
//! - [`conform`]: an engine trace replayed in the model, event by event.
//! - [`tier`]: the isolation tier — scenarios on real threads with the timing they name.
//! - [`race`]: a workload file raced freely on a store, each history classified (G2-item…).
//! - [`analysis`]: was an SSI abort needed? The key-level dependency graph of a history.
//! - `postgres` (feature `postgres`): the same scenarios on PostgreSQL at SERIALIZABLE.
//! - [`report`]: the tier's tables.

pub mod analysis;
pub mod conform;
pub mod engine;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod program;
pub mod race;
pub mod replay;
pub mod report;
pub mod tier;
pub mod trace;
