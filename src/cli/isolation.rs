//! `loadbearing isolation`: the SSI engine's variants (and PostgreSQL) raced through the
//! isolation tier, or a workload file's transactions raced freely.

use std::path::PathBuf;

use loadbearing::isolation::{self, IsolationFormat, Options};
use loadbearing::Verdict;

use super::format::Format;
use super::BadInput;

#[derive(clap::Args)]
pub struct Args {
    /// Attempts per scenario and store.
    #[arg(long, default_value_t = 40)]
    attempts: usize,
    /// Engine variants: `all`, `main` (fix, prefix, nocheck, dropmarkers, plainsi), `none`, or
    /// a comma-separated list of fix, prefix, nocheck, dropmarkers, plainsi, notrunning, noopt,
    /// prefix_noopt, readerunfixed, option2.
    #[arg(long, default_value = "all")]
    variant: String,
    /// Only the scenarios whose name contains this.
    #[arg(long)]
    scenario: Option<String>,
    /// Start a throwaway PostgreSQL cluster and add its column.
    #[arg(long)]
    postgres: bool,
    /// Random pause before each step, up to this many microseconds.
    #[arg(long, default_value_t = 50)]
    jitter_us: u64,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Write the engine's trace of each (variant, scenario)'s first attempt as NDJSON to
    /// DIR/<variant>-<scenario>.ndjson, for `loadbearing conform --trace FILE --model CONFIG`.
    #[arg(long, value_name = "DIR")]
    traces: Option<PathBuf>,
    /// Race a workload file's transactions (docs/workloads.md) instead of the tier's scenarios,
    /// and classify each store's histories: G2-item (write skew), G-single (lost update), ...
    #[arg(long, value_name = "FILE.toml")]
    workload: Option<PathBuf>,
    /// Drive the workload's every interleaving on SQLite too (serializable by locking), in a
    /// database file of its own.
    #[arg(long)]
    sqlite: bool,
    /// Drive it on skipdb too (crates.io; its `serializable_write` transactions promise
    /// serializable snapshot isolation), in memory.
    #[arg(long)]
    skipdb: bool,
    /// With --workload: drive at most this many of the workload's interleavings on each of
    /// PostgreSQL's levels and SQLite; beyond it they are sampled with --seed, and the output
    /// says so.
    #[arg(long, default_value_t = 1000, requires = "workload")]
    interleavings: usize,
    /// Drive every must-fail counterexample of the ssi suite (its schedule as begin, statements
    /// and commit) on the engines named (--postgres, --sqlite, --skipdb): a serializable engine
    /// must refuse each, snapshot isolation must commit its anomaly.
    #[arg(long, conflicts_with = "workload")]
    replay_suite: bool,
    /// Drive every workload file of DIR (expected/workloads: the five classic ones) on the
    /// engines named (--postgres, --sqlite, --skipdb): one table, a row per engine and
    /// workload.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["workload", "replay_suite"])]
    matrix: Option<PathBuf>,
    /// With --matrix: write the table as a page (how docs/isolation.md is written).
    #[arg(long, value_name = "FILE", requires = "matrix")]
    markdown: Option<PathBuf>,
    /// The seed of that sample.
    #[arg(long, default_value_t = 1, requires = "workload")]
    seed: u64,
    /// An engine by name, as often as you like: `postgres` (SERIALIZABLE and REPEATABLE
    /// READ), `sqlite`, `skipdb` (the same as --postgres, --sqlite, --skipdb).
    #[arg(long, value_enum, value_name = "NAME")]
    engine: Vec<Engine>,
}

/// The engines `--engine` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Engine {
    Postgres,
    Sqlite,
    Skipdb,
}

pub fn run(args: Args) -> Result<Verdict, BadInput> {
    let named = |e: Engine| args.engine.contains(&e);
    let format = match args.format {
        Format::Table => IsolationFormat::Table,
        Format::Json => IsolationFormat::Json,
    };
    Ok(isolation::run(Options {
        attempts: args.attempts,
        variant: args.variant,
        scenario: args.scenario,
        postgres: args.postgres || named(Engine::Postgres),
        jitter_us: args.jitter_us,
        format,
        traces: args.traces,
        workload: args.workload,
        interleave: isolation::Interleave {
            bound: args.interleavings,
            seed: args.seed,
            sqlite: args.sqlite || named(Engine::Sqlite),
            skipdb: args.skipdb || named(Engine::Skipdb),
        },
        replay_suite: args.replay_suite,
        matrix: args.matrix,
        markdown: args.markdown,
    })?)
}
