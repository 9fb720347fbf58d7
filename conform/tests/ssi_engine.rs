//! The SSI engine (`impls/ssi`) against the SSI model, through the adapter
//! (`loadbearing_conform::ssi_engine`): the #136 counterexample replayed on the engine, engine
//! traces replayed in the model, and random model paths run on both.

use loadbearing_conform::ssi_engine::{
    action, committed, model_of, replay_path, to_ndjson, validate, validate_engine,
};
use loadbearing_refinement::Model;
use loadbearing_refinement::{check, CheckSpec, Options, Outcome};
use loadbearing_specs::ssi::workload;
use loadbearing_ssi_engine::engine::Variant;
use loadbearing_ssi_engine::program::{script, Script, TxnResult};
use loadbearing_ssi_engine::replay::{parse, replay};
use loadbearing_trace::parse_ndjson;

/// The model's shortest counterexample of `property` for `variant` on `workload`.
fn counterexample(variant: &str, workload_name: &str, property: &str) -> Vec<String> {
    let model = model_of(
        Variant::named(variant).unwrap(),
        workload::named(workload_name).unwrap(),
    );
    let spec = CheckSpec {
        properties: vec![property.to_string()],
        fair: false,
        allow_end_states: true,
        symmetry: Vec::new(),
    };
    let report = check(&model, &spec, &Options::default()).unwrap();
    assert_eq!(report.outcome, Outcome::Violates(property.into()));
    let cx = report.counterexample.unwrap();
    cx.path.actions().map(|a| model.format_action(a)).collect()
}

/// `cargo run -- trace ssi_prefix_write_skew`, as the checker finds it.
const TRIGGER: [&str; 12] = [
    "Begin(T1)",
    "Read(T1, bob)",
    "Write(T1, alice)",
    "Check(T1)",
    "Record(T1)",
    "Begin(T2)",
    "Read(T2, alice)",
    "Write(T2, bob)",
    "End(T1)",
    "Check(T2)",
    "Record(T2)",
    "End(T2)",
];

#[test]
fn the_model_finds_the_136_trigger_schedule_pinned_here() {
    assert_eq!(
        counterexample("prefix", "write_skew", "Serializable"),
        TRIGGER
    );
}

#[test]
fn the_model_s_own_actions_drive_the_engine_as_their_names_do() {
    let prefix = Variant::named("prefix").unwrap();
    let model = model_of(prefix, workload::named("write_skew").unwrap());
    let spec = CheckSpec {
        properties: vec!["Serializable".to_string()],
        fair: false,
        allow_end_states: true,
        symmetry: Vec::new(),
    };
    let report = check(&model, &spec, &Options::default()).unwrap();
    let actions: Vec<_> = report
        .counterexample
        .unwrap()
        .path
        .actions()
        .copied()
        .collect();
    for a in &actions {
        let step = action(&model, a);
        assert_eq!(step.to_string(), model.format_action(a));
        assert_eq!(parse(&step.to_string()), Ok(Some(step)));
    }
    let s = script("write_skew").unwrap();
    let typed = replay_path(&s, prefix, &model, &actions).unwrap();
    let named = replay(&s, prefix, &TRIGGER).unwrap();
    assert_eq!(typed.steps, named.steps);
    assert_eq!(typed.outcome.state_text(), named.outcome.state_text());
    assert_eq!(typed.outcome.serializable, named.outcome.serializable);
    assert_eq!(typed.trace, named.trace);
}

#[test]
fn the_trigger_counterexample_on_the_prefix_engine_commits_the_write_skew() {
    let path = counterexample("prefix", "write_skew", "Serializable");
    let s = script("write_skew").unwrap();
    let run = replay(&s, Variant::named("prefix").unwrap(), &path).unwrap();
    assert!(
        run.steps.iter().all(|s| s.error.is_none() && !s.skipped),
        "{:?}",
        run.steps
    );
    assert_eq!(
        run.outcome.results,
        [TxnResult::Committed, TxnResult::Committed]
    );
    assert_eq!(run.outcome.state_text(), "alice=0 bob=0");
    assert!(!run.outcome.serializable);
    // The engine's trace is the model's path, and its final state the model's.
    let model = model_of(
        Variant::named("prefix").unwrap(),
        workload::named("write_skew").unwrap(),
    );
    let fits = validate_engine(&model, &run.trace).unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(fits.path, path);
    assert_eq!(
        committed(&model, &fits.state),
        [("alice".to_string(), 0), ("bob".to_string(), 0)]
    );
    assert!(!model.serializable(&fits.state));
}

#[test]
fn the_same_schedule_on_the_fixed_engine_ends_with_t2_snapshot_unsafe() {
    let s = script("write_skew").unwrap();
    let run = replay(&s, Variant::FIX, &TRIGGER).unwrap();
    assert_eq!(run.error_of("Write(T2, bob)"), Some("SnapshotUnsafe"));
    let skipped: Vec<&str> = run
        .steps
        .iter()
        .filter(|s| s.skipped)
        .map(|s| s.action.as_str())
        .collect();
    assert_eq!(skipped, ["Check(T2)", "Record(T2)", "End(T2)"]);
    assert_eq!(
        run.outcome.results,
        [
            TxnResult::Committed,
            TxnResult::Aborted("SnapshotUnsafe".into())
        ]
    );
    assert_eq!(run.outcome.state_text(), "alice=0 bob=1");
    assert!(run.outcome.serializable);
    // The fixed engine's trace fits the fixed model …
    let fix = model_of(Variant::FIX, workload::named("write_skew").unwrap());
    validate_engine(&fix, &run.trace).unwrap_or_else(|d| panic!("{d}"));
    // … and the pre-fix engine's trace does not: the checker has teeth.
    let prefix_run = replay(&s, Variant::named("prefix").unwrap(), &TRIGGER).unwrap();
    let d = validate_engine(&fix, &prefix_run.trace).unwrap_err();
    assert_eq!(d.matched, 7, "{d}");
    assert!(d.event.contains(r#""key":"bob""#), "{d}");
    assert!(
        d.why.contains("the model fails it with SnapshotUnsafe"),
        "{d}"
    );
}

#[test]
fn every_broken_variant_counterexample_reproduces_on_the_engine() {
    for (variant, workload_name, property) in [
        ("prefix", "write_skew_onepage", "Serializable"),
        ("prefix", "read_only", "Serializable"),
        ("nocheck", "write_skew", "Serializable"),
        ("dropmarkers", "write_skew", "Serializable"),
        ("plainsi", "write_skew", "Serializable"),
        ("plainsi", "read_only", "Serializable"),
        ("prefix_noopt", "read_only", "Serializable"),
        ("readerunfixed", "reader_window", "Serializable"),
        ("readerunfixed", "read_only", "Serializable"),
    ] {
        let path = counterexample(variant, workload_name, property);
        let s = script(workload_name).unwrap();
        let run = replay(&s, Variant::named(variant).unwrap(), &path).unwrap();
        assert!(
            !run.outcome.serializable,
            "{variant} {workload_name}: the engine's run of the model's counterexample is serializable: {:?}",
            run.outcome
        );
        let model = model_of(
            Variant::named(variant).unwrap(),
            workload::named(workload_name).unwrap(),
        );
        let fits = validate_engine(&model, &run.trace)
            .unwrap_or_else(|d| panic!("{variant} {workload_name}: {d}"));
        assert_eq!(fits.path, path);
        // And on the fixed engine the same schedule is serializable.
        let fixed = replay(&s, Variant::FIX, &path).unwrap();
        assert!(
            fixed.outcome.serializable,
            "fix on {variant}'s {workload_name} path"
        );
    }
}

#[test]
fn option2_aborts_after_the_commit_record_on_the_engine_too() {
    let path = counterexample("option2", "write_skew", "CommitRecordFinal");
    let s = script("write_skew").unwrap();
    let run = replay(&s, Variant::named("option2").unwrap(), &path).unwrap();
    let end = run.steps.last().unwrap();
    assert_eq!(
        end.error.as_deref(),
        Some("RecheckConflict"),
        "{:?}",
        run.steps
    );
    assert!(
        run.steps
            .iter()
            .any(|s| s.action.starts_with("Record(") && s.error.is_none()),
        "the commit record was written first"
    );
}

/// Random complete model paths (every transaction finished), run on the engine: the engine's
/// trace must be the same path in the model, with the same observations and final state.
#[test]
fn random_model_paths_run_identically_on_the_engine_for_every_variant_and_workload() {
    // The workspace's one seeded generator.
    let mut rng = fastrand::Rng::with_seed(0x9e37_79b9_7f4a_7c15);
    let mut runs = 0;
    for &variant in Variant::NAMES {
        for &workload_name in workload::NAMES {
            let model = model_of(
                Variant::named(variant).unwrap(),
                workload::named(workload_name).unwrap(),
            );
            let s: Script = script(workload_name).unwrap();
            for _ in 0..40 {
                let mut state = model.init_states().remove(0);
                let mut path = Vec::new();
                loop {
                    let mut actions = Vec::new();
                    model.actions(&state, &mut actions);
                    if actions.is_empty() {
                        break;
                    }
                    let a = actions[rng.usize(..actions.len())];
                    path.push(model.format_action(&a));
                    state = model.next_state(&state, a).unwrap();
                }
                let run = replay(&s, Variant::named(variant).unwrap(), &path)
                    .unwrap_or_else(|e| panic!("{variant} {workload_name}: {e}\n{path:?}"));
                assert!(run.steps.iter().all(|s| !s.skipped));
                // Through NDJSON, as the conformance checker reads it.
                let events = parse_ndjson(&to_ndjson(&run.trace)).unwrap();
                let fits = validate(&model, &events)
                    .unwrap_or_else(|d| panic!("{variant} {workload_name}: {d}"));
                assert_eq!(fits.path, path);
                let engine_state: Vec<(String, i64)> = run
                    .outcome
                    .state
                    .iter()
                    .map(|(k, v)| (k.clone(), v.unwrap()))
                    .collect();
                let mut model_state = committed(&model, &state);
                model_state.sort();
                assert_eq!(
                    engine_state, model_state,
                    "{variant} {workload_name} {path:?}"
                );
                assert_eq!(
                    run.outcome.serializable,
                    model.serializable(&state),
                    "{variant} {workload_name} {path:?}"
                );
                runs += 1;
            }
        }
    }
    assert_eq!(runs, 10 * 6 * 40);
}

/// The same traces through the generic conformance checker (`loadbearing_trace`
/// with the model's `Conform` impl): replayed counterexamples and racy-tier runs fit their own
/// variant's model; the pre-fix trigger trace does not fit the fix.
#[test]
fn engine_traces_pass_the_generic_conformance_checker() {
    use loadbearing_ssi_engine::tier::{attempt_engine, scenarios};
    use loadbearing_trace::{validate as generic, Limits};

    let s = script("write_skew").unwrap();
    let prefix = Variant::named("prefix").unwrap();
    let prefix_model = model_of(prefix, workload::named("write_skew").unwrap());
    let fix_model = model_of(Variant::FIX, workload::named("write_skew").unwrap());
    let prefix_trace =
        parse_ndjson(&to_ndjson(&replay(&s, prefix, &TRIGGER).unwrap().trace)).unwrap();
    let fix_trace = parse_ndjson(&to_ndjson(
        &replay(&s, Variant::FIX, &TRIGGER).unwrap().trace,
    ))
    .unwrap();
    let v = generic(&prefix_model, &prefix_trace, Limits::default());
    assert!(v.conforming, "{:?}", v.divergence);
    assert_eq!(v.witness.unwrap(), TRIGGER);
    assert!(generic(&fix_model, &fix_trace, Limits::default()).conforming);
    let d = generic(&fix_model, &prefix_trace, Limits::default());
    assert!(!d.conforming);
    assert_eq!(d.divergence.unwrap().matched, 7);

    let mut checked = 0;
    for variant in ["fix", "prefix", "nocheck", "dropmarkers", "plainsi"] {
        for sc in scenarios() {
            let Some(w) = workload::named(sc.script) else {
                continue; // the predicate scenario has no model
            };
            let model = model_of(Variant::named(variant).unwrap(), w);
            let run = attempt_engine(&sc, Variant::named(variant).unwrap(), 7, 20, None);
            let events = parse_ndjson(&to_ndjson(&run.trace)).unwrap();
            let v = generic(&model, &events, Limits::default());
            assert!(v.conforming, "{variant} {}: {:?}", sc.name, v.divergence);
            checked += 1;
        }
    }
    assert_eq!(checked, 5 * (scenarios().len() - 1));
}

/// Replay is deterministic: the same path gives the same trace and outcome twice (the guard a
/// conformance check needs against uncontrolled nondeterminism).
#[test]
fn replaying_a_path_twice_gives_the_same_trace() {
    for variant in Variant::NAMES {
        let s = script("write_skew").unwrap();
        let v = Variant::named(variant).unwrap();
        let a = replay(&s, v, &TRIGGER).unwrap();
        let b = replay(&s, v, &TRIGGER).unwrap();
        assert_eq!(to_ndjson(&a.trace), to_ndjson(&b.trace), "{variant}");
        assert_eq!(a.outcome, b.outcome, "{variant}");
    }
}
