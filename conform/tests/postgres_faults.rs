//! Network faults between the snapshot store and PostgreSQL, through a real fault-injection
//! proxy (Toxiproxy, `loadbearing_impls::harness::toxiproxy`): the stress run's sessions
//! connect through the proxy, and a third into the run the network breaks — connections reset
//! as data arrives, the proxy cut and restored, all traffic stalled, every reply delayed — and
//! heals. Every run's whole history is judged by the model (each write, delete and read placed
//! in an order its times allow, each write doing what the guarded model says), and its end state
//! checked as after a kill: no stale or refused write is stored, no acknowledged write is lost,
//! and a write whose outcome was unknown stays unknown. The planted mutants misbehave only while
//! the network is cut (stale writes land; acknowledged writes are lost): the writes after the
//! fault bury them in the end state, and the judged history must catch them. One server and one
//! proxy server for the binary.

mod common;

use std::sync::OnceLock;
use std::time::Duration;

use common::mutants::{run_misbehaving, Misbehaviour};
use common::stress::{run_faulted, StressConfig, StressReport};
use loadbearing_impls::harness::toxiproxy::{Proxy, Toxic, Toxiproxy};
use loadbearing_impls::servers::postgres::launcher::PgServer;
use loadbearing_impls::servers::postgres::PostgresAt;

struct Servers {
    pg: PgServer,
    toxiproxy: Toxiproxy,
}

/// The binary's PostgreSQL and Toxiproxy, or why there are none.
fn servers() -> Result<&'static Servers, &'static String> {
    static SERVERS: OnceLock<Result<Servers, String>> = OnceLock::new();
    SERVERS
        .get_or_init(|| {
            let pg = PgServer::start().map_err(|e| format!("PostgreSQL: {e}"))?;
            let toxiproxy = Toxiproxy::start().map_err(|e| format!("Toxiproxy: {e}"))?;
            Ok(Servers { pg, toxiproxy })
        })
        .as_ref()
}

/// A stress run through a fresh proxy, `fault` done to that proxy (or its server) a third into
/// the run.
fn faulted(test: &str, what: &str, fault: fn(&Proxy<'_>, &PgServer)) -> Option<StressReport> {
    let servers = match servers() {
        Ok(s) => s,
        Err(why) => {
            loadbearing_test_support::skip_or_fail(test, why);
            return None;
        }
    };
    let proxy = servers
        .toxiproxy
        .proxy(test, &format!("127.0.0.1:{}", servers.pg.port()))
        .expect("create the proxy");
    let backend = PostgresAt::local(proxy.port());
    let inject = || fault(&proxy, &servers.pg);
    let cfg = StressConfig {
        duration: Duration::from_secs(6),
        ..Default::default()
    };
    let report = run_faulted(&backend, cfg, Some((what, &inject)));
    common::say(&format!("faults[postgres, {what}]: {report}"));
    common::assert_recorded_clean("stores", "PostgreSQL", &report);
    for v in &report.violations {
        common::say(&format!("  {v}"));
    }
    report.assert_clean();
    assert!(
        report.applied_after_fault > 0,
        "writes must land again once the network is back: {report}"
    );
    Some(report)
}

const OUTAGE: Duration = Duration::from_millis(1500);

#[test]
fn connections_reset_mid_statement_land_nothing_wrong() {
    let Some(report) = faulted(
        "connections_reset_mid_statement",
        "connections reset as data arrives for 1.5 s",
        |p, _| {
            p.add(Toxic::ResetPeer).expect("add reset_peer");
            std::thread::sleep(OUTAGE);
            p.remove().expect("remove reset_peer");
        },
    ) else {
        return;
    };
    assert!(
        report.indeterminate + report.failed > 0,
        "the resets must hit writes in flight: {report}"
    );
}

#[test]
fn the_proxy_cut_with_writes_in_flight_and_restored_lands_nothing_wrong() {
    let Some(report) = faulted(
        "proxy_cut_and_restored",
        "proxy cut for 1.5 s and restored",
        |p, _| {
            p.set_enabled(false).expect("cut the proxy");
            std::thread::sleep(OUTAGE);
            p.set_enabled(true).expect("restore the proxy");
        },
    ) else {
        return;
    };
    assert!(
        report.indeterminate + report.failed > 0,
        "the cut must hit writes in flight: {report}"
    );
}

#[test]
fn a_stalled_network_lands_nothing_wrong() {
    faulted(
        "network_stalled",
        "all traffic stalled for 1.5 s",
        |p, _| {
            p.add(Toxic::Stall).expect("add the stall");
            std::thread::sleep(OUTAGE);
            p.remove().expect("remove the stall");
        },
    );
}

#[test]
fn replies_delayed_land_nothing_wrong() {
    faulted(
        "replies_delayed",
        "every reply delayed 300 ms for 1.5 s",
        |p, _| {
            p.add(Toxic::Latency { millis: 300 }).expect("add latency");
            std::thread::sleep(OUTAGE);
            p.remove().expect("remove latency");
        },
    );
}

/// Not the network but the process: every PostgreSQL process stopped (`SIGSTOP`) with
/// statements in flight, then continued (`SIGCONT`).
#[test]
fn a_paused_server_lands_nothing_wrong() {
    faulted(
        "server_paused",
        "server paused (SIGSTOP) for 1.5 s, then continued",
        |_, pg| {
            pg.pause(true).expect("SIGSTOP the server");
            std::thread::sleep(OUTAGE);
            pg.pause(false).expect("SIGCONT the server");
        },
    );
}

/// A mutant that misbehaves only while the proxy is cut, through the same proxy and server.
fn mutant_during_the_cut(test: &str, misbehaviour: Misbehaviour) {
    let servers = match servers() {
        Ok(s) => s,
        Err(why) => return loadbearing_test_support::skip_or_fail(test, why),
    };
    let proxy = servers
        .toxiproxy
        .proxy(test, &format!("127.0.0.1:{}", servers.pg.port()))
        .expect("create the proxy");
    let cut = || {
        proxy.set_enabled(false).expect("cut the proxy");
        std::thread::sleep(OUTAGE);
        proxy.set_enabled(true).expect("restore the proxy");
    };
    let report = run_misbehaving(
        &PostgresAt::local(proxy.port()),
        misbehaviour,
        "the proxy is cut for 1.5 s",
        &cut,
    );
    common::assert_recorded_caught("stores", "PostgreSQL", &report);
}

#[test]
fn stale_writes_landing_while_the_network_is_cut_are_caught() {
    mutant_during_the_cut(
        "stale_writes_landing_while_the_network_is_cut",
        Misbehaviour::StaleWritesLand,
    );
}

#[test]
fn acknowledged_writes_lost_while_the_network_is_cut_are_caught() {
    mutant_during_the_cut(
        "acknowledged_writes_lost_while_the_network_is_cut",
        Misbehaviour::AcknowledgedWritesLost,
    );
}
