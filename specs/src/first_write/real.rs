//! A real store's first-write trace fitted to the models: real offsets (any `u64`, say 41,000)
//! mapped onto the model's small ones by order, and each write a writer makes given a model
//! writer of its own (a model writer writes once; a real owner flushes many times).
//!
//! Both first-write models compare offsets only by order (`IF offset <= o`, a stale write is
//! one below the row), so replacing each offset by its rank among the trace's offsets keeps
//! every comparison, and with it every verdict. What does not fit — more distinct offsets than
//! the model's 8-bit offsets hold, more writes than its writers — is an error that names the
//! bound: a trace is never clamped into the model.

use std::collections::{BTreeSet, HashMap};
use std::fmt;

use serde::Serialize;

use super::trace::{Deletion, FirstWriteEvent, ReadRow, Writer};
use super::MAX_WRITERS;

/// How a trace was fitted: the real offset of each model offset (by rank), and the trace
/// writer and write of each model writer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Fitting {
    /// `offsets[r]` is the real offset the model calls `r`.
    pub offsets: Vec<u64>,
    /// `writes[w]` is the write model writer `w` (`w1` is 0) stands for.
    pub writes: Vec<Write>,
}

/// One write of a trace writer: its name in the trace and which of its writes it is (1-based).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Write {
    pub writer: Writer,
    pub nth: usize,
}

impl Fitting {
    /// Whether the model sees the trace as written (offsets `0..n` and one write a writer, in
    /// writer order): then there is nothing to tell people.
    pub fn is_identity(&self) -> bool {
        self.offsets.iter().enumerate().all(|(r, &o)| o == r as u64)
            && self
                .writes
                .iter()
                .enumerate()
                .all(|(w, write)| write.writer.index() == Some(w) && write.nth == 1)
    }

    /// The model's writers (each write of the trace).
    pub fn writers(&self) -> u8 {
        self.writes.len().max(1) as u8
    }

    /// The model's largest offset.
    pub fn max_offset(&self) -> u8 {
        self.offsets.len().saturating_sub(1) as u8
    }
}

impl fmt::Display for Fitting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let offsets: Vec<String> = self
            .offsets
            .iter()
            .enumerate()
            .map(|(r, o)| format!("{r}={o}"))
            .collect();
        writeln!(f, "model offsets (by rank): {}", offsets.join(" "))?;
        let writers: Vec<String> = self
            .writes
            .iter()
            .enumerate()
            .map(|(w, write)| format!("w{}={} write {}", w + 1, write.writer, write.nth))
            .collect();
        writeln!(f, "model writers: {}", writers.join(", "))
    }
}

/// Why a trace cannot be fitted to the model.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unrepresentable {
    #[error(
        "the trace has {distinct} distinct offsets; the model holds at most {} (MaxOffset ≤ {}: offsets are 8-bit)",
        u8::MAX as usize + 1,
        u8::MAX
    )]
    Offsets { distinct: usize },
    #[error(
        "the trace has {writes} writes; the model holds at most {MAX_WRITERS} writers, one write each (Writers ≤ {MAX_WRITERS})"
    )]
    Writes { writes: usize },
    #[error(
        "the history names {keys} keys; the fitted model holds one key's writes (judge a history over many keys against CasFirstWriteAtomic, which reads each key's row apart)"
    )]
    Keys { keys: usize },
    #[error(
        "event {event} reads a value or a tombstone; the fitted model holds offsets only (judge whole writes, `Persist` and `Delete`, against CasFirstWriteAtomic, whose row judge compares them)"
    )]
    ReadPayload { event: usize },
}

/// Fits `events` (in the order their writers made them) to the models: every offset replaced
/// by its rank, every write given its own model writer. A write starts at a writer's `Persist`,
/// `Delete` or `Update1`; its `Insert`, `Repair` and `RetryUpdate` continue it.
pub fn fit(events: &mut [FirstWriteEvent]) -> Result<Fitting, Unrepresentable> {
    // A read compared by its offset alone would pass a wrong value silently.
    if let Some(at) = events
        .iter()
        .position(|e| matches!(e, FirstWriteEvent::Read(row) if row.says_payload()))
    {
        return Err(Unrepresentable::ReadPayload { event: at + 1 });
    }
    let offsets: Vec<u64> = offsets_of(events).into_iter().collect();
    if offsets.len() > u8::MAX as usize + 1 {
        return Err(Unrepresentable::Offsets {
            distinct: offsets.len(),
        });
    }
    let rank = |o: u64| offsets.binary_search(&o).expect("every offset ranked") as u64;
    let mut writes: Vec<Write> = Vec::new();
    // Per trace writer, the model writer of its write in progress.
    let mut current: HashMap<Writer, usize> = HashMap::new();
    for event in events.iter_mut() {
        let starts = matches!(
            event,
            FirstWriteEvent::Persist(_) | FirstWriteEvent::Delete(_) | FirstWriteEvent::Update1(_)
        );
        match event {
            FirstWriteEvent::Update1(s)
            | FirstWriteEvent::Insert(s)
            | FirstWriteEvent::Repair(s)
            | FirstWriteEvent::RetryUpdate(s)
            | FirstWriteEvent::Persist(s)
            | FirstWriteEvent::Delete(Deletion(s)) => {
                let model_writer = match current.get(&s.writer) {
                    Some(&w) if !starts => w,
                    _ => {
                        let nth = writes.iter().filter(|w| w.writer == s.writer).count() + 1;
                        writes.push(Write {
                            writer: s.writer.clone(),
                            nth,
                        });
                        current.insert(s.writer.clone(), writes.len() - 1);
                        writes.len() - 1
                    }
                };
                s.offset = rank(s.offset);
                s.stored = s.stored.map(rank);
                s.writer = Writer::model(model_writer);
            }
            FirstWriteEvent::Read(read) => {
                if let ReadRow::Row { offset, .. } = read {
                    *offset = rank(*offset)
                }
            }
            FirstWriteEvent::ReapRow {} => {}
        }
    }
    if writes.len() > MAX_WRITERS {
        return Err(Unrepresentable::Writes {
            writes: writes.len(),
        });
    }
    Ok(Fitting { offsets, writes })
}

/// Every offset the events name: written, refusing, read.
fn offsets_of(events: &[FirstWriteEvent]) -> BTreeSet<u64> {
    let mut offsets = BTreeSet::new();
    for event in events {
        if let Some(s) = event.statement() {
            offsets.insert(s.offset);
            offsets.extend(s.stored);
        }
        if let FirstWriteEvent::Read(row) = event {
            offsets.extend(row.offset());
        }
    }
    offsets
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::first_write::trace::{Outcome, Statement};

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

    #[test]
    fn real_offsets_become_ranks_and_each_write_a_writer() {
        let mut events = vec![
            persist(4, 41_000, Some(Outcome::Applied), None),
            persist(4, 41_007, Some(Outcome::Applied), None),
            persist(0, 300, Some(Outcome::NotApplied), Some(41_007)),
            FirstWriteEvent::Read(ReadRow::at(Some(41_007))),
        ];
        let fitting = fit(&mut events).unwrap();
        assert_eq!(fitting.offsets, [300, 41_000, 41_007]);
        assert_eq!(
            events,
            [
                persist(0, 1, Some(Outcome::Applied), None),
                persist(1, 2, Some(Outcome::Applied), None),
                persist(2, 0, Some(Outcome::NotApplied), Some(2)),
                FirstWriteEvent::Read(ReadRow::at(Some(2))),
            ]
        );
        assert_eq!(fitting.writers(), 3);
        assert_eq!(fitting.max_offset(), 2);
        assert_eq!(
            fitting.writes[1],
            Write {
                writer: Writer::model(4),
                nth: 2
            }
        );
        assert!(!fitting.is_identity());
        let shown = fitting.to_string();
        assert!(
            shown.contains("1=41000") && shown.contains("w2=w5 write 2"),
            "{shown}"
        );
    }

    #[test]
    fn a_trace_in_the_models_own_terms_is_left_as_it_is() {
        let mut events = vec![
            persist(0, 0, Some(Outcome::Applied), None),
            persist(1, 1, Some(Outcome::Applied), None),
        ];
        let before = events.clone();
        assert!(fit(&mut events).unwrap().is_identity());
        assert_eq!(events, before);
    }

    #[test]
    fn more_writes_or_offsets_than_the_model_holds_are_errors_naming_the_bound() {
        let mut events: Vec<_> = (0..9)
            .map(|i| persist(0, i, Some(Outcome::Applied), None))
            .collect();
        let err = fit(&mut events).unwrap_err();
        assert_eq!(err, Unrepresentable::Writes { writes: 9 });
        assert!(err.to_string().contains("Writers ≤ 8"), "{err}");
        let mut events: Vec<_> = (0..300)
            .map(|i| FirstWriteEvent::Read(ReadRow::at(Some(i))))
            .collect();
        let err = fit(&mut events).unwrap_err();
        assert_eq!(err, Unrepresentable::Offsets { distinct: 300 });
        assert!(err.to_string().contains("MaxOffset ≤ 255"), "{err}");
    }
}
