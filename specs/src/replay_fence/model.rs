#![doc = include_str!("model.md")]

use loadbearing_refinement::{Model, Property};
use loadbearing_refinement::{Spec, Variables};

use crate::infra::knobs::{Flag, Nat};
use crate::{Configured, Guard};

/// Offsets are 16-bit: the states grow only as MaxOffset cubed, so offsets past a byte are in
/// reach (MaxOffset = 400: 10,827,000 states, as TLC counts them).
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct ReplayState {
    pub stored: u16,
    pub cur: u16,
    pub hw: u16,
    pub self_fenced: bool,
    pub crashed: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReplayAction {
    Fold,
    Write,
    Halted,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayFence {
    pub max_offset: u16,
    pub fix: bool,
}

impl ReplayFence {
    fn presented(&self, s: &ReplayState) -> u16 {
        if self.fix {
            s.cur.max(s.hw)
        } else {
            s.cur
        }
    }
}

impl Model for ReplayFence {
    type State = ReplayState;
    type Action = ReplayAction;

    fn init_states(&self) -> Vec<ReplayState> {
        (1..=self.max_offset)
            .map(|hw| ReplayState {
                stored: hw,
                cur: 0,
                hw,
                self_fenced: false,
                crashed: false,
            })
            .collect()
    }

    fn actions(&self, s: &ReplayState, actions: &mut Vec<ReplayAction>) {
        if s.crashed {
            actions.push(ReplayAction::Halted);
            return;
        }
        if s.cur < self.max_offset {
            actions.push(ReplayAction::Fold);
        }
        actions.push(ReplayAction::Write);
    }

    fn next_state(&self, s: &ReplayState, action: ReplayAction) -> Option<ReplayState> {
        let mut next = s.clone();
        match action {
            ReplayAction::Fold => next.cur = s.cur + 1,
            ReplayAction::Write => {
                let presented = self.presented(s);
                if s.stored <= presented {
                    next.stored = presented;
                } else {
                    next.self_fenced = true;
                    next.crashed = true;
                }
            }
            ReplayAction::Halted => {}
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("INV_NoSelfFence", |_, s: &ReplayState| !s.self_fenced),
            // The booleans are typed already; the offsets stay in 0..=MaxOffset.
            Property::always("TypeOK", |m: &Self, s: &ReplayState| {
                s.stored <= m.max_offset && s.cur <= m.max_offset && s.hw <= m.max_offset
            }),
            Property::eventually("OwnerCompletes", |m: &Self, s: &ReplayState| {
                s.cur == m.max_offset
            }),
            Property::sometimes("WriteAdvancesStore", |_, s: &ReplayState| s.stored > s.hw),
        ]
    }
}

impl Spec for ReplayFence {
    fn variables(&self, s: &ReplayState) -> Variables {
        vec![
            ("stored", s.stored.into()),
            ("cur", s.cur.into()),
            ("hw", s.hw.into()),
            ("selfFenced", s.self_fenced.into()),
            ("crashed", s.crashed.into()),
        ]
    }

    fn fairness_groups(&self) -> Vec<String> {
        vec!["Fold".into()]
    }

    fn fairness_group(&self, action: &ReplayAction) -> Option<usize> {
        matches!(action, ReplayAction::Fold).then_some(0)
    }

    fn actor(&self, _action: &ReplayAction) -> String {
        "owner".into()
    }

    /// Every step that changes the state increases this: Fold raises `cur`, a Write that lands
    /// raises `stored` (to the offset presented, which is not less), and a refused one crashes
    /// the owner, after which it only halts. So the state graph has no cycle, which the search
    /// checks on every step, and the liveness check walks none.
    fn variant(&self, s: &ReplayState) -> Option<u64> {
        Some(s.cur as u64 + s.stored as u64 + s.crashed as u64)
    }
}

crate::params! {
    ReplayFence {
        max_offset: pub const MAX_OFFSET: Nat<u16> = Nat::new(
            "MaxOffset",
            1,
            u16::MAX as u64,
            3,
            "events at offsets 1..MaxOffset",
        )
        .max_because("the offsets are 16-bit");
        fix: pub const FIX: Flag = Flag::new(
            "Fix",
            true,
            "present max(cur, recovered high water), not cur",
        );
    }
}

impl Configured for ReplayFence {
    const NAME: &'static str = "ReplayFence";
    const DOC: &'static str = include_str!("model.md");
    type Params = ReplayFence;
    const GUARDS: &'static [Guard] = &[Guard::off("replay fence", Self::FIX)];

    fn build(params: ReplayFence) -> Self {
        params
    }
}

// ---------------------------------------------------------------------------------------------
// Trace conformance: the owner's flow after a restart (impls/src/flow.rs with its buffer), read
// in the `replay_fence` vocabulary (`trace::ReplayEvent`), composed by the harness
// (conform/src/flow.rs).

use crate::replay_fence::trace::ReplayEvent;
use loadbearing_trace::Conform;

/// Why a replaying owner's event contradicts a ReplayFence step.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReplayContradiction {
    #[error("the owner recovered high water {seen}, the model's is {model}")]
    HighWater { seen: u64, model: u16 },
    #[error("the owner handled offset {handled}, but its next offset is {next}")]
    FoldOffset { handled: u64, next: u16 },
    #[error(
        "the owner presented offset {seen}; the model presents {} = {presented} (cur={cur}, hw={hw})",
        presents(*.fix)
    )]
    Presented {
        seen: u64,
        /// Whether the model is the fixed design (presents `max(cur, hw)`, not `cur`).
        fix: bool,
        presented: u16,
        cur: u16,
        hw: u16,
    },
    #[error("the owner fenced itself: its write at {presented} was refused by stored {stored}")]
    SelfFenced { presented: u16, stored: u16 },
    #[error("the owner's write at {presented} landed, the model refuses it (stored {stored})")]
    WriteLanded { presented: u16, stored: u16 },
    #[error("the stored offset is now {seen}, the model's is {model}")]
    Stored { seen: u64, model: u16 },
}

/// The offset the design presents, as the report names it.
fn presents(fix: bool) -> &'static str {
    if fix {
        "max(cur, hw)"
    } else {
        "cur"
    }
}

impl Conform for ReplayFence {
    type Event = ReplayEvent;
    type Contradiction = ReplayContradiction;

    fn reports(&self, action: &ReplayAction, event: &ReplayEvent) -> bool {
        match (action, event) {
            (ReplayAction::Fold, ReplayEvent::Fold { .. })
            | (ReplayAction::Write, ReplayEvent::Write { .. }) => true,
            (
                ReplayAction::Fold | ReplayAction::Write | ReplayAction::Halted,
                ReplayEvent::Fold { .. } | ReplayEvent::Write { .. },
            ) => false,
        }
    }

    fn observe(
        &self,
        before: &ReplayState,
        after: &ReplayState,
        event: &ReplayEvent,
    ) -> Result<(), ReplayContradiction> {
        if let Some(hw) = event.hw() {
            if hw != after.hw as u64 {
                return Err(ReplayContradiction::HighWater {
                    seen: hw,
                    model: after.hw,
                });
            }
        }
        match *event {
            ReplayEvent::Fold { offset, .. } => {
                if offset != after.cur as u64 {
                    return Err(ReplayContradiction::FoldOffset {
                        handled: offset,
                        next: after.cur,
                    });
                }
                Ok(())
            }
            ReplayEvent::Write {
                presented: seen_presented,
                stored,
                self_fenced,
                ..
            } => {
                let presented = self.presented(before);
                if let Some(seen) = seen_presented {
                    if seen != presented as u64 {
                        return Err(ReplayContradiction::Presented {
                            seen,
                            fix: self.fix,
                            presented,
                            cur: before.cur,
                            hw: before.hw,
                        });
                    }
                }
                if let Some(fenced) = self_fenced {
                    if fenced != after.self_fenced {
                        let stored = before.stored;
                        return Err(if fenced {
                            ReplayContradiction::SelfFenced { presented, stored }
                        } else {
                            ReplayContradiction::WriteLanded { presented, stored }
                        });
                    }
                }
                match stored {
                    Some(seen) if seen != after.stored as u64 => Err(ReplayContradiction::Stored {
                        seen,
                        model: after.stored,
                    }),
                    _ => Ok(()),
                }
            }
        }
    }

    /// A crashed owner takes no more steps; the model's stutter is never logged.
    fn is_silent(&self, action: &ReplayAction) -> bool {
        matches!(action, ReplayAction::Halted)
    }

    /// Offsets past `MaxOffset`: folded, presented, stored, and the high water.
    fn beyond(&self, events: &[ReplayEvent]) -> Option<loadbearing_trace::Beyond> {
        events.iter().enumerate().find_map(|(i, event)| {
            let named: Vec<(&str, u64)> = match *event {
                ReplayEvent::Fold { offset, hw } => [("offset", Some(offset)), ("high water", hw)]
                    .into_iter()
                    .filter_map(|(w, o)| Some((w, o?)))
                    .collect(),
                ReplayEvent::Write {
                    presented,
                    stored,
                    hw,
                    ..
                } => [
                    ("presented offset", presented),
                    ("stored offset", stored),
                    ("high water", hw),
                ]
                .into_iter()
                .filter_map(|(w, o)| Some((w, o?)))
                .collect(),
            };
            named.into_iter().find_map(|(what, o)| {
                ReplayFence::MAX_OFFSET
                    .passed_by(self.max_offset as u64, o, i, || format!("{what} {o}"))
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infra::knobs::{Constants, Params, Resolved, Value};

    /// The variant grows on every step that changes the state, with the fence and without
    /// it (where the owner crashes): the search finds it so and walks for no cycle.
    #[test]
    fn every_step_that_changes_the_state_increases_the_variant() {
        for fix in [true, false] {
            let model = ReplayFence { max_offset: 6, fix };
            let mut seen: std::collections::HashSet<ReplayState> =
                model.init_states().into_iter().collect();
            let mut todo: Vec<ReplayState> = seen.iter().cloned().collect();
            let mut steps = 0;
            while let Some(s) = todo.pop() {
                let mut actions = Vec::new();
                model.actions(&s, &mut actions);
                for a in actions {
                    let next = model.next_state(&s, a).unwrap();
                    if next != s {
                        steps += 1;
                        assert!(
                            model.variant(&next) > model.variant(&s),
                            "{s:?} -{a:?}-> {next:?}"
                        );
                    }
                    if seen.insert(next.clone()) {
                        todo.push(next);
                    }
                }
            }
            assert!(steps > 50, "fix {fix}: {steps} steps");
        }
    }

    /// Past a byte's range: TLC's benchmark constant (10,827,000 distinct states).
    #[test]
    fn builds_with_offsets_past_a_byte() {
        let given = Constants::from([("MaxOffset".to_string(), Value::Nat(400))]);
        let k = Resolved::resolve::<ReplayFence>("ReplayFence", &given).unwrap();
        let model = ReplayFence::from_resolved(&k).unwrap();
        assert_eq!(model.max_offset, 400);
        let init = model.init_states();
        assert_eq!(init.len(), 400);
        assert_eq!(init.last().unwrap().hw, 400);
        let too_far = Constants::from([("MaxOffset".to_string(), Value::Nat(70_000))]);
        assert_eq!(
            Resolved::resolve::<ReplayFence>("ReplayFence", &too_far)
                .unwrap_err()
                .to_string(),
            "constant `MaxOffset` = 70000 is outside 1..=65535: the offsets are 16-bit"
        );
    }

    #[test]
    fn a_presented_offset_names_the_designs_rule() {
        let why = |fix| {
            ReplayContradiction::Presented {
                seen: 1,
                fix,
                presented: 3,
                cur: 1,
                hw: 3,
            }
            .to_string()
        };
        assert_eq!(
            why(true),
            "the owner presented offset 1; the model presents max(cur, hw) = 3 (cur=1, hw=3)"
        );
        assert!(why(false).contains("the model presents cur = 3"));
    }
}
