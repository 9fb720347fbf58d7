//! `loadbearing conform`: the implementations checked against their models, both ways, target
//! by target; or (`--trace FILE --model CONFIG`) one trace file against one model.
//!
//! A target that cannot run (a server that does not start, a harness error) is reported as its
//! result and the run goes on. The verdict: incomplete (exit 2) when a target could not run,
//! else differs (1) when one did not show what it must, else as expected (0).

use std::path::PathBuf;

#[cfg(feature = "targets")]
use crate::conform_table;
#[cfg(feature = "targets")]
use crate::junit;
use crate::Verdict;
#[cfg(feature = "targets")]
use loadbearing_conform::{self as conform, BackendKind, Plan, Servers, TargetResult};
use loadbearing_refinement::budget;
use loadbearing_trace::TraceOptions;
use loadbearing_trace::{Budget, Limits};

use super::configs::Suite;
use super::conform_trace;
#[cfg(feature = "targets")]
use super::format::pretty;
use super::format::ResultFormat;
use super::BadInput;

#[derive(clap::Args)]
pub struct Args {
    /// Targets (`loadbearing conform --list` names them); when none, every target that
    /// runs on the backend, or on its embedded default when no backend is given.
    targets: Vec<String>,
    /// Where the implementations run. Without it each target uses its embedded default:
    /// SQLite for the stores and flows, the in-memory producer for the Kafka design, the
    /// engine itself for SSI. postgres, cassandra and kafka start a throwaway server.
    #[cfg(feature = "targets")]
    #[arg(long, value_parser = backend_kind)]
    backend: Option<BackendKind>,
    /// With --backend postgres|cassandra|kafka: use the server already running at this
    /// address (a PostgreSQL connection string, Cassandra's host:port, a Kafka bootstrap
    /// address) instead of starting a throwaway one. Targets get fresh tables, keyspaces
    /// and topics of their own.
    #[cfg(feature = "targets")]
    #[arg(long, value_name = "ADDRESS", requires = "backend")]
    server: Option<String>,
    /// List the targets, their backends and what each must show.
    #[arg(long)]
    list: bool,
    /// Traces per target (runs of the implementation; for replay, random walks).
    #[arg(long, default_value_t = 50)]
    traces: usize,
    /// Concurrent writers in the store races and group commits (1 to 8; the flows run one
    /// owner and two zombies, the Kafka design one owner and one zombie).
    #[arg(long, default_value_t = 8)]
    writers: usize,
    /// Seed of the offsets, the jitter and the random walks (printed when not given).
    #[arg(long)]
    seed: Option<u64>,
    /// Write every trace a target validates to `DIR/<target>/NNNN.ndjson` (histories with their
    /// call and return times), for `conform --trace FILE --model MODEL` or another checker.
    #[arg(long, value_name = "DIR")]
    save: Option<std::path::PathBuf>,
    /// A table for people, JSON (an object per target), or JUnit XML.
    #[arg(long, value_enum, default_value_t = ResultFormat::Table)]
    format: ResultFormat,
    /// Validate this NDJSON trace file instead (with --model).
    #[arg(long, requires = "model")]
    trace: Option<PathBuf>,
    /// The config (or model) the trace file is checked against.
    #[arg(long)]
    model: Option<String>,
    /// With --trace: override a constant of that config or model (MaxOffset=5).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    sets: Vec<String>,
    /// With --trace: how many configurations (operations placed, model state) the search may
    /// explore before it answers unknown (exit 2, `incomplete (configurations)`).
    #[arg(long, value_name = "N", default_value_t = Budget::DEFAULT_CONFIGURATIONS, requires = "trace")]
    max_configurations: u64,
    /// With --trace: stop the search after this many seconds (exit 2, `incomplete (time)`).
    #[arg(long, value_name = "SECONDS", requires = "trace")]
    timeout_secs: Option<u64>,
    /// With --trace: stop the search once the process holds this much memory (12G, 512M; exit
    /// 2, `incomplete (memory)`). Default: nine tenths of the machine's (or its cgroup's).
    #[arg(long, value_parser = budget::parse_size, requires = "trace")]
    max_memory: Option<u64>,
    /// With --trace: read a sequence as a history (each event returns before the next is
    /// called; one with no outcome never returns) and judge it by the history search.
    #[arg(long, requires = "trace")]
    as_history: bool,
}

/// `--backend`: the conformance crate's backend kinds, parsed in one place; clap lists them.
#[cfg(feature = "targets")]
fn backend_kind(text: &str) -> Result<BackendKind, conform::backend::UnknownBackend> {
    text.parse()
}

pub fn run(args: Args, suite: &Suite) -> Result<Verdict, BadInput> {
    if let (Some(file), Some(model)) = (&args.trace, &args.model) {
        let options = TraceOptions {
            limits: Limits {
                budget: Budget {
                    configurations: args.max_configurations,
                    time: args.timeout_secs.map(std::time::Duration::from_secs),
                    memory: args.max_memory.or_else(budget::default_max_memory),
                },
                ..Limits::default()
            },
            as_history: args.as_history,
            progress: Some(conform_trace::progress_line),
        };
        return conform_trace::run(suite, file, model, &args.sets, &options, args.format);
    }
    run_targets(args)
}

/// Without the project's implementations, only `--trace` judges anything.
#[cfg(not(feature = "targets"))]
fn run_targets(_: Args) -> Result<Verdict, BadInput> {
    Err(BadInput::NotBuiltIn {
        what: "conform's targets (the project's implementations; `conform --trace FILE` judges a trace in any build)",
        feature: "targets",
    })
}

/// Every selected target on its backend, then the table.
#[cfg(feature = "targets")]
fn run_targets(args: Args) -> Result<Verdict, BadInput> {
    if args.list {
        print!("{}", conform_table::targets());
        return Ok(Verdict::AsExpected);
    }
    if !(1..=8).contains(&args.writers) {
        return Err(BadInput::Writers(args.writers));
    }
    let plan = Plan::select(&args.targets, args.backend)?;
    let seed = args.seed.unwrap_or_else(seed_from_clock);
    let mut servers = Servers::default();
    if let (Some(kind), Some(address)) = (args.backend, args.server) {
        servers.attach(kind, address)?;
    }
    let results = plan.run(
        &mut servers,
        args.traces,
        args.writers,
        seed,
        args.save.as_deref(),
    );
    if let Some(dir) = &args.save {
        eprintln!(
            "conform: traces saved under {} (one folder a target; read one back with `conform --trace FILE --model MODEL`)",
            dir.display()
        );
    }
    match args.format {
        ResultFormat::Table => print!("{}", conform_table::table(&results)),
        ResultFormat::Json => println!(
            "{}",
            pretty(&serde_json::to_value(&results).expect("results serialize"))
        ),
        ResultFormat::Junit => print!(
            "{}",
            junit::xml(
                "loadbearing conform",
                &junit::grouped(junit::conform_cases(&results))
            )
        ),
    }
    eprintln!("seed {seed}: rerun with --seed {seed}");
    Ok(verdict(&results))
}

/// A seed for a run not given one: the clock's seconds (printed, so the run can be repeated).
#[cfg(feature = "targets")]
fn seed_from_clock() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(1)
}

/// Incomplete when a target could not run (what it would have shown is unknown), else as
/// expected when every target showed what it must.
#[cfg(feature = "targets")]
pub fn verdict(results: &[TargetResult]) -> Verdict {
    if results.iter().any(|r| r.error.is_some()) {
        Verdict::Incomplete
    } else {
        Verdict::of(results.iter().all(|r| r.ok))
    }
}
