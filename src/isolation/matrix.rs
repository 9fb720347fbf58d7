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
    interleave: Interleave,
) -> Result<Vec<Row>, IsolationError> {
    let mut rows = Vec::new();
    for file in workload_files(dir)? {
        let race = race_file(&file, &[], 1, 0, engines, postgres, interleave)?;
        rows.extend(
            race.stores
                .iter()
                .map(|s| row(s, &race.workload, interleavings(s))),
        );
    }
    Ok(rows)
}

fn interleavings(s: &StoreResult) -> String {
    s.driven
        .as_ref()
        .map_or_else(|| "raced".to_string(), |d| d.interleavings.text())
}

fn row(s: &StoreResult, workload: &str, interleavings: String) -> Row {
    Row {
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
            if r.problems.is_empty() {
                "as promised"
            } else {
                "FINDING"
            }
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
                let shown = if r.anomalies.is_empty() {
                    "prevented".to_string()
                } else {
                    r.anomalies.join(", ")
                };
                if r.problems.is_empty() {
                    shown
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

/// `docs/isolation.md` as the command writes it: what it is, the command, the tables.
pub fn page(rows: &[Row], command: &str) -> String {
    format!(
        "# Isolation of real engines\n\n\
         Written by `{command}` (do not edit by hand: run it again). Each row is one engine\n\
         driven through one workload's interleavings (docs/workloads.md: every one, or a\n\
         seeded sample where there are more than `--interleavings`), each run's history built\n\
         from the engine's own records and classified as the SSI model's are. An engine that\n\
         promises serializable transactions is held to no anomaly; snapshot isolation to\n\
         exactly what the model's `plainsi` reaches; READ COMMITTED to nothing dirty (no G0\n\
         or G1: G-single and G2 may commit). The counts in parentheses are how many\n\
         interleavings committed each anomaly.\n\n\
         The engines, and why these: PostgreSQL, the server most of our users run, at\n\
         `SERIALIZABLE` (SSI, Ports and Grittner's), at `REPEATABLE READ` (snapshot\n\
         isolation) and at `READ COMMITTED` (its default); Berkeley DB 5.3 (Debian's\n\
         libdb5.3-dev) with `DB_TXN_SNAPSHOT`, the\n\
         library whose commit-time pivot check the SSI model describes, in the release before\n\
         that check (snapshot isolation: it must commit write skew); SQLite, the embedded\n\
         database everyone ships, serializable by locking; skipdb (crates.io), an embedded\n\
         MVCC engine whose documentation promises serializable snapshot isolation (Badger's\n\
         and FoundationDB's design); Badger v4 itself (the Go module proxy; Dgraph's store),\n\
         whose transactions promise the same, through our Go driver of it. Each engine is\n\
         opened fresh and driven one step at a time on its own connection or transaction\n\
         handle. A step PostgreSQL makes wait (a row lock) is counted as blocked the moment\n\
         PostgreSQL reports it waiting (`pg_blocking_pids`), and the next step goes ahead;\n\
         SQLite and Berkeley DB refuse such a step at once.\n\n\
         ## At a glance\n\n\
         Each engine and level against each workload: `prevented`, or the anomalies it\n\
         committed (in how many interleavings).\n\n{}\n\
         ## Every row\n\n{}",
        glance(rows),
        markdown(rows)
    )
}

#[cfg(test)]
mod tests {
    use super::{glance, Row};

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
}
