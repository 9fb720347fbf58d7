//! `loadbearing`: check that every guard of a design is load-bearing.
//!
//! Every subcommand (src/cli/, one module each, in the library so that a crate of your own can
//! run the same CLI on its own design) returns one verdict; `loadbearing::cli::main` alone maps
//! it to an exit code: 0 every outcome as expected, 1 some outcome differs, 2 an incomplete run
//! or bad input.

use std::process::ExitCode;

/// The project's own design: the built-in models and suites.
fn main() -> ExitCode {
    loadbearing::cli::main()
}
