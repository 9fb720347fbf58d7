//! The test list against Cassandra 5: one throwaway node started for this test binary and shared
//! by its tests (`LOADBEARING_CASSANDRA_NODE=host:port` uses a running node instead).

mod common;

use std::sync::OnceLock;
use std::time::Duration;

use common::Backend;
use loadbearing_impls::cassandra::CassandraCluster;
use loadbearing_impls::harness::cassandra::CassandraNode;
use loadbearing_impls::store::{SnapshotStore, StoreOptions};
use loadbearing_impls::trace::SharedTracer;

struct Cassandra {
    _node: Option<CassandraNode>,
    cluster: CassandraCluster,
}

impl Backend for Cassandra {
    fn name(&self) -> &'static str {
        "cassandra"
    }
    fn open(&self, options: StoreOptions, tracer: SharedTracer) -> Box<dyn SnapshotStore> {
        Box::new(self.cluster.store_traced(options, tracer))
    }
    /// CQL TTLs count whole seconds from the second the write landed in, so a cell can expire
    /// up to 1 s early: 4 s keeps the test's checkpoints clear of those edges.
    fn ttl(&self) -> Duration {
        Duration::from_secs(4)
    }
    fn reap_row(&self, key: &str) -> Result<(), String> {
        // Keys come from unique_key: [a-z0-9-] only.
        self.cluster
            .execute(&format!(
                "DELETE FROM loadbearing.snapshots WHERE key = '{key}'"
            ))
            .map_err(|e| e.to_string())
    }
}

fn cassandra() -> Result<&'static dyn Backend, String> {
    static NODE: OnceLock<Result<Cassandra, String>> = OnceLock::new();
    NODE.get_or_init(|| {
        let (node, addr) = match std::env::var("LOADBEARING_CASSANDRA_NODE") {
            Ok(addr) => (None, addr),
            Err(_) => {
                let node = CassandraNode::start().map_err(|e| format!("Cassandra: {e}"))?;
                let addr = node.node();
                (Some(node), addr)
            }
        };
        let cluster = CassandraCluster::connect(&addr, "loadbearing", "snapshots")
            .map_err(|e| format!("Cassandra: {e}"))?;
        Ok(Cassandra {
            _node: node,
            cluster,
        })
    })
    .as_ref()
    .map(|c| c as &dyn Backend)
    .map_err(Clone::clone)
}

backend_tests!(cassandra());

/// Every write takes a path of the CasFirstWrite model (Update1 → Insert → RetryUpdate).
#[test]
fn first_write_compound_follows_the_model_paths() {
    common::run_or_skip(
        "first_write_compound_follows_the_model_paths",
        cassandra(),
        common::cases::first_write_compound_follows_the_model_paths,
    );
}

#[test]
fn forced_interleavings_lost_insert_race_and_spurious_conflict() {
    common::run_or_skip(
        "forced_interleavings_lost_insert_race_and_spurious_conflict",
        cassandra(),
        common::cases::forced_interleavings_lost_insert_race_and_spurious_conflict,
    );
}
