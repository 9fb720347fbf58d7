//! Checking configs one after another and reporting them: the table row by row as they are
//! checked, or JSON or JUnit at the end. The one loop behind `check`, on this process or on
//! each worker of a distributed run.

use loadbearing_expected::progress::ProgressLine;
use std::time::Instant;

use crate::junit;
use crate::render;
use crate::Verdict;
use loadbearing_expected::run::{Judged, RunError};
use loadbearing_expected::suite::Config;
use loadbearing_refinement::Options;

use super::format::{pretty, ResultFormat};

/// A config checked this long (or longer) has its TLC-style closing line under its row.
const LONG_CHECK_SECONDS: f64 = 5.0;

/// Whether this worker prints the report (of a distributed run's workers, one does).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    Yes,
    /// Another worker prints (only a distributed run has others).
    #[cfg_attr(not(feature = "distributed"), allow(dead_code))]
    No,
}

/// Checks each config with `run`, printing the table or JSON when `shown`; `errors_before`
/// configs were already refused (and reported) before these.
pub fn check_with(
    selected: &[Config],
    options: &Options,
    format: ResultFormat,
    shown: Shown,
    errors_before: usize,
    run: &mut dyn FnMut(&Config, &Options) -> Result<Judged, RunError>,
) -> Verdict {
    let started = Instant::now();
    let shown = shown == Shown::Yes;
    let widths = render::Widths::fitting(selected);
    if let (ResultFormat::Table, true) = (format, shown) {
        println!("{}", render::table_header(widths));
    }
    let mut judged: Vec<Judged> = Vec::new();
    let mut errors = errors_before;
    let mut failures: Vec<junit::RunFailure> = Vec::new();
    let mut suite_shown: Option<&str> = None;
    for config in selected {
        let options = Options {
            progress: shown.then(|| ProgressLine::reporting(config.name.clone())),
            ..options.clone()
        };
        // Two suites may share a config name: the heading says which suite a row is in.
        if let (ResultFormat::Table, true) = (format, shown) {
            if suite_shown != Some(config.suite.as_str()) {
                println!("{}", render::suite_heading(&config.suite));
                suite_shown = Some(&config.suite);
            }
        }
        match run(config, &options) {
            Ok(j) => {
                if let (ResultFormat::Table, true) = (format, shown) {
                    println!("{}", render::table_row(&j, widths));
                    // TLC's closing line, where a TLC user looks for it: under a config checked
                    // on its own, and under any that took long enough to show progress.
                    let report = j.report.as_ref();
                    if selected.len() == 1 || report.seconds() >= LONG_CHECK_SECONDS {
                        println!("  {}", render::tlc_line(report));
                    }
                }
                judged.push(j);
            }
            Err(e) => {
                // One bad config is reported and the run goes on; the exit code remembers it.
                if shown {
                    eprintln!("error: {}: {e}", config.name);
                }
                failures.push(junit::RunFailure {
                    suite: config.suite.clone(),
                    config: config.name.clone(),
                    error: e.to_string(),
                });
                errors += 1;
            }
        }
    }
    let ok = judged.iter().filter(|j| j.ok()).count();
    let incomplete = judged.iter().filter(|j| j.incomplete()).count();
    match format {
        _ if !shown => {}
        ResultFormat::Json => {
            let array: Vec<_> = judged.iter().map(render::judged_json).collect();
            println!("{}", pretty(&serde_json::Value::Array(array)));
        }
        ResultFormat::Junit => print!(
            "{}",
            junit::xml(
                "loadbearing check",
                &junit::grouped(junit::check_cases(&judged, &failures))
            )
        ),
        ResultFormat::Table => println!(
            "\n{ok} of {} configs as expected ({incomplete} incomplete, {errors} errors) in {:.2}s",
            selected.len() + errors_before,
            started.elapsed().as_secs_f64()
        ),
    }
    // One bad config was reported and the run went on; the verdict remembers it.
    if errors > 0 {
        Verdict::BadInput
    } else if incomplete > 0 {
        Verdict::Incomplete
    } else {
        Verdict::of(ok == judged.len())
    }
}
