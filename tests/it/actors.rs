//! The actor level: every `cassandra_actors_*`, `kafka_actors_*`, `epoch_actors_*` and `gc_actors_*` config's outcome and state count, and the
//! action names of each expected failure's shortest counterexample.

use loadbearing::trace;
use loadbearing_expected::suite::{self, Config, Expected};
use loadbearing_refinement::{Options, Outcome};
use loadbearing_specs::infra::knobs::Value;

fn config(name: &str) -> Config {
    suite::built_in()
        .expect("the shipped suite loads")
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no config {name}"))
}

fn run(name: &str) -> (Outcome, u64, Vec<String>) {
    let traced = trace::trace(&config(name), &Options::default()).unwrap();
    let report = &traced.judged.report;
    let actions = traced
        .counterexample()
        .map(|cx| cx.steps.iter().filter_map(|s| s.action.clone()).collect())
        .unwrap_or_default();
    (report.outcome().clone(), report.distinct_states(), actions)
}

#[test]
fn the_shipped_actor_designs_hold_with_their_state_counts() {
    for (name, states) in [
        ("cassandra_actors_refines", 2999),
        ("cassandra_actors_compound", 5819),
        ("cassandra_actors_resend", 2574),
        ("cassandra_actors_overtaken", 14144),
        ("cassandra_actors_lost_reply", 39606),
        ("cassandra_actors_lost_reply_compound", 80304),
        ("cassandra_actors_store_crash", 11638),
        ("cassandra_actors_flow_crash", 20070),
        ("kafka_actors_refines", 2080),
        ("epoch_actors_refines", 940),
        ("epoch_actors_lossy", 2296),
        ("gc_actors_refines", 1528),
        ("gc_actors_unordered", 3381),
        ("ssi_actors_fix_write_skew", 237),
        ("ssi_actors_fix_read_only", 5517),
        ("ssi_actors_fix_reader_window", 4265),
        ("ssi_actors_fix_write_skew_onepage", 237),
        ("ssi_actors_fix_lost_update", 181),
        ("ssi_actors_fix_read_your_writes", 177),
        ("ssi_actors_client_crash", 711),
        ("ssi_actors_lost_reply", 852),
    ] {
        let (outcome, count, _) = run(name);
        assert_eq!(outcome, Outcome::Holds, "{name}");
        assert_eq!(count, states, "{name}");
    }
}

/// The unordered network is a fault only if it adds behaviours: the same constants on FIFO
/// connections reach fewer states, and there the resend never overtakes its original.
#[test]
fn an_unordered_network_lets_a_resend_overtake_its_original() {
    let (_, unordered, _) = run("cassandra_actors_overtaken");
    let mut ordered = config("cassandra_actors_resend");
    let overtaken = config("cassandra_actors_overtaken");
    let differing: Vec<&String> = ordered
        .constants
        .values()
        .iter()
        .filter(|(knob, value)| overtaken.constants.values().get(*knob) != Some(value))
        .map(|(knob, _)| knob)
        .collect();
    assert_eq!(
        differing,
        ["Network"],
        "the two configs differ in the network alone"
    );
    ordered.properties = vec!["OriginalOvertaken".into()];
    let judged = loadbearing_expected::run::run(&ordered, &Options::default()).unwrap();
    assert_eq!(
        judged.report.outcome(),
        &Outcome::Missing("OriginalOvertaken".into())
    );
    assert!(unordered > judged.report.distinct_states());
}

#[test]
fn the_lwt_without_its_offset_condition_fails_the_link_at_the_stale_write() {
    let (outcome, _, actions) = run("cassandra_actors_unguarded");
    assert_eq!(outcome, Outcome::Violates("RefCassandra".into()));
    assert_eq!(
        actions,
        [
            "StartWrite(2)",
            "zombie→store Lwt(2, Snap(2, {1,2}))",
            "owner→store Lwt(1, Snap(1, {1}))",
        ]
    );
    let (outcome, _, actions) = run("cassandra_actors_unguarded_sws");
    assert_eq!(outcome, Outcome::Violates("RefSafeSpec".into()));
    assert_eq!(actions.len(), 3);
}

#[test]
fn a_row_removing_delete_corrupts_the_row_through_a_zombie_write() {
    let (outcome, _, actions) = run("cassandra_actors_notomb");
    assert_eq!(outcome, Outcome::Violates("INV_NoCorruptDurable".into()));
    assert_eq!(actions.len(), 9);
    assert_eq!(actions[2], "owner→store Lwt(2, Absent)");
    assert_eq!(
        actions.last().unwrap(),
        "owner→store Lwt(3, Snap(3, {1,3}))"
    );
}

#[test]
fn a_flow_restart_is_no_step_of_the_shared_state_spec() {
    let (outcome, _, actions) = run("cassandra_actors_flow_crash_refines");
    assert_eq!(outcome, Outcome::Violates("RefCassandra".into()));
    assert_eq!(actions, ["Crash"]);
}

#[test]
fn the_kafka_actor_guards_fail_by_name() {
    let (outcome, _, actions) = run("kafka_actors_decoupled");
    assert_eq!(outcome, Outcome::Violates("RefKafka".into()));
    assert_eq!(
        actions,
        [
            "Rebalance",
            "broker→zombie Revoked",
            "StartPoll",
            "zombie→broker Poll",
            "broker→zombie Generation(2)",
        ]
    );
    let (outcome, _, actions) = run("kafka_actors_decoupled_sws");
    assert_eq!(outcome, Outcome::Violates("RefSafeSpec".into()));
    assert_eq!(actions.len(), 8);
    assert_eq!(actions[6], "zombie→broker Commit(2, Snap(2, {1,2}), gen 2)");
    let (outcome, _, actions) = run("kafka_actors_unseeded");
    assert_eq!(outcome, Outcome::Violates("RefSafeSpec".into()));
    assert_eq!(actions.len(), 5);
    let (outcome, _, actions) = run("kafka_actors_nogen");
    assert_eq!(outcome, Outcome::Violates("RefKafka".into()));
    assert_eq!(
        actions.last().unwrap(),
        "zombie→broker Commit(1, Snap(1, {1}), gen 1)"
    );
    let (outcome, _, actions) = run("kafka_actors_nogen_sws");
    assert_eq!(outcome, Outcome::Violates("RefSafeSpec".into()));
    assert_eq!(actions.len(), 5);
}

/// The late initialiser wins: the messages that give the revoked owner's producer the newest
/// epoch, then its stale transaction landing over the owner's record.
#[test]
fn the_epoch_actors_fail_the_top_of_the_tower_through_the_late_init() {
    let (outcome, _, actions) = run("epoch_actors_sws");
    assert_eq!(outcome, Outcome::Violates("RefSafeSpec".into()));
    assert_eq!(
        actions[4..],
        [
            "coordinator→zombie Revoked",
            "zombie→broker InitTransactions",
            "broker→zombie ProducerEpoch(2)",
            "StartCommit(1)",
            "zombie→broker Commit(1, Snap(1, {1}), epoch 2)",
        ]
    );
}

/// The lossy network is a fault only if it adds behaviours: without it the lost answer is never
/// reached, and fewer states are.
#[test]
fn a_lossy_network_loses_the_answer_to_a_decided_request() {
    let (_, lossy, _) = run("epoch_actors_lossy");
    let mut reliable = config("epoch_actors_refines");
    reliable.properties = vec!["ZombieReplyLost".into()];
    let judged = loadbearing_expected::run::run(&reliable, &Options::default()).unwrap();
    assert_eq!(
        judged.report.outcome(),
        &Outcome::Missing("ZombieReplyLost".into())
    );
    assert!(lossy > judged.report.distinct_states());
}

/// On a racing network a later write's durability notice reaches the flow first; on FIFO
/// connections never, and fewer states are reached.
#[test]
fn a_racing_network_reorders_the_durability_notices() {
    let (_, unordered, _) = run("gc_actors_unordered");
    let mut ordered = config("gc_actors_refines");
    ordered.properties = vec!["NoticeOvertaken".into()];
    let judged = loadbearing_expected::run::run(&ordered, &Options::default()).unwrap();
    assert_eq!(
        judged.report.outcome(),
        &Outcome::Missing("NoticeOvertaken".into())
    );
    assert!(unordered > judged.report.distinct_states());
}

/// Without the gate the flow schedules offset 2 before any write is durable, and writer 1's
/// transaction commits it beside its own write alone.
#[test]
fn the_group_commit_actors_without_the_gate_commit_an_offset_ahead_of_the_writes() {
    let (outcome, _, actions) = run("gc_actors_ungated");
    assert_eq!(outcome, Outcome::Violates("INV_OffsetWithinDurable".into()));
    assert_eq!(
        actions[4..],
        [
            "StartSchedule(2)",
            "flow→producer Schedule(2)",
            "writer 1→producer Commit",
        ]
    );
    let (outcome, _, actions) = run("gc_actors_ungated_refines");
    assert_eq!(outcome, Outcome::Violates("RefGroupCommit".into()));
    assert_eq!(actions, ["StartSchedule(1)", "flow→producer Schedule(1)"]);
}

/// A fresh folder for one test's logs.
fn log_dir(test: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("lb-actors-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The faults an actor config can claim: the knob, its faulty value, and the value that turns
/// the fault off.
fn faults() -> [(&'static str, Value, Value); 5] {
    [
        (
            "Network",
            Value::Name("unordered".into()),
            Value::Name("ordered".into()),
        ),
        ("Lossy", Value::Bool(true), Value::Bool(false)),
        ("CrashStore", Value::Bool(true), Value::Bool(false)),
        ("CrashFlow", Value::Bool(true), Value::Bool(false)),
        ("CrashClient", Value::Bool(true), Value::Bool(false)),
    ]
}

/// Every holding actor config that claims a fault adds behaviour with it: the same config with
/// its faults off reaches fewer states, and misses one of its witnesses, so some `sometimes`
/// property needs the fault.
#[test]
fn every_actor_fault_config_needs_its_fault() {
    let mut checked = Vec::new();
    for fault_config in suite::built_in()
        .unwrap()
        .into_iter()
        .filter(|c| c.suite == "actors" && c.expected == Expected::Holds)
    {
        let off: Vec<(String, Value)> = faults()
            .into_iter()
            .filter(|(knob, on, _)| fault_config.given.get(*knob) == Some(on))
            .map(|(knob, _, off)| (knob.to_string(), off))
            .collect();
        if off.is_empty() {
            continue;
        }
        let with = loadbearing_expected::run::run(&fault_config, &Options::default()).unwrap();
        let mut without = fault_config.clone();
        suite::override_constants(&mut without, &off).unwrap();
        let judged = loadbearing_expected::run::run(&without, &Options::default()).unwrap();
        let name = &fault_config.name;
        assert!(
            matches!(judged.report.outcome(), Outcome::Missing(_)),
            "{name} without {off:?}: {:?}, but some witness should need the fault",
            judged.report.outcome()
        );
        assert!(
            with.report.distinct_states() > judged.report.distinct_states(),
            "{name}: the fault adds no states"
        );
        checked.push(name.clone());
    }
    assert_eq!(
        checked,
        [
            "cassandra_actors_overtaken",
            "cassandra_actors_lost_reply",
            "cassandra_actors_lost_reply_compound",
            "cassandra_actors_store_crash",
            "cassandra_actors_flow_crash",
            "epoch_actors_lossy",
            "gc_actors_unordered",
            "ssi_actors_client_crash",
            "ssi_actors_lost_reply",
        ]
    );
}

/// Runs `run-actors SYSTEM`, saving the log; its stdout.
fn run_actors(system: &str, log: &std::path::Path) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_loadbearing"))
        .args(["run-actors", system, "--millis", "4000", "--out"])
        .arg(log)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{system}: {stdout}");
    assert!(
        stdout.contains("the log conforms to the actor model"),
        "{system}: {stdout}"
    );
    stdout
}

/// The saved log, checked again from the file by `conform --trace` with the command the run
/// printed.
fn conform_again(stdout: &str) {
    let command = stdout
        .lines()
        .find_map(|l| {
            l.split('`')
                .nth(1)
                .filter(|c| c.starts_with("loadbearing conform"))
        })
        .expect("the run says how to check its log");
    let args: Vec<&str> = command.split_whitespace().skip(1).collect();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_loadbearing"))
        .args(&args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{command}: {text}");
    assert!(text.contains("events conform to"), "{text}");
}

#[test]
fn the_cassandra_actors_run_over_udp_and_their_log_conforms() {
    let dir = log_dir("cassandra");
    let stdout = run_actors("cassandra", &dir.join("cassandra.ndjson"));
    // The owner's three writes and its recovery read reached the store.
    assert!(
        stdout.contains("owner→store Lwt(3, Snap(3, {3}))"),
        "{stdout}"
    );
    assert!(stdout.contains("store→owner RowIs(Tomb(2))"), "{stdout}");
    conform_again(&stdout);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_kafka_epoch_group_commit_and_ssi_actors_run_over_udp_and_their_logs_conform() {
    let dir = log_dir("others");
    for (system, seen) in [
        ("kafka", "owner→broker Commit(3, Snap(3, {3}))"),
        ("epoch", "zombie→broker InitTransactions"),
        ("group-commit", "producer→flow Scheduled(3)"),
        ("ssi", " Committed"),
    ] {
        let stdout = run_actors(system, &dir.join(format!("{system}.ndjson")));
        assert!(stdout.contains(seen), "{system}: {stdout}");
        conform_again(&stdout);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every broken SSI variant's anomaly carries over to the actors; the fix holds there, with the
/// commit's record and end in flight while other requests are handled.
#[test]
fn the_ssi_variants_keep_their_verdicts_through_messages() {
    for (name, violated) in [
        ("ssi_actors_prefix_write_skew", "Serializable"),
        ("ssi_actors_prefix_read_only", "Serializable"),
        ("ssi_actors_readerunfixed_reader_window", "Serializable"),
        ("ssi_actors_nocheck_write_skew", "Serializable"),
        ("ssi_actors_dropmarkers_write_skew", "Serializable"),
        ("ssi_actors_plainsi_write_skew", "Serializable"),
        ("ssi_actors_option2_write_skew", "CommitRecordFinal"),
    ] {
        let (outcome, _, actions) = run(name);
        assert_eq!(outcome, Outcome::Violates(violated.into()), "{name}");
        assert!(
            actions.iter().any(|a| a.contains("engine→engine End")),
            "{name}: no commit reached its end: {actions:?}"
        );
    }
}

#[test]
fn an_unknown_actor_system_is_refused_naming_the_known_ones() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_loadbearing"))
        .args(["run-actors", "zookeeper"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("available: cassandra, kafka, epoch, group-commit, ssi"),
        "{stderr}"
    );
}
