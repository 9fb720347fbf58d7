//! `loadbearing trace` as a user runs it: every format, the whole-graph picture, and clear
//! errors.

use crate::common::loadbearing;
use std::process::{Command, Output};

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn has_dot() -> bool {
    Command::new("dot").arg("-V").output().is_ok()
}

#[test]
fn text_is_the_snapshot() {
    let out = loadbearing(&["trace", "kafka_unseeded"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let configs = loadbearing_expected::suite::built_in().unwrap();
    let config = loadbearing_expected::suite::find(&configs, "kafka_unseeded").unwrap();
    let snapshot = loadbearing::docs::snapshot(config).unwrap();
    assert_eq!(stdout(&out).trim_end(), snapshot);
    // The swimlane: one column per party, the action in its party's column.
    let text = stdout(&out);
    let header = text
        .lines()
        .find(|l| l.trim_start().starts_with('#'))
        .unwrap();
    assert!(
        header.contains("coordinator") && header.contains("zombie") && header.contains("owner")
    );
    let fold = text.lines().find(|l| l.contains("OwnerFold")).unwrap();
    assert_eq!(fold.find("OwnerFold"), header.find("owner"), "{text}");
    assert!(
        text.contains("step 3 maps to no step of SingleWriterStore"),
        "{text}"
    );
    assert!(text.contains("abstract before") && text.contains("abstract after"));
}

#[test]
fn json_carries_the_steps_and_the_explorer_path() {
    let out = loadbearing(&["trace", "replay_fix_off_live", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["actual"], "violates OwnerCompletes");
    assert_eq!(v["counterexample"]["loop_start"], 1);
    assert_eq!(v["explorer_path"], "#/steps/0/1");
    assert_eq!(v["counterexample"]["steps"][1]["actor"], "owner");
}

#[test]
fn dot_draws_the_path_with_the_offending_step_in_red() {
    let out = loadbearing(&["trace", "cassandra_unguarded", "--format", "dot"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let dot = stdout(&out);
    assert!(dot.starts_with("digraph {"), "{dot}");
    assert_eq!(dot.matches(" -> ").count(), 2, "{dot}");
    let bad = dot.lines().find(|l| l.contains("OwnerFold")).unwrap();
    assert!(
        bad.contains("#c0392b") && bad.contains("maps to no abstract step"),
        "{bad}"
    );
}

#[test]
fn dot_draws_a_lasso_back_into_its_loop() {
    let out = loadbearing(&["trace", "replay_nofair", "--format", "dot"]);
    let dot = stdout(&out);
    assert!(dot.contains("0 -> 0 [ label=\"stutters forever\""), "{dot}");
}

#[test]
fn the_whole_graph_of_a_small_config_highlights_the_counterexample() {
    let out = loadbearing(&["trace", "replay_fix_off", "--graph", "--format", "dot"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let dot = stdout(&out);
    assert!(dot.contains("replay_fix_off: 22 states"), "{dot}");
    let red_edges = dot
        .lines()
        .filter(|l| l.contains(" -> ") && l.contains("#c0392b"))
        .count();
    assert_eq!(red_edges, 1, "{dot}");
    // A config that holds draws its whole graph, without a counterexample.
    let out = loadbearing(&["trace", "replay_fix_on", "--graph", "--format", "dot"]);
    assert!(stdout(&out).contains("replay_fix_on: 16 states"));
}

#[test]
fn a_graph_too_large_for_a_picture_is_a_clear_error() {
    let out = loadbearing(&[
        "trace",
        "gc_ungated",
        "--graph",
        "--format",
        "dot",
        "--max-states",
        "50",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("more than 50 states"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_path_svg_is_a_sequence_diagram_drawn_without_graphviz() {
    // epoch_refines: Rebalance (coordinator), ZombieInit and ZombieCommit (zombie), OwnerFold
    // (owner): four steps on three lifelines, the abstract images under the last.
    let out = loadbearing(&["trace", "epoch_refines", "--format", "svg"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let svg = stdout(&out);
    assert_eq!(svg.matches(r#"<g class="step""#).count(), 4, "{svg}");
    assert_eq!(svg.matches(r#"<g class="lifeline""#).count(), 3, "{svg}");
    for actor in ["coordinator", "zombie", "owner"] {
        assert!(
            svg.contains(&format!(r#"data-actor="{actor}""#)),
            "{actor}: {svg}"
        );
    }
    assert!(svg.contains("✗ RefSafeSpec is violated"), "{svg}");
    assert!(svg.contains("abstract before"), "{svg}");
}

#[test]
fn a_liveness_counterexample_draws_its_loop_back() {
    let out = loadbearing(&["trace", "kafka-flow-835/kafka_genlag", "--format", "svg"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let svg = stdout(&out);
    assert_eq!(svg.matches(r#"class="loop""#).count(), 1, "{svg}");
}

#[test]
fn the_graph_svg_renders_with_graphviz_or_says_how_to_get_it() {
    let out = loadbearing(&["trace", "cassandra_unguarded", "--graph", "--format", "svg"]);
    if has_dot() {
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert!(stdout(&out).contains("<svg"));
    } else {
        assert_eq!(out.status.code(), Some(2));
        assert!(
            stderr(&out).contains("install graphviz"),
            "{}",
            stderr(&out)
        );
    }
}

#[test]
fn a_config_that_holds_has_nothing_to_trace() {
    let out = loadbearing(&["trace", "gc_cap1"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("no counterexample to trace"));
}

#[test]
fn set_overrides_a_constant_and_an_unexpected_outcome_exits_one() {
    let out = loadbearing(&["trace", "cassandra_refines", "--set", "Guarded=false"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stdout(&out).contains("expected: holds; actual: violates RefSafeSpec"));
}
