//! `loadbearing docs`: docs/ regenerated from the configs and the snapshots, or (`--check`)
//! only the stale files named.

use crate::Verdict;

use super::configs::Suite;
use super::BadInput;

#[derive(clap::Args)]
pub struct Args {
    /// Write nothing: name the files that differ from what would be written, and exit 1 if any
    /// does (CI's freshness check).
    #[arg(long)]
    check: bool,
    /// The folder to write (or check): by default the `docs/` of the checkout this binary was
    /// built from, whose counterexample snapshots the pages are made of.
    #[arg(long, value_name = "DIR")]
    out: Option<std::path::PathBuf>,
}

pub fn run(args: Args, suite: &Suite) -> Result<Verdict, BadInput> {
    let configs = suite.load()?;
    let dir = args.out.unwrap_or_else(|| crate::docs::root().join("docs"));
    if !args.check {
        // Said, not silent: the default is the build's checkout, wherever the command runs.
        eprintln!("docs: writing {}", dir.display());
    }
    let stale = crate::docs::write(&configs, args.check, &dir)?;
    if args.check && !stale.is_empty() {
        for path in &stale {
            eprintln!("out of date: {path}");
        }
        eprintln!("regenerate with `cargo run -- docs`");
        return Ok(Verdict::Differs);
    }
    Ok(Verdict::AsExpected)
}
