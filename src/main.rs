//! `loadbearing`: check that every guard of a design is load-bearing.
//!
//! Every subcommand (src/cli/, one module each) returns one [`Verdict`]; `main` alone maps it
//! to an exit code: 0 every outcome as expected, 1 some outcome differs, 2 an incomplete run or
//! bad input.

use std::process::ExitCode;

use clap::Parser;
use loadbearing::Verdict;

mod cli;

/// The one place a verdict becomes an exit code.
fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(advice) = cli::tlc_style_option(&args) {
        eprintln!("error: {advice}");
        return ExitCode::from(2);
    }
    let verdict = match cli::Cli::parse_from(args).run() {
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
