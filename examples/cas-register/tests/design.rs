//! The register's design as its user runs it: the CLI on its own suite, the guard mutated, the
//! concurrent clients' histories judged by `conform --trace`, unknown outcomes among them, and
//! the planted mutant (a cas that does not compare) caught.

use std::path::{Path, PathBuf};
use std::process::Command;

const CLI: &str = env!("CARGO_BIN_EXE_cas-register");
const CLIENTS: &str = env!("CARGO_BIN_EXE_cas-clients");

/// Runs `exe` with `args`: its exit code and everything it said.
fn run(exe: &str, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(exe)
        .args(args)
        .output()
        .expect("the binary runs");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), said)
}

/// A fresh folder for one test's files.
fn scratch(test: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("cas-{test}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs the clients with `args`, their history in `dir/name.ndjson`.
fn clients_run(dir: &Path, name: &str, args: &[&str]) -> String {
    let history = dir.join(format!("{name}.ndjson")).display().to_string();
    let mut all = vec!["--out", &history];
    all.extend_from_slice(args);
    let (code, said) = run(CLIENTS, &all);
    assert_eq!(code, Some(0), "{said}");
    history
}

fn conform(history: &str) -> (Option<i32>, String) {
    run(
        CLI,
        &["conform", "--trace", history, "--model", "CasRegister"],
    )
}

#[test]
fn the_suite_is_as_declared() {
    let (code, said) = run(CLI, &["check"]);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("2 of 2 configs as expected"), "{said}");
    assert!(said.contains("violates INV_NoLostUpdate"), "{said}");
    // The shortest lost update: a cas from a stale read sets the register.
    let (code, said) = run(CLI, &["trace", "cas_no_compare"]);
    assert_eq!(code, Some(0), "{said}");
    let lost = said
        .lines()
        .find(|l| l.contains("lostUpdate=true"))
        .unwrap_or_else(|| panic!("no lost update in {said}"));
    assert!(lost.contains("Cas(c1, 0->1)"), "{said}");
}

#[test]
fn the_compare_is_load_bearing() {
    let (code, said) = run(CLI, &["mutate"]);
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.contains("INV_NoLostUpdate") && said.contains("catches the cas compares"),
        "{said}"
    );
    assert!(said.contains("1 guards: 1 load-bearing"), "{said}");
}

/// Concurrent clients on SQLite, a tenth of their writes and cases with their reply lost: each
/// history is linearizable, the operations of unknown outcome placed where they fit or never.
#[test]
fn the_clients_histories_conform() {
    let dir = scratch("conform");
    for seed in ["1", "2", "3", "4"] {
        let history = clients_run(&dir, &format!("seed{seed}"), &["--seed", seed]);
        let text = std::fs::read_to_string(&history).unwrap();
        assert!(
            text.lines().any(|l| l.contains(r#""ret":null"#)),
            "seed {seed} lost no reply: {text}"
        );
        let clients: std::collections::BTreeSet<_> = text
            .lines()
            .filter_map(|l| l.split(r#""client":"#).nth(1))
            .filter_map(|rest| rest.split([',', '}']).next())
            .collect();
        assert_eq!(clients.len(), 3, "three clients ran: {clients:?}");
        let (code, said) = conform(&history);
        assert_eq!(code, Some(0), "seed {seed}: {said}");
        assert!(said.contains("linearizable"), "{said}");
    }
}

/// A cas that only sets: the clients race (each thinks between its read and its cas), and a
/// stale cas that sets the register is found, with both values.
#[test]
fn the_planted_mutant_diverges() {
    let dir = scratch("mutant");
    let history = clients_run(
        &dir,
        "mutant",
        &["--no-compare", "--seed", "1", "--ops", "80"],
    );
    let (code, said) = conform(&history);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("not linearizable"), "{said}");
    assert!(
        said.contains("set the register while it held"),
        "the contradiction names the cas and the value: {said}"
    );
}

/// A history and the same events as a sequence get one verdict: one client alone (so call order
/// is the order things happened), its lines without their times read as a sequence.
#[test]
fn a_history_and_its_sequence_agree_on_a_run_without_lost_replies() {
    let dir = scratch("sequence");
    for (name, args) in [
        ("guarded", vec!["--lost", "0", "--clients", "1"]),
        (
            "mutant",
            vec!["--lost", "0", "--clients", "1", "--no-compare"],
        ),
    ] {
        let history = clients_run(&dir, name, &args);
        let text = std::fs::read_to_string(&history).unwrap();
        let sequence: String = text
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                let mut fields = v.as_object().unwrap().clone();
                fields.remove("call");
                fields.remove("ret");
                serde_json::Value::Object(fields).to_string() + "\n"
            })
            .collect();
        let seq_file = dir.join(format!("{name}-sequence.ndjson"));
        std::fs::write(&seq_file, sequence).unwrap();
        let (history_code, said) = conform(&history);
        let (sequence_code, seq_said) = conform(&seq_file.display().to_string());
        // One client alone: even the mutant's cas always finds the value it read.
        assert_eq!(history_code, Some(0), "{said}");
        assert_eq!(sequence_code, history_code, "{seq_said}");
    }
}

/// A value past what the register's knob can hold is no verdict: an error naming the bound.
#[test]
fn a_value_past_the_bound_is_bad_input_naming_it() {
    let dir = scratch("bound");
    let history = dir.join("big.ndjson");
    std::fs::write(
        &history,
        concat!(
            r#"{"v":2,"vocabulary":"cas_register","call":0,"ret":1,"action":"Write","client":1,"value":300,"ok":true}"#,
            "\n"
        ),
    )
    .unwrap();
    let (code, said) = conform(&history.display().to_string());
    assert_eq!(code, Some(2), "{said}");
    assert!(
        said.contains("value 300") && said.contains("MaxValue"),
        "{said}"
    );

    let fourth = dir.join("fourth.ndjson");
    std::fs::write(
        &fourth,
        concat!(
            r#"{"v":2,"vocabulary":"cas_register","call":0,"ret":1,"action":"Read","client":4,"value":0}"#,
            "\n"
        ),
    )
    .unwrap();
    let (code, said) = conform(&fourth.display().to_string());
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("client 4"), "{said}");
}

/// A misspelt field is refused, though the vocabulary does not deny unknown fields itself.
#[test]
fn a_misspelt_field_is_refused() {
    let dir = scratch("misspelt");
    let history = dir.join("misspelt.ndjson");
    std::fs::write(
        &history,
        concat!(
            r#"{"v":2,"vocabulary":"cas_register","call":0,"ret":1,"action":"Cas","client":1,"expected":0,"new":1,"swaped":true}"#,
            "\n"
        ),
    )
    .unwrap();
    let (code, said) = conform(&history.display().to_string());
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("unknown field `swaped`"), "{said}");
}
