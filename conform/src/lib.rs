//! `loadbearing conform`: the implementations checked against their models, both ways.
//!
//! Implementation → model: real threads drive an implementation, every step event is
//! recorded, and the trace is validated against the model (the `loadbearing-trace` crate). Model →
//! implementation: model paths (every shortest counterexample that maps onto the
//! implementation, random walks, and all short paths) drive it step by step through a
//! `driver::Harness`, comparing its state with the model's after every step.
//!
//! - `target`: the [`Target`] trait, a target's result and its one judge; [`targets`]: the
//!   table of every target (what `conform --list` prints); `plan`: the targets of a run and
//!   running them, a target that cannot run recorded as its result.
//! - [`backend`]: where an implementation runs, and the servers a run starts; `backend_kind`:
//!   what a backend is (the name targets, the CLI and errors share).
//! - [`schedule`]: every source of nondeterminism (seeded, scripted, a model path, real
//!   threads racing) and the crate's one generator.
//! - `driver`: the harness trait and the one path driver.
//! - [`suite`]: the shipped suite's configs as the targets read them: the model a config
//!   builds, its counterexample checked afresh, the compound's mapped onto the atomic store.
//! - The families: `store`, `compound` (its counterexample replays: PostgreSQL), [`flow`],
//!   [`fence`], [`group_commit`], [`kafka`], `ssi`; the #835 models' `flows_alive`,
//!   `flush_cell`, `recovery_deadline`. No family imports another: what several share is
//!   a module of its own (`stores`: the stores, races and first-write events; `producer`:
//!   the transactional producer of the Kafka families; [`partition_flow`]: the partition
//!   flows' vocabulary and zombies), which the architecture test holds.
//! - [`reliability`]: whole stress and fault runs of the stores (the contract kit's histories:
//!   every write, delete and read with its call and return times) judged by the guarded model.
//!
//! The server backends are Cargo features (`postgres`, `cassandra`, `kafka`; `full` for all):
//! the default build runs every target on its embedded backend (SQLite, the in-memory
//! producer, the SSI engine itself) without compiling a server client. [`BackendKind`] names
//! every backend, so the target table and `conform --list` are the same in every build; a
//! backend this build has no client for is [`Error::NotCompiled`], naming the feature.

pub mod backend;
mod backend_kind;
mod cassandra_835;
mod compound;
mod driver;
mod error;
pub mod fence;
pub mod flow;
mod flows_alive;
mod flush_cell;
pub mod group_commit;
mod group_commit_lanes;
pub mod kafka;
mod mismatch;
mod model_name;
mod must_fail;
mod observe;
pub mod partition_flow;
mod paths;
mod plan;
mod producer;
mod recovery_deadline;
mod recovery_read;
pub mod reliability;
mod replays;
pub mod schedule;
mod ssi;
pub mod ssi_engine;
mod store;
mod store_faults;
mod stores;
pub mod suite;
mod target;
mod target_id;
pub mod targets;
mod token_sync;

pub use backend::{Backend, BackendKind, Servers, StoreBackend};
pub use error::{ConfigProblem, Error, HarnessError, ServerError};
pub use mismatch::Mismatch;
pub use observe::{cell_of, contents_of};
pub use paths::{all_paths, random_walk, ModelPath};
pub use plan::Plan;
pub use schedule::{Rng, Schedule, Scripted, Seeded};
pub use store::replay;
pub use stores::{event_of, race, scheduled_round, StoreFactory};
pub use suite::{
    atomic_schedule, counterexample, counterexample_path, suite_config, suite_model,
    AtomicSchedule, Cx,
};
pub use target::{
    run, Expect, FailedHistory, Interval, ModelName, Replay, Settings, Target, TargetResult,
};
pub use target_id::TargetId;
