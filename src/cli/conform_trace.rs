//! `loadbearing conform --trace FILE --model CONFIG`: one implementation trace file, from
//! anywhere, validated against a config (or a model with its default constants): a sequence
//! (the file's order is the order of events) or a history (events with `call` and `ret` times).

use std::path::Path;

use std::sync::Mutex;

use crate::junit;
use crate::Verdict;
use loadbearing_expected::progress::{grouped, Line};
use loadbearing_expected::suite::{self, LookupError};
use loadbearing_specs::infra::knobs::Constants;
use loadbearing_trace::Progress;
use loadbearing_trace::{Decision, TraceOptions};

use super::configs::{self, Suite};
use super::format::{pretty, ResultFormat};
use super::BadInput;

/// Conforms (as expected), or does not (differs), or a history the search could not decide
/// within its budget (incomplete); a file that is not a trace is bad input.
pub fn run(
    suite: &Suite,
    file: &Path,
    model: &str,
    sets: &[String],
    options: &TraceOptions,
    format: ResultFormat,
) -> Result<Verdict, BadInput> {
    let text = std::fs::read_to_string(file).map_err(|source| BadInput::TraceFileUnreadable {
        path: file.to_path_buf(),
        source,
    })?;
    // A file with no event says nothing to conform: it is no trace, not a conforming one.
    if text.trim().is_empty() {
        return Err(BadInput::EmptyTrace {
            path: file.to_path_buf(),
        });
    }
    let configs = suite.load()?;
    let (model_name, mut given, is_config) = match suite::find(&configs, model) {
        Ok(config) => (
            config.model.to_string(),
            config.constants.values().clone(),
            true,
        ),
        // Not a config: perhaps a model's name.
        Err(LookupError::NotFound { .. }) => (model.to_string(), Constants::new(), false),
    };
    let entry = loadbearing_registry::conformance(&model_name).ok_or_else(|| {
        let known = loadbearing_registry::conformance_models();
        if is_config {
            BadInput::ConfigReadsNoTraces {
                config: model.to_string(),
                model: model_name.clone(),
                known,
            }
        } else {
            BadInput::NotAConformanceModel {
                name: model.to_string(),
                known,
            }
        }
    })?;
    for (name, value) in configs::parse_sets(sets)? {
        given.insert(name, value);
    }
    let constants = (entry.resolve)(&given)?;
    let judged = (entry.conform)(&constants, &text, options);
    // The progress line is erased before the verdict is printed.
    drop(LINE.lock().unwrap_or_else(|e| e.into_inner()).take());
    let report = judged.map_err(|source| BadInput::TraceFile {
        path: file.to_path_buf(),
        source,
    })?;
    let decision = report.decision();
    match format {
        ResultFormat::Json => println!(
            "{}",
            pretty(&serde_json::to_value(&report).expect("verdicts serialize"))
        ),
        ResultFormat::Junit => {
            let failed = |message: String| junit::CaseOutcome::Failed {
                message,
                text: report.text(&model_name),
            };
            let outcome = match decision {
                Decision::Conforms => junit::CaseOutcome::Passed,
                Decision::Diverges => failed(format!("the trace does not conform to {model_name}")),
                Decision::Unknown(spent) => failed(format!(
                    "the trace could not be decided against {model_name}: the search spent {spent}"
                )),
            };
            let case = junit::Case {
                classname: "conform.trace".to_string(),
                name: file.display().to_string(),
                seconds: 0.0,
                outcome,
            };
            print!(
                "{}",
                junit::xml("loadbearing conform", &junit::grouped(vec![case]))
            );
        }
        ResultFormat::Table => {
            print!("{}: {}", file.display(), report.text(&model_name));
            if let Decision::Unknown(spent) = decision {
                println!("incomplete ({})", spent.kind());
            }
        }
    }
    Ok(match decision {
        Decision::Conforms => Verdict::AsExpected,
        Decision::Diverges => Verdict::Differs,
        // Undecided is never "conforms": a CI reads it as incomplete.
        Decision::Unknown(_) => Verdict::Incomplete,
    })
}

/// The line of a long trace search (stderr: redrawn on a terminal, every few seconds in a log).
static LINE: Mutex<Option<Line>> = Mutex::new(None);

/// Where a long search is: the part, how far through its calls and returns, the
/// configurations held and explored.
pub fn progress_line(at: &Progress) {
    let mut line = LINE.lock().unwrap_or_else(|e| e.into_inner());
    line.get_or_insert_with(Line::new)
        .tick_with(|_| {
            format!(
                "  … part {} of {}, {} of {} calls and returns, {} configurations held, {} explored, {:.0}s (conform --trace)",
                at.part + 1,
                at.parts,
                grouped(at.events_done as u64),
                grouped(at.events as u64),
                grouped(at.held as u64),
                grouped(at.configurations),
                at.seconds
            )
        });
}
