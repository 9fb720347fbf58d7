//! `loadbearing list`: every config with its model, constants and expected outcome.

use crate::render;
use crate::Verdict;

use super::configs::Suite;
use super::format::{pretty, Format};
use super::BadInput;

#[derive(clap::Args)]
pub struct Args {
    /// A table for people, or JSON (one object per config).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

pub fn run(args: Args, suite: &Suite) -> Result<Verdict, BadInput> {
    let configs = suite.load()?;
    match args.format {
        Format::Table => print!("{}", render::list_table(&configs)),
        Format::Json => println!("{}", pretty(&render::list_json(&configs))),
    }
    Ok(Verdict::AsExpected)
}
