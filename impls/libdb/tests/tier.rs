//! The isolation tier on real libdb: the verdicts the seed and the PR report, observed.

use loadbearing_libdb::db::Flavour;
use loadbearing_libdb::tier::{libdb_scenarios, musts, run};

fn tally(name: &str, flavour: Flavour, attempts: usize) -> loadbearing_ssi_engine::tier::Tally {
    let s = libdb_scenarios()
        .into_iter()
        .find(|s| s.name() == name)
        .unwrap_or_else(|| panic!("no libdb scenario {name}"));
    run(&s, flavour, attempts, 20).expect("libdb runs the scenario")
}

#[test]
fn every_scenario_on_every_flavour_shows_what_it_must() {
    let mut tallies = Vec::new();
    for flavour in Flavour::ALL {
        for s in libdb_scenarios() {
            tallies.push(run(&s, flavour, 10, 20).expect("libdb runs the scenario"));
        }
    }
    let failures = musts(&tallies);
    assert!(failures.is_empty(), "{failures:#?}");
    // Keys of two writers on one page: libdb's page lock refuses the second writer on every
    // flavour, whatever the timing (outside the model, which locks per key).
    for t in tallies
        .iter()
        .filter(|t| t.scenario.starts_with("write_skew_onepage"))
    {
        assert!(t.conforming.is_none(), "{t:?}");
        assert_eq!(t.violations, 0);
        assert!(
            t.outcomes.keys().all(|o| o.starts_with("T2 DB_LOCK_")),
            "{} {}: {:?}",
            t.store,
            t.scenario,
            t.outcomes
        );
    }
    // Every other model workload's traces were validated, and all fit.
    let validated: usize = tallies
        .iter()
        .filter_map(|t| t.conforming)
        .map(|(ok, _)| ok)
        .sum();
    assert!(validated >= 3 * 10 * 14, "{validated}");
}

#[test]
fn the_trigger_commits_the_write_skew_before_the_fix_and_t2_is_refused_after() {
    let prefix = tally("write_skew_trigger", Flavour::Prefix, 5);
    assert_eq!(prefix.violations, 5, "{prefix:?}");
    assert_eq!(prefix.typical(), "all commit");
    let fix = tally("write_skew_trigger", Flavour::Fix, 5);
    assert_eq!(fix.violations, 0);
    assert_eq!(fix.typical(), "T2 DB_SNAPSHOT_UNSAFE");
    assert_eq!(fix.timeouts, 0);
}

/// A workload raced freely on each flavour: every history established from libdb's own
/// records (the writer packed in each record, the END order), every trace in the flavour's
/// model, and the fix never showing an anomaly.
#[test]
fn raced_workloads_have_established_histories_and_the_fix_shows_no_anomaly() {
    use loadbearing_specs::ssi::workload::named;
    for name in ["write_skew", "lost_update", "read_only"] {
        let w = named(name).unwrap();
        for flavour in Flavour::ALL {
            let race = loadbearing_libdb::tier::race(&w, flavour, 8, 50).unwrap();
            assert_eq!(race.attempts, 8);
            assert_eq!(
                (race.unknown, race.unexplained),
                (0, 0),
                "{name} {flavour}: {race:?}"
            );
            assert_eq!(race.conforming, Some((8, 8)), "{name} {flavour}: {race:?}");
            if flavour == Flavour::Fix {
                assert!(race.anomalies.is_empty(), "{name}: {race:?}");
            }
        }
    }
}
