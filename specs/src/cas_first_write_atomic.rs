#![doc = include_str!("cas_first_write_atomic.md")]

use std::fmt;

use loadbearing_refinement::{Spec, Symmetry, Variables};
use stateright::Model;

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
        let to = crate::cas_first_write::sorting(self.writers, |w| (s.pc[w] as u8, s.off[w]));
        Some(self.permute(s, symmetry, &to))
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
        let pc: Vec<String> = writers
            .clone()
            .map(|w| {
                format!(
                    "w{}:{}",
                    w + 1,
                    if s.pc[w] == AtomicPc::Todo {
                        "todo"
                    } else {
                        "done"
                    }
                )
            })
            .collect();
        let off: Vec<String> = writers
            .map(|w| format!("w{}:{}", w + 1, s.off[w]))
            .collect();
        vec![
            ("stored", s.stored.to_string()),
            ("pc", format!("[{}]", pc.join(", "))),
            ("off", format!("[{}]", off.join(", "))),
            ("corrupted", s.corrupted.to_string()),
        ]
    }
}

/// Conformance: an atomic conditional upsert (SQLite, PostgreSQL) reports a `Persist`
/// (`crate::first_write::trace::FirstWriteEvent`) that applied, or did not with the
/// `stored` offset that refused it.
impl loadbearing_refinement::conform::Conform for CasFirstWriteAtomic {
    type Event = FirstWriteEvent;
    type Contradiction = FirstWriteContradiction;

    fn initial_candidates(&self, events: &[FirstWriteEvent]) -> Vec<AtomicState> {
        // Each writer's offset is in its own Persist event; enumerating every assignment up
        // front would be (MaxOffset+1)^Writers states.
        vec![AtomicState::initial(revealed_offsets(events))]
    }

    fn reports(&self, action: &AtomicAction, event: &FirstWriteEvent) -> bool {
        match (action, event) {
            (AtomicAction::Persist(w), FirstWriteEvent::Persist(s)) => {
                s.writer.index() == *w as usize
            }
            // The compound's statements and a reap are no atomic step (the model's reap is
            // silent).
            (
                AtomicAction::Persist(_) | AtomicAction::GiveUp(_) | AtomicAction::ReapRow,
                FirstWriteEvent::Update1(_)
                | FirstWriteEvent::Insert(_)
                | FirstWriteEvent::RetryUpdate(_)
                | FirstWriteEvent::Persist(_)
                | FirstWriteEvent::ReapRow {},
            ) => false,
        }
    }

    fn observe(
        &self,
        before: &AtomicState,
        _after: &AtomicState,
        event: &FirstWriteEvent,
    ) -> Result<(), FirstWriteContradiction> {
        let s = event
            .statement()
            .ok_or(FirstWriteContradiction::ReapIsNoAtomicStep)?;
        let applied = s.outcome.ok_or(FirstWriteContradiction::NoApplied)? == Outcome::Applied;
        let offset = before.off[s.writer.index()];
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

    fn is_silent(&self, action: &AtomicAction) -> bool {
        matches!(action, AtomicAction::ReapRow)
    }
}

use crate::first_write::contradiction::FirstWriteContradiction;
use crate::first_write::trace::{revealed_offsets, FirstWriteEvent, Outcome};

/// Not a config model of its own (it is a refinement target), but traces of the atomic stores
/// are checked against it, with the same constants as CasFirstWrite.
impl crate::Configured for CasFirstWriteAtomic {
    const NAME: &'static str = "CasFirstWriteAtomic";
    const DOC: &'static str = include_str!("cas_first_write_atomic.md");
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
    fn persist_applies(&self, row: Row, o: u8) -> bool {
        !row.present || !self.guarded || row.offset <= o
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
