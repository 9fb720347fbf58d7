//! The RecoveryDeadline model's trace vocabulary: the recovery read's loop
//! (`impls/kafka/src/recovery.rs`) tick by tick, composed by the conformance harness, which
//! owns the clock and the log (`conform/src/recovery_deadline.rs`). A tick is a fixed span of
//! the read's clock in which the position moved (`Progress`) or did not (`Stall`).
//!
//! ```text
//! {"v":2,"vocabulary":"recovery_deadline","action":"Progress"}
//! {"v":2,"vocabulary":"recovery_deadline","action":"Stall"}
//! {"v":2,"vocabulary":"recovery_deadline","action":"TripFail"}
//! ```

use loadbearing_trace::TraceEvent;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", deny_unknown_fields)]
pub enum DeadlineEvent {
    /// A tick in which the read's position moved.
    Progress,
    /// A tick in which it did not.
    Stall,
    /// The read reached its target and returned.
    Complete,
    /// The tripwire failed the read.
    TripFail,
    /// The member was evicted at the poll deadline with the read still running.
    Evict,
}

impl TraceEvent for DeadlineEvent {
    const VOCABULARY: &'static str = "recovery_deadline";

    fn action(&self) -> &str {
        match self {
            DeadlineEvent::Progress => "Progress",
            DeadlineEvent::Stall => "Stall",
            DeadlineEvent::Complete => "Complete",
            DeadlineEvent::TripFail => "TripFail",
            DeadlineEvent::Evict => "Evict",
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
            r#"{"v":2,"vocabulary":"recovery_deadline","action":"Progress"}"#,
            "\n",
            r#"{"v":2,"vocabulary":"recovery_deadline","action":"Stall"}"#,
            "\n",
            r#"{"v":2,"vocabulary":"recovery_deadline","action":"TripFail"}"#,
            "\n",
        );
        let events = parse_ndjson::<DeadlineEvent>(text).unwrap();
        assert_eq!(events[2], DeadlineEvent::TripFail);
        assert_eq!(to_ndjson(&events), text);
    }
}
