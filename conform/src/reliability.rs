//! Whole stress and fault runs judged by the model: every operation of a run (the stress kit's
//! [`History`]: each write, delete and read with when it was called and when it returned, or
//! that it never did) must fit some order its times allow in which each write does what the
//! guarded first-write model (`CasFirstWriteAtomic`) says. A stale write that landed, or an
//! acknowledged write that was lost, *during* a fault is caught even when later writes bury it
//! before the end of the run.
//!
//! A run is read in the first-write vocabulary, as any store's history would be (a persist
//! with its value, a delete, a read of the whole row, each on its key), and judged by the
//! model's row judge (`register::AtomicRow`): the delete is a guarded write of a tombstone
//! that keeps its offset, so it refuses older writes as a row does; a read is compared whole.

use loadbearing_impls::kit::stress::{Asked, History, Op, Told};
use loadbearing_specs::first_write::atomic::CasFirstWriteAtomic;
use loadbearing_specs::first_write::register::AtomicRow;
use loadbearing_specs::first_write::trace::{
    Deletion, FirstWriteEvent, Outcome, Payload, Statement, Writer,
};
use loadbearing_trace::{check_history, Budget, HistoryVerdict, Timed};

use crate::stores::{read_event, value_text};

/// The guarded model every run is held to (one writer is enough: the row judge takes each
/// operation alone, from the row).
const GUARDED: CasFirstWriteAtomic = CasFirstWriteAtomic {
    writers: 1,
    max_offset: 1,
    guarded: true,
    reap: false,
};

/// An operation of a run as the first-write vocabulary says it; `None` for a read that failed
/// (it observed nothing).
fn event_of(op: &Op) -> Option<FirstWriteEvent> {
    let (outcome, stored) = match &op.told {
        Told::Applied => (Some(Outcome::Applied), None),
        Told::Conflict { stored } => (Some(Outcome::NotApplied), Some(*stored)),
        Told::Failed => (Some(Outcome::NotSent), None),
        Told::Indeterminate => (None, None),
        Told::Read(read) => return Some(read_event(read, true)),
        Told::ReadFailed => return None,
    };
    // A session is a writer, by its number (the row judge never tells writers apart).
    let writer = Writer::named(format!("s{}", op.session));
    match &op.asked {
        Asked::Persist { offset, value } => Some(FirstWriteEvent::Persist(
            Statement::new(writer, *offset, outcome, stored)
                .writing(Payload::Value(value_text(value))),
        )),
        Asked::Delete { offset } => Some(FirstWriteEvent::Delete(Deletion(
            Statement::new(writer, *offset, outcome, stored).writing(Payload::Tombstone),
        ))),
        // A read is told what it found, above.
        Asked::Read => None,
    }
}

/// A run's history as the checker reads it: each operation with its times (an unanswered
/// write never returns) and its key, in the order of their calls.
pub fn timed(history: &History) -> Vec<Timed<FirstWriteEvent>> {
    let mut ops: Vec<&Op> = history.ops.iter().collect();
    ops.sort_by_key(|op| (op.call_us, op.session));
    ops.into_iter()
        .filter_map(|op| {
            Some(Timed {
                call: op.call_us,
                ret: op.ret_us,
                key: Some(op.key.clone().into()),
                event: event_of(op)?,
                line: 0,
            })
        })
        .enumerate()
        .map(|(i, op)| Timed { line: i + 1, ..op })
        .collect()
}

/// Judges a whole run by the guarded model.
pub fn judge(history: &History, budget: Budget) -> HistoryVerdict {
    let ops = timed(history);
    check_history(&AtomicRow { model: &GUARDED }, &ops, budget)
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadbearing_impls::store::Read;
    use loadbearing_trace::HistoryOutcome;

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
        assert!(v.conforming(), "{}", v.text());
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
            panic!("{}", v.text());
        };
        let text = v.text();
        assert!(text.contains("a stale write landed"), "{text}");
        assert_eq!(why.part.to_string(), "key \"k\"");
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
