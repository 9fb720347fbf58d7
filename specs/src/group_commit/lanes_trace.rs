//! The GroupCommitLanes model's trace vocabulary: the group commit's write lane, its marker
//! lane and its transactions (`impls/kafka/src/group_commit.rs`), read from the group commit's
//! own steps by the conformance harness (`conform/src/group_commit_lanes.rs`). Writers are
//! named by the input offset they write (`1..=N`); offsets are the model's (the next input
//! offset to consume, minus the seed).
//!
//! ```text
//! {"v":2,"vocabulary":"group_commit_lanes","action":"OfferWrite","writer":1}
//! {"v":2,"vocabulary":"group_commit_lanes","action":"TxnBegin","writes":1}
//! {"v":2,"vocabulary":"group_commit_lanes","action":"TxnCommit"}
//! {"v":2,"vocabulary":"group_commit_lanes","action":"ScheduleMarker","offset":1}
//! {"v":2,"vocabulary":"group_commit_lanes","action":"Quiesced","co":1}
//! ```

use loadbearing_trace::TraceEvent;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", deny_unknown_fields)]
pub enum LanesEvent {
    /// Writer `writer` queued its write.
    OfferWrite {
        writer: u8,
    },
    /// The flow scheduled `offset` (a marker on the marker lane).
    ScheduleMarker {
        offset: u8,
    },
    /// A transaction began, draining `writes` queued writes.
    TxnBegin {
        writes: u8,
    },
    TxnCommit,
    TxnAbort,
    /// The run is over: nothing is in flight and nothing more will be offered or scheduled;
    /// the committed offset is `co`. An observation: the model must agree on `co`, and under
    /// weak fairness have nothing left to do either.
    Quiesced {
        co: u8,
    },
}

impl TraceEvent for LanesEvent {
    const VOCABULARY: &'static str = "group_commit_lanes";

    fn action(&self) -> &str {
        match self {
            LanesEvent::OfferWrite { .. } => "OfferWrite",
            LanesEvent::ScheduleMarker { .. } => "ScheduleMarker",
            LanesEvent::TxnBegin { .. } => "TxnBegin",
            LanesEvent::TxnCommit => "TxnCommit",
            LanesEvent::TxnAbort => "TxnAbort",
            LanesEvent::Quiesced { .. } => "Quiesced",
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
            r#"{"v":2,"vocabulary":"group_commit_lanes","action":"OfferWrite","writer":1}"#,
            "\n",
            r#"{"v":2,"vocabulary":"group_commit_lanes","action":"TxnBegin","writes":1}"#,
            "\n",
            r#"{"v":2,"vocabulary":"group_commit_lanes","action":"Quiesced","co":1}"#,
            "\n",
        );
        let events = parse_ndjson::<LanesEvent>(text).unwrap();
        assert_eq!(events[1], LanesEvent::TxnBegin { writes: 1 });
        assert_eq!(to_ndjson(&events), text);
    }
}
