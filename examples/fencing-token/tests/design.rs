//! The fencing-token design as its user runs it: the CLI on its own suite, the guard mutated,
//! the implementation's traces judged by `conform --trace`, and the planted mutant caught.

use std::path::{Path, PathBuf};
use std::process::Command;

const CLI: &str = env!("CARGO_BIN_EXE_fencing-token");
const STORE: &str = env!("CARGO_BIN_EXE_fencing-store");

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
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs the implementation with `args`, its trace in `dir/name.ndjson`.
fn store_run(dir: &Path, name: &str, args: &[&str]) -> String {
    let trace = dir.join(format!("{name}.ndjson")).display().to_string();
    let mut all = vec!["--out", &trace];
    all.extend_from_slice(args);
    let (code, said) = run(STORE, &all);
    assert_eq!(code, Some(0), "{said}");
    trace
}

fn conform(trace: &str) -> (Option<i32>, String) {
    run(
        CLI,
        &["conform", "--trace", trace, "--model", "FencingToken"],
    )
}

/// The holding config holds; each must-fail sibling fails for its named property, the stale
/// write as the last step.
#[test]
fn the_suite_is_as_declared() {
    let (code, said) = run(CLI, &["check"]);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("3 of 3 configs as expected"), "{said}");
    assert!(said.contains("violates INV_NoStaleWrite"), "{said}");
    assert!(said.contains("violates RefTokenOrder"), "{said}");

    let (code, said) = run(CLI, &["trace", "fencing_unchecked"]);
    assert_eq!(code, Some(0), "{said}");
    let stale = said
        .lines()
        .find(|l| l.contains("staleLanded=true"))
        .unwrap_or_else(|| panic!("no stale write in {said}"));
    assert!(stale.contains("Write(c1)"), "{said}");

    // The refinement names the abstract step that is missing: storage's token goes back.
    let (code, said) = run(CLI, &["trace", "fencing_unchecked_refines"]);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("maps to no step of TokenOrder"), "{said}");
}

/// A config that says the wrong outcome fails the run: the suite checks itself.
#[test]
fn a_wrong_expectation_fails_the_check() {
    let dir = scratch("wrong_expectation");
    let suite = dir.join("wrong.toml");
    std::fs::write(
        &suite,
        fencing_token::SUITE.replace(
            "expected = \"violates INV_NoStaleWrite\"",
            "expected = \"holds\"",
        ),
    )
    .unwrap();
    let (code, said) = run(CLI, &["--suite", &suite.display().to_string(), "check"]);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("MISMATCH"), "{said}");
}

/// `mutate` removes the token check from the holding config: both properties catch it.
#[test]
fn the_token_check_is_load_bearing() {
    let (code, said) = run(CLI, &["mutate"]);
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.contains("load-bearing, caught by INV_NoStaleWrite, RefTokenOrder; must-fail pair: fencing_unchecked"),
        "{said}"
    );
}

/// Runs of the implementation on SQLite conform to the model, the leases past the suite's
/// `MaxToken` included (the model is fitted to the trace), and so does the textbook schedule,
/// whose stale write storage refuses.
#[test]
fn the_implementation_conforms() {
    let dir = scratch("conforms");
    for seed in 1..=12 {
        let seed = seed.to_string();
        let trace = store_run(
            &dir,
            &format!("seed-{seed}"),
            &["--seed", &seed, "--steps", "40", "--leases", "5"],
        );
        let (code, said) = conform(&trace);
        assert_eq!(code, Some(0), "{said}");
        assert!(said.contains("40 events conform to FencingToken"), "{said}");
    }
    let trace = store_run(&dir, "gc-pause", &["--scenario", "gc-pause"]);
    let text = std::fs::read_to_string(&trace).unwrap();
    assert!(
        text.lines()
            .last()
            .unwrap()
            .contains(r#""client":1,"token":1,"accepted":false"#),
        "{text}"
    );
    let (code, said) = conform(&trace);
    assert_eq!(code, Some(0), "{said}");
}

/// The planted mutant (storage without its token check) is caught: its trace diverges at the
/// stale write, with both tokens named.
#[test]
fn the_planted_mutant_diverges() {
    let dir = scratch("mutant");
    let trace = store_run(
        &dir,
        "gc-pause-unchecked",
        &["--scenario", "gc-pause", "--no-token-check"],
    );
    let (code, said) = conform(&trace);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("diverged at event 5 (line 5)"), "{said}");
    assert!(
        said.contains("storage accepted token 1 after accepting 2; the model's refuses it"),
        "{said}"
    );
    // Random schedules catch it too, where one puts a stale write after a newer one.
    let caught = (1..=12).any(|seed| {
        let seed = seed.to_string();
        let trace = store_run(
            &dir,
            &format!("seed-{seed}"),
            &["--seed", &seed, "--steps", "40", "--no-token-check"],
        );
        conform(&trace).0 == Some(1)
    });
    assert!(caught, "no random schedule of the mutant diverged");
}

/// Bad input is exit 2, naming what is wrong: a line of another shape, an empty trace.
#[test]
fn a_malformed_trace_is_bad_input() {
    let dir = scratch("malformed");
    let trace = dir.join("bad.ndjson");
    std::fs::write(
        &trace,
        "{\"v\":2,\"vocabulary\":\"fencing_token\",\"action\":\"Write\",\"client\":1,\"token\":300,\"accepted\":true}\n",
    )
    .unwrap();
    let (code, said) = conform(&trace.display().to_string());
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("line 1"), "{said}");
    std::fs::write(&trace, "").unwrap();
    let (code, said) = conform(&trace.display().to_string());
    assert_eq!(code, Some(2), "{said}");
}

/// The built-in models stay beside the design's: loadbearing's own suite file still checks.
#[test]
fn the_built_in_models_stay_available() {
    let suite = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../expected/suites/kafka-flow-828.toml"
    );
    let (code, said) = run(CLI, &["--suite", suite, "check", "epoch_refines"]);
    assert_eq!(code, Some(0), "{said}");
}

/// The design's vocabulary held to loadbearing's oracle: walks of the model rendered as the
/// implementation would log them (with and without the token check), half with one wrong
/// answer, judged as `conform --trace` judges them and by the naive checker; every verdict the
/// same, as a history and as a sequence.
#[test]
fn the_judge_agrees_with_the_oracle_on_the_designs_histories() {
    use fencing_token::model::{FencingToken, LockAction, LockState};
    use fencing_token::trace::FencingEvent;

    fn render(
        _: &FencingToken,
        before: &LockState,
        action: &LockAction,
        after: &LockState,
    ) -> Option<FencingEvent> {
        let client = |c: usize| c as u8 + 1;
        Some(match *action {
            LockAction::Acquire(c) => FencingEvent::Acquire {
                client: client(c),
                token: after.held[c]?,
            },
            LockAction::Expire => FencingEvent::Expire,
            LockAction::Write(c) => FencingEvent::Write {
                client: client(c),
                token: before.held[c]?,
                accepted: after.held[c].is_some(),
            },
        })
    }
    for token_check in [true, false] {
        let model = FencingToken {
            token_check,
            max_token: 3,
        };
        let tally = loadbearing::oracle::compare::walks("FencingToken", &model, &render, 300, 1);
        assert!(
            tally.all_agree(),
            "token check {token_check}: {:?}",
            tally.disagreements.first()
        );
        assert!(tally.linearizable > 30 && tally.histories - tally.linearizable > 30);
    }
}
