//! What the two first-write models share: the stored row, the bound on writers, and every
//! assignment of offsets to writers. `CasFirstWrite` (the compound) refines
//! `CasFirstWriteAtomic`, so the compound imports the atomic model; both import this module,
//! and the atomic model needs nothing of the compound's.

use std::fmt;

use crate::knobs::Knob;

pub const MAX_WRITERS: usize = 8;

/// The stored row as the compound sees it: `{present, offset}`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Row {
    pub present: bool,
    pub offset: u8,
}

impl Row {
    pub const ABSENT: Row = Row {
        present: false,
        offset: 0,
    };

    pub fn present(offset: u8) -> Row {
        Row {
            present: true,
            offset,
        }
    }
}

impl fmt::Display for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.present {
            write!(f, "Present({})", self.offset)
        } else {
            write!(f, "Absent")
        }
    }
}

/// Every assignment of an offset in `0..=max` to each writer, in a fixed order. Offset zero is
/// included on purpose: `Present(0)` differs from `Absent`.
pub(crate) fn all_offsets(writers: u8, max: u8) -> Vec<[u8; MAX_WRITERS]> {
    let base = max as u64 + 1;
    (0..base.pow(writers as u32))
        .map(|mut code| {
            let mut off = [0; MAX_WRITERS];
            for slot in off.iter_mut().take(writers as usize) {
                *slot = (code % base) as u8;
                code /= base;
            }
            off
        })
        .collect()
}

/// The constants of both first-write models (the atomic one ignores `InsertIfNotExists` and
/// `Retry`: it has no INSERT and no retry).
pub(crate) const KNOBS: &[Knob] = &[
    Knob::nat(
        "Writers",
        1,
        MAX_WRITERS as u64,
        2,
        "how many writers (the set {w1..wN})",
    ),
    Knob::nat(
        "MaxOffset",
        0,
        15,
        2,
        "each writer persists an offset in 0..MaxOffset",
    ),
    Knob::flag("Guarded", true, "the UPDATEs carry IF offset <= o"),
    Knob::flag("Reap", false, "a TTL may reap the row at any time"),
    Knob::flag(
        "InsertIfNotExists",
        true,
        "the INSERT carries IF NOT EXISTS",
    ),
    Knob::flag(
        "Retry",
        true,
        "a writer that lost the insert race retries the UPDATE once",
    ),
];
