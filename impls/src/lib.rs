//! Real implementations of the designs the models describe, instrumented to emit step traces.
//!
//! - [`store`]: the snapshot store API (read → `Live`/`Tombstone`/`Absent`; persist and delete
//!   → applied, a typed [`store::Conflict`], or `Indeterminate`).
//! - Backends, each guarded (compare-and-set) or last-write-wins: [`sqlite`], [`postgres`],
//!   [`cassandra`].
//! - [`buffer`]: the snapshot buffer with the replay fence (ReplayFence).
//! - [`flow`]: the partition flow (assign → recover → fold → flush → revoke).
//! - [`trace`]: the step events, named after the model actions.
//! - [`harness`]: throwaway PostgreSQL and Cassandra servers for the tests.

pub mod buffer;
pub mod cassandra;
pub mod flow;
pub mod harness;
pub mod postgres;
pub mod sqlite;
pub mod store;
pub mod trace;

pub use store::{Conflict, Mode, Offset, Read, ReadError, SnapshotStore, StoreOptions, WriteError};
