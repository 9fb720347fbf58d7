//! `loadbearing completions SHELL`: the shell's completion script for every subcommand, flag
//! and value list, from the same definitions the parser uses (clap_complete).

use crate::Verdict;
use clap::CommandFactory;

use super::{BadInput, Cli};

#[derive(clap::Args)]
pub struct Args {
    /// The shell to complete in: bash, zsh, fish, elvish or powershell. Install with, e.g.,
    /// `loadbearing completions bash > /etc/bash_completion.d/loadbearing`, or
    /// `loadbearing completions fish > ~/.config/fish/completions/loadbearing.fish`.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

pub fn run(args: Args) -> Result<Verdict, BadInput> {
    clap_complete::generate(
        args.shell,
        &mut Cli::command(),
        "loadbearing",
        &mut std::io::stdout(),
    );
    Ok(Verdict::AsExpected)
}
