#![doc = include_str!("model_835.md")]

use loadbearing_refinement::{Model, Property};
use loadbearing_refinement::{Refinement, Spec, Variables};

use crate::infra::knobs::{Flag, Nat};
use crate::infra::vocab::{Cell, Offsets, Op, Ops};
use crate::one_key::{self, OneKey};
use crate::{Configured, Guard};

/// How many handovers a behaviour may take: two, so a second recovery over an already-advanced
/// store (where the journal revive re-enters) is in scope.
pub const HANDOVER_LIMIT: u8 = 2;

#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Cassandra835State {
    pub op: Ops,
    pub store: Cell,
    pub owner_pos: u8,
    pub owner_loaded: bool,
    pub owner_state: Offsets,
    /// A stale write regressed a present row's offset.
    pub overwrote: bool,
    /// The monotone buffer's floor: the offset the last recovery surfaced (0: none).
    pub recovered_at: u8,
    /// The committed input offset: advances only on a successful flush; a teardown resumes here.
    pub committed: u8,
    pub handovers: u8,
    /// The first-write spurious conflict has been injected (it is transient: once).
    pub spurious_used: bool,
    /// This recovery's post-read init has fired (once per recovery).
    pub reseeded: bool,
    /// The offsets present as rows of the key's journal (unfenced, idempotent inserts).
    pub journal_rows: Offsets,
    /// The offset of the state the last recovery restored: the fold's filter floor, which is not
    /// the buffer floor (a tombstone restores no state but floors the buffer).
    pub folded_at: u8,
}

impl Cassandra835State {
    /// The initial state over the event log `op`: no row, the owner loaded at offset 0.
    pub fn initial(op: Ops) -> Cassandra835State {
        Cassandra835State {
            op,
            store: Cell::ABSENT,
            owner_pos: 0,
            owner_loaded: true,
            owner_state: Offsets::EMPTY,
            overwrote: false,
            recovered_at: 0,
            committed: 0,
            handovers: 0,
            spurious_used: false,
            reseeded: false,
            journal_rows: Offsets::EMPTY,
            folded_at: 0,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cassandra835Action {
    OwnerFold,
    OwnerRecover,
    /// A new owner takes over, resuming from committed offset `c`.
    Handover(u8),
    SpuriousConflict,
    /// The post-read init regresses the floor to `j`.
    ReseedFloor(u8),
    Reap,
    ZombieWrite(u8),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cassandra835 {
    pub max_offset: u8,
    pub guarded: bool,
    pub tombstone: bool,
    pub fix: bool,
    pub spurious: bool,
    pub tomb_floor: bool,
    pub monotonic_init: bool,
    pub reap_ttl: bool,
    pub events_recovery: bool,
    pub journal_order: bool,
    pub floor_guard: bool,
    pub floor_filter: bool,
    pub skip_tomb: bool,
}

/// The members of `rows` the log `op` says are persists.
fn persists(op: Ops, rows: Offsets) -> Offsets {
    Offsets(rows.0 & !op.0)
}

/// Folds a set of journal rows onto `base` in ascending offset order: a persist adds its
/// offset, a delete clears everything at or below it (the base included).
fn fold_rows_onto(op: Ops, rows: Offsets, base: Offsets) -> Offsets {
    let last_delete = Offsets(rows.0 & op.0).max();
    if last_delete == 0 {
        Offsets(base.0 | persists(op, rows).0)
    } else {
        persists(op, rows).above(last_delete)
    }
}

impl Cassandra835 {
    /// The design's constants (the suite's `cassandra_refines`) at `max_offset`: every guard
    /// on, snapshot recovery, no TTL and no spurious conflict.
    pub fn design(max_offset: u8) -> Cassandra835 {
        Cassandra835 {
            max_offset,
            guarded: true,
            tombstone: true,
            fix: true,
            spurious: false,
            tomb_floor: true,
            monotonic_init: true,
            reap_ttl: false,
            events_recovery: false,
            journal_order: true,
            floor_guard: true,
            floor_filter: true,
            skip_tomb: false,
        }
    }

    pub(super) fn can_write(&self, store: Cell, offset: u8) -> bool {
        !store.present || !self.guarded || store.offset <= offset
    }

    /// `RecoveredFloor`: a live row surfaces its offset; a tombstone only through a
    /// tombstone-aware read.
    fn recovered_floor(&self, store: Cell) -> u8 {
        if store.present && (!store.deleted || self.tomb_floor) {
            store.offset
        } else {
            0
        }
    }

    /// The rows above the fenced floor (`SurvivingRows`).
    fn surviving_rows(&self, s: &Cassandra835State) -> Offsets {
        s.journal_rows.above(self.recovered_floor(s.store))
    }

    /// `EventsState`: what an events-recovery restores, under the active journal guard.
    fn events_state(&self, s: &Cassandra835State) -> Offsets {
        let whole = fold_rows_onto(s.op, s.journal_rows, Offsets::EMPTY);
        if !self.floor_guard {
            whole
        } else if self.floor_filter {
            fold_rows_onto(s.op, self.surviving_rows(s), s.store.live_contents())
        } else if s.journal_rows.max() < s.store.offset {
            // The fold-result comparison: a fold that trails the store is discarded.
            s.store.live_contents()
        } else {
            whole
        }
    }

    /// `EventsRecoveredOffset`: the offset the events-recovered state sits at.
    fn events_recovered_offset(&self, s: &Cassandra835State) -> u8 {
        let journal_max = s.journal_rows.max();
        if !self.floor_guard {
            journal_max
        } else if self.floor_filter {
            self.recovered_floor(s.store)
                .max(self.surviving_rows(s).max())
        } else if journal_max < s.store.offset {
            self.recovered_floor(s.store)
        } else {
            journal_max
        }
    }

    /// What a recovery (OwnerRecover or Handover) restores into `next`: the state, the buffer
    /// floor and the fold's filter floor.
    fn recover(&self, s: &Cassandra835State, next: &mut Cassandra835State) {
        if self.events_recovery {
            next.owner_state = self.events_state(s);
            next.recovered_at = self.events_recovered_offset(s);
            next.folded_at = next.recovered_at;
        } else {
            next.owner_state = s.store.live_contents();
            next.recovered_at = self.recovered_floor(s.store);
            next.folded_at = if s.store.present && !s.store.deleted {
                s.store.offset
            } else {
                0
            };
        }
        next.owner_loaded = true;
        next.reseeded = false;
    }

    fn delete_result(&self, offset: u8) -> Cell {
        if self.tombstone {
            Cell::tomb(offset)
        } else {
            Cell::ABSENT
        }
    }

    /// `Folded(m)`: the deterministic fold a zombie flushes at `m`.
    fn folded(&self, op: Ops, m: u8) -> Cell {
        match op.at(m) {
            Op::Persist => Cell::snap(m, op.correct_contents(m)),
            Op::Delete => self.delete_result(m),
        }
    }

    fn owner_fold(&self, s: &Cassandra835State, next: &mut Cassandra835State) {
        let o = s.owner_pos + 1;
        let op = s.op.at(o);
        // The fold's filter: a record at or below the restored state's offset is skipped.
        let filtered = o <= s.folded_at;
        let new_state = if filtered {
            s.owner_state
        } else {
            match op {
                Op::Persist => s.owner_state.with(o),
                Op::Delete => Offsets::EMPTY,
            }
        };
        // The monotone buffer presents the recovered high-water and drops a replay below it.
        let presented = if self.fix { o.max(s.recovered_at) } else { o };
        let dropped = self.fix && o <= s.recovered_at;
        // Before the always-tombstone fix, a key never yet durable defers its flush: no row is
        // written, not even for its delete.
        let never_persisted = self.skip_tomb && !s.store.present;
        let written = if never_persisted {
            s.store
        } else {
            match op {
                // The owner writes what it holds in memory, not a recomputed fold.
                Op::Persist => Cell::snap(presented, new_state),
                Op::Delete => self.delete_result(presented),
            }
        };
        if dropped || self.can_write(s.store, presented) {
            if !dropped {
                next.store = written;
                next.overwrote |= s.store.would_overwrite(presented);
            }
            next.committed = o;
            next.owner_pos = o;
            next.owner_state = new_state;
            // An executed delete evicts the key; a filtered one is skipped.
            next.owner_loaded = op == Op::Persist || filtered;
            // Journal-first: a persist inserts its row, a delete clears the journal.
            next.journal_rows = if filtered || never_persisted {
                s.journal_rows
            } else if op == Op::Delete {
                Offsets::EMPTY
            } else if self.journal_order {
                s.journal_rows.with(o)
            } else {
                s.journal_rows
            };
        } else {
            // A CAS conflict raises, the flow tears down and resumes from `committed`. A
            // conflicting persist already flushed its journal row; a delete never clears it.
            next.owner_loaded = false;
            next.owner_pos = s.committed;
            if op == Op::Persist && self.journal_order {
                next.journal_rows = s.journal_rows.with(o);
            }
        }
    }

    fn zombie_write(&self, s: &Cassandra835State, next: &mut Cassandra835State, m: u8) {
        let lands = self.can_write(s.store, m);
        if lands {
            next.store = self.folded(s.op, m);
            next.overwrote |= s.store.would_overwrite(m);
        }
        // The zombie's journal flush precedes its gated snapshot flush and is itself ungated: a
        // persist inserts its row even below a tombstone; a delete clears only if it landed.
        next.journal_rows = match s.op.at(m) {
            Op::Persist => s.journal_rows.with(m),
            Op::Delete if lands => Offsets::EMPTY,
            Op::Delete => s.journal_rows,
        };
    }

    /// `INV_NoResurrection`: once a delete at `d` is committed, no live row sits at or below it.
    fn no_resurrection(&self, s: &Cassandra835State) -> bool {
        (1..=self.max_offset).all(|d| {
            !(s.op.at(d) == Op::Delete && s.committed >= d && s.store.present && !s.store.deleted)
                || s.store.offset > d
        })
    }

    fn type_ok(&self, s: &Cassandra835State) -> bool {
        let max = self.max_offset;
        one_key::row_in_range(s.store, max)
            && s.owner_pos <= max
            && s.owner_state.within(1, max)
            && s.recovered_at <= max
            && s.committed <= max
            && s.handovers <= HANDOVER_LIMIT
            && s.journal_rows.within(0, max)
            && s.folded_at <= max
    }
}

impl Model for Cassandra835 {
    type State = Cassandra835State;
    type Action = Cassandra835Action;

    fn init_states(&self) -> Vec<Cassandra835State> {
        Ops::all(self.max_offset)
            .map(Cassandra835State::initial)
            .collect()
    }

    fn actions(&self, s: &Cassandra835State, actions: &mut Vec<Cassandra835Action>) {
        if s.owner_pos < self.max_offset && s.owner_loaded {
            actions.push(Cassandra835Action::OwnerFold);
        }
        if !s.owner_loaded {
            actions.push(Cassandra835Action::OwnerRecover);
        }
        if s.handovers < HANDOVER_LIMIT && s.store.present {
            actions.extend((0..=s.store.offset).map(Cassandra835Action::Handover));
        }
        if self.spurious
            && !s.spurious_used
            && s.owner_loaded
            && s.owner_pos < self.max_offset
            && !s.store.present
        {
            actions.push(Cassandra835Action::SpuriousConflict);
        }
        if !self.monotonic_init && !s.reseeded && s.owner_loaded && s.recovered_at > 0 {
            actions.extend((0..s.recovered_at).map(Cassandra835Action::ReseedFloor));
        }
        if self.reap_ttl && s.store.present {
            actions.push(Cassandra835Action::Reap);
        }
        actions.extend((1..=self.max_offset).map(Cassandra835Action::ZombieWrite));
    }

    fn next_state(
        &self,
        s: &Cassandra835State,
        action: Cassandra835Action,
    ) -> Option<Cassandra835State> {
        let mut next = s.clone();
        match action {
            Cassandra835Action::OwnerFold => self.owner_fold(s, &mut next),
            Cassandra835Action::OwnerRecover => self.recover(s, &mut next),
            Cassandra835Action::Handover(c) => {
                self.recover(s, &mut next);
                next.owner_pos = c;
                next.committed = c;
                next.handovers += 1;
            }
            Cassandra835Action::SpuriousConflict => {
                next.spurious_used = true;
                next.owner_loaded = false;
                next.owner_pos = s.committed;
            }
            Cassandra835Action::ReseedFloor(j) => {
                next.recovered_at = j;
                next.reseeded = true;
            }
            Cassandra835Action::Reap => next.store = Cell::ABSENT,
            Cassandra835Action::ZombieWrite(m) => self.zombie_write(s, &mut next, m),
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("RefDurableOK", one_key::ref_durable_ok::<Self>),
            Property::always("RefTypeOK", one_key::ref_type_ok::<Self>),
            Property::always("INV_NoStaleOverwrite", |_, s: &Cassandra835State| {
                !s.overwrote
            }),
            Property::always("INV_NoCorruptDurable", one_key::no_corrupt_durable::<Self>),
            Property::always("INV_NoResurrection", |m: &Self, s: &Cassandra835State| {
                m.no_resurrection(s)
            }),
            Property::always("TypeOK", |m: &Self, s: &Cassandra835State| m.type_ok(s)),
            Property::eventually("RefLive", one_key::ref_live::<Self>),
            Property::sometimes("OwnerReachesEnd", |m: &Self, s: &Cassandra835State| {
                s.owner_pos == m.max_offset
            }),
            // The replay window is reached: the owner resumes below the floor it recovered.
            Property::sometimes("ReplayWindow", |_, s: &Cassandra835State| {
                s.owner_loaded && s.committed < s.recovered_at
            }),
            // The spurious first-write conflict fired and the owner still reached the end.
            Property::sometimes("SpuriousAbsorbed", |m: &Self, s: &Cassandra835State| {
                s.spurious_used && s.owner_pos == m.max_offset
            }),
        ]
    }
}

impl OneKey for Cassandra835 {
    fn max_offset(&self) -> u8 {
        self.max_offset
    }
    fn log(s: &Cassandra835State) -> Ops {
        s.op
    }
    fn row(s: &Cassandra835State) -> Cell {
        s.store
    }
}

impl Spec for Cassandra835 {
    fn variables(&self, s: &Cassandra835State) -> Variables {
        vec![
            ("op", s.op.shown(self.max_offset)),
            ("store", s.store.into()),
            ("ownerPos", s.owner_pos.into()),
            ("ownerLoaded", s.owner_loaded.into()),
            ("ownerState", s.owner_state.into()),
            ("overwrote", s.overwrote.into()),
            ("recoveredAt", s.recovered_at.into()),
            ("committed", s.committed.into()),
            ("handovers", s.handovers.into()),
            ("spuriousUsed", s.spurious_used.into()),
            ("reseeded", s.reseeded.into()),
            ("journalRows", s.journal_rows.into()),
            ("foldedAt", s.folded_at.into()),
        ]
    }

    fn fairness_groups(&self) -> Vec<String> {
        vec!["OwnerFold".into(), "OwnerRecover".into()]
    }

    fn fairness_group(&self, action: &Cassandra835Action) -> Option<usize> {
        match action {
            Cassandra835Action::OwnerFold => Some(0),
            Cassandra835Action::OwnerRecover => Some(1),
            Cassandra835Action::Handover(_)
            | Cassandra835Action::SpuriousConflict
            | Cassandra835Action::ReseedFloor(_)
            | Cassandra835Action::Reap
            | Cassandra835Action::ZombieWrite(_) => None,
        }
    }

    fn refinements(&self) -> Vec<Box<dyn Refinement<Cassandra835State>>> {
        vec![one_key::ref_safe_spec(self)]
    }

    fn actor(&self, action: &Cassandra835Action) -> String {
        match action {
            Cassandra835Action::ZombieWrite(_) => "zombie".into(),
            Cassandra835Action::Reap => "ttl".into(),
            _ => "owner".into(),
        }
    }
}

crate::params! {
    Cassandra835 {
        max_offset: pub const MAX_OFFSET: Nat = crate::infra::vocab::MAX_OFFSET;
        guarded: pub const GUARDED: Flag = super::model::Cassandra::GUARDED;
        tombstone: pub const TOMBSTONE: Flag = super::model::Cassandra::TOMBSTONE;
        fix: pub const FIX: Flag = Flag::new(
            "Fix",
            true,
            "the monotone buffer presents the recovered high-water and drops replays below it",
        );
        spurious: pub const SPURIOUS: Flag = Flag::new(
            "Spurious",
            false,
            "the first write may raise a spurious conflict once (the row reaped before the retry)",
        );
        tomb_floor: pub const TOMB_FLOOR: Flag = Flag::new(
            "TombFloor",
            true,
            "recovery surfaces a tombstone's offset as the buffer floor",
        );
        monotonic_init: pub const MONOTONIC_INIT: Flag = Flag::new(
            "MonotonicInit",
            true,
            "the post-read init goes through the monotonic put (a below-floor init is dropped)",
        );
        reap_ttl: pub const REAP_TTL: Flag = Flag::new(
            "ReapTTL",
            false,
            "the TTL may reap the whole row, its offset guard included",
        );
        events_recovery: pub const EVENTS_RECOVERY: Flag = Flag::new(
            "EventsRecovery",
            false,
            "recovery folds the journal instead of reading the snapshot",
        );
        journal_order: pub const JOURNAL_ORDER: Flag = Flag::new(
            "JournalOrder",
            true,
            "the owner's journal row is flushed before its snapshot",
        );
        floor_guard: pub const FLOOR_GUARD: Flag = Flag::new(
            "FloorGuard",
            true,
            "events-recovery guards the journal fold against the fenced store",
        );
        floor_filter: pub const FLOOR_FILTER: Flag = Flag::new(
            "FloorFilter",
            true,
            "the guard folds only journal rows above the fenced floor onto the store's snapshot \
             (false: the fold-result comparison)",
        );
        skip_tomb: pub const SKIP_TOMB: Flag = Flag::new(
            "SkipTomb",
            false,
            "a delete of a never-persisted key writes no tombstone (the deferred-flush window)",
        );
    }
}

impl Configured for Cassandra835 {
    const NAME: &'static str = "Cassandra835";
    const DOC: &'static str = include_str!("model_835.md");
    type Params = Cassandra835;
    const GUARDS: &'static [Guard] = &[
        Guard::off("offset condition", Self::GUARDED),
        Guard::off("tombstone", Self::TOMBSTONE),
        Guard::off("monotone buffer", Self::FIX),
        Guard::off("tombstone floor", Self::TOMB_FLOOR),
        Guard::off("monotonic init", Self::MONOTONIC_INIT),
        Guard::on("within the TTL", Self::REAP_TTL),
        Guard::off("journal guard", Self::FLOOR_GUARD),
        Guard::off("floor filter", Self::FLOOR_FILTER),
        Guard::on("always tombstone", Self::SKIP_TOMB),
    ];

    fn build(params: Cassandra835) -> Self {
        params
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_rows_fold_in_offset_order() {
        // persist 1, delete 2, persist 3
        let op = Ops(1 << 2);
        let rows = Offsets::EMPTY.with(1).with(3);
        assert_eq!(fold_rows_onto(op, rows, Offsets::EMPTY), rows);
        let with_delete = rows.with(2);
        assert_eq!(
            fold_rows_onto(op, with_delete, Offsets::EMPTY.with(1)),
            Offsets::EMPTY.with(3)
        );
        assert_eq!(Offsets::EMPTY.max(), 0);
        assert_eq!(rows.max(), 3);
        assert_eq!(rows.above(1), Offsets::EMPTY.with(3));
        assert_eq!(rows.above(0), rows);
    }
}
