//! Conformance of the implementations to their models, both ways, and the `conform` command.

use crate::common;

use crate::common::loadbearing;
use loadbearing_conform::{
    self as conform, atomic_schedule, replay, targets, AtomicSchedule, Backend, BackendKind,
    Settings, StoreBackend, StoreFactory,
};
use loadbearing_impls::Mode;
use loadbearing_specs::first_write::atomic::CasFirstWriteAtomic;
use loadbearing_specs::infra::knobs::{Constants, Value};
use loadbearing_specs::ssi::trace::{SsiEvent as E, Txn};
use loadbearing_specs::ssi::{Failure, Ssi};
use loadbearing_specs::Configured;
use loadbearing_trace::{to_ndjson, validate, Limits};

fn sqlite(traces: usize, seed: u64) -> Settings {
    common::servers::settings(Backend::SQLITE, traces, 8, seed)
}

/// Eight writers race truly concurrently (nothing orders their calls but SQLite): each round
/// is a history, every writer's persist in it, then the key's read; each is linearizable.
#[test]
fn eight_racing_writers_on_the_guarded_sqlite_store_conform() {
    let result = conform::run(&targets::STORE, &sqlite(30, 11)).unwrap();
    assert!(result.ok, "{:?}", result.histories.first().map(|h| &h.text));
    assert_eq!(result.conforming, 30);
    assert_eq!(
        result.events,
        30 * (8 + 1),
        "every writer's Persist and the final read are in the history"
    );
}

#[test]
fn the_planted_last_write_wins_mutant_is_caught_with_a_readable_divergence() {
    let result = conform::run(&targets::STORE_LWW, &sqlite(30, 11)).unwrap();
    assert!(result.ok, "the mutant must diverge");
    assert!(result.divergent_traces > 0);
    // Real threads race, so which operation cannot come next differs between runs: a stale
    // write that landed, or the final read showing one. Either way the report names it with
    // its line and why the model refused it.
    let text = &result.histories[0].text;
    assert!(text.contains("not linearizable"), "{text}");
    let refused = text
        .split("then nothing the history allows next fits")
        .nth(1)
        .unwrap_or_else(|| panic!("no refused operation named: {text}"));
    assert!(
        refused.contains("line ")
            && (refused.contains("a stale write landed") || refused.contains("\"Read\"")),
        "the report names the offending operation and why: {text}"
    );
}

#[test]
fn model_paths_replayed_on_the_store_agree_with_the_model() {
    let result = conform::run(&targets::REPLAY, &sqlite(20, 5)).unwrap();
    assert!(result.ok, "{:?}", result.mismatches);
    assert!(result.traces > 100, "all short paths plus the random walks");
}

/// casfw_unguarded's counterexample, mapped through the refinement onto the atomic store: it
/// reproduces on the last-write-wins store and is refused on the guarded one.
#[test]
fn the_unguarded_counterexample_reproduces_on_the_broken_store_only() {
    let AtomicSchedule {
        model: unguarded,
        init,
        schedule,
    } = atomic_schedule("casfw_unguarded").unwrap();
    assert_eq!(format!("{schedule:?}"), "[Persist(w1), Persist(w2)]");
    assert!(!unguarded.guarded, "the config's own constants");
    let model = |guarded| CasFirstWriteAtomic {
        guarded,
        ..unguarded.clone()
    };
    let lww = StoreFactory::new(Backend::SQLITE, Mode::LastWriteWins, "t_lww").unwrap();
    let (mismatches, regressed) = replay(&lww, "k", &model(false), &init, &schedule).unwrap();
    assert!(
        mismatches.is_empty() && regressed,
        "the stale write lands: {mismatches:?}"
    );
    let guarded = StoreFactory::new(Backend::SQLITE, Mode::Guarded, "t_guarded").unwrap();
    let (mismatches, regressed) = replay(&guarded, "k", &model(true), &init, &schedule).unwrap();
    assert!(
        mismatches.is_empty() && !regressed,
        "the guarded store refuses it: {mismatches:?}"
    );
}

fn ssi(past_check: &str) -> Ssi {
    let mut given = Constants::new();
    given.insert("Workload".into(), Value::Name("write_skew".into()));
    given.insert("PastCheck".into(), Value::Name(past_check.into()));
    Ssi::from_constants(&given).unwrap()
}

/// The #136 trigger as an engine would log it.
fn trigger_trace(t2_write: E) -> Vec<E> {
    let (t1, t2) = (Txn(0), Txn(1));
    let read = |txn, key: &str| E::Read {
        txn,
        key: key.into(),
        value: Some(1),
        failed: None,
    };
    vec![
        E::Begin { txn: t1 },
        read(t1, "bob"),
        write(t1, "alice", None),
        E::Check {
            txn: t1,
            failed: None,
        },
        E::Record { txn: t1 },
        E::Begin { txn: t2 },
        read(t2, "alice"),
        t2_write,
        E::End {
            txn: t1,
            failed: None,
        },
        E::Check {
            txn: t2,
            failed: None,
        },
        E::Record { txn: t2 },
        E::End {
            txn: t2,
            failed: None,
        },
    ]
}

/// `txn` writes 0 to `key`, or fails with `failed`.
fn write(txn: Txn, key: &str, failed: Option<Failure>) -> E {
    E::Write {
        txn,
        key: key.into(),
        value: Some(0),
        skipped: false,
        failed,
    }
}

#[test]
fn an_ssi_engine_trace_of_the_trigger_fits_the_pre_fix_model_and_not_the_fix() {
    let events = trigger_trace(write(Txn(1), "bob", None));
    let verdict = validate(&ssi("status"), &events, Limits::default());
    assert!(
        verdict.conforming,
        "{:?}",
        verdict.divergence.map(|d| d.text())
    );
    assert_eq!(verdict.witness.unwrap().len(), 12);
    let verdict = validate(&ssi("published"), &events, Limits::default());
    let d = verdict.divergence.expect("the fix refuses T2's write");
    assert_eq!(d.matched, 7);
    assert!(
        d.text().contains("the model fails it with SnapshotUnsafe"),
        "{}",
        d.text()
    );
}

#[test]
fn the_fixed_engines_unsafe_write_fits_the_fix() {
    let mut events = trigger_trace(write(Txn(1), "bob", Some(Failure::SnapshotUnsafe)));
    events.truncate(8);
    events.push(E::Cleanup { txn: Txn(1) });
    let verdict = validate(&ssi("published"), &events, Limits::default());
    assert!(
        verdict.conforming,
        "{:?}",
        verdict.divergence.map(|d| d.text())
    );
}

#[test]
fn conform_validates_a_trace_file_and_names_a_malformed_line() {
    let dir = std::env::temp_dir().join(format!("loadbearing-conform-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fits = dir.join("fits.ndjson");
    use loadbearing_specs::first_write::trace::{FirstWriteEvent as E, Outcome, Statement, Writer};
    let st = |w: u8, offset: u64, outcome: Outcome, stored: Option<u64>| {
        Statement::new(Writer::model(w as usize - 1), offset, Some(outcome), stored)
    };
    let events = vec![
        E::Update1(st(1, 2, Outcome::RowAbsent, None)),
        E::Update1(st(2, 1, Outcome::RowAbsent, None)),
        E::Insert(st(1, 2, Outcome::Applied, None)),
        E::Insert(st(2, 1, Outcome::NotApplied, Some(2))),
        E::RetryUpdate(st(2, 1, Outcome::NotApplied, Some(2))),
    ];
    std::fs::write(&fits, to_ndjson(&events)).unwrap();
    let out = loadbearing(&[
        "conform",
        "--trace",
        fits.to_str().unwrap(),
        "--model",
        "casfw_guarded",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("5 events conform to CasFirstWrite"));

    // The same trace with the stale retry applied: an unguarded store's behaviour.
    let mut stale = events.clone();
    stale[4] = E::RetryUpdate(st(2, 1, Outcome::Applied, None));
    let diverges = dir.join("diverges.ndjson");
    std::fs::write(&diverges, to_ndjson(&stale)).unwrap();
    let out = loadbearing(&[
        "conform",
        "--trace",
        diverges.to_str().unwrap(),
        "--model",
        "casfw_guarded",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("diverged at event 5") && text.contains("a stale write landed"),
        "{text}"
    );

    // Cut short, of another model's vocabulary, an unknown action, a missing field, an old
    // schema version: each an error (exit 2) naming the line and what is wrong with it.
    let prefix = to_ndjson(&events[..2]);
    let line = |rest: &str| format!("{{\"v\":2,\"vocabulary\":\"first_write\",{rest}}}");
    for (bad, why) in [
        ("{\"v\":2,".to_string(), "not a JSON object"),
        (
            r#"{"v":2,"vocabulary":"kafka","action":"Poll"}"#.to_string(),
            "a `kafka` event, this model reads `first_write` events",
        ),
        (
            line(r#""action":"Erase","writer":"w1","offset":1"#),
            "unknown variant `Erase`",
        ),
        (
            line(r#""action":"Insert","writer":"w1""#),
            "missing field `offset`",
        ),
        (
            r#"{"v":1,"actor":"w1","action":"Insert","args":{"offset":1}}"#.to_string(),
            "schema version 1",
        ),
    ] {
        let broken = dir.join("broken.ndjson");
        std::fs::write(&broken, format!("{prefix}{bad}\n")).unwrap();
        let out = loadbearing(&[
            "conform",
            "--trace",
            broken.to_str().unwrap(),
            "--model",
            "casfw_guarded",
        ]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("line 3") && stderr.contains(why),
            "{bad}: {stderr}"
        );
    }

    let out = loadbearing(&[
        "conform",
        "--trace",
        fits.to_str().unwrap(),
        "--model",
        "sws_holds",
    ]);
    // The abstract spec has no implementation of its own: nothing reads traces for it.
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("GroupCommit"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn conform_json_reports_every_target() {
    let out = loadbearing(&[
        "conform", "--traces", "5", "--seed", "3", "--format", "json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let targets: Vec<&str> = results
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["target"].as_str().unwrap())
        .collect();
    // Every target whose default backend is embedded (in-process or SQLite): the table's
    // own, in its order.
    let expected: Vec<&str> = conform::targets::ALL
        .iter()
        .filter(|t| t.backends()[0].embedded())
        .map(|t| t.name())
        .collect();
    assert!(expected.len() > 30, "{expected:?}");
    assert_eq!(targets, expected);
    for r in results.as_array().unwrap() {
        for field in [
            "model",
            "backend",
            "traces",
            "events",
            "conforming",
            "divergences",
            "seconds",
            "replays",
        ] {
            assert!(r.get(field).is_some(), "{field} missing in {r}");
        }
    }
    let out = loadbearing(&["conform", "nonsense"]);
    assert_eq!(out.status.code(), Some(2));
}

/// `store-faults` on the same server (one per binary): rounds through a Toxiproxy proxy, each
/// fault left statements unresolved or unsent (else the target reports a mismatch), every
/// history a behaviour of the model; its last-write-wins mutant diverges on a stale write.
#[cfg(feature = "postgres")]
fn faulted_histories_are_judged_by_the_model(settings: &Settings) {
    if let Err(why) = loadbearing_impls::harness::toxiproxy::find_bin() {
        loadbearing_test_support::skip_or_fail("store-faults", &why);
        return;
    }
    let result = conform::run(&targets::STORE_FAULTS, settings).unwrap();
    assert!(
        result.ok,
        "{:?} {:?}",
        result.mismatches,
        result.histories.first().map(|h| &h.text)
    );
    assert_eq!(result.conforming, settings.traces);
    let result = conform::run(&targets::STORE_FAULTS_LWW, settings).unwrap();
    assert!(result.ok, "{:?}", result.mismatches);
    let text = &result.histories[0].text;
    assert!(text.contains("not linearizable"), "{text}");
}

/// The guarded store on a real PostgreSQL server; CI provides one (see .ci/setup.d).
#[test]
#[cfg(feature = "postgres")]
fn eight_racing_writers_on_postgres_conform() {
    let Some(server) = common::servers::postgres() else {
        return;
    };
    let settings = common::servers::settings(
        Backend::at(
            BackendKind::Store(StoreBackend::Postgres),
            server.conn_str(),
        ),
        10,
        8,
        17,
    );
    let result = conform::run(&targets::STORE, &settings).unwrap();
    assert!(result.ok, "{:?}", result.histories.first().map(|h| &h.text));
    let result = conform::run(&targets::STORE_LWW, &settings).unwrap();
    assert!(result.ok && result.divergent_traces > 0);
    faulted_histories_are_judged_by_the_model(&settings);
    // The non-atomic first write: 8 writers' statements interleaved by the seeded scheduler.
    let result = conform::run(&targets::COMPOUND, &settings).unwrap();
    assert!(
        result.ok,
        "{:?}",
        result.divergences.first().map(|d| d.text())
    );
    assert!(
        result.events > 8 * 10,
        "insert races force retries: {} events",
        result.events
    );
    // The compound's must-fail configs, statement by statement on the real database.
    let replayed: Vec<&str> = result.replays.iter().map(|r| r.config.as_str()).collect();
    assert_eq!(
        replayed,
        ["casfw_no_ine", "casfw_noretry", "casfw_spurious"]
    );
    let [no_ine, noretry, spurious] = [&result.replays[0], &result.replays[1], &result.replays[2]];
    assert!(
        no_ine.broken.contains("a stale write landed"),
        "{}",
        no_ine.broken
    );
    assert!(no_ine.guarded.contains("w2 refused"), "{}", no_ine.guarded);
    assert!(
        noretry.broken.contains("its write was lost, not refused"),
        "{}",
        noretry.broken
    );
    assert!(noretry.guarded.contains("w2 wrote"), "{}", noretry.guarded);
    assert!(spurious.steps.contains(&"ReapRow".to_string()));
    assert!(
        spurious.broken.contains("a spurious conflict"),
        "{}",
        spurious.broken
    );
}

#[test]
fn the_compound_needs_postgres() {
    let err = conform::run(&targets::COMPOUND, &sqlite(1, 1)).unwrap_err();
    assert!(
        matches!(
            err,
            conform::Error::WrongBackend {
                target: "compound",
                backend: BackendKind::Store(StoreBackend::Sqlite),
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string().contains("runs on postgres or cassandra"),
        "{err}"
    );
}

fn in_process(traces: usize, seed: u64) -> Settings {
    common::servers::settings(Backend::MEMORY, traces, 8, seed)
}

#[test]
fn the_fixed_ssi_engine_conforms_and_every_must_fail_ssi_config_reproduces() {
    let result = conform::run(&targets::SSI, &in_process(4, 3)).unwrap();
    assert!(
        result.ok,
        "{:?} {:?}",
        result.divergences.first().map(|d| d.text()),
        result.mismatches
    );
    // Every must-fail ssi_* config of the suite, driven through its engine variant, but for the
    // model configs with versions visible at the commit record (`VisibleAtRecord`, libdb's
    // visibility), which our engine does not implement.
    let must_fail = loadbearing_expected::suite::built_in()
        .unwrap()
        .into_iter()
        .filter(|c| c.model == "SSI" && c.expected.to_string().starts_with("violates"))
        .filter(|c| {
            c.given.get("VisibleAtRecord")
                != Some(&loadbearing_specs::infra::knobs::Value::Bool(true))
        })
        .count();
    assert_eq!(result.replays.len(), must_fail);
    let trigger = result
        .replays
        .iter()
        .find(|r| r.config == "ssi_prefix_write_skew")
        .unwrap();
    assert!(
        trigger.broken.contains("not serializable") && !trigger.broken.contains("Some("),
        "{}",
        trigger.broken
    );
    assert!(
        trigger
            .guarded
            .contains("Write(T2, bob) failed SnapshotUnsafe"),
        "{}",
        trigger.guarded
    );
}

#[test]
fn the_pre_fix_ssi_engine_is_caught_by_the_fix_model() {
    let result = conform::run(&targets::SSI_PREFIX, &in_process(4, 3)).unwrap();
    assert!(result.ok && result.divergent_traces > 0);
    let text = result.divergences[0].text();
    assert!(
        text.contains("the engine's step succeeded, the model fails it with SnapshotUnsafe"),
        "{text}"
    );
}

/// A target that must conform and checked nothing (no trace, no model step) does not pass
/// vacuously.
#[test]
fn a_conforming_target_with_nothing_checked_is_a_mismatch() {
    let result = conform::run(&targets::STORE, &sqlite(0, 1)).unwrap();
    assert_eq!((result.traces, result.steps), (0, 0));
    assert!(!result.ok, "{result:?}");
    assert_eq!(result.mismatches, [conform::Mismatch::NothingChecked]);
}

/// A target that cannot run (here: its PostgreSQL address refuses connections) is recorded
/// with its error and the run goes on to the next target, which still shows what it must.
#[test]
#[cfg(feature = "postgres")]
fn a_target_that_cannot_run_is_recorded_and_the_run_goes_on() {
    let mut servers = conform::Servers::default();
    servers
        .attach(
            BackendKind::Store(StoreBackend::Postgres),
            "host=127.0.0.1 port=1 user=nobody connect_timeout=2",
        )
        .unwrap();
    let mut plan = conform::Plan::default();
    plan.push(&targets::STORE, BackendKind::Store(StoreBackend::Postgres))
        .unwrap();
    plan.push(&targets::GROUP_COMMIT, BackendKind::Memory)
        .unwrap();
    let results = plan.run(&mut servers, 2, 2, 1, None);
    assert_eq!(results.len(), 2);
    assert!(
        results[0].error.is_some() && !results[0].ok,
        "{:?}",
        results[0].error
    );
    assert!(
        results[1].error.is_none() && results[1].ok,
        "{:?}",
        results[1].mismatches
    );
}

/// From the command line the same run exits 2 (incomplete: what the target would have shown
/// is unknown), names the target and its error, and still prints the table.
#[test]
#[cfg(feature = "postgres")]
fn conform_exits_two_when_a_target_cannot_run() {
    let out = loadbearing(&[
        "conform",
        "store",
        "--backend",
        "postgres",
        "--server",
        "host=127.0.0.1 port=1 user=nobody connect_timeout=2",
        "--traces",
        "2",
        "--seed",
        "1",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("error: store"), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("0 of 1 targets as expected; not: store on postgres"),
        "{stdout}"
    );
}

/// The table ends with the run in one line.
#[test]
fn the_conform_table_ends_with_how_many_targets_were_as_expected() {
    let out = loadbearing(&[
        "conform",
        "store",
        "store-lww",
        // Writers racing on real threads: enough races that the planted mutant's stale write
        // lands in one even on a loaded machine (with two, one run in many saw none).
        "--traces",
        "8",
        "--seed",
        "1",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert_eq!(
        stdout.lines().last(),
        Some("2 of 2 targets as expected"),
        "{stdout}"
    );
}
