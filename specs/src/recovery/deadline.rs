#![doc = include_str!("deadline.md")]

use std::fmt;

use loadbearing_refinement::Shown;
use loadbearing_refinement::{Model, Property};
use loadbearing_refinement::{Spec, Variables};
use loadbearing_trace::Conform;

use crate::infra::knobs::{Flag, Nat};
use crate::{Configured, Guard};

/// How the recovery read has ended, if it has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ReadState {
    Reading,
    /// The read reached its target and returned.
    Done,
    /// The tripwire fired: a loud, supervised failure.
    Failed,
    /// The broker evicted the member at the poll deadline: the silent failure.
    Evicted,
}

impl fmt::Display for ReadState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReadState::Reading => "reading",
            ReadState::Done => "done",
            ReadState::Failed => "failed",
            ReadState::Evicted => "evicted",
        })
    }
}

/// Ticks are 16-bit: the states grow only as Deadline squared, so deadlines past a byte are in
/// reach.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct DeadlineState {
    /// Ticks since recovery began: the eviction deadline is measured on it, and progress does
    /// not reset it (the poll thread is inside recovery the whole time).
    pub clock: u16,
    /// Consecutive ticks without a position advance: the no-progress tripwire reads it.
    pub noprog: u16,
    pub rstate: ReadState,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeadlineAction {
    Progress,
    Complete,
    Stall,
    TripFail,
    Evict,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecoveryDeadline {
    /// The tripwire's threshold, in ticks.
    pub trip_at: u16,
    /// The eviction deadline (max.poll.interval.ms), in ticks.
    pub deadline: u16,
    /// The read loop has a tripwire at all (without it, the loop as shipped: #849).
    pub tripwire: bool,
    /// The tripwire counts consecutive no-progress ticks, not the total elapsed time.
    pub no_progress_trip: bool,
    /// A platform fact: the read can advance and complete. Without it the target outlives the
    /// log end and the read can never progress (the #849 hang).
    pub healthy_progress: bool,
}

impl RecoveryDeadline {
    /// TripCondActive: the tripwire's condition holds in `s`.
    fn tripped(&self, s: &DeadlineState) -> bool {
        self.tripwire
            && if self.no_progress_trip {
                s.noprog >= self.trip_at
            } else {
                s.clock >= self.trip_at
            }
    }

    fn type_ok(&self, s: &DeadlineState) -> bool {
        s.clock <= self.deadline && s.noprog <= self.deadline
    }
}

impl Model for RecoveryDeadline {
    type State = DeadlineState;
    type Action = DeadlineAction;

    fn init_states(&self) -> Vec<DeadlineState> {
        vec![DeadlineState {
            clock: 0,
            noprog: 0,
            rstate: ReadState::Reading,
        }]
    }

    fn actions(&self, s: &DeadlineState, actions: &mut Vec<DeadlineAction>) {
        if s.rstate != ReadState::Reading {
            return;
        }
        let tripped = self.tripped(s);
        let before_deadline = s.clock < self.deadline;
        if self.healthy_progress && !tripped && before_deadline {
            actions.push(DeadlineAction::Progress);
        }
        if self.healthy_progress && !tripped {
            actions.push(DeadlineAction::Complete);
        }
        if !tripped && before_deadline {
            actions.push(DeadlineAction::Stall);
        }
        if tripped {
            actions.push(DeadlineAction::TripFail);
        }
        if !before_deadline {
            actions.push(DeadlineAction::Evict);
        }
    }

    fn next_state(&self, s: &DeadlineState, action: DeadlineAction) -> Option<DeadlineState> {
        let mut next = s.clone();
        match action {
            DeadlineAction::Progress => {
                next.clock = s.clock + 1;
                next.noprog = 0;
            }
            DeadlineAction::Stall => {
                next.clock = s.clock + 1;
                next.noprog = s.noprog + 1;
            }
            DeadlineAction::Complete => next.rstate = ReadState::Done,
            DeadlineAction::TripFail => next.rstate = ReadState::Failed,
            DeadlineAction::Evict => next.rstate = ReadState::Evicted,
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("INV_NoSilentEviction", |_, s: &DeadlineState| {
                s.rstate != ReadState::Evicted
            }),
            Property::always("INV_OnlyStalledFails", |m: &Self, s: &DeadlineState| {
                s.rstate != ReadState::Failed || s.noprog >= m.trip_at
            }),
            Property::always("TypeOK", |m: &Self, s: &DeadlineState| m.type_ok(s)),
            // The tripwire is seen to fire, so a holding no-eviction check is not a read that
            // simply never ran into the deadline.
            Property::sometimes("TripFires", |_, s: &DeadlineState| {
                s.rstate == ReadState::Failed
            }),
            // A read that advanced at least once reaches its target: the tripwire left a
            // progressing read alone.
            Property::sometimes("ProgressingReadCompletes", |_, s: &DeadlineState| {
                s.rstate == ReadState::Done && s.clock > 0 && s.noprog == 0
            }),
        ]
    }
}

impl Spec for RecoveryDeadline {
    fn variables(&self, s: &DeadlineState) -> Variables {
        vec![
            ("clock", s.clock.into()),
            ("noprog", s.noprog.into()),
            ("rstate", Shown::name(s.rstate)),
        ]
    }

    fn actor(&self, action: &DeadlineAction) -> String {
        match action {
            DeadlineAction::Evict => "broker".into(),
            DeadlineAction::Progress
            | DeadlineAction::Complete
            | DeadlineAction::Stall
            | DeadlineAction::TripFail => "recovery".into(),
        }
    }
}

use crate::recovery::deadline_trace::DeadlineEvent;

/// An event names its action and carries nothing more, so it cannot contradict a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("no observation to contradict")]
pub struct NoContradiction;

impl Conform for RecoveryDeadline {
    type Event = DeadlineEvent;
    type Contradiction = NoContradiction;

    fn reports(&self, action: &DeadlineAction, event: &DeadlineEvent) -> bool {
        matches!(
            (action, event),
            (DeadlineAction::Progress, DeadlineEvent::Progress)
                | (DeadlineAction::Stall, DeadlineEvent::Stall)
                | (DeadlineAction::Complete, DeadlineEvent::Complete)
                | (DeadlineAction::TripFail, DeadlineEvent::TripFail)
                | (DeadlineAction::Evict, DeadlineEvent::Evict)
        )
    }

    fn observe(
        &self,
        _: &DeadlineState,
        _: &DeadlineState,
        _: &DeadlineEvent,
    ) -> Result<(), NoContradiction> {
        Ok(())
    }

    fn disabled_reason(&self, s: &DeadlineState, event: &DeadlineEvent) -> Option<String> {
        if s.rstate != ReadState::Reading {
            return Some(format!("the read has ended ({})", s.rstate));
        }
        let tripped = self.tripped(s);
        Some(match event {
            DeadlineEvent::TripFail => format!(
                "the tripwire does not hold: {} of {} ticks without progress{}",
                s.noprog,
                self.trip_at,
                if self.no_progress_trip {
                    " (it counts ticks without progress, not total time)"
                } else {
                    ""
                }
            ),
            DeadlineEvent::Evict => {
                format!("clock {} is before the deadline {}", s.clock, self.deadline)
            }
            DeadlineEvent::Progress | DeadlineEvent::Stall | DeadlineEvent::Complete if tripped => {
                format!(
                    "the tripwire holds ({} ticks without progress): the read must fail",
                    s.noprog
                )
            }
            DeadlineEvent::Progress | DeadlineEvent::Complete if !self.healthy_progress => {
                "the read cannot progress (HealthyProgress = FALSE)".into()
            }
            _ => format!("clock {} has reached the deadline", s.clock),
        })
    }
}

crate::params! {
    RecoveryDeadline {
        trip_at: pub const TRIP_AT: Nat<u16> = Nat::new(
            "TripAt",
            0,
            u16::MAX as u64,
            2,
            "the tripwire fires at this many ticks",
        )
        .max_because("ticks are 16-bit");
        deadline: pub const DEADLINE: Nat<u16> = Nat::new(
            "Deadline",
            0,
            u16::MAX as u64,
            4,
            "the member is evicted at this many ticks of recovery (max.poll.interval.ms)",
        )
        .max_because("ticks are 16-bit");
        tripwire: pub const TRIPWIRE: Flag = Flag::new("Tripwire", true, "the read loop has a tripwire at all");
        no_progress_trip: pub const NO_PROGRESS_TRIP: Flag = Flag::new(
            "NoProgressTrip",
            true,
            "the tripwire counts consecutive ticks without progress, not total ticks",
        );
        healthy_progress: pub const HEALTHY_PROGRESS: Flag = Flag::new(
            "HealthyProgress",
            true,
            "platform fact: the read can advance and complete (false: the #849 hang)",
        );
    }
}

impl Configured for RecoveryDeadline {
    const NAME: &'static str = "RecoveryDeadline";
    const DOC: &'static str = include_str!("deadline.md");
    type Params = RecoveryDeadline;
    const GUARDS: &'static [Guard] = &[
        Guard::off("no-progress tripwire", Self::TRIPWIRE),
        Guard::off("tripwire keyed on no-progress", Self::NO_PROGRESS_TRIP),
    ];

    fn build(params: RecoveryDeadline) -> Self {
        params
    }
}
