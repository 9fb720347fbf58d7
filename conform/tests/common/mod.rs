//! What the whole-run tests share: the stress kit (`loadbearing_impls::kit`), a run judged by
//! the model, and the planted mutants that misbehave only while a fault lasts.
#![allow(dead_code)]

pub mod mutants;

use std::time::{Duration, Instant};

use loadbearing_conform::reliability;
#[allow(unused_imports)]
pub use loadbearing_impls::kit::{reliability_row, say, stress, Backend};
use loadbearing_trace::{Budget, HistoryVerdict};
use stress::StressReport;

/// The search budget of one run's history: far above what a run of a few seconds needs, so a
/// budget hit is a finding (an `unknown` fails the test), not a flake.
pub const BUDGET: Budget = Budget {
    configurations: 50_000_000,
    time: Some(Duration::from_secs(120)),
    memory: None,
};

/// A run's whole history judged by the model, with what it cost (printed beside the run).
pub fn judge(what: &str, report: &StressReport) -> HistoryVerdict {
    judge_history(what, &report.history)
}

/// A history judged by the model, with what it cost (printed beside the run).
pub fn judge_history(what: &str, history: &stress::History) -> HistoryVerdict {
    let started = Instant::now();
    let verdict = reliability::judge(history, BUDGET);
    say(&format!(
        "judged[{what}]: {} operations over {} keys, {} configurations in {:.2?}: {}",
        verdict.operations,
        verdict.parts,
        verdict.configurations,
        started.elapsed(),
        outcome(&verdict)
    ));
    verdict
}

/// The verdict in a word, as the reliability table shows it.
pub fn outcome(verdict: &HistoryVerdict) -> &'static str {
    use loadbearing_trace::HistoryOutcome::*;
    match &verdict.outcome {
        Linearizable { .. } => "linearizable",
        NotLinearizable(_) => "not linearizable",
        Unknown { .. } => "unknown",
    }
}

/// A run that must be a behaviour of the model: its history linearizable, and its end state
/// clean by the kit's own check.
pub fn assert_judged_clean(what: &str, report: &StressReport) -> HistoryVerdict {
    let verdict = judge(what, report);
    assert_linearizable(what, report, &verdict);
    report.assert_clean();
    verdict
}

/// A planted mutant's run: the model must refuse its history.
pub fn assert_caught(what: &str, report: &StressReport) -> HistoryVerdict {
    let verdict = judge(what, report);
    assert!(
        matches!(
            verdict.outcome,
            loadbearing_trace::HistoryOutcome::NotLinearizable(_)
        ),
        "{what}: the mutant's history must not be linearizable: {}",
        outcome(&verdict)
    );
    verdict
}

/// A faulted run on a server, judged by the model: its row of docs/reliability.md printed with
/// the judged history beside the end-state check.
pub fn record(table: &str, backend: &str, report: &StressReport) -> HistoryVerdict {
    let verdict = judge(backend, report);
    reliability_row(table, &with_verdict(&report.row(backend), &verdict));
    verdict
}

/// A run that must hold: recorded, its history linearizable (the failed part shown otherwise).
pub fn assert_recorded_clean(table: &str, backend: &str, report: &StressReport) -> HistoryVerdict {
    let verdict = record(table, backend, report);
    assert_linearizable(backend, report, &verdict);
    verdict
}

/// The model accepts the run's history (the failed part shown otherwise).
pub fn assert_linearizable(what: &str, report: &StressReport, verdict: &HistoryVerdict) {
    assert!(verdict.conforming(), "{what}: {report}\n{}", verdict.text());
}

/// A planted mutant's run: recorded, and the model must refuse its history.
pub fn assert_recorded_caught(table: &str, backend: &str, report: &StressReport) -> HistoryVerdict {
    let verdict = record(table, backend, report);
    assert!(
        matches!(
            verdict.outcome,
            loadbearing_trace::HistoryOutcome::NotLinearizable(_)
        ),
        "{backend}: the mutant's history must not be linearizable: {}",
        outcome(&verdict)
    );
    verdict
}

/// A row of the kit's table with the judged history's column appended.
fn with_verdict(row: &str, verdict: &HistoryVerdict) -> String {
    format!(
        "{row} {} ({} operations) |",
        outcome(verdict),
        verdict.operations
    )
}
