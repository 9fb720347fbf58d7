#![doc = include_str!("model.md")]

use loadbearing_refinement::{Model, Property};
use loadbearing_refinement::{Refinement, Spec, Variables};

use crate::infra::knobs::Nat;
use crate::infra::vocab::{Cell, Offsets, Ops};
use crate::kafka::model::owner_fold;
use crate::one_key::{self, OneKey};
use crate::Configured;

#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct EpochState {
    pub op: Ops,
    pub topic: Cell,
    pub owner_pos: u8,
    pub owner_loaded: bool,
    pub owner_state: Offsets,
    pub rebalanced: bool,
    pub z_epoch: u8,
    pub max_epoch: u8,
}

impl EpochState {
    /// The initial state over the event log `op`.
    pub fn initial(op: Ops) -> EpochState {
        EpochState {
            op,
            topic: Cell::ABSENT,
            owner_pos: 0,
            owner_loaded: true,
            owner_state: Offsets::EMPTY,
            rebalanced: false,
            z_epoch: 0,
            max_epoch: 1,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EpochAction {
    OwnerFold,
    OwnerRecover,
    Rebalance,
    ZombieInit,
    ZombieCommit(u8),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Epoch {
    pub max_offset: u8,
}

impl Model for Epoch {
    type State = EpochState;
    type Action = EpochAction;

    fn init_states(&self) -> Vec<EpochState> {
        Ops::all(self.max_offset).map(EpochState::initial).collect()
    }

    fn actions(&self, s: &EpochState, actions: &mut Vec<EpochAction>) {
        if s.owner_pos < self.max_offset && s.owner_loaded {
            actions.push(EpochAction::OwnerFold);
        }
        if !s.owner_loaded {
            actions.push(EpochAction::OwnerRecover);
        }
        if !s.rebalanced {
            actions.push(EpochAction::Rebalance);
        }
        if s.rebalanced && s.z_epoch == 0 {
            actions.push(EpochAction::ZombieInit);
        }
        if s.rebalanced && s.z_epoch > 0 && s.z_epoch == s.max_epoch {
            actions.extend((1..=self.max_offset).map(EpochAction::ZombieCommit));
        }
    }

    fn next_state(&self, s: &EpochState, action: EpochAction) -> Option<EpochState> {
        let mut next = s.clone();
        match action {
            EpochAction::OwnerFold => {
                owner_fold(
                    s.op,
                    &mut next.topic,
                    &mut next.owner_pos,
                    &mut next.owner_loaded,
                    &mut next.owner_state,
                );
            }
            EpochAction::OwnerRecover => {
                next.owner_state = s.topic.live_contents();
                next.owner_loaded = true;
            }
            EpochAction::Rebalance => next.rebalanced = true,
            EpochAction::ZombieInit => {
                next.z_epoch = s.max_epoch + 1;
                next.max_epoch = next.z_epoch;
            }
            EpochAction::ZombieCommit(m) => next.topic = Cell::correct_fold(s.op, m),
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("RefDurableOK", one_key::ref_durable_ok::<Self>),
            Property::always("RefTypeOK", one_key::ref_type_ok::<Self>),
            Property::always("TypeOK", |m: &Self, s: &EpochState| {
                let max = m.max_offset;
                one_key::row_in_range(s.topic, max)
                    && s.owner_pos <= max
                    && s.z_epoch <= max + 2
                    && s.max_epoch <= max + 2
            }),
            Property::eventually("RefLive", one_key::ref_live::<Self>),
        ]
    }
}

impl OneKey for Epoch {
    fn max_offset(&self) -> u8 {
        self.max_offset
    }
    fn log(s: &EpochState) -> Ops {
        s.op
    }
    fn row(s: &EpochState) -> Cell {
        s.topic
    }
}

impl Spec for Epoch {
    fn variables(&self, s: &EpochState) -> Variables {
        vec![
            ("op", s.op.shown(self.max_offset)),
            ("topic", s.topic.into()),
            ("ownerPos", s.owner_pos.into()),
            ("ownerLoaded", s.owner_loaded.into()),
            ("ownerState", s.owner_state.into()),
            ("rebalanced", s.rebalanced.into()),
            ("zEpoch", s.z_epoch.into()),
            ("maxEpoch", s.max_epoch.into()),
        ]
    }

    fn fairness_groups(&self) -> Vec<String> {
        vec!["OwnerFold".into()]
    }

    fn fairness_group(&self, action: &EpochAction) -> Option<usize> {
        matches!(action, EpochAction::OwnerFold).then_some(0)
    }

    fn refinements(&self) -> Vec<Box<dyn Refinement<EpochState>>> {
        vec![one_key::ref_safe_spec(self)]
    }

    fn actor(&self, action: &EpochAction) -> String {
        match action {
            EpochAction::OwnerFold | EpochAction::OwnerRecover => "owner".into(),
            EpochAction::Rebalance => "coordinator".into(),
            EpochAction::ZombieInit | EpochAction::ZombieCommit(_) => "zombie".into(),
        }
    }
}

crate::params! {
    Epoch {
        max_offset: pub const MAX_OFFSET: Nat = crate::infra::vocab::MAX_OFFSET;
    }
}

impl Configured for Epoch {
    const NAME: &'static str = "Epoch";
    const DOC: &'static str = include_str!("model.md");
    type Params = Epoch;

    fn build(params: Epoch) -> Self {
        params
    }
}

/// Conformance: the `kafka` vocabulary of the Kafka model's adapter (see
/// [`crate::kafka::model::Kafka`]'s `Conform`), `ZombieInit` included. The model's `ZombieCommit(m)`
/// is an accepted commit; a commit the coordinator refused (the zombie's epoch was bumped
/// past) changes no variable, so it is read as a stutter of a zombie that exists. `Poll` is no
/// Epoch step.
impl loadbearing_trace::Conform for Epoch {
    type Event = KafkaEvent;
    type Contradiction = EpochContradiction;

    fn initial_candidates(&self, events: &[KafkaEvent]) -> Vec<EpochState> {
        revealed_logs(
            self.max_offset,
            events.iter().filter_map(KafkaEvent::reveals),
        )
        .into_iter()
        .map(EpochState::initial)
        .collect()
    }

    fn reports(&self, action: &EpochAction, event: &KafkaEvent) -> bool {
        match (action, event) {
            (EpochAction::OwnerFold, KafkaEvent::OwnerFold { .. })
            | (EpochAction::OwnerRecover, KafkaEvent::OwnerRecover { .. })
            | (EpochAction::Rebalance, KafkaEvent::Rebalance { .. })
            | (EpochAction::ZombieInit, KafkaEvent::ZombieInit {}) => true,
            (EpochAction::ZombieCommit(m), KafkaEvent::ZombieCommit { offset, .. }) => {
                *offset == *m as u64
            }
            (
                EpochAction::OwnerFold
                | EpochAction::OwnerRecover
                | EpochAction::Rebalance
                | EpochAction::ZombieInit
                | EpochAction::ZombieCommit(_),
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
        before: &EpochState,
        after: &EpochState,
        event: &KafkaEvent,
    ) -> Result<(), EpochContradiction> {
        match event {
            KafkaEvent::OwnerFold { .. } => Ok(observe_owner_fold(
                before.op,
                before.owner_pos,
                after.topic,
                event,
            )?),
            KafkaEvent::OwnerRecover { owner_state, topic } => Ok(observe_recover(
                after.owner_state,
                after.topic,
                *owner_state,
                *topic,
            )?),
            KafkaEvent::Rebalance { .. } | KafkaEvent::ZombieInit {} => Ok(()),
            KafkaEvent::ZombieCommit {
                offset: m,
                op,
                topic,
                ..
            } => {
                check_op(before.op, *m, *op)?;
                if refused(event) {
                    // A refused commit is a stutter (before == after); the model's own
                    // ZombieCommit always lands.
                    return if before != after {
                        Err(EpochContradiction::ZombieCommitRefused { offset: *m })
                    } else if before.rebalanced && before.z_epoch > 0 {
                        Ok(())
                    } else {
                        Err(EpochContradiction::CommitBeforeInit)
                    };
                }
                Ok(expect_topic(after.topic, *topic)?)
            }
            KafkaEvent::Poll { .. } => Err(EpochContradiction::PollIsNoStep),
        }
    }

    fn is_stutter(&self, event: &KafkaEvent) -> bool {
        refused(event)
    }

    /// Offsets past `MaxOffset`.
    fn beyond(&self, events: &[KafkaEvent]) -> Option<loadbearing_trace::Beyond> {
        crate::one_key::conform::offset_beyond(
            Epoch::MAX_OFFSET,
            self.max_offset,
            crate::kafka::trace::offsets_named(events),
        )
    }
}

/// A zombie commit the coordinator refused.
fn refused(event: &KafkaEvent) -> bool {
    match event {
        KafkaEvent::ZombieCommit { outcome, .. } => {
            outcome.as_ref().map(TxnOutcome::committed) == Some(false)
        }
        KafkaEvent::OwnerFold { .. }
        | KafkaEvent::OwnerRecover { .. }
        | KafkaEvent::Rebalance { .. }
        | KafkaEvent::Poll { .. }
        | KafkaEvent::ZombieInit {} => false,
    }
}

use crate::kafka::model::{observe_owner_fold, observe_recover, KafkaContradiction};
use crate::kafka::trace::{KafkaEvent, TxnOutcome};
use crate::one_key::conform::{check_op, expect_topic, revealed_logs, OneKeyContradiction};

/// Why a Kafka flow's event contradicts an Epoch step: the owner's steps are Kafka's, the
/// zombie's commit lands unless refused before it initialised.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EpochContradiction {
    #[error(transparent)]
    OneKey(#[from] OneKeyContradiction),
    #[error(transparent)]
    Owner(#[from] KafkaContradiction),
    #[error(
        "the zombie's commit at offset {offset} was refused, but the model's \
         zombie holds the highest epoch and its commit lands"
    )]
    ZombieCommitRefused { offset: u64 },
    #[error("a zombie commit before the zombie initialised")]
    CommitBeforeInit,
    #[error("`Poll` is not an Epoch step")]
    PollIsNoStep,
}
