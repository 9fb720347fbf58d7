//! Generation-fenced transactional snapshots with group commit (KIP-447), on Apache Kafka.
//!
//! - [`group_commit`]: GroupCommit (docs/models/groupcommit.md) over a [`group_commit::TxnProducer`]; the
//!   in-memory producer for tests without a broker.
//! - [`trace`]: the step events, named after the Kafka, Epoch and GroupCommit model actions.
//! - `kafka` (feature `kafka`): the real producer (rdkafka), live group metadata,
//!   read_committed recovery, the plain (last-write-wins) producer and the Epoch variant.
//! - [`recovery`]: the recovery read's rules apart from any client: the target captured once,
//!   the no-progress tripwire, its budget against the deployment, the diagnosis of a stall.
//! - [`flow`]: one partition's snapshot flow over group commit (assign with a seeded offset,
//!   recover, fold, flush, revoke) and, with the `kafka` feature, the member whose rebalance
//!   callback tears flows down.
//! - `harness` (feature `kafka`): an Apache Kafka 4.4 KRaft broker, started once per test
//!   binary, and at run time by `conform --backend kafka`.
//!
//! Without the `kafka` feature the crate is the in-memory producer, group commit and the flows:
//! enough for the embedded `group-commit`, `kafka` and `epoch` conformance targets, and no
//! librdkafka (cmake, C++) to build.

pub mod flow;
pub mod group_commit;
#[cfg(feature = "kafka")]
pub mod harness;
#[cfg(feature = "kafka")]
pub mod kafka;
pub mod recovery;
pub mod trace;
