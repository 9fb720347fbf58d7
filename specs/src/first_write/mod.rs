//! The first-write family: `CasFirstWrite`, the three-statement compound (`compound`), and
//! `CasFirstWriteAtomic`, the one atomic conditional upsert it refines (`atomic`).
//!
//! This module holds what the two share: their constants, the stored row, the bound on
//! writers, every assignment of offsets to writers, the trace vocabulary both read (`trace`)
//! and why an event contradicts a step (`contradiction`). The compound refines the atomic
//! model, so it imports it; both import this module, and the atomic model needs nothing of the
//! compound's.

use std::fmt;

use arrayvec::ArrayVec;

pub mod atomic;
pub mod compound;
pub mod contradiction;
pub mod real;
pub mod register;
pub mod trace;

use crate::infra::knobs::{Flag, Nat};

/// At most this many writers: the state keeps them in fixed arrays and a `u8` set.
pub const MAX_WRITERS: usize = 8;

/// The stored row as the compound sees it: `{present, offset}`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
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

/// A read event against the model's row: the same offset, or both absent.
pub(crate) fn read_matches(
    read: Option<u64>,
    row: Row,
) -> Result<(), contradiction::FirstWriteContradiction> {
    let model = row.present.then_some(u64::from(row.offset));
    if read == model {
        Ok(())
    } else {
        Err(contradiction::FirstWriteContradiction::ReadRow { read, row })
    }
}

/// The first value of a first-write trace the models, with `writers` writers and offsets up
/// to `max_offset`, cannot hold: a writer that is not one of theirs (`w1` …), an offset past
/// `MaxOffset`, a read that says a value or a tombstone (their row is an offset: compared by
/// its offset alone, a wrong value would pass). `conform --trace` fits a real trace to them
/// first (`real::fit`), so these are what a trace in the models' own terms may still carry.
pub(crate) fn beyond(
    writers: u8,
    max_offset: u8,
    events: &[trace::FirstWriteEvent],
) -> Option<loadbearing_trace::Beyond> {
    use loadbearing_trace::{Beyond, Bound};
    let offset = |event: usize, what: &'static str, o: u64| {
        FirstWriteParams::MAX_OFFSET
            .passed_by(max_offset as u64, o, event, || format!("{what} {o}"))
    };
    events.iter().enumerate().find_map(|(event, e)| {
        if let Some(s) = e.statement() {
            let Some(w) = s.writer.index().filter(|&w| w < MAX_WRITERS) else {
                return Some(Beyond {
                    event,
                    what: format!("writer `{}`", s.writer),
                    bound: Bound::Fixed {
                        what: "writers, named w1, w2, … (conform --trace fits a real trace's writers to them)",
                        most: MAX_WRITERS as u64,
                    },
                });
            };
            return FirstWriteParams::WRITERS
                .passed_by(writers as u64, w as u64 + 1, event, || {
                    format!("writer {}", s.writer)
                })
                .or_else(|| offset(event, "offset", s.offset))
                .or_else(|| s.stored.and_then(|stored| offset(event, "stored offset", stored)));
        }
        match e {
            trace::FirstWriteEvent::Read(read) if read.says_payload() => Some(Beyond {
                event,
                what: format!("the read's {read}"),
                bound: Bound::Fixed {
                    what: "values or tombstones (the model's row is an offset; judge whole writes, Persist and Delete, against CasFirstWriteAtomic, whose row judge compares them)",
                    most: 0,
                },
            }),
            trace::FirstWriteEvent::Read(read) => {
                read.offset().and_then(|o| offset(event, "read offset", o))
            }
            _ => None,
        }
    })
}

/// Every assignment of an offset in `0..=max` to each writer, in a fixed order. Offset zero is
/// included on purpose: `Present(0)` differs from `Absent`.
pub(crate) fn all_offsets(writers: u8, max: u8) -> Vec<[u8; MAX_WRITERS]> {
    let base = max as u64 + 1;
    // Wrapping would silently check fewer assignments; this many could never be enumerated.
    let assignments = base
        .checked_pow(writers as u32)
        .expect("fewer than 2^64 assignments of offsets");
    (0..assignments)
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

/// The permutation that sorts writers `0..writers` by `local`, a key below 2^24: writer w goes
/// to the slot of its rank (ties keep their order), as `permute` takes it. Both models reduce
/// their writers' symmetry by it.
pub(crate) fn sorting(writers: u8, local: impl Fn(usize) -> u32) -> ArrayVec<u8, MAX_WRITERS> {
    // Called for every state a symmetric search reaches: on the stack, no allocation, and
    // each writer's key and index packed in one word, so that ties keep their order and
    // every comparison is one instruction.
    let mut order: ArrayVec<u32, MAX_WRITERS> = (0..writers)
        .map(|w| {
            let key = local(w as usize);
            debug_assert!(key < 1 << 24, "a writer's key fits 24 bits");
            key << 8 | w as u32
        })
        .collect();
    order.sort_unstable();
    let mut to: ArrayVec<u8, MAX_WRITERS> = (0..writers).collect();
    for (rank, &packed) in order.iter().enumerate() {
        to[(packed & 0xff) as usize] = rank as u8;
    }
    to
}

/// The states in the orbit of a state whose writers have the local states `local` gives, under
/// every permutation of the writers, where nothing but those local states names a writer:
/// `writers!` over the product of `k!` for each local state `k` writers share (a permutation
/// among writers of one local state leaves the state as it is).
pub(crate) fn orbit_size(writers: u8, local: impl Fn(usize) -> u32) -> u64 {
    let mut keys: ArrayVec<u32, MAX_WRITERS> = (0..writers as usize).map(local).collect();
    keys.sort_unstable();
    let factorial = |n: u64| (1..=n).product::<u64>();
    let shared: u64 = keys
        .chunk_by(|a, b| a == b)
        .map(|run| factorial(run.len() as u64))
        .product();
    factorial(writers as u64) / shared
}

/// The constants of both first-write models (the atomic one ignores `InsertIfNotExists` and
/// `Retry`: it has no INSERT and no retry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FirstWriteParams {
    pub writers: u8,
    pub max_offset: u8,
    pub guarded: bool,
    pub reap: bool,
    pub insert_if_not_exists: bool,
    pub retry: bool,
}

crate::params! {
    FirstWriteParams {
        writers: pub const WRITERS: Nat = Nat::new(
            "Writers",
            1,
            MAX_WRITERS as u64,
            2,
            "how many writers (the set {w1..wN})",
        )
        .max_because("the state keeps 8 writers in fixed arrays and an 8-bit set");
        max_offset: pub const MAX_OFFSET: Nat = Nat::new(
            "MaxOffset",
            0,
            u8::MAX as u64,
            2,
            "each writer persists an offset in 0..MaxOffset",
        )
        .max_because("offsets are 8-bit");
        guarded: pub const GUARDED: Flag = Flag::new("Guarded", true, "the UPDATEs carry IF offset <= o");
        reap: pub const REAP: Flag = Flag::new("Reap", false, "a TTL may reap the row at any time");
        insert_if_not_exists: pub const INSERT_IF_NOT_EXISTS: Flag = Flag::new(
            "InsertIfNotExists",
            true,
            "the INSERT carries IF NOT EXISTS",
        );
        retry: pub const RETRY: Flag = Flag::new(
            "Retry",
            true,
            "a writer that lost the insert race retries the UPDATE once",
        );
    }
}
