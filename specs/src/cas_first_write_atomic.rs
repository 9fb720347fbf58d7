//! CasFirstWriteAtomic: the first write as one atomic gated CAS (SPECS.md §5). A refinement
//! target only; it is never checked on its own.

use std::fmt;

use loadbearing_refinement::{Spec, Variables};
use stateright::Model;

use crate::cas_first_write::{all_offsets, Row, MAX_WRITERS};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicPc {
    Todo,
    Done,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
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
            .map(|off| AtomicState {
                stored: Row::ABSENT,
                pc: [AtomicPc::Todo; MAX_WRITERS],
                off,
                corrupted: false,
            })
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
                let applies = !s.stored.present || !self.guarded || s.stored.offset <= o;
                if applies {
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
