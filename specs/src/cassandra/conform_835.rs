//! Trace conformance of the evolved Cassandra model: the partition flows
//! (`impls/src/flow.rs`) over the compare-and-set store, in the `flow` vocabulary
//! ([`crate::cassandra::trace::FlowEvent`]), composed by the harness (`conform/src/cassandra_835.rs`).
//!
//! What this model adds to the 24-config one, and so what a trace of it shows: a refused write
//! tears the owner down, and a new incarnation resumes at the committed offset and recovers
//! (`OwnerRecover`, logged); a handover resumes a new owner at a committed offset that may trail
//! the row (`Handover`, logged); and a replay at or below the recovered floor writes nothing.

use loadbearing_trace::Conform;

use crate::cassandra::model_835::{Cassandra835, Cassandra835Action, Cassandra835State};
use crate::cassandra::trace::{logs_of, FlowEvent, Write};
use crate::infra::vocab::{Cell, Offsets};
use crate::one_key::conform::{check_op, expect_u64, Counter, OneKeyContradiction};

/// Why a partition flow's event contradicts a step of the evolved Cassandra model.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Cassandra835Contradiction {
    #[error(transparent)]
    OneKey(#[from] OneKeyContradiction),
    #[error("the implementation applied offset {offset} over {row}: a stale write landed")]
    StaleWriteLanded { offset: u8, row: Cell },
    #[error("the implementation refused offset {offset}, but the row holds {row}: the write should have applied")]
    WriteRefused { offset: u8, row: Cell },
    #[error("the owner wrote its replay of offset {offset}, at or below its recovered floor {floor}: the model drops it")]
    ReplayWritten { offset: u8, floor: u8 },
    #[error("the owner wrote nothing for offset {offset}, above its recovered floor {floor}: the model writes it")]
    RecordDropped { offset: u8, floor: u8 },
    #[error("the implementation's row is now {seen}, the model's is {model}")]
    Row { seen: Cell, model: Cell },
    #[error("the owner folded offset {folded}, but its next offset is {next}")]
    FoldOffset { folded: u64, next: u8 },
    #[error("the owner holds {seen} after recovering, the model's owner {model} from {stored}")]
    Reload {
        seen: Offsets,
        model: Offsets,
        stored: Cell,
    },
}

type Contradiction = Cassandra835Contradiction;

impl Cassandra835 {
    /// The offset a fold at `o` presents: the recovered high water under the monotone buffer.
    fn presented(&self, s: &Cassandra835State, o: u8) -> u8 {
        if self.fix {
            o.max(s.recovered_at)
        } else {
            o
        }
    }

    /// Whether the owner's fold at `o` writes a row (not dropped below the floor, not deferred
    /// for a never-persisted key).
    fn fold_writes(&self, s: &Cassandra835State, o: u8) -> bool {
        let dropped = self.fix && o <= s.recovered_at;
        let deferred = self.skip_tomb && !s.store.present;
        !dropped && !deferred
    }

    /// A write's outcome against the gate on the row before it.
    fn observe_gate(
        &self,
        before: &Cassandra835State,
        w: Write,
        at: u8,
    ) -> Result<(), Contradiction> {
        expect_u64(w.presented, at as u64, Counter::PresentedOffset)?;
        let row = before.store;
        match (w.applied, self.can_write(row, at)) {
            (Some(true), false) => Err(Contradiction::StaleWriteLanded { offset: at, row }),
            (Some(false), true) => Err(Contradiction::WriteRefused { offset: at, row }),
            _ => Ok(()),
        }
    }

    fn observe_fold(
        &self,
        before: &Cassandra835State,
        after: &Cassandra835State,
        w: Write,
    ) -> Result<(), Contradiction> {
        let o = before.owner_pos + 1;
        if w.offset != o as u64 {
            return Err(Contradiction::FoldOffset {
                folded: w.offset,
                next: o,
            });
        }
        check_op(before.op, w.offset, w.op)?;
        let floor = before.recovered_at;
        match (self.fold_writes(before, o), w.presented.is_some()) {
            (false, true) if self.fix && o <= floor => {
                return Err(Contradiction::ReplayWritten { offset: o, floor })
            }
            (true, false) => return Err(Contradiction::RecordDropped { offset: o, floor }),
            (true, true) => self.observe_gate(before, w, self.presented(before, o))?,
            _ => {}
        }
        observe_row(after, w.stored)
    }

    fn observe_recovery(
        &self,
        before: &Cassandra835State,
        after: &Cassandra835State,
        owner_state: Option<Offsets>,
        stored: Option<Cell>,
    ) -> Result<(), Contradiction> {
        match owner_state {
            Some(seen) if seen != after.owner_state => Err(Contradiction::Reload {
                seen,
                model: after.owner_state,
                stored: before.store,
            }),
            _ => observe_row(after, stored),
        }
    }
}

/// The row the implementation read back after the step, against the model's.
fn observe_row(after: &Cassandra835State, seen: Option<Cell>) -> Result<(), Contradiction> {
    match seen {
        Some(seen) if seen != after.store => Err(Contradiction::Row {
            seen,
            model: after.store,
        }),
        _ => Ok(()),
    }
}

impl Conform for Cassandra835 {
    type Event = FlowEvent;
    type Contradiction = Cassandra835Contradiction;

    /// The log is fixed per trace: every offset an event names fixes its op; the others are
    /// enumerated.
    fn initial_candidates(&self, events: &[FlowEvent]) -> Vec<Cassandra835State> {
        logs_of(self.max_offset, events)
            .into_iter()
            .map(Cassandra835State::initial)
            .collect()
    }

    fn reports(&self, action: &Cassandra835Action, event: &FlowEvent) -> bool {
        match (action, event) {
            (Cassandra835Action::OwnerFold, FlowEvent::OwnerFold { .. })
            | (Cassandra835Action::OwnerRecover, FlowEvent::OwnerRecover { .. }) => true,
            (Cassandra835Action::ZombieWrite(m), FlowEvent::ZombieWrite { offset, .. }) => {
                *offset == *m as u64
            }
            (Cassandra835Action::Handover(c), FlowEvent::Handover { resume_at, .. }) => {
                *resume_at == *c as u64
            }
            // The flows have no spurious conflict (the store's compound hides it), no post-read
            // init and no TTL reap: those steps are no event's.
            (
                Cassandra835Action::OwnerFold
                | Cassandra835Action::OwnerRecover
                | Cassandra835Action::ZombieWrite(_)
                | Cassandra835Action::Handover(_)
                | Cassandra835Action::SpuriousConflict
                | Cassandra835Action::ReseedFloor(_)
                | Cassandra835Action::Reap,
                FlowEvent::OwnerFold { .. }
                | FlowEvent::ZombieWrite { .. }
                | FlowEvent::OwnerRecover { .. }
                | FlowEvent::Handover { .. },
            ) => false,
        }
    }

    fn observe(
        &self,
        before: &Cassandra835State,
        after: &Cassandra835State,
        event: &FlowEvent,
    ) -> Result<(), Contradiction> {
        match *event {
            FlowEvent::OwnerFold { .. } => {
                self.observe_fold(before, after, event.write().expect("a fold's write"))
            }
            FlowEvent::ZombieWrite { offset, .. } => {
                let w = event.write().expect("a flush's write");
                check_op(before.op, offset, w.op)?;
                let m = offset.min(u8::MAX as u64) as u8;
                self.observe_gate(before, w, m)?;
                observe_row(after, w.stored)
            }
            FlowEvent::OwnerRecover {
                owner_state,
                stored,
            }
            | FlowEvent::Handover {
                owner_state,
                stored,
                ..
            } => self.observe_recovery(before, after, owner_state, stored),
        }
    }

    /// The flow keeps a deleted key's (empty) state in memory instead of evicting it and
    /// reloading it from the store, so the model's reload after a delete may happen unlogged.
    fn is_silent(&self, action: &Cassandra835Action) -> bool {
        matches!(action, Cassandra835Action::OwnerRecover)
    }

    /// Offsets past `MaxOffset`.
    fn beyond(&self, events: &[FlowEvent]) -> Option<loadbearing_trace::Beyond> {
        crate::one_key::conform::offset_beyond(
            Cassandra835::MAX_OFFSET,
            self.max_offset,
            crate::cassandra::trace::offsets_named(events),
        )
    }
}

#[cfg(test)]
mod tests {
    use loadbearing_trace::{parse_ndjson, validate, Limits};

    use super::*;

    fn design() -> Cassandra835 {
        Cassandra835::design(3)
    }

    fn verdict(model: &Cassandra835, lines: &str) -> loadbearing_trace::Verdict {
        validate(model, &parse_ndjson(lines).unwrap(), Limits::default())
    }

    /// A zombie's write at 2 refuses the owner's fold of 1; the new incarnation resumes at 0,
    /// recovers 2 and drops its replay of 1 and 2 (the delete included), then writes 3.
    const REPLAY_WINDOW: &str = concat!(
        r#"{"v":2,"vocabulary":"flow","action":"ZombieWrite","zombie":1,"offset":2,"op":"persist","applied":true,"presented":2,"stored":{"kind":"snap","offset":2,"contents":[2]}}"#,
        "\n",
        r#"{"v":2,"vocabulary":"flow","action":"OwnerFold","offset":1,"op":"delete","applied":false,"presented":1,"stored":{"kind":"snap","offset":2,"contents":[2]}}"#,
        "\n",
        r#"{"v":2,"vocabulary":"flow","action":"OwnerRecover","ownerState":[2],"stored":{"kind":"snap","offset":2,"contents":[2]}}"#,
        "\n",
        r#"{"v":2,"vocabulary":"flow","action":"OwnerFold","offset":1,"op":"delete","stored":{"kind":"snap","offset":2,"contents":[2]}}"#,
        "\n",
        r#"{"v":2,"vocabulary":"flow","action":"OwnerFold","offset":2,"op":"persist","stored":{"kind":"snap","offset":2,"contents":[2]}}"#,
        "\n",
        r#"{"v":2,"vocabulary":"flow","action":"OwnerFold","offset":3,"op":"persist","applied":true,"presented":3,"stored":{"kind":"snap","offset":3,"contents":[2,3]}}"#,
        "\n",
    );

    #[test]
    fn the_owner_torn_down_by_a_conflict_resumes_and_drops_its_replay() {
        let v = verdict(&design(), REPLAY_WINDOW);
        assert!(v.conforming, "{v:?}");
    }

    /// D-11 as found: the replayed delete at 1 presented at the recovered offset 2 tombstones
    /// the recovered snapshot. The model drops it.
    #[test]
    fn a_replayed_delete_written_at_the_floor_diverges() {
        let broken = REPLAY_WINDOW.replace(
            r#""offset":1,"op":"delete","stored""#,
            r#""offset":1,"op":"delete","applied":true,"presented":2,"stored""#,
        );
        let v = verdict(&design(), &broken);
        assert!(!v.conforming);
        let why = format!("{:?}", v.divergence);
        assert!(why.contains("at or below its recovered floor 2"), "{why}");
    }

    #[test]
    fn a_handover_resumes_at_a_committed_offset_the_row_is_past() {
        let lines = concat!(
            r#"{"v":2,"vocabulary":"flow","action":"OwnerFold","offset":1,"op":"persist","applied":true,"presented":1,"stored":{"kind":"snap","offset":1,"contents":[1]}}"#,
            "\n",
            r#"{"v":2,"vocabulary":"flow","action":"Handover","resumeAt":0,"ownerState":[1],"stored":{"kind":"snap","offset":1,"contents":[1]}}"#,
            "\n",
            r#"{"v":2,"vocabulary":"flow","action":"OwnerFold","offset":1,"op":"persist","stored":{"kind":"snap","offset":1,"contents":[1]}}"#,
            "\n",
        );
        assert!(verdict(&design(), lines).conforming);
        let resumed_too_high = lines.replace(r#""resumeAt":0"#, r#""resumeAt":2"#);
        assert!(!verdict(&design(), &resumed_too_high).conforming);
    }
}
