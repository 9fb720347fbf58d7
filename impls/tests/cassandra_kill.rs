//! Faults: the stress run against a Cassandra node that is killed with -9 mid-run and restarted
//! on the same data (the commit log replays), then paused (SIGSTOP) and continued. Its own node
//! (the kill must not hit other tests).

mod common;

use std::time::Duration;

use common::stress::{run_faulted, StressConfig};
use common::Backend;
use loadbearing_impls::cassandra::CassandraCluster;
use loadbearing_impls::harness::cassandra::{CassandraNode, CommitLogSync};
use loadbearing_impls::store::{SnapshotStore, StoreOptions};
use loadbearing_impls::trace::SharedTracer;

struct Cassandra {
    cluster: CassandraCluster,
}

impl Backend for Cassandra {
    fn name(&self) -> &'static str {
        "cassandra"
    }
    fn open(&self, options: StoreOptions, tracer: SharedTracer) -> Box<dyn SnapshotStore> {
        Box::new(self.cluster.store_traced(options, tracer))
    }
}

/// What is done to the node a third into a stress run, in words and in deed.
type Fault<'a> = (&'a str, &'a (dyn Fn(&CassandraNode) + Sync));

/// Stress runs on one fresh node, one per fault, in order: their reports (none when skipped).
fn stress_on_node(sync: CommitLogSync, faults: &[Fault<'_>]) -> Vec<common::stress::StressReport> {
    let node = match CassandraNode::start_with(sync) {
        Ok(node) => node,
        Err(e) => {
            loadbearing_test_support::skip_or_fail("kill_mid_stress", &format!("Cassandra: {e}"));
            return Vec::new();
        }
    };
    let cluster = CassandraCluster::connect(&node.node(), "loadbearing", "snapshots")
        .expect("connect to the node");
    let backend = Cassandra { cluster };
    let cfg = StressConfig {
        duration: Duration::from_secs(6),
        ..Default::default()
    };
    let mut reports = Vec::new();
    for (what, fault) in faults {
        let inject = || fault(&node);
        let report = run_faulted(&backend, cfg, Some((what, &inject)));
        common::say(&format!(
            "stress[cassandra, commitlog_sync {sync:?}, {what}]: {report}"
        ));
        for v in &report.violations {
            common::say(&format!("  {v}"));
        }
        reports.push(report);
    }
    node.stop();
    reports
}

const KILL: &str = "node killed (-9) and restarted";

fn kill_restart(node: &CassandraNode) {
    node.kill9().expect("kill -9 the node");
    node.restart().expect("restart the node");
}

fn kill_mid_stress(sync: CommitLogSync) -> common::stress::StressReport {
    stress_on_node(sync, &[(KILL, &kill_restart)])
        .pop()
        .unwrap_or_default()
}

/// With `commitlog_sync: batch` a write is acknowledged only once durable: after a kill -9 and
/// restart, no acknowledged write is lost, no refused write is stored, and the writes in flight
/// at the kill come back as `Indeterminate` (or as a clean outcome).
/// Then, on the same node, a pause: the JVM stopped (`SIGSTOP`) for 3 s with LWTs in flight,
/// then continued. Nothing wrong lands either, and writes land again.
#[test]
fn stress_with_node_killed_mid_run_no_stale_write_lands() {
    let pause = |node: &CassandraNode| {
        node.pause(true).expect("SIGSTOP the node");
        std::thread::sleep(Duration::from_secs(3));
        node.pause(false).expect("SIGCONT the node");
    };
    let reports = stress_on_node(
        CommitLogSync::Batch,
        &[
            (KILL, &kill_restart),
            ("node paused (SIGSTOP) for 3 s, then continued", &pause),
        ],
    );
    let [killed, paused] = &reports[..] else {
        return; // skipped (outside CI)
    };
    for report in [killed, paused] {
        report.assert_clean();
        assert!(report.fault_lasted.is_some());
        assert!(
            report.applied_after_fault > 0,
            "writes must land again after the fault: {report}"
        );
    }
    assert!(
        killed.indeterminate + killed.failed > 0,
        "the kill must hit writes in flight: {killed}"
    );
}

/// The same with `commitlog_sync: periodic` (Cassandra's default): the writes acknowledged in
/// the last moments before the kill are gone after the restart. Not a guard failure (no refused
/// write lands) but a durability setting the design depends on. Run with `--ignored`.
#[test]
#[ignore = "demonstration: periodic commit-log sync loses acknowledged writes on kill -9"]
fn periodic_commitlog_loses_acknowledged_writes_on_kill() {
    let report = kill_mid_stress(CommitLogSync::Periodic);
    assert!(
        report
            .violations
            .iter()
            .all(|v| v.contains("acknowledged offset")),
        "only acknowledged-but-lost writes are expected: {:?}",
        report.violations
    );
}
