//! What a target found at odds between the implementation and its model, typed: one record a
//! difference, made where it is found and judged by `crate::target::TargetResult::judge`
//! (any mismatch fails a target). Text is made at the edge: [`fmt::Display`] for the table,
//! JUnit and the JSON, which carries each mismatch as its sentence.

use std::fmt;

use serde::{Serialize, Serializer};

use crate::model_name::ModelName;
use crate::replays::{ReplayOutcome, ReplaySpec, Violation};

/// Which implementation of a replayed must-fail config.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Built the same broken way as the config: it must reproduce the violation.
    Broken,
    /// As designed: it must refuse it.
    Designed,
}

/// How a driven step went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepDifference {
    /// After the step the implementation shows `implementation`, the model `model`.
    State {
        implementation: String,
        model: String,
    },
    /// The implementation could not take the step.
    CannotTake { reason: String },
}

/// One difference between an implementation and its model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mismatch {
    /// A model path driven through the implementation (`on`: the key, path or config it was
    /// driven on) differed at step `step` (1-based).
    Step {
        on: String,
        step: usize,
        action: String,
        difference: StepDifference,
    },
    /// A must-fail config's counterexample did not do on `side` what the replay data says.
    Replay {
        config: String,
        side: Side,
        expected: ReplayOutcome,
        got: ReplayOutcome,
        /// What the run did, where the target says more than the outcome.
        context: Option<String>,
    },
    /// The implementation as designed showed a violation under a counterexample (another
    /// than the one the config is about).
    DesignShowed {
        config: String,
        violation: Violation,
    },
    /// The implementation's trace of a model path is not that path in the model.
    NotFollowed {
        on: String,
        divergence: Option<String>,
    },
    /// After a path, what the implementation holds differs from the model's.
    Differs {
        on: String,
        what: &'static str,
        implementation: String,
        model: String,
    },
    /// The implementation refused a step the model allowed (`refusal`: the step and why).
    RefusedAllowed { refusal: String },
    /// The implementation as designed refused no step of a schedule it must refuse.
    NothingRefused { on: String },
    /// A model path took an action the harness holds it never enables.
    NeverEnabled { action: String },
    /// A run of the implementation showed a violation the design must not have.
    Showed {
        violation: Violation,
        evidence: String,
    },
    /// A fault hit no statement in any round: no faulted history was judged.
    FaultMissed { fault: &'static str },
    /// A target that must conform checked nothing: no trace validated, no model step driven.
    NothingChecked,
    /// A trace was validated against another model than the one the target declares.
    ModelDiffers {
        declared: ModelName,
        validated: ModelName,
    },
}

impl Mismatch {
    /// A replay's mismatch with what the run did beside it (other mismatches as they are).
    pub fn with_context(self, what: String) -> Mismatch {
        match self {
            Mismatch::Replay {
                config,
                side,
                expected,
                got,
                context: _,
            } => Mismatch::Replay {
                config,
                side,
                expected,
                got,
                context: Some(what),
            },
            other => other,
        }
    }
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::Step {
                on,
                step,
                action,
                difference: StepDifference::State {
                    implementation,
                    model,
                },
            } => write!(
                f,
                "{on}: after step {step} {action} the implementation holds {implementation}, the model {model}"
            ),
            Mismatch::Step {
                on,
                step,
                action,
                difference: StepDifference::CannotTake { reason },
            } => write!(
                f,
                "{on}: step {step} {action}: the implementation cannot take it: {reason}"
            ),
            Mismatch::Replay {
                config,
                side,
                expected,
                got,
                context,
            } => {
                match side {
                    Side::Broken => write!(
                        f,
                        "{config}: the broken implementation did not reproduce the violation ({expected:?} expected, {got:?})"
                    )?,
                    Side::Designed => write!(
                        f,
                        "{config}: the implementation as designed did not refuse it ({got:?})"
                    )?,
                }
                match context {
                    Some(context) => write!(f, "; {context}"),
                    None => Ok(()),
                }
            }
            Mismatch::DesignShowed { config, violation } => write!(
                f,
                "{config}: the implementation as designed showed {violation:?} under the counterexample"
            ),
            Mismatch::NotFollowed { on, divergence } => {
                write!(f, "{on}: the implementation did not follow the model path")?;
                match divergence {
                    Some(d) => write!(f, " ({d})"),
                    None => Ok(()),
                }
            }
            Mismatch::Differs {
                on,
                what,
                implementation,
                model,
            } => write!(
                f,
                "{on}: {what} {implementation} on the implementation, {model} in the model"
            ),
            Mismatch::RefusedAllowed { refusal } => write!(
                f,
                "the model allowed it, the implementation refused {refusal}"
            ),
            Mismatch::NothingRefused { on } => {
                write!(f, "{on}: the implementation as designed refused no step")
            }
            Mismatch::NeverEnabled { action } => {
                write!(f, "the model took {action}, which the harness holds it never enables")
            }
            Mismatch::Showed {
                violation,
                evidence,
            } => write!(f, "{violation:?}: {evidence}"),
            Mismatch::FaultMissed { fault } => write!(
                f,
                "{fault}: no statement was left unresolved or unsent, so no faulted history was judged"
            ),
            Mismatch::NothingChecked => f.write_str(
                "nothing was checked: no trace was validated and no model step driven",
            ),
            Mismatch::ModelDiffers {
                declared,
                validated,
            } => write!(
                f,
                "a trace was validated against {validated}, but the target declares {declared}"
            ),
        }
    }
}

/// A mismatch in JSON: its sentence (the JSON's consumers read text; the record stays typed
/// up to here).
impl Serialize for Mismatch {
    fn serialize<S: Serializer>(&self, out: S) -> Result<S::Ok, S::Error> {
        out.collect_str(self)
    }
}

/// The judge of one replay: the broken implementation (when the target drives it) must have
/// reproduced the config's violation, and the guarded one (when it is asked to) must have
/// refused it. Each failure is
/// a mismatch, named by the config and what was expected.
pub fn judge_replay(
    spec: &ReplaySpec,
    broken: ReplayOutcome,
    guarded: ReplayOutcome,
) -> Vec<Mismatch> {
    let mut mismatches = Vec::new();
    let expected = ReplayOutcome::Reproduced(spec.shows);
    if broken != ReplayOutcome::NotDriven && broken != expected {
        mismatches.push(Mismatch::Replay {
            config: spec.config.clone(),
            side: Side::Broken,
            expected,
            got: broken,
            context: None,
        });
    }
    // NotDriven: the schedule is not one the designed implementation is asked to refuse (a
    // design limit such as a TTL reap, or a schedule the real flow never takes).
    if let ReplayOutcome::Reproduced(_) = guarded {
        mismatches.push(Mismatch::Replay {
            config: spec.config.clone(),
            side: Side::Designed,
            expected: ReplayOutcome::Refused,
            got: guarded,
            context: None,
        });
    }
    mismatches
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target_id::TargetId;

    #[test]
    fn a_replay_is_judged_by_its_typed_outcomes() {
        let spec = ReplaySpec {
            config: "c".into(),
            reproduced_by: vec![TargetId::Replay],
            refused_by: vec![],
            shows: Violation::StaleOverwrite,
        };
        let reproduced = ReplayOutcome::Reproduced(Violation::StaleOverwrite);
        assert!(judge_replay(&spec, reproduced, ReplayOutcome::Refused).is_empty());
        assert_eq!(
            judge_replay(&spec, ReplayOutcome::Refused, ReplayOutcome::Refused).len(),
            1
        );
        assert_eq!(
            judge_replay(
                &spec,
                ReplayOutcome::Reproduced(Violation::RowVanished),
                reproduced
            )
            .len(),
            2
        );
        assert!(judge_replay(&spec, ReplayOutcome::NotDriven, ReplayOutcome::Refused).is_empty());
        assert!(judge_replay(&spec, reproduced, ReplayOutcome::NotDriven).is_empty());
    }
}
