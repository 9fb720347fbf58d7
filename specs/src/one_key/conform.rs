//! What the one-key models' conformance adapters (Cassandra, Kafka, Epoch) share: reading a
//! trace's fixed log and comparing an event's reported values with the model's.

use std::fmt;

use crate::infra::vocab::{Cell, Op, Ops};

/// The logs a trace allows: the events' ops reveal the op at their offsets, the offsets no
/// event names stay open (both ops). Contradicting events leave no log; an offset outside
/// `1..=max` is left to the steps to reject.
pub(crate) fn revealed_logs(max: u8, reveals: impl IntoIterator<Item = (u64, Op)>) -> Vec<Ops> {
    let (mut known, mut deletes) = (0u32, 0u32);
    for (o, op) in reveals {
        if o == 0 || o > max as u64 {
            continue;
        }
        let bit = 1u32 << o;
        let delete = match op {
            Op::Delete => bit,
            Op::Persist => 0,
        };
        if known & bit != 0 && deletes & bit != delete {
            return Vec::new();
        }
        known |= bit;
        deletes |= delete;
    }
    let open: Vec<u32> = (1..=max)
        .map(|o| 1u32 << o)
        .filter(|b| known & b == 0)
        .collect();
    (0..1u32 << open.len())
        .map(|choice| {
            let chosen = open
                .iter()
                .enumerate()
                .filter(|(i, _)| choice & (1 << i) != 0)
                .fold(0, |acc, (_, b)| acc | b);
            Ops(deletes | chosen)
        })
        .collect()
}

/// Why an event of a one-key model contradicts the model's step, where the three models
/// compare the same thing: the op the log holds at an offset, a counter, the topic.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OneKeyContradiction {
    #[error("the event at offset {offset} is a {}, the model's log has a {} there", .event.name(), .model.name())]
    Op { offset: u64, event: Op, model: Op },
    #[error("the implementation's {counter} is {got}, the model's {model}")]
    Counter {
        counter: Counter,
        got: u64,
        model: u64,
    },
    #[error("the topic's last record for the key is {got}, the model's topic is {model}")]
    Topic { got: Cell, model: Cell },
    #[error("offset {offset} is past the model's log (offsets 1 to {most})")]
    PastTheLog { offset: u64, most: u8 },
}

/// A number an event reports that the model keeps too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counter {
    PresentedOffset,
    LiveGeneration,
    CapturedGeneration,
}

impl fmt::Display for Counter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Counter::PresentedOffset => "presented offset",
            Counter::LiveGeneration => "live generation",
            Counter::CapturedGeneration => "captured generation",
        })
    }
}

pub(crate) fn check_op(ops: Ops, offset: u64, op: Op) -> Result<(), OneKeyContradiction> {
    // The log is a 32-bit set: an offset past it is in no model's log (never wrapped into it).
    let Some(at) = u8::try_from(offset).ok().filter(|&o| o <= LAST_OFFSET) else {
        return Err(OneKeyContradiction::PastTheLog {
            offset,
            most: LAST_OFFSET,
        });
    };
    let model = ops.at(at);
    if op != model {
        return Err(OneKeyContradiction::Op {
            offset,
            event: op,
            model,
        });
    }
    Ok(())
}

/// The last offset a log holds (`Ops` is a 32-bit set of offsets).
const LAST_OFFSET: u8 = 31;

/// The first offset a trace names past `max`, the model's `knob` (`MaxOffset`): events'
/// offsets, with what each is, by event index.
pub(crate) fn offset_beyond(
    knob: crate::infra::knobs::Nat,
    max: u8,
    offsets: impl IntoIterator<Item = (usize, &'static str, u64)>,
) -> Option<loadbearing_trace::Beyond> {
    offsets.into_iter().find_map(|(event, what, offset)| {
        knob.passed_by(max as u64, offset, event, || format!("{what} {offset}"))
    })
}

/// The offsets a row or record names: its own, and those it has folded.
pub(crate) fn cell_offsets(cell: &Cell) -> impl Iterator<Item = (&'static str, u64)> + '_ {
    cell.present
        .then_some(("row offset", cell.offset as u64))
        .into_iter()
        .chain(
            Vec::<u8>::from(cell.contents)
                .into_iter()
                .map(|o| ("folded offset", o as u64)),
        )
}

pub(crate) fn expect_u64(
    got: Option<u64>,
    model: u64,
    counter: Counter,
) -> Result<(), OneKeyContradiction> {
    match got {
        Some(got) if got != model => Err(OneKeyContradiction::Counter {
            counter,
            got,
            model,
        }),
        _ => Ok(()),
    }
}

pub(crate) fn expect_topic(model: Cell, got: Option<Cell>) -> Result<(), OneKeyContradiction> {
    match got {
        Some(got) if got != model => Err(OneKeyContradiction::Topic { got, model }),
        _ => Ok(()),
    }
}
