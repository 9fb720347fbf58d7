//! The ReplayFence model's trace vocabulary: the owner's flow after a restart
//! (`impls/src/flow.rs` with its buffer), composed by the harness (`conform/src/flow.rs`).
//! Every event may carry `hw`, the high water the owner recovered; every field but `Fold`'s
//! offset is optional (what is missing is searched).
//!
//! ```text
//! {"v":2,"vocabulary":"replay_fence","action":"Fold","offset":1,"hw":3}
//! {"v":2,"vocabulary":"replay_fence","action":"Write","presented":3,"stored":3,"selfFenced":false,"hw":3}
//! ```

use loadbearing_trace::TraceEvent;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", deny_unknown_fields)]
pub enum ReplayEvent {
    /// `Fold`: the owner handled the record at `offset` (cur becomes it).
    Fold {
        offset: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hw: Option<u64>,
    },
    /// `Write`: a flush wrote the key, carrying offset `presented`; `stored` is the row's
    /// offset read back afterwards, `selfFenced` whether the owner's own write was refused.
    Write {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        presented: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stored: Option<u64>,
        #[serde(
            rename = "selfFenced",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        self_fenced: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hw: Option<u64>,
    },
}

impl ReplayEvent {
    pub fn hw(&self) -> Option<u64> {
        match *self {
            ReplayEvent::Fold { hw, .. } | ReplayEvent::Write { hw, .. } => hw,
        }
    }
}

impl TraceEvent for ReplayEvent {
    const VOCABULARY: &'static str = "replay_fence";

    fn action(&self) -> &str {
        match self {
            ReplayEvent::Fold { .. } => "Fold",
            ReplayEvent::Write { .. } => "Write",
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
            r#"{"v":2,"vocabulary":"replay_fence","action":"Fold","offset":1,"hw":3}"#,
            "\n",
            r#"{"v":2,"vocabulary":"replay_fence","action":"Write","presented":3,"stored":3,"selfFenced":false,"hw":3}"#,
            "\n",
        );
        let events = parse_ndjson::<ReplayEvent>(text).unwrap();
        assert_eq!(
            events[0],
            ReplayEvent::Fold {
                offset: 1,
                hw: Some(3)
            }
        );
        assert_eq!(to_ndjson(&events), text);
    }
}
