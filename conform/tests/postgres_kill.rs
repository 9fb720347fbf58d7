//! Faults: the stress run against a PostgreSQL server that is killed with -9 mid-run and
//! restarted, with the store's single upsert and with Cassandra's three-statement first write
//! (the compound: a kill can fall between its statements). Each run's whole history is judged by
//! the model, and its end state checked. Each test has its own server (the kill must not hit
//! other tests).

mod common;

use std::time::Duration;

use common::stress::{run_faulted, StressConfig};
use loadbearing_impls::servers::postgres::launcher::PgServer;
use loadbearing_impls::servers::postgres::PostgresAt;

fn kill_mid_stress(test: &str, compound: bool) {
    let server = match PgServer::start() {
        Ok(server) => server,
        Err(e) => return loadbearing_test_support::skip_or_fail(test, &format!("PostgreSQL: {e}")),
    };
    let backend = PostgresAt {
        conn: server.conn_str(),
        compound,
        ..PostgresAt::local(server.port())
    };
    let kill = || {
        server.kill9().expect("kill -9 the server");
        server.restart().expect("restart the server");
    };
    let cfg = StressConfig {
        duration: Duration::from_secs(6),
        ..Default::default()
    };
    let how = if compound {
        "three-statement first write"
    } else {
        "single upsert"
    };
    let what = format!("server killed (`kill -9`) and restarted, {how}");
    let report = run_faulted(&backend, cfg, Some((&what, &kill)));
    common::say(&format!("stress[postgres, {what}]: {report}"));
    server.stop();
    common::assert_recorded_clean("stores", "PostgreSQL", &report);
    report.assert_clean();
    assert!(report.fault_lasted.is_some());
    assert!(
        report.applied_after_fault > 0,
        "writes must land again after the restart: {report}"
    );
    assert!(
        report.indeterminate + report.failed > 0,
        "the kill must hit writes in flight: {report}"
    );
}

#[test]
fn stress_with_server_killed_mid_run_no_stale_write_lands() {
    kill_mid_stress(
        "stress_with_server_killed_mid_run_no_stale_write_lands",
        false,
    );
}

/// The kill can land between the compound's UPDATE, INSERT and retried UPDATE: a first write
/// cut in half must not let a stale write in nor lose an acknowledged one.
#[test]
fn a_kill_during_the_three_statement_first_write_lands_nothing_wrong() {
    kill_mid_stress(
        "a_kill_during_the_three_statement_first_write_lands_nothing_wrong",
        true,
    );
}
