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
            let t = run(&s, flavour, 3, 20).expect("libdb runs the scenario");
            eprintln!(
                "{:<22} {:<32} {:<40} viol={} conf={:?} {}",
                flavour.name(),
                s.name(),
                t.typical(),
                t.violations,
                t.conforming,
                t.example_divergence.clone().unwrap_or_default()
            );
            tallies.push(t);
        }
    }
    let failures = musts(&tallies);
    assert!(failures.is_empty(), "{failures:#?}");
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
