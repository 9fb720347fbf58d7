//! Runs configs and judges each against what it declares.

use loadbearing_refinement::{CheckSpec, Options, Outcome, Report};
use loadbearing_specs::registry;

use crate::suite::{Config, Expected};

pub struct Judged {
    pub config: Config,
    pub report: Report,
    /// Why the outcome is not what the config declares; `None` when it is.
    pub mismatch: Option<String>,
}

impl Judged {
    pub fn ok(&self) -> bool {
        self.mismatch.is_none()
    }

    pub fn incomplete(&self) -> bool {
        matches!(self.report.outcome, Outcome::Incomplete(_))
    }
}

pub fn run(config: &Config, options: &Options) -> Result<Judged, String> {
    let entry =
        registry::find(config.model).ok_or_else(|| format!("unknown model {}", config.model))?;
    let spec = CheckSpec {
        properties: config.properties.clone(),
        fair: config.fair,
        allow_end_states: config.end_states,
    };
    let report = (entry.check)(&config.constants, &spec, options).map_err(|e| e.to_string())?;
    let mismatch = judge(config, &report);
    Ok(Judged {
        config: config.clone(),
        report,
        mismatch,
    })
}

fn judge(config: &Config, report: &Report) -> Option<String> {
    let as_expected = match (&config.expected, &report.outcome) {
        (Expected::Holds, Outcome::Holds) => true,
        (Expected::Deadlock, Outcome::Deadlock) => true,
        (Expected::Violates(want), Outcome::Violates(got)) => want == got,
        _ => false,
    };
    if !as_expected {
        return Some(format!(
            "expected {}, got {}",
            config.expected, report.outcome
        ));
    }
    match config.states {
        Some(reference) if !config.overridden && reference != report.distinct_states => {
            Some(format!(
            "{} distinct states, the reference reaches {reference}: the port differs from the spec",
            report.distinct_states
        ))
        }
        _ => None,
    }
}
