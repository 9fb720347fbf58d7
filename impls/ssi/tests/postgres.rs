//! The tier's scenarios against PostgreSQL at SERIALIZABLE, on a throwaway cluster started
//! once for this test binary. PostgreSQL must never commit a non-serializable history. Without
//! PostgreSQL's binaries the tests say `skipped` loudly and pass — except in CI (`CI=true`),
//! where they fail.

use std::sync::{Mutex, OnceLock};

use loadbearing_impls::servers::postgres::launcher::find_bin;
use loadbearing_ssi_engine::postgres::{Level, PgServer, PgServerError, PgTier, PgTierError};
use loadbearing_ssi_engine::report;
use loadbearing_ssi_engine::tier::{run_engine, scenario, scenarios, Tally};

/// Why this binary has no tier.
#[derive(Debug, thiserror::Error)]
enum NoTier {
    #[error("PostgreSQL: {0}")]
    Start(#[source] PgServerError),
    #[error(transparent)]
    Connect(#[from] PgTierError),
}

/// The cluster and the tier's connections, or why there are none.
fn tier() -> Result<&'static Mutex<PgTier>, &'static NoTier> {
    static TIER: OnceLock<Result<(PgServer, Mutex<PgTier>), NoTier>> = OnceLock::new();
    TIER.get_or_init(|| {
        let server = PgServer::start().map_err(NoTier::Start)?;
        let tier = PgTier::connect(&server.conn_str())?;
        Ok((server, Mutex::new(tier)))
    })
    .as_ref()
    .map(|(_, t)| t)
}

/// The tier, or None after a loud skip (binaries missing, outside CI); any other failure, and
/// any skip in CI, fails the test.
fn tier_or_skip(test: &str) -> Option<&'static Mutex<PgTier>> {
    // find_bin returns only a folder holding initdb.
    if let Err(why) = find_bin() {
        loadbearing_test_support::skip_or_fail(test, &why);
        return None;
    }
    Some(tier().unwrap_or_else(|e| panic!("{e}")))
}

fn run_pg(names: &[&str], attempts: usize) -> Option<Vec<Tally>> {
    let tier = tier_or_skip("postgres")?;
    let mut tier = tier.lock().unwrap_or_else(|e| e.into_inner());
    Some(
        names
            .iter()
            .map(|n| tier.run(&scenario(n).unwrap(), attempts, 50).unwrap())
            .collect(),
    )
}

#[test]
fn postgres_never_commits_a_non_serializable_history_in_any_scenario() {
    let names: Vec<&str> = scenarios().iter().map(|s| s.name).collect();
    let Some(pg) = run_pg(&names, 4) else {
        return;
    };
    let mut all = pg.clone();
    for s in scenarios() {
        all.push(run_engine(&s, "fix", 4, 50, None));
    }
    println!("{}", report::side_by_side(&all));
    for t in &pg {
        assert_eq!(t.violations, 0, "{t:?}");
        assert_eq!(t.timeouts, 0, "{}: the timing was not realized", t.scenario);
        assert_eq!(t.attempts, 4);
    }
}

#[test]
fn postgres_aborts_one_of_the_write_skew_pair_and_commits_serial_runs() {
    let Some(pg) = run_pg(
        &[
            "write_skew_serial",
            "write_skew_control",
            "write_skew_trigger",
        ],
        3,
    ) else {
        return;
    };
    assert_eq!(pg[0].typical(), "all commit");
    for t in &pg[1..] {
        assert_eq!(
            t.commits, 3,
            "{}: one of two commits each time: {t:?}",
            t.scenario
        );
        assert!(t.aborts.keys().all(|k| k.starts_with("40001")), "{t:?}");
    }
}

/// The libdb design aborts the pivot of T2 → T1 → T3 even when it commits first; PostgreSQL's
/// commit-order rule (a dangerous structure matters only if T_out commits first) lets all three
/// commit. An edge to an aborted peer is no edge to PostgreSQL either.
#[test]
fn the_libdb_design_has_false_positives_that_postgres_commits() {
    let Some(pg) = run_pg(&["aborted_peer", "pivot_commits_first"], 3) else {
        return;
    };
    assert_eq!(pg[0].typical(), "T1 AppAbort", "{:?}", pg[0]);
    let fix_peer = run_engine(&scenario("aborted_peer").unwrap(), "fix", 3, 50, None);
    assert_eq!(fix_peer.typical(), "T1 AppAbort, T2 SnapshotUnsafe");
    assert_eq!(fix_peer.over_aborts, 3);
    assert_eq!(pg[1].typical(), "all commit", "{:?}", pg[1]);
    let fix_pivot = run_engine(
        &scenario("pivot_commits_first").unwrap(),
        "fix",
        3,
        50,
        None,
    );
    assert!(
        fix_pivot.aborts.keys().any(|k| k.starts_with("Snapshot")),
        "{fix_pivot:?}"
    );
    assert_eq!(fix_pivot.unneeded, 3, "{fix_pivot:?}");
    let all = [pg, vec![fix_peer, fix_pivot]].concat();
    let fp: Vec<String> = report::false_positives(&all)
        .into_iter()
        .map(|(s, _)| s)
        .collect();
    assert_eq!(fp, ["aborted_peer", "pivot_commits_first"]);
}

/// Workloads driven through their interleavings on PostgreSQL at SERIALIZABLE: every history
/// established from the writer column and the version log, and none of them anomalous; at
/// REPEATABLE READ the write skew shows.
#[test]
fn workloads_driven_on_postgres_are_established_and_serializable_only_at_serializable() {
    let Some(tier) = tier_or_skip("postgres interleavings") else {
        return;
    };
    let mut tier = tier.lock().unwrap_or_else(|e| e.into_inner());
    for name in ["write_skew", "lost_update", "read_only", "read_your_writes"] {
        let w = loadbearing_workload::workload::named(name).unwrap();
        let run = tier.every(&w, Level::Serializable, 12, 5).unwrap();
        let race = &run.race;
        assert_eq!(race.attempts, run.interleavings.orders.len(), "{name}");
        assert!(race.problems(&[]).is_empty(), "{name}: {race:?}");
        assert_eq!(race.serializable, race.attempts, "{name}: {race:?}");
    }
    let skew = loadbearing_workload::workload::named("write_skew").unwrap();
    let run = tier.every(&skew, Level::RepeatableRead, 100, 5).unwrap();
    assert!(run.interleavings.every(), "{}", run.interleavings.text());
    assert!(
        run.race.anomalies.contains_key("G2-item (write skew)"),
        "{:?}",
        run.race
    );
}
