//! The servers behind the backend tests, each started once for this test binary and shared by
//! its tests (every target makes its own tables, keyspaces and topics); its guardian removes it
//! when the binary exits. Where one cannot start, a test outside CI says so on stderr and
//! returns, and in CI (`CI=true`) it fails: nothing may be skipped there.

use loadbearing_conform::{Backend, Settings};
#[cfg(feature = "cassandra")]
use loadbearing_impls::servers::cassandra::launcher::CassandraNode;
#[cfg(feature = "postgres")]
use loadbearing_impls::servers::postgres::launcher::PgServer;
#[cfg(feature = "kafka")]
use loadbearing_impls_kafka::harness::KafkaBroker;
#[cfg(any(feature = "postgres", feature = "cassandra", feature = "kafka"))]
use loadbearing_test_support::or_skip;
#[cfg(any(feature = "postgres", feature = "cassandra"))]
use std::sync::OnceLock;

/// A conformance run's settings.
pub fn settings(backend: Backend, traces: usize, writers: usize, seed: u64) -> Settings {
    Settings {
        backend,
        traces,
        writers,
        seed,
        save: None,
    }
}

/// The throwaway PostgreSQL cluster of this binary.
#[cfg(feature = "postgres")]
pub fn postgres() -> Option<&'static PgServer> {
    static SERVER: OnceLock<Result<PgServer, String>> = OnceLock::new();
    let started = SERVER.get_or_init(|| PgServer::start().map_err(|e| e.to_string()));
    or_skip("PostgreSQL", started.as_ref())
}

/// The throwaway Cassandra 5 node of this binary (a start takes a while: one for all).
#[cfg(feature = "cassandra")]
pub fn cassandra() -> Option<&'static CassandraNode> {
    static NODE: OnceLock<Result<CassandraNode, String>> = OnceLock::new();
    let started = NODE.get_or_init(|| CassandraNode::start().map_err(|e| e.to_string()));
    or_skip("Cassandra", started.as_ref())
}

/// The Kafka 4.4 broker shared by this test binary.
#[cfg(feature = "kafka")]
pub fn kafka() -> Option<&'static KafkaBroker> {
    or_skip("a Kafka broker", loadbearing_impls_kafka::harness::shared())
}
