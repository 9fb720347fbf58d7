//! How results read: the table, the counterexamples one step per line, and JSON.

use std::fmt::Write;

use loadbearing_refinement::{Counterexample, Outcome};
use serde_json::{json, Value};

use crate::run::Judged;
use crate::suite::Config;

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
        "{:<26} {:<18} {:<34} {:>6}  constants",
        "config", "model", "expected", "states"
    );
    for c in configs {
        let states = c
            .states
            .map(|s| s.to_string())
            .unwrap_or_else(|| "-".into());
        let fairness = if c.fair { "" } else { " (no fairness)" };
        let _ = writeln!(
            out,
            "{:<26} {:<18} {:<34} {:>6}  {}{fairness}",
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

pub fn table_header() -> String {
    format!(
        "{:<26} {:<18} {:<30} {:<30} {:>9} {:>5} {:>8}",
        "config", "model", "expected", "actual", "states", "depth", "time"
    )
}

pub fn table_row(j: &Judged) -> String {
    let mark = if j.ok() { "ok" } else { "MISMATCH" };
    let mut row = format!(
        "{:<26} {:<18} {:<30} {:<30} {:>9} {:>5} {:>7.3}s  {mark}",
        j.config.name,
        j.config.model,
        j.config.expected.to_string(),
        actual(&j.report.outcome),
        j.report.distinct_states,
        j.report.depth,
        j.report.seconds,
    );
    if let Some(why) = &j.mismatch {
        let _ = write!(row, "\n    {why}");
    }
    if let Some(cx) = &j.report.counterexample {
        row.push('\n');
        row.push_str(&counterexample_text(cx, "    "));
    }
    row
}

/// The outcome as the suite names it (`holds`, `violates P`, `deadlock`, `incomplete`).
pub fn actual(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Incomplete(_) => "incomplete".into(),
        other => other.to_string(),
    }
}

/// One step per line: the step number, who acted, the action, then only what changed.
pub fn counterexample_text(cx: &Counterexample, indent: &str) -> String {
    let mut out = String::new();
    let actor_width = cx
        .steps
        .iter()
        .filter_map(|s| s.actor.as_ref().map(|a| a.len()))
        .max()
        .unwrap_or(0)
        .max(4);
    let action_width = cx
        .steps
        .iter()
        .filter_map(|s| s.action.as_ref().map(|a| a.len()))
        .max()
        .unwrap_or(0)
        .max(4);
    for (i, step) in cx.steps.iter().enumerate() {
        let marker = match cx.loop_start {
            Some(start) if start == i => "loop> ",
            Some(_) => "      ",
            None => "",
        };
        let vars = if i == 0 { &step.state } else { &step.changed };
        let shown: Vec<String> = vars.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let shown = if i > 0 && shown.is_empty() {
            "(no change)".to_string()
        } else {
            shown.join("  ")
        };
        let _ = writeln!(
            out,
            "{indent}{marker}{i:>2}  {:<actor_width$}  {:<action_width$}  {shown}",
            step.actor.as_deref().unwrap_or("init"),
            step.action.as_deref().unwrap_or("Init"),
        );
    }
    if let Some(start) = cx.loop_start {
        let note = cx.fairness_note.as_deref().unwrap_or("");
        if start + 1 == cx.steps.len() {
            let _ = writeln!(
                out,
                "{indent}      then stutters in step {start} forever: {note}"
            );
        } else {
            let last = cx.steps.len() - 1;
            let _ = writeln!(
                out,
                "{indent}      step {last} is step {start} again: the loop repeats forever; {note}"
            );
        }
    }
    if let Some(abs) = &cx.abstract_step {
        let changed: Vec<String> = abs
            .after
            .iter()
            .filter(|(k, v)| !abs.before.iter().any(|(bk, bv)| bk == k && bv == v))
            .map(|(k, v)| {
                let before = abs
                    .before
                    .iter()
                    .find(|(bk, _)| bk == k)
                    .map(|(_, v)| v.as_str());
                match before {
                    Some(b) => format!("{k}: {b} -> {v}"),
                    None => format!("{k} = {v}"),
                }
            })
            .collect();
        let what = if abs.before.is_empty() {
            "the initial state maps to no abstract initial state"
        } else {
            "the last step maps to no abstract step and is no stutter"
        };
        let _ = writeln!(out, "{indent}      {what}: {}", changed.join(", "));
    }
    let _ = write!(
        out,
        "{indent}violated: {} ({} steps)",
        cx.property,
        cx.len()
    );
    out
}

pub fn judged_json(j: &Judged) -> Value {
    let r = &j.report;
    let mut object = json!({
        "config": j.config.name,
        "model": j.config.model,
        "constants": j.config.constants.values(),
        "expected": j.config.expected.to_string(),
        "actual": actual(&r.outcome),
        "ok": j.ok(),
        "properties_checked": r.properties_checked,
        "distinct_states": r.distinct_states,
        "reference_states": j.config.states,
        "depth": r.depth,
        "seconds": r.seconds,
    });
    if let Some(why) = &j.mismatch {
        object["mismatch"] = json!(why);
    }
    if let Outcome::Incomplete(why) = &r.outcome {
        object["incomplete"] = json!(why);
    }
    if let Some(cx) = &r.counterexample {
        object["counterexample"] = counterexample_json(cx);
    }
    object
}

pub fn counterexample_json(cx: &Counterexample) -> Value {
    let steps: Vec<Value> = cx
        .steps
        .iter()
        .map(|s| {
            let state: serde_json::Map<String, Value> =
                s.state.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
            let changed: serde_json::Map<String, Value> = s
                .changed
                .iter()
                .map(|(k, v)| (k.clone(), json!(v)))
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
    if let Some(start) = cx.loop_start {
        object["loop_start"] = json!(start);
        object["fairness"] = json!(cx.fairness_note);
    }
    if let Some(abs) = &cx.abstract_step {
        let side = |vars: &Vec<(String, String)>| -> Value {
            Value::Object(vars.iter().map(|(k, v)| (k.clone(), json!(v))).collect())
        };
        object["abstract_step"] = json!({ "before": side(&abs.before), "after": side(&abs.after) });
    }
    object
}
