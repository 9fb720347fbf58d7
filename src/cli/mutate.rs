//! `loadbearing mutate`: each guard of every holding config removed in turn, and which
//! properties catch it.

use crate::junit;
use crate::mutate;
use crate::Verdict;
use clap::ValueEnum;
use loadbearing_refinement::Options;

use super::configs::{self, Suite};
use super::format::pretty;
use super::BadInput;

#[derive(Clone, Copy, ValueEnum)]
enum MutateFormat {
    Table,
    Json,
    Markdown,
    Junit,
}

#[derive(clap::Args)]
pub struct Args {
    /// Only the holding configs whose name contains one of these (`cassandra`), or with a `/`
    /// whose address `suite/name` does (`kafka-flow-835/`).
    filters: Vec<String>,
    /// The coverage as a table for people, JSON, the Markdown of docs/mutation.md, or JUnit XML.
    #[arg(long, value_enum, default_value_t = MutateFormat::Table)]
    format: MutateFormat,
    /// Worker threads of each check (default: every core; `--workers`, TLC's
    /// word, is the same here).
    #[arg(long, visible_alias = "workers", default_value_t = 0)]
    threads: usize,
}

/// Differs when a guard nothing catches has no written reason in expected/guards.toml.
pub fn run(args: Args, suite: &Suite) -> Result<Verdict, BadInput> {
    let configs = suite.load()?;
    let selected = configs::select(configs.clone(), &args.filters)?;
    let explanations = mutate::built_in_explanations()?;
    let options = Options {
        threads: args.threads,
        ..Options::default()
    };
    // A progress line per mutant on stderr: the whole run takes minutes.
    let started = std::time::Instant::now();
    let mut progress = |p: mutate::Progress<'_>| {
        eprintln!(
            "mutate: {}/{} {} without {}: {} ({:.1} s)",
            p.done,
            p.total,
            p.mutant.config,
            p.mutant.guard,
            mutate::result_text(p.mutant),
            p.seconds
        );
    };
    let coverage =
        mutate::mutate_with_progress(&selected, &configs, &explanations, &options, &mut progress)?;
    eprintln!(
        "mutate: {} in {:.1} s",
        coverage.summary(),
        started.elapsed().as_secs_f64()
    );
    match args.format {
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
