//! Whole stress and fault runs judged by the model: every operation of a run (the stress kit's
//! [`History`]: each write, delete and read with when it was called and when it returned, or
//! that it never did) must fit some order its times allow in which each write does what the
//! guarded first-write model (`CasFirstWriteAtomic`) says. A stale write that landed, or an
//! acknowledged write that was lost, *during* a fault is caught even when later writes bury it
//! before the end of the run.
//!
//! The model's row is an offset; a real row is an offset with a value, or an offset-carrying
//! tombstone (the delete is a guarded write of a tombstone: it keeps its offset, so it refuses
//! older writes as a row does). Each write is judged by the model's own guard: the row's offset
//! and the write's are mapped onto the model's by their order (which is all the guard
//! compares), and the real row updated as the model's `Persist` says.

use std::collections::HashMap;
use std::fmt;

use loadbearing_impls::kit::stress::{Asked, History, Op, Told};
use loadbearing_impls::store::Read;
use loadbearing_refinement::conform::{check_history, Budget, HistoryVerdict, Sequential, Timed};
use loadbearing_specs::first_write::atomic::CasFirstWriteAtomic;

/// A key's row as a real store holds it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Row {
    Absent,
    Live { offset: u64, value: Vec<u8> },
    Tombstone { offset: u64 },
}

impl Row {
    fn offset(&self) -> Option<u64> {
        match self {
            Row::Absent => None,
            Row::Live { offset, .. } | Row::Tombstone { offset } => Some(*offset),
        }
    }

    fn of_read(read: &Read) -> Row {
        match read {
            Read::Absent => Row::Absent,
            Read::Live { offset, value } => Row::Live {
                offset: *offset,
                value: value.clone(),
            },
            Read::Tombstone { offset } => Row::Tombstone { offset: *offset },
        }
    }
}

impl fmt::Display for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Row::Absent => write!(f, "absent"),
            Row::Live { offset, value } => {
                write!(f, "live@{offset} {}", String::from_utf8_lossy(value))
            }
            Row::Tombstone { offset } => write!(f, "tombstone@{offset}"),
        }
    }
}

/// Why an operation cannot take effect where the search tried it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Misfit {
    /// The store applied a write the model refuses: a stale write landed.
    StaleWriteLanded { offset: u64, row: Row },
    /// The store refused a write the model applies.
    WriteRefused { offset: u64, row: Row },
    /// The store refused a write naming another stored offset than the row's.
    OtherStored { stored: u64, row: Row },
    /// A read saw another row.
    ReadOther { read: Row, row: Row },
}

impl fmt::Display for Misfit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Misfit::StaleWriteLanded { offset, row } => {
                write!(f, "the store applied offset {offset} over {row}: a stale write landed")
            }
            Misfit::WriteRefused { offset, row } => write!(
                f,
                "the store refused offset {offset}, but the row holds {row}: the write should have applied"
            ),
            Misfit::OtherStored { stored, row } => write!(
                f,
                "the store refused naming stored offset {stored}, the row holds {row}"
            ),
            Misfit::ReadOther { read, row } => {
                write!(f, "the read found {read}, the row holds {row}")
            }
        }
    }
}

/// The guarded first-write model as a sequential object over a run's keys.
pub struct GuardedRows {
    model: CasFirstWriteAtomic,
    /// Per key and offset, how many writes of the run carry it: an unanswered write whose
    /// offset no other write carries may be taken any number of times (the guard makes a
    /// second landing a no-op), which keeps runs with many unanswered writes tractable.
    writes_at: HashMap<String, HashMap<u64, usize>>,
}

impl GuardedRows {
    pub fn new(history: &[Timed<Op>]) -> GuardedRows {
        let mut writes_at: HashMap<String, HashMap<u64, usize>> = HashMap::new();
        for op in history {
            if let Some(offset) = written(&op.event) {
                *writes_at
                    .entry(op.event.key.clone())
                    .or_default()
                    .entry(offset)
                    .or_insert(0) += 1;
            }
        }
        GuardedRows {
            // One writer is enough: each operation is taken alone, from the real row.
            model: CasFirstWriteAtomic {
                writers: 1,
                max_offset: 1,
                guarded: true,
                reap: false,
            },
            writes_at,
        }
    }

    /// Whether the model's Persist of `offset` applies on `row`, by the model's own guard over
    /// the store's offsets (compared by order, as the model compares its ranks).
    fn applies(&self, row: &Row, offset: u64) -> bool {
        self.model.applies(row.offset(), offset)
    }

    /// The row after a write of `op` lands.
    fn landed(op: &Op) -> Option<Row> {
        match &op.asked {
            Asked::Persist { offset, value } => Some(Row::Live {
                offset: *offset,
                value: value.clone(),
            }),
            Asked::Delete { offset } => Some(Row::Tombstone { offset: *offset }),
            Asked::Read => None,
        }
    }
}

/// The offset a write carries.
fn written(op: &Op) -> Option<u64> {
    match op.asked {
        Asked::Persist { offset, .. } | Asked::Delete { offset } => Some(offset),
        Asked::Read => None,
    }
}

impl Sequential for GuardedRows {
    type Op = Op;
    type State = Row;
    type Key = String;
    type Why = Misfit;

    fn key(&self, op: &Op) -> String {
        op.key.clone()
    }

    fn init(&self, _key: &String, _ops: &[&Op]) -> Vec<Row> {
        // Every run writes keys of its own.
        vec![Row::Absent]
    }

    fn step(&self, row: &Row, op: &Op, after: &mut Vec<Row>) -> Result<(), Misfit> {
        match (&op.told, written(op)) {
            (Told::Read(read), _) => {
                let read = Row::of_read(read);
                if read != *row {
                    return Err(Misfit::ReadOther {
                        read,
                        row: row.clone(),
                    });
                }
                after.push(row.clone());
            }
            // Nothing was observed, or nothing was done.
            (Told::ReadFailed | Told::Failed, _) => after.push(row.clone()),
            (Told::Applied, Some(offset)) => {
                if !self.applies(row, offset) {
                    return Err(Misfit::StaleWriteLanded {
                        offset,
                        row: row.clone(),
                    });
                }
                after.extend(GuardedRows::landed(op));
            }
            (Told::Conflict { stored }, Some(offset)) => {
                if self.applies(row, offset) {
                    return Err(Misfit::WriteRefused {
                        offset,
                        row: row.clone(),
                    });
                }
                if row.offset() != Some(*stored) {
                    return Err(Misfit::OtherStored {
                        stored: *stored,
                        row: row.clone(),
                    });
                }
                after.push(row.clone());
            }
            // An answered operation never reaches here with these (the history makes them
            // unknown); a read told applied is no operation the kit records.
            (Told::Indeterminate, _) | (Told::Applied | Told::Conflict { .. }, None) => {
                after.push(row.clone())
            }
        }
        Ok(())
    }

    fn step_unknown(&self, row: &Row, op: &Op, after: &mut Vec<Row>) {
        if let Some(offset) = written(op) {
            if self.applies(row, offset) {
                after.extend(GuardedRows::landed(op));
            }
        }
    }

    fn repeatable(&self, op: &Op) -> bool {
        written(op).is_some_and(|offset| {
            self.writes_at
                .get(op.key.as_str())
                .and_then(|at| at.get(&offset))
                == Some(&1)
        })
    }

    fn describe(&self, op: &Op) -> String {
        let asked = match &op.asked {
            Asked::Persist { offset, value } => {
                format!("persist@{offset} {}", String::from_utf8_lossy(value))
            }
            Asked::Delete { offset } => format!("delete@{offset}"),
            Asked::Read => "read".to_string(),
        };
        let told = match &op.told {
            Told::Applied => "applied".to_string(),
            Told::Conflict { stored } => format!("conflict (stored {stored})"),
            Told::Failed => "failed".to_string(),
            Told::Indeterminate => "unknown".to_string(),
            Told::Read(read) => format!("found {}", Row::of_read(read)),
            Told::ReadFailed => "read failed".to_string(),
        };
        format!("session {} {} {asked} → {told}", op.session + 1, op.key)
    }

    fn describe_state(&self, row: &Row) -> String {
        row.to_string()
    }
}

/// A run's history as the checker reads it: each operation with its times (an unanswered
/// write never returns), in the order of their calls.
pub fn timed(history: &History) -> Vec<Timed<Op>> {
    let mut ops: Vec<&Op> = history.ops.iter().collect();
    ops.sort_by_key(|op| (op.call_us, op.session));
    ops.into_iter()
        .enumerate()
        .map(|(i, op)| Timed {
            call: op.call_us,
            ret: op.ret_us,
            // The model keys the operations itself (`GuardedRows::key`).
            key: None,
            event: op.clone(),
            line: i + 1,
        })
        .collect()
}

/// Judges a whole run by the guarded model.
pub fn judge(history: &History, budget: Budget) -> HistoryVerdict {
    let ops = timed(history);
    check_history(&GuardedRows::new(&ops), &ops, budget)
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadbearing_refinement::conform::HistoryOutcome;

    fn op(session: usize, call: u64, ret: Option<u64>, asked: Asked, told: Told) -> Op {
        Op {
            session,
            key: "k".into(),
            call_us: call,
            ret_us: ret,
            asked,
            told,
        }
    }

    fn persist(offset: u64) -> Asked {
        Asked::Persist {
            offset,
            value: format!("v{offset}").into_bytes(),
        }
    }

    fn live(offset: u64) -> Told {
        Told::Read(Read::Live {
            offset,
            value: format!("v{offset}").into_bytes(),
        })
    }

    fn verdict(ops: Vec<Op>) -> HistoryVerdict {
        judge(&History { ops }, Budget::default())
    }

    #[test]
    fn a_guarded_run_with_overlaps_and_an_unanswered_write_is_linearizable() {
        let v = verdict(vec![
            op(0, 0, Some(10), persist(5), Told::Applied),
            op(1, 2, Some(4), persist(3), Told::Conflict { stored: 5 }),
            op(2, 11, None, persist(7), Told::Indeterminate),
            op(0, 12, Some(13), Asked::Delete { offset: 6 }, Told::Applied),
            op(
                1,
                20,
                Some(21),
                Asked::Read,
                Told::Read(Read::Tombstone { offset: 6 }),
            ),
            op(1, 22, Some(23), persist(6), Told::Applied),
            op(1, 24, Some(25), Asked::Read, live(6)),
        ]);
        assert!(v.conforming(), "{}", v.text(&|i| i + 1));
    }

    #[test]
    fn a_stale_write_buried_by_later_writes_is_caught() {
        // The end state (8) is right; the stale landing of 2 over 5 in between is not.
        let v = verdict(vec![
            op(0, 0, Some(1), persist(5), Told::Applied),
            op(1, 2, Some(3), persist(2), Told::Applied),
            op(0, 4, Some(5), persist(8), Told::Applied),
            op(2, 6, Some(7), Asked::Read, live(8)),
        ]);
        let HistoryOutcome::NotLinearizable(why) = &v.outcome else {
            panic!("{}", v.text(&|i| i + 1));
        };
        let text = v.text(&|i| i + 1);
        assert!(text.contains("a stale write landed"), "{text}");
        assert_eq!(why.key, "\"k\"");
    }

    #[test]
    fn an_acknowledged_write_lost_is_caught() {
        // 6 was acknowledged, then a read saw the row still at 5.
        let v = verdict(vec![
            op(0, 0, Some(1), persist(5), Told::Applied),
            op(1, 2, Some(3), persist(6), Told::Applied),
            op(2, 4, Some(5), Asked::Read, live(5)),
        ]);
        assert!(!v.conforming());
    }

    #[test]
    fn an_unanswered_write_may_land_late_or_never() {
        let late = vec![
            op(0, 0, None, persist(9), Told::Indeterminate),
            op(1, 1, Some(2), persist(4), Told::Applied),
            op(1, 3, Some(4), Asked::Read, live(4)),
            op(1, 5, Some(6), Asked::Read, live(9)),
        ];
        assert!(verdict(late).conforming());
        // But not before it was called.
        let early = vec![
            op(1, 0, Some(1), persist(4), Told::Conflict { stored: 9 }),
            op(0, 2, None, persist(9), Told::Indeterminate),
        ];
        assert!(!verdict(early).conforming());
    }
}
