//! The SSI pivot model, pinned: every variant's verdict and the schedules that show them.

use loadbearing_expected::run::{run, Judged};
use loadbearing_expected::suite::{self, Config, Expected};
use loadbearing_refinement::{Options, Outcome, ShownPath};

fn ssi_configs() -> Vec<Config> {
    suite::built_in()
        .unwrap()
        .into_iter()
        .filter(|c| c.model == "SSI")
        .collect()
}

fn judge(name: &str) -> Judged {
    let config = ssi_configs()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no config {name}"));
    run(&config, &Options::default()).unwrap()
}

fn position(cx: &ShownPath, action: &str) -> usize {
    cx.steps
        .iter()
        .position(|s| s.action.as_deref() == Some(action))
        .unwrap_or_else(|| panic!("{action} is not on the path {:?}", cx.actions()))
}

fn value(cx: &ShownPath, step: usize, var: &str) -> String {
    cx.steps[step]
        .state
        .iter()
        .find(|(k, _)| k == var)
        .map(|(_, v)| v.text().to_string())
        .unwrap()
}

#[test]
fn every_ssi_config_is_classified_as_expected() {
    let configs = ssi_configs();
    assert!(configs.len() >= 20);
    for config in configs {
        let judged = run(&config, &Options::default()).unwrap();
        assert!(judged.ok(), "{}: {:?}", config.name, judged.mismatch);
    }
}

#[test]
fn the_fix_holds_every_property_on_every_workload_with_every_serial_outcome_reachable() {
    for workload in [
        "write_skew",
        "write_skew_onepage",
        "read_only",
        "lost_update",
        "read_your_writes",
        "reader_window",
    ] {
        let judged = judge(&format!("ssi_fix_{workload}"));
        assert_eq!(*judged.report.outcome(), Outcome::Holds, "{workload}");
        let checked = &judged.report.properties_checked();
        for p in [
            "Serializable",
            "CommitRecordFinal",
            "NoSpuriousUnsafe",
            "Finishes",
        ] {
            assert!(checked.iter().any(|c| c == p), "{workload} checks {p}");
        }
        let witnesses = checked.iter().filter(|p| p.starts_with("Serial_")).count();
        assert!(
            witnesses == 2 || witnesses == 6,
            "{workload}: every serial order is a witness"
        );
    }
}

/// The #136 trigger: T2's write lands while T1 is between CHECK and END, both commit, and the
/// final state is alice=0 bob=0.
#[test]
fn the_pre_fix_counterexample_is_the_136_trigger() {
    let judged = judge("ssi_prefix_write_skew");
    assert_eq!(
        *judged.report.outcome(),
        Outcome::Violates("Serializable".into())
    );
    let cx = judged.report.counterexample().unwrap();
    assert_eq!(
        cx.len(),
        12,
        "two begins, two reads, two writes, two three-step commits"
    );
    let check_t1 = position(cx, "Check(T1)");
    let write_t2 = position(cx, "Write(T2, bob)");
    let end_t1 = position(cx, "End(T1)");
    assert!(
        check_t1 < write_t2 && write_t2 < end_t1,
        "{:?}",
        cx.actions()
    );
    assert!(
        value(cx, write_t2, "T1").starts_with("running"),
        "T1 still RUNNING in the window"
    );
    let last = cx.steps.len() - 1;
    assert!(value(cx, last, "T1").starts_with("committed"));
    assert!(value(cx, last, "T2").starts_with("committed"));
    assert_eq!(value(cx, last, "committed"), "alice=0 bob=0");
}

/// The fix turns the same window into DB_SNAPSHOT_UNSAFE for T2.
#[test]
fn with_the_fix_the_trigger_schedule_fails_the_writer_unsafe() {
    use loadbearing_refinement::Model;
    use loadbearing_specs::infra::knobs::{Constants, Value};
    use loadbearing_specs::ssi::{Failure, Ssi, SsiAction, Status};
    use loadbearing_specs::Configured;

    let mut given = Constants::new();
    given.insert("Workload".into(), Value::Name("write_skew".into()));
    let model = Ssi::from_constants(&given).unwrap();
    let schedule = [
        SsiAction::Begin(0),
        SsiAction::Exec(0, 0),
        SsiAction::Exec(0, 1),
        SsiAction::Check(0),
        SsiAction::Record(0),
        SsiAction::Begin(1),
        SsiAction::Exec(1, 0),
        SsiAction::Exec(1, 1),
    ];
    let mut state = model.init_states().remove(0);
    for action in schedule {
        state = model.next_state(&state, action).unwrap();
    }
    assert_eq!(state.txns[1].status, Status::Aborted);
    assert_eq!(state.txns[1].failure, Some(Failure::SnapshotUnsafe));
    assert!(state.txns[0].sichecked);
}

#[test]
fn each_rejected_alternative_fails_for_its_own_reason() {
    let cases = [
        ("ssi_nocheck_write_skew", "Serializable"),
        ("ssi_dropmarkers_write_skew", "Serializable"),
        ("ssi_notrunning_write_skew", "NoSpuriousUnsafe"),
        ("ssi_option2_write_skew", "CommitRecordFinal"),
        ("ssi_plainsi_write_skew", "Serializable"),
        ("ssi_plainsi_read_only", "Serializable"),
        ("ssi_prefix_noopt_read_only", "Serializable"),
        ("ssi_readerunfixed_reader_window", "Serializable"),
    ];
    for (name, property) in cases {
        let judged = judge(name);
        assert_eq!(
            *judged.report.outcome(),
            Outcome::Violates(property.into()),
            "{name}"
        );
    }
    for holds in [
        "ssi_notrunning_write_skew_serializable",
        "ssi_noopt_write_skew",
        "ssi_prefix_noopt_write_skew",
        "ssi_plainsi_lost_update",
    ] {
        assert_eq!(*judge(holds).report.outcome(), Outcome::Holds, "{holds}");
    }
}

/// `not_running`: T2 fails UNSAFE because of T1's marker although T1 aborted.
#[test]
fn not_running_blames_an_aborted_peer() {
    let cx = judge("ssi_notrunning_write_skew")
        .report
        .counterexample()
        .unwrap()
        .clone();
    let abort = position(&cx, "AppAbort(T1)");
    let write = position(&cx, "Write(T2, bob)");
    assert!(abort < write);
    assert!(value(&cx, write, "T2").contains("SnapshotUnsafe"));
    assert!(value(&cx, write, "T1").starts_with("aborted"));
}

/// Option 2 aborts after the commit record is durable.
#[test]
fn option_two_aborts_a_durable_commit() {
    let cx = judge("ssi_option2_write_skew")
        .report
        .counterexample()
        .unwrap()
        .clone();
    let record = position(&cx, "Record(T1)");
    let last = cx.steps.len() - 1;
    assert!(record < last);
    assert_eq!(cx.steps[last].action.as_deref(), Some("End(T1)"));
    assert!(value(&cx, last, "T1").contains("RecheckConflict"));
}

/// The reader site left unfixed: T2 reads the old `a` while T1 (a pivot-to-be, RCONF, past its
/// CHECK) sits in its commit window, and nothing is left to look at T1's second flag.
#[test]
fn the_unfixed_reader_site_is_reachable() {
    let cx = judge("ssi_readerunfixed_reader_window")
        .report
        .counterexample()
        .unwrap()
        .clone();
    let check_t1 = position(&cx, "Check(T1)");
    let read = position(&cx, "Read(T2, a)");
    let end_t1 = position(&cx, "End(T1)");
    assert!(check_t1 < read && read < end_t1, "{:?}", cx.actions());
    let expected = Expected::Violates("Serializable".into());
    assert_eq!(
        judge("ssi_readerunfixed_reader_window").config.expected,
        expected
    );
}

/// Over-aborting the fix keeps: T2 already holds RCONF from reading T1's overwritten `alice`;
/// T1 then aborts, and T2's write meets T1's leftover marker: rule (3) fails T2 UNSAFE for an
/// edge to a transaction whose reads never counted.
#[test]
fn the_fix_still_over_aborts_because_of_an_aborted_peer() {
    let judged = judge("ssi_fix_overabort_write_skew");
    assert_eq!(*judged.report.outcome(), Outcome::Holds);
    let witness = &judged.report.witnesses()[0];
    assert_eq!(witness.property, "OverAbortByAbortedPeer");
    let abort = position(witness, "AppAbort(T1)");
    let write = position(witness, "Write(T2, bob)");
    assert!(abort < write, "{:?}", witness.actions());
    assert!(value(witness, write, "T2").contains("SnapshotUnsafe"));
}

/// A serializability counterexample says which cycle it commits, as `check --workload` does:
/// write skew's two anti-dependencies, the read-only anomaly's three edges through the reader;
/// a holding config has none to say.
#[test]
fn a_serializability_violation_names_its_dependency_cycle() {
    let explained = |name: &str| {
        let judged = judge(name);
        let cx = judged.report.counterexample().expect("a counterexample");
        cx.explanation.clone()
    };
    assert_eq!(
        explained("ssi_prefix_write_skew").as_deref(),
        Some("G2-item (write skew): T1 -rw(bob)-> T2 -rw(alice)-> T1")
    );
    let read_only = explained("ssi_prefix_read_only").unwrap();
    assert!(
        read_only.starts_with("G2-item (read-only anomaly): "),
        "{read_only}"
    );
    assert!(judge("ssi_fix_write_skew")
        .report
        .counterexample()
        .is_none());
}
