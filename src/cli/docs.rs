//! `loadbearing docs`: docs/ regenerated from the configs and the snapshots, or (`--check`)
//! only the stale files named.

use loadbearing::Verdict;

use super::configs::Suite;
use super::BadInput;

#[derive(clap::Args)]
pub struct Args {
    #[arg(long)]
    check: bool,
}

pub fn run(args: Args, suite: &Suite) -> Result<Verdict, BadInput> {
    let configs = suite.load()?;
    let stale = loadbearing::docs::write(&configs, args.check)?;
    if args.check && !stale.is_empty() {
        for path in &stale {
            eprintln!("out of date: {path}");
        }
        eprintln!("regenerate with `cargo run -- docs`");
        return Ok(Verdict::Differs);
    }
    Ok(Verdict::AsExpected)
}
