//! Runs the implementation: concurrent clients on a SQLite register, their history written to
//! `--out` as NDJSON for `cas-register conform --trace FILE --model CasRegister`.
//!
//! ```text
//! cas-clients --out run.ndjson [--clients 3] [--ops 40] [--lost 10] [--seed 1] [--no-compare]
//! ```
//!
//! `--no-compare` is the planted mutant: a cas that only sets. Exit 2 on bad arguments.

use std::path::PathBuf;
use std::process::ExitCode;

use cas_register::run::{run, RunSettings};
use cas_register::store::Compare;

fn main() -> ExitCode {
    match parse(std::env::args().skip(1).collect()) {
        Ok((out, settings)) => {
            let db = out.with_extension("sqlite");
            match run(&db, &settings) {
                Ok(history) => match std::fs::write(&out, history) {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(e) => {
                        eprintln!("cas-clients: {}: {e}", out.display());
                        ExitCode::from(2)
                    }
                },
                Err(e) => {
                    eprintln!("cas-clients: the register on {}: {e}", db.display());
                    ExitCode::from(2)
                }
            }
        }
        Err(e) => {
            eprintln!("cas-clients: {e}\nusage: cas-clients --out FILE [--clients N] [--ops N] [--lost PERCENT] [--seed N] [--no-compare]");
            ExitCode::from(2)
        }
    }
}

fn parse(args: Vec<String>) -> Result<(PathBuf, RunSettings), String> {
    let mut settings = RunSettings::default();
    let mut out = None;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--out" => out = Some(PathBuf::from(value("--out")?)),
            "--clients" => settings.clients = number(&value("--clients")?, "--clients")?,
            "--ops" => settings.operations = number(&value("--ops")?, "--ops")?,
            "--lost" => {
                settings.lost_percent = number(&value("--lost")?, "--lost")?;
                if settings.lost_percent > 100 {
                    return Err("--lost is a percentage, at most 100".into());
                }
            }
            "--seed" => settings.seed = number(&value("--seed")?, "--seed")?,
            "--no-compare" => settings.compare = Compare::Unchecked,
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if settings.clients == 0 {
        return Err("--clients must be at least 1".into());
    }
    Ok((out.ok_or("--out FILE is required")?, settings))
}

fn number<T: std::str::FromStr>(text: &str, name: &str) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("{name} takes a whole number, not `{text}`"))
}
