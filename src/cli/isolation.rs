//! `loadbearing isolation`: the SSI engine's variants (and PostgreSQL) raced through the
//! isolation tier, or a workload file's transactions raced freely.

use std::path::PathBuf;

use crate::isolation::{self, Engine, IsolationFormat, Options};
use crate::Verdict;

use super::format::Format;
use super::BadInput;

#[derive(clap::Args)]
pub struct Args {
    /// Attempts per scenario and store.
    #[arg(long, default_value_t = 40)]
    attempts: usize,
    /// Engine variants: `all`, `main` (fix, prefix, nocheck, dropmarkers, plainsi), `none`, or
    /// a comma-separated list of fix, prefix, nocheck, dropmarkers, plainsi, notrunning, noopt,
    /// prefix_noopt, readerunfixed, option2. Default: `all`; with --workload and an engine
    /// named, `none` (only the engines named run).
    #[arg(long)]
    variant: Option<String>,
    /// Only the scenarios whose name contains this.
    #[arg(long)]
    scenario: Option<String>,
    /// Start a throwaway PostgreSQL cluster and add its column (the same as --engine postgres).
    #[arg(long)]
    postgres: bool,
    /// Random pause before each step, up to this many microseconds.
    #[arg(long, default_value_t = 50)]
    jitter_us: u64,
    /// Tables for people, or JSON.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Write the engine's trace of each (variant, scenario)'s first attempt as NDJSON to
    /// `DIR/<variant>-<scenario>.ndjson`, for `loadbearing conform --trace FILE --model CONFIG`.
    #[arg(long, value_name = "DIR")]
    traces: Option<PathBuf>,
    /// Race a workload file's transactions (docs/workloads.md) instead of the tier's scenarios,
    /// and classify each store's histories: G2-item (write skew), G-single (lost update), ...
    #[arg(long, value_name = "FILE.toml")]
    workload: Option<PathBuf>,
    /// The same as --engine sqlite.
    #[arg(long)]
    sqlite: bool,
    /// The same as --engine skipdb.
    #[arg(long)]
    skipdb: bool,
    /// The same as --engine bdb.
    #[arg(long)]
    bdb: bool,
    /// The same as --engine badger.
    #[arg(long)]
    badger: bool,
    /// With --workload: drive at most this many of the workload's interleavings on each
    /// engine's column; beyond it they are sampled with --seed, and the output says so.
    #[arg(long, default_value_t = 1000, requires = "workload")]
    interleavings: usize,
    /// Drive every must-fail counterexample of the ssi suite (its schedule as begin, statements
    /// and commit) on the engines named (--engine NAME): a serializable engine
    /// must refuse each, snapshot isolation must commit its anomaly.
    #[arg(long, conflicts_with = "workload")]
    replay_suite: bool,
    /// Drive every workload file of DIR (expected/workloads: the five classic ones) on the
    /// engines named (--engine NAME): one table, a row per engine and
    /// workload.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["workload", "replay_suite"])]
    matrix: Option<PathBuf>,
    /// With --matrix: write the table as a page (how docs/isolation.md is written).
    #[arg(long, value_name = "FILE", requires = "matrix")]
    markdown: Option<PathBuf>,
    /// The seed of that sample.
    #[arg(long, default_value_t = 1, requires = "workload")]
    seed: u64,
    /// With --workload: drive only this interleaving on each engine, its steps named as
    /// Hermitage writes a test: "T1.begin T2.begin T1.1 T2.1 T1.commit T2.commit" (T<n>.<k> is
    /// the k-th statement; the end is T<n>.commit, or T<n>.abort for a transaction that
    /// aborts). Each step's result is in the JSON; the file's [schedule.expect] values are
    /// checked when this is its [schedule].
    #[arg(long, value_name = "STEPS", requires = "workload")]
    schedule: Option<String>,
    /// A real engine to drive, as often as you like: `postgres` (a throwaway cluster:
    /// SERIALIZABLE, REPEATABLE READ and READ COMMITTED; for the tier's scenarios, its
    /// SERIALIZABLE column),
    /// `sqlite` (serializable by locking), `skipdb` (crates.io; promises serializable snapshot
    /// isolation), `bdb` (Berkeley DB 5.3, snapshot isolation), `badger` (Badger v4, a Go
    /// module; promises serializable snapshot isolation), `mariadb` (a throwaway server of
    /// Debian's mariadb-server: InnoDB at SERIALIZABLE, REPEATABLE READ and READ COMMITTED).
    /// `postgres`, `bdb`, `badger` and `mariadb` are Cargo features; a build without one says
    /// so.
    #[arg(long, value_enum, value_name = "NAME")]
    engine: Vec<Engine>,
}

pub fn run(args: Args) -> Result<Verdict, BadInput> {
    // The flags' engines and --engine's, each once, in Engine::ALL's order.
    let flags = [
        (Engine::Postgres, args.postgres),
        (Engine::Sqlite, args.sqlite),
        (Engine::Skipdb, args.skipdb),
        (Engine::Bdb, args.bdb),
        (Engine::Badger, args.badger),
    ];
    let engines: Vec<Engine> = Engine::ALL
        .into_iter()
        .filter(|e| args.engine.contains(e) || flags.contains(&(*e, true)))
        .collect();
    // A workload on engines named runs on those engines alone: the model's variants race too
    // only when asked.
    let variant = args.variant.unwrap_or_else(|| {
        let engines_only = args.workload.is_some() && !engines.is_empty();
        if engines_only { "none" } else { "all" }.to_string()
    });
    let format = match args.format {
        Format::Table => IsolationFormat::Table,
        Format::Json => IsolationFormat::Json,
    };
    Ok(isolation::run(Options {
        attempts: args.attempts,
        variant,
        scenario: args.scenario,
        engines,
        jitter_us: args.jitter_us,
        format,
        traces: args.traces,
        workload: args.workload,
        interleave: isolation::Interleave {
            bound: args.interleavings,
            seed: args.seed,
            schedule: args.schedule,
        },
        replay_suite: args.replay_suite,
        matrix: args.matrix,
        markdown: args.markdown,
    })?)
}
