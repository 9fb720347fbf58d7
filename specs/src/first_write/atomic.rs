#![doc = include_str!("atomic.md")]

use std::fmt;

use loadbearing_refinement::Model;
use loadbearing_refinement::Shown;
use loadbearing_refinement::{Spec, Symmetry, Variables};

use crate::first_write::{all_offsets, FirstWriteParams, Row, MAX_WRITERS};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum AtomicPc {
    Todo,
    Done,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct AtomicState {
    pub stored: Row,
    pub pc: [AtomicPc; MAX_WRITERS],
    pub off: [u8; MAX_WRITERS],
    pub corrupted: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum AtomicAction {
    Persist(u8),
    GiveUp(u8),
    ReapRow,
}

impl fmt::Debug for AtomicAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AtomicAction::Persist(w) => write!(f, "Persist(w{})", w + 1),
            AtomicAction::GiveUp(w) => write!(f, "GiveUp(w{})", w + 1),
            AtomicAction::ReapRow => write!(f, "ReapRow"),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CasFirstWriteAtomic {
    pub writers: u8,
    pub max_offset: u8,
    pub guarded: bool,
    pub reap: bool,
}

impl Model for CasFirstWriteAtomic {
    type State = AtomicState;
    type Action = AtomicAction;

    fn init_states(&self) -> Vec<AtomicState> {
        all_offsets(self.writers, self.max_offset)
            .into_iter()
            .map(AtomicState::initial)
            .collect()
    }

    fn actions(&self, s: &AtomicState, actions: &mut Vec<AtomicAction>) {
        for w in 0..self.writers {
            if s.pc[w as usize] == AtomicPc::Todo {
                actions.push(AtomicAction::Persist(w));
                actions.push(AtomicAction::GiveUp(w));
            }
        }
        if self.reap && s.stored.present {
            actions.push(AtomicAction::ReapRow);
        }
    }

    fn next_state(&self, s: &AtomicState, action: AtomicAction) -> Option<AtomicState> {
        let mut next = s.clone();
        match action {
            AtomicAction::Persist(w) => {
                let w = w as usize;
                let o = s.off[w];
                if self.persist_applies(s.stored, o) {
                    next.corrupted |= s.stored.present && o < s.stored.offset;
                    next.stored = Row::present(o);
                }
                next.pc[w] = AtomicPc::Done;
            }
            AtomicAction::GiveUp(w) => next.pc[w as usize] = AtomicPc::Done,
            AtomicAction::ReapRow => next.stored = Row::ABSENT,
        }
        Some(next)
    }
}

/// Writer `w`'s local state (pc, offset) as one number: nothing else in a state names a
/// writer.
fn local_state(s: &AtomicState, w: usize) -> u32 {
    (s.pc[w] as u32) << 8 | s.off[w] as u32
}

impl Spec for CasFirstWriteAtomic {
    /// The writers are interchangeable, as in the compound protocol (safety only).
    fn symmetries(&self) -> Vec<Symmetry> {
        vec![Symmetry {
            name: "Writers",
            size: self.writers as usize,
        }]
    }

    /// The writers sorted by (pc, offset): one representative per orbit.
    fn canonical(&self, s: &AtomicState, symmetry: usize) -> Option<AtomicState> {
        let to = crate::first_write::sorting(self.writers, |w| local_state(s, w));
        Some(self.permute(s, symmetry, &to))
    }

    fn orbit_size(&self, s: &AtomicState, _symmetry: usize) -> Option<u64> {
        Some(crate::first_write::orbit_size(self.writers, |w| {
            local_state(s, w)
        }))
    }

    fn permute(&self, s: &AtomicState, _symmetry: usize, to: &[u8]) -> AtomicState {
        let mut image = s.clone();
        for (w, &t) in to.iter().enumerate() {
            image.pc[t as usize] = s.pc[w];
            image.off[t as usize] = s.off[w];
        }
        image
    }

    fn variables(&self, s: &AtomicState) -> Variables {
        let writers = 0..self.writers as usize;
        let pc = writers.clone().map(|w| {
            let pc = if s.pc[w] == AtomicPc::Todo {
                "todo"
            } else {
                "done"
            };
            Shown::name(format!("w{}:{pc}", w + 1))
        });
        let off = writers.map(|w| Shown::name(format!("w{}:{}", w + 1, s.off[w])));
        vec![
            ("stored", Shown::name(s.stored)),
            ("pc", Shown::list(pc)),
            ("off", Shown::list(off)),
            ("corrupted", s.corrupted.into()),
        ]
    }
}

/// Conformance: an atomic conditional upsert (SQLite, PostgreSQL) reports a `Persist`
/// (`crate::first_write::trace::FirstWriteEvent`) that applied, or did not with the
/// `stored` offset that refused it.
impl loadbearing_trace::Conform for CasFirstWriteAtomic {
    type Event = FirstWriteEvent;
    type Contradiction = FirstWriteContradiction;

    fn initial_candidates(&self, events: &[FirstWriteEvent]) -> Vec<AtomicState> {
        offset_choices(events)
            .into_iter()
            .map(AtomicState::initial)
            .collect()
    }

    fn reports(&self, action: &AtomicAction, event: &FirstWriteEvent) -> bool {
        let FirstWriteEvent::Persist(s) = event else {
            return false;
        };
        let by = |w: &u8| s.writer.index() == Some(*w as usize);
        match (action, s.outcome) {
            (_, None) => false,
            (AtomicAction::GiveUp(w), Some(Outcome::NotSent)) => by(w),
            (AtomicAction::GiveUp(_), Some(_))
            | (AtomicAction::Persist(_), Some(Outcome::NotSent)) => false,
            (AtomicAction::Persist(w), Some(_)) => by(w),
            (AtomicAction::ReapRow, _) => false,
        }
    }

    /// The writer's offset identifies its step on every statement, the unresolved ones too;
    /// the outcome is compared where there is one. `guard_expired` is an answer of the
    /// compound's insert, which the upsert never gives.
    fn observe(
        &self,
        before: &AtomicState,
        _after: &AtomicState,
        event: &FirstWriteEvent,
    ) -> Result<(), FirstWriteContradiction> {
        if let FirstWriteEvent::Read(read) = event {
            return crate::first_write::read_matches(read.offset(), before.stored);
        }
        let s = event
            .statement()
            .ok_or(FirstWriteContradiction::ReapIsNoAtomicStep)?;
        let offset = writer_offset(&before.off, s)?;
        let Some(outcome) = s.outcome.filter(|o| *o != Outcome::NotSent) else {
            return Ok(());
        };
        if outcome == Outcome::GuardExpired {
            return Err(FirstWriteContradiction::NoAtomicOutcome { outcome });
        }
        let applied = outcome == Outcome::Applied;
        let row = before.stored;
        let model_applies = self.persist_applies(row, offset);
        match (applied, model_applies) {
            (true, false) => Err(FirstWriteContradiction::StaleWriteLanded { offset, row }),
            (false, true) => Err(FirstWriteContradiction::WriteRefused { offset, row }),
            (false, false) => match s.stored {
                Some(stored) if stored != row.offset as u64 => {
                    Err(FirstWriteContradiction::StoredOffset { stored, row })
                }
                _ => Ok(()),
            },
            (true, true) => Ok(()),
        }
    }

    fn is_stutter(&self, event: &FirstWriteEvent) -> bool {
        event.is_stutter()
    }

    fn unresolved(&self, events: &[FirstWriteEvent]) -> Vec<AtomicAction> {
        events
            .iter()
            .filter(|e| e.is_unresolved())
            .filter_map(|e| match e {
                FirstWriteEvent::Persist(s) => {
                    Some(AtomicAction::Persist(u8::try_from(s.writer.index()?).ok()?))
                }
                _ => None,
            })
            .collect()
    }

    fn is_silent(&self, action: &AtomicAction) -> bool {
        matches!(action, AtomicAction::ReapRow)
    }

    fn beyond(&self, events: &[FirstWriteEvent]) -> Option<loadbearing_trace::Beyond> {
        crate::first_write::beyond(self.writers, self.max_offset, events)
    }
}

use crate::first_write::contradiction::writer_offset;
use crate::first_write::contradiction::FirstWriteContradiction;
use crate::first_write::trace::{offset_choices, FirstWriteEvent, Outcome};

/// Not a config model of its own (it is a refinement target), but traces of the atomic stores
/// are checked against it, with the same constants as CasFirstWrite.
impl crate::Configured for CasFirstWriteAtomic {
    const NAME: &'static str = "CasFirstWriteAtomic";
    const DOC: &'static str = include_str!("atomic.md");
    /// The same constants as CasFirstWrite; the atomic upsert has no INSERT and no retry, so it
    /// ignores those two.
    type Params = FirstWriteParams;

    fn build(params: FirstWriteParams) -> Self {
        CasFirstWriteAtomic {
            writers: params.writers,
            max_offset: params.max_offset,
            guarded: params.guarded,
            reap: params.reap,
        }
    }
}

impl CasFirstWriteAtomic {
    /// The one initial state in which writer w persists `offsets[w]`.
    pub fn init_states_for(&self, offsets: &[u8]) -> AtomicState {
        let mut off = [0; MAX_WRITERS];
        off[..offsets.len()].copy_from_slice(offsets);
        AtomicState::initial(off)
    }

    /// The guard of `Persist`: the conditional upsert applies offset `o` over `row`.
    pub fn persist_applies(&self, row: Row, o: u8) -> bool {
        self.applies(row.present.then_some(row.offset), o)
    }

    /// The guard of `Persist` over any offsets compared by order (the model's ranks, or a
    /// store's own offsets: `register::AtomicRow`): with no row it applies; guarded, only an
    /// offset at or above the stored one does (`IF offset <= o`); unguarded, always.
    pub fn applies<T: Ord>(&self, stored: Option<T>, o: T) -> bool {
        match stored {
            None => true,
            Some(stored) => !self.guarded || stored <= o,
        }
    }
}

impl AtomicState {
    /// The initial state in which writer w persists `off[w]`: no row, every writer to do.
    pub fn initial(off: [u8; MAX_WRITERS]) -> AtomicState {
        AtomicState {
            stored: Row::ABSENT,
            pc: [AtomicPc::Todo; MAX_WRITERS],
            off,
            corrupted: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::first_write::trace::{ReadRow, Statement, Writer};
    use loadbearing_trace::{validate, Limits};

    fn model() -> CasFirstWriteAtomic {
        CasFirstWriteAtomic {
            writers: 3,
            max_offset: 5,
            guarded: true,
            reap: false,
        }
    }

    fn persist(
        w: u8,
        offset: u64,
        outcome: Option<Outcome>,
        stored: Option<u64>,
    ) -> FirstWriteEvent {
        FirstWriteEvent::Persist(Statement::new(
            Writer::model(w as usize),
            offset,
            outcome,
            stored,
        ))
    }

    fn read(stored: Option<u64>) -> FirstWriteEvent {
        FirstWriteEvent::Read(ReadRow::at(stored))
    }

    fn conforms(events: &[FirstWriteEvent]) -> Result<(), String> {
        let verdict = validate(&model(), events, Limits::default());
        match verdict.divergence {
            None => Ok(()),
            Some(d) => Err(d.text()),
        }
    }

    #[test]
    fn an_unresolved_write_may_land_late_or_never_but_nothing_else_lands() {
        // w1's upsert of 4 was never answered; w2's 2 applied after it was sent.
        let history = |final_row| {
            vec![
                persist(0, 4, None, None),
                persist(1, 2, Some(Outcome::Applied), None),
                read(final_row),
            ]
        };
        conforms(&history(Some(4))).expect("w1's write landed, before or after w2's");
        conforms(&history(Some(2))).expect("w1's write never landed");
        let why = conforms(&history(Some(3))).unwrap_err();
        assert!(why.contains("the read found Present(3)"), "{why}");
        let why = conforms(&history(None)).unwrap_err();
        assert!(why.contains("the read found no row"), "{why}");
    }

    #[test]
    fn an_acknowledged_write_the_read_does_not_show_is_lost() {
        let history = [
            persist(0, 3, Some(Outcome::Applied), None),
            persist(1, 1, Some(Outcome::NotApplied), Some(3)),
            read(Some(1)),
        ];
        let why = conforms(&history).unwrap_err();
        assert!(why.contains("the model's row holds Present(3)"), "{why}");
    }

    #[test]
    fn a_write_never_sent_must_not_land() {
        let sent = [
            persist(0, 3, Some(Outcome::NotSent), None),
            persist(1, 1, Some(Outcome::Applied), None),
        ];
        conforms(&[sent[0].clone(), sent[1].clone(), read(Some(1))]).expect("w1 gave up");
        assert!(conforms(&[sent[0].clone(), sent[1].clone(), read(Some(3))]).is_err());
        // Nor does a known outcome become unknown later: w1 is done once it gave up.
        assert!(conforms(&[sent[0].clone(), persist(0, 3, Some(Outcome::Applied), None)]).is_err());
    }

    #[test]
    fn a_stale_write_acknowledged_under_a_fault_is_still_caught() {
        let history = [
            persist(0, 4, None, None),
            persist(1, 2, Some(Outcome::Applied), None),
            persist(2, 1, Some(Outcome::Applied), None),
        ];
        let why = conforms(&history).unwrap_err();
        assert!(why.contains("a stale write landed"), "{why}");
    }
}
