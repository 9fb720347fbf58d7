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
    let model = ops.at(offset as u8);
    if op != model {
        return Err(OneKeyContradiction::Op {
            offset,
            event: op,
            model,
        });
    }
    Ok(())
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
