//! A design of your own on the whole CLI (`loadbearing::cli::main_with`): the fencing-token
//! example (examples/fencing_token.rs), its own model, guard and suite, run as a user runs it.

use std::path::PathBuf;
use std::process::{Command, Output};

/// The example's binary, which `cargo test` builds beside the test binaries (`None`, skipped
/// outside CI, when a filtered build left it out).
fn fencing_token() -> Option<PathBuf> {
    let exe = std::env::current_exe().expect("the test binary's path");
    let debug = exe.parent()?.parent()?;
    let example = debug.join("examples").join("fencing_token");
    if example.exists() {
        return Some(example);
    }
    loadbearing_test_support::skip_or_fail(
        "the fencing-token example",
        &format!(
            "{} is not built (`cargo build --example fencing_token`)",
            example.display()
        ),
    );
    None
}

fn run(example: &PathBuf, args: &[&str]) -> (Option<i32>, String) {
    let out: Output = Command::new(example)
        .args(args)
        .output()
        .expect("run the example");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), said)
}

/// Its suite is the default: the holding config holds, the sibling without the token check
/// fails for its named property, with the stale write as the last step.
#[test]
fn your_own_design_is_checked_against_your_own_suite() {
    let Some(example) = fencing_token() else {
        return;
    };
    let (code, said) = run(&example, &["check"]);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("fencing_holds"), "{said}");
    assert!(said.contains("violates INV_NoStaleWrite"), "{said}");
    assert!(said.contains("2 of 2 configs as expected"), "{said}");
    let (code, said) = run(&example, &["trace", "fencing_unchecked"]);
    assert_eq!(code, Some(0), "{said}");
    let last = said
        .lines()
        .find(|l| l.contains("staleLanded=true"))
        .unwrap_or_else(|| panic!("no stale write in {said}"));
    assert!(last.contains("Write(c1)"), "{said}");
}

/// `mutate` flips the design's guard: the token check is load-bearing, caught by the
/// invariant, paired with the must-fail config.
#[test]
fn your_own_guard_is_mutated() {
    let Some(example) = fencing_token() else {
        return;
    };
    let (code, said) = run(&example, &["mutate"]);
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.contains(
            "load-bearing, caught by INV_NoStaleWrite; must-fail pair: fencing_unchecked"
        ),
        "{said}"
    );
}

/// The built-in models stay beside the design's: `--suite` with the project's own suite file
/// still checks them.
#[test]
fn the_built_in_models_stay_available() {
    let Some(example) = fencing_token() else {
        return;
    };
    let suite = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/expected/suites/kafka-flow-828.toml"
    );
    let (code, said) = run(&example, &["--suite", suite, "check", "epoch_refines"]);
    assert_eq!(code, Some(0), "{said}");
}
