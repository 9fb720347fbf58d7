#![doc = include_str!("model.md")]

use loadbearing_refinement::{Model, Property};
use loadbearing_refinement::{Refinement, Spec, Variables};

use crate::infra::knobs::{Flag, Nat};
use crate::infra::vocab::{Cell, Offsets, Op, Ops};
use crate::one_key::{self, OneKey};
use crate::{Configured, Guard};

#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct KafkaState {
    pub op: Ops,
    pub topic: Cell,
    pub owner_pos: u8,
    pub owner_loaded: bool,
    pub owner_state: Offsets,
    pub overwrote: bool,
    pub live_gen: u8,
    pub z_alive: bool,
    pub z_captured_gen: u8,
    pub z_carries_offset: bool,
    pub rebalanced: bool,
}

impl KafkaState {
    /// The initial state over the event log `op`.
    pub fn initial(op: Ops) -> KafkaState {
        KafkaState {
            op,
            topic: Cell::ABSENT,
            owner_pos: 0,
            owner_loaded: true,
            owner_state: Offsets::EMPTY,
            overwrote: false,
            live_gen: 1,
            z_alive: false,
            z_captured_gen: 0,
            z_carries_offset: false,
            rebalanced: false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KafkaAction {
    OwnerFold,
    OwnerRecover,
    Rebalance,
    Poll,
    ZombieCommit(u8),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kafka {
    pub max_offset: u8,
    pub coupled: bool,
    pub seeded: bool,
}

/// The live owner's fold, shared with Epoch: its transaction is always accepted and writes the
/// correct fold, while its in-memory state evolves as Cassandra's does.
pub(crate) fn owner_fold(
    op: Ops,
    topic: &mut Cell,
    owner_pos: &mut u8,
    owner_loaded: &mut bool,
    owner_state: &mut Offsets,
) -> bool {
    let o = *owner_pos + 1;
    let overwrote = topic.would_overwrite(o);
    *topic = Cell::correct_fold(op, o);
    match op.at(o) {
        Op::Persist => {
            *owner_state = owner_state.with(o);
            *owner_loaded = true;
        }
        Op::Delete => {
            *owner_state = Offsets::EMPTY;
            *owner_loaded = false;
        }
    }
    *owner_pos = o;
    overwrote
}

impl Model for Kafka {
    type State = KafkaState;
    type Action = KafkaAction;

    fn init_states(&self) -> Vec<KafkaState> {
        Ops::all(self.max_offset).map(KafkaState::initial).collect()
    }

    fn actions(&self, s: &KafkaState, actions: &mut Vec<KafkaAction>) {
        if s.owner_pos < self.max_offset && s.owner_loaded {
            actions.push(KafkaAction::OwnerFold);
        }
        if !s.owner_loaded {
            actions.push(KafkaAction::OwnerRecover);
        }
        if !s.rebalanced {
            actions.push(KafkaAction::Rebalance);
        }
        if s.z_alive && s.z_captured_gen != s.live_gen {
            actions.push(KafkaAction::Poll);
        }
        if s.z_alive {
            actions.extend((1..=self.max_offset).map(KafkaAction::ZombieCommit));
        }
    }

    fn next_state(&self, s: &KafkaState, action: KafkaAction) -> Option<KafkaState> {
        let mut next = s.clone();
        match action {
            KafkaAction::OwnerFold => {
                next.overwrote |= owner_fold(
                    s.op,
                    &mut next.topic,
                    &mut next.owner_pos,
                    &mut next.owner_loaded,
                    &mut next.owner_state,
                );
            }
            KafkaAction::OwnerRecover => {
                next.owner_state = s.topic.live_contents();
                next.owner_loaded = true;
            }
            KafkaAction::Rebalance => {
                next.live_gen = s.live_gen + 1;
                next.z_alive = true;
                next.z_captured_gen = s.live_gen;
                next.z_carries_offset = self.seeded;
                next.rebalanced = true;
            }
            KafkaAction::Poll => {
                next.z_captured_gen = s.live_gen;
                // Coupled: the rebalance callback that captures the generation tears the flow down.
                next.z_alive = !self.coupled;
            }
            KafkaAction::ZombieCommit(m) => {
                let accepted = !s.z_carries_offset || s.z_captured_gen == s.live_gen;
                if accepted {
                    next.overwrote |= s.topic.would_overwrite(m);
                    next.topic = Cell::correct_fold(s.op, m);
                }
            }
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("RefDurableOK", one_key::ref_durable_ok::<Self>),
            Property::always("RefTypeOK", one_key::ref_type_ok::<Self>),
            Property::always("INV_NoStaleOverwrite", |_, s: &KafkaState| !s.overwrote),
            Property::always("INV_CaptureCoupled", |_, s: &KafkaState| {
                !s.z_alive || s.z_captured_gen != s.live_gen
            }),
            Property::always("TypeOK", |m: &Self, s: &KafkaState| {
                let max = m.max_offset;
                one_key::row_in_range(s.topic, max)
                    && s.owner_pos <= max
                    && s.owner_state.within(1, max)
                    && s.live_gen <= max + 2
                    && s.z_captured_gen <= max + 2
            }),
            Property::eventually("RefLive", one_key::ref_live::<Self>),
            Property::sometimes("ZombieFenced", |_, s: &KafkaState| {
                s.rebalanced && !s.z_alive
            }),
        ]
    }
}

impl OneKey for Kafka {
    fn max_offset(&self) -> u8 {
        self.max_offset
    }
    fn log(s: &KafkaState) -> Ops {
        s.op
    }
    fn row(s: &KafkaState) -> Cell {
        s.topic
    }
}

impl Spec for Kafka {
    fn variables(&self, s: &KafkaState) -> Variables {
        vec![
            ("op", s.op.shown(self.max_offset)),
            ("topic", s.topic.into()),
            ("ownerPos", s.owner_pos.into()),
            ("ownerLoaded", s.owner_loaded.into()),
            ("ownerState", s.owner_state.into()),
            ("overwrote", s.overwrote.into()),
            ("liveGen", s.live_gen.into()),
            ("zAlive", s.z_alive.into()),
            ("zCapturedGen", s.z_captured_gen.into()),
            ("zCarriesOffset", s.z_carries_offset.into()),
            ("rebalanced", s.rebalanced.into()),
        ]
    }

    fn fairness_groups(&self) -> Vec<String> {
        vec!["OwnerFold".into(), "OwnerRecover".into()]
    }

    fn fairness_group(&self, action: &KafkaAction) -> Option<usize> {
        match action {
            KafkaAction::OwnerFold => Some(0),
            KafkaAction::OwnerRecover => Some(1),
            _ => None,
        }
    }

    fn refinements(&self) -> Vec<Box<dyn Refinement<KafkaState>>> {
        vec![one_key::ref_safe_spec(self)]
    }

    fn actor(&self, action: &KafkaAction) -> String {
        match action {
            KafkaAction::OwnerFold | KafkaAction::OwnerRecover => "owner".into(),
            KafkaAction::Rebalance => "coordinator".into(),
            KafkaAction::Poll | KafkaAction::ZombieCommit(_) => "zombie".into(),
        }
    }
}

crate::params! {
    Kafka {
        max_offset: pub const MAX_OFFSET: Nat = crate::infra::vocab::MAX_OFFSET;
        coupled: pub const COUPLED: Flag = Flag::new(
            "Coupled",
            true,
            "capturing the new generation tears the revoked flow down",
        );
        seeded: pub const SEEDED: Flag = Flag::new(
            "Seeded",
            true,
            "the zombie's flush carries an input offset, so it is gated",
        );
    }
}

impl Configured for Kafka {
    const NAME: &'static str = "Kafka";
    const DOC: &'static str = include_str!("model.md");
    type Params = Kafka;
    const GUARDS: &'static [Guard] = &[
        Guard::off("capture coupling", Self::COUPLED),
        Guard::off("seed", Self::SEEDED),
    ];

    fn build(params: Kafka) -> Self {
        params
    }
}

/// Conformance: the implementation's step events, in the `kafka` vocabulary
/// (`trace::KafkaEvent`, `docs/trace-format.md`). `ZombieInit` is an Epoch step: a stutter
/// here, it changes no Kafka variable. Every observation is optional; a missing one is
/// searched.
impl loadbearing_trace::Conform for Kafka {
    type Event = KafkaEvent;
    type Contradiction = KafkaContradiction;

    fn initial_candidates(&self, events: &[KafkaEvent]) -> Vec<KafkaState> {
        revealed_logs(
            self.max_offset,
            events.iter().filter_map(KafkaEvent::reveals),
        )
        .into_iter()
        .map(KafkaState::initial)
        .collect()
    }

    fn reports(&self, action: &KafkaAction, event: &KafkaEvent) -> bool {
        match (action, event) {
            (KafkaAction::OwnerFold, KafkaEvent::OwnerFold { .. })
            | (KafkaAction::OwnerRecover, KafkaEvent::OwnerRecover { .. })
            | (KafkaAction::Rebalance, KafkaEvent::Rebalance { .. })
            | (KafkaAction::Poll, KafkaEvent::Poll { .. }) => true,
            (KafkaAction::ZombieCommit(m), KafkaEvent::ZombieCommit { offset, .. }) => {
                *offset == *m as u64
            }
            (
                KafkaAction::OwnerFold
                | KafkaAction::OwnerRecover
                | KafkaAction::Rebalance
                | KafkaAction::Poll
                | KafkaAction::ZombieCommit(_),
                KafkaEvent::OwnerFold { .. }
                | KafkaEvent::OwnerRecover { .. }
                | KafkaEvent::Rebalance { .. }
                | KafkaEvent::Poll { .. }
                | KafkaEvent::ZombieInit {}
                | KafkaEvent::ZombieCommit { .. },
            ) => false,
        }
    }

    fn observe(
        &self,
        before: &KafkaState,
        after: &KafkaState,
        event: &KafkaEvent,
    ) -> Result<(), KafkaContradiction> {
        match event {
            KafkaEvent::OwnerFold { .. } => {
                observe_owner_fold(before.op, before.owner_pos, after.topic, event)
            }
            KafkaEvent::OwnerRecover { owner_state, topic } => {
                observe_recover(after.owner_state, after.topic, *owner_state, *topic)
            }
            KafkaEvent::Rebalance { live_gen } => Ok(expect_u64(
                *live_gen,
                after.live_gen as u64,
                Counter::LiveGeneration,
            )?),
            KafkaEvent::Poll {
                z_captured_gen,
                torn_down,
            } => {
                expect_u64(
                    *z_captured_gen,
                    after.z_captured_gen as u64,
                    Counter::CapturedGeneration,
                )?;
                match torn_down {
                    Some(torn) if *torn == after.z_alive => Err(if *torn {
                        KafkaContradiction::TornDownButAlive
                    } else {
                        KafkaContradiction::CapturedNotTornDown {
                            captured: after.z_captured_gen,
                        }
                    }),
                    _ => Ok(()),
                }
            }
            KafkaEvent::ZombieCommit {
                offset: m,
                op,
                outcome,
                topic,
            } => {
                check_op(before.op, *m, *op)?;
                let fenced = before.z_carries_offset && before.z_captured_gen != before.live_gen;
                match outcome.as_ref().map(TxnOutcome::committed) {
                    Some(true) if fenced => {
                        return Err(KafkaContradiction::ZombieCommitAccepted {
                            offset: *m,
                            captured: before.z_captured_gen,
                            live: before.live_gen,
                        })
                    }
                    Some(false) if !fenced => {
                        return Err(KafkaContradiction::ZombieCommitRefused { offset: *m })
                    }
                    _ => {}
                }
                Ok(expect_topic(after.topic, *topic)?)
            }
            // The Epoch design's producer init changes no Kafka variable.
            KafkaEvent::ZombieInit {} => Ok(()),
        }
    }

    fn is_stutter(&self, event: &KafkaEvent) -> bool {
        matches!(event, KafkaEvent::ZombieInit {})
    }

    /// Offsets past `MaxOffset`.
    fn beyond(&self, events: &[KafkaEvent]) -> Option<loadbearing_trace::Beyond> {
        crate::one_key::conform::offset_beyond(
            Kafka::MAX_OFFSET,
            self.max_offset,
            crate::kafka::trace::offsets_named(events),
        )
    }
}

use crate::kafka::trace::{KafkaEvent, TxnOutcome};
use crate::one_key::conform::{
    check_op, expect_topic, expect_u64, revealed_logs, Counter, OneKeyContradiction,
};

/// Why a Kafka flow's event contradicts a Kafka step (the owner's, shared with Epoch, and
/// the zombie's).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KafkaContradiction {
    #[error(transparent)]
    OneKey(#[from] OneKeyContradiction),
    #[error("a {0:?} is not the owner's fold")]
    NotOwnerFold(KafkaEvent),
    #[error("the owner folded offset {folded}, the model's owner folds offset {next} next")]
    FoldOffset { folded: u64, next: u64 },
    #[error(
        "the owner's transaction at offset {offset} did not commit ({outcome}), but the model's \
         live owner is always accepted"
    )]
    OwnerTxnFailed { offset: u64, outcome: TxnOutcome },
    #[error("the owner reloaded {seen}, the model's owner reloads {model}")]
    Reload { seen: Offsets, model: Offsets },
    #[error("the zombie's flow was torn down, but the model keeps it alive")]
    TornDownButAlive,
    #[error(
        "the zombie captured generation {captured} but its flow was not torn down: \
         the model couples the capture and the teardown"
    )]
    CapturedNotTornDown { captured: u8 },
    #[error(
        "the zombie's commit at offset {offset} was accepted, but the model fences \
         it (its offset commit carries generation {captured} while the coordinator is \
         at {live}): a stale write landed"
    )]
    ZombieCommitAccepted { offset: u64, captured: u8, live: u8 },
    #[error("the zombie's commit at offset {offset} was refused, but the model accepts it")]
    ZombieCommitRefused { offset: u64 },
}

/// The live owner folds the next offset and its transaction is always accepted (Kafka and
/// Epoch alike).
pub(crate) fn observe_owner_fold(
    ops: Ops,
    owner_pos: u8,
    topic: Cell,
    event: &KafkaEvent,
) -> Result<(), KafkaContradiction> {
    let KafkaEvent::OwnerFold {
        offset,
        op,
        outcome,
        topic: seen,
    } = event
    else {
        return Err(KafkaContradiction::NotOwnerFold(event.clone()));
    };
    let o = owner_pos as u64 + 1;
    if *offset != o {
        return Err(KafkaContradiction::FoldOffset {
            folded: *offset,
            next: o,
        });
    }
    check_op(ops, o, *op)?;
    if let Some(outcome) = outcome.as_ref().filter(|o| !o.committed()) {
        return Err(KafkaContradiction::OwnerTxnFailed {
            offset: o,
            outcome: outcome.clone(),
        });
    }
    Ok(expect_topic(topic, *seen)?)
}

pub(crate) fn observe_recover(
    owner_state: Offsets,
    topic: Cell,
    seen_state: Option<Offsets>,
    seen_topic: Option<Cell>,
) -> Result<(), KafkaContradiction> {
    match seen_state {
        Some(got) if got != owner_state => {
            return Err(KafkaContradiction::Reload {
                seen: got,
                model: owner_state,
            })
        }
        _ => {}
    }
    Ok(expect_topic(topic, seen_topic)?)
}
