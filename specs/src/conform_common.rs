//! What the conformance adapters of the one-key models (Cassandra, Kafka, Epoch) share:
//! reading a trace's fixed log, and comparing an event's reported values with the model's.

use crate::vocab::{Op, Ops};

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

pub(crate) fn check_op(ops: Ops, offset: u64, op: Op) -> Result<(), String> {
    let model = ops.at(offset as u8);
    if op != model {
        return Err(format!(
            "the event at offset {offset} is a {}, the model's log has a {} there",
            op.name(),
            model.name()
        ));
    }
    Ok(())
}

pub(crate) fn expect_u64(got: Option<u64>, model: u64, what: &str) -> Result<(), String> {
    match got {
        Some(got) if got != model => Err(format!(
            "the implementation's {what} is {got}, the model's {model}"
        )),
        _ => Ok(()),
    }
}

/// The untyped (schema v1) reading of the Kafka and Epoch adapters, until their vocabulary
/// lands.
pub(crate) mod legacy {
    use loadbearing_refinement::conform::Event;

    use crate::vocab::{Cell, Op, Ops};

    pub(crate) fn reveals(events: &[Event]) -> impl Iterator<Item = (u64, Op)> + '_ {
        events
            .iter()
            .filter_map(|e| Some((e.arg_u64("offset")?, Op::parse(e.arg_str("op")?)?)))
    }

    pub(crate) fn check_op(ops: Ops, offset: u64, event: &Event) -> Result<(), String> {
        let model = ops.at(offset as u8).name();
        match event.arg_str("op") {
            Some(op) if op != model => Err(format!(
                "the event at offset {offset} is a {op}, the model's log has a {model} there"
            )),
            _ => Ok(()),
        }
    }

    pub(crate) fn expect_topic(model: Cell, event: &Event) -> Result<(), String> {
        match event.var_str("topic") {
            Some(got) if got != model.to_string() => Err(format!(
                "the topic's last record for the key is {got}, the model's topic is {model}"
            )),
            _ => Ok(()),
        }
    }
}
