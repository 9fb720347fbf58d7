//! The RecoveryRead model's trace vocabulary: the writers' script on the snapshot partition,
//! the broker's aborts, and the recovery read (`impls/kafka/src/recovery.rs` over the broker),
//! composed by the conformance harness (`conform/src/recovery_read.rs`). Log indexes are the
//! model's: 1-based, one per transaction's record, control markers not counted.
//!
//! ```text
//! {"v":2,"vocabulary":"recovery_read","action":"AWriteS1"}
//! {"v":2,"vocabulary":"recovery_read","action":"AOpenT1"}
//! {"v":2,"vocabulary":"recovery_read","action":"Capture","target":2}
//! {"v":2,"vocabulary":"recovery_read","action":"TimeoutAbort","index":2}
//! {"v":2,"vocabulary":"recovery_read","action":"Ends","stable":3,"high":3}
//! {"v":2,"vocabulary":"recovery_read","action":"Complete","result":[1]}
//! ```

use loadbearing_trace::TraceEvent;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", deny_unknown_fields)]
pub enum ReadEvent {
    /// Owner A committed its snapshot S1.
    AWriteS1,
    /// Owner A left a transaction open with one record.
    AOpenT1,
    /// A producer outside the lineage left a transaction open.
    ForeignOpen,
    /// Owner B initialised its transactional producer.
    BInit,
    /// Owner B committed its snapshot S3.
    BWriteS3,
    /// Owner B left a transaction open.
    BOpenT2,
    /// The broker aborted the open transaction at `index`.
    TimeoutAbort { index: u8 },
    /// The log kept only its first `keep` records.
    Truncate { keep: u8 },
    /// The read took its bound: the records below `target`.
    Capture { target: u8 },
    /// The read returned the records at `result`.
    Complete { result: Vec<u8> },
    /// The tripwire failed the read.
    TripFail,
    /// Both ends as read now, in records: the last stable offset and the high watermark (an
    /// observation, no step).
    Ends { stable: u8, high: u8 },
}

impl TraceEvent for ReadEvent {
    const VOCABULARY: &'static str = "recovery_read";

    fn action(&self) -> &str {
        match self {
            ReadEvent::AWriteS1 => "AWriteS1",
            ReadEvent::AOpenT1 => "AOpenT1",
            ReadEvent::ForeignOpen => "ForeignOpen",
            ReadEvent::BInit => "BInit",
            ReadEvent::BWriteS3 => "BWriteS3",
            ReadEvent::BOpenT2 => "BOpenT2",
            ReadEvent::TimeoutAbort { .. } => "TimeoutAbort",
            ReadEvent::Truncate { .. } => "Truncate",
            ReadEvent::Capture { .. } => "Capture",
            ReadEvent::Complete { .. } => "Complete",
            ReadEvent::TripFail => "TripFail",
            ReadEvent::Ends { .. } => "Ends",
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
            r#"{"v":2,"vocabulary":"recovery_read","action":"AOpenT1"}"#,
            "\n",
            r#"{"v":2,"vocabulary":"recovery_read","action":"Capture","target":2}"#,
            "\n",
            r#"{"v":2,"vocabulary":"recovery_read","action":"Ends","stable":3,"high":3}"#,
            "\n",
            r#"{"v":2,"vocabulary":"recovery_read","action":"Complete","result":[1]}"#,
            "\n",
        );
        let events = parse_ndjson::<ReadEvent>(text).unwrap();
        assert_eq!(events[1], ReadEvent::Capture { target: 2 });
        assert_eq!(to_ndjson(&events), text);
    }
}
