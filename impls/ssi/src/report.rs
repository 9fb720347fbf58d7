//! The tier's report: a table per store, the stores side by side, and the aborts that were not
//! needed, with one example each.

use std::fmt::Write as _;

use serde_json::json;

use crate::engine::Variant;
use crate::tier::{scenarios, Tally};

fn aborts_text(t: &Tally) -> String {
    if t.aborts.is_empty() {
        return "-".into();
    }
    t.aborts
        .iter()
        .map(|(k, n)| format!("{k}={n}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn store_about(store: &str) -> String {
    match store {
        "postgres" => "PostgreSQL at SERIALIZABLE (SSI, Ports & Grittner)".into(),
        engine => Variant::describe(engine).into(),
    }
}

/// Our engine's histories are judged abort by abort (`analysis`); another store's are not.
fn is_engine(store: &str) -> bool {
    store != "postgres"
}

/// One table per store, in the order the tallies come.
pub fn per_store(tallies: &[Tally]) -> String {
    let mut out = String::new();
    let mut stores: Vec<&str> = Vec::new();
    for t in tallies {
        if !stores.contains(&t.store.as_str()) {
            stores.push(&t.store);
        }
    }
    for store in stores {
        let rows: Vec<&Tally> = tallies.iter().filter(|t| t.store == store).collect();
        let _ = writeln!(out, "{store} — {}", store_about(store));
        let header = [
            "scenario",
            "attempts",
            "commits",
            "aborts",
            "violations",
            "over-abort",
            "unneeded",
            "conform",
            "outcome",
        ];
        let body: Vec<Vec<String>> = rows
            .iter()
            .map(|t| {
                let engine = is_engine(&t.store);
                vec![
                    t.scenario.clone(),
                    t.attempts.to_string(),
                    t.commits.to_string(),
                    aborts_text(t),
                    t.violations.to_string(),
                    if engine {
                        t.over_aborts.to_string()
                    } else {
                        "-".into()
                    },
                    if engine {
                        t.unneeded.to_string()
                    } else {
                        "-".into()
                    },
                    t.conforming
                        .map_or("-".into(), |(ok, n)| format!("{ok}/{n}")),
                    t.typical(),
                ]
            })
            .collect();
        out += &grid(&header, &body);
        out.push('\n');
    }
    out
}

/// The stores side by side: per scenario, who aborts and with what (the most frequent outcome),
/// and `VIOLATED n/N` when histories had no serial order.
pub fn side_by_side(tallies: &[Tally]) -> String {
    let mut stores: Vec<&str> = Vec::new();
    for t in tallies {
        if !stores.contains(&t.store.as_str()) {
            stores.push(&t.store);
        }
    }
    let mut header = vec!["scenario"];
    header.extend(stores.iter().copied());
    // The tier's scenarios in its order, then any a store adds.
    let mut names: Vec<String> = scenarios().iter().map(|s| s.name.to_string()).collect();
    for t in tallies {
        if !names.contains(&t.scenario) {
            names.push(t.scenario.clone());
        }
    }
    let mut body = Vec::new();
    for name in names {
        let mut row = vec![name.clone()];
        let mut any = false;
        for store in &stores {
            let cell = match tallies
                .iter()
                .find(|t| t.scenario == name && t.store == *store)
            {
                Some(t) => {
                    any = true;
                    let mut c = t.typical();
                    if t.violations > 0 {
                        c += &format!(" VIOLATED {}/{}", t.violations, t.attempts);
                    }
                    c
                }
                None => "-".into(),
            };
            row.push(cell);
        }
        if any {
            body.push(row);
        }
    }
    grid(&header, &body)
}

/// Aborts that were not needed, per store: counts and one example each.
pub fn not_needed(tallies: &[Tally]) -> String {
    let mut out = String::new();
    for t in tallies {
        if t.over_aborts > 0 {
            let _ = writeln!(
                out,
                "{} {}: {} over-abort(s) (no dangerous structure through the victim), e.g.\n  {}",
                t.store,
                t.scenario,
                t.over_aborts,
                t.example_over_abort.as_deref().unwrap_or("")
            );
        }
        if t.unneeded > 0 {
            let _ = writeln!(
                out,
                "{} {}: {} unneeded abort(s) (a dangerous structure, no cycle), e.g.\n  {}",
                t.store,
                t.scenario,
                t.unneeded,
                t.example_unneeded.as_deref().unwrap_or("")
            );
        }
    }
    out
}

/// Where PostgreSQL commits every transaction the application did not give up and the fix
/// aborts one: the libdb design's false positives (scenario, the fix's typical outcome).
pub fn false_positives(tallies: &[Tally]) -> Vec<(String, String)> {
    let store_aborts = |t: &Tally| t.aborts.keys().any(|k| k != "AppAbort");
    scenarios()
        .iter()
        .filter_map(|s| {
            let pg = tallies
                .iter()
                .find(|t| t.store == "postgres" && t.scenario == s.name)?;
            let fix = tallies
                .iter()
                .find(|t| t.store == "fix" && t.scenario == s.name)?;
            (!store_aborts(pg) && store_aborts(fix)).then(|| (s.name.to_string(), fix.typical()))
        })
        .collect()
}

pub fn json(tallies: &[Tally], musts: &Result<(), Vec<String>>) -> serde_json::Value {
    json!({
        "tallies": tallies,
        "ok": musts.is_ok(),
        "failures": musts.as_ref().err().cloned().unwrap_or_default(),
        "false_positives": false_positives(tallies),
    })
}

/// Left-aligned columns separated by two spaces.
pub fn grid(header: &[&str], body: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in body {
        for (i, c) in row.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                s += c;
            } else {
                s += &format!("{c:<w$}  ", w = widths[i]);
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(header.iter().map(|h| h.to_string()).collect());
    for row in body {
        out += &line(row.clone());
    }
    out
}
