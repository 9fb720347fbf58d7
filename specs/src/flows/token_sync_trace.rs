//! The TokenSync model's trace vocabulary: the coordinator's generation bumps and the
//! generation the owner's transactions carry (the group commit's group-metadata reads,
//! `impls/kafka/src/group_commit.rs`), composed by the conformance harness
//! (`conform/src/token_sync.rs`). Generations are the model's: the member's first is 1, each
//! bump adds one.
//!
//! ```text
//! {"v":2,"vocabulary":"token_sync","action":"AssigningBump"}
//! {"v":2,"vocabulary":"token_sync","action":"OwnerRefresh","generation":2}
//! {"v":2,"vocabulary":"token_sync","action":"Commit","accepted":true}
//! {"v":2,"vocabulary":"token_sync","action":"Quiesced"}
//! ```

use loadbearing_trace::TraceEvent;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", deny_unknown_fields)]
pub enum TokenEvent {
    /// A rebalance moved the generation and reached the owner by a callback.
    AssigningBump,
    /// The generation moved with no callback for the owner.
    SilentBump,
    /// The generation the owner's transactions carry changed to `generation` (however the
    /// owner came by it: a refresh, or a capture at the callback).
    OwnerRefresh { generation: u16 },
    /// A transactional offset commit with the owner's token: accepted by the coordinator, or
    /// refused (a stale generation). An observation: accepted exactly when the token is live.
    Commit { accepted: bool },
    /// The run is over: no bump is to come. An observation: under weak fairness the model
    /// must have nothing left to do (a token left behind fails here).
    Quiesced,
}

impl TraceEvent for TokenEvent {
    const VOCABULARY: &'static str = "token_sync";

    fn action(&self) -> &str {
        match self {
            TokenEvent::AssigningBump => "AssigningBump",
            TokenEvent::SilentBump => "SilentBump",
            TokenEvent::OwnerRefresh { .. } => "OwnerRefresh",
            TokenEvent::Commit { .. } => "Commit",
            TokenEvent::Quiesced => "Quiesced",
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
            r#"{"v":2,"vocabulary":"token_sync","action":"AssigningBump"}"#,
            "\n",
            r#"{"v":2,"vocabulary":"token_sync","action":"OwnerRefresh","generation":2}"#,
            "\n",
            r#"{"v":2,"vocabulary":"token_sync","action":"Commit","accepted":true}"#,
            "\n",
            r#"{"v":2,"vocabulary":"token_sync","action":"Quiesced"}"#,
            "\n",
        );
        let events = parse_ndjson::<TokenEvent>(text).unwrap();
        assert_eq!(events[1], TokenEvent::OwnerRefresh { generation: 2 });
        assert_eq!(to_ndjson(&events), text);
    }
}
