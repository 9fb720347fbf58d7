//! The counterexample of every expected failure, exactly as `loadbearing trace CONFIG` prints
//! it, pinned as an insta snapshot in `expected/snapshots/SUITE/CONFIG.snap` (a folder per suite,
//! as two suites may share a config name). A changed model shows up
//! as a snapshot diff to review: `cargo insta review`, or accept them all with
//! `INSTA_UPDATE=always cargo test --test it snapshots::` and read `git diff expected/snapshots`.

use std::path::{Path, PathBuf};

use loadbearing::trace::{self, expects_failure};
use loadbearing_expected::suite::{self, Config};
use loadbearing_refinement::Options;

fn configs() -> Vec<Config> {
    suite::built_in().expect("the shipped suite loads")
}

fn snapshot_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("expected/snapshots")
}

#[test]
fn every_expected_failure_prints_its_snapshotted_counterexample() {
    let mut changed = Vec::new();
    for config in configs().iter().filter(|c| expects_failure(c)) {
        let mut settings = insta::Settings::clone_current();
        settings.set_snapshot_path(snapshot_dir().join(&config.suite));
        settings.set_prepend_module_to_snapshot(false);
        settings.set_omit_expression(true);
        settings.bind(|| {
            let traced = trace::trace(config, &Options::default()).unwrap();
            assert!(
                traced.judged.ok(),
                "{}: {:?}",
                config.name,
                traced.judged.mismatch
            );
            let text = trace::text(&traced);
            // Every changed snapshot is reported (and written as .snap.new to review), not
            // only the first.
            let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                insta::assert_snapshot!(config.name.as_str(), text);
            }));
            if checked.is_err() {
                changed.push(config.address());
            }
        });
    }
    assert!(
        changed.is_empty(),
        "changed counterexamples: {changed:?}\nreview them with `cargo insta review`, or accept \
         them all with `INSTA_UPDATE=always cargo test --test it snapshots::`, then regenerate the \
         docs with `cargo run -- docs`"
    );
}

/// A snapshot whose config was renamed, removed or now holds is stale, not silently kept.
#[test]
fn every_snapshot_belongs_to_an_expected_failure() {
    let failing: Vec<String> = configs()
        .into_iter()
        .filter(expects_failure)
        .map(|c| c.address())
        .collect();
    let mut stale = Vec::new();
    for suite in std::fs::read_dir(snapshot_dir()).unwrap() {
        let suite = suite.unwrap();
        let suite_name = suite.file_name().to_string_lossy().into_owned();
        if !suite.file_type().unwrap().is_dir() {
            stale.push(suite_name);
            continue;
        }
        for entry in std::fs::read_dir(suite.path()).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            match name.strip_suffix(".snap") {
                Some(config) if failing.contains(&format!("{suite_name}/{config}")) => {}
                Some(_) => stale.push(format!("{suite_name}/{name}")),
                // insta's pending review files
                None => {}
            }
        }
    }
    assert!(
        stale.is_empty(),
        "snapshots of no expected-failure config (delete them): {stale:?}"
    );
}

/// Every step of every snapshotted counterexample is shortest and readable: one line per step,
/// the acting party's column holds the action, and the violated property is named last.
#[test]
fn every_trace_is_a_swimlane_ending_in_the_violated_property() {
    for config in configs().iter().filter(|c| expects_failure(c)) {
        let traced = trace::trace(config, &Options::default()).unwrap();
        let cx = traced
            .counterexample()
            .expect("an expected failure has a counterexample");
        let text = trace::text(&traced);
        let last = text.trim_end().lines().last().unwrap();
        assert!(
            last.starts_with(&format!("violated: {}", cx.property)),
            "{}: {last}",
            config.name
        );
        for (i, step) in cx.steps.iter().enumerate().skip(1) {
            let action = step.action.as_deref().unwrap();
            let line = text
                .lines()
                .find(|l| {
                    let l = l.trim_start_matches("loop>").trim_start_matches("  |");
                    l.split_whitespace().next() == Some(&i.to_string())
                })
                .unwrap_or_else(|| panic!("{}: no line for step {i}", config.name));
            assert!(line.contains(action), "{}: {line}", config.name);
        }
    }
}
