#![doc = include_str!("model.md")]

use loadbearing_refinement::{Model, Property};
use loadbearing_refinement::{Refinement, Spec, Variables};

use crate::infra::knobs::{Flag, Nat};
use crate::infra::vocab::{Cell, Offsets, Op, Ops};
use crate::one_key::{self, OneKey};
use crate::{Configured, Guard};

#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct CassandraState {
    pub op: Ops,
    pub stored: Cell,
    pub owner_pos: u8,
    pub owner_loaded: bool,
    pub owner_state: Offsets,
    pub overwrote: bool,
}

impl CassandraState {
    /// The initial state over the event log `op`: no row, the owner loaded at offset 0.
    pub fn initial(op: Ops) -> CassandraState {
        CassandraState {
            op,
            stored: Cell::ABSENT,
            owner_pos: 0,
            owner_loaded: true,
            owner_state: Offsets::EMPTY,
            overwrote: false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CassandraAction {
    OwnerFold,
    OwnerRecover,
    ZombieWrite(u8),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cassandra {
    pub max_offset: u8,
    pub guarded: bool,
    pub tombstone: bool,
}

impl Cassandra {
    fn can_write(&self, stored: Cell, offset: u8) -> bool {
        !stored.present || !self.guarded || stored.offset <= offset
    }

    fn delete_result(&self, offset: u8) -> Cell {
        if self.tombstone {
            Cell::tomb(offset)
        } else {
            Cell::ABSENT
        }
    }

    /// A gated write: the row changes only if the guard lets it, and `overwrote` latches when
    /// it lands on a present row with a higher offset.
    fn write(&self, s: &mut CassandraState, offset: u8, row: Cell) {
        if self.can_write(s.stored, offset) {
            s.overwrote |= s.stored.would_overwrite(offset);
            s.stored = row;
        }
    }
}

impl Model for Cassandra {
    type State = CassandraState;
    type Action = CassandraAction;

    fn init_states(&self) -> Vec<CassandraState> {
        Ops::all(self.max_offset)
            .map(CassandraState::initial)
            .collect()
    }

    fn actions(&self, s: &CassandraState, actions: &mut Vec<CassandraAction>) {
        if s.owner_pos < self.max_offset && s.owner_loaded {
            actions.push(CassandraAction::OwnerFold);
        }
        if !s.owner_loaded {
            actions.push(CassandraAction::OwnerRecover);
        }
        actions.extend((1..=self.max_offset).map(CassandraAction::ZombieWrite));
    }

    fn next_state(&self, s: &CassandraState, action: CassandraAction) -> Option<CassandraState> {
        let mut next = s.clone();
        match action {
            CassandraAction::OwnerFold => {
                let o = s.owner_pos + 1;
                match s.op.at(o) {
                    Op::Persist => {
                        let in_memory = s.owner_state.with(o);
                        next.owner_state = in_memory;
                        // The owner writes what it holds in memory, not a recomputed fold.
                        self.write(&mut next, o, Cell::snap(o, in_memory));
                        next.owner_loaded = true;
                    }
                    Op::Delete => {
                        next.owner_state = Offsets::EMPTY;
                        self.write(&mut next, o, self.delete_result(o));
                        next.owner_loaded = false;
                    }
                }
                next.owner_pos = o;
            }
            CassandraAction::OwnerRecover => {
                next.owner_state = s.stored.live_contents();
                next.owner_loaded = true;
            }
            CassandraAction::ZombieWrite(m) => {
                let row = match s.op.at(m) {
                    Op::Persist => Cell::snap(m, s.op.correct_contents(m)),
                    Op::Delete => self.delete_result(m),
                };
                self.write(&mut next, m, row);
            }
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("RefDurableOK", one_key::ref_durable_ok::<Self>),
            Property::always("RefTypeOK", one_key::ref_type_ok::<Self>),
            Property::always("INV_NoStaleOverwrite", |_, s: &CassandraState| !s.overwrote),
            Property::always("INV_NoCorruptDurable", one_key::no_corrupt_durable::<Self>),
            Property::always("TypeOK", |m: &Self, s: &CassandraState| {
                let max = m.max_offset;
                one_key::row_in_range(s.stored, max)
                    && s.owner_pos <= max
                    && s.owner_state.within(1, max)
            }),
            Property::eventually("RefLive", one_key::ref_live::<Self>),
            Property::sometimes("OwnerReachesEnd", |m: &Self, s: &CassandraState| {
                s.owner_pos == m.max_offset
            }),
        ]
    }
}

impl OneKey for Cassandra {
    fn max_offset(&self) -> u8 {
        self.max_offset
    }
    fn log(s: &CassandraState) -> Ops {
        s.op
    }
    fn row(s: &CassandraState) -> Cell {
        s.stored
    }
}

impl Spec for Cassandra {
    fn variables(&self, s: &CassandraState) -> Variables {
        vec![
            ("op", s.op.shown(self.max_offset)),
            ("stored", s.stored.into()),
            ("ownerPos", s.owner_pos.into()),
            ("ownerLoaded", s.owner_loaded.into()),
            ("ownerState", s.owner_state.into()),
            ("overwrote", s.overwrote.into()),
        ]
    }

    fn fairness_groups(&self) -> Vec<String> {
        vec!["OwnerFold".into(), "OwnerRecover".into()]
    }

    fn fairness_group(&self, action: &CassandraAction) -> Option<usize> {
        match action {
            CassandraAction::OwnerFold => Some(0),
            CassandraAction::OwnerRecover => Some(1),
            CassandraAction::ZombieWrite(_) => None,
        }
    }

    fn refinements(&self) -> Vec<Box<dyn Refinement<CassandraState>>> {
        vec![one_key::ref_safe_spec(self)]
    }

    fn actor(&self, action: &CassandraAction) -> String {
        match action {
            CassandraAction::ZombieWrite(_) => "zombie".into(),
            _ => "owner".into(),
        }
    }
}

crate::params! {
    Cassandra {
        max_offset: pub const MAX_OFFSET: Nat = crate::infra::vocab::MAX_OFFSET;
        guarded: pub const GUARDED: Flag = Flag::new(
            "Guarded",
            true,
            "writes carry the offset compare-and-set (IF offset <= o)",
        );
        tombstone: pub const TOMBSTONE: Flag = Flag::new(
            "Tombstone",
            true,
            "a delete keeps the row as an offset-carrying tombstone",
        );
    }
}

impl Configured for Cassandra {
    const NAME: &'static str = "Cassandra";
    const DOC: &'static str = include_str!("model.md");
    type Params = Cassandra;
    const GUARDS: &'static [Guard] = &[
        Guard::off("offset condition", Self::GUARDED),
        Guard::off("tombstone", Self::TOMBSTONE),
    ];

    fn build(params: Cassandra) -> Self {
        params
    }
}

// ---------------------------------------------------------------------------------------------
// Trace conformance: the partition flows (impls/src/flow.rs) read as this model, in the `flow`
// vocabulary (`trace::FlowEvent`), composed by the harness (conform/src/flow.rs).

use crate::cassandra::trace::{FlowEvent, Write};
use crate::one_key::conform::{check_op, expect_u64, Counter, OneKeyContradiction};
use loadbearing_trace::Conform;

/// Why a partition flow's event contradicts a Cassandra step.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CassandraContradiction {
    #[error(transparent)]
    OneKey(#[from] OneKeyContradiction),
    #[error("the implementation applied offset {offset} over {row}: a stale write landed")]
    StaleWriteLanded { offset: u8, row: Cell },
    #[error("the implementation refused offset {offset}, but the row holds {row}: the write should have applied")]
    WriteRefused { offset: u8, row: Cell },
    #[error("the implementation's row is now {seen}, the model's is {model}")]
    Row { seen: Cell, model: Cell },
    #[error("the owner folded offset {folded}, but its next offset is {next}")]
    FoldOffset { folded: u64, next: u8 },
    #[error("the owner reloaded {seen}, the model's owner reloads {model} from {stored}")]
    Reload {
        seen: Offsets,
        model: Offsets,
        stored: Cell,
    },
}

impl Cassandra {
    /// What a write event observed, compared with the model's gate and row.
    fn observe_write(
        &self,
        before: &CassandraState,
        after: &CassandraState,
        w: Write,
        offset: u8,
    ) -> Result<(), CassandraContradiction> {
        check_op(before.op, offset as u64, w.op)?;
        expect_u64(w.presented, offset as u64, Counter::PresentedOffset)?;
        let row = before.stored;
        let gate = self.can_write(row, offset);
        match w.applied {
            Some(true) if !gate => {
                return Err(CassandraContradiction::StaleWriteLanded { offset, row })
            }
            Some(false) if gate => {
                return Err(CassandraContradiction::WriteRefused { offset, row })
            }
            _ => {}
        }
        observe_row(after, w.stored)
    }
}

/// The row the implementation read back after the step, against the model's.
fn observe_row(after: &CassandraState, seen: Option<Cell>) -> Result<(), CassandraContradiction> {
    match seen {
        Some(seen) if seen != after.stored => Err(CassandraContradiction::Row {
            seen,
            model: after.stored,
        }),
        _ => Ok(()),
    }
}

impl Conform for Cassandra {
    type Event = FlowEvent;
    type Contradiction = CassandraContradiction;

    /// The log is fixed per trace: every offset an event names fixes its op; the offsets no
    /// event names are enumerated (none, in a harness trace where the owner folds them all).
    /// Events that contradict each other on an op leave no log (the trace diverges).
    fn initial_candidates(&self, events: &[FlowEvent]) -> Vec<CassandraState> {
        crate::cassandra::trace::logs_of(self.max_offset, events)
            .into_iter()
            .map(CassandraState::initial)
            .collect()
    }

    fn reports(&self, action: &CassandraAction, event: &FlowEvent) -> bool {
        match (action, event) {
            (CassandraAction::OwnerFold, FlowEvent::OwnerFold { .. })
            | (CassandraAction::OwnerRecover, FlowEvent::OwnerRecover { .. }) => true,
            (CassandraAction::ZombieWrite(m), FlowEvent::ZombieWrite { offset, .. }) => {
                *offset == *m as u64
            }
            // No handover in this model: a trace with one is the evolved model's.
            (
                CassandraAction::OwnerFold
                | CassandraAction::OwnerRecover
                | CassandraAction::ZombieWrite(_),
                FlowEvent::OwnerFold { .. }
                | FlowEvent::ZombieWrite { .. }
                | FlowEvent::OwnerRecover { .. }
                | FlowEvent::Handover { .. },
            ) => false,
        }
    }

    fn observe(
        &self,
        before: &CassandraState,
        after: &CassandraState,
        event: &FlowEvent,
    ) -> Result<(), CassandraContradiction> {
        match event {
            FlowEvent::OwnerFold { offset, .. } => {
                let o = before.owner_pos + 1;
                if *offset != o as u64 {
                    return Err(CassandraContradiction::FoldOffset {
                        folded: *offset,
                        next: o,
                    });
                }
                self.observe_write(before, after, event.write().expect("a fold writes"), o)
            }
            FlowEvent::ZombieWrite { offset, .. } => {
                let m = (*offset).min(u8::MAX as u64) as u8;
                self.observe_write(before, after, event.write().expect("a flush writes"), m)
            }
            // Reported by no action of this model (`reports`), so never observed.
            FlowEvent::Handover { stored, .. } => observe_row(after, *stored),
            FlowEvent::OwnerRecover {
                owner_state,
                stored,
            } => match owner_state {
                Some(seen) if *seen != after.owner_state => Err(CassandraContradiction::Reload {
                    seen: *seen,
                    model: after.owner_state,
                    stored: before.stored,
                }),
                _ => observe_row(after, *stored),
            },
        }
    }

    /// The flow keeps a deleted key's (empty) state in memory instead of evicting it and
    /// reloading it from the store, so the model's reload may happen unlogged.
    fn is_silent(&self, action: &CassandraAction) -> bool {
        matches!(action, CassandraAction::OwnerRecover)
    }

    /// Offsets past `MaxOffset`.
    fn beyond(&self, events: &[FlowEvent]) -> Option<loadbearing_trace::Beyond> {
        crate::one_key::conform::offset_beyond(
            Cassandra::MAX_OFFSET,
            self.max_offset,
            crate::cassandra::trace::offsets_named(events),
        )
    }
}
