//! The servers behind the backend tests. Each is started by the test; where it cannot start, a
//! test outside CI says so on stderr and returns, and in CI (`CI=true`) it fails: nothing may be
//! skipped there.

use loadbearing::conform::{Backend, Settings};
#[cfg(feature = "cassandra")]
use loadbearing_impls::harness::cassandra::CassandraNode;
#[cfg(feature = "postgres")]
use loadbearing_impls::harness::postgres::PgServer;
#[cfg(feature = "kafka")]
use loadbearing_impls_kafka::harness::KafkaBroker;
#[cfg(any(feature = "postgres", feature = "cassandra", feature = "kafka"))]
use loadbearing_test_support::or_skip;

/// A conformance run's settings.
pub fn settings(backend: Backend, traces: usize, writers: usize, seed: u64) -> Settings {
    Settings {
        backend,
        traces,
        writers,
        seed,
    }
}

/// A throwaway PostgreSQL cluster.
#[cfg(feature = "postgres")]
pub fn postgres() -> Option<PgServer> {
    or_skip("PostgreSQL", PgServer::start())
}

/// A throwaway Cassandra 5 node.
#[cfg(feature = "cassandra")]
pub fn cassandra() -> Option<CassandraNode> {
    or_skip("Cassandra", CassandraNode::start())
}

/// The Kafka 4.4 broker shared by this test binary.
#[cfg(feature = "kafka")]
pub fn kafka() -> Option<&'static KafkaBroker> {
    or_skip("a Kafka broker", loadbearing_impls_kafka::harness::shared())
}
