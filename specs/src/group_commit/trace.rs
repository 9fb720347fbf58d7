//! The GroupCommit model's trace vocabulary: the group commit of `impls/kafka`, its writers
//! and the flow, composed by the harness (`conform/src/group_commit.rs`) from the Kafka steps.
//! A writer is named by the input offset it writes (the model's writer N writes offset N).
//!
//! ```text
//! {"v":2,"vocabulary":"group_commit","action":"offer","writer":"w2"}
//! {"v":2,"vocabulary":"group_commit","action":"commit","writer":"w2","writes":1,"co":0}
//! {"v":2,"vocabulary":"group_commit","action":"sched","o":2}
//! ```

use std::fmt;

use loadbearing_trace::TraceEvent;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use crate::kafka::trace::TxnOutcome;

/// Who took a step: the model's writer of offset N (`wN`), or an implementation writer the
/// model has no writer for (`writer#ID`: the revoke path's own commit), which no model step
/// reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Writer {
    Of(u8),
    Unmodelled(u64),
}

impl fmt::Display for Writer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Writer::Of(o) => write!(f, "w{o}"),
            Writer::Unmodelled(id) => write!(f, "writer#{id}"),
        }
    }
}

impl Serialize for Writer {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Writer {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Writer, D::Error> {
        let name = String::deserialize(d)?;
        let of = name
            .strip_prefix('w')
            .and_then(|o| o.parse().ok())
            .map(Writer::Of);
        let unmodelled = || {
            name.strip_prefix("writer#")
                .and_then(|id| id.parse().ok())
                .map(Writer::Unmodelled)
        };
        of.or_else(unmodelled).ok_or_else(|| {
            serde::de::Error::custom(format!("`{name}` is not a writer (w1, w2, … or writer#ID)"))
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", deny_unknown_fields)]
pub enum GcEvent {
    /// `Offer(w)`: the writer queued its write.
    #[serde(rename = "offer")]
    Offer { writer: Writer },
    /// `Acq(w)`: the writer took the commit lock.
    #[serde(rename = "acq")]
    Acq { writer: Writer },
    /// `Commit(w)`: the lock holder drained `writes` queued writes into one transaction
    /// carrying offset `co`.
    #[serde(rename = "commit")]
    Commit {
        writer: Writer,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        writes: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        co: Option<u64>,
    },
    /// The transaction's end: no model variable changes (a stutter), and in the model every
    /// transaction commits.
    #[serde(rename = "transaction")]
    Transaction {
        writer: Writer,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outcome: Option<TxnOutcome>,
    },
    /// `Await(w)`: the writer learnt its transaction's outcome.
    #[serde(rename = "await_")]
    Await {
        writer: Writer,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outcome: Option<TxnOutcome>,
    },
    /// `Sched(o)`: the flow scheduled the offset commit of input offset `o`.
    #[serde(rename = "sched")]
    Sched { o: u64 },
}

impl TraceEvent for GcEvent {
    const VOCABULARY: &'static str = "group_commit";

    fn action(&self) -> &str {
        match self {
            GcEvent::Offer { .. } => "offer",
            GcEvent::Acq { .. } => "acq",
            GcEvent::Commit { .. } => "commit",
            GcEvent::Transaction { .. } => "transaction",
            GcEvent::Await { .. } => "await_",
            GcEvent::Sched { .. } => "sched",
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
            r#"{"v":2,"vocabulary":"group_commit","action":"offer","writer":"w2"}"#,
            "\n",
            r#"{"v":2,"vocabulary":"group_commit","action":"commit","writer":"w2","writes":1,"co":0}"#,
            "\n",
            r#"{"v":2,"vocabulary":"group_commit","action":"await_","writer":"writer#7","outcome":{"kind":"failed","reason":"INJECTED"}}"#,
            "\n",
            r#"{"v":2,"vocabulary":"group_commit","action":"sched","o":2}"#,
            "\n",
        );
        let events = parse_ndjson::<GcEvent>(text).unwrap();
        assert_eq!(
            events[0],
            GcEvent::Offer {
                writer: Writer::Of(2)
            }
        );
        assert_eq!(to_ndjson(&events), text);
    }
}
