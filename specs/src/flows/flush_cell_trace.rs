//! The FlushCell model's trace vocabulary: one key's cell in the snapshot buffer
//! (`impls/src/buffer.rs`) and the store under it, through the flush compound (write the
//! buffered value, then mark the key clean), composed by the harness
//! (`conform/src/flush_cell.rs`). A value is the model's `1` or `2`.
//!
//! ```text
//! {"v":2,"vocabulary":"flush_cell","action":"FlushWrite","wrote":1}
//! {"v":2,"vocabulary":"flush_cell","action":"Append","value":2}
//! {"v":2,"vocabulary":"flush_cell","action":"FlushMark","persisted":true}
//! ```

use loadbearing_trace::TraceEvent;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", deny_unknown_fields)]
pub enum FlushEvent {
    /// `Append(value)`: the producer buffered a new value of the key.
    Append { value: u8 },
    /// `FlushWrite`: the flush wrote the buffered value to the store (`wrote`, optional).
    FlushWrite {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        wrote: Option<u8>,
    },
    /// `FlushMark`: the flush marked the key; `persisted` is whether the cell reads clean after.
    FlushMark {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        persisted: Option<bool>,
    },
}

impl TraceEvent for FlushEvent {
    const VOCABULARY: &'static str = "flush_cell";

    fn action(&self) -> &str {
        match self {
            FlushEvent::Append { .. } => "Append",
            FlushEvent::FlushWrite { .. } => "FlushWrite",
            FlushEvent::FlushMark { .. } => "FlushMark",
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
            r#"{"v":2,"vocabulary":"flush_cell","action":"FlushWrite","wrote":1}"#,
            "\n",
            r#"{"v":2,"vocabulary":"flush_cell","action":"Append","value":2}"#,
            "\n",
            r#"{"v":2,"vocabulary":"flush_cell","action":"FlushMark","persisted":true}"#,
            "\n",
        );
        let events = parse_ndjson::<FlushEvent>(text).unwrap();
        assert_eq!(events[1], FlushEvent::Append { value: 2 });
        assert_eq!(to_ndjson(&events), text);
    }
}
