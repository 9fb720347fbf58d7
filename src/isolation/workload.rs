//! `loadbearing isolation --workload FILE.toml`: a workload file's transactions run on real
//! stores — raced on the engine's variants; on PostgreSQL at SERIALIZABLE, REPEATABLE READ and
//! READ COMMITTED, every interleaving driven step by step — and each store's histories classified as
//! `check --workload` classifies the model's (docs/workloads.md).
//!
//! A store may show only what its model reaches: an engine variant the anomalies the model of
//! that variant reaches for the file (explored here, every interleaving), PostgreSQL at
//! SERIALIZABLE none, at REPEATABLE READ what snapshot isolation reaches (the `plainsi`
//! model), at READ COMMITTED nothing dirty (no G0 or G1). A race samples timings, so a reachable anomaly it does not show is no failure; one
//! it shows that the model cannot reach is, as is a history the store's records cannot
//! establish or a trace outside the model. Where every interleaving was driven, a store must
//! also show each anomaly its model reaches: snapshot isolation that never skews is not the
//! snapshot isolation it claims.

use std::path::Path;

use loadbearing_conform::ssi_engine::ModelJudge;
use loadbearing_specs::ssi::file::{self, Expect, WorkloadFile};
use loadbearing_specs::ssi::schedule::{self as pinned_schedule, Schedule};
use loadbearing_specs::ssi::BOUNDS;
use loadbearing_ssi_engine::interleave::{
    self, Drivable, DrivenRun, EveryInterleaving, Interleavings,
};
use loadbearing_ssi_engine::race::{race_engine, Race};
use serde::Serialize;

use super::engines::{for_each_column, Claim, Column, Engine, OnColumn};
use super::IsolationError;
use crate::workload::{check_file, VariantResult, VARIANTS};

/// One store's race, with what it may show.
#[derive(Clone, Debug, Serialize)]
pub struct StoreResult {
    pub race: Race,
    /// What the store's design reaches (the model's labels; empty for a serializable store).
    pub allowed: Vec<String>,
    /// Where the allowance comes from: `the fix model` / `SERIALIZABLE`.
    pub judged_by: String,
    pub problems: Vec<String>,
    /// For a store driven through the interleavings (PostgreSQL): which, and how many steps
    /// the store blocked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driven: Option<Driven>,
    /// What the file's `[expect]` says this engine shows (`None`: it says nothing of it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<Vec<String>>,
    /// The pinned schedule's run, with its steps' expected values checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pinned: Option<PinnedRun>,
    /// Anomalies the file's `[expect]` declares this engine commits although its claim forbids
    /// them: findings known and written down, held to as expected outcomes, not failures.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
}

/// The one interleaving a file's `[schedule]` (or `--schedule`) pins, as it ran.
#[derive(Clone, Debug, Serialize)]
pub struct PinnedRun {
    pub run: DrivenRun,
    /// Each `[schedule.expect]` value that applies to this store.
    pub checks: Vec<StepCheck>,
}

/// One expected step value against what the step showed.
#[derive(Clone, Debug, Serialize)]
pub struct StepCheck {
    /// `T1.2 = 11`.
    pub expected: String,
    /// The line of the file that says it.
    pub line: usize,
    /// `read x = 11`, `not run`.
    pub showed: String,
    pub ok: bool,
}

/// How a store was driven through a workload's interleavings.
#[derive(Clone, Debug, Serialize)]
pub struct Driven {
    pub interleavings: Interleavings,
    /// Steps the store blocked, over all interleavings (each waited for a bounded time, then
    /// the next step went ahead).
    pub blocked: usize,
    /// Each interleaving as it ran: its schedule, every step's result, its anomalies.
    pub runs: Vec<DrivenRun>,
}

#[derive(Clone, Debug, Serialize)]
pub struct WorkloadRace {
    pub file: String,
    pub workload: String,
    /// Why the SSI model cannot run the workload, if it cannot (then only engines run it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outside_model: Option<String>,
    /// The anomaly the file tests for (its `tests`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tests: Option<String>,
    pub attempts: usize,
    pub stores: Vec<StoreResult>,
}

impl WorkloadRace {
    pub fn ok(&self) -> bool {
        self.stores.iter().all(|s| s.problems.is_empty())
    }
}

/// What the model of each variant reaches for the file; an incomplete exploration allows
/// nothing and says so.
fn model_results(
    path: &Path,
    parsed: &WorkloadFile,
    variants: &[&str],
) -> Result<Vec<VariantResult>, IsolationError> {
    // No variant means no engine column (`--variant none`), not the file's `[expect]` ones;
    // a workload outside the model has no model to explore.
    if variants.is_empty() || parsed.workload.outside_model(&BOUNDS).is_some() {
        return Ok(Vec::new());
    }
    let names: Vec<String> = variants.iter().map(|v| v.to_string()).collect();
    Ok(check_file(path, parsed, &names)
        .map_err(|e| IsolationError::Workload(e.to_string()))?
        .results)
}

fn judged(race: Race, allowed: Vec<String>, judged_by: String, complete: bool) -> StoreResult {
    let mut problems = race.problems(&allowed);
    if !complete {
        problems.insert(
            0,
            format!(
                "{}: {judged_by} was not explored to the end (state budget): nothing to hold the race to",
                race.store
            ),
        );
    }
    StoreResult {
        race,
        allowed,
        judged_by,
        problems,
        driven: None,
        expected: None,
        pinned: None,
        findings: Vec::new(),
    }
}

/// A store driven through the interleavings: judged as a race, and, where every interleaving
/// ran and `must_show`, every anomaly its model reaches must have shown.
fn judged_every(
    run: EveryInterleaving,
    allowed: Vec<String>,
    judged_by: String,
    complete: bool,
    must_show: bool,
) -> StoreResult {
    let mut result = judged(run.race, allowed, judged_by, complete);
    if must_show && complete && run.interleavings.every() {
        for label in &result.allowed {
            if !result.race.anomalies.contains_key(label) {
                result.problems.push(format!(
                    "{}: {} reaches {label} for this workload, yet none of its {} interleavings showed it",
                    result.race.store, result.judged_by, run.interleavings.total
                ));
            }
        }
    }
    result.driven = Some(Driven {
        interleavings: run.interleavings,
        blocked: run.blocked,
        runs: run.runs,
    });
    result
}

/// Holds a store to what the file's `[expect]` says it shows (in its interleavings and its
/// pinned schedule): over every interleaving exactly that; over a sample or one pinned
/// interleaving alone (`--schedule`), nothing else (a sample that misses an anomaly proves
/// nothing, as for a claim).
fn held_to_expectation(result: &mut StoreResult, expected: &Expect, pinned: Option<&DrivenRun>) {
    let mut shown = result.race.labels();
    // What the pinned schedule showed counts too.
    shown.extend(pinned.into_iter().flat_map(|r| r.anomalies.iter().cloned()));
    shown.sort();
    shown.dedup();
    let every = result
        .driven
        .as_ref()
        .is_some_and(|d| d.interleavings.every());
    let how = result
        .driven
        .as_ref()
        .map_or("its race".to_string(), |d| d.interleavings.text());
    let store = &result.race.store;
    for label in shown.iter().filter(|l| !expected.anomalies.contains(l)) {
        result.problems.push(format!(
            "{store}: {label} shown ({how}), which [expect] at line {} does not list",
            expected.line
        ));
    }
    if every {
        for label in expected.anomalies.iter().filter(|l| !shown.contains(l)) {
            result.problems.push(format!(
                "{store}: [expect] at line {} lists {label}, which no interleaving showed ({how})",
                expected.line
            ));
        }
    }
    result.expected = Some(expected.anomalies.clone());
}

/// The pinned run's step values against the file's `[schedule.expect]` entries for this store
/// (`all`, or its key); each mismatch a problem.
fn checked_pinned(
    result: &mut StoreResult,
    key: &str,
    run: DrivenRun,
    parsed: &WorkloadFile,
    file_schedule: bool,
) {
    let mut checks = Vec::new();
    if file_schedule {
        let entries = parsed.schedule.iter().flat_map(|p| &p.expect);
        for e in entries.filter(|e| e.store.as_deref().is_none_or(|s| s == key)) {
            let v = &e.value;
            let ok = run.value(v.txn, v.stmt).as_ref() == Some(&v.value);
            let showed = run.shown(v.txn, v.stmt);
            if !ok {
                result.problems.push(format!(
                    "{}: line {}: expected {v}, showed {showed} (schedule: {})",
                    result.race.store, e.line, run.schedule
                ));
            }
            checks.push(StepCheck {
                expected: v.to_string(),
                line: e.line,
                showed,
                ok,
            });
        }
    }
    result.pinned = Some(PinnedRun { run, checks });
}

/// How far the engines are driven through a workload's interleavings: at most `bound`, drawn
/// with `seed` beyond it; or only `schedule` (`--schedule`), pinned by name.
#[derive(Clone, Debug)]
pub struct Interleave {
    pub bound: usize,
    pub seed: u64,
    pub schedule: Option<String>,
}

/// Races the file's workload on each engine variant, drives it through its interleavings on
/// each engine of `engines` (PostgreSQL on the server at `postgres`), and judges every store.
pub fn race_file(
    path: &Path,
    variants: &[&str],
    attempts: usize,
    jitter_us: u64,
    engines: &[Engine],
    postgres: Option<&str>,
    interleave: &Interleave,
) -> Result<WorkloadRace, IsolationError> {
    let parsed =
        file::load_file(path, VARIANTS).map_err(|e| IsolationError::Workload(e.to_string()))?;
    let w = &parsed.workload;
    // Only engines run a workload outside the model: with none named there is nothing to run.
    if let Some(why) = w.outside_model(&BOUNDS) {
        if engines.is_empty() && postgres.is_none() {
            return Err(IsolationError::Workload(format!(
                "{}: outside the model ({why}), so the SSI engine's variants cannot run it: name engines (--engine postgres, --engine sqlite, …)",
                path.display()
            )));
        }
    }
    // `--schedule` replaces the interleavings; the file's `[schedule]` is driven beside them.
    let pinned = match &interleave.schedule {
        Some(text) => Some((
            pinned_schedule::parse(text, w)
                .map_err(|e| IsolationError::Workload(format!("--schedule: {e}")))?,
            true,
        )),
        None => parsed
            .schedule
            .as_ref()
            .map(|p| (p.schedule.clone(), false)),
    };
    let mut stores = Vec::new();
    for model in model_results(path, &parsed, variants)? {
        let race = race_engine(w, &model.variant, attempts, jitter_us, Some(&ModelJudge));
        let by = format!("the {} model", model.variant);
        stores.push(judged(race, model.reached, by, model.summary.complete));
    }
    let mut every = EveryOn {
        path,
        parsed: &parsed,
        interleave: interleave.clone(),
        pinned,
        snapshot_isolation: None,
    };
    stores.extend(for_each_column(engines, postgres, &mut every)?);
    Ok(WorkloadRace {
        file: path.display().to_string(),
        workload: w.name.clone(),
        outside_model: w.outside_model(&BOUNDS),
        tests: parsed.tests.clone(),
        attempts,
        stores,
    })
}

/// The workload's interleavings driven on a column's engine, judged by its claim: a
/// serializable engine may show nothing; snapshot isolation what the `plainsi` model reaches
/// for the file, and, where every interleaving ran, all of it.
struct EveryOn<'a> {
    path: &'a Path,
    parsed: &'a WorkloadFile,
    interleave: Interleave,
    /// The schedule pinned, and whether it is the only one driven (`--schedule`).
    pinned: Option<(Schedule, bool)>,
    /// What the `plainsi` model reaches for the file, and whether its exploration completed:
    /// explored once, for every snapshot-isolation column.
    snapshot_isolation: Option<(Vec<String>, bool)>,
}

impl EveryOn<'_> {
    fn snapshot_isolation(&mut self) -> Result<(Vec<String>, bool), IsolationError> {
        if self.snapshot_isolation.is_none() {
            let si = model_results(self.path, self.parsed, &["plainsi"])?
                .pop()
                .expect("one variant asked, one result");
            self.snapshot_isolation = Some((si.reached, si.summary.complete));
        }
        Ok(self.snapshot_isolation.clone().expect("explored above"))
    }
}

impl OnColumn for EveryOn<'_> {
    type Out = StoreResult;

    fn run<D: Drivable>(
        &mut self,
        column: Column,
        tier: &mut D,
    ) -> Result<StoreResult, IsolationError>
    where
        IsolationError: From<D::Error>,
    {
        let w = &self.parsed.workload;
        // The pinned schedule first: alone (`--schedule`) it is the whole run; beside the
        // interleavings (a file's `[schedule]`), its race is judged as theirs is.
        let pinned = match &self.pinned {
            Some((schedule, _)) => Some(interleave::pinned(tier, column.store, w, schedule)?),
            None => None,
        };
        let alone = self.pinned.as_ref().is_some_and(|(_, alone)| *alone);
        let pinned_run = pinned.as_ref().and_then(|p| p.runs.first().cloned());
        let (run, pinned_race) = match pinned {
            Some(only) if alone => (only, None),
            pinned => (
                interleave::every(
                    tier,
                    column.store,
                    w,
                    self.interleave.bound,
                    self.interleave.seed,
                )?,
                pinned.map(|p| p.race),
            ),
        };
        let by = column.claimed.to_string();
        let expected = self.parsed.engines.iter().find(|e| e.variant == column.key);
        // What the claim allows, and whether every anomaly it allows must show.
        let (allowed, by, complete, must_show) = match column.claim {
            Claim::Serializable => (Vec::new(), by, true, false),
            Claim::SnapshotIsolation if w.outside_model(&BOUNDS).is_some() => {
                // No model to ask: Adya's definition of snapshot isolation is the claim.
                let by = format!("{by}; outside the model, Adya's PL-SI (no G-single)");
                (Claim::snapshot_isolation_allows(), by, true, false)
            }
            Claim::SnapshotIsolation => {
                // Snapshot isolation is the model's `plainsi` variant.
                let (reached, complete) = self.snapshot_isolation()?;
                (reached, by, complete, true)
            }
            Claim::ReadCommitted => (Claim::read_committed_allows(), by, true, false),
        };
        // An anomaly the file declares beyond the claim is a finding written down: expected,
        // and reported as a finding, not a failure.
        let findings: Vec<String> = expected
            .iter()
            .flat_map(|e| &e.anomalies)
            .filter(|l| !allowed.contains(l))
            .cloned()
            .collect();
        let allowed_or_declared: Vec<String> = allowed.iter().chain(&findings).cloned().collect();
        let mut result = judged_every(run, allowed_or_declared.clone(), by, complete, must_show);
        // What the design reaches is the claim's allowance; the findings are beside it.
        result.allowed = allowed;
        result.findings = findings;
        if let Some(race) = pinned_race {
            let problems = race.problems(&allowed_or_declared);
            result.problems.extend(
                problems
                    .into_iter()
                    .map(|p| format!("{p} (the file's [schedule])")),
            );
        }
        if let Some(expected) = expected {
            held_to_expectation(&mut result, expected, pinned_run.as_ref());
        }
        if let Some(run) = pinned_run {
            let from_file = self.pinned.as_ref().is_some_and(|(s, _)| {
                self.parsed
                    .schedule
                    .as_ref()
                    .is_some_and(|p| p.schedule == *s)
            });
            checked_pinned(&mut result, column.key, run, self.parsed, from_file);
        }
        Ok(result)
    }
}

fn labels_text(labels: &[String]) -> String {
    Claim::allowed_text(labels, "serializable")
}

/// The report for people: a row per store (what it showed, what its design reaches, how its
/// attempts ended), then each anomaly's first evidence, then the verdict.
pub fn render(r: &WorkloadRace) -> String {
    let mut out = format!("{} ({})\n", r.workload, r.file);
    if let Some(why) = &r.outside_model {
        out.push_str(&format!(
            "the model: outside the model ({why}); engines only\n"
        ));
    }
    if r.stores.iter().any(|s| s.driven.is_none()) {
        out.push_str(&format!(
            "engine variants: {} free races each (no waits, seeded jitter)\n",
            r.attempts
        ));
    }
    for s in &r.stores {
        if let Some(d) = &s.driven {
            out.push_str(&format!(
                "{}: {}, driven step by step; {} steps blocked\n",
                s.race.store,
                d.interleavings.text(),
                d.blocked
            ));
        }
    }
    out.push('\n');
    let rows: Vec<[String; 5]> = r
        .stores
        .iter()
        .map(|s| {
            let showed: Vec<String> = s
                .race
                .anomalies
                .iter()
                .map(|(l, seen)| format!("{l} {}/{}", seen.attempts, s.race.attempts))
                .collect();
            let outcomes: Vec<String> = s
                .race
                .outcomes
                .iter()
                .map(|(o, n)| format!("{o} {n}"))
                .collect();
            [
                s.race.store.clone(),
                format!("{}/{}", s.race.serializable, s.race.attempts),
                if showed.is_empty() {
                    "-".into()
                } else {
                    showed.join(", ")
                },
                labels_text(&s.allowed),
                outcomes.join(", "),
            ]
        })
        .collect();
    let header = [
        "store",
        "serializable",
        "anomalies shown",
        "design reaches",
        "outcomes",
    ];
    let widths: Vec<usize> = (0..5)
        .map(|c| {
            rows.iter()
                .map(|row| row[c].chars().count())
                .chain([header[c].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[&str]| {
        let mut l: String = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}  "))
            .collect();
        l.truncate(l.trim_end().len());
        l + "\n"
    };
    out.push_str(&line(&header));
    for row in &rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        out.push_str(&line(&cells));
    }
    for s in &r.stores {
        for (label, seen) in &s.race.anomalies {
            out.push_str(&format!(
                "\n{}: {label}: {}\n  {}\n",
                s.race.store, seen.example, seen.history
            ));
        }
    }
    for s in &r.stores {
        if let Some(p) = &s.pinned {
            out.push_str(&pinned_text(&s.race.store, p));
        }
    }
    out.push('\n');
    for s in r.stores.iter().filter(|s| !s.findings.is_empty()) {
        out.push_str(&format!(
            "FINDING (declared in [expect]): {} commits {}, which its claim ({}) forbids\n",
            s.race.store,
            s.findings.join(", "),
            s.judged_by
        ));
    }
    let problems: Vec<&String> = r.stores.iter().flat_map(|s| &s.problems).collect();
    let declared = r.stores.iter().any(|s| !s.findings.is_empty());
    if problems.is_empty() && declared {
        out.push_str("ok: every store showed what its design reaches or the file declares\n");
    } else if problems.is_empty() {
        out.push_str("ok: every store showed only what its design reaches\n");
    }
    for p in problems {
        out.push_str(&format!("UNEXPECTED: {p}\n"));
    }
    out
}

/// A pinned run for people: one step a line, what it showed, then the expected values.
fn pinned_text(store: &str, p: &PinnedRun) -> String {
    let mut out = format!("\n{store}, pinned: {}\n", p.run.schedule);
    let width = p.run.steps.iter().map(|s| s.step.len()).max().unwrap_or(0);
    for step in &p.run.steps {
        let blocked = if step.blocked { " (blocked)" } else { "" };
        out.push_str(&format!(
            "  {:<width$}  {}{blocked}\n",
            step.step,
            step.shows.text()
        ));
    }
    let anomalies = if p.run.anomalies.is_empty() {
        "none".to_string()
    } else {
        p.run.anomalies.join(", ")
    };
    let state: Vec<String> = p
        .run
        .state
        .iter()
        .map(|(k, v)| format!("{k}={}", v.map_or("absent".to_string(), |v| v.to_string())))
        .collect();
    out.push_str(&format!(
        "  {}; final {}; anomalies: {anomalies}\n",
        p.run.outcome,
        state.join(" ")
    ));
    for c in &p.checks {
        let verdict = if c.ok { "ok" } else { "DIFFERS" };
        out.push_str(&format!(
            "  expected {} (line {}): {verdict}, showed {}\n",
            c.expected, c.line, c.showed
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadbearing_ssi_engine::interleave::interleavings;

    /// The judge of a driven store, both ways, on races whose outcome is known: the engine's
    /// plain snapshot isolation skews in almost every free race of the write-skew pair, its
    /// fix never does.
    fn driven(variant: &str) -> EveryInterleaving {
        let w = loadbearing_specs::ssi::workload::named("write_skew").unwrap();
        EveryInterleaving {
            race: race_engine(&w, variant, 20, 50, None),
            interleavings: interleavings(&[4, 4], 1000, 1),
            blocked: 0,
            runs: Vec::new(),
        }
    }

    fn expect(anomalies: &[&str]) -> Expect {
        Expect {
            variant: "sqlite".into(),
            line: 7,
            anomalies: anomalies.iter().map(|a| a.to_string()).collect(),
        }
    }

    /// Over every interleaving a store shows exactly what `[expect]` lists: an anomaly it does
    /// not list, or one it lists and no interleaving showed, is a problem naming the line.
    #[test]
    fn an_engine_is_held_to_its_expect_list_both_ways() {
        let skew = "G2-item (write skew)";
        let mut judged = judged_every(
            driven("plainsi"),
            vec![skew.into()],
            "SI".into(),
            true,
            false,
        );
        held_to_expectation(&mut judged, &expect(&[skew]), None);
        assert!(judged.problems.is_empty(), "{:?}", judged.problems);
        held_to_expectation(&mut judged, &expect(&[]), None);
        assert_eq!(judged.problems.len(), 1);
        assert!(judged.problems[0].contains("which [expect] at line 7 does not list"));
        let mut judged = judged_every(driven("fix"), Vec::new(), "SER".into(), true, false);
        held_to_expectation(&mut judged, &expect(&[skew]), None);
        assert_eq!(
            judged.problems,
            ["fix: [expect] at line 7 lists G2-item (write skew), which no interleaving showed (every interleaving (70))"]
        );
        // A sample proves no absence: only what it shows is held to the list.
        let mut sampled = driven("fix");
        sampled.interleavings = interleavings(&[4, 4], 10, 1);
        let mut judged = judged_every(sampled, Vec::new(), "SER".into(), true, false);
        held_to_expectation(&mut judged, &expect(&[skew]), None);
        assert!(judged.problems.is_empty(), "{:?}", judged.problems);
    }

    #[test]
    fn a_store_claiming_serializable_that_skews_is_a_finding_with_its_evidence() {
        let judged = judged_every(
            driven("plainsi"),
            Vec::new(),
            "serializable (its claim)".into(),
            true,
            false,
        );
        let problems = judged.problems.join("\n");
        assert!(
            problems.contains("G2-item (write skew)") && problems.contains("never reaches"),
            "{problems}"
        );
    }

    #[test]
    fn snapshot_isolation_that_never_skews_over_every_interleaving_is_a_finding() {
        let skew = vec!["G2-item (write skew)".to_string()];
        let judged = judged_every(driven("fix"), skew.clone(), "SI".into(), true, true);
        assert_eq!(
            judged.problems,
            ["fix: SI reaches G2-item (write skew) for this workload, yet none of its 70 interleavings showed it"]
        );
        // Not required where the interleavings were sampled, nor where the model was not
        // explored to the end.
        let mut sampled = driven("fix");
        sampled.interleavings = interleavings(&[4, 4], 10, 1);
        let judged = judged_every(sampled, skew, "SI".into(), true, true);
        assert!(judged.problems.is_empty(), "{:?}", judged.problems);
    }
}
