//! Why a first-write event contradicts a model step, as data: the compound
//! (`CasFirstWrite`) and the atomic upsert (`CasFirstWriteAtomic`) read the same vocabulary
//! against the same row, so they share one contradiction type.

use loadbearing_trace::TraceEvent as _;

use super::trace::{FirstWriteEvent, Outcome};
use super::Row;

/// Why a first-write event contradicts a step of the compound (`CasFirstWrite`) or of the
/// atomic upsert (`CasFirstWriteAtomic`): both read the same vocabulary against the same row.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FirstWriteContradiction {
    #[error("the event has no statement outcome")]
    NoOutcome,
    #[error(
        "{} of offset {offset} on {row}: the implementation says {}, the model {}{}",
        .event.action(),
        .got.name(),
        .expected.name(),
        stale_suffix(*.got, *.row, *.offset)
    )]
    Outcome {
        event: FirstWriteEvent,
        offset: u8,
        row: Row,
        got: Outcome,
        expected: Outcome,
    },
    #[error("the implementation reports stored offset {stored}, the model's row holds {row}")]
    StoredOffset { stored: u64, row: Row },
    #[error("a reap is not an atomic writer's step")]
    ReapIsNoAtomicStep,
    #[error("the read found {}, the model's row holds {row}", read_row(*.read))]
    ReadRow { read: Option<u64>, row: Row },
    #[error("the implementation applied offset {offset} over {row}: a stale write landed")]
    StaleWriteLanded { offset: u8, row: Row },
    #[error("the implementation refused offset {offset}, but the row holds {row}: the write should have applied")]
    WriteRefused { offset: u8, row: Row },
    #[error(
        "the event names offset {named}, but the model's writer {writer} persists offset {persists}: an event reports a writer's step only with its own offset"
    )]
    WriterOffset {
        writer: String,
        named: u64,
        persists: u8,
    },
    #[error("`{writer}` is none of the model's writers (w1, w2, …)")]
    NotAModelWriter { writer: String },
    #[error(
        "`{}` is an answer of the compound's insert, not of the atomic upsert",
        .outcome.name()
    )]
    NoAtomicOutcome { outcome: Outcome },
}

/// The offset the model's writer of statement `s` persists, when the statement names it: an
/// event reports a writer's step only if every field that identifies it agrees (the writer
/// and its offset).
pub(crate) fn writer_offset(
    off: &[u8; super::MAX_WRITERS],
    s: &super::trace::Statement,
) -> Result<u8, FirstWriteContradiction> {
    let persists = s
        .writer
        .index()
        .and_then(|w| off.get(w))
        .copied()
        .ok_or_else(|| FirstWriteContradiction::NotAModelWriter {
            writer: s.writer.to_string(),
        })?;
    if s.offset != u64::from(persists) {
        return Err(FirstWriteContradiction::WriterOffset {
            writer: s.writer.to_string(),
            named: s.offset,
            persists,
        });
    }
    Ok(persists)
}

/// A read's row in words.
fn read_row(read: Option<u64>) -> String {
    match read {
        Some(offset) => format!("Present({offset})"),
        None => "no row".into(),
    }
}

/// An outcome that applied an offset older than the row's is the stale write the compound
/// exists to prevent; the report says so.
fn stale_suffix(got: Outcome, row: Row, offset: u8) -> &'static str {
    if got == Outcome::Applied && row.present && offset < row.offset {
        ": a stale write landed"
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::super::trace::{Statement, Writer};
    use super::*;

    #[test]
    fn an_applied_older_offset_is_reported_as_a_stale_write() {
        let insert = |outcome| Statement::new(Writer::model(0), 2, Some(outcome), None);
        let why = |got, expected| {
            FirstWriteContradiction::Outcome {
                event: FirstWriteEvent::Insert(insert(got)),
                offset: 2,
                row: Row::present(4),
                got,
                expected,
            }
            .to_string()
        };
        assert_eq!(
            why(Outcome::Applied, Outcome::NotApplied),
            "Insert of offset 2 on Present(4): the implementation says applied, the model \
             not_applied: a stale write landed"
        );
        assert_eq!(
            why(Outcome::NotApplied, Outcome::Applied),
            "Insert of offset 2 on Present(4): the implementation says not_applied, the model \
             applied"
        );
    }
}
