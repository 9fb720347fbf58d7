//! Real implementations of the designs the models describe, instrumented to emit step traces.
//!
//! - [`store`]: the snapshot store API (read → `Live`/`Tombstone`/`Absent`; persist and delete
//!   → applied, a typed [`store::Conflict`], or `Indeterminate`).
//! - Backends, each guarded (compare-and-set) or last-write-wins: [`sqlite`] (always built),
//!   `postgres` (feature `postgres`) and `cassandra` (feature `cassandra`: the scylla driver and
//!   its tokio runtime). The default build has no server client at all.
//! - [`buffer`]: the snapshot buffer with the replay fence (ReplayFence).
//! - [`flow`]: the partition flow (assign → recover → fold → flush → revoke).
//! - [`trace`]: the step events, named after the model actions.
//! - [`kit`]: the store contract as cases a store of your own can run, and an in-memory
//!   example store that passes them.
//! - [`harness`]: throwaway PostgreSQL and Cassandra servers (each behind its feature), used by
//!   the tests and at run time by `conform --backend postgres|cassandra` and
//!   `isolation --postgres`.
//!
//! ```
//! use loadbearing_impls::{sqlite::SqliteStore, Read, SnapshotStore, StoreOptions, WriteError};
//!
//! let store = SqliteStore::in_memory(StoreOptions::guarded()).unwrap();
//! store.persist("key", 5, b"state").unwrap();
//! match store.persist("key", 3, b"stale") {
//!     Err(WriteError::Conflict(c)) => assert_eq!((c.attempted, c.stored), (3, 5)),
//!     other => panic!("{other:?}"),
//! }
//! store.delete("key", 7).unwrap();
//! assert_eq!(store.read("key").unwrap(), Read::Tombstone { offset: 7 });
//! ```

pub mod buffer;
#[cfg(feature = "cassandra")]
pub mod cassandra;
pub mod flow;
pub mod harness;
pub mod kit;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod sqlite;
pub mod store;
pub mod trace;

pub use store::{
    BackendError, CompoundGuards, Conflict, Mode, Offset, Read, ReadError, SnapshotStore,
    StoreOptions, WriteError,
};
