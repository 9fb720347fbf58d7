#![doc = include_str!("alive.md")]

use std::fmt;

use loadbearing_refinement::Shown;
use loadbearing_refinement::{Model, Property};
use loadbearing_refinement::{Spec, Variables};
use loadbearing_trace::Conform;

use crate::infra::knobs::{Flag, Nat};
use crate::{Configured, Guard};

/// At most this many partitions: a set of them is a bitmask of a `u16`, not a `u8`, since the
/// model stays small enough to check past eight.
pub const MAX_PARTITIONS: u8 = 16;

/// A set of partitions: bit `i` is partition `p{i+1}`.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Partitions(pub u16);

impl Partitions {
    pub const EMPTY: Partitions = Partitions(0);

    /// Whether partition `p` is in the set (one past the set's 16 never is).
    pub fn contains(self, p: u8) -> bool {
        p < MAX_PARTITIONS && self.0 & (1 << p) != 0
    }

    pub fn is_subset(self, of: Partitions) -> bool {
        self.0 & !of.0 == 0
    }

    pub fn union(self, other: Partitions) -> Partitions {
        Partitions(self.0 | other.0)
    }

    pub fn minus(self, other: Partitions) -> Partitions {
        Partitions(self.0 & !other.0)
    }
}

impl From<Partitions> for Shown {
    fn from(partitions: Partitions) -> Shown {
        let members = (0..MAX_PARTITIONS)
            .filter(|&p| partitions.contains(p))
            .map(|p| Shown::name(format!("p{}", p + 1)));
        Shown::items("{", ", ", "}", members)
    }
}

impl fmt::Display for Partitions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let members: Vec<String> = (0..MAX_PARTITIONS)
            .filter(|&p| self.contains(p))
            .map(|p| format!("p{}", p + 1))
            .collect();
        write!(f, "{{{}}}", members.join(", "))
    }
}

impl fmt::Debug for Partitions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct FlowsState {
    /// The partitions assigned to this node in the current generation.
    pub owned: Partitions,
    /// The partitions with a live flow in the cache.
    pub live: Partitions,
    /// The generation, bumped by each rebalance (16-bit: the states grow only linearly in it).
    pub gen: u16,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum FlowsAction {
    /// A rebalance assigns the node this set of partitions.
    Rebalance(Partitions),
    /// The deferred teardown of partition `p` (0-based) completes.
    Teardown(u8),
}

impl fmt::Debug for FlowsAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlowsAction::Rebalance(to) => write!(f, "Rebalance({to})"),
            FlowsAction::Teardown(p) => write!(f, "Teardown(p{})", p + 1),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowsAlive {
    pub partitions: u8,
    pub max_gen: u16,
    /// Revoke awaits the flow's teardown before the node acts in the new generation.
    pub await_teardown: bool,
}

impl FlowsAlive {
    fn all(&self) -> Partitions {
        Partitions(((1u32 << self.partitions) - 1) as u16)
    }

    fn type_ok(&self, s: &FlowsState) -> bool {
        s.owned.is_subset(self.all()) && s.live.is_subset(self.all()) && s.gen <= self.max_gen
    }
}

impl Model for FlowsAlive {
    type State = FlowsState;
    type Action = FlowsAction;

    fn init_states(&self) -> Vec<FlowsState> {
        vec![FlowsState {
            owned: Partitions::EMPTY,
            live: Partitions::EMPTY,
            gen: 0,
        }]
    }

    fn actions(&self, s: &FlowsState, actions: &mut Vec<FlowsAction>) {
        if s.gen < self.max_gen {
            actions.extend(
                (0..=self.all().0)
                    .map(Partitions)
                    .filter(|&to| to != s.owned)
                    .map(FlowsAction::Rebalance),
            );
        }
        actions.extend(
            (0..self.partitions)
                .filter(|&p| s.live.contains(p) && !s.owned.contains(p))
                .map(FlowsAction::Teardown),
        );
    }

    fn next_state(&self, s: &FlowsState, action: FlowsAction) -> Option<FlowsState> {
        let mut next = s.clone();
        match action {
            FlowsAction::Rebalance(to) => {
                next.gen = s.gen + 1;
                next.owned = to;
                let fresh = to.minus(s.live);
                next.live = if self.await_teardown {
                    s.live.minus(s.owned.minus(to)).union(fresh)
                } else {
                    // Fire-and-forget: the revoked flows linger until their Teardown runs.
                    s.live.union(fresh)
                };
            }
            FlowsAction::Teardown(p) => next.live = s.live.minus(Partitions(1 << p)),
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("INV_FlowsAlive", |_, s: &FlowsState| {
                s.live.is_subset(s.owned)
            }),
            Property::always("TypeOK", |m: &Self, s: &FlowsState| m.type_ok(s)),
            // The first rebalance can only assign; owning exactly the last partition after the
            // second means that rebalance revoked another one that had a live flow, so the
            // teardown coupling was exercised.
            Property::sometimes("RevokeTornDown", |m: &Self, s: &FlowsState| {
                s.gen == 2 && s.owned == Partitions(1 << (m.partitions - 1)) && m.partitions > 1
            }),
        ]
    }
}

impl Spec for FlowsAlive {
    fn variables(&self, s: &FlowsState) -> Variables {
        vec![
            ("owned", s.owned.into()),
            ("live", s.live.into()),
            ("gen", s.gen.into()),
        ]
    }

    fn actor(&self, action: &FlowsAction) -> String {
        match action {
            FlowsAction::Rebalance(_) => "coordinator".into(),
            FlowsAction::Teardown(_) => "teardown".into(),
        }
    }
}

use crate::flows::alive_trace::FlowsEvent;

impl Partitions {
    /// The set of these 0-based partitions, or `None` if one is out of range.
    pub fn of(partitions: &[u8]) -> Option<Partitions> {
        partitions.iter().try_fold(Partitions::EMPTY, |set, &p| {
            (p < MAX_PARTITIONS).then(|| set.union(Partitions(1 << p)))
        })
    }
}

/// Why a member's event contradicts a FlowsAlive step.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FlowsContradiction {
    #[error("after the rebalance the live flows are {seen:?}, the model's are {model}")]
    Live { seen: Vec<u8>, model: Partitions },
}

impl Conform for FlowsAlive {
    type Event = FlowsEvent;
    type Contradiction = FlowsContradiction;

    fn reports(&self, action: &FlowsAction, event: &FlowsEvent) -> bool {
        match (action, event) {
            (FlowsAction::Rebalance(to), FlowsEvent::Rebalance { owned, .. }) => {
                Partitions::of(owned) == Some(*to)
            }
            (FlowsAction::Teardown(p), FlowsEvent::Teardown { partition }) => p == partition,
            _ => false,
        }
    }

    fn observe(
        &self,
        _before: &FlowsState,
        after: &FlowsState,
        event: &FlowsEvent,
    ) -> Result<(), FlowsContradiction> {
        match event {
            FlowsEvent::Rebalance {
                live: Some(live), ..
            } if Partitions::of(live) != Some(after.live) => Err(FlowsContradiction::Live {
                seen: live.clone(),
                model: after.live,
            }),
            _ => Ok(()),
        }
    }

    /// Partitions past `Partitions` (they are 0-based: p needs p + 1), and more rebalances
    /// than `MaxGen`.
    fn beyond(&self, events: &[FlowsEvent]) -> Option<loadbearing_trace::Beyond> {
        let mut rebalances = 0u64;
        events.iter().enumerate().find_map(|(i, event)| {
            let partitions: Vec<u8> = match event {
                FlowsEvent::Rebalance { owned, live } => {
                    rebalances += 1;
                    owned.iter().chain(live.iter().flatten()).copied().collect()
                }
                FlowsEvent::Teardown { partition } => vec![*partition],
            };
            partitions
                .into_iter()
                .find_map(|p| {
                    FlowsAlive::PARTITIONS.passed_by(
                        self.partitions as u64,
                        p as u64 + 1,
                        i,
                        || format!("partition {p} (0-based)"),
                    )
                })
                .or_else(|| {
                    FlowsAlive::MAX_GEN.passed_by(self.max_gen as u64, rebalances, i, || {
                        format!("rebalance number {rebalances}")
                    })
                })
        })
    }

    fn disabled_reason(&self, state: &FlowsState, event: &FlowsEvent) -> Option<String> {
        match event {
            FlowsEvent::Teardown { partition } if !state.live.contains(*partition) => {
                Some(format!("no live flow of p{} to tear down", partition + 1))
            }
            FlowsEvent::Teardown { partition } => Some(format!(
                "p{} is owned: its flow is not revoked{}",
                partition + 1,
                if self.await_teardown {
                    ", and revoke awaits the teardown"
                } else {
                    ""
                }
            )),
            FlowsEvent::Rebalance { .. } if state.gen >= self.max_gen => {
                Some(format!("MaxGen = {} rebalances already", self.max_gen))
            }
            FlowsEvent::Rebalance { owned, .. } => {
                Some(format!("no rebalance to {owned:?} from {}", state.owned))
            }
        }
    }
}

crate::params! {
    FlowsAlive {
        partitions: pub const PARTITIONS: Nat = Nat::new(
            "Partitions",
            1,
            MAX_PARTITIONS as u64,
            2,
            "partitions p1..pPartitions the node may be assigned",
        )
        .max_because("a set of partitions is 16-bit");
        max_gen: pub const MAX_GEN: Nat<u16> = Nat::new(
            "MaxGen",
            0,
            u16::MAX as u64,
            3,
            "rebalances bump the generation up to MaxGen",
        )
        .max_because("the generation is 16-bit");
        await_teardown: pub const AWAIT_TEARDOWN: Flag = Flag::new(
            "AwaitTeardown",
            true,
            "revoke awaits the flow's teardown before the node owns the new generation",
        );
    }
}

impl Configured for FlowsAlive {
    const NAME: &'static str = "FlowsAlive";
    const DOC: &'static str = include_str!("alive.md");
    type Params = FlowsAlive;
    const GUARDS: &'static [Guard] = &[Guard::off("awaited flow teardown", Self::AWAIT_TEARDOWN)];

    fn build(params: FlowsAlive) -> Self {
        params
    }
}
