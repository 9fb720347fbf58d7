//! `loadbearing bench --histories`: the history checker measured on generated first-write
//! histories (`crate::histories`), through the same code path as `conform --trace FILE --model
//! CasFirstWriteAtomic`, with `--porcupine` beside Porcupine (`bench/porcupine`) on the same
//! files.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use loadbearing_specs::infra::knobs::Constants;
use loadbearing_trace::{Decision, TraceOptions};

use crate::histories::{generate, Shape};
use crate::Verdict;

/// The model the histories are judged against.
pub const MODEL: &str = "CasFirstWriteAtomic";

/// Why the history benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum HistoryBenchError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the history could not be judged: {0}")]
    Judge(String),
    #[error("--porcupine builds bench/porcupine with Go, and `go` is not on the PATH (install Go 1.21 or later)")]
    NoGo,
    #[error("building Porcupine's runner failed (`go build` in {dir}):\n{output}")]
    GoBuild { dir: PathBuf, output: String },
    #[error("Porcupine's runner failed on {file}: {output}")]
    Porcupine { file: PathBuf, output: String },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> HistoryBenchError + '_ {
    move |source| HistoryBenchError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// One checker's run on one file.
#[derive(Clone, Debug)]
pub struct Timing {
    /// Reading, parsing and judging the file.
    pub seconds: f64,
    pub verdict: String,
}

/// One row: a generated file, our verdict and time, and Porcupine's when asked.
#[derive(Clone, Debug)]
pub struct HistoryRow {
    pub label: String,
    pub operations: usize,
    pub file: PathBuf,
    pub ours: Timing,
    pub porcupine: Option<Timing>,
}

impl HistoryRow {
    pub fn events_per_second(timing: &Timing, operations: usize) -> f64 {
        operations as f64 / timing.seconds.max(1e-9)
    }
}

/// The files measured: (a) and its sequence, (b).
pub fn write_files(dir: &Path) -> Result<Vec<(String, usize, PathBuf)>, HistoryBenchError> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let mut files = Vec::new();
    let one = generate(Shape::ONE_KEY);
    let write = |name: &str, text: String| -> Result<PathBuf, HistoryBenchError> {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(io(&path))?;
        Ok(path)
    };
    files.push((
        "(a) 1 key, 8 writers, 5% unknown".to_string(),
        one.history.len(),
        write("one-key.ndjson", one.history_ndjson())?,
    ));
    files.push((
        "(a) as a sequence (no times)".to_string(),
        one.sequence.len(),
        write("one-key-sequence.ndjson", one.sequence_ndjson())?,
    ));
    let many = generate(Shape::MANY_KEYS);
    files.push((
        "(b) 1,000 keys, 8 writers a key".to_string(),
        many.history.len(),
        write("many-keys.ndjson", many.history_ndjson())?,
    ));
    Ok(files)
}

/// Judges a file as `conform --trace FILE --model CasFirstWriteAtomic` does (a sequence read as
/// a history: the fitted sequence validator holds 8 writes).
pub fn judge_file(path: &Path) -> Result<Timing, HistoryBenchError> {
    let entry = loadbearing_registry::conformance(MODEL).expect("CasFirstWriteAtomic reads traces");
    let (resolve, validate) = (entry.resolve, entry.conform);
    let constants =
        resolve(&Constants::new()).map_err(|e| HistoryBenchError::Judge(e.to_string()))?;
    let options = TraceOptions {
        as_history: true,
        ..TraceOptions::default()
    };
    let started = Instant::now();
    let text = std::fs::read_to_string(path).map_err(io(path))?;
    let report = validate(&constants, &text, &options)
        .map_err(|e| HistoryBenchError::Judge(format!("{}: {e}", path.display())))?;
    let seconds = started.elapsed().as_secs_f64();
    let verdict = match report.decision() {
        Decision::Conforms => "linearizable",
        Decision::Diverges => "not linearizable",
        Decision::Unknown(_) => "unknown",
    };
    Ok(Timing {
        seconds,
        verdict: verdict.to_string(),
    })
}

/// Generates the histories into `dir` and measures each `repeat` times, ours and Porcupine's
/// runner (when given) taking turns; a row is the median of each. Runs of one checker that
/// disagree on the verdict are an error.
pub fn measure(
    dir: &Path,
    porcupine: Option<&Path>,
    repeat: usize,
) -> Result<Vec<HistoryRow>, HistoryBenchError> {
    write_files(dir)?
        .into_iter()
        .map(|(label, operations, file)| {
            let mut ours = Vec::new();
            let mut theirs = Vec::new();
            for _ in 0..repeat.max(1) {
                ours.push(judge_file(&file)?);
                if let Some(bin) = porcupine {
                    theirs.push(run_porcupine(bin, &file)?);
                }
            }
            Ok(HistoryRow {
                ours: median(&label, ours)?,
                porcupine: (!theirs.is_empty())
                    .then(|| median(&label, theirs))
                    .transpose()?,
                label,
                operations,
                file,
            })
        })
        .collect()
}

/// The median run (by time) of runs that agree on the verdict.
fn median(label: &str, mut runs: Vec<Timing>) -> Result<Timing, HistoryBenchError> {
    if let Some(other) = runs.iter().find(|t| t.verdict != runs[0].verdict) {
        return Err(HistoryBenchError::Judge(format!(
            "{label}: one run says {}, another {}",
            runs[0].verdict, other.verdict
        )));
    }
    runs.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
    Ok(runs.swap_remove(runs.len() / 2))
}

/// Runs Porcupine's runner on a file: it prints `{"seconds":…,"verdict":"…"}`.
fn run_porcupine(bin: &Path, file: &Path) -> Result<Timing, HistoryBenchError> {
    let failed = |output: String| HistoryBenchError::Porcupine {
        file: file.to_path_buf(),
        output,
    };
    let out = Command::new(bin)
        .arg(file)
        .output()
        .map_err(|e| failed(e.to_string()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(failed(format!(
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    let line: serde_json::Value =
        serde_json::from_str(stdout.trim()).map_err(|e| failed(format!("{e}: {stdout}")))?;
    match (line["seconds"].as_f64(), line["verdict"].as_str()) {
        (Some(seconds), Some(verdict)) => Ok(Timing {
            seconds,
            verdict: verdict.to_string(),
        }),
        _ => Err(failed(stdout.to_string())),
    }
}

/// Porcupine's runner beside this binary (`porcupine-bench`), built from `bench/porcupine` with
/// `go build` when it is missing (Go fetches Porcupine from its module proxy).
pub fn porcupine_runner() -> Result<PathBuf, HistoryBenchError> {
    let here = std::env::current_exe().map_err(io(Path::new("the loadbearing binary")))?;
    let dir = here.parent().unwrap_or(Path::new("."));
    let bin = dir.join("porcupine-bench");
    if bin.exists() {
        return Ok(bin);
    }
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/porcupine");
    let go = Command::new("go").arg("version").output();
    if !go.is_ok_and(|o| o.status.success()) {
        return Err(HistoryBenchError::NoGo);
    }
    let out = Command::new("go")
        .args(["build", "-o"])
        .arg(&bin)
        .arg(".")
        .current_dir(&source)
        .output()
        .map_err(io(&source))?;
    if !out.status.success() {
        return Err(HistoryBenchError::GoBuild {
            dir: source,
            output: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    Ok(bin)
}

/// The rows for people: operations, seconds, events a second, verdict; Porcupine's beside them
/// with how many times faster ours is.
pub fn table(rows: &[HistoryRow]) -> String {
    let mut out = format!(
        "{:<34} {:>10} {:>9} {:>12} {:<17}",
        "history", "operations", "seconds", "events/s", "verdict"
    );
    let porcupine = rows.iter().any(|r| r.porcupine.is_some());
    if porcupine {
        out.push_str(&format!(
            " {:>10} {:>12} {:<17} {:>7}",
            "porcupine", "events/s", "verdict", "speedup"
        ));
    }
    out.push('\n');
    for r in rows {
        out.push_str(&format!(
            "{:<34} {:>10} {:>9.3} {:>12.0} {:<17}",
            r.label,
            r.operations,
            r.ours.seconds,
            HistoryRow::events_per_second(&r.ours, r.operations),
            r.ours.verdict
        ));
        if let Some(p) = &r.porcupine {
            out.push_str(&format!(
                " {:>10.3} {:>12.0} {:<17} {:>6.1}x",
                p.seconds,
                HistoryRow::events_per_second(p, r.operations),
                p.verdict,
                p.seconds / r.ours.seconds.max(1e-9)
            ));
        }
        out.push('\n');
    }
    out
}

/// `bench --histories --oracle N`: the judge against the oracle, `n` histories a model from
/// `seed`; a table of agreements, and every disagreement written to `dir` (a finding: exit 1).
pub fn against_the_oracle(n: usize, seed: u64, dir: &Path) -> Result<Verdict, HistoryBenchError> {
    use crate::oracle::compare::{run, Case};
    let mut table = String::from(
        "| model | histories | judgements (history and sequence) | agree | disagree | undecided | refused (past the model's bounds) | linearizable (oracle) | seconds |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut disagreed = 0;
    for case in Case::ALL {
        let started = Instant::now();
        let tally = run(case, n, seed);
        let judged = tally.agreed + tally.disagreements.len();
        table.push_str(&format!(
            "| {case} | {} | {judged} | {} | {} | {} | {} | {} | {:.1} |\n",
            tally.histories,
            tally.agreed,
            tally.disagreements.len() - tally.undecided,
            tally.undecided,
            tally.refused,
            tally.linearizable,
            started.elapsed().as_secs_f64()
        ));
        for (i, d) in tally.disagreements.iter().enumerate() {
            std::fs::create_dir_all(dir).map_err(|source| HistoryBenchError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
            let path = dir.join(format!(
                "disagreement-{}-{i}.ndjson",
                case.to_string().replace([' ', '='], "-")
            ));
            std::fs::write(&path, &d.history).map_err(|source| HistoryBenchError::Io {
                path: path.clone(),
                source,
            })?;
            eprintln!(
                "{case}: the judge says {}, the oracle {} ({}): {}",
                d.judge,
                if d.oracle {
                    "linearizable"
                } else {
                    "not linearizable"
                },
                if d.as_sequence {
                    "as a sequence"
                } else {
                    "as a history"
                },
                path.display()
            );
        }
        disagreed += tally.disagreements.len();
    }
    print!("{table}");
    println!("(seeds {seed}..{}; n = {n} a model)", seed + n as u64);
    Ok(if disagreed == 0 {
        Verdict::AsExpected
    } else {
        Verdict::Differs
    })
}
