//! Runs the implementation and writes its trace: two clients, the lock service, storage on
//! SQLite.
//!
//! ```sh
//! fencing-store --out run.ndjson [--seed N] [--steps N] [--leases N]
//! fencing-store --out run.ndjson --scenario gc-pause     # the textbook schedule
//! fencing-store --out run.ndjson --no-token-check        # the planted mutant
//! ```
//!
//! Exit 0 with the trace written; 2 on bad arguments or a failed run.

use std::path::PathBuf;
use std::process::ExitCode;

use fencing_token::run::{run, save_trace, Schedule};
use fencing_token::storage::TokenCheck;

const USAGE: &str = "usage: fencing-store --out FILE [--seed N] [--steps N] [--leases N] \
                     [--scenario gc-pause] [--no-token-check] [--database FILE]";

struct Args {
    out: PathBuf,
    database: Option<PathBuf>,
    schedule: Schedule,
    check: TokenCheck,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let (mut out, mut database) = (None, None);
    let (mut seed, mut steps, mut leases, mut gc_pause) = (1u64, 12usize, 3u8, false);
    let mut check = TokenCheck::Checked;
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--out" => out = Some(PathBuf::from(value("--out")?)),
            "--database" => database = Some(PathBuf::from(value("--database")?)),
            "--seed" => seed = number(&value("--seed")?, "--seed")?,
            "--steps" => steps = number(&value("--steps")?, "--steps")?,
            "--leases" => leases = number(&value("--leases")?, "--leases")?,
            "--scenario" => match value("--scenario")?.as_str() {
                "gc-pause" => gc_pause = true,
                other => return Err(format!("no scenario {other:?} (there is gc-pause)")),
            },
            "--no-token-check" => check = TokenCheck::Unchecked,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unexpected argument {other:?}")),
        }
    }
    let schedule = if gc_pause {
        Schedule::GcPause
    } else {
        Schedule::Random {
            seed,
            steps,
            leases,
        }
    };
    Ok(Args {
        out: out.ok_or("--out FILE is required")?,
        database,
        schedule,
        check,
    })
}

fn number<T: std::str::FromStr>(text: &str, name: &str) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("{name} takes a whole number in range, not {text:?}"))
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(why) => {
            if !why.is_empty() {
                eprintln!("error: {why}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let database = args
        .database
        .unwrap_or_else(|| args.out.with_extension("sqlite"));
    let events = match run(&args.schedule, &database, args.check) {
        Ok(events) => events,
        Err(e) => {
            eprintln!("error: the run failed: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = save_trace(&events, &args.out) {
        eprintln!("error: cannot write {}: {e}", args.out.display());
        return ExitCode::from(2);
    }
    println!(
        "{} events written to {} (storage: {})",
        events.len(),
        args.out.display(),
        database.display()
    );
    ExitCode::SUCCESS
}
