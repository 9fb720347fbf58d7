//! `loadbearing`: check that every guard of a design is load-bearing.
//!
//! Every subcommand returns one [`Verdict`]; `main` alone maps it to an exit code: 0 every
//! outcome as expected, 1 some outcome differs, 2 an incomplete run or bad input.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand, ValueEnum};
use loadbearing::conform;
use loadbearing::junit;
use loadbearing::mutate;
use loadbearing::render;
use loadbearing::run::{distributable, run, run_distributed, Judged, RunError};
use loadbearing::suite::{self, Config};
use loadbearing::trace;
use loadbearing::Verdict;
use loadbearing_refinement::distributed::Cluster;
use loadbearing_refinement::Options;

mod run_actors;

#[derive(Parser)]
#[command(
    name = "loadbearing",
    version,
    about = "Executable specifications that prove each concurrency guard is load-bearing"
)]
struct Cli {
    /// A suite file to use instead of the project's suites (expected/suites/*.toml, compiled in).
    #[arg(long, global = true)]
    suite: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

/// Where this process stands in a distributed run (docs/distributed.md).
#[derive(clap::Args)]
struct ClusterArgs {
    /// Check on timely dataflow workers, states sharded over them: safety and refinement
    /// only. Every process of the run is started with the same configs and options.
    #[arg(long)]
    distributed: bool,
    /// With --distributed: worker threads in each process.
    #[arg(short = 'w', long, default_value_t = 1, requires = "distributed")]
    workers: usize,
    /// With --distributed: processes in the run.
    #[arg(short = 'n', long, default_value_t = 1, requires = "distributed")]
    processes: usize,
    /// With --distributed: this process's number, from 0; process 0 prints the report.
    #[arg(short = 'p', long, default_value_t = 0, requires = "distributed")]
    process: usize,
    /// With --distributed: each process's host:port, one a line, process 0 first (default:
    /// 127.0.0.1 from port 2101 up).
    #[arg(long, requires = "distributed")]
    hostfile: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Table,
    Json,
}

/// The formats of the commands that judge (check, conform): JUnit XML for CI besides.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ResultFormat {
    Table,
    Json,
    Junit,
}

#[derive(Clone, Copy, ValueEnum)]
enum MutateFormat {
    Table,
    Json,
    Markdown,
    Junit,
}

#[derive(Clone, Copy, ValueEnum)]
enum TraceFormat {
    Text,
    Json,
    Dot,
    Svg,
}

#[derive(Subcommand)]
enum Command {
    /// List the configs with their models, constants and expected outcomes.
    List {
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Check configs against their expected outcomes: all of them, or those a FILTER selects.
    Check {
        /// A part of a config's name (`gc_`), or with a `/` of its address `suite/name`
        /// (`kafka-flow-835/` selects one suite).
        filters: Vec<String>,
        #[arg(long, value_enum, default_value_t = ResultFormat::Table)]
        format: ResultFormat,
        /// Override a constant of the selected configs: MaxOffset=12, Writers=4, Guarded=false.
        #[arg(long = "set", value_name = "NAME=VALUE")]
        sets: Vec<String>,
        /// Worker threads (default: every core).
        #[arg(long, default_value_t = 0)]
        threads: usize,
        /// Stop a config after this many distinct states; it is then `incomplete`.
        #[arg(long)]
        max_states: Option<u64>,
        /// Stop a config after this many seconds; it is then `incomplete`.
        #[arg(long)]
        timeout_secs: Option<u64>,
        /// Stop a config once the process holds this much memory (12G, 512M); it is then
        /// `incomplete (memory)`. Default: nine tenths of the machine's (or its cgroup's).
        #[arg(long, value_parser = loadbearing_refinement::budget::parse_size)]
        max_memory: Option<u64>,
        /// Reduce by a symmetry of the model (`Writers`): states that differ by a permutation
        /// of it are counted once, as TLC's SYMMETRY does. Safety and refinement only.
        #[arg(long)]
        symmetry: Vec<String>,
        #[command(flatten)]
        cluster: ClusterArgs,
        /// Instead of configs: every interleaving of an SSI workload file (docs/workloads.md)
        /// under each variant, its reachable anomalies classified, judged against its [expect].
        #[arg(long, value_name = "FILE.toml", conflicts_with = "filters")]
        workload: Option<PathBuf>,
        /// With --workload: the variants to check (default: those [expect] names, else all).
        #[arg(long = "variant", value_name = "NAME", requires = "workload")]
        variants: Vec<String>,
    },
    /// Print the shortest counterexample of one config: a swimlane, JSON, or a picture.
    Trace {
        config: String,
        #[arg(long, value_enum, default_value_t = TraceFormat::Text)]
        format: TraceFormat,
        /// With dot or svg: the whole state graph of a small config, the counterexample in red.
        #[arg(long)]
        graph: bool,
        /// With --graph: refuse configs with more states than this.
        #[arg(long, default_value_t = 2000)]
        max_states: usize,
        #[arg(long = "set", value_name = "NAME=VALUE")]
        sets: Vec<String>,
    },
    /// Open Stateright's web explorer on one config's model (on 127.0.0.1).
    Explore {
        config: String,
        #[arg(long, default_value_t = 3000)]
        port: u16,
        #[arg(long = "set", value_name = "NAME=VALUE")]
        sets: Vec<String>,
    },
    /// Regenerate docs/ from the configs and the snapshots (`--check`: only report stale files).
    Docs {
        #[arg(long)]
        check: bool,
    },
    /// Remove each guard of every holding config in turn: which properties catch it?
    /// Exit 1 when a guard nothing catches has no written reason in expected/guards.toml.
    Mutate {
        filters: Vec<String>,
        #[arg(long, value_enum, default_value_t = MutateFormat::Table)]
        format: MutateFormat,
        #[arg(long, default_value_t = 0)]
        threads: usize,
    },
    /// Check implementations against their models: recorded traces must be behaviours of the
    /// model, and model paths replayed on the implementation must agree with it.
    Conform {
        /// Targets (`loadbearing conform --list` names them); when none, every target that
        /// runs on the backend, or on its embedded default when no backend is given.
        targets: Vec<String>,
        /// Where the implementations run. Without it each target uses its embedded default:
        /// SQLite for the stores and flows, the in-memory producer for the Kafka design, the
        /// engine itself for SSI. postgres, cassandra and kafka start a throwaway server.
        #[arg(long, value_parser = backend_kind)]
        backend: Option<conform::BackendKind>,
        /// With --backend postgres|cassandra|kafka: use the server already running at this
        /// address (a PostgreSQL connection string, Cassandra's host:port, a Kafka bootstrap
        /// address) instead of starting a throwaway one. Targets get fresh tables, keyspaces
        /// and topics of their own.
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
    },
    /// Write a static HTML site of one check + mutate + conform run (readable offline, from
    /// file://): every config, the tower, the mutation and conformance tables, and a page per
    /// config with its counterexample drawn as a sequence diagram.
    Report {
        /// The folder to write the site into (created if missing; its pages are replaced).
        #[arg(long)]
        out: PathBuf,
        /// Configs to check and mutate, as `check` selects them (none: every config).
        filters: Vec<String>,
        /// Conformance targets, as `conform` names them (none: every target on its embedded
        /// default).
        #[arg(long = "conform", value_name = "TARGET")]
        conform_targets: Vec<String>,
        /// Leave the conformance run out (the page says it was not run).
        #[arg(long, conflicts_with = "conform_targets")]
        no_conform: bool,
        /// Leave guard mutation out (the page says it was not run).
        #[arg(long)]
        no_mutate: bool,
        /// Conformance traces per target.
        #[arg(long, default_value_t = 10)]
        traces: usize,
        /// Seed of the conformance runs.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long, default_value_t = 0)]
        threads: usize,
    },
    /// Race the SSI engine's variants (and PostgreSQL) through the isolation tier.
    Isolation(loadbearing::isolation::Args),
    /// Run an actor model's code over UDP on loopback and check its log against the model.
    RunActors {
        /// The actor system: cassandra, kafka, epoch, group-commit or ssi.
        system: String,
        #[arg(long, default_value_t = 1500)]
        millis: u64,
        /// Save the log as NDJSON (the `actors` vocabulary), for `conform --trace`.
        #[arg(long)]
        out: Option<std::path::PathBuf>,
    },
    /// Measure the engine on larger constants: states per second, bytes a state and peak
    /// memory, at 1 and 2 threads; with --tlc, TLC on the same constants and our ratio to it.
    Bench {
        /// Only the runs whose label contains one of these (`cassandra`, `MaxOffset=400`).
        filters: Vec<String>,
        /// Thread counts to measure each run at (the speedup is over the first).
        #[arg(long, value_delimiter = ',', default_values_t = loadbearing::bench::THREADS.to_vec())]
        threads: Vec<usize>,
        /// Timely worker counts to measure each safety run at on the distributed engine, in
        /// this process (empty: none).
        #[arg(long, value_delimiter = ',', default_values_t = loadbearing::bench::TIMELY_WORKERS.to_vec())]
        timely: Vec<usize>,
        #[arg(long)]
        timeout_secs: Option<u64>,
        /// A TLA+ models folder of a suite (named after the suite, or a `models` folder inside
        /// one): run TLC on each benchmark's config there too. Repeat for several suites.
        #[arg(long, requires = "tla2tools")]
        tlc: Vec<PathBuf>,
        /// TLC's jar (tla2tools.jar), for --tlc.
        #[arg(long)]
        tla2tools: Option<PathBuf>,
        /// TLC's worker threads.
        #[arg(long, default_value_t = 2)]
        tlc_workers: usize,
    },
}

/// Bad input of any kind, reported as `error: …`: the one catch-all, here in `main` only; the
/// library modules return their own error enums.
type BadInput = Box<dyn std::error::Error>;

/// The one place a verdict becomes an exit code.
fn main() -> ExitCode {
    let verdict = match execute(Cli::parse()) {
        Ok(verdict) => verdict,
        Err(problem) => {
            eprintln!("error: {problem}");
            Verdict::BadInput
        }
    };
    match verdict {
        Verdict::AsExpected => ExitCode::SUCCESS,
        Verdict::Differs => ExitCode::from(1),
        Verdict::Incomplete | Verdict::BadInput => ExitCode::from(2),
    }
}

/// The configs `filters` pick; none is bad input, pointing at `loadbearing list`.
fn select(configs: Vec<Config>, filters: &[String]) -> Result<Vec<Config>, BadInput> {
    let selected = suite::select(configs, filters);
    if selected.is_empty() {
        return Err(BadInput::from(format!(
            "no config matches {filters:?}; `loadbearing list` shows them"
        )));
    }
    Ok(selected)
}

fn load(cli_suite: &Option<PathBuf>) -> Result<Vec<Config>, suite::SuiteError> {
    match cli_suite {
        Some(path) => suite::load(path),
        None => suite::built_in(),
    }
}

fn execute(cli: Cli) -> Result<Verdict, BadInput> {
    match cli.command {
        Command::List { format } => {
            let configs = load(&cli.suite)?;
            match format {
                Format::Table => print!("{}", render::list_table(&configs)),
                Format::Json => println!("{}", pretty(&render::list_json(&configs))),
            }
            Ok(Verdict::AsExpected)
        }
        Command::Check {
            filters,
            format,
            sets,
            threads,
            max_states,
            timeout_secs,
            max_memory,
            symmetry,
            cluster,
            workload,
            variants,
        } => {
            if let Some(path) = workload {
                return check_workload(&path, &variants, format);
            }
            let configs = load(&cli.suite)?;
            let mut selected = select(configs, &filters)?;
            let sets = sets
                .iter()
                .map(|s| suite::parse_set(s))
                .collect::<Result<Vec<_>, _>>()?;
            for config in &mut selected {
                suite::override_constants(config, &sets)
                    .map_err(|e| format!("{}: {e}", config.name))?;
                for name in &symmetry {
                    if !config.symmetry.contains(name) {
                        config.symmetry.push(name.clone());
                        // Orbits, not states: the reference count no longer applies.
                        config.overridden = true;
                    }
                }
            }
            let options = Options {
                threads,
                max_states,
                timeout: timeout_secs.map(Duration::from_secs),
                max_memory: max_memory.or_else(loadbearing_refinement::budget::default_max_memory),
                progress: false,
            };
            if cluster.distributed {
                return check_distributed(selected, &options, format, &cluster);
            }
            check(&selected, &options, format)
        }
        Command::Conform {
            targets,
            backend,
            server,
            traces,
            writers,
            seed,
            format,
            trace,
            model,
            sets,
            list,
        } => {
            if let (Some(file), Some(model)) = (trace, model) {
                return conform_file(&cli.suite, &file, &model, &sets, format);
            }
            if list {
                print!("{}", conform_targets());
                return Ok(Verdict::AsExpected);
            }
            if !(1..=8).contains(&writers) {
                return Err(BadInput::from(format!(
                    "--writers {writers}: the models hold 1 to 8 writers"
                )));
            }
            let plan = conform_plan(&targets, backend)?;
            let seed = seed.unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(1)
            });
            let mut servers = conform::Servers::default();
            if let (Some(kind), Some(address)) = (backend, server) {
                servers.attach(kind, address)?;
            }
            let results = conform_run(plan, &mut servers, traces, writers, seed)?;
            match format {
                ResultFormat::Table => print!("{}", conform_table(&results)),
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
            Ok(Verdict::of(results.iter().all(|r| r.ok)))
        }
        Command::Mutate {
            filters,
            format,
            threads,
        } => {
            let configs = load(&cli.suite)?;
            let selected = select(configs.clone(), &filters)?;
            let explanations = mutate::built_in_explanations()?;
            let options = Options {
                threads,
                ..Options::default()
            };
            let coverage = mutate::mutate(&selected, &configs, &explanations, &options)?;
            match format {
                MutateFormat::Table => print!("{}", mutate::table(&coverage)),
                MutateFormat::Json => println!(
                    "{}",
                    pretty(&serde_json::to_value(&coverage).expect("coverage serializes"))
                ),
                MutateFormat::Markdown => print!("{}", mutate::markdown(&coverage)),
                MutateFormat::Junit => print!(
                    "{}",
                    junit::xml(
                        "loadbearing mutate",
                        &junit::grouped(junit::mutate_cases(&coverage))
                    )
                ),
            }
            let unexplained = coverage.unexplained();
            for g in &unexplained {
                eprintln!(
                    "error: {} guard `{}` is not load-bearing: no property catches its removal, and expected/guards.toml gives no reason",
                    g.model, g.guard
                );
            }
            Ok(Verdict::of(unexplained.is_empty()))
        }
        Command::Trace {
            config,
            format,
            graph,
            max_states,
            sets,
        } => {
            let config = one_config(&cli.suite, &config, &sets)?;
            let traced = trace::trace(&config, &Options::default())?;
            if traced.counterexample().is_none() && !graph {
                eprintln!(
                    "{}: {} (expected {}): no counterexample to trace",
                    config.name,
                    render::actual(traced.judged.report.outcome()),
                    config.expected
                );
            } else {
                let dot = || {
                    if graph {
                        trace::graph_dot(&traced, max_states)
                    } else {
                        trace::path_dot(&traced)
                    }
                };
                match format {
                    TraceFormat::Text => print!("{}", trace::text(&traced)),
                    TraceFormat::Json => println!("{}", pretty(&trace::json(&traced))),
                    TraceFormat::Dot => print!("{}", dot()?),
                    // The path is a sequence diagram (no Graphviz); the state graph is Graphviz's.
                    TraceFormat::Svg if !graph => print!("{}", trace::sequence_svg(&traced)?),
                    TraceFormat::Svg => print!("{}", trace::svg(&dot()?)?),
                }
            }
            Ok(if traced.judged.incomplete() {
                Verdict::Incomplete
            } else {
                Verdict::of(traced.judged.ok())
            })
        }
        Command::Explore { config, port, sets } => {
            let config = one_config(&cli.suite, &config, &sets)?;
            loadbearing::explore::serve(&config, port)?;
            Ok(Verdict::AsExpected)
        }
        Command::Docs { check } => {
            let configs = load(&cli.suite)?;
            let stale = loadbearing::docs::write(&configs, check)?;
            if check && !stale.is_empty() {
                for path in &stale {
                    eprintln!("out of date: {path}");
                }
                eprintln!("regenerate with `cargo run -- docs`");
                return Ok(Verdict::Differs);
            }
            Ok(Verdict::AsExpected)
        }
        Command::Report {
            out,
            filters,
            conform_targets,
            no_conform,
            no_mutate,
            traces,
            seed,
            threads,
        } => {
            let configs = load(&cli.suite)?;
            let selected = select(configs.clone(), &filters)?;
            let plan = if no_conform {
                Vec::new()
            } else {
                conform_plan(&conform_targets, None)?
            };
            let explanations = mutate::built_in_explanations()?;
            let options = Options {
                threads,
                max_memory: loadbearing_refinement::budget::default_max_memory(),
                progress: true,
                ..Options::default()
            };
            let mut judged = Vec::new();
            let mut failures = Vec::new();
            for (n, config) in selected.iter().enumerate() {
                eprintln!(
                    "report: check {}/{} {}/{}",
                    n + 1,
                    selected.len(),
                    config.suite,
                    config.name
                );
                match run(config, &options) {
                    Ok(j) => judged.push(j),
                    Err(e) => {
                        eprintln!("error: {}: {e}", config.name);
                        failures.push(junit::RunFailure {
                            suite: config.suite.clone(),
                            config: config.name.clone(),
                            error: e.to_string(),
                        });
                    }
                }
            }
            let coverage = if no_mutate {
                None
            } else {
                eprintln!("report: guard mutation of {} configs", selected.len());
                Some(mutate::mutate(
                    &selected,
                    &configs,
                    &explanations,
                    &options,
                )?)
            };
            let results = conform_run(plan, &mut conform::Servers::default(), traces, 8, seed)?;
            let command = std::env::args().collect::<Vec<_>>().join(" ");
            let inputs = loadbearing::report::Inputs {
                judged: &judged,
                failures: &failures,
                coverage: coverage.as_ref(),
                conformance: &results,
                command: &command,
            };
            let pages = loadbearing::report::write(&out, &inputs)?;
            eprintln!(
                "report: {} ({} files)",
                out.join("index.html").display(),
                pages.len()
            );
            let all_ok = judged.iter().all(|j| j.ok())
                && coverage.as_ref().is_none_or(|c| c.unexplained().is_empty())
                && results.iter().all(|r| r.ok);
            Ok(if !failures.is_empty() {
                Verdict::BadInput
            } else if judged.iter().any(|j| j.incomplete()) {
                Verdict::Incomplete
            } else {
                Verdict::of(all_ok)
            })
        }
        Command::Isolation(args) => Ok(loadbearing::isolation::run(args)?),
        Command::RunActors {
            system,
            millis,
            out,
        } => Ok(run_actors::main(&system, millis, out)?),
        Command::Bench {
            filters,
            threads,
            timely,
            timeout_secs,
            tlc,
            tla2tools,
            tlc_workers,
        } => {
            let configs = load(&cli.suite)?;
            let tlc = tla2tools.map(|jar| loadbearing::tlc::Tlc {
                jar,
                models: tlc,
                workers: tlc_workers,
            });
            let results = loadbearing::bench::measure(
                &configs,
                &filters,
                &threads,
                &timely,
                timeout_secs.map(Duration::from_secs),
                tlc.as_ref(),
            )?;
            print!("{}", loadbearing::bench::table(&results));
            // A filtered bench measures the runs it names; the whole bench, conformance too.
            if filters.is_empty() {
                let conformance = loadbearing::bench::measure_conformance()?;
                println!();
                print!("{}", loadbearing::bench::conformance_table(&conformance));
            }
            Ok(Verdict::AsExpected)
        }
    }
}

/// One config by its exact name, with `--set` overrides applied.
fn one_config(
    suite_path: &Option<PathBuf>,
    name: &str,
    sets: &[String],
) -> Result<Config, BadInput> {
    let configs = load(suite_path)?;
    let mut config = suite::find(&configs, name)?.clone();
    let sets = sets
        .iter()
        .map(|s| suite::parse_set(s))
        .collect::<Result<Vec<_>, _>>()?;
    suite::override_constants(&mut config, &sets).map_err(|e| format!("{}: {e}", config.name))?;
    Ok(config)
}

fn check(
    selected: &[Config],
    options: &Options,
    format: ResultFormat,
) -> Result<Verdict, BadInput> {
    let mut local = |config: &Config, options: &Options| run(config, options);
    Ok(check_with(
        selected,
        options,
        format,
        Shown::Yes,
        0,
        &mut local,
    ))
}

/// Whether this worker prints the report (of a distributed run's workers, one does).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shown {
    Yes,
    No,
}

/// Runs the configs of a distributed run on this process's workers, once every process has
/// connected. Configs it cannot check (temporal properties, actor models) are named first and
/// make the run's verdict bad input; the others are checked.
fn check_distributed(
    selected: Vec<Config>,
    options: &Options,
    format: ResultFormat,
    args: &ClusterArgs,
) -> Result<Verdict, BadInput> {
    let cluster = Cluster::new(
        args.workers,
        args.processes,
        args.process,
        args.hostfile.as_deref(),
    )
    .map_err(|e| e.to_string())?;
    let leader = cluster.process == 0;
    let mut runnable = Vec::new();
    let mut refused = 0;
    for config in selected {
        match distributable(&config) {
            Ok(()) => runnable.push(config),
            Err(e) => {
                refused += 1;
                if leader {
                    eprintln!("error: {}: {e}", config.name);
                }
            }
        }
    }
    if runnable.is_empty() {
        return Err(BadInput::from(
            "no selected config can be checked distributed (see above)".to_string(),
        ));
    }
    if leader {
        eprintln!(
            "distributed: {} configs on {} workers ({} processes × {}), waiting for every process",
            runnable.len(),
            cluster.peers(),
            cluster.processes,
            cluster.workers
        );
    }
    let runnable = std::sync::Arc::new(runnable);
    let options = options.clone();
    let errors_before = refused;
    let verdicts = cluster
        .run(move |worker| {
            let shown = if leader && worker.index() == 0 {
                Shown::Yes
            } else {
                Shown::No
            };
            let mut on_worker =
                |config: &Config, options: &Options| run_distributed(worker, config, options);
            check_with(
                &runnable,
                &options,
                format,
                shown,
                errors_before,
                &mut on_worker,
            )
        })
        .map_err(|e| e.to_string())?;
    if !leader {
        eprintln!(
            "process {} of {}: done; process 0 prints the report",
            cluster.process, cluster.processes
        );
    }
    Ok(verdicts[0])
}

/// Checks each config with `run`, printing the table or JSON when `shown`; `errors_before`
/// configs were already refused (and reported) before these.
fn check_with(
    selected: &[Config],
    options: &Options,
    format: ResultFormat,
    shown: Shown,
    errors_before: usize,
    run: &mut dyn FnMut(&Config, &Options) -> Result<Judged, RunError>,
) -> Verdict {
    let started = Instant::now();
    let shown = shown == Shown::Yes;
    let widths = render::Widths::fitting(selected);
    if let (ResultFormat::Table, true) = (format, shown) {
        println!("{}", render::table_header(widths));
    }
    let mut judged: Vec<Judged> = Vec::new();
    let mut errors = errors_before;
    let mut failures: Vec<junit::RunFailure> = Vec::new();
    let mut suite_shown: Option<&str> = None;
    for config in selected {
        let options = Options {
            progress: shown,
            ..options.clone()
        };
        // Two suites may share a config name: the heading says which suite a row is in.
        if let (ResultFormat::Table, true) = (format, shown) {
            if suite_shown != Some(config.suite.as_str()) {
                println!("{}", render::suite_heading(&config.suite));
                suite_shown = Some(&config.suite);
            }
        }
        match run(config, &options) {
            Ok(j) => {
                if let (ResultFormat::Table, true) = (format, shown) {
                    println!("{}", render::table_row(&j, widths));
                }
                judged.push(j);
            }
            Err(e) => {
                // One bad config is reported and the run goes on; the exit code remembers it.
                if shown {
                    eprintln!("error: {}: {e}", config.name);
                }
                failures.push(junit::RunFailure {
                    suite: config.suite.clone(),
                    config: config.name.clone(),
                    error: e.to_string(),
                });
                errors += 1;
            }
        }
    }
    let ok = judged.iter().filter(|j| j.ok()).count();
    let incomplete = judged.iter().filter(|j| j.incomplete()).count();
    match format {
        _ if !shown => {}
        ResultFormat::Json => {
            let array: Vec<_> = judged.iter().map(render::judged_json).collect();
            println!("{}", pretty(&serde_json::Value::Array(array)));
        }
        ResultFormat::Junit => print!(
            "{}",
            junit::xml(
                "loadbearing check",
                &junit::grouped(junit::check_cases(&judged, &failures))
            )
        ),
        ResultFormat::Table => println!(
            "\n{ok} of {} configs as expected ({incomplete} incomplete, {errors} errors) in {:.2}s",
            selected.len() + errors_before,
            started.elapsed().as_secs_f64()
        ),
    }
    // One bad config was reported and the run went on; the verdict remembers it.
    if errors > 0 {
        Verdict::BadInput
    } else if incomplete > 0 {
        Verdict::Incomplete
    } else {
        Verdict::of(ok == judged.len())
    }
}

fn conform_table(results: &[conform::TargetResult]) -> String {
    let mut out = String::new();
    for r in results {
        let verdict = if r.ok { "ok" } else { "FAILED" };
        out.push_str(&format!(
            "{:<20} {:<20} {:<9} {} traces, {} events or steps: {} conforming, {} diverging (expected: {}) {verdict} {:.2}s ({:.3}s validating)\n",
            r.target,
            r.model,
            r.backend,
            r.traces,
            r.events.max(r.steps),
            r.conforming,
            r.divergent_traces,
            r.expected.name(),
            r.seconds,
            r.validation_seconds
        ));
        if let Some(d) = r.divergences.first() {
            for line in d.text().lines() {
                out.push_str(&format!("    {line}\n"));
            }
        }
        for replay in &r.replays {
            out.push_str(&format!(
                "    replayed {} ({}): broken: {}; guarded: {}\n",
                replay.config,
                replay.steps.join(", "),
                replay.broken,
                replay.guarded
            ));
        }
        for m in r.mismatches.iter().take(5) {
            out.push_str(&format!("    mismatch: {m}\n"));
        }
    }
    out
}

/// The conformance targets to run and where: those named, or every target that runs on the
/// backend asked for (on its embedded default when none is). Every check is made before anything
/// runs: a target on a backend it does not run on, or a server backend left out of this build,
/// is bad input, so nothing is silently skipped.
fn conform_plan(
    targets: &[String],
    wanted: Option<conform::BackendKind>,
) -> Result<Vec<(&'static dyn conform::Target, conform::BackendKind)>, BadInput> {
    let targets: Vec<&'static dyn conform::Target> = if targets.is_empty() {
        conform::targets::ALL
            .iter()
            .copied()
            .filter(|t| match wanted {
                Some(kind) => t.backends().contains(&kind),
                // The embedded defaults: a target whose default is a server (the
                // compound) runs only when its backend is asked for.
                None => t.backends()[0].embedded(),
            })
            .collect()
    } else {
        targets
            .iter()
            .map(|t| conform::targets::find(t).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()?
    };
    let mut plan = Vec::new();
    for target in targets {
        let kind = wanted.unwrap_or(target.backends()[0]);
        conform::target::check_backend(target, kind)?;
        plan.push((target, kind));
    }
    // The replay data names targets of the table (before anything runs).
    conform::targets::replays()?;
    Ok(plan)
}

/// Runs a conformance plan, starting each server it needs once (unless one is attached).
fn conform_run(
    plan: Vec<(&'static dyn conform::Target, conform::BackendKind)>,
    servers: &mut conform::Servers,
    traces: usize,
    writers: usize,
    seed: u64,
) -> Result<Vec<conform::TargetResult>, BadInput> {
    let mut results = Vec::new();
    for (target, kind) in plan {
        let backend = servers.backend(kind)?;
        eprintln!(
            "conform: {} on {} (seed {seed})",
            target.name(),
            backend.name()
        );
        let settings = conform::Settings {
            backend,
            traces,
            writers,
            seed,
        };
        results.push(conform::run(target, &settings)?);
    }
    Ok(results)
}

/// `--backend`: the conformance crate's backend kinds, parsed in one place; clap lists them.
fn backend_kind(text: &str) -> Result<conform::BackendKind, conform::backend::UnknownBackend> {
    text.parse()
}

/// `conform --list`: every target, where it runs and what it must show.
fn conform_targets() -> String {
    let mut out = String::new();
    for t in conform::targets::ALL {
        let backends: Vec<&str> = t.backends().iter().map(|b| b.name()).collect();
        out.push_str(&format!(
            "{:<22} {:<9} on {}\n",
            t.name(),
            t.expect().name(),
            backends.join(", ")
        ));
    }
    out
}

/// `conform --trace FILE --model CONFIG`: one trace file against one model.
fn conform_file(
    suite_path: &Option<PathBuf>,
    file: &std::path::Path,
    model: &str,
    sets: &[String],
    format: ResultFormat,
) -> Result<Verdict, BadInput> {
    use loadbearing_specs::infra::knobs::Constants;
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let configs = load(suite_path)?;
    let (model_name, mut given) = match suite::find(&configs, model) {
        Ok(config) => (config.model.to_string(), config.constants.values().clone()),
        // Not a config: perhaps a model's name.
        Err(suite::LookupError::NotFound { .. }) => (model.to_string(), Constants::new()),
    };
    let (resolve, validate) = loadbearing_registry::conformance(&model_name).ok_or_else(|| {
        format!(
            "`{model}` is neither a config nor a model that reads implementation traces ({})",
            loadbearing_registry::conformance_models().join(", ")
        )
    })?;
    for set in sets {
        let (name, value) = suite::parse_set(set)?;
        given.insert(name, value);
    }
    let constants = resolve(&given)?;
    let verdict = validate(
        &constants,
        &text,
        loadbearing_refinement::conform::Limits::default(),
    )
    .map_err(|e| format!("{}: {e}", file.display()))?;
    match format {
        ResultFormat::Json => println!(
            "{}",
            pretty(&serde_json::to_value(&verdict).expect("verdicts serialize"))
        ),
        ResultFormat::Junit => {
            let outcome = match &verdict.divergence {
                None => junit::CaseOutcome::Passed,
                Some(d) => junit::CaseOutcome::Failed {
                    message: format!("the trace does not conform to {model_name}"),
                    text: d.text(),
                },
            };
            let case = junit::Case {
                classname: "conform.trace".to_string(),
                name: file.display().to_string(),
                seconds: 0.0,
                outcome,
            };
            print!(
                "{}",
                junit::xml("loadbearing conform", &junit::grouped(vec![case]))
            );
        }
        ResultFormat::Table => match &verdict.divergence {
            None => println!(
                "{}: {} events conform to {model_name}; model path: {}",
                file.display(),
                verdict.events,
                verdict.witness.clone().unwrap_or_default().join(", ")
            ),
            Some(d) => print!(
                "{}: does not conform to {model_name}\n{}",
                file.display(),
                d.text()
            ),
        },
    }
    Ok(Verdict::of(verdict.conforming))
}

/// `check --workload`: as expected (0), differs (1), or a bad file (2, `FILE:LINE: message`).
fn check_workload(
    path: &Path,
    variants: &[String],
    format: ResultFormat,
) -> Result<Verdict, BadInput> {
    use loadbearing::workload;
    let parsed = loadbearing_specs::ssi::file::load_file(path, workload::VARIANTS)?;
    let report = workload::check_file(path, &parsed, variants)?;
    match format {
        ResultFormat::Table => print!("{}", workload::render(&report, &parsed)),
        ResultFormat::Junit => print!(
            "{}",
            junit::xml(
                "loadbearing check --workload",
                &junit::grouped(junit::workload_cases(&report))
            )
        ),
        ResultFormat::Json => println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("reports serialize")
        ),
    }
    Ok(if report.incomplete() {
        Verdict::Incomplete
    } else {
        Verdict::of(report.as_expected())
    })
}

fn pretty(value: &serde_json::Value) -> String {
    serde_json::to_string_pretty(value).expect("JSON values serialize")
}
