//! `loadbearing isolation`: the SSI engine's tier from the command line — the table, JSON, the
//! exit codes, PostgreSQL's column.

use crate::common::{fresh_rows_are_committed, loadbearing};
use std::process::Output;

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_table_shows_the_prefix_reproducing_136_the_fix_holding_and_plain_si_skewing() {
    let out = loadbearing(&["isolation", "--attempts", "3", "--variant", "main"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let row = |name: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no row {name}:\n{stdout}"))
            .to_string()
    };
    // The side-by-side table comes first: fix, prefix, nocheck, dropmarkers, plainsi.
    let trigger = row("write_skew_trigger");
    assert!(trigger.contains("T2 SnapshotUnsafe"), "{trigger}");
    assert!(trigger.contains("all commit VIOLATED 3/3"), "{trigger}");
    for header in [
        "fix — ",
        "prefix — ",
        "nocheck — ",
        "dropmarkers — ",
        "plainsi — ",
    ] {
        assert!(stdout.contains(header), "{header}\n{stdout}");
    }
    assert!(stdout.contains("over-abort"), "{stdout}");
    assert!(stdout.contains("aborted_peer: 3 over-abort(s)"), "{stdout}");
    assert!(
        stdout.contains("ok: every variant shows what it must"),
        "{stdout}"
    );
}

#[test]
fn json_carries_every_tally_and_the_verdict() {
    let out = loadbearing(&[
        "isolation",
        "--attempts",
        "2",
        "--variant",
        "fix,prefix",
        "--scenario",
        "write_skew_trigger",
        "--format",
        "json",
    ]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["ok"], true);
    let tallies = v["tallies"].as_array().unwrap();
    assert_eq!(tallies.len(), 2);
    let prefix = tallies.iter().find(|t| t["store"] == "prefix").unwrap();
    assert_eq!(prefix["violations"], 2);
    assert_eq!(prefix["conforming"], serde_json::json!([2, 2]));
    let fix = tallies.iter().find(|t| t["store"] == "fix").unwrap();
    assert_eq!(fix["aborts"]["SnapshotUnsafe"], 2);
    assert!(fix["example_violation"].is_null());
}

/// Exit 1 (a variant not showing what it must) is pinned on `tier::musts` in the engine crate:
/// the engine cannot be made to miss from here. The musts apply to what ran: the pre-fix
/// engine on the late timing alone owes nothing.
#[test]
fn musts_apply_to_the_scenarios_that_ran() {
    let out = loadbearing(&[
        "isolation",
        "--attempts",
        "2",
        "--variant",
        "prefix",
        "--scenario",
        "write_skew_late",
    ]);
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("T2 SnapshotUnsafe"), "{stdout}");
}

#[test]
fn bad_input_exits_two_with_what_to_do() {
    let out = loadbearing(&["isolation", "--variant", "bogus"]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("unknown variant `bogus`") && stderr.contains("prefix_noopt"),
        "{stderr}"
    );
    let out = loadbearing(&["isolation", "--scenario", "nothing_like_it"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).1.contains("write_skew_trigger"));
    let out = loadbearing(&["isolation", "--attempts", "0"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
#[cfg(feature = "postgres")]
fn postgres_gets_its_own_column_and_never_violates() {
    // find_bin returns only a folder holding initdb.
    if let Err(why) = loadbearing_impls::servers::postgres::launcher::find_bin() {
        loadbearing_test_support::skip_or_fail("isolation --postgres", &why);
        return;
    }
    let out = loadbearing(&[
        "isolation",
        "--attempts",
        "2",
        "--variant",
        "fix",
        "--postgres",
    ]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let header = stdout.lines().find(|l| l.starts_with("scenario")).unwrap();
    assert!(
        header.contains("fix") && header.contains("postgres"),
        "{header}"
    );
    assert!(
        stdout.contains("postgres — PostgreSQL at SERIALIZABLE"),
        "{stdout}"
    );
    assert!(!stdout.contains("VIOLATED"), "{stdout}");
    assert!(
        stdout.contains("False positives of the libdb design"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  pivot_commits_first: fix T1 SnapshotConflict"),
        "{stdout}"
    );
}

#[test]
fn traces_are_written_as_ndjson_for_the_conformance_checker() {
    let dir = std::env::temp_dir().join(format!(
        "loadbearing-isolation-traces-{}",
        std::process::id()
    ));
    let out = loadbearing(&[
        "isolation",
        "--attempts",
        "1",
        "--variant",
        "prefix",
        "--scenario",
        "write_skew_trigger",
        "--traces",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out).1);
    let ndjson = std::fs::read_to_string(dir.join("prefix-write_skew_trigger.ndjson")).unwrap();
    use loadbearing_trace::TraceEvent;
    let events =
        loadbearing_trace::parse_ndjson::<loadbearing_specs::ssi::trace::SsiEvent>(&ndjson)
            .unwrap();
    let actions: Vec<String> = events
        .iter()
        .map(|e| format!("{}({})", e.action(), e.txn()))
        .collect();
    assert_eq!(actions.len(), 12, "{actions:?}");
    assert_eq!(actions[3], "Check(T1)");
    // Both end, the trace closing with an `End`: which of the two ends last depends on thread
    // timing once T2's write has landed inside T1's commit (a loaded machine flips it).
    assert!(actions.last().unwrap().starts_with("End("), "{actions:?}");
    for end in ["End(T1)", "End(T2)"] {
        assert!(actions.iter().any(|a| a == end), "{end}: {actions:?}");
    }
    // The trace is a behaviour of the pre-fix model, and not of the fix.
    use loadbearing_specs::ssi::workload;
    let prefix = loadbearing_ssi_engine::engine::Variant::named("prefix").unwrap();
    let limits = loadbearing_trace::Limits::default();
    let w = || workload::named("write_skew").unwrap();
    let model_of = loadbearing_conform::ssi_engine::model_of;
    assert!(loadbearing_trace::validate(&model_of(prefix, w()), &events, limits).conforming);
    let fix = loadbearing_ssi_engine::engine::Variant::FIX;
    assert!(!loadbearing_trace::validate(&model_of(fix, w()), &events, limits).conforming);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `isolation --workload`: a workload file raced on the engine's variants; each store held to
/// what its model reaches for the file, every trace replayed in the model.
#[test]
fn a_workload_file_races_on_each_variant_and_shows_only_what_its_model_reaches() {
    let out = loadbearing(&[
        "isolation",
        "--workload",
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/expected/workloads/write_skew.toml"
        ),
        "--variant",
        "fix,plainsi",
        "--attempts",
        "20",
        "--format",
        "json",
    ]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["workload"], "write_skew");
    let store = |name: &str| {
        v["stores"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["race"]["store"] == name)
            .unwrap_or_else(|| panic!("no store {name}: {stdout}"))
            .clone()
    };
    let fix = store("fix");
    assert_eq!(fix["allowed"], serde_json::json!([]));
    assert_eq!(fix["race"]["anomalies"], serde_json::json!({}));
    assert_eq!(fix["race"]["serializable"], 20);
    assert_eq!(fix["race"]["conforming"], serde_json::json!([20, 20]));
    let plain = store("plainsi");
    assert_eq!(
        plain["allowed"],
        serde_json::json!(["G2-item (write skew)"])
    );
    assert_eq!(plain["race"]["unknown"], 0);
    assert_eq!(plain["problems"], serde_json::json!([]));
}

/// A workload on an engine named runs there alone; the model's variants race beside it only
/// when `--variant` asks.
#[test]
fn a_workload_on_an_engine_named_runs_there_alone_unless_variants_are_asked() {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/expected/workloads/write_skew.toml"
    );
    let stores = |extra: &[&str]| -> Vec<String> {
        let mut args = vec!["isolation", "--workload", file, "--engine", "sqlite"];
        args.extend(extra);
        args.extend(["--attempts", "5", "--format", "json"]);
        let out = loadbearing(&args);
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
        let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        v["stores"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["race"]["store"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(stores(&[]), vec!["sqlite (serializable by locking)"]);
    assert_eq!(
        stores(&["--variant", "fix"]),
        vec!["fix", "sqlite (serializable by locking)"]
    );
}

#[test]
fn a_workload_race_prints_a_row_per_store_and_the_verdict() {
    let out = loadbearing(&[
        "isolation",
        "--workload",
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/expected/workloads/lost_update.toml"
        ),
        "--variant",
        "main",
        "--attempts",
        "5",
    ]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let header = stdout.lines().find(|l| l.starts_with("store")).unwrap();
    assert!(
        header.contains("anomalies shown") && header.contains("design reaches"),
        "{header}"
    );
    for store in ["fix", "prefix", "nocheck", "dropmarkers", "plainsi"] {
        assert!(
            stdout
                .lines()
                .any(|l| l.split_whitespace().next() == Some(store)),
            "no row {store}:\n{stdout}"
        );
    }
    assert!(
        stdout.contains("ok: every store showed only what its design reaches"),
        "{stdout}"
    );
}

#[test]
fn a_bad_workload_race_exits_two_naming_the_problem() {
    let out = loadbearing(&["isolation", "--workload", "no/such/file.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).1.contains("no/such/file.toml"),
        "{:?}",
        text(&out)
    );
    let dir = std::env::temp_dir().join(format!("lb-iso-wl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[keys]\nx = 0\n\n[[txn]]\nsteps = [\"read y\"]\n").unwrap();
    let out = loadbearing(&["isolation", "--workload", bad.to_str().unwrap()]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("bad.toml:5:"), "{stderr}");
    let out = loadbearing(&[
        "isolation",
        "--workload",
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/expected/workloads/write_skew.toml"
        ),
        "--scenario",
        "write_skew_trigger",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).1.contains("--scenario does not apply"),
        "{:?}",
        text(&out)
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// The same file on PostgreSQL, driven through every one of its 70 interleavings at both
/// levels, each history established from the store's own records: at SERIALIZABLE no anomaly;
/// at REPEATABLE READ (snapshot isolation) the write skew the model's `plainsi` reaches, with
/// the schedule that shows it. Had the driver not interleaved (each transaction run alone),
/// no skew would show and the snapshot column would be a finding.
#[test]
#[cfg(feature = "postgres")]
fn a_workload_is_driven_on_postgres_through_every_interleaving_at_each_level() {
    let Some(v) = postgres_workload("write_skew") else {
        return;
    };
    let stores: Vec<&serde_json::Value> = v["stores"].as_array().unwrap().iter().collect();
    let names: Vec<&str> = stores
        .iter()
        .map(|s| s["race"]["store"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "postgres (SERIALIZABLE)",
            "postgres (REPEATABLE READ)",
            "postgres (READ COMMITTED)"
        ]
    );
    for s in &stores {
        assert_eq!(s["race"]["attempts"], 70, "{s}");
        assert_eq!(s["race"]["unknown"], 0, "{s}");
        assert_eq!(s["driven"]["interleavings"]["total"], 70, "{s}");
        assert!(
            s["driven"]["interleavings"]["sampled_with"].is_null(),
            "{s}"
        );
        assert_eq!(s["problems"], serde_json::json!([]), "{s}");
    }
    assert_eq!(stores[0]["race"]["anomalies"], serde_json::json!({}));
    let skew = &stores[1]["race"]["anomalies"]["G2-item (write skew)"];
    assert!(skew["attempts"].as_u64().unwrap() > 0, "{}", stores[1]);
    assert!(
        skew["history"].as_str().unwrap().contains("schedule: T"),
        "{skew}"
    );
    assert_eq!(
        stores[1]["allowed"],
        serde_json::json!(["G2-item (write skew)"])
    );
    // READ COMMITTED commits the skew too, and is held only to nothing dirty.
    assert!(
        stores[2]["race"]["anomalies"]["G2-item (write skew)"]["attempts"]
            .as_u64()
            .is_some_and(|n| n > 0)
    );
    let allowed = stores[2]["allowed"].to_string();
    assert!(
        allowed.contains("G-single (lost update)") && !allowed.contains("G1"),
        "{allowed}"
    );
}

/// PostgreSQL's READ COMMITTED, observed: two read-modify-writes of one key commit a lost
/// update (the second write waits for the first's row lock, then applies to the row as
/// committed), where REPEATABLE READ and SERIALIZABLE refuse it (first committer wins).
#[test]
#[cfg(feature = "postgres")]
fn postgres_read_committed_commits_the_lost_update_the_other_levels_refuse() {
    let Some(v) = postgres_workload("lost_update") else {
        return;
    };
    let store = |name: &str| {
        v["stores"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["race"]["store"] == name)
            .unwrap_or_else(|| panic!("no {name}: {v}"))
            .clone()
    };
    let rc = store("postgres (READ COMMITTED)");
    assert!(
        rc["race"]["anomalies"]["G-single (lost update)"]["attempts"]
            .as_u64()
            .is_some_and(|n| n > 0),
        "{rc}"
    );
    assert!(rc["driven"]["blocked"].as_u64().unwrap() > 0, "{rc}");
    assert_eq!(rc["problems"], serde_json::json!([]), "{rc}");
    for level in ["SERIALIZABLE", "REPEATABLE READ"] {
        let s = store(&format!("postgres ({level})"));
        assert_eq!(s["race"]["anomalies"], serde_json::json!({}), "{s}");
    }
}

/// `isolation --workload expected/workloads/write_skew.toml --variant none` and `engine`
/// (engines and format): its stdout, once it exited 0.
/// `isolation --workload expected/workloads/NAME.toml --variant none` on `engine` (its flags),
/// as JSON; it must exit 0. The engines' own tests use it, each behind its feature.
#[cfg(any(feature = "postgres", feature = "bdb", feature = "badger"))]
fn workload_json(name: &str, engine: &[&str]) -> serde_json::Value {
    let file = format!(
        "{}/expected/workloads/{name}.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut args = vec!["isolation", "--workload", &file, "--variant", "none"];
    args.extend_from_slice(engine);
    args.extend(["--format", "json"]);
    let out = loadbearing(&args);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    serde_json::from_str(&stdout).unwrap()
}

fn write_skew_on(engine: &[&str]) -> String {
    let mut args = vec![
        "isolation",
        "--workload",
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/expected/workloads/write_skew.toml"
        ),
        "--variant",
        "none",
    ];
    args.extend_from_slice(engine);
    let out = loadbearing(&args);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    stdout
}

/// SQLite claims serializable transactions and gets them by locking: over every interleaving
/// of the write-skew pair, no anomaly; where the two overlap, the second writer is refused
/// (`SQLITE_BUSY`, or `SQLITE_BUSY_SNAPSHOT` for a snapshot older than the last commit).
#[test]
fn a_workload_is_driven_on_sqlite_through_every_interleaving() {
    let v = write_skew_on(&["--sqlite", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&v).unwrap();
    let sqlite = &v["stores"][0];
    assert_eq!(sqlite["race"]["store"], "sqlite (serializable by locking)");
    assert_eq!(sqlite["race"]["attempts"], 70, "{sqlite}");
    assert_eq!(sqlite["race"]["serializable"], 70, "{sqlite}");
    assert_eq!(sqlite["race"]["unknown"], 0, "{sqlite}");
    assert_eq!(sqlite["race"]["anomalies"], serde_json::json!({}));
    let outcomes = sqlite["race"]["outcomes"].as_object().unwrap();
    assert!(
        outcomes.keys().any(|o| o.contains("SQLITE_BUSY")),
        "{outcomes:?}"
    );
    let stdout = write_skew_on(&["--engine", "sqlite"]);
    assert!(
        stdout.contains(
            "sqlite (serializable by locking): every interleaving (70), driven step by step"
        ),
        "{stdout}"
    );
}

/// skipdb (crates.io) promises serializable snapshot isolation for `serializable_write`:
/// over every interleaving of the write-skew pair it commits no anomaly, refusing one of the
/// two at commit wherever they overlap.
#[test]
fn a_workload_is_driven_on_skipdb_through_every_interleaving() {
    let v = write_skew_on(&["--skipdb", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&v).unwrap();
    let skipdb = &v["stores"][0];
    assert_eq!(skipdb["race"]["store"], "skipdb (serializable_write)");
    assert_eq!(skipdb["race"]["attempts"], 70, "{skipdb}");
    assert_eq!(skipdb["race"]["serializable"], 70, "{skipdb}");
    assert_eq!(skipdb["race"]["anomalies"], serde_json::json!({}));
    assert_eq!(
        skipdb["race"]["outcomes"]["T1 skipdb conflict"], 34,
        "{skipdb}"
    );
}

/// Every must-fail counterexample of the ssi suite, its schedule driven on SQLite and skipdb:
/// both promise serializable transactions, and refuse every one.
#[test]
fn the_suites_counterexamples_are_refused_by_the_serializable_engines() {
    let out = loadbearing(&[
        "isolation",
        "--replay-suite",
        "--sqlite",
        "--skipdb",
        "--format",
        "json",
    ]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let configs = v.as_array().unwrap();
    assert!(configs.len() >= 10, "{}", configs.len());
    for c in configs {
        for e in c["engines"].as_array().unwrap() {
            assert_eq!(e["ok"], true, "{c}");
            assert_eq!(e["anomalies"], serde_json::json!([]), "{c}");
        }
    }
    let out = loadbearing(&["isolation", "--replay-suite", "--engine", "oracle"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out)
        .1
        .contains("possible values: postgres, sqlite, skipdb"));
    let out = loadbearing(&["isolation", "--replay-suite"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).1.contains("name them"), "{}", text(&out).1);
}

/// The same counterexamples on PostgreSQL: refused at SERIALIZABLE, and at REPEATABLE READ
/// (snapshot isolation, what the broken variants amount to) committed with their anomaly.
#[test]
#[cfg(feature = "postgres")]
fn the_suites_counterexamples_on_postgres_are_refused_or_committed_as_each_level_promises() {
    if let Err(why) = loadbearing_impls::servers::postgres::launcher::find_bin() {
        loadbearing_test_support::skip_or_fail("isolation --replay-suite --postgres", &why);
        return;
    }
    let out = loadbearing(&[
        "isolation",
        "--replay-suite",
        "--postgres",
        "--format",
        "json",
    ]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    for c in v.as_array().unwrap() {
        let engines = c["engines"].as_array().unwrap();
        assert_eq!(engines[0]["store"], "postgres (SERIALIZABLE)");
        assert_eq!(engines[0]["anomalies"], serde_json::json!([]), "{c}");
        assert_eq!(engines[1]["store"], "postgres (REPEATABLE READ)");
        assert_ne!(engines[1]["anomalies"], serde_json::json!([]), "{c}");
    }
}

/// docs/isolation.md is the output of `isolation --matrix`: the embedded engines' rows of a
/// fresh run are the page's, word for word (the page's PostgreSQL rows come from the same
/// command with --postgres).
#[test]
fn docs_isolation_md_is_the_matrix_commands_output() {
    let page = std::env::temp_dir().join(format!("lb-isolation-{}.md", std::process::id()));
    let page_arg = page.to_str().unwrap();
    let workloads = concat!(env!("CARGO_MANIFEST_DIR"), "/expected/workloads");
    let mut args = vec!["isolation", "--matrix", workloads, "--engine", "sqlite"];
    args.extend(["--engine", "skipdb"]);
    // Berkeley DB's and Badger's rows too where this build has them (CI's does).
    let with_bdb = cfg!(feature = "bdb");
    if with_bdb {
        args.extend(["--engine", "bdb"]);
    }
    let with_badger = cfg!(feature = "badger");
    if with_badger {
        args.extend(["--engine", "badger"]);
    }
    args.extend(["--markdown", page_arg]);
    let out = loadbearing(&args);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let fresh = std::fs::read_to_string(&page).unwrap();
    let prefixes = ["| sqlite", "| skipdb", "| berkeley", "| badger"];
    let rows = fresh_rows_are_committed(&fresh, "docs/isolation.md", &prefixes);
    let engines = 2 + usize::from(with_bdb) + usize::from(with_badger);
    assert_eq!(rows, 5 * engines, "{fresh}");
    let committed =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/isolation.md")).unwrap();
    assert!(committed.contains(
        "| postgres (REPEATABLE READ) | snapshot isolation (the plainsi model) | write_skew |"
    ));
}

/// Berkeley DB 5.3 is snapshot isolation: over every interleaving of the write-skew pair it
/// commits write skew (keys on two pages: no page lock between them), and over the two
/// read-modify-writes it refuses every lost update (an update conflict, in its own words).
#[test]
#[cfg(feature = "bdb")]
fn berkeley_db_admits_write_skew_and_refuses_lost_update() {
    let skew = workload_json("write_skew", &["--engine", "bdb"]);
    let bdb = &skew["stores"][0];
    assert_eq!(bdb["race"]["store"], "berkeley db 5.3 (DB_TXN_SNAPSHOT)");
    assert_eq!(bdb["driven"]["interleavings"]["total"], 70, "{bdb}");
    assert!(
        bdb["race"]["anomalies"]["G2-item (write skew)"]["attempts"].as_u64() > Some(0),
        "{bdb}"
    );
    assert_eq!(bdb["problems"], serde_json::json!([]), "{bdb}");
    let v = workload_json("lost_update", &["--engine", "bdb"]);
    let race = &v["stores"][0]["race"];
    assert_eq!(race["anomalies"], serde_json::json!({}), "{race}");
    assert!(
        race["outcomes"]
            .as_object()
            .unwrap()
            .keys()
            .any(|o| o.contains("DB_LOCK_DEADLOCK")),
        "{race}"
    );
}

/// Badger promises serializable snapshot isolation and keeps it: over every interleaving of
/// the write-skew pair, no anomaly, the second committer of an overlap refused in Badger's
/// words.
#[test]
#[cfg(feature = "badger")]
fn badger_refuses_write_skew_at_commit() {
    let v = workload_json("write_skew", &["--engine", "badger"]);
    let badger = &v["stores"][0];
    assert_eq!(badger["race"]["store"], "badger v4 (optimistic SSI)");
    assert_eq!(badger["driven"]["interleavings"]["total"], 70, "{badger}");
    assert_eq!(
        badger["race"]["anomalies"],
        serde_json::json!({}),
        "{badger}"
    );
    assert_eq!(badger["race"]["serializable"], 70, "{badger}");
    assert!(
        badger["race"]["outcomes"]
            .as_object()
            .unwrap()
            .keys()
            .any(|o| o.contains("Transaction Conflict")),
        "{badger}"
    );
}

/// A build without Berkeley DB says which feature and which setup script it needs (exit 2),
/// before anything runs.
#[test]
#[cfg(not(feature = "bdb"))]
fn an_engine_not_compiled_in_is_bad_input_naming_its_feature() {
    let out = loadbearing(&[
        "isolation",
        "--matrix",
        "expected/workloads",
        "--engine",
        "bdb",
    ]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(stderr.contains("--features bdb"), "{stderr}");
    assert!(stderr.contains("13-berkeley-db.sh"), "{stderr}");
}

/// Snapshot isolation refuses a lost update (first committer wins): in every interleaving of
/// two read-modify-writes, PostgreSQL at REPEATABLE READ shows no anomaly, and some
/// interleavings abort one of them (or block it until the other commits).
#[test]
#[cfg(feature = "postgres")]
fn snapshot_isolation_on_postgres_refuses_every_lost_update() {
    let Some(v) = postgres_workload("lost_update") else {
        return;
    };
    let si = &v["stores"][1];
    assert_eq!(si["race"]["store"], "postgres (REPEATABLE READ)");
    assert_eq!(si["race"]["anomalies"], serde_json::json!({}), "{si}");
    assert_eq!(si["race"]["serializable"], si["race"]["attempts"], "{si}");
    let outcomes = si["race"]["outcomes"].as_object().unwrap();
    assert!(
        outcomes.keys().any(|o| o.contains("40001")),
        "some interleaving aborts a writer: {si}"
    );
    assert!(si["driven"]["blocked"].as_u64().unwrap() > 0, "{si}");
}

/// `isolation --workload expected/workloads/NAME.toml --variant none --postgres` as JSON;
/// `None` (skipped, outside CI) without PostgreSQL's binaries.
#[cfg(feature = "postgres")]
fn postgres_workload(name: &str) -> Option<serde_json::Value> {
    if let Err(why) = loadbearing_impls::servers::postgres::launcher::find_bin() {
        loadbearing_test_support::skip_or_fail("isolation --workload --postgres", &why);
        return None;
    }
    Some(workload_json(name, &["--postgres"]))
}

/// The five classic workloads on PostgreSQL's three levels, as `isolation --matrix` drives
/// them (docs/isolation.md's PostgreSQL rows): every row as promised, SERIALIZABLE committing no
/// anomaly anywhere, REPEATABLE READ committing write skew and the read-only anomaly, READ
/// COMMITTED the lost update and read skew besides.
#[test]
#[cfg(feature = "postgres")]
fn the_classic_workloads_on_postgres_are_as_each_level_promises() {
    if let Err(why) = loadbearing_impls::servers::postgres::launcher::find_bin() {
        loadbearing_test_support::skip_or_fail("isolation --matrix --engine postgres", &why);
        return;
    }
    let out = loadbearing(&[
        "isolation",
        "--matrix",
        concat!(env!("CARGO_MANIFEST_DIR"), "/expected/workloads"),
        "--engine",
        "postgres",
        "--format",
        "json",
    ]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let rows: Vec<serde_json::Value> = serde_json::from_str(&stdout).unwrap();
    assert_eq!(rows.len(), 15, "{stdout}");
    let anomalies = |engine: &str, workload: &str| -> Vec<String> {
        let row = rows
            .iter()
            .find(|r| r["engine"] == engine && r["workload"] == workload)
            .unwrap_or_else(|| panic!("no row for {engine} on {workload}: {stdout}"));
        assert_eq!(row["problems"], serde_json::json!([]), "{row}");
        serde_json::from_value(row["anomalies"].clone()).unwrap()
    };
    for workload in [
        "lost_update",
        "read_only",
        "read_skew",
        "serializable",
        "write_skew",
    ] {
        assert!(anomalies("postgres (SERIALIZABLE)", workload).is_empty());
    }
    let rr = "postgres (REPEATABLE READ)";
    assert!(anomalies(rr, "write_skew")[0].starts_with("G2-item (write skew)"));
    assert!(anomalies(rr, "read_only")[0].starts_with("G2-item (read-only anomaly)"));
    assert!(anomalies(rr, "lost_update").is_empty());
    let rc = "postgres (READ COMMITTED)";
    assert!(anomalies(rc, "lost_update")[0].starts_with("G-single (lost update)"));
    assert!(anomalies(rc, "read_skew")[0].starts_with("G-single"));
    assert!(anomalies(rc, "serializable").is_empty());
}
