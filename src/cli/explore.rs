//! `loadbearing explore`: Stateright's web explorer on one config's model.

use crate::Verdict;

use super::configs::Suite;
use super::BadInput;

#[derive(clap::Args)]
pub struct Args {
    /// The config whose model to explore (`loadbearing list` names them).
    config: String,
    /// The port the explorer listens on, on 127.0.0.1 only.
    #[arg(long, default_value_t = 3000)]
    port: u16,
    /// Override a constant of the config: MaxOffset=3, Writers=2.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    sets: Vec<String>,
}

pub fn run(args: Args, suite: &Suite) -> Result<Verdict, BadInput> {
    let config = suite.one(&args.config, &args.sets)?;
    crate::explore::serve(&config, args.port)?;
    Ok(Verdict::AsExpected)
}
