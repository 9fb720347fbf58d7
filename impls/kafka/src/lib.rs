//! Generation-fenced transactional snapshots with group commit (KIP-447), on Apache Kafka.
//!
//! - [`group_commit`]: GroupCommit (docs/models/groupcommit.md) over a [`group_commit::TxnProducer`]; the
//!   in-memory producer for tests without a broker.
//! - [`trace`]: the step events, named after the Kafka, Epoch and GroupCommit model actions.
//! - [`kafka`]: the real producer (rdkafka), live group metadata, read_committed recovery, the
//!   plain (last-write-wins) producer and the Epoch variant.
//! - [`flow`]: one partition's snapshot flow over group commit (assign with a seeded offset,
//!   recover, fold, flush, revoke) and the member whose rebalance callback tears flows down.
//! - [`harness`]: an Apache Kafka 4.4 KRaft broker for the tests, started once per test binary.

pub mod flow;
pub mod group_commit;
pub mod harness;
pub mod kafka;
pub mod trace;
