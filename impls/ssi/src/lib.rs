//! An MVCC key-value engine with serializable snapshot isolation as libdb implements it — the
//! engine the SSI model (docs/models/ssi.md) describes — its isolation tier, and PostgreSQL at
//! SERIALIZABLE as a second opinion.
//!
//! The engine knows nothing of the model: it records its own events in its own terms, and
//! every reading of them in the model's vocabulary (trace conformance, replaying model paths,
//! the model of a variant) is the conformance adapter's (`loadbearing_conform::ssi_engine`).
//! Workloads and the anomaly classifier are `loadbearing_workload`'s.
//!
//! - [`engine`]: the engine, step by step, with its knobs as [`engine::Variant`]s.
//! - [`trace`]: step events emitted under the engine's mutex.
//! - [`program`]: workloads (and a predicate one) run as transactions.
//! - [`replay`]: a path of named actions driven through the engine.
//! - [`judge`]: a verdict on an engine trace, given by the caller (the tier counts them).
//! - [`tier`]: the isolation tier — scenarios on real threads with the timing they name.
//! - [`record`]: what the driver records beside an engine: reads, and commits in order.
//! - [`race`]: a workload file raced freely on a store, each history classified (G2-item…).
//! - [`interleave`]: every interleaving of a workload's transactions, driven step by step.
//! - [`analysis`]: was an SSI abort needed? The key-level dependency graph of a history.
//! - `postgres` (feature `postgres`): the same scenarios on PostgreSQL at SERIALIZABLE, and a
//!   workload's every interleaving at SERIALIZABLE and at REPEATABLE READ.
//! - [`sqlite`]: SQLite (serializable by locking) under a workload's every interleaving.
//! - [`skipdb`]: skipdb's serializable transactions (crates.io) under the same.
//! - `badger` (feature `badger`): Badger's optimistic SSI transactions (a Go module, through
//!   our Go driver of it) under the same.
//! - `bdb` (feature `bdb`): Berkeley DB 5.3's snapshot isolation (`DB_TXN_SNAPSHOT`) under the
//!   same, linked from Debian's libdb5.3-dev.
//! - `mariadb` (feature `mariadb`): MariaDB (InnoDB) at READ COMMITTED, REPEATABLE READ and
//!   SERIALIZABLE under the same, on a throwaway server of Debian's mariadb-server.
//! - [`level`]: the isolation levels SQL names, which the servers' drivers begin at.
//! - [`report`]: the tier's tables.

pub mod analysis;
#[cfg(feature = "badger")]
pub mod badger;
#[cfg(feature = "bdb")]
pub mod bdb;
pub mod engine;
pub mod interleave;
pub mod judge;
pub mod level;
#[cfg(feature = "mariadb")]
pub mod mariadb;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod program;
pub mod race;
pub mod record;
pub mod replay;
pub mod report;
pub mod skipdb;
pub mod sql;
pub mod sqlite;
pub mod tier;
pub mod trace;
