//! `loadbearing report`: a static HTML site of one check + mutate + conform run (readable
//! offline, from file://).

use loadbearing_expected::progress::ProgressLine;
use std::path::PathBuf;

use crate::junit;
use crate::mutate;
use crate::Verdict;
#[cfg(feature = "targets")]
use loadbearing_conform::{Plan, Servers};
use loadbearing_refinement::{budget, Options};

use super::configs::{self, Suite};
use super::BadInput;

/// The writers of the report's conformance runs: `conform`'s default.
#[cfg(feature = "targets")]
const CONFORM_WRITERS: usize = 8;

#[derive(clap::Args)]
pub struct Args {
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
    /// Worker threads of each check and mutant (default: every core; `--workers`, TLC's
    /// word, is the same here).
    #[arg(long, visible_alias = "workers", default_value_t = 0)]
    threads: usize,
}

/// Bad input when a config could not be checked; incomplete when one hit a budget or a
/// conformance target could not run; otherwise as expected when everything is.
pub fn run(args: Args, suite: &Suite) -> Result<Verdict, BadInput> {
    let configs = suite.load()?;
    let selected = configs::select(configs.clone(), &args.filters)?;
    #[cfg(feature = "targets")]
    let plan = if args.no_conform {
        Plan::default()
    } else {
        Plan::select(&args.conform_targets, None)?
    };
    #[cfg(not(feature = "targets"))]
    if !args.conform_targets.is_empty() {
        return Err(BadInput::NotBuiltIn {
            what: "report --conform",
            feature: "targets",
        });
    }
    let explanations = mutate::built_in_explanations()?;
    let options = Options {
        threads: args.threads,
        max_memory: budget::default_max_memory(),
        progress: Some(ProgressLine::reporting("")),
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
        match loadbearing_expected::run::run(config, &options) {
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
    let coverage = if args.no_mutate {
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
    #[cfg(feature = "targets")]
    let results = plan.run(
        &mut Servers::default(),
        args.traces,
        CONFORM_WRITERS,
        args.seed,
        None,
    );
    #[cfg(not(feature = "targets"))]
    let results: Vec<crate::report::Conformance> = {
        let _ = (args.traces, args.seed);
        Vec::new()
    };
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let inputs = crate::report::Inputs {
        judged: &judged,
        failures: &failures,
        coverage: coverage.as_ref(),
        conformance: &results,
        command: &command,
    };
    let pages = crate::report::write(&args.out, &inputs)?;
    eprintln!(
        "report: {} ({} files)",
        args.out.join("index.html").display(),
        pages.len()
    );
    let all_ok = judged.iter().all(|j| j.ok())
        && coverage.as_ref().is_none_or(|c| c.unexplained().is_empty())
        && conformance_ok(&results);
    let conform_incomplete = conformance_incomplete(&results);
    Ok(if !failures.is_empty() {
        Verdict::BadInput
    } else if judged.iter().any(|j| j.incomplete()) || conform_incomplete {
        Verdict::Incomplete
    } else {
        Verdict::of(all_ok)
    })
}

/// Every conformance target showed what it must.
#[cfg(feature = "targets")]
fn conformance_ok(results: &[crate::report::Conformance]) -> bool {
    results.iter().all(|r| r.ok)
}

/// A conformance target could not run.
#[cfg(feature = "targets")]
fn conformance_incomplete(results: &[crate::report::Conformance]) -> bool {
    results.iter().any(|r| r.error.is_some())
}

#[cfg(not(feature = "targets"))]
fn conformance_ok(_: &[crate::report::Conformance]) -> bool {
    true
}

#[cfg(not(feature = "targets"))]
fn conformance_incomplete(_: &[crate::report::Conformance]) -> bool {
    false
}
