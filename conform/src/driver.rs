//! Model → implementation: one path driver for every family. A [`Harness`] applies one model
//! step to an implementation and observes its state as the model sees it; [`drive`] takes a
//! model path through it, comparing after every step, and reports each difference as a typed
//! [`StepMismatch`].

use std::fmt::{self, Debug, Display};

use loadbearing_refinement::Model;

use crate::error::Error;

/// An implementation under a model's steps.
pub trait Harness {
    /// A model step, as the harness performs it.
    type Step: Debug;
    /// The implementation's state as the model sees it (a row, a topic's last record, ...).
    type Observed: Clone + PartialEq + Debug + Display;

    /// Performs one step on the implementation.
    fn apply(&mut self, step: &Self::Step) -> Result<Applied, Error>;

    /// Reads the implementation's state, as the model would show it.
    fn observe(&mut self) -> Result<Self::Observed, Error>;

    /// Whether the implementation stopped taking steps (a fenced flow): the rest of the path
    /// is not driven.
    fn halted(&self) -> bool {
        false
    }
}

/// What the implementation did with one step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Applied {
    /// It took the step.
    Taken,
    /// Its guard refused the step (a typed conflict, a closed gate).
    Refused,
    /// The step has no counterpart in the implementation (a stutter): not driven, not
    /// compared.
    Skipped,
    /// The implementation cannot go on (it was fenced): the path ends here.
    Halted,
    /// It could not take the step, for this reason: a mismatch, and the path goes on.
    Failed(String),
}

/// When the implementation's state is compared with the model's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compare {
    /// After every step.
    Always,
    /// Until the implementation first refuses a step: from there the two legitimately differ
    /// (the path is a weaker model's, the implementation's guard is stronger).
    UntilRefused,
}

/// A difference between the implementation and the model along a driven path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepMismatch<O> {
    /// After step `step` (1-based) the implementation shows `implementation`, the model
    /// `model`.
    State {
        step: usize,
        action: String,
        implementation: O,
        model: O,
    },
    /// The implementation could not take step `step`.
    CannotTake {
        step: usize,
        action: String,
        reason: String,
    },
}

impl<O: Display> StepMismatch<O> {
    /// This difference as a target's record, found on `on` (the key, path or config driven).
    pub fn record(&self, on: impl fmt::Display) -> crate::mismatch::Mismatch {
        use crate::mismatch::{Mismatch, StepDifference};
        let on = on.to_string();
        match self {
            StepMismatch::State {
                step,
                action,
                implementation,
                model,
            } => Mismatch::Step {
                on,
                step: *step,
                action: action.clone(),
                difference: StepDifference::State {
                    implementation: implementation.to_string(),
                    model: model.to_string(),
                },
            },
            StepMismatch::CannotTake {
                step,
                action,
                reason,
            } => Mismatch::Step {
                on,
                step: *step,
                action: action.clone(),
                difference: StepDifference::CannotTake {
                    reason: reason.clone(),
                },
            },
        }
    }
}

impl<O: Display> Driven<O> {
    /// Every difference found, as records of a target found on `on`.
    pub fn records(&self, on: impl fmt::Display) -> Vec<crate::mismatch::Mismatch> {
        let on = on.to_string();
        self.mismatches.iter().map(|m| m.record(&on)).collect()
    }
}

/// What driving one path did.
#[derive(Debug)]
pub struct Driven<O> {
    /// The implementation's state before the first step and after each step driven.
    pub observed: Vec<O>,
    /// What the implementation did with each step driven (a skipped step included).
    pub applied: Vec<Applied>,
    pub mismatches: Vec<StepMismatch<O>>,
    /// Steps the implementation took or refused (not the skipped ones).
    pub steps: usize,
}

impl<O> Driven<O> {
    /// The first step (1-based) the implementation refused, if any.
    pub fn first_refused(&self) -> Option<usize> {
        self.applied
            .iter()
            .position(|a| *a == Applied::Refused)
            .map(|i| i + 1)
    }

    /// Consecutive observed states: (before, after) of each step driven.
    pub fn transitions(&self) -> impl Iterator<Item = (&O, &O)> {
        self.observed.windows(2).map(|pair| (&pair[0], &pair[1]))
    }
}

/// Drives `path` through `harness`, expecting after each step the state given beside it.
pub fn drive_expecting<H: Harness>(
    harness: &mut H,
    path: impl IntoIterator<Item = (H::Step, H::Observed)>,
    compare: Compare,
) -> Result<Driven<H::Observed>, Error> {
    let mut driven = Driven {
        observed: vec![harness.observe()?],
        applied: Vec::new(),
        mismatches: Vec::new(),
        steps: 0,
    };
    for (i, (step, want)) in path.into_iter().enumerate() {
        let action = format!("{step:?}");
        let applied = harness.apply(&step)?;
        match &applied {
            Applied::Halted => {
                driven.applied.push(applied);
                break;
            }
            Applied::Skipped => {
                driven.applied.push(applied);
                continue;
            }
            Applied::Failed(reason) => driven.mismatches.push(StepMismatch::CannotTake {
                step: i + 1,
                action: action.clone(),
                reason: reason.clone(),
            }),
            Applied::Taken | Applied::Refused => {}
        }
        driven.applied.push(applied);
        driven.steps += 1;
        let seen = harness.observe()?;
        let comparing = compare == Compare::Always || driven.first_refused().is_none();
        if comparing && seen != want {
            driven.mismatches.push(StepMismatch::State {
                step: i + 1,
                action,
                implementation: seen.clone(),
                model: want,
            });
        }
        driven.observed.push(seen);
        if harness.halted() {
            break;
        }
    }
    Ok(driven)
}

/// Drives the model path `path` from `init` through `harness`, comparing the implementation
/// with `image` of the model's state after every step. A step the model does not enable is
/// [`Error::NotEnabled`]: the path is not the model's.
pub fn drive<M, H>(
    model: &M,
    init: &M::State,
    path: &[M::Action],
    harness: &mut H,
    image: impl Fn(&M::State) -> H::Observed,
    compare: Compare,
) -> Result<Driven<H::Observed>, Error>
where
    M: Model,
    H: Harness<Step = M::Action>,
    M::Action: Clone + Debug,
    M::State: Clone,
{
    let mut state = init.clone();
    let mut expected = Vec::with_capacity(path.len());
    for (i, action) in path.iter().enumerate() {
        state = model
            .next_state(&state, action.clone())
            .ok_or_else(|| Error::NotEnabled {
                step: i + 1,
                action: format!("{action:?}"),
            })?;
        expected.push((action.clone(), image(&state)));
    }
    drive_expecting(harness, expected, compare)
}

/// The states `model` goes through along `steps` from `init`, where a step it does not enable
/// is refused and leaves the state as it is (the guarded model under a broken model's path).
/// `action_of` maps a step onto the model's action (`None`: a stutter for this model).
pub fn refusing_states<M: Model, S>(
    model: &M,
    init: &M::State,
    steps: &[S],
    action_of: impl Fn(&S) -> Option<M::Action>,
) -> Vec<M::State>
where
    M::Action: PartialEq + Clone,
    M::State: Clone,
{
    let mut state = init.clone();
    let mut states = Vec::with_capacity(steps.len());
    for step in steps {
        if let Some(action) = action_of(step) {
            let mut enabled = Vec::new();
            model.actions(&state, &mut enabled);
            if enabled.contains(&action) {
                state = model.next_state(&state, action).expect("enabled");
            }
        }
        states.push(state.clone());
    }
    states
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A counter the harness increments; it refuses to go past `cap`.
    struct Counter {
        value: u8,
        cap: u8,
    }

    impl Harness for Counter {
        type Step = u8;
        type Observed = u8;

        fn apply(&mut self, step: &u8) -> Result<Applied, Error> {
            if self.value + step > self.cap {
                return Ok(Applied::Refused);
            }
            self.value += step;
            Ok(Applied::Taken)
        }

        fn observe(&mut self) -> Result<u8, Error> {
            Ok(self.value)
        }
    }

    #[test]
    fn every_step_is_compared_and_a_difference_names_its_step() {
        let mut counter = Counter { value: 0, cap: 3 };
        let driven =
            drive_expecting(&mut counter, [(1, 1), (1, 2), (2, 4)], Compare::Always).unwrap();
        assert_eq!(driven.observed, vec![0, 1, 2, 2]);
        assert_eq!(driven.first_refused(), Some(3));
        assert_eq!(
            driven.mismatches,
            vec![StepMismatch::State {
                step: 3,
                action: "2".into(),
                implementation: 2,
                model: 4
            }]
        );
    }

    #[test]
    fn comparison_can_stop_at_the_first_refusal() {
        let mut counter = Counter { value: 0, cap: 1 };
        let driven = drive_expecting(
            &mut counter,
            [(1, 1), (1, 2), (1, 3)],
            Compare::UntilRefused,
        )
        .unwrap();
        assert!(driven.mismatches.is_empty());
        assert_eq!(driven.steps, 3);
    }
}
