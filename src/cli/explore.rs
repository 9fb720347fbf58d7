//! `loadbearing explore`: Stateright's web explorer on one config's model.

use loadbearing::Verdict;

use super::configs::Suite;
use super::BadInput;

#[derive(clap::Args)]
pub struct Args {
    config: String,
    #[arg(long, default_value_t = 3000)]
    port: u16,
    #[arg(long = "set", value_name = "NAME=VALUE")]
    sets: Vec<String>,
}

pub fn run(args: Args, suite: &Suite) -> Result<Verdict, BadInput> {
    let config = suite.one(&args.config, &args.sets)?;
    loadbearing::explore::serve(&config, args.port)?;
    Ok(Verdict::AsExpected)
}
