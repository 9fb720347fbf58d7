//! `CasFirstWriteAtomic` read as a sequential object: one key's row, judged by the model's own
//! guard ([`CasFirstWriteAtomic::applies`]), for the linearizability search over a history.
//!
//! The model's state is the row and, per writer, its offset and whether it has written. In a
//! history each write is an operation the search places once (an unknown one at most once),
//! so a writer's offset is its operation's and "has written" is "placed": what is left is the
//! row. This face keeps only the row, with the store's own offsets (any `u64`, compared by
//! order as the model compares its ranks), so a history of any number of writes and offsets is
//! judged without fitting it into the model's 8 writers and 256 offsets; what it cannot hold
//! does not exist. Each step is the model's:
//!
//! - a `Persist` that applied: `Persist(w)` with the guard holding; the row becomes its offset;
//! - one not applied (`not_applied`, `row_absent`): `Persist(w)` with the guard failing, and a
//!   reported `stored` must be the row's offset; the row is unchanged;
//! - one never sent (`not_sent`): `GiveUp(w)`, the row unchanged;
//! - one of unknown outcome: `Persist(w)` wherever the search places it (the row becomes its
//!   offset where the guard holds), or never;
//! - a `Read`: a stutter, whose row must be the model's;
//! - `ReapRow` (with `reap`): silent, anywhere, when a row is present.
//!
//! The compound's statements (`Update1`, `Insert`, `RetryUpdate`) and a reported `ReapRow` are
//! no step of the atomic model, as in the model's own `Conform` adapter.

use std::fmt;

use loadbearing_refinement::conform::Sequential;

use super::atomic::CasFirstWriteAtomic;
use super::trace::{FirstWriteEvent, Outcome};

/// One key's row: the offset stored, `None` when there is no row.
pub type Stored = Option<u64>;

/// The row of `CasFirstWriteAtomic` over a store's own offsets (see the module's text).
pub struct AtomicRow<'a> {
    pub model: &'a CasFirstWriteAtomic,
}

/// Why an operation cannot take effect on a row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RowMisfit {
    StaleWriteLanded { offset: u64, row: Stored },
    WriteRefused { offset: u64, row: Stored },
    StoredOffset { stored: u64, row: Stored },
    ReadRow { read: Stored, row: Stored },
    NoAtomicStep { action: &'static str },
}

/// A row in the model's words: `Present(41007)`, `Absent`.
pub struct ShowRow(pub Stored);

impl fmt::Display for ShowRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(offset) => write!(f, "Present({offset})"),
            None => write!(f, "Absent"),
        }
    }
}

impl fmt::Display for RowMisfit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RowMisfit::StaleWriteLanded { offset, row } => write!(
                f,
                "the implementation applied offset {offset} over {}: a stale write landed",
                ShowRow(*row)
            ),
            RowMisfit::WriteRefused { offset, row } => write!(
                f,
                "the implementation refused offset {offset}, but the row holds {}: the write should have applied",
                ShowRow(*row)
            ),
            RowMisfit::StoredOffset { stored, row } => write!(
                f,
                "the implementation reports stored offset {stored}, the model's row holds {}",
                ShowRow(*row)
            ),
            RowMisfit::ReadRow { read, row } => write!(
                f,
                "the read found {}, the model's row holds {}",
                match read {
                    Some(offset) => format!("Present({offset})"),
                    None => "no row".to_string(),
                },
                ShowRow(*row)
            ),
            RowMisfit::NoAtomicStep { action } => {
                write!(f, "`{action}` is no step of the atomic upsert")
            }
        }
    }
}

impl AtomicRow<'_> {
    fn applies(&self, row: Stored, offset: u64) -> bool {
        self.model.applies(row, offset)
    }
}

impl Sequential for AtomicRow<'_> {
    type Op = FirstWriteEvent;
    type State = Stored;
    /// The vocabulary names no key; a history's `key` splits it (`Timed::key`).
    type Key = ();
    type Why = RowMisfit;

    fn key(&self, _op: &FirstWriteEvent) {}

    fn init(&self, _key: &(), _ops: &[&FirstWriteEvent]) -> Vec<Stored> {
        vec![None]
    }

    fn step(
        &self,
        row: &Stored,
        op: &FirstWriteEvent,
        after: &mut Vec<Stored>,
    ) -> Result<(), RowMisfit> {
        let row = *row;
        let s = match op {
            FirstWriteEvent::Read { stored } => {
                if *stored != row {
                    return Err(RowMisfit::ReadRow { read: *stored, row });
                }
                after.push(row);
                return Ok(());
            }
            FirstWriteEvent::Persist(s) => s,
            other => {
                return Err(RowMisfit::NoAtomicStep {
                    action: action_name(other),
                })
            }
        };
        let applies = self.applies(row, s.offset);
        match s.outcome {
            // A statement of unknown outcome is placed by `step_unknown`; one never sent is
            // the model's GiveUp.
            None | Some(Outcome::NotSent) => after.push(row),
            Some(Outcome::Applied) => {
                if !applies {
                    return Err(RowMisfit::StaleWriteLanded {
                        offset: s.offset,
                        row,
                    });
                }
                after.push(Some(s.offset));
            }
            Some(Outcome::NotApplied | Outcome::RowAbsent) => {
                if applies {
                    return Err(RowMisfit::WriteRefused {
                        offset: s.offset,
                        row,
                    });
                }
                if let Some(stored) = s.stored.filter(|&stored| Some(stored) != row) {
                    return Err(RowMisfit::StoredOffset { stored, row });
                }
                after.push(row);
            }
        }
        Ok(())
    }

    fn step_unknown(&self, row: &Stored, op: &FirstWriteEvent, after: &mut Vec<Stored>) {
        // Only an upsert is placed for an unanswered statement (the model's `unresolved`).
        if let FirstWriteEvent::Persist(s) = op {
            after.push(if self.applies(*row, s.offset) {
                Some(s.offset)
            } else {
                *row
            });
        }
    }

    /// A guarded upsert of unknown outcome taken twice leaves the row as taken once: the row
    /// only grows (to the larger of the two), unless a reap empties it in between.
    fn repeatable(&self, op: &FirstWriteEvent) -> bool {
        self.model.guarded && !self.model.reap && matches!(op, FirstWriteEvent::Persist(_))
    }

    /// A guarded upsert at or below a row changes nothing, and never will: with no reap, the
    /// row only grows.
    fn settled(&self, row: &Stored, op: &FirstWriteEvent) -> bool {
        self.repeatable(op)
            && matches!((row, op), (Some(row), FirstWriteEvent::Persist(s)) if *row >= s.offset)
    }

    fn silent(&self, row: &Stored, after: &mut Vec<Stored>) {
        if self.model.reap && row.is_some() {
            after.push(None);
        }
    }

    fn describe(&self, op: &FirstWriteEvent) -> String {
        use loadbearing_refinement::conform::TraceEvent as _;
        op.to_line()
    }

    fn describe_state(&self, row: &Stored) -> String {
        format!("stored={}", ShowRow(*row))
    }
}

fn action_name(event: &FirstWriteEvent) -> &'static str {
    match event {
        FirstWriteEvent::Update1(_) => "Update1",
        FirstWriteEvent::Insert(_) => "Insert",
        FirstWriteEvent::RetryUpdate(_) => "RetryUpdate",
        FirstWriteEvent::Persist(_) => "Persist",
        FirstWriteEvent::ReapRow {} => "ReapRow",
        FirstWriteEvent::Read { .. } => "Read",
    }
}
