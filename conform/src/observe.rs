//! An implementation's stored values as the models' cells: what every harness compares.

use loadbearing_impls::Read;
use loadbearing_specs::vocab::{Cell, Offsets};

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

/// A folded value (one offset per line: the flows append each record's offset) as the model's
/// set of offsets.
pub fn contents_of(value: &[u8]) -> Result<Offsets, ValueError> {
    let mut contents = Offsets::EMPTY;
    for line in String::from_utf8_lossy(value).lines() {
        let o: u8 = line
            .parse()
            .map_err(|_| ValueError::NotAnOffset(line.to_string()))?;
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
