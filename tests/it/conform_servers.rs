//! `loadbearing conform --backend KIND --server ADDRESS`: the command line on the servers this
//! binary shares, for the targets that no in-process test runs on that server. The stores, the
//! compound, the faults and the flows on PostgreSQL and Cassandra, and the group commit and the
//! Kafka design on the broker, run in `conform.rs`, `conform_flow.rs`, `conform_gc.rs` and
//! `conform_kafka.rs` with more to assert; each target runs on each server once.

use crate::common::loadbearing;

/// Runs `targets` through the command line on the server at `address` and checks that every
/// one of them, and nothing else, came out as it must.
#[cfg(any(feature = "postgres", feature = "cassandra", feature = "kafka"))]
fn every_target_as_expected(backend: &str, address: &str, traces: &str, targets: &[&str]) {
    let mut args = vec![
        "conform",
        "--backend",
        backend,
        "--server",
        address,
        "--traces",
        traces,
        "--seed",
        "1",
        "--format",
        "json",
    ];
    args.extend_from_slice(targets);
    let out = loadbearing(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // Attached, not started: the run names the targets it ran, and no server start.
    assert!(!stderr.contains("conform: starting"), "{stderr}");
    let results: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let results = results.as_array().expect("one result per target");
    let ran: Vec<&str> = results
        .iter()
        .map(|r| r["target"].as_str().unwrap())
        .collect();
    assert_eq!(ran, targets);
    for r in results {
        assert_eq!(r["backend"], backend, "{r}");
        assert_eq!(r["ok"], true, "{r}");
        assert!(r["traces"].as_u64().unwrap() > 0, "{r}");
    }
}

#[test]
#[cfg(feature = "postgres")]
fn the_cli_runs_the_remaining_store_targets_on_postgres() {
    let Some(server) = crate::common::servers::postgres() else {
        return;
    };
    every_target_as_expected(
        "postgres",
        &server.conn_str(),
        "10",
        &[
            "replay",
            "flow-lww",
            "fence",
            "fence-off",
            "cassandra-835",
            "cassandra-835-lww",
            "cassandra-835-hard-delete",
            "cassandra-835-fix-off",
            "cassandra-835-no-tomb-floor",
            "cassandra-835-skip-tomb",
            "flush-cell",
            "flush-cell-unserialized",
        ],
    );
}

#[test]
#[cfg(feature = "cassandra")]
fn the_cli_runs_the_remaining_store_targets_on_cassandra() {
    let Some(node) = crate::common::servers::cassandra() else {
        return;
    };
    every_target_as_expected(
        "cassandra",
        &node.node(),
        "3",
        &[
            "replay",
            "cassandra-835",
            "cassandra-835-lww",
            "cassandra-835-hard-delete",
            "cassandra-835-fix-off",
            "cassandra-835-no-tomb-floor",
            "cassandra-835-skip-tomb",
            "flush-cell",
            "flush-cell-unserialized",
        ],
    );
}

/// On the broker a Kafka-design run takes seconds (group joins, transactional ids): one trace
/// each, and the counterexamples.
#[test]
#[cfg(feature = "kafka")]
fn the_cli_runs_the_835_kafka_targets_on_the_broker() {
    let Some(broker) = crate::common::servers::kafka() else {
        return;
    };
    every_target_as_expected(
        "kafka",
        &broker.bootstrap(),
        "1",
        &[
            "flows-alive",
            "flows-alive-deferred",
            "recovery-read",
            "recovery-read-own-end",
            "group-commit-lanes",
            "group-commit-lanes-eager",
            "token-sync",
            "token-sync-frozen",
        ],
    );
}

/// `--server` names a server to attach to: it needs a server backend.
#[test]
fn a_server_address_needs_a_server_backend() {
    let out = loadbearing(&["conform", "--server", "127.0.0.1:1", "store"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--backend"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = loadbearing(&[
        "conform",
        "--backend",
        "sqlite",
        "--server",
        "127.0.0.1:1",
        "store",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("a server kind"), "{stderr}");
}
