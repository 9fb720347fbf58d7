//! Conformance for people: the table of a run's results (`conform`), a result's verdict word
//! (which the report's table shares), and the table of targets (`conform --list`).

use std::fmt::Write as _;

use loadbearing_conform::{targets, TargetResult};

/// A target's verdict: `ok`, `FAILED` (it did not show what it must), or `ERROR` (it could not
/// run, so it showed nothing).
pub fn verdict(r: &TargetResult) -> &'static str {
    match (&r.error, r.ok) {
        (Some(_), _) => "ERROR",
        (None, true) => "ok",
        (None, false) => "FAILED",
    }
}

/// A line per target, and under it what a reader needs first: why it could not run, its first
/// divergence, its replays and its first mismatches.
pub fn table(results: &[TargetResult]) -> String {
    let mut out = String::new();
    for r in results {
        let _ = writeln!(
            out,
            "{:<20} {:<20} {:<9} {} traces, {} events or steps: {} conforming, {} diverging (expected: {}) {} {:.2}s ({:.3}s validating)",
            r.target,
            r.model,
            r.backend,
            r.traces,
            r.events.max(r.steps),
            r.conforming,
            r.divergent_traces,
            r.expected.name(),
            verdict(r),
            r.seconds,
            r.validation_seconds
        );
        if let Some(error) = &r.error {
            let _ = writeln!(out, "    could not run: {error}");
        }
        if let Some(d) = r.divergences.first() {
            for line in d.text().lines() {
                let _ = writeln!(out, "    {line}");
            }
        } else if let Some(h) = r.histories.first() {
            for line in h.text.lines() {
                let _ = writeln!(out, "    {line}");
            }
        }
        for replay in &r.replays {
            let _ = writeln!(
                out,
                "    replayed {} ({}): broken: {}; guarded: {}",
                replay.config,
                replay.steps.join(", "),
                replay.broken,
                replay.guarded
            );
        }
        for m in r.mismatches.iter().take(5) {
            let _ = writeln!(out, "    mismatch: {m}");
        }
    }
    let _ = writeln!(out, "{}", summary(results));
    out
}

/// The run in one line: how many targets showed what they must, and which did not.
fn summary(results: &[TargetResult]) -> String {
    let missed: Vec<String> = results
        .iter()
        .filter(|r| !r.ok || r.error.is_some())
        .map(|r| format!("{} on {}", r.target, r.backend))
        .collect();
    let line = format!(
        "{} of {} targets as expected",
        results.len() - missed.len(),
        results.len()
    );
    if missed.is_empty() {
        line
    } else {
        format!("{line}; not: {}", missed.join(", "))
    }
}

/// `conform --list`: every target, what it must show and where it runs.
pub fn targets() -> String {
    let mut out = String::new();
    for t in targets::ALL {
        let backends: Vec<&str> = t.backends().iter().map(|b| b.name()).collect();
        let _ = writeln!(
            out,
            "{:<22} {:<9} on {}",
            t.name(),
            t.expect().name(),
            backends.join(", ")
        );
    }
    out
}
