//! `loadbearing check --workload FILE.toml`: every interleaving of a workload file's
//! transactions under the fix and each variant of the SSI model, the anomalies reachable in
//! each, named as the isolation literature names them (docs/workloads.md), judged against the
//! file's `[expect]` table.

use std::path::Path;

use loadbearing_conform::ssi_engine::model_of;
use loadbearing_specs::ssi::explore::{self, Summary};
use loadbearing_specs::ssi::file::{self, FileError, WorkloadFile};
use loadbearing_specs::ssi::BOUNDS;
use loadbearing_ssi_engine::engine::Variant;
use serde::Serialize;

/// (state, reads-from) pairs an exploration may visit before it reports itself incomplete.
pub const MAX_STATES: usize = 2_000_000;

/// The variant names `[expect]` and `--variant` accept.
pub const VARIANTS: &[&str] = Variant::NAMES;

/// The variants a run covers when none is named: the fix and plain snapshot isolation, then
/// every other variant.
pub fn default_variants() -> Vec<&'static str> {
    Variant::NAMES.to_vec()
}

/// One variant's result, with what the file expected of it.
#[derive(Clone, Debug, Serialize)]
pub struct VariantResult {
    pub variant: String,
    pub summary: Summary,
    /// The labels `[expect]` gives this variant (empty: serializable); `None` when it gives
    /// none.
    pub expected: Option<Vec<String>>,
    /// The reachable labels, sorted.
    pub reached: Vec<String>,
    /// `expected` is given and differs from `reached`, or the exploration was cut short.
    pub differs: bool,
    /// How long the exploration took.
    pub seconds: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub file: String,
    pub workload: String,
    pub results: Vec<VariantResult>,
}

impl Report {
    pub fn as_expected(&self) -> bool {
        self.results.iter().all(|r| !r.differs)
    }

    pub fn incomplete(&self) -> bool {
        self.results.iter().any(|r| !r.summary.complete)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error("{0}")]
    File(#[from] FileError),
    #[error("`{0}` is not a variant: {known}", known = Variant::NAMES.join(", "))]
    UnknownVariant(String),
    #[error("{file}: outside the model: {why}; run it on engines: loadbearing isolation --workload {file} --engine postgres …")]
    OutsideModel { file: String, why: String },
}

/// Every interleaving of `model`, within [`MAX_STATES`]: the summary and the anomaly labels
/// reached, sorted.
pub fn reached(model: &loadbearing_specs::ssi::Ssi) -> (Summary, Vec<String>) {
    let summary = explore::explore(model, MAX_STATES).summary();
    let mut labels: Vec<String> = summary.findings.iter().map(|f| f.label.clone()).collect();
    labels.sort();
    (summary, labels)
}

/// Loads `path` and checks it under `variants` (empty: those its `[expect]` names, else all).
pub fn check(path: &Path, variants: &[String]) -> Result<Report, WorkloadError> {
    let parsed = file::load_file(path, VARIANTS)?;
    check_file(path, &parsed, variants)
}

pub fn check_file(
    path: &Path,
    parsed: &WorkloadFile,
    variants: &[String],
) -> Result<Report, WorkloadError> {
    if let Some(why) = parsed.workload.outside_model(&BOUNDS) {
        return Err(WorkloadError::OutsideModel {
            file: path.display().to_string(),
            why,
        });
    }
    let chosen: Vec<String> = if !variants.is_empty() {
        variants.to_vec()
    } else if !parsed.expect.is_empty() {
        parsed.expect.iter().map(|e| e.variant.clone()).collect()
    } else {
        default_variants().iter().map(|v| v.to_string()).collect()
    };
    let mut results = Vec::new();
    for name in chosen {
        let variant =
            Variant::named(&name).ok_or_else(|| WorkloadError::UnknownVariant(name.clone()))?;
        let started = std::time::Instant::now();
        let (summary, reached) = reached(&model_of(variant, parsed.workload.clone()));
        let seconds = started.elapsed().as_secs_f64();
        let expected = parsed
            .expect
            .iter()
            .find(|e| e.variant == name)
            .map(|e| e.anomalies.clone());
        let differs = !summary.complete || expected.as_ref().is_some_and(|e| *e != reached);
        results.push(VariantResult {
            variant: name,
            summary,
            expected,
            reached,
            differs,
            seconds,
        });
    }
    Ok(Report {
        file: path.display().to_string(),
        workload: parsed.workload.name.clone(),
        results,
    })
}

/// `serializable`, or the labels joined.
pub fn outcome(labels: &[String]) -> String {
    if labels.is_empty() {
        "serializable".into()
    } else {
        labels.join(", ")
    }
}

/// The report for people: per variant, each reachable anomaly with its cycle and the
/// shortest interleaving reaching it.
pub fn render(report: &Report, parsed: &WorkloadFile) -> String {
    let mut out = format!("{} ({})\n{}", report.workload, report.file, parsed.workload);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    for r in &report.results {
        let s = &r.summary;
        out.push_str(&format!(
            "\n{}: {} final states of {} ({} model states){}\n",
            r.variant,
            s.finals,
            s.states,
            s.model_states,
            if s.complete {
                ""
            } else {
                " — INCOMPLETE: the state budget ran out"
            }
        ));
        if s.findings.is_empty() {
            out.push_str("  serializable: no anomaly is reachable\n");
        }
        for f in &s.findings {
            out.push_str(&format!(
                "  {}: {}   ({} of {} final states)\n    {}\n",
                f.label,
                f.example,
                f.finals,
                s.finals,
                f.schedule.join(" ; ")
            ));
        }
        if s.oracle.unexplained > 0 {
            out.push_str(&format!(
                "  warning: {} final states are not serializable by their values yet have no \
                 anomaly in the graph\n",
                s.oracle.unexplained
            ));
        }
        match &r.expected {
            Some(e) if r.differs => out.push_str(&format!(
                "  DIFFERS: expected {}, reached {}\n",
                outcome(e),
                outcome(&r.reached)
            )),
            Some(_) => out.push_str("  as expected\n"),
            None if !s.complete => out.push_str("  DIFFERS: incomplete\n"),
            None => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadbearing_specs::ssi::workload::named;

    fn labels(variant: &str, workload: &str) -> (Summary, Vec<String>) {
        reached(&model_of(
            Variant::named(variant).unwrap(),
            named(workload).unwrap(),
        ))
    }

    #[test]
    fn plain_si_reaches_write_skew_and_the_fix_reaches_nothing() {
        let (plain, l) = labels("plainsi", "write_skew");
        assert!(plain.complete);
        assert_eq!(l, ["G2-item (write skew)"]);
        assert_eq!(
            plain.findings[0].example,
            "T1 -rw(bob)-> T2 -rw(alice)-> T1"
        );
        assert_eq!(plain.oracle.unexplained, 0);
        let (fix, l) = labels("fix", "write_skew");
        assert!(fix.complete && l.is_empty(), "{fix:?}");
        assert_eq!(fix.oracle.not_serializable, 0);
    }

    #[test]
    fn plain_si_reaches_the_read_only_anomaly() {
        let (plain, l) = labels("plainsi", "read_only");
        assert!(
            l.contains(&"G2-item (read-only anomaly)".to_string()),
            "{plain:?}"
        );
        assert_eq!(plain.oracle.unexplained, 0);
    }

    #[test]
    fn a_budget_makes_the_exploration_incomplete() {
        let model = model_of(
            Variant::named("plainsi").unwrap(),
            named("read_only").unwrap(),
        );
        let cut = explore::explore(&model, 50);
        assert!(!cut.complete);
        assert_eq!(cut.states, 50);
    }
}
