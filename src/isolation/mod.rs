//! `loadbearing isolation`: the SSI engine's variants (with `--postgres`, PostgreSQL at
//! SERIALIZABLE) raced through the isolation tier, per scenario side by side.
//!
//! With `--workload FILE.toml`, a workload file's transactions instead, raced freely and each
//! history classified ([`workload`]).
//!
//! Exit 0 when every variant shows what it must (the pre-fix engine commits the #136 write
//! skew on `write_skew_trigger`, the fix and PostgreSQL never commit a non-serializable
//! history, plain SI commits a write skew, every engine trace fits the model); 1 otherwise; 2 on
//! bad input or when PostgreSQL cannot be started.

pub mod engines;
pub mod matrix;
pub mod suite_replay;
pub mod workload;
pub use engines::Engine;
pub use workload::Interleave;

use std::path::{Path, PathBuf};

use loadbearing_conform::ssi_engine::ModelJudge;
use loadbearing_ssi_engine::engine::Variant;
#[cfg(feature = "postgres")]
use loadbearing_ssi_engine::postgres::{PgServer, PgServerError, PgTier, PgTierError};
use loadbearing_ssi_engine::report;
use loadbearing_ssi_engine::tier::{musts, run_engine, scenarios, Scenario, Tally};

use crate::Verdict;

/// Why the tier could not run.
#[derive(Debug, thiserror::Error)]
pub enum IsolationError {
    #[error("unknown variant `{name}`; the variants are all, main, none, {}", Variant::NAMES.join(", "))]
    UnknownVariant { name: String },
    #[error("no scenario matches `{filter}`; the scenarios are {known}")]
    NoScenario { filter: String, known: String },
    #[error("--attempts must be at least 1")]
    NoAttempts,
    #[error(
        "nothing to run: --variant none and no engine (--engine NAME: {})",
        engine_names()
    )]
    NothingToRun,
    #[error(
        "--replay-suite and --matrix drive engines: name them (--engine NAME: {})",
        engine_names()
    )]
    NothingToReplayOn,
    #[error("--engine {0} drives a workload file (--workload), the suite's counterexamples (--replay-suite) or the matrix (--matrix); the tier's scenarios run on the engine and PostgreSQL")]
    EmbeddedNeedsSchedule(&'static str),
    /// Checked before anything runs: a missing client or library is bad input, not a late
    /// surprise.
    #[error("`isolation --engine {engine}` is not compiled into this build: install it ({setup}) and rebuild with `--features {feature}` (or `--features full`)")]
    NotCompiledIn {
        engine: &'static str,
        feature: &'static str,
        setup: &'static str,
    },
    /// An engine column on PostgreSQL with no server started for it (a caller's mistake).
    #[error("PostgreSQL's columns need a server: none was started")]
    NoPostgresServer,
    #[cfg(feature = "postgres")]
    #[error("PostgreSQL: {0}")]
    PostgresStart(#[source] PgServerError),
    /// A connection or a scenario on PostgreSQL failed.
    #[cfg(feature = "postgres")]
    #[error(transparent)]
    Postgres(#[from] PgTierError),
    /// The SQLite database file could not be set up or read.
    #[error(transparent)]
    Sqlite(#[from] loadbearing_ssi_engine::sqlite::SqliteTierError),
    /// skipdb failed outside a transaction (loading the data).
    #[error(transparent)]
    Skipdb(#[from] loadbearing_ssi_engine::skipdb::Refused),
    /// Berkeley DB's environment could not be set up or read.
    #[cfg(feature = "bdb")]
    #[error(transparent)]
    Bdb(#[from] loadbearing_ssi_engine::bdb::BdbError),
    /// Badger's driver could not be started, or failed outside a transaction.
    #[cfg(feature = "badger")]
    #[error(transparent)]
    Badger(#[from] loadbearing_ssi_engine::badger::Refused),
    /// An engine's throwaway server could not be started.
    #[error("{engine}: {why}")]
    EngineStart { engine: &'static str, why: String },
    /// A connection or a statement outside a transaction failed on MariaDB.
    #[cfg(feature = "mariadb")]
    #[error(transparent)]
    Mariadb(#[from] loadbearing_ssi_engine::mariadb::MariaTierError),
    #[error("cannot create {}: {source}", path.display())]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A trace or a page that could not be written.
    #[error("cannot write {}: {source}", path.display())]
    WriteTrace {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// A workload file that cannot be read or is malformed (the message names the line).
    #[error("{0}")]
    Workload(String),
    #[error("{option} does not apply to --workload (a workload races freely on every store)")]
    NotWithWorkload { option: &'static str },
}

/// For people (the side-by-side tables) or for machines (JSON).
#[derive(Clone, Copy)]
pub enum IsolationFormat {
    Table,
    Json,
}

/// How the tier runs: `loadbearing isolation`'s options (its flags say what each means).
pub struct Options {
    /// Attempts per scenario and store.
    pub attempts: usize,
    /// `all`, `main`, `none`, or a comma-separated list of variants ([`variants`]).
    pub variant: String,
    /// Only the scenarios whose name contains this.
    pub scenario: Option<String>,
    /// The real engines to drive (PostgreSQL: a throwaway cluster; for the tier's scenarios,
    /// its SERIALIZABLE column beside the engine's variants).
    pub engines: Vec<Engine>,
    /// Random pause before each step, up to this many microseconds.
    pub jitter_us: u64,
    pub format: IsolationFormat,
    /// Where to write each (variant, scenario)'s first engine trace as NDJSON.
    pub traces: Option<PathBuf>,
    /// A workload file raced instead of the tier's scenarios.
    pub workload: Option<PathBuf>,
    /// How far a workload is driven through its interleavings on the engines.
    pub interleave: workload::Interleave,
    /// Drive the ssi suite's counterexamples on the engines asked for instead.
    pub replay_suite: bool,
    /// Drive every workload file of this folder on the engines asked for instead.
    pub matrix: Option<PathBuf>,
    /// With `matrix`: write the table as a page (docs/isolation.md) here.
    pub markdown: Option<PathBuf>,
}

/// The variant names `--variant` selects.
pub fn variants(spec: &str) -> Result<Vec<&'static str>, IsolationError> {
    match spec {
        "all" => return Ok(Variant::NAMES.to_vec()),
        "main" => return Ok(Variant::MAIN.to_vec()),
        "none" => return Ok(Vec::new()),
        _ => {}
    }
    spec.split(',')
        .map(str::trim)
        .map(|name| {
            Variant::NAMES
                .iter()
                .copied()
                .find(|v| *v == name)
                .ok_or_else(|| IsolationError::UnknownVariant {
                    name: name.to_string(),
                })
        })
        .collect()
}

/// Whether `--scenario` (a substring, or none) picks the scenario `name`.
fn picks(filter: &Option<String>, name: &str) -> bool {
    filter.as_deref().is_none_or(|f| name.contains(f))
}

/// The tier's scenarios the filter picks; an error when none matches it.
fn selected(filter: &Option<String>) -> Result<Vec<Scenario>, IsolationError> {
    let all = scenarios();
    let chosen: Vec<Scenario> = all
        .iter()
        .filter(|s| picks(filter, s.name))
        .cloned()
        .collect();
    if chosen.is_empty() {
        let names: Vec<String> = all.iter().map(|s| s.name.to_string()).collect();
        return Err(IsolationError::NoScenario {
            filter: filter.clone().unwrap_or_default(),
            known: names.join(", "),
        });
    }
    Ok(chosen)
}

/// One NDJSON file per engine tally: its first attempt's step events.
fn write_traces(dir: &std::path::Path, tallies: &[Tally]) -> Result<(), IsolationError> {
    std::fs::create_dir_all(dir).map_err(|source| IsolationError::CreateDir {
        path: dir.to_path_buf(),
        source,
    })?;
    for t in tallies {
        if let Some(trace) = &t.first_trace {
            let path = dir.join(format!("{}-{}.ndjson", t.store, t.scenario));
            std::fs::write(&path, loadbearing_conform::ssi_engine::to_ndjson(trace)).map_err(
                |source| IsolationError::WriteTrace {
                    path: path.clone(),
                    source,
                },
            )?;
        }
    }
    Ok(())
}

fn engine_names() -> String {
    Engine::ALL.map(Engine::name).join(", ")
}

impl Options {
    fn postgres(&self) -> bool {
        self.engines.contains(&Engine::Postgres)
    }
}

/// An error unless some store is asked for and every store asked for is compiled in (checked
/// before anything runs: a missing client is bad input, not a late surprise).
fn something_to_run(options: &Options, variants: &[&str]) -> Result<(), IsolationError> {
    if variants.is_empty() && options.engines.is_empty() {
        return Err(IsolationError::NothingToRun);
    }
    options
        .engines
        .iter()
        .try_for_each(|engine| engine.check_compiled_in())
}

/// Runs the tier as the options say and prints the report.
pub fn run(options: Options) -> Result<Verdict, IsolationError> {
    if options.attempts == 0 {
        return Err(IsolationError::NoAttempts);
    }
    if let Some(path) = options.workload.clone() {
        return run_workload(&options, &path);
    }
    if options.replay_suite {
        return run_replay_suite(&options);
    }
    if let Some(dir) = options.matrix.clone() {
        return run_matrix(&options, &dir);
    }
    if let Some(engine) = options.engines.iter().find(|e| **e != Engine::Postgres) {
        return Err(IsolationError::EmbeddedNeedsSchedule(engine.name()));
    }
    let variants = variants(&options.variant)?;
    let chosen = selected(&options.scenario)?;
    something_to_run(&options, &variants)?;
    let mut tallies: Vec<Tally> = Vec::new();
    for v in &variants {
        for s in &chosen {
            tallies.push(run_engine(
                s,
                v,
                options.attempts,
                options.jitter_us,
                Some(&ModelJudge),
            ));
        }
    }
    #[cfg(feature = "postgres")]
    tallies.extend(with_postgres(options.postgres(), |conn_str| {
        let Some(conn_str) = conn_str else {
            return Ok(Vec::new());
        };
        let mut tier = PgTier::connect(conn_str)?;
        chosen
            .iter()
            .map(|s| Ok(tier.run(s, options.attempts, options.jitter_us)?))
            .collect::<Result<Vec<_>, IsolationError>>()
    })?);
    if let Some(dir) = &options.traces {
        write_traces(dir, &tallies)?;
    }
    let verdict = musts(&tallies);
    match options.format {
        IsolationFormat::Json => println!(
            "{}",
            serde_json::to_string_pretty(&report::json(&tallies, &verdict))?
        ),
        IsolationFormat::Table => {
            println!(
                "Isolation tier: {} attempts per scenario and store\n",
                options.attempts
            );
            println!("{}", report::side_by_side(&tallies));
            print!("{}", report::per_store(&tallies));
            let not_needed = report::not_needed(&tallies);
            if !not_needed.is_empty() {
                println!("Aborts that were not needed:\n{not_needed}");
            }
            if options.postgres() {
                let fp = report::false_positives(&tallies);
                if fp.is_empty() {
                    println!(
                        "No scenario where PostgreSQL commits everything and the fix aborts.\n"
                    );
                } else {
                    println!("False positives of the libdb design (PostgreSQL commits every transaction):");
                    for (s, fix) in fp {
                        println!("  {s}: fix {fix}");
                    }
                    println!();
                }
            }
            match &verdict {
                Ok(()) => println!("ok: every variant shows what it must"),
                Err(failures) => {
                    for f in failures {
                        println!("UNEXPECTED: {f}");
                    }
                }
            }
        }
    }
    Ok(Verdict::of(verdict.is_ok()))
}

/// `isolation --workload FILE`: the file's transactions raced on each store, classified.
fn run_workload(options: &Options, path: &Path) -> Result<Verdict, IsolationError> {
    if options.scenario.is_some() {
        return Err(IsolationError::NotWithWorkload {
            option: "--scenario",
        });
    }
    if options.traces.is_some() {
        return Err(IsolationError::NotWithWorkload { option: "--traces" });
    }
    let variants = variants(&options.variant)?;
    something_to_run(options, &variants)?;
    let result = with_postgres(options.postgres(), |conn_str| {
        workload::race_file(
            path,
            &variants,
            options.attempts,
            options.jitter_us,
            &options.engines,
            conn_str,
            &options.interleave,
        )
    })?;
    match options.format {
        IsolationFormat::Json => println!("{}", serde_json::to_string_pretty(&result)?),
        IsolationFormat::Table => print!("{}", workload::render(&result)),
    }
    Ok(Verdict::of(result.ok()))
}

/// `--replay-suite`: every must-fail counterexample of the ssi suite on each engine asked for.
fn run_replay_suite(options: &Options) -> Result<Verdict, IsolationError> {
    use suite_replay::{by_config, schedules, ReplayOn};
    if options.engines.is_empty() {
        return Err(IsolationError::NothingToReplayOn);
    }
    something_to_run(options, &[])?;
    let schedules = schedules()?;
    let engines = with_postgres(options.postgres(), |conn_str| {
        engines::for_each_column(&options.engines, conn_str, &mut ReplayOn(&schedules))
    })?;
    let replays = by_config(&schedules, engines);
    match options.format {
        IsolationFormat::Json => println!("{}", serde_json::to_string_pretty(&replays)?),
        IsolationFormat::Table => print!("{}", suite_replay::render(&replays)),
    }
    Ok(Verdict::of(suite_replay::ok(&replays)))
}

/// `--matrix DIR`: every workload of DIR on each engine asked for, as one table.
fn run_matrix(options: &Options, dir: &Path) -> Result<Verdict, IsolationError> {
    if options.engines.is_empty() {
        return Err(IsolationError::NothingToReplayOn);
    }
    something_to_run(options, &[])?;
    let rows = with_postgres(options.postgres(), |conn_str| {
        matrix::run(dir, &options.engines, conn_str, &options.interleave)
    })?;
    if let Some(page) = &options.markdown {
        let engines: Vec<String> = options
            .engines
            .iter()
            .map(|e| format!(" --engine {}", e.name()))
            .collect();
        let command = format!(
            "loadbearing isolation --matrix {}{} --markdown {}",
            dir.display(),
            engines.concat(),
            page.display()
        );
        std::fs::write(
            page,
            matrix::page(&rows, &command, &dir.display().to_string()),
        )
        .map_err(|source| IsolationError::WriteTrace {
            path: page.clone(),
            source,
        })?;
    }
    match options.format {
        IsolationFormat::Json => println!("{}", serde_json::to_string_pretty(&rows)?),
        IsolationFormat::Table => print!("{}", matrix::markdown(&rows)),
    }
    Ok(Verdict::of(matrix::ok(&rows)))
}

/// Runs `f` with the connection string of a throwaway PostgreSQL cluster when `wanted` (`None`
/// otherwise), and stops the cluster after, whatever `f` returned.
pub fn with_postgres<T>(
    wanted: bool,
    f: impl FnOnce(Option<&str>) -> Result<T, IsolationError>,
) -> Result<T, IsolationError> {
    #[cfg(feature = "postgres")]
    if wanted {
        let server = PgServer::start().map_err(IsolationError::PostgresStart)?;
        let result = f(Some(&server.conn_str()));
        server.stop();
        return result;
    }
    #[cfg(not(feature = "postgres"))]
    let _ = wanted;
    f(None)
}
