//! The expected-outcome suite, pinned: every outcome, every reference state count, and the
//! shortest counterexample of every expected failure.

use loadbearing_expected::run::{run, run_typed};
use loadbearing_expected::suite::{self, override_constants, parse_set, Config, Expected};
use loadbearing_refinement::{Options, Outcome, Shown};
use loadbearing_specs::epoch::model::Epoch;
use loadbearing_specs::store::model::SwsState;

fn configs() -> Vec<Config> {
    suite::built_in().expect("the shipped suite loads")
}

/// The single-writer tower's configs (the SSI configs are pinned in tests/it/ssi.rs, the actor
/// level's in tests/it/actors.rs, the #835 suite's in tests/it/suite_835.rs).
fn tower() -> Vec<Config> {
    configs()
        .into_iter()
        .filter(|c| c.suite == "kafka-flow-828")
        .collect()
}

fn config(name: &str) -> Config {
    configs()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no config {name}"))
}

#[test]
fn the_suite_has_the_24_reference_configs_plus_cassandra_notomb_refines() {
    let configs = tower();
    // The 24 configs of the single-writer TLA+ suite, cassandra_notomb_refines, and the two pairs guard mutation found.
    assert_eq!(configs.len(), 27);
    let holding = configs
        .iter()
        .filter(|c| c.expected == Expected::Holds)
        .count();
    assert_eq!(holding, 11);
    assert!(configs.iter().any(|c| c.name == "cassandra_notomb_refines"));
}

#[test]
fn every_config_is_classified_as_expected_with_the_reference_state_count() {
    for config in configs() {
        let judged = run(&config, &Options::default()).unwrap();
        assert!(judged.ok(), "{}: {:?}", config.name, judged.mismatch);
        if let Some(states) = config.states {
            assert_eq!(judged.report.distinct_states(), states, "{}", config.name);
        }
    }
}

/// The reference counts, written out again so a changed count in the suite file is caught too.
#[test]
fn holding_configs_reach_exactly_the_tlc_counts() {
    let reference = [
        ("sws_holds", 32),
        ("cassandra_refines", 113),
        ("kafka_refines", 132),
        ("casfw_guarded", 105),
        ("casfw_reap", 198),
        ("casfw_3w", 1431),
        ("casfw_refines", 198),
        ("replay_fix_on", 16),
        ("gc_cap1", 477),
        ("gc_cap2", 795),
        ("gc_cap3", 915),
    ];
    for (name, states) in reference {
        let judged = run(&config(name), &Options::default()).unwrap();
        assert_eq!(*judged.report.outcome(), Outcome::Holds, "{name}");
        assert_eq!(judged.report.distinct_states(), states, "{name}");
    }
}

#[test]
fn every_expected_failure_has_its_shortest_counterexample() {
    let pinned: &[(&str, &[&str], Option<usize>)] = &[
        (
            "cassandra_unguarded",
            &["ZombieWrite(2)", "OwnerFold"],
            None,
        ),
        (
            "cassandra_notomb",
            &[
                "OwnerFold",
                "OwnerFold",
                "ZombieWrite(1)",
                "OwnerRecover",
                "OwnerFold",
            ],
            None,
        ),
        (
            "cassandra_notomb_refines",
            &["OwnerFold", "OwnerFold"],
            None,
        ),
        (
            "kafka_decoupled",
            &["Rebalance", "Poll", "ZombieCommit(2)", "OwnerFold"],
            None,
        ),
        ("kafka_decoupled_coupling", &["Rebalance", "Poll"], None),
        (
            "kafka_unseeded",
            &["Rebalance", "ZombieCommit(2)", "OwnerFold"],
            None,
        ),
        (
            "epoch_refines",
            &["Rebalance", "ZombieInit", "ZombieCommit(2)", "OwnerFold"],
            None,
        ),
        (
            "casfw_unguarded",
            &["Update1(w1)", "Insert(w1)", "Update1(w2)"],
            None,
        ),
        (
            "casfw_no_ine",
            &["Update1(w1)", "Update1(w2)", "Insert(w1)", "Insert(w2)"],
            None,
        ),
        (
            "casfw_noretry",
            &["Update1(w1)", "Update1(w2)", "Insert(w1)", "Insert(w2)"],
            None,
        ),
        (
            "casfw_spurious",
            &[
                "Update1(w1)",
                "Update1(w2)",
                "Insert(w1)",
                "Insert(w2)",
                "ReapRow",
                "RetryUpdate(w2)",
            ],
            None,
        ),
        ("replay_fix_off", &["Write"], None),
        ("replay_fix_off_live", &["Write"], Some(1)),
        ("replay_nofair", &[], Some(0)),
        (
            "gc_ungated",
            &["sched(1)", "offer(2)", "acq(2)", "commit(2)"],
            None,
        ),
        ("gc_nofair", &[], Some(0)),
    ];
    let failing: Vec<String> = tower()
        .into_iter()
        .filter(|c| c.expected != Expected::Holds)
        .map(|c| c.name)
        .collect();
    assert_eq!(
        failing.len(),
        pinned.len(),
        "every expected failure is pinned here"
    );
    for (name, actions, loop_start) in pinned {
        let judged = run(&config(name), &Options::default()).unwrap();
        let cx = judged.report.counterexample().expect(name);
        assert_eq!(&cx.actions(), actions, "{name}");
        assert_eq!(cx.loop_start, *loop_start, "{name}");
        let Expected::Violates(property) = &judged.config.expected else {
            panic!("{name} expects a violation");
        };
        assert_eq!(&cx.property, property, "{name}");
    }
}

#[test]
fn the_epoch_counterexample_regresses_the_mapped_hwm() {
    let judged = run(&config("epoch_refines"), &Options::default()).unwrap();
    let images = judged
        .report
        .counterexample()
        .unwrap()
        .abstract_step
        .clone()
        .unwrap();
    let hwm =
        |side: &Vec<(String, Shown)>| side.iter().find(|(k, _)| k == "hwm").unwrap().1.clone();
    assert_eq!(hwm(&images.before).text(), "[2]");
    assert_eq!(hwm(&images.after).typed(), &serde_json::json!([1]));
    // The same finding as data: the abstract states themselves, in SingleWriterStore's types.
    let (_, report, _) = run_typed::<Epoch>(&config("epoch_refines"), &Options::default()).unwrap();
    let finding = report.counterexample.unwrap().abstract_step.unwrap();
    assert_eq!(&*finding.model, "SingleWriterStore");
    let state =
        |s: &loadbearing_refinement::AbstractState| s.downcast_ref::<SwsState>().unwrap().hwm[0];
    assert_eq!(state(finding.before.as_ref().unwrap()), 2);
    assert_eq!(state(&finding.after), 1);
}

/// Removing any guard from a holding config turns it red, by the property that guard protects.
#[test]
fn removing_a_guard_fails_by_property_name() {
    let mutants = [
        ("cassandra_refines", "Guarded=false", "RefSafeSpec"),
        ("cassandra_refines", "Tombstone=false", "RefSafeSpec"),
        ("kafka_refines", "Coupled=false", "INV_CaptureCoupled"),
        ("kafka_refines", "Seeded=false", "RefSafeSpec"),
        ("casfw_guarded", "Guarded=false", "INV_NoStaleOverwrite"),
        ("replay_fix_on", "Fix=false", "INV_NoSelfFence"),
        ("gc_cap2", "Gated=false", "INV_OffsetWithinDurable"),
    ];
    for (name, set, property) in mutants {
        let mut mutant = config(name);
        override_constants(&mut mutant, &[parse_set(set).unwrap()]).unwrap();
        let judged = run(&mutant, &Options::default()).unwrap();
        assert!(!judged.ok(), "{name} with {set} still passes");
        assert_eq!(
            *judged.report.outcome(),
            Outcome::Violates(property.into()),
            "{name} with {set}"
        );
    }
}

#[test]
fn larger_constants_keep_every_guarded_design_holding() {
    for (name, sets) in [
        ("cassandra_refines", vec!["MaxOffset=5"]),
        ("kafka_refines", vec!["MaxOffset=5"]),
        ("casfw_refines", vec!["Writers=3"]),
        ("gc_cap2", vec!["N=4"]),
    ] {
        let mut c = config(name);
        let sets: Vec<_> = sets.iter().map(|s| parse_set(s).unwrap()).collect();
        override_constants(&mut c, &sets).unwrap();
        let judged = run(&c, &Options::default()).unwrap();
        assert_eq!(*judged.report.outcome(), Outcome::Holds, "{name} {sets:?}");
        assert!(
            judged.ok(),
            "an overridden config is not held to the reference count"
        );
    }
}
