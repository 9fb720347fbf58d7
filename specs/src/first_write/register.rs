//! `CasFirstWriteAtomic` read as a sequential object: one key's row, judged by the model's own
//! guard ([`CasFirstWriteAtomic::applies`]), for the linearizability search over a history.
//!
//! The model's state is the row and, per writer, its offset and whether it has written. In a
//! history each write is an operation the search places once (an unknown one at most once),
//! so a writer's offset is its operation's and "has written" is "placed": what is left is the
//! row. This face keeps only the row, with the store's own offsets (any `u64`, compared by
//! order as the model compares its ranks), so a history of any number of writes and offsets is
//! judged without fitting it into the model's 8 writers and 256 offsets; what it cannot hold
//! does not exist.
//!
//! The model's row is an offset; the store's row is an offset with what the write put there
//! (a value, or a tombstone), which this face keeps beside the offset so a read is compared
//! whole. The guard sees the offset only, as in the model. Each step is the model's:
//!
//! - a `Persist` that applied: `Persist(w)` with the guard holding; the row becomes its offset
//!   and its payload;
//! - a `Delete` that applied: guarded, the model's `Persist(w)` of a tombstone (the row keeps
//!   the delete's offset and fences older writes); last-write-wins (`Guarded = false`), a plain
//!   `DELETE`: the row is gone;
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

use std::collections::HashMap;
use std::fmt;

use loadbearing_trace::Sequential;

use super::atomic::CasFirstWriteAtomic;
use super::trace::{Deletion, FirstWriteEvent, Outcome, Payload, ReadRow, Statement, StoreRow};

/// The row of `CasFirstWriteAtomic` over a store's own offsets and payloads (see the module's
/// text).
pub struct AtomicRow<'a> {
    pub model: &'a CasFirstWriteAtomic,
}

/// Why an operation cannot take effect on a row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RowMisfit {
    StaleWriteLanded {
        offset: u64,
        row: StoreRow,
    },
    WriteRefused {
        offset: u64,
        row: StoreRow,
    },
    StoredOffset {
        stored: u64,
        row: StoreRow,
    },
    ReadRow {
        read: ReadRow,
        row: StoreRow,
    },
    NoAtomicStep {
        action: String,
    },
    /// An answer only the compound's insert gives.
    NoAtomicOutcome {
        outcome: Outcome,
    },
}

impl fmt::Display for RowMisfit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RowMisfit::StaleWriteLanded { offset, row } => write!(
                f,
                "the implementation applied offset {offset} over {row}: a stale write landed"
            ),
            RowMisfit::WriteRefused { offset, row } => write!(
                f,
                "the implementation refused offset {offset}, but the row holds {row}: the write should have applied"
            ),
            RowMisfit::StoredOffset { stored, row } => write!(
                f,
                "the implementation reports stored offset {stored}, the model's row holds {row}"
            ),
            RowMisfit::ReadRow { read, row } => {
                write!(f, "the read found {read}, the model's row holds {row}")
            }
            RowMisfit::NoAtomicStep { action } => {
                write!(f, "`{action}` is no step of the atomic upsert")
            }
            RowMisfit::NoAtomicOutcome { outcome } => write!(
                f,
                "`{}` is an answer of the compound's insert, not of the atomic upsert",
                outcome.name()
            ),
        }
    }
}

impl AtomicRow<'_> {
    /// Guarded with no reap: the row's offset only grows (a guarded delete keeps its offset).
    fn monotone(&self) -> bool {
        self.model.guarded && !self.model.reap
    }

    fn applies(&self, row: &StoreRow, offset: u64) -> bool {
        self.model.applies(row.offset(), offset)
    }

    /// A whole write's statement; `None` for a read and for the compound's statements.
    fn write<'e>(&self, op: &'e FirstWriteEvent) -> Option<&'e Statement> {
        match op {
            FirstWriteEvent::Persist(s) | FirstWriteEvent::Delete(Deletion(s)) => Some(s),
            _ => None,
        }
    }

    /// The row a whole write leaves where it lands (built only where it does: a value is a
    /// string, and this is the search's inner step).
    fn landed(&self, op: &FirstWriteEvent, s: &Statement) -> StoreRow {
        match (op, &s.payload) {
            // Guarded, the delete writes an offset-carrying tombstone (a plain DELETE would
            // disarm the fence); last-write-wins has no fence to keep and removes the row.
            (FirstWriteEvent::Delete(_), _) if self.model.guarded => {
                StoreRow::Tombstone { offset: s.offset }
            }
            (FirstWriteEvent::Delete(_), _) => StoreRow::Absent,
            (_, Payload::Tombstone) => StoreRow::Tombstone { offset: s.offset },
            (_, Payload::Value(value)) => StoreRow::Live {
                offset: s.offset,
                value: Some(value.clone()),
            },
            (_, Payload::Unsaid) => StoreRow::Live {
                offset: s.offset,
                value: None,
            },
        }
    }
}

impl Sequential for AtomicRow<'_> {
    type Op = FirstWriteEvent;
    type State = StoreRow;
    /// The vocabulary names no key; a history's `key` splits it (`Timed::key`).
    type Key = ();
    type Why = RowMisfit;

    fn key(&self, _op: &FirstWriteEvent) {}

    fn init(&self, _key: &(), _ops: &[&FirstWriteEvent]) -> Vec<StoreRow> {
        vec![StoreRow::Absent]
    }

    fn step(
        &self,
        row: &StoreRow,
        op: &FirstWriteEvent,
        after: &mut Vec<StoreRow>,
    ) -> Result<(), RowMisfit> {
        if let FirstWriteEvent::Read(read) = op {
            if !read.matches(row) {
                return Err(RowMisfit::ReadRow {
                    read: read.clone(),
                    row: row.clone(),
                });
            }
            after.push(row.clone());
            return Ok(());
        }
        let Some(s) = self.write(op) else {
            use loadbearing_trace::TraceEvent as _;
            return Err(RowMisfit::NoAtomicStep {
                action: op.action().to_string(),
            });
        };
        let applies = self.applies(row, s.offset);
        match s.outcome {
            // A statement of unknown outcome is placed by `step_unknown`; one never sent is
            // the model's GiveUp.
            None | Some(Outcome::NotSent) => after.push(row.clone()),
            Some(Outcome::Applied) => {
                if !applies {
                    return Err(RowMisfit::StaleWriteLanded {
                        offset: s.offset,
                        row: row.clone(),
                    });
                }
                after.push(self.landed(op, s));
            }
            Some(Outcome::NotApplied | Outcome::RowAbsent) => {
                if applies {
                    return Err(RowMisfit::WriteRefused {
                        offset: s.offset,
                        row: row.clone(),
                    });
                }
                if let Some(stored) = s.stored.filter(|&stored| Some(stored) != row.offset()) {
                    return Err(RowMisfit::StoredOffset {
                        stored,
                        row: row.clone(),
                    });
                }
                after.push(row.clone());
            }
            Some(outcome @ Outcome::GuardExpired) => {
                return Err(RowMisfit::NoAtomicOutcome { outcome })
            }
        }
        Ok(())
    }

    /// The same step, with no reason built (the search's inner step).
    fn apply(&self, row: &StoreRow, op: &FirstWriteEvent, after: &mut Vec<StoreRow>) -> bool {
        if let FirstWriteEvent::Read(read) = op {
            if read.matches(row) {
                after.push(row.clone());
            }
            return read.matches(row);
        }
        let Some(s) = self.write(op) else {
            return false;
        };
        let applies = self.applies(row, s.offset);
        let fits = match s.outcome {
            None | Some(Outcome::NotSent) => true,
            Some(Outcome::Applied) => applies,
            Some(Outcome::NotApplied | Outcome::RowAbsent) => {
                !applies && s.stored.is_none_or(|stored| Some(stored) == row.offset())
            }
            Some(Outcome::GuardExpired) => false,
        };
        if fits {
            after.push(match s.outcome {
                Some(Outcome::Applied) => self.landed(op, s),
                _ => row.clone(),
            });
        }
        fits
    }

    fn step_unknown(&self, row: &StoreRow, op: &FirstWriteEvent, after: &mut Vec<StoreRow>) {
        // Only a whole write is placed for an unanswered statement (the model's `unresolved`).
        if let Some(s) = self.write(op) {
            after.push(if self.applies(row, s.offset) {
                self.landed(op, s)
            } else {
                row.clone()
            });
        }
    }

    /// A guarded write of unknown outcome taken twice leaves the row as taken once: the row's
    /// offset only grows (a guarded delete keeps its offset), unless a reap empties it in
    /// between, and a second landing at the row's own offset rewrites the same payload unless
    /// another write of the key carries that offset with another.
    fn repeatable_in(&self, part: &[&FirstWriteEvent]) -> Vec<bool> {
        if !self.monotone() {
            return vec![false; part.len()];
        }
        let mut landing_at: HashMap<u64, Option<StoreRow>> = HashMap::new();
        for (op, s) in part.iter().filter_map(|op| Some((op, self.write(op)?))) {
            let landed = self.landed(op, s);
            landing_at
                .entry(s.offset)
                .and_modify(|seen| {
                    if seen.as_ref() != Some(&landed) {
                        *seen = None;
                    }
                })
                .or_insert(Some(landed));
        }
        part.iter()
            .map(|op| {
                self.write(op)
                    .is_some_and(|s| matches!(landing_at.get(&s.offset), Some(Some(_))))
            })
            .collect()
    }

    /// Guarded with no reap the row's offset only grows: a write below it never lands again.
    fn settled(&self, row: &StoreRow, op: &FirstWriteEvent) -> bool {
        self.monotone()
            && matches!((row.offset(), self.write(op)), (Some(row), Some(s)) if row > s.offset)
    }

    /// Two unanswered whole writes that would leave the same row (the writer is no part of
    /// it): the same effect from every row, since the guard reads the offset, which the row
    /// they leave carries (last-write-wins reads none).
    fn same_effect(&self, a: &FirstWriteEvent, b: &FirstWriteEvent) -> bool {
        match (self.write(a), self.write(b)) {
            (Some(sa), Some(sb)) => {
                let same_guard = !self.model.guarded || sa.offset == sb.offset;
                same_guard && self.landed(a, sa) == self.landed(b, sb)
            }
            _ => false,
        }
    }

    /// What no row the search may still reach lets take effect: an answer the upsert never
    /// gives or a statement that is none of its steps (from any row); last-write-wins, a
    /// refusal (it refuses nothing); guarded with no reap, where the row's offset only grows,
    /// a write acknowledged below it, a refusal naming an offset below it, and a read of an
    /// offset below it (or of no row, once there is one).
    fn doomed(&self, row: &StoreRow, op: &FirstWriteEvent) -> bool {
        let passed = |offset: u64| row.offset().is_some_and(|r| r > offset);
        if let FirstWriteEvent::Read(read) = op {
            return self.monotone()
                && match read.offset() {
                    None => *row != StoreRow::Absent,
                    Some(offset) => passed(offset),
                };
        }
        let Some(s) = self.write(op) else {
            return true;
        };
        match s.outcome {
            None | Some(Outcome::NotSent) => false,
            Some(Outcome::GuardExpired) => true,
            Some(Outcome::Applied) => self.monotone() && passed(s.offset),
            Some(Outcome::NotApplied | Outcome::RowAbsent) => {
                !self.model.guarded
                    || s.stored.is_some_and(|stored| stored <= s.offset)
                    || (self.monotone() && s.stored.is_some_and(passed))
            }
        }
    }

    /// Last-write-wins, a whole write that lands (acknowledged, or of unknown outcome where it
    /// is placed) leaves its own row whatever the row was.
    fn blind(&self, op: &FirstWriteEvent) -> bool {
        !self.model.guarded
            && self
                .write(op)
                .is_some_and(|s| matches!(s.outcome, None | Some(Outcome::Applied)))
    }

    fn silent(&self, row: &StoreRow, after: &mut Vec<StoreRow>) {
        if self.model.reap && *row != StoreRow::Absent {
            after.push(StoreRow::Absent);
        }
    }

    fn describe(&self, op: &FirstWriteEvent) -> String {
        use loadbearing_trace::TraceEvent as _;
        op.to_line()
    }

    fn describe_state(&self, row: &StoreRow) -> String {
        format!("stored={row}")
    }
}
