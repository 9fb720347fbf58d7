//! The Kafka model's trace vocabulary, read by `Kafka` and by the rejected `Epoch` design
//! (`ZombieInit` is an Epoch step; `Poll` a Kafka one). The harness (`conform/src/kafka.rs`)
//! composes each event from the implementation's Kafka steps (`impls/kafka`) and the
//! compacted topic read back afterwards.
//!
//! ```text
//! {"v":2,"vocabulary":"kafka","action":"Rebalance","liveGen":2}
//! {"v":2,"vocabulary":"kafka","action":"ZombieCommit","offset":2,"op":"persist","outcome":{"kind":"committed"},"topic":{"kind":"snap","offset":2,"contents":[1,2]}}
//! ```

use std::fmt;

use loadbearing_trace::TraceEvent;
use serde::{Deserialize, Serialize};

use crate::infra::vocab::{Cell, Offsets, Op};

/// How a transaction ended, as the implementation reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "reason", rename_all = "snake_case")]
pub enum TxnOutcome {
    Committed,
    /// The broker rejected it through a fence (the error code's name), and it was aborted.
    Fenced(String),
    /// Refused before anything was sent.
    Refused(String),
    /// Failed for another reason, and aborted.
    Failed(String),
}

impl TxnOutcome {
    pub fn committed(&self) -> bool {
        *self == TxnOutcome::Committed
    }
}

impl fmt::Display for TxnOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TxnOutcome::Committed => write!(f, "committed"),
            TxnOutcome::Fenced(code) => write!(f, "fenced {code}"),
            TxnOutcome::Refused(why) => write!(f, "refused: {why}"),
            TxnOutcome::Failed(why) => write!(f, "failed: {why}"),
        }
    }
}

/// Every field but the offsets and ops that identify a step is optional: what is missing is
/// searched. `topic` is the compacted topic's last durable record for the key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", deny_unknown_fields)]
pub enum KafkaEvent {
    /// `OwnerFold`: the live owner folded the record at `offset` and its transaction ended
    /// with `outcome`.
    OwnerFold {
        offset: u64,
        op: Op,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outcome: Option<TxnOutcome>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        topic: Option<Cell>,
    },
    /// `OwnerRecover`: the owner reloaded the key (`ownerState`: what it holds now).
    OwnerRecover {
        #[serde(
            rename = "ownerState",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        owner_state: Option<Offsets>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        topic: Option<Cell>,
    },
    /// `Rebalance`: the group moved to generation `liveGen`.
    Rebalance {
        #[serde(rename = "liveGen", default, skip_serializing_if = "Option::is_none")]
        live_gen: Option<u64>,
    },
    /// `Poll`: the zombie's consumer ran the rebalance callback, capturing generation
    /// `zCapturedGen`, and tore its flow down (`tornDown`) or not.
    Poll {
        #[serde(
            rename = "zCapturedGen",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        z_captured_gen: Option<u64>,
        #[serde(rename = "tornDown", default, skip_serializing_if = "Option::is_none")]
        torn_down: Option<bool>,
    },
    /// Epoch `ZombieInit`: the stale owner initialised its producer with the stable id (a
    /// stutter for the Kafka model).
    ZombieInit {},
    /// `ZombieCommit(m)`, m = `offset`: the zombie flushed its fold at m and its
    /// transaction ended with `outcome`.
    ZombieCommit {
        offset: u64,
        op: Op,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outcome: Option<TxnOutcome>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        topic: Option<Cell>,
    },
}

impl KafkaEvent {
    /// The offset and op a fold or a commit reveals of the log.
    pub fn reveals(&self) -> Option<(u64, Op)> {
        match *self {
            KafkaEvent::OwnerFold { offset, op, .. }
            | KafkaEvent::ZombieCommit { offset, op, .. } => Some((offset, op)),
            KafkaEvent::OwnerRecover { .. }
            | KafkaEvent::Rebalance { .. }
            | KafkaEvent::Poll { .. }
            | KafkaEvent::ZombieInit {} => None,
        }
    }
}

/// Every offset a Kafka trace names, with what it is, by event index: a fold's or commit's
/// offset, and every offset of a record or owner state it read.
pub(crate) fn offsets_named(events: &[KafkaEvent]) -> Vec<(usize, &'static str, u64)> {
    let mut named = Vec::new();
    for (i, event) in events.iter().enumerate() {
        named.extend(event.reveals().map(|(o, _)| (i, "offset", o)));
        let (topic, owner_state) = match event {
            KafkaEvent::OwnerFold { topic, .. } | KafkaEvent::ZombieCommit { topic, .. } => {
                (*topic, None)
            }
            KafkaEvent::OwnerRecover { topic, owner_state } => (*topic, *owner_state),
            KafkaEvent::Rebalance { .. } | KafkaEvent::Poll { .. } | KafkaEvent::ZombieInit {} => {
                (None, None)
            }
        };
        if let Some(cell) = topic {
            named
                .extend(crate::one_key::conform::cell_offsets(&cell).map(|(what, o)| (i, what, o)));
        }
        named.extend(
            owner_state
                .into_iter()
                .flat_map(Vec::<u8>::from)
                .map(|o| (i, "owner state offset", o as u64)),
        );
    }
    named
}

impl TraceEvent for KafkaEvent {
    const VOCABULARY: &'static str = "kafka";

    fn action(&self) -> &str {
        match self {
            KafkaEvent::OwnerFold { .. } => "OwnerFold",
            KafkaEvent::OwnerRecover { .. } => "OwnerRecover",
            KafkaEvent::Rebalance { .. } => "Rebalance",
            KafkaEvent::Poll { .. } => "Poll",
            KafkaEvent::ZombieInit {} => "ZombieInit",
            KafkaEvent::ZombieCommit { .. } => "ZombieCommit",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadbearing_trace::{parse_ndjson, to_ndjson};

    #[test]
    fn the_documented_lines_read_and_write_back() {
        let text = concat!(
            r#"{"v":2,"vocabulary":"kafka","action":"Rebalance","liveGen":2}"#,
            "\n",
            r#"{"v":2,"vocabulary":"kafka","action":"ZombieCommit","offset":2,"op":"persist","outcome":{"kind":"committed"},"topic":{"kind":"snap","offset":2,"contents":[1,2]}}"#,
            "\n",
            r#"{"v":2,"vocabulary":"kafka","action":"OwnerFold","offset":1,"op":"delete","outcome":{"kind":"fenced","reason":"INVALID_PRODUCER_EPOCH"}}"#,
            "\n",
            r#"{"v":2,"vocabulary":"kafka","action":"ZombieInit"}"#,
            "\n",
        );
        let events = parse_ndjson::<KafkaEvent>(text).unwrap();
        assert_eq!(events[0], KafkaEvent::Rebalance { live_gen: Some(2) });
        assert_eq!(to_ndjson(&events), text);
    }
}
