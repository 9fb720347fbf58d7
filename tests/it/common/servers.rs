//! The servers behind the backend tests. Each is started by the test; where it cannot start, a
//! test outside CI says so on stderr and returns, and in CI (`CI=true`) it fails: nothing may be
//! skipped there.

use loadbearing::conform::{Backend, Settings};
#[cfg(feature = "cassandra")]
use loadbearing_impls::harness::cassandra::CassandraNode;
use loadbearing_impls::harness::in_ci;
#[cfg(feature = "postgres")]
use loadbearing_impls::harness::postgres::PgServer;
#[cfg(feature = "kafka")]
use loadbearing_impls_kafka::harness::KafkaBroker;

/// A conformance run's settings.
pub fn settings(backend: Backend, traces: usize, writers: usize, seed: u64) -> Settings {
    Settings {
        backend,
        traces,
        writers,
        seed,
    }
}

#[cfg_attr(
    not(any(feature = "postgres", feature = "cassandra", feature = "kafka")),
    allow(dead_code)
)]
fn or_skip<T>(what: &str, started: Result<T, String>) -> Option<T> {
    match started {
        Ok(server) => Some(server),
        Err(e) if !in_ci() => {
            eprintln!("skipped: {what} unavailable here: {e}");
            None
        }
        Err(e) => panic!("CI must provide {what}: {e}"),
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
