//! `loadbearing isolation --matrix DIR`: every workload file of a folder (the five classic
//! ones in `expected/workloads/`) driven through its interleavings on every engine named, one
//! row per engine and workload: what the engine claims, how many interleavings ran, the
//! anomalies it committed and what its design reaches. With `--markdown FILE` the table is
//! written as `docs/isolation.md` is: that page is this command's output, not prose.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::engines::{Claim, Engine};
use super::workload::{race_file, Interleave, StoreResult};
use super::IsolationError;

/// One engine on one workload.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub engine: String,
    /// What the engine is held to (`SERIALIZABLE`, `snapshot isolation (the plainsi model)`).
    pub held_to: String,
    pub workload: String,
    /// `every interleaving (70)`, or the sample.
    pub interleavings: String,
    /// The anomalies it committed, with how many interleavings showed each.
    pub anomalies: Vec<String>,
    /// What its design reaches (empty: serializable).
    pub reaches: Vec<String>,
    pub problems: Vec<String>,
    /// Anomalies the workload file declares the engine commits although its claim forbids
    /// them: known findings.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
    /// The anomaly the workload tests for (its `tests`), and in how many of the interleavings
    /// driven the engine showed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tested: Option<Tested>,
}

/// How an engine did against the anomaly a workload tests for.
#[derive(Clone, Debug, Serialize)]
pub struct Tested {
    /// `G-single (lost update)`; a class alone (`G-single`) counts every label of it.
    pub anomaly: String,
    /// Interleavings that showed it.
    pub shown_in: usize,
    /// Interleavings driven.
    pub of: usize,
    /// Whether the workload's pinned schedule (Hermitage's own) showed it; `None` without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pinned: Option<bool>,
}

impl Tested {
    /// Whether `label` is the anomaly tested for: the same label, or a label of the class
    /// tested for.
    fn counts(&self, label: &str) -> bool {
        label == self.anomaly || label.starts_with(&format!("{} (", self.anomaly))
    }

    /// `prevented`, or `shown (pinned; 3 of 70)`: by the pinned schedule, and in how many of
    /// the interleavings driven.
    fn cell(&self) -> String {
        let pinned = self.pinned == Some(true);
        match (pinned, self.shown_in) {
            (false, 0) => "prevented".into(),
            (true, 0) => "shown (pinned)".into(),
            (true, n) => format!("shown (pinned; {n} of {})", self.of),
            (false, n) => format!("shown ({n} of {})", self.of),
        }
    }
}

/// The workload files of `dir`, by name.
pub fn workload_files(dir: &Path) -> Result<Vec<PathBuf>, IsolationError> {
    let read = std::fs::read_dir(dir)
        .map_err(|e| IsolationError::Workload(format!("{}: {e}", dir.display())))?;
    let mut files: Vec<PathBuf> = read
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(IsolationError::Workload(format!(
            "{}: no workload file (*.toml)",
            dir.display()
        )));
    }
    Ok(files)
}

/// Every workload of `dir` on every column of `engines` (PostgreSQL on the server at
/// `postgres`).
pub fn run(
    dir: &Path,
    engines: &[Engine],
    postgres: Option<&str>,
    interleave: &Interleave,
) -> Result<Vec<Row>, IsolationError> {
    let mut rows = Vec::new();
    for file in workload_files(dir)? {
        let race = race_file(&file, &[], 1, 0, engines, postgres, interleave)?;
        rows.extend(
            race.stores
                .iter()
                .map(|s| row(s, &race.workload, interleavings(s), race.tests.as_deref())),
        );
    }
    Ok(rows)
}

fn interleavings(s: &StoreResult) -> String {
    s.driven
        .as_ref()
        .map_or_else(|| "raced".to_string(), |d| d.interleavings.text())
}

fn row(s: &StoreResult, workload: &str, interleavings: String, tests: Option<&str>) -> Row {
    let tested = tests.map(|anomaly| {
        let mut t = Tested {
            anomaly: anomaly.to_string(),
            shown_in: 0,
            of: s.race.attempts,
            pinned: None,
        };
        t.pinned = s
            .pinned
            .as_ref()
            .map(|p| p.run.anomalies.iter().any(|l| t.counts(l)));
        // Each run's labels, so that an interleaving showing two labels of a class counts once.
        t.shown_in = match &s.driven {
            Some(d) => d
                .runs
                .iter()
                .filter(|r| r.anomalies.iter().any(|l| t.counts(l)))
                .count(),
            None => s
                .race
                .anomalies
                .iter()
                .filter(|(l, _)| t.counts(l))
                .map(|(_, seen)| seen.attempts)
                .max()
                .unwrap_or(0),
        };
        t
    });
    Row {
        tested,
        engine: s.race.store.clone(),
        held_to: s.judged_by.clone(),
        workload: workload.to_string(),
        interleavings,
        anomalies: s
            .race
            .anomalies
            .iter()
            .map(|(label, seen)| format!("{label} ({})", seen.attempts))
            .collect(),
        reaches: s.allowed.clone(),
        problems: s.problems.clone(),
        findings: s.findings.clone(),
    }
}

/// Whether every engine did what it promises on every workload.
pub fn ok(rows: &[Row]) -> bool {
    rows.iter().all(|r| r.problems.is_empty())
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

/// The table as Markdown, one row per engine and workload, then every problem.
pub fn markdown(rows: &[Row]) -> String {
    let mut out = String::from(
        "| engine | held to | workload | interleavings | anomalies committed (interleavings) | its design reaches | verdict |\n|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            r.engine,
            r.held_to,
            r.workload,
            r.interleavings,
            list(&r.anomalies),
            Claim::allowed_text(&r.reaches, "none"),
            if !r.problems.is_empty() {
                "FINDING"
            } else if !r.findings.is_empty() {
                "FINDING (declared)"
            } else {
                "as promised"
            }
        );
    }
    for r in rows.iter().filter(|r| !r.findings.is_empty()) {
        let _ = writeln!(
            out,
            "\nFINDING (declared in the workload's [expect]): {} on {}: {}, which its claim ({}) forbids",
            r.engine,
            r.workload,
            r.findings.join(", "),
            r.held_to
        );
    }
    for p in rows.iter().flat_map(|r| &r.problems) {
        let _ = writeln!(out, "\nFINDING: {p}");
    }
    out
}

/// The rows at a glance, as Hermitage tabulates databases: a row per engine (each level its
/// own), a column per workload, each cell `prevented` or the anomalies the engine committed
/// there (`FINDING` where that breaks its promise). Engines and workloads in the rows' order.
pub fn glance(rows: &[Row]) -> String {
    let mut engines: Vec<&str> = Vec::new();
    let mut workloads: Vec<&str> = Vec::new();
    for r in rows {
        if !engines.contains(&r.engine.as_str()) {
            engines.push(&r.engine);
        }
        if !workloads.contains(&r.workload.as_str()) {
            workloads.push(&r.workload);
        }
    }
    let mut out = format!("| engine | {} |\n|---|", workloads.join(" | "));
    out.push_str(&"---|".repeat(workloads.len()));
    out.push('\n');
    for engine in engines {
        let cells: Vec<String> = workloads
            .iter()
            .map(|workload| {
                let Some(r) = rows
                    .iter()
                    .find(|r| r.engine == engine && r.workload == *workload)
                else {
                    return "-".to_string();
                };
                let shown = match &r.tested {
                    Some(t) => t.cell(),
                    None if r.anomalies.is_empty() => "prevented".to_string(),
                    None => r.anomalies.join(", "),
                };
                let declared = match (&r.tested, r.findings.is_empty()) {
                    (Some(_), false) => format!("; {} (FINDING)", r.findings.join(", ")),
                    (None, false) => " (FINDING)".to_string(),
                    (_, true) => String::new(),
                };
                if r.problems.is_empty() {
                    format!("{shown}{declared}")
                } else {
                    format!("{shown} (FINDING)")
                }
            })
            .collect();
        // The engine in bold: the detail table's rows start with its plain name.
        let _ = writeln!(out, "| **{engine}** | {} |", cells.join(" | "));
    }
    out
}

/// `docs/isolation.md` as the command writes it: what it is, the command, the tables; the
/// title names the folder of workloads (`dir`).
pub fn page(rows: &[Row], command: &str, dir: &str) -> String {
    format!(
        "# Isolation of real engines: `{dir}`\n\n\
         Written by `{command}` (do not edit by hand: run it again). Each row is one engine\n\
         driven through one workload's interleavings (docs/workloads.md: every one, or a\n\
         seeded sample where there are more than `--interleavings`), each run's history built\n\
         from the engine's own records and classified as the SSI model's are. An engine that\n\
         promises serializable transactions is held to no anomaly; snapshot isolation to\n\
         exactly what the model's `plainsi` reaches (for a workload outside the model, with\n\
         predicate reads or inserts, to Adya's definition: no G-single); READ COMMITTED to\n\
         nothing dirty (no G0 or G1: G-single and G2 may commit). The counts in parentheses\n\
         are how many interleavings committed each anomaly.\n\n\
         The engines, and why these: PostgreSQL, the server most of our users run, at\n\
         `SERIALIZABLE` (SSI, Ports and Grittner's), at `REPEATABLE READ` (snapshot\n\
         isolation) and at `READ COMMITTED` (its default); Berkeley DB 5.3 (Debian's\n\
         libdb5.3-dev) with `DB_TXN_SNAPSHOT`, the\n\
         library whose commit-time pivot check the SSI model describes, in the release before\n\
         that check (snapshot isolation: it must commit write skew); SQLite, the embedded\n\
         database everyone ships, serializable by locking; skipdb (crates.io), an embedded\n\
         MVCC engine whose documentation promises serializable snapshot isolation (Badger's\n\
         and FoundationDB's design); Badger v4 itself (the Go module proxy; Dgraph's store),\n\
         whose transactions promise the same, through our Go driver of it; MariaDB (Debian's\n\
         mariadb-server, InnoDB) at `SERIALIZABLE`, at `REPEATABLE READ` (its default: a\n\
         snapshot for reads, the latest version for writes, so held to nothing dirty) and at\n\
         `READ COMMITTED`, the other server people run. Each engine is\n\
         opened fresh and driven one step at a time on its own connection or transaction\n\
         handle. A step PostgreSQL makes wait (a row lock) is counted as blocked the moment\n\
         PostgreSQL reports it waiting (`pg_blocking_pids`) or InnoDB does (`LOCK WAIT` in\n\
         `information_schema.INNODB_TRX`), and the next step goes ahead; SQLite and Berkeley\n\
         DB refuse such a step at once.\n\n\
         ## At a glance\n\n\
         Each engine and level against each workload: `prevented`, or the anomalies it\n\
         committed (in how many interleavings). Where a workload names the anomaly it tests\n\
         for (`tests`, as Hermitage names each of its tests by one), the cell is about that\n\
         anomaly alone: `prevented`, or `shown`, by the workload's pinned schedule\n\
         (Hermitage's own order of its statements) and in how many of the interleavings\n\
         driven.\n\n{}\n\
         ## Every row\n\n{}",
        glance(rows),
        markdown(rows)
    )
}

#[cfg(test)]
mod tests {
    use super::{glance, markdown, ok, Row, Tested};

    /// A test's cell counts its anomaly alone: prevented, or shown by the pinned schedule and
    /// in how many interleavings; a class tested for counts every label of it.
    #[test]
    fn a_tested_anomaly_reads_prevented_or_shown() {
        let mut t = Tested {
            anomaly: "G-single".into(),
            shown_in: 0,
            of: 70,
            pinned: Some(false),
        };
        assert_eq!(t.cell(), "prevented");
        assert!(t.counts("G-single (read skew)") && t.counts("G-single"));
        assert!(!t.counts("G2-item") && !t.counts("G-singleton"));
        t.pinned = Some(true);
        assert_eq!(t.cell(), "shown (pinned)");
        t.shown_in = 3;
        assert_eq!(t.cell(), "shown (pinned; 3 of 70)");
        t.pinned = None;
        assert_eq!(t.cell(), "shown (3 of 70)");
    }

    fn row(engine: &str, workload: &str, anomalies: &[&str], finding: bool) -> Row {
        Row {
            engine: engine.into(),
            held_to: String::new(),
            workload: workload.into(),
            interleavings: String::new(),
            anomalies: anomalies.iter().map(|a| a.to_string()).collect(),
            reaches: Vec::new(),
            problems: if finding {
                vec!["broke it".into()]
            } else {
                Vec::new()
            },
            findings: Vec::new(),
            tested: None,
        }
    }

    /// A row per engine, a column per workload, each cell what the engine did there.
    #[test]
    fn the_glance_is_an_engine_by_workload_table_of_what_was_prevented() {
        let rows = [
            row(
                "pg (RC)",
                "lost_update",
                &["G-single (lost update) (60)"],
                false,
            ),
            row("pg (RC)", "write_skew", &[], false),
            row("lite", "lost_update", &["G-single (lost update) (1)"], true),
        ];
        let table = glance(&rows);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines[0], "| engine | lost_update | write_skew |");
        assert_eq!(lines[1], "|---|---|---|");
        assert_eq!(
            lines[2],
            "| **pg (RC)** | G-single (lost update) (60) | prevented |"
        );
        assert_eq!(
            lines[3],
            "| **lite** | G-single (lost update) (1) (FINDING) | - |"
        );
    }

    /// A finding the workload file declares is marked as one, beside the tested anomaly's
    /// cell, and listed under the table; it fails nothing.
    #[test]
    fn a_declared_finding_is_marked_and_listed_but_passes() {
        let mut declared = row("kv", "pmp_write", &["internal (16)"], false);
        declared.findings = vec!["internal".into()];
        declared.held_to = "serializable (its claim)".into();
        assert_eq!(
            glance(std::slice::from_ref(&declared)).lines().nth(2),
            Some("| **kv** | internal (16) (FINDING) |")
        );
        declared.tested = Some(Tested {
            anomaly: "G-single".into(),
            shown_in: 0,
            of: 35,
            pinned: Some(false),
        });
        assert_eq!(
            glance(std::slice::from_ref(&declared)).lines().nth(2),
            Some("| **kv** | prevented; internal (FINDING) |")
        );
        let page = markdown(std::slice::from_ref(&declared));
        assert!(page.contains("| FINDING (declared) |"), "{page}");
        assert!(
            page.contains("FINDING (declared in the workload's [expect]): kv on pmp_write: internal, which its claim (serializable (its claim)) forbids"),
            "{page}"
        );
        assert!(ok(&[declared]));
    }
}
