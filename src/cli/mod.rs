//! The command line: one module per subcommand, each owning its arguments and a `run` that
//! says what it found as a [`Verdict`], or why the input was bad ([`BadInput`]). The library
//! modules of the same names do the work; these parse, print and judge.

mod bench;
mod check;
mod checking;
mod cluster;
mod completions;
mod configs;
mod conform;
mod conform_trace;
mod docs;
mod error;
mod explore;
mod format;
#[cfg(feature = "targets")]
mod isolation;
mod list;
mod mutate;
mod report;
#[cfg(feature = "actors")]
mod run_actors;
mod tlc_habits;
mod trace;

use std::path::PathBuf;
use std::process::ExitCode;

use crate::Verdict;
use clap::{Parser, Subcommand};

pub use error::BadInput;
pub use tlc_habits::tlc_style_option;

#[derive(Parser)]
#[command(
    name = "loadbearing",
    version,
    about = "Executable specifications that prove each concurrency guard is load-bearing"
)]
pub struct Cli {
    /// A suite file to use instead of the project's suites (expected/suites/*.toml, compiled in).
    #[arg(long, global = true)]
    suite: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the configs with their models, constants and expected outcomes.
    List(list::Args),
    /// Check configs against their expected outcomes: all of them, or those a FILTER selects.
    Check(check::Args),
    /// Print the shortest counterexample of one config: a swimlane, JSON, or a picture.
    Trace(trace::Args),
    /// Open Stateright's web explorer on one config's model (on 127.0.0.1).
    Explore(explore::Args),
    /// Regenerate docs/ from the configs and the snapshots (`--check`: only report stale files).
    Docs(docs::Args),
    /// Remove each guard of every holding config in turn: which properties catch it?
    /// Exit 1 when a guard nothing catches has no written reason in expected/guards.toml.
    Mutate(mutate::Args),
    /// Check implementations against their models: recorded traces must be behaviours of the
    /// model, and model paths replayed on the implementation must agree with it.
    Conform(conform::Args),
    /// Write a static HTML site of one check + mutate + conform run (readable offline, from
    /// file://): every config, the tower, the mutation and conformance tables, and a page per
    /// config with its counterexample drawn as a sequence diagram.
    Report(report::Args),
    /// Race the SSI engine's variants (and PostgreSQL) through the isolation tier.
    #[cfg(feature = "targets")]
    Isolation(isolation::Args),
    /// Run an actor model's code over UDP on loopback and check its log against the model.
    #[cfg(feature = "actors")]
    RunActors(run_actors::Args),
    /// Measure the engine on larger constants: states per second, bytes a state and peak
    /// memory, at 1 and 2 threads; with --tlc, TLC on the same constants and our ratio to it.
    Bench(bench::Args),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to stdout.
    Completions(completions::Args),
}

/// A design of your own for the CLI: the models your crate defines (each a
/// `loadbearing_registry::model_entry::<YourModel>()`), those among them that read your
/// implementation's traces (`loadbearing_registry::conformance_entry::<YourModel>()`), and your
/// suite file's text (`include_str!("suite.toml")`), which `check`, `mutate`, `trace`,
/// `explore` and `report` then use instead of the project's suites (`--suite FILE` still
/// overrides it). The built-in models stay available beside yours.
///
/// ```no_run
/// // In your crate's src/main.rs:
/// fn main() -> std::process::ExitCode {
///     loadbearing::cli::main_with(loadbearing::cli::Design {
///         models: vec![/* loadbearing_registry::model_entry::<MyModel>() */],
///         conformance: vec![],
///         suite: Some(("suite.toml", "suite = \"mine\"\n")),
///     })
/// }
/// ```
#[derive(Default)]
pub struct Design {
    pub models: Vec<loadbearing_registry::ModelEntry>,
    pub conformance: Vec<loadbearing_registry::ConformEntry>,
    /// The suite's name (for its errors) and its text.
    pub suite: Option<(&'static str, &'static str)>,
}

/// The project's CLI on the project's own models and suites.
pub fn main() -> ExitCode {
    main_with(Design::default())
}

/// The whole CLI on `design`: its models added to the built-in ones, its suite the default.
/// The one place a verdict becomes an exit code.
///
/// ```no_run
/// // src/main.rs of a design's crate: `cargo run -- check` checks the design's suite.
/// fn main() -> std::process::ExitCode {
///     loadbearing::main_with(loadbearing::Design {
///         models: vec![], // loadbearing::model_entry::<YourModel>(), …
///         conformance: vec![],
///         suite: Some(("suite.toml", "suite = \"mine\"\n")),
///     })
/// }
/// ```
pub fn main_with(design: Design) -> ExitCode {
    // Before the first search: a run of many searches gives back each one's large arrays.
    loadbearing_refinement::allocator::map_large_blocks();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(advice) = tlc_style_option(&args) {
        eprintln!("error: {advice}");
        return ExitCode::from(2);
    }
    if let Err(problem) = loadbearing_registry::install(design.models, design.conformance) {
        eprintln!("error: {problem}");
        return ExitCode::from(2);
    }
    let cli = Cli::parse_from(args);
    let verdict = match cli.run_on(design.suite) {
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

impl Cli {
    /// Runs the subcommand; `suite` (a name and a suite file's text) replaces the project's
    /// suites unless `--suite FILE` is given.
    pub fn run_on(self, suite: Option<(&'static str, &'static str)>) -> Result<Verdict, BadInput> {
        let suite = configs::Suite {
            file: self.suite,
            text: suite,
        };
        match self.command {
            Command::List(args) => list::run(args, &suite),
            Command::Check(args) => check::run(args, &suite),
            Command::Trace(args) => trace::run(args, &suite),
            Command::Explore(args) => explore::run(args, &suite),
            Command::Docs(args) => docs::run(args, &suite),
            Command::Mutate(args) => mutate::run(args, &suite),
            Command::Conform(args) => conform::run(args, &suite),
            Command::Report(args) => report::run(args, &suite),
            // The tier and the actor systems are built in: no config is read.
            #[cfg(feature = "targets")]
            Command::Isolation(args) => isolation::run(args),
            #[cfg(feature = "actors")]
            Command::RunActors(args) => run_actors::run(args),
            Command::Bench(args) => bench::run(args, &suite),
            Command::Completions(args) => completions::run(args),
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every argument of every subcommand says what it is for in `--help` (clap's own `--help`
    /// and `--version` aside): a newcomer reads the help, not the source.
    #[test]
    fn every_argument_has_help_text() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if matches!(id, "help" | "version") {
                    continue;
                }
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path} {id}"));
                }
            }
            for sub in cmd.get_subcommands() {
                if sub.get_about().is_none() && sub.get_long_about().is_none() {
                    missing.push(format!("{path} {} (the subcommand)", sub.get_name()));
                }
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&super::Cli::command(), "loadbearing", &mut missing);
        assert!(missing.is_empty(), "arguments without help: {missing:#?}");
    }
}
