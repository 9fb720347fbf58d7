//! The test list against Cassandra 5: one throwaway node started for this test binary and shared
//! by its tests (`LOADBEARING_CASSANDRA_NODE=host:port` uses a running node instead).

mod common;

use std::sync::OnceLock;
use std::time::Duration;

use common::Backend;
use loadbearing_impls::servers::cassandra::launcher::CassandraNode;
use loadbearing_impls::servers::cassandra::CassandraCluster;
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

/// C-6: a row written first without a TTL keeps its row marker when the guard cell of a later
/// write with a TTL expires. Such a row reads as absent; the next persist claims it (the retry
/// conditioned on the expired guard) instead of failing forever, a delete writes its tombstone
/// the same way, and the repaired guard fences a lower offset again.
#[test]
fn c6_a_row_whose_guard_expired_reads_absent_and_the_next_write_repairs_it() {
    common::run_or_skip(
        "c6_a_row_whose_guard_expired_reads_absent_and_the_next_write_repairs_it",
        cassandra(),
        guard_expired_row_is_repaired,
    );
}

fn guard_expired_row_is_repaired(backend: &dyn Backend) {
    use loadbearing_impls::store::{Read, WriteError};
    use loadbearing_impls::trace::{Recorder, StatementOutcome, Step};
    let recorder = Recorder::new();
    let immortal = backend.open(StoreOptions::guarded(), recorder.clone());
    let expiring = backend.open(
        StoreOptions {
            ttl: Some(Duration::from_secs(1)),
            ..StoreOptions::guarded()
        },
        loadbearing_impls::trace::no_trace(),
    );
    let (k, gone) = (
        common::unique_key("poison"),
        common::unique_key("poison-del"),
    );
    for key in [&k, &gone] {
        immortal.persist(key, 1, b"v1").unwrap();
        expiring.persist(key, 2, b"v2").unwrap();
    }
    // CQL TTLs count whole seconds: the cells are gone within 2 s.
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(
        immortal.read(&k).unwrap(),
        Read::Absent,
        "the guard expired"
    );
    let before = recorder.steps().len();
    immortal
        .persist(&k, 1, b"repaired")
        .expect("a persist claims a row whose guard expired");
    // The trace says it as the first-write vocabulary does: the update finds no guarded row,
    // the insert loses to the visible row whose guard expired, the repair claims it.
    let outcomes: Vec<(&str, StatementOutcome)> = recorder.steps()[before..]
        .iter()
        .filter_map(|step| match step {
            Step::Update1 { outcome, .. }
            | Step::Insert { outcome, .. }
            | Step::Repair { outcome, .. } => Some((step.action(), outcome.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            ("Update1", StatementOutcome::RowAbsent),
            ("Insert", StatementOutcome::GuardExpired),
            ("Repair", StatementOutcome::Applied),
        ]
    );
    assert_eq!(
        immortal.read(&k).unwrap(),
        Read::Live {
            offset: 1,
            value: b"repaired".to_vec()
        }
    );
    match immortal.persist(&k, 0, b"stale") {
        Err(WriteError::Conflict(c)) => assert_eq!((c.attempted, c.stored), (0, 1)),
        other => panic!("the repaired guard fences a lower offset: {other:?}"),
    }
    immortal
        .delete(&gone, 3)
        .expect("a delete on a row whose guard expired");
    assert_eq!(immortal.read(&gone).unwrap(), Read::Tombstone { offset: 3 });
}
