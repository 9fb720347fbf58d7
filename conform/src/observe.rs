//! An implementation's stored values as the models' cells: what every harness compares.

use loadbearing_impls::Read;
use loadbearing_specs::infra::vocab::{Cell, Offsets};

use crate::error::ValueError;

/// A stored row (or a compacted topic's last record) as a model cell: a live value's lines are
/// the offsets it folded.
pub fn cell_of(read: &Read) -> Result<Cell, ValueError> {
    Ok(match read {
        Read::Absent => Cell::ABSENT,
        Read::Tombstone { offset } => Cell::tomb(small(*offset)?),
        Read::Live { offset, value } => Cell::snap(small(*offset)?, contents_of(value)?),
    })
}

/// As [`cell_of`], reading the value as a set ([`contents_as_set`]).
pub fn cell_as_set(read: &Read) -> Result<Cell, ValueError> {
    Ok(match read {
        Read::Live { offset, value } => Cell::snap(small(*offset)?, contents_as_set(value)?),
        other => cell_of(other)?,
    })
}

/// A folded value as a set, a repeated line collapsed: for the #828 Kafka harness only, whose
/// model predates K-4 and whose owner folds over whatever it recovered (a zombie's snapshot
/// included), so a line folded twice is that model's behaviour, not the implementation's.
pub fn contents_as_set(value: &[u8]) -> Result<Offsets, ValueError> {
    Ok(lines_of(value)?
        .into_iter()
        .fold(Offsets::EMPTY, |contents, o| contents.with(o)))
}

/// The offsets a value's lines name, in order.
fn lines_of(value: &[u8]) -> Result<Vec<u8>, ValueError> {
    String::from_utf8_lossy(value)
        .lines()
        .map(|line| {
            line.parse()
                .map_err(|_| ValueError::NotAnOffset(line.to_string()))
        })
        .collect()
}

/// A folded value (one offset per line: the flows append each record's offset) as the model's
/// set of offsets. A line repeated is an error, not a set member: the value folded a replayed
/// record twice (S-1, K-4), which a set would hide.
pub fn contents_of(value: &[u8]) -> Result<Offsets, ValueError> {
    let mut contents = Offsets::EMPTY;
    for o in lines_of(value)? {
        if contents.contains(o) {
            return Err(ValueError::FoldedTwice(o));
        }
        contents = contents.with(o);
    }
    Ok(contents)
}

fn small(offset: u64) -> Result<u8, ValueError> {
    u8::try_from(offset)
        .ok()
        .filter(|o| *o < 32)
        .ok_or(ValueError::OffsetOutOfRange(offset))
}
