//! How results read: the table, the counterexamples one step per line, and JSON.

use std::fmt::Write;

use loadbearing_refinement::{Outcome, Shown, ShownAbstractStep, ShownPath};
use serde_json::{json, Value};

use loadbearing_expected::run::Judged;
use loadbearing_expected::suite::Config;

pub fn constants_text(config: &Config) -> String {
    config
        .constants
        .values()
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

pub fn list_table(configs: &[Config]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<15} {:<36} {:<18} {:<34} {:>6}  constants",
        "suite", "config", "model", "expected", "states"
    );
    for c in configs {
        let states = c
            .states
            .map(|s| s.to_string())
            .unwrap_or_else(|| "-".into());
        let fairness = if c.fair { "" } else { " (no fairness)" };
        let _ = writeln!(
            out,
            "{:<15} {:<36} {:<18} {:<34} {:>6}  {}{fairness}",
            c.suite,
            c.name,
            c.model,
            c.expected.to_string(),
            states,
            constants_text(c)
        );
    }
    out
}

pub fn list_json(configs: &[Config]) -> Value {
    Value::Array(
        configs
            .iter()
            .map(|c| {
                json!({
                    "suite": c.suite,
                    "config": c.name,
                    "model": c.model,
                    "constants": c.constants.values(),
                    "properties": c.properties,
                    "fair": c.fair,
                    "end_states": c.end_states,
                    "expected": c.expected.to_string(),
                    "states": c.states,
                })
            })
            .collect(),
    )
}

/// The line above a suite's rows in the `check` table.
pub fn suite_heading(suite: &str) -> String {
    format!("[{suite}]")
}

/// The `check` table's column widths, fitted to the configs it will show (rows are printed as
/// each config finishes, so the widths are fixed before the first).
#[derive(Clone, Copy, Debug)]
pub struct Widths {
    config: usize,
    model: usize,
    outcome: usize,
}

impl Widths {
    pub fn fitting(configs: &[Config]) -> Widths {
        let widest = |f: &dyn Fn(&Config) -> usize, least: usize| {
            configs.iter().map(f).max().unwrap_or(0).max(least)
        };
        Widths {
            config: widest(&|c| c.name.len(), 26),
            model: widest(&|c| c.model.len(), 18),
            // The actual outcome is as long as the expected one when they agree.
            outcome: widest(&|c| c.expected.to_string().len(), 30),
        }
    }
}

pub fn table_header(w: Widths) -> String {
    format!(
        "{:<cw$} {:<mw$} {:<ow$} {:<ow$} {:>9} {:>5} {:>8}",
        "config",
        "model",
        "expected",
        "actual",
        "states",
        "depth",
        "time",
        cw = w.config,
        mw = w.model,
        ow = w.outcome,
    )
}

/// TLC's closing words for a config, from our counts: `3,452,101 states generated, 1,239,666
/// distinct states found, 0 states left on queue. The depth of the complete state graph search
/// is 18.` (the same numbers TLC prints for a faithful port). A search that stopped early (a
/// violation, a budget) has no complete depth and leaves states unexplored: it says how deep it
/// went.
pub fn tlc_line(r: &dyn loadbearing_refinement::AnyReport) -> String {
    use loadbearing_expected::progress::grouped;
    let counts = format!(
        "{} states generated, {} distinct states found",
        grouped(r.generated()),
        grouped(r.distinct_states())
    );
    let line = match r.outcome() {
        // TLC counts the depth in states, the initial ones included: one more than our steps.
        Outcome::Holds => format!(
            "{counts}, 0 states left on queue. The depth of the complete state graph search is {}.",
            r.depth() + 1
        ),
        _ => format!("{counts}; the search stopped at depth {}.", r.depth()),
    };
    // After TLC's words, which a TLC user may look for as they are.
    match r.orbits() {
        Some(orbits) => format!("{line} (Searched as {} orbits.)", grouped(orbits)),
        None => line,
    }
}

pub fn table_row(j: &Judged, w: Widths) -> String {
    let mark = if j.ok() { "ok" } else { "MISMATCH" };
    let mut row = format!(
        "{:<cw$} {:<mw$} {:<ow$} {:<ow$} {:>9} {:>5} {:>7.3}s  {mark}",
        j.config.name,
        j.config.model,
        j.config.expected.to_string(),
        actual(j.report.outcome()),
        j.report.distinct_states(),
        j.report.depth(),
        j.report.seconds(),
        cw = w.config,
        mw = w.model,
        ow = w.outcome,
    );
    if let Some(why) = &j.mismatch {
        let _ = write!(row, "\n    {why}");
    }
    if let Some(cx) = j.report.counterexample() {
        row.push('\n');
        row.push_str(&swimlane(cx, "    "));
    }
    row
}

/// The outcome as the suite names it (`holds`, `violates P`, `deadlock`, `incomplete (memory)`).
pub fn actual(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Incomplete(spent) => format!("incomplete ({})", spent.limit.kind()),
        other => other.to_string(),
    }
}

/// The swimlane of a counterexample.
///
/// One column per acting party, in order of first appearance; the initial state shows every
/// variable, each later step only those it changed. A refinement failure ends with the abstract
/// state before and after the step that maps to no abstract step; a liveness failure marks the
/// loop (`loop>` where it starts, `|` on the steps that repeat).
pub fn swimlane(cx: &ShownPath, indent: &str) -> String {
    let mut out = String::new();
    let mut lanes: Vec<(&str, usize)> = Vec::new();
    for step in cx.steps.iter().skip(1) {
        let actor = step.actor.as_deref().unwrap_or("system");
        let action = step.action.as_deref().unwrap_or("");
        match lanes.iter_mut().find(|(name, _)| *name == actor) {
            Some((_, width)) => *width = (*width).max(action.len()),
            None => lanes.push((actor, actor.len().max(action.len()))),
        }
    }
    if lanes.is_empty() {
        lanes.push(("system", 6));
    }
    let marks = cx.loop_start.is_some();
    let mark_width = if marks { 6 } else { 0 };
    let number_width = cx.steps.len().saturating_sub(1).to_string().len().max(2);
    let row = |out: &mut String, mark: &str, number: &str, cells: &[String], rest: &str| {
        let mut line = format!("{indent}{mark:<mark_width$}{number:>number_width$}");
        for (cell, (_, width)) in cells.iter().zip(&lanes) {
            line.push_str(&format!("  {cell:<width$}"));
        }
        line.push_str("  ");
        line.push_str(rest);
        let _ = writeln!(out, "{}", line.trim_end());
    };
    let header: Vec<String> = lanes.iter().map(|(name, _)| name.to_string()).collect();
    row(&mut out, "", "#", &header, "changed");
    for (i, step) in cx.steps.iter().enumerate() {
        let mark = match cx.loop_start {
            Some(start) if start == i => "loop>",
            Some(start) if i > start => "  |",
            _ => "",
        };
        let mut cells = vec![String::new(); lanes.len()];
        let vars = if i == 0 {
            cells[0] = "Init".into();
            &step.state
        } else {
            let actor = step.actor.as_deref().unwrap_or("system");
            let lane = lanes.iter().position(|(n, _)| *n == actor).unwrap_or(0);
            cells[lane] = step.action.clone().unwrap_or_default();
            &step.changed
        };
        let shown: Vec<String> = vars.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let shown = if i > 0 && shown.is_empty() {
            "(no change: a stutter)".to_string()
        } else {
            shown.join("  ")
        };
        row(&mut out, mark, &i.to_string(), &cells, &shown);
    }
    let pad = " ".repeat(mark_width + number_width + 2);
    if let Some(start) = cx.loop_start {
        let note = cx.fairness_note.as_deref().unwrap_or("");
        if start + 1 == cx.steps.len() {
            let _ = writeln!(
                out,
                "{indent}{pad}then stutters in step {start} forever: {note}"
            );
        } else {
            let last = cx.steps.len() - 1;
            let _ = writeln!(
                out,
                "{indent}{pad}step {last} is step {start} again: the loop repeats forever; {note}"
            );
        }
    }
    if let Some(abs) = &cx.abstract_step {
        let target = &abs.model;
        let vars = |side: &Vec<(String, Shown)>| -> String {
            side.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join("  ")
        };
        if abs.before.is_empty() {
            let _ = writeln!(
                out,
                "{indent}{pad}the initial state maps to no initial state of {target}:"
            );
            let _ = writeln!(out, "{indent}{pad}  abstract  {}", vars(&abs.after));
        } else {
            let last = cx.steps.len() - 1;
            let changed: Vec<&str> = abs
                .after
                .iter()
                .filter(|(k, v)| !abs.before.iter().any(|(bk, bv)| bk == k && bv == v))
                .map(|(k, _)| k.as_str())
                .collect();
            let _ = writeln!(
                out,
                "{indent}{pad}step {last} maps to no step of {target} and is no stutter ({} changed):",
                changed.join(", ")
            );
            let _ = writeln!(out, "{indent}{pad}  abstract before  {}", vars(&abs.before));
            let _ = writeln!(out, "{indent}{pad}  abstract after   {}", vars(&abs.after));
        }
    }
    let steps = match cx.len() {
        1 => "1 step".to_string(),
        n => format!("{n} steps"),
    };
    let _ = write!(out, "{indent}violated: {} ({steps})", cx.property);
    if let Some(why) = &cx.explanation {
        let _ = write!(out, ": {why}");
    }
    out
}

pub fn judged_json(j: &Judged) -> Value {
    let r = j.report.as_ref();
    let mut object = json!({
        "suite": j.config.suite,
        "config": j.config.name,
        "model": j.config.model,
        "constants": j.config.constants.values(),
        "expected": j.config.expected.to_string(),
        "actual": actual(r.outcome()),
        "ok": j.ok(),
        "properties_checked": r.properties_checked(),
        "distinct_states": r.distinct_states(),
        "generated_states": r.generated(),
        "reference_states": j.config.states,
        "depth": r.depth(),
        "seconds": r.seconds(),
    });
    if let Some(orbits) = r.orbits() {
        object["orbits_searched"] = json!(orbits);
    }
    if let Some(why) = &j.mismatch {
        object["mismatch"] = json!(why.to_string());
    }
    if let Outcome::Incomplete(why) = r.outcome() {
        object["incomplete"] = json!(why);
    }
    if let Some(cx) = r.counterexample() {
        object["counterexample"] = counterexample_json(cx);
    }
    object
}

pub fn counterexample_json(cx: &ShownPath) -> Value {
    let steps: Vec<Value> = cx
        .steps
        .iter()
        .map(|s| {
            // Values typed for machines (numbers, booleans, objects, arrays); the table and
            // the swimlane print the text.
            let state: serde_json::Map<String, Value> = s
                .state
                .iter()
                .map(|(k, v)| (k.clone(), v.typed().clone()))
                .collect();
            let changed: serde_json::Map<String, Value> = s
                .changed
                .iter()
                .map(|(k, v)| (k.clone(), v.typed().clone()))
                .collect();
            json!({
                "action": s.action.as_deref().unwrap_or("Init"),
                "actor": s.actor,
                "state": state,
                "changed": changed,
            })
        })
        .collect();
    let mut object = json!({ "property": cx.property, "steps": steps });
    if let Some(why) = &cx.explanation {
        object["explanation"] = json!(why);
    }
    if let Some(start) = cx.loop_start {
        object["loop_start"] = json!(start);
        object["fairness"] = json!(cx.fairness_note);
    }
    if let Some(abs) = &cx.abstract_step {
        object["abstract_step"] = abstract_step_json(abs);
    }
    object
}

/// The abstract images of a step that breaks a refinement, each by variable.
fn abstract_step_json(abs: &ShownAbstractStep) -> Value {
    let side = |vars: &Vec<(String, Shown)>| -> Value {
        Value::Object(
            vars.iter()
                .map(|(k, v)| (k.clone(), v.typed().clone()))
                .collect(),
        )
    };
    json!({ "before": side(&abs.before), "after": side(&abs.after) })
}
