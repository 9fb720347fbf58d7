//! Real implementations of the designs the models describe, instrumented to emit step traces.
//!
//! - [`store`]: the snapshot store API (read → `Live`/`Tombstone`/`Absent`; persist and delete
//!   → applied, a typed [`store::Conflict`], or `Indeterminate`).
//! - [`servers`]: the stores by database, each guarded (compare-and-set) or last-write-wins:
//!   SQLite (always built), PostgreSQL (feature `postgres`) and Cassandra (feature `cassandra`:
//!   the scylla driver and its tokio runtime), each with the launcher of its throwaway server,
//!   and [`servers::StoreBackend`], what the rest of the workspace opens them by. The default
//!   build has no server client at all.
//! - [`buffer`]: the snapshot buffer with the replay fence (ReplayFence).
//! - [`flow`]: the partition flow (assign → recover → fold → flush → revoke).
//! - [`trace`]: the step events, named after the model actions.
//! - [`kit`]: the store contract as cases a store of your own can run, and an in-memory
//!   example store that passes them.
//! - [`harness`]: what every throwaway server shares (free ports, folders, the guardian that
//!   removes a server when the process ends) and the toxiproxy launcher.
//!
//! ```
//! use loadbearing_impls::{servers::sqlite::SqliteStore, Read, SnapshotStore, StoreOptions, WriteError};
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
pub mod flow;
pub mod harness;
pub mod kit;
pub mod servers;
pub mod store;
pub mod trace;

pub use store::{
    BackendError, CompoundGuards, Conflict, Mode, Offset, Read, ReadError, SnapshotStore,
    StoreOptions, WriteError,
};
