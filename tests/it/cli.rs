//! The CLI as a user and CI run it: exit codes, JSON, and errors for bad input.

use crate::common::loadbearing;
use std::process::Output;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The README's first command, as an installed binary runs it: copied away from the build, run
/// from `/`, it carries its suites and guards and finds every outcome as expected.
#[test]
fn check_exits_zero_when_every_outcome_is_as_expected() {
    let dir = std::env::temp_dir().join(format!("loadbearing-installed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let installed = dir.join("loadbearing");
    std::fs::copy(env!("CARGO_BIN_EXE_loadbearing"), &installed).unwrap();
    // Another test's thread may fork while the copy's file is still open for writing; until
    // that child execs, running the copy fails with "text file busy" (ETXTBSY): try again.
    let run = |args: &[&str]| {
        let mut tries = 0;
        loop {
            match std::process::Command::new(&installed)
                .args(args)
                .current_dir("/")
                .output()
            {
                Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 100 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                result => break result.expect("the copied binary runs"),
            }
        }
    };
    let out = run(&["check"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let configs = loadbearing_expected::suite::built_in().unwrap();
    let summary = format!("{0} of {0} configs as expected", configs.len());
    assert!(text.contains(&summary), "{text}");
    // The guards' written reasons are compiled in too (expected/guards.toml).
    let out = run(&["mutate", "kafka-flow-828/sws_holds"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn check_json_carries_the_documented_fields() {
    let out = loadbearing(&[
        "check",
        "kafka-flow-828/epoch",
        "kafka-flow-828/cassandra_refines",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let results = results.as_array().unwrap();
    assert_eq!(results.len(), 2);
    for r in results {
        for field in [
            "config",
            "model",
            "constants",
            "expected",
            "actual",
            "ok",
            "properties_checked",
            "distinct_states",
            "depth",
            "seconds",
        ] {
            assert!(r.get(field).is_some(), "missing {field} in {r}");
        }
        assert_eq!(r["ok"], true);
    }
    let epoch = results
        .iter()
        .find(|r| r["config"] == "epoch_refines")
        .unwrap();
    assert_eq!(epoch["actual"], "violates RefSafeSpec");
    assert_eq!(epoch["constants"]["MaxOffset"], 3);
    let steps = epoch["counterexample"]["steps"].as_array().unwrap();
    let actions: Vec<&str> = steps
        .iter()
        .map(|s| s["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        [
            "Init",
            "Rebalance",
            "ZombieInit",
            "ZombieCommit(2)",
            "OwnerFold"
        ]
    );
    assert_eq!(epoch["counterexample"]["property"], "RefSafeSpec");
    // Values are typed: numbers, booleans, arrays and objects, the rest text.
    let init = &steps[0]["state"];
    assert_eq!(init["ownerPos"], 0, "{init}");
    assert_eq!(init["ownerLoaded"], true, "{init}");
    assert_eq!(init["topic"], "Absent", "{init}");
    assert!(init["op"].is_array(), "{init}");
    let before = &epoch["counterexample"]["abstract_step"]["before"];
    assert_eq!(before["durable"][0]["present"], true, "{before}");
}

#[test]
fn an_outcome_that_differs_exits_one() {
    let out = loadbearing(&["check", "cassandra_refines", "--set", "Guarded=false"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("violates RefSafeSpec") && text.contains("MISMATCH"),
        "{text}"
    );
}

#[test]
fn a_budget_hit_is_incomplete_and_exits_two() {
    let out = loadbearing(&[
        "check",
        "casfw_3w",
        "--max-states",
        "50",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let results: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(results[0]["actual"], "incomplete (states)");
    assert_eq!(results[0]["ok"], false);
    assert_eq!(results[0]["incomplete"]["limit"], "states");
}

#[test]
fn a_memory_budget_hit_is_incomplete_memory_and_exits_two() {
    // The liveness graph of Cassandra at MaxOffset=12 needs far more than 64 MiB; the process
    // itself holds less, so the budget is reached while exploring, never by an out-of-memory kill.
    let out = loadbearing(&[
        "check",
        "cassandra_refines",
        "--set",
        "MaxOffset=12",
        "--max-memory",
        "64M",
        "--format",
        "json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(results[0]["actual"], "incomplete (memory)");
    assert_eq!(results[0]["incomplete"]["limit"], "memory");
    assert_eq!(results[0]["incomplete"]["value"], 64 << 20);
}

#[test]
fn bad_input_is_a_clear_error_with_exit_two() {
    let cases: &[(&[&str], &str)] = &[
        (&["check", "no_such_config"], "no config matches"),
        (&["check", "gc_cap1", "--set", "Cap"], "not NAME=VALUE"),
        (
            &["check", "gc_cap1", "--set", "Bogus=1"],
            "has no constant `Bogus`",
        ),
        (
            &["check", "gc_cap1", "--set", "Cap=maybe"],
            "takes a number in 1..=64",
        ),
        (&["check", "gc_cap1", "--set", "Cap="], "is empty"),
        (
            &["check", "gc_cap1", "--set", "Gated=3"],
            "takes true or false",
        ),
        (&["check", "gc_cap1", "--set", "N=99"], "outside"),
        (&["bench", "zzz"], "no bench run matches [\"zzz\"]"),
        (&["bench", "--repeat", "0"], "0 is not in 1.."),
        (
            &["check", "casfw_3w", "-workers", "2"],
            "`-workers` is TLC's spelling: threads are `--threads N`",
        ),
        (&["check", "casfw_3w", "-deadlock"], "end_states = true"),
    ];
    for (args, message) in cases {
        let out = loadbearing(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(message), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn a_malformed_suite_file_names_the_config_and_the_problem() {
    let dir = std::env::temp_dir().join(format!("loadbearing-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = [
        ("model = \"Nope\"", "unknown model `Nope`"),
        (
            "model = \"ReplayFence\"\ncolour = 1",
            "unknown field `colour`",
        ),
        (
            "model = \"ReplayFence\"\nconstants = { Fixx = true }",
            "no constant `Fixx`",
        ),
        (
            "model = \"ReplayFence\"\nproperties = [\"Nope\"]",
            "unknown property `Nope`",
        ),
    ];
    for (i, (body, message)) in cases.iter().enumerate() {
        let mut text = format!("[[config]]\nname = \"bad\"\n{body}\n");
        if !body.contains("properties") {
            text.push_str("properties = [\"INV_NoSelfFence\"]\n");
        }
        text.push_str("expected = \"holds\"\n");
        let path = dir.join(format!("suite{i}.toml"));
        std::fs::write(&path, text).unwrap();
        let out = loadbearing(&["--suite", path.to_str().unwrap(), "check"]);
        assert_eq!(out.status.code(), Some(2), "{body}");
        assert!(stderr(&out).contains(message), "{body}: {}", stderr(&out));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn list_shows_every_config() {
    let out = loadbearing(&["list", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0));
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let configs = loadbearing_expected::suite::built_in().unwrap();
    assert_eq!(list.as_array().unwrap().len(), configs.len());
    assert!(
        configs.len() >= 25 + 22,
        "the tower's 25 and the SSI configs"
    );
    let suites: std::collections::BTreeSet<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["suite"].as_str().expect("every row names its suite"))
        .collect();
    assert_eq!(
        suites.into_iter().collect::<Vec<_>>(),
        ["actors", "kafka-flow-828", "kafka-flow-835", "ssi"]
    );
}

#[test]
fn a_filter_with_a_slash_selects_by_suite() {
    let out = loadbearing(&["check", "kafka-flow-835/", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    let in_suite = loadbearing_expected::suite::built_in()
        .unwrap()
        .iter()
        .filter(|c| c.suite == "kafka-flow-835")
        .count();
    assert_eq!(rows.len(), in_suite);
    assert!(rows.iter().all(|r| r["suite"] == "kafka-flow-835"));
    // A bare filter matches names only, so a suite's name does not select all its configs.
    let out = loadbearing(&["check", "kafka-flow", "--format", "json"]);
    assert_eq!(out.status.code(), Some(2), "no config is named so");
    // A config by its address.
    let out = loadbearing(&["trace", "kafka-flow-828/gc_ungated"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// A server backend left out of the build (its Cargo feature off) is bad input that names the
/// feature to build with, before anything runs.
#[test]
#[cfg(not(all(feature = "postgres", feature = "cassandra", feature = "kafka")))]
fn a_backend_left_out_of_the_build_names_its_feature() {
    let missing = [
        ("postgres", cfg!(feature = "postgres")),
        ("cassandra", cfg!(feature = "cassandra")),
        ("kafka", cfg!(feature = "kafka")),
    ];
    for (backend, _) in missing.iter().filter(|(_, compiled_in)| !compiled_in) {
        let out = loadbearing(&["conform", "--backend", backend, "--traces", "1"]);
        assert_eq!(out.status.code(), Some(2), "{backend}: {}", stderr(&out));
        let feature = format!("--features {backend}");
        assert!(
            stderr(&out).contains(&feature),
            "{backend}: {}",
            stderr(&out)
        );
        assert!(out.stdout.is_empty(), "{backend}: nothing ran");
    }
    if !cfg!(feature = "postgres") {
        let out = loadbearing(&["isolation", "--postgres", "--attempts", "1"]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("--features postgres"),
            "{}",
            stderr(&out)
        );
    }
}

/// `conform --trace` on a file with no event is bad input (exit 2) that says so: an empty trace
/// conforms to nothing. Beside it, the same file with one event is judged.
#[test]
fn an_empty_trace_file_is_bad_input_not_a_conforming_trace() {
    let empty = crate::common::trace_file("empty-trace", &[]);
    let (code, said) = crate::common::conform_trace(&empty, "CasFirstWriteAtomic", &[]);
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("the file holds no event"), "{said}");
    let one = crate::common::trace_file(
        "one-event-trace",
        &[r#"{"v":2,"vocabulary":"first_write","action":"Persist","writer":"w1","offset":3,"outcome":"applied"}"#.to_string()],
    );
    let (code, said) = crate::common::conform_trace(&one, "CasFirstWriteAtomic", &[]);
    assert_eq!(code, Some(0), "{said}");
}

/// A config whose model reads no implementation trace is named as a config, with its model,
/// not as "neither a config nor a model"; a name that is neither says that.
#[test]
fn a_config_whose_model_reads_no_trace_is_named_as_such() {
    let one = crate::common::trace_file(
        "config-no-traces",
        &[r#"{"v":2,"vocabulary":"first_write","action":"Persist","writer":"w1","offset":3,"outcome":"applied"}"#.to_string()],
    );
    let (code, said) = crate::common::conform_trace(&one, "sws_holds", &[]);
    assert_eq!(code, Some(2), "{said}");
    assert!(
        said.contains(
            "`sws_holds` is a config of SingleWriterStore, which reads no implementation traces"
        ),
        "{said}"
    );
    let (code, said) = crate::common::conform_trace(&one, "no_such_thing", &[]);
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("is neither a config"), "{said}");
}

/// A holding config of your own suite whose runs end (a state without successors) fails as a
/// deadlock with a mismatch that names the key to add, `end_states = true`, and the flag; with
/// `--deadlock` (TLC's `-deadlock`) the same config holds.
#[test]
fn a_deadlock_mismatch_names_the_key_and_deadlock_lets_runs_end() {
    let dir = std::env::temp_dir().join(format!("lb-deadlock-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let suite = dir.join("mine.toml");
    std::fs::write(
        &suite,
        r#"suite = "mine"

[[config]]
name = "my_actors"
model = "CassandraActors"
constants = { MaxOffset = 3 }
properties = ["RefCassandra", "TypeOK"]
expected = "holds"
"#,
    )
    .unwrap();
    let suite = suite.to_str().unwrap();
    let out = loadbearing(&["--suite", suite, "check", "my_actors"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}{}", stderr(&out));
    assert!(said.contains("got deadlock"), "{said}");
    assert!(said.contains("`end_states = true`"), "{said}");
    assert!(said.contains("--deadlock"), "{said}");
    let out = loadbearing(&["--suite", suite, "check", "my_actors", "--deadlock"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}{}", stderr(&out));
}

/// A config checked on its own ends with TLC's closing line, TLC's numbers for a faithful port
/// (casfw_3w: 2,538 generated, 1,431 distinct, depth 7 in TLC's states), whether searched by
/// orbits (which the line then says) or state by state; a suite pinning another
/// `generated` count than the check's is a mismatch that says both.
#[test]
fn tlc_s_closing_line_and_a_generated_count_that_differs_is_a_mismatch() {
    let out = loadbearing(&["check", "kafka-flow-835/casfw_3w"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}{}", stderr(&out));
    assert!(
        said.contains("2,538 states generated, 1,431 distinct states found, 0 states left on queue. The depth of the complete state graph search is 7. (Searched as 294 orbits.)"),
        "{said}"
    );
    // The same counts from every state searched, which the line then does not mention.
    let out = loadbearing(&["check", "kafka-flow-835/casfw_3w", "--every-state"]);
    let every = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{every}{}", stderr(&out));
    assert!(
        every.contains("2,538 states generated, 1,431 distinct states found, 0 states left on queue. The depth of the complete state graph search is 7.\n"),
        "{every}"
    );
    let both = loadbearing(&[
        "check",
        "casfw_3w",
        "--every-state",
        "--symmetry",
        "Writers",
    ]);
    assert_eq!(
        both.status.code(),
        Some(2),
        "--every-state with --symmetry is refused"
    );

    let dir = std::env::temp_dir().join(format!("lb-generated-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let suite = dir.join("mine.toml");
    let entry = |generated: u64| {
        format!(
            r#"suite = "mine"

[[config]]
name = "my_casfw"
model = "CasFirstWrite"
constants = {{ Writers = 3, MaxOffset = 2, Guarded = true, Reap = false }}
properties = ["INV_NoStaleOverwrite", "TypeOK"]
end_states = true
expected = "holds"
states = 1431
generated = {generated}
"#
        )
    };
    std::fs::write(&suite, entry(2538)).unwrap();
    let suite_arg = suite.to_str().unwrap();
    let out = loadbearing(&["--suite", suite_arg, "check", "my_casfw"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}{}", stderr(&out));
    std::fs::write(&suite, entry(2537)).unwrap();
    let out = loadbearing(&["--suite", suite_arg, "check", "my_casfw"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}{}", stderr(&out));
    assert!(
        said.contains("2538 states generated, the reference generates 2537"),
        "{said}"
    );
}

/// `completions SHELL` prints a script naming the subcommands, for each shell people use.
#[test]
fn completions_are_printed_for_bash_zsh_and_fish() {
    for shell in ["bash", "zsh", "fish"] {
        let out = loadbearing(&["completions", shell]);
        let script = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{shell}: {}", stderr(&out));
        for sub in ["check", "conform", "isolation", "mutate"] {
            assert!(script.contains(sub), "{shell} completes {sub}");
        }
    }
    let out = loadbearing(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2), "an unknown shell is bad input");
}

/// `--workers`, TLC's word for threads, is accepted where it can mean nothing else (`mutate`,
/// `report`): the run goes on to its filter, which here matches nothing.
#[test]
fn workers_is_the_threads_flag_where_unambiguous() {
    let out = loadbearing(&["mutate", "--workers", "2", "no_such_config"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no config matches"),
        "{}",
        stderr(&out)
    );
}
