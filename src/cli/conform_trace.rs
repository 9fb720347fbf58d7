//! `loadbearing conform --trace FILE --model CONFIG`: one implementation trace file, from
//! anywhere, validated against a config (or a model with its default constants).

use std::path::Path;

use loadbearing::junit;
use loadbearing::suite::{self, LookupError};
use loadbearing::Verdict;
use loadbearing_refinement::conform::Limits;
use loadbearing_specs::infra::knobs::Constants;

use super::configs::{self, Suite};
use super::format::{pretty, ResultFormat};
use super::BadInput;

/// Conforms (as expected), or does not (differs); a file that is not a trace is bad input.
pub fn run(
    suite: &Suite,
    file: &Path,
    model: &str,
    sets: &[String],
    format: ResultFormat,
) -> Result<Verdict, BadInput> {
    let text = std::fs::read_to_string(file).map_err(|source| BadInput::TraceFileUnreadable {
        path: file.to_path_buf(),
        source,
    })?;
    let configs = suite.load()?;
    let (model_name, mut given) = match suite::find(&configs, model) {
        Ok(config) => (config.model.to_string(), config.constants.values().clone()),
        // Not a config: perhaps a model's name.
        Err(LookupError::NotFound { .. }) => (model.to_string(), Constants::new()),
    };
    let (resolve, validate) = loadbearing_registry::conformance(&model_name).ok_or_else(|| {
        BadInput::NotAConformanceModel {
            name: model.to_string(),
            known: loadbearing_registry::conformance_models(),
        }
    })?;
    for (name, value) in configs::parse_sets(sets)? {
        given.insert(name, value);
    }
    let constants = resolve(&given)?;
    let verdict =
        validate(&constants, &text, Limits::default()).map_err(|source| BadInput::TraceFile {
            path: file.to_path_buf(),
            source,
        })?;
    match format {
        ResultFormat::Json => println!(
            "{}",
            pretty(&serde_json::to_value(&verdict).expect("verdicts serialize"))
        ),
        ResultFormat::Junit => {
            let outcome = match &verdict.divergence {
                None => junit::CaseOutcome::Passed,
                Some(d) => junit::CaseOutcome::Failed {
                    message: format!("the trace does not conform to {model_name}"),
                    text: d.text(),
                },
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
        ResultFormat::Table => match &verdict.divergence {
            None => println!(
                "{}: {} events conform to {model_name}; model path: {}",
                file.display(),
                verdict.events,
                verdict.witness.clone().unwrap_or_default().join(", ")
            ),
            Some(d) => print!(
                "{}: does not conform to {model_name}\n{}",
                file.display(),
                d.text()
            ),
        },
    }
    Ok(Verdict::of(verdict.conforming))
}
