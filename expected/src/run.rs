//! Runs configs and judges each against what it declares.

use std::fmt;

#[cfg(feature = "distributed")]
use loadbearing_refinement::distributed::Worker;
use loadbearing_refinement::{
    check, AnyReport, CheckSpec, Options, Outcome, ReportOf, Spec, SpecError,
};
use loadbearing_specs::infra::knobs::KnobError;
use loadbearing_specs::Configured;

use crate::suite::{Config, Expected};

pub struct Judged {
    pub config: Config,
    /// The report, whatever the config's model; `typed` gives it back to a caller that knows it.
    pub report: Box<dyn AnyReport>,
    /// Why the outcome is not what the config declares; `None` when it is.
    pub mismatch: Option<Mismatch>,
}

impl Judged {
    pub fn ok(&self) -> bool {
        self.mismatch.is_none()
    }

    pub fn incomplete(&self) -> bool {
        matches!(self.report.outcome(), Outcome::Incomplete(_))
    }
}

/// How a report differs from what its config declares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mismatch {
    /// Another outcome than the declared one (a failure of another property included).
    Outcome { expected: Expected, actual: Outcome },
    /// The declared outcome, but not the reference's number of distinct states.
    States { distinct: u64, reference: u64 },
    /// The reference's distinct states, but not its number of states generated: the same
    /// states, reached by other steps (a successor missing or added where it changes nothing).
    Generated { generated: u64, reference: u64 },
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::Outcome {
                expected,
                actual: actual @ Outcome::Deadlock,
            } => write!(
                f,
                "expected {expected}, got {actual}: a state without successors; if that is a normal end of a run, say `end_states = true` in the config's suite entry (or check with --deadlock, TLC's -deadlock)"
            ),
            Mismatch::Outcome { expected, actual } => write!(f, "expected {expected}, got {actual}"),
            Mismatch::States {
                distinct,
                reference,
            } => write!(
                f,
                "{distinct} distinct states, the reference reaches {reference}: the port differs from the spec"
            ),
            Mismatch::Generated {
                generated,
                reference,
            } => write!(
                f,
                "{generated} states generated, the reference generates {reference}: the port takes other steps than the spec"
            ),
        }
    }
}

/// Why a config could not be checked at all.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{config} is a {model} config, not {wanted}")]
    OtherModel {
        config: String,
        model: String,
        wanted: &'static str,
    },
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// The distributed engine cannot check this model: its states cannot be sent between
    /// processes.
    #[error("{model} cannot be checked distributed: its states (Stateright's actor states) cannot be sent between processes; check it without --distributed")]
    NotDistributable { model: String },
    /// The config's constants do not make this model (they were resolved for another one).
    #[error(transparent)]
    Constants(#[from] KnobError),
}

/// The properties and spec formula a config checks.
pub fn check_spec(config: &Config) -> CheckSpec {
    CheckSpec {
        properties: config.properties.clone(),
        fair: config.fair,
        allow_end_states: config.end_states,
        symmetry: config.symmetry.clone(),
    }
}

pub fn run(config: &Config, options: &Options) -> Result<Judged, RunError> {
    let report = (config.entry.check)(&config.constants, &check_spec(config), options)?;
    Ok(judged(config, report))
}

/// Whether the distributed engine can check `config`: its model's states travel between
/// processes and it asks no temporal property. Asked of every config before a distributed run
/// starts, so none is refused halfway.
#[cfg(feature = "distributed")]
pub fn distributable(config: &Config) -> Result<(), RunError> {
    let entry = config.entry;
    if entry.distributed.is_none() {
        return Err(RunError::NotDistributable {
            model: config.model.to_string(),
        });
    }
    let temporal = (entry.temporal)(&config.constants);
    match config.properties.iter().find(|p| temporal.contains(p)) {
        Some(property) => Err(SpecError::DistributedLiveness {
            property: property.clone(),
        }
        .into()),
        None => Ok(()),
    }
}

/// Checks `config` on one worker of a distributed run; every worker of the run checks the
/// same configs in the same order, and each gets the whole report.
#[cfg(feature = "distributed")]
pub fn run_distributed(
    worker: &mut Worker,
    config: &Config,
    options: &Options,
) -> Result<Judged, RunError> {
    // A temporal property is refused by the check itself (SpecError::DistributedLiveness).
    let check = config
        .entry
        .distributed
        .ok_or_else(|| RunError::NotDistributable {
            model: config.model.to_string(),
        })?;
    let report = check(worker, &config.constants, &check_spec(config), options)?;
    Ok(judged(config, report))
}

/// Checks a config whose model type the caller knows, for the typed report (its paths in the
/// model's own states and actions): the model its constants build, and the report, judged.
pub fn run_typed<M: Configured>(
    config: &Config,
    options: &Options,
) -> Result<(M, ReportOf<M>, Option<Mismatch>), RunError> {
    if config.model != M::NAME {
        return Err(RunError::OtherModel {
            config: config.name.clone(),
            model: config.model.to_string(),
            wanted: M::NAME,
        });
    }
    let model = M::from_knobs(&config.constants)?;
    let report = check_model(&model, config, options)?;
    let mismatch = judge(
        config,
        report.outcome.clone(),
        report.distinct_states,
        report.generated,
    );
    Ok((model, report, mismatch))
}

/// Checks `model`, built by the caller, against the config's properties and spec formula.
pub fn check_model<M: Spec>(
    model: &M,
    config: &Config,
    options: &Options,
) -> Result<ReportOf<M>, SpecError> {
    check(model, &check_spec(config), options)
}

fn judged(config: &Config, report: Box<dyn AnyReport>) -> Judged {
    let mismatch = judge(
        config,
        report.outcome().clone(),
        report.distinct_states(),
        report.generated(),
    );
    Judged {
        config: config.clone(),
        report,
        mismatch,
    }
}

fn judge(config: &Config, outcome: Outcome, distinct: u64, generated: u64) -> Option<Mismatch> {
    let as_expected = match (&config.expected, &outcome) {
        (Expected::Holds, Outcome::Holds) => true,
        (Expected::Deadlock, Outcome::Deadlock) => true,
        (Expected::Violates(want), Outcome::Violates(got)) => want == got,
        _ => false,
    };
    if !as_expected {
        return Some(Mismatch::Outcome {
            expected: config.expected.clone(),
            actual: outcome,
        });
    }
    if config.overridden {
        return None;
    }
    if let Some(reference) = config.states.filter(|&r| r != distinct) {
        return Some(Mismatch::States {
            distinct,
            reference,
        });
    }
    config
        .generated
        .filter(|&reference| reference != generated)
        .map(|reference| Mismatch::Generated {
            generated,
            reference,
        })
}
