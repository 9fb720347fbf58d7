//! `loadbearing run-actors`: an actor model's code run over UDP on loopback, its log printed
//! (and saved with --out) and checked against the model.

use std::path::PathBuf;

use crate::run_actors::{run_system, RunActorsError};
use crate::Verdict;
use loadbearing_trace::to_ndjson;

use super::BadInput;

#[derive(clap::Args)]
pub struct Args {
    /// The actor system: cassandra, kafka, epoch, group-commit or ssi.
    system: String,
    /// How long the actors run, in milliseconds, before their log is checked.
    #[arg(long, default_value_t = 1500)]
    millis: u64,
    /// Save the log as NDJSON (the `actors` vocabulary), for `conform --trace`.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// As expected when the log conforms to the actor model; differs when it does not.
pub fn run(args: Args) -> Result<Verdict, BadInput> {
    let report = run_system(&args.system, args.millis)?;
    for (i, line) in report.lines.iter().enumerate() {
        println!("{i:>3}  {line}");
    }
    if let Some(path) = &args.out {
        std::fs::write(path, to_ndjson(&report.events)).map_err(|source| RunActorsError::Io {
            what: "cannot write the actors' log",
            source,
        })?;
        println!(
            "the log is in {}: `loadbearing conform --trace {} --model {}` checks it again",
            path.display(),
            path.display(),
            report.config
        );
    }
    let v = &report.verdict;
    if v.conforming {
        println!(
            "the log conforms to the actor model: all {} events",
            v.events
        );
        Ok(Verdict::AsExpected)
    } else {
        let why = v.divergence.as_ref().map(|d| d.text()).unwrap_or_default();
        println!("the log diverges from the actor model:\n{why}");
        Ok(Verdict::Differs)
    }
}
