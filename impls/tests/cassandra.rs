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
    fn ttl(&self) -> Duration {
        Duration::from_secs(3)
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

/// Every write takes a path of the CasFirstWrite model: Update1, then (row absent) Insert, then
/// (insert race lost) RetryUpdate — checked per writer on 8 racing first writers, on fresh keys.
#[test]
fn first_write_compound_follows_the_model_paths() {
    common::run_or_skip(cassandra(), |b| {
        use loadbearing_impls::trace::{Recorder, StatementOutcome as S, Step};
        let mut retries = 0;
        for round in 0..5 {
            let k = common::unique_key(&format!("compound-{round}"));
            let recorders: Vec<_> = (0..8).map(|_| Recorder::new()).collect();
            let stores: Vec<_> = recorders
                .iter()
                .map(|r| b.open(StoreOptions::guarded(), r.clone()))
                .collect();
            let barrier = std::sync::Barrier::new(8);
            std::thread::scope(|s| {
                for (i, store) in stores.iter().enumerate() {
                    let (barrier, k) = (&barrier, &k);
                    s.spawn(move || {
                        barrier.wait();
                        let _ = store.persist(k, 10 + i as u64, b"v");
                    });
                }
            });
            for r in &recorders {
                let steps = r.steps();
                let path: Vec<(&str, &S)> = steps
                    .iter()
                    .map(|s| match s {
                        Step::Update1 { outcome, .. } => ("Update1", outcome),
                        Step::Insert { outcome, .. } => ("Insert", outcome),
                        Step::RetryUpdate { outcome, .. } => ("RetryUpdate", outcome),
                        other => panic!("unexpected step {other:?}"),
                    })
                    .collect();
                let ok = match path.as_slice() {
                    [("Update1", S::Applied | S::NotApplied { .. })] => true,
                    [("Update1", S::RowAbsent), ("Insert", S::Applied)] => true,
                    [("Update1", S::RowAbsent), ("Insert", S::NotApplied { .. }), ("RetryUpdate", S::Applied | S::NotApplied { .. })] =>
                    {
                        retries += 1;
                        true
                    }
                    _ => false,
                };
                assert!(ok, "not a CasFirstWrite path: {path:?}");
            }
            assert_eq!(
                b.open(
                    StoreOptions::guarded(),
                    loadbearing_impls::trace::no_trace()
                )
                .read(&k)
                .unwrap()
                .offset(),
                Some(17)
            );
        }
        eprintln!("first-write compound: {retries} RetryUpdate paths (lost insert races) in 5 rounds of 8 writers");
    });
}
