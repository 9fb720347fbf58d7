//! Faults: the stress run against a Cassandra node that is killed with -9 mid-run and restarted
//! on the same data (the commit log replays), then paused (SIGSTOP) and continued, then reached
//! through Toxiproxy while the network breaks. Every run's whole history is judged by the model,
//! and its end state checked; the planted mutants misbehave only while the proxy is cut, and the
//! judged history must catch them. Its own node (the faults must not hit other tests).

mod common;

use std::time::Duration;

use common::mutants::{run_misbehaving, Misbehaviour};
use common::stress::{run_faulted, StressConfig, StressReport, Wrong};
use common::Backend;
use loadbearing_impls::harness::toxiproxy::{Toxic, Toxiproxy};
use loadbearing_impls::servers::cassandra::launcher::{CassandraNode, CommitLogSync};
use loadbearing_impls::servers::cassandra::{CassandraCluster, ConnectOptions};
use loadbearing_impls::store::{SnapshotStore, StoreOptions};
use loadbearing_impls::trace::SharedTracer;
use loadbearing_trace::HistoryVerdict;

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

/// A run and the model's verdict on its history.
struct Judged {
    report: StressReport,
    verdict: HistoryVerdict,
}

/// What is done a third into a stress run, in words and in deed.
type Fault<'a> = (&'a str, &'a (dyn Fn() + Sync));

/// A fresh node, or `None` after a loud skip (a failure in CI).
fn node_or_skip(test: &str, sync: CommitLogSync) -> Option<CassandraNode> {
    match CassandraNode::start_with(sync) {
        Ok(node) => Some(node),
        Err(e) => {
            loadbearing_test_support::skip_or_fail(test, &format!("Cassandra: {e}"));
            None
        }
    }
}

/// Stress runs through `backend`, one per fault, in order, each printed with its violations.
fn stress(backend: &Cassandra, label: &str, faults: &[Fault<'_>]) -> Vec<Judged> {
    let cfg = StressConfig {
        duration: Duration::from_secs(6),
        ..Default::default()
    };
    faults
        .iter()
        .map(|(what, fault)| {
            let report = run_faulted(backend, cfg, Some((what, *fault)));
            common::say(&format!("stress[cassandra, {label}, {what}]: {report}"));
            for v in &report.violations {
                common::say(&format!("  {v}"));
            }
            let verdict = common::record("stores", &format!("Cassandra 5 ({label})"), &report);
            Judged { report, verdict }
        })
        .collect()
}

fn connect(node: &CassandraNode, options: ConnectOptions) -> Cassandra {
    Cassandra {
        cluster: CassandraCluster::connect_with(&node.node(), "loadbearing", "snapshots", options)
            .expect("connect to the node"),
    }
}

const KILL: &str = "node killed (-9) and restarted";

fn kill_restart(node: &CassandraNode) {
    node.kill9().expect("kill -9 the node");
    node.restart().expect("restart the node");
}

fn kill_mid_stress(sync: CommitLogSync) -> StressReport {
    let Some(node) = node_or_skip("kill_mid_stress", sync) else {
        return StressReport::default();
    };
    let report = stress(
        &connect(&node, ConnectOptions::default()),
        &format!("commitlog_sync {sync:?}"),
        &[(KILL, &|| kill_restart(&node))],
    )
    .pop()
    .map(|judged| judged.report)
    .unwrap_or_default();
    node.stop();
    report
}

/// The model accepts the run's whole history, nothing wrong is stored at its end, and writes
/// landed again once the fault was over.
fn assert_recovered(Judged { report, verdict }: &Judged) {
    common::assert_linearizable("cassandra", report, verdict);
    report.assert_clean();
    assert!(report.fault_lasted.is_some());
    assert!(
        report.applied_after_fault > 0,
        "writes must land again after the fault: {report}"
    );
}

const OUTAGE: Duration = Duration::from_millis(1500);

/// The driver's timeout in the latency run, below the delay the proxy adds.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);

/// How long the proxy delays replies in the latency run.
const LATE_FOR: Duration = Duration::from_secs(3);

/// On one node with `commitlog_sync: batch` (a write is acknowledged only once durable), in
/// order:
/// - a kill -9 and restart: no acknowledged write is lost, no refused write is stored, and the
///   writes in flight at the kill come back as `Indeterminate` (or as a clean outcome);
/// - a pause: the JVM stopped (`SIGSTOP`) for 3 s with LWTs in flight, then continued;
/// - through Toxiproxy (the driver's view of the node's address translated to the proxy's),
///   connections reset mid-LWT, the proxy cut and restored, and every reply delayed past the
///   driver's timeout (each such LWT is `Indeterminate`: it may yet be applied).
///
/// Nothing wrong lands after any of them, and writes land again.
#[test]
fn stress_with_node_killed_mid_run_no_stale_write_lands() {
    let test = "stress_with_node_killed_mid_run_no_stale_write_lands";
    let Some(node) = node_or_skip(test, CommitLogSync::Batch) else {
        return;
    };
    let direct = connect(&node, ConnectOptions::default());
    let pause = || {
        node.pause(true).expect("SIGSTOP the node");
        std::thread::sleep(Duration::from_secs(3));
        node.pause(false).expect("SIGCONT the node");
    };
    let reports = stress(
        &direct,
        "commitlog_sync Batch",
        &[
            (KILL, &|| kill_restart(&node)),
            ("node paused (SIGSTOP) for 3 s, then continued", &pause),
        ],
    );
    let [killed, paused] = &reports[..] else {
        panic!("two runs, got {}", reports.len());
    };
    for report in [killed, paused] {
        assert_recovered(report);
    }
    assert!(
        killed.report.indeterminate + killed.report.failed > 0,
        "the kill must hit writes in flight: {}",
        killed.report
    );

    let toxiproxy = match Toxiproxy::start() {
        Ok(t) => t,
        Err(e) => {
            node.stop();
            loadbearing_test_support::skip_or_fail(test, &format!("Toxiproxy: {e}"));
            return;
        }
    };
    let proxy = toxiproxy
        .proxy("cassandra", &node.node())
        .expect("create the proxy");
    let through = |request_timeout| {
        connect(
            &node,
            ConnectOptions {
                proxy: Some(format!("127.0.0.1:{}", proxy.port())),
                request_timeout,
            },
        )
    };
    let reset = || {
        proxy.add(Toxic::ResetPeer).expect("add reset_peer");
        std::thread::sleep(OUTAGE);
        proxy.remove().expect("remove reset_peer");
    };
    let cut = || {
        proxy.set_enabled(false).expect("cut the proxy");
        std::thread::sleep(OUTAGE);
        proxy.set_enabled(true).expect("restore the proxy");
    };
    // Toxiproxy lets a delayed reply go as soon as the toxic is removed, so the toxic lasts
    // longer than the driver's timeout: the replies of its first second come too late.
    let late = || {
        proxy
            .add(Toxic::Latency { millis: 4000 })
            .expect("add latency");
        std::thread::sleep(LATE_FOR);
        proxy.remove().expect("remove latency");
    };
    let mut network = stress(
        &through(None),
        "through Toxiproxy",
        &[
            ("connections reset mid-LWT (reset_peer) for 1.5 s", &reset),
            ("proxy cut for 1.5 s and restored", &cut),
        ],
    );
    network.extend(stress(
        &through(Some(CLIENT_TIMEOUT)),
        "through Toxiproxy, driver timeout 2 s",
        &[(
            "every reply delayed 4 s for 3 s, past the driver's 2 s timeout",
            &late,
        )],
    ));
    let [reset, cut, late] = &network[..] else {
        panic!("three runs, got {}", network.len());
    };
    for report in [reset, cut, late] {
        assert_recovered(report);
    }
    for (judged, what) in [(reset, "the resets"), (cut, "the cut")] {
        let report = &judged.report;
        assert!(
            report.indeterminate + report.failed > 0,
            "{what} must hit writes in flight: {report}"
        );
    }
    assert!(
        late.report.indeterminate > 0,
        "LWTs answered after the driver's timeout are of unknown outcome: {}",
        late.report
    );

    // The planted mutants, misbehaving only while the proxy is cut: the judged history must
    // catch what the writes after the cut bury in the end state.
    let backend = through(None);
    for misbehaviour in [
        Misbehaviour::StaleWritesLand,
        Misbehaviour::AcknowledgedWritesLost,
    ] {
        let cut = || {
            proxy.set_enabled(false).expect("cut the proxy");
            std::thread::sleep(OUTAGE);
            proxy.set_enabled(true).expect("restore the proxy");
        };
        let report = run_misbehaving(&backend, misbehaviour, "the proxy is cut for 1.5 s", &cut);
        common::assert_recorded_caught("stores", "Cassandra 5 (through Toxiproxy)", &report);
    }
    node.stop();
}

/// The same with `commitlog_sync: periodic` (Cassandra's default): the writes acknowledged in
/// the last moments before the kill are gone after the restart. Not a guard failure (no refused
/// write lands) but a durability setting the design depends on. Run with `--ignored`.
#[test]
#[ignore = "demonstration: periodic commit-log sync loses acknowledged writes on kill -9"]
fn periodic_commitlog_loses_acknowledged_writes_on_kill() {
    let report = kill_mid_stress(CommitLogSync::Periodic);
    assert!(
        report.violations.iter().all(|v| v.wrong == Wrong::LostAck),
        "only acknowledged-but-lost writes are expected: {:?}",
        report.violations
    );
}
