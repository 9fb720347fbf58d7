//! `loadbearing mutate`: each guard of every holding config removed in turn, and which
//! properties catch it.

use clap::ValueEnum;
use loadbearing::junit;
use loadbearing::mutate;
use loadbearing::Verdict;
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
    filters: Vec<String>,
    #[arg(long, value_enum, default_value_t = MutateFormat::Table)]
    format: MutateFormat,
    #[arg(long, default_value_t = 0)]
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
    let coverage = mutate::mutate(&selected, &configs, &explanations, &options)?;
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
