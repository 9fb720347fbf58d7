//! `loadbearing check`: configs checked against their expected outcomes (on this process, or
//! distributed), or an SSI workload file against its `[expect]`.

use std::path::{Path, PathBuf};
use std::time::Duration;

#[cfg(feature = "targets")]
use crate::junit;
#[cfg(feature = "targets")]
use crate::workload::{self, WorkloadError};
use crate::Verdict;
use loadbearing_expected::suite::Config;
use loadbearing_refinement::budget;
use loadbearing_refinement::Options;

use super::checking::{check_with, Shown};
use super::cluster::{check_distributed, ClusterArgs};
use super::configs::{self, Suite};
use super::format::ResultFormat;
use super::BadInput;

#[derive(clap::Args)]
pub struct Args {
    /// A part of a config's name (`gc_`), or with a `/` of its address `suite/name`
    /// (`kafka-flow-835/` selects one suite).
    filters: Vec<String>,
    /// A table for people (with each counterexample), JSON (one array, an object per config)
    /// or JUnit XML.
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
    #[arg(long, value_parser = budget::parse_size)]
    max_memory: Option<u64>,
    /// A state without successors is a normal end of a run, not a deadlock, for every
    /// selected config (TLC's `-deadlock`; a config says so for itself with `end_states = true`
    /// in its suite entry).
    #[arg(long)]
    deadlock: bool,
    /// Reduce by a symmetry of the model (`Writers`): states that differ by a permutation
    /// of it are counted once, as TLC's SYMMETRY does. Safety and refinement only.
    #[arg(long)]
    symmetry: Vec<String>,
    /// Search every state even where the model declares a symmetry. By default a config
    /// without temporal properties or refinements, of a model that declares one (the
    /// first-write models' Writers), is searched one state an orbit, each orbit counted as
    /// the states it holds: the same counts, verdict and counterexample, sooner.
    #[arg(long, conflicts_with = "symmetry")]
    every_state: bool,
    #[command(flatten)]
    cluster: ClusterArgs,
    /// Instead of configs: every interleaving of an SSI workload file (docs/workloads.md)
    /// under each variant, its reachable anomalies classified, judged against its [expect].
    #[arg(long, value_name = "FILE.toml", conflicts_with = "filters")]
    workload: Option<PathBuf>,
    /// With --workload: the variants to check (default: those [expect] names, else all).
    #[arg(long = "variant", value_name = "NAME", requires = "workload")]
    variants: Vec<String>,
}

pub fn run(args: Args, suite: &Suite) -> Result<Verdict, BadInput> {
    if let Some(path) = &args.workload {
        return check_workload(path, &args.variants, args.format);
    }
    let mut selected = configs::select(suite.load()?, &args.filters)?;
    let sets = configs::parse_sets(&args.sets)?;
    for config in &mut selected {
        configs::override_constants(config, &sets)?;
        add_symmetry(config, &args.symmetry);
        config.end_states |= args.deadlock;
    }
    let options = Options {
        threads: args.threads,
        max_states: args.max_states,
        timeout: args.timeout_secs.map(Duration::from_secs),
        max_memory: args.max_memory.or_else(budget::default_max_memory),
        progress: None,
        every_temporal: false,
        by_orbits: !args.every_state,
    };
    if args.cluster.distributed {
        return check_distributed(selected, &options, args.format, &args.cluster);
    }
    let mut local =
        |config: &Config, options: &Options| loadbearing_expected::run::run(config, options);
    Ok(check_with(
        &selected,
        &options,
        args.format,
        Shown::Yes,
        0,
        &mut local,
    ))
}

/// `--symmetry`: each named symmetry the config does not already reduce by.
fn add_symmetry(config: &mut Config, symmetry: &[String]) {
    for name in symmetry {
        if !config.symmetry.contains(name) {
            config.symmetry.push(name.clone());
            // Orbits, not states: the reference count no longer applies.
            config.overridden = true;
        }
    }
}

/// `check --workload` in a build without the real engines' crates.
#[cfg(not(feature = "targets"))]
fn check_workload(_: &Path, _: &[String], _: ResultFormat) -> Result<Verdict, BadInput> {
    Err(BadInput::NotBuiltIn {
        what: "check --workload",
        feature: "targets",
    })
}

/// `check --workload`: as expected (0), differs (1), or a bad file (2, `FILE:LINE: message`).
#[cfg(feature = "targets")]
fn check_workload(
    path: &Path,
    variants: &[String],
    format: ResultFormat,
) -> Result<Verdict, BadInput> {
    let parsed = loadbearing_specs::ssi::file::load_file(path, workload::VARIANTS)
        .map_err(WorkloadError::File)?;
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
