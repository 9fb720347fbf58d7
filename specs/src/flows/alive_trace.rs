//! The FlowsAlive model's trace vocabulary: a member's flows across rebalances
//! (`impls/kafka/src/flow/registry.rs`, under the member's rebalance callback). Partitions are
//! 0-based (`p1` of the model is 0).
//!
//! ```text
//! {"v":2,"vocabulary":"flows_alive","action":"Rebalance","owned":[0],"live":[0]}
//! {"v":2,"vocabulary":"flows_alive","action":"Teardown","partition":1}
//! ```

use loadbearing_trace::TraceEvent;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", deny_unknown_fields)]
pub enum FlowsEvent {
    /// `Rebalance`: the member's assignment became `owned`; `live` are the partitions with a
    /// flow not torn down once the newly assigned partitions' flows are open (optional).
    Rebalance {
        owned: Vec<u8>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        live: Option<Vec<u8>>,
    },
    /// `Teardown(p)`: a revoked flow's teardown completed after its revoke returned.
    Teardown { partition: u8 },
}

impl TraceEvent for FlowsEvent {
    const VOCABULARY: &'static str = "flows_alive";

    fn action(&self) -> &str {
        match self {
            FlowsEvent::Rebalance { .. } => "Rebalance",
            FlowsEvent::Teardown { .. } => "Teardown",
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
            r#"{"v":2,"vocabulary":"flows_alive","action":"Rebalance","owned":[0],"live":[0]}"#,
            "\n",
            r#"{"v":2,"vocabulary":"flows_alive","action":"Teardown","partition":1}"#,
            "\n",
        );
        let events = parse_ndjson::<FlowsEvent>(text).unwrap();
        assert_eq!(events[1], FlowsEvent::Teardown { partition: 1 });
        assert_eq!(to_ndjson(&events), text);
    }
}
