//! The Cassandra model's trace vocabulary: the partition flows (`impls/src/flow.rs`), an owner
//! and revoked flows (zombies) writing one key, one event per model step. The harness composes
//! each event from the flow's steps and the row read back afterwards (`conform/src/flow.rs`).
//!
//! ```text
//! {"v":2,"vocabulary":"flow","action":"OwnerFold","offset":1,"op":"persist","applied":true,"presented":1,"stored":{"kind":"snap","offset":1,"contents":[1]}}
//! {"v":2,"vocabulary":"flow","action":"ZombieWrite","zombie":1,"offset":1,"op":"persist","applied":false,"presented":1,"stored":{"kind":"snap","offset":2,"contents":[1,2]}}
//! {"v":2,"vocabulary":"flow","action":"OwnerRecover","ownerState":[],"stored":{"kind":"tomb","offset":2}}
//! {"v":2,"vocabulary":"flow","action":"Handover","resumeAt":0,"ownerState":[],"stored":{"kind":"tomb","offset":2}}
//! ```
//!
//! `Handover` is the evolved model's (Cassandra835, `conform_835`): the 24-config
//! model has no handover, and a trace with one diverges from it.

use loadbearing_trace::TraceEvent;
use serde::{Deserialize, Serialize};

use crate::infra::vocab::{Cell, Offsets, Op};

/// What a flow's flush did: the offset and op it folded, and (each optional: what is missing
/// is searched) whether the write landed, the offset it carried, the row read back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Write {
    pub offset: u64,
    pub op: Op,
    pub applied: Option<bool>,
    pub presented: Option<u64>,
    pub stored: Option<Cell>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", deny_unknown_fields)]
pub enum FlowEvent {
    /// `OwnerFold`: the owner folded the record at `offset` and flushed it. `applied` and
    /// `presented` are absent when nothing was written (the buffer dropped the record).
    OwnerFold {
        offset: u64,
        op: Op,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        applied: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        presented: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stored: Option<Cell>,
    },
    /// `ZombieWrite(m)`: revoked flow `zombie` (1, 2, …) flushed its fold at `offset` m.
    ZombieWrite {
        zombie: u8,
        offset: u64,
        op: Op,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        applied: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        presented: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stored: Option<Cell>,
    },
    /// `Handover(c)` (the evolved Cassandra model only): a new owner took the partition over,
    /// resuming at the committed offset `resumeAt`, and recovered the key (`ownerState`).
    Handover {
        #[serde(rename = "resumeAt")]
        resume_at: u64,
        #[serde(
            rename = "ownerState",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        owner_state: Option<Offsets>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stored: Option<Cell>,
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
        stored: Option<Cell>,
    },
}

impl FlowEvent {
    /// The write of a fold or a zombie's flush.
    pub fn write(&self) -> Option<Write> {
        match *self {
            FlowEvent::OwnerFold {
                offset,
                op,
                applied,
                presented,
                stored,
            }
            | FlowEvent::ZombieWrite {
                offset,
                op,
                applied,
                presented,
                stored,
                ..
            } => Some(Write {
                offset,
                op,
                applied,
                presented,
                stored,
            }),
            FlowEvent::OwnerRecover { .. } | FlowEvent::Handover { .. } => None,
        }
    }

    /// The row read back after the step, if the event carries it.
    pub fn stored(&self) -> Option<Cell> {
        match *self {
            FlowEvent::OwnerFold { stored, .. }
            | FlowEvent::ZombieWrite { stored, .. }
            | FlowEvent::OwnerRecover { stored, .. }
            | FlowEvent::Handover { stored, .. } => stored,
        }
    }
}

/// The event logs a flow trace allows: every offset a write names fixes its op, the others
/// stay open ([`crate::one_key::conform::revealed_logs`]).
/// Every offset a flow trace names, with what it is, by event index: a write's offset and the
/// offset it presented, a handover's, and every offset of a row or owner state it read.
pub(crate) fn offsets_named(events: &[FlowEvent]) -> Vec<(usize, &'static str, u64)> {
    let mut named = Vec::new();
    for (i, event) in events.iter().enumerate() {
        if let Some(w) = event.write() {
            named.push((i, "offset", w.offset));
            named.extend(w.presented.map(|p| (i, "presented offset", p)));
        }
        match event {
            FlowEvent::Handover {
                resume_at,
                owner_state,
                ..
            } => {
                named.push((i, "resume offset", *resume_at));
                named.extend(owner_state.iter().flat_map(|s| {
                    Vec::<u8>::from(*s)
                        .into_iter()
                        .map(move |o| (i, "owner state offset", o as u64))
                }));
            }
            FlowEvent::OwnerRecover {
                owner_state: Some(s),
                ..
            } => named.extend(
                Vec::<u8>::from(*s)
                    .into_iter()
                    .map(|o| (i, "owner state offset", o as u64)),
            ),
            _ => {}
        }
        if let Some(cell) = event.stored() {
            named
                .extend(crate::one_key::conform::cell_offsets(&cell).map(|(what, o)| (i, what, o)));
        }
    }
    named
}

pub(crate) fn logs_of(max_offset: u8, events: &[FlowEvent]) -> Vec<crate::infra::vocab::Ops> {
    let reveals = events
        .iter()
        .filter_map(FlowEvent::write)
        .map(|w| (w.offset, w.op));
    crate::one_key::conform::revealed_logs(max_offset, reveals)
}

impl TraceEvent for FlowEvent {
    const VOCABULARY: &'static str = "flow";

    fn action(&self) -> &str {
        match self {
            FlowEvent::OwnerFold { .. } => "OwnerFold",
            FlowEvent::ZombieWrite { .. } => "ZombieWrite",
            FlowEvent::OwnerRecover { .. } => "OwnerRecover",
            FlowEvent::Handover { .. } => "Handover",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadbearing_trace::{parse_ndjson, to_ndjson};

    /// The lines of the module's example (and `docs/trace-format.md`) read, and write back
    /// as they were.
    #[test]
    fn the_documented_lines_read_and_write_back() {
        let text = concat!(
            r#"{"v":2,"vocabulary":"flow","action":"OwnerFold","offset":1,"op":"persist","applied":true,"presented":1,"stored":{"kind":"snap","offset":1,"contents":[1]}}"#,
            "\n",
            r#"{"v":2,"vocabulary":"flow","action":"ZombieWrite","zombie":1,"offset":1,"op":"persist","applied":false,"presented":1,"stored":{"kind":"snap","offset":2,"contents":[1,2]}}"#,
            "\n",
            r#"{"v":2,"vocabulary":"flow","action":"OwnerRecover","ownerState":[],"stored":{"kind":"tomb","offset":2}}"#,
            "\n",
            r#"{"v":2,"vocabulary":"flow","action":"Handover","resumeAt":0,"ownerState":[],"stored":{"kind":"tomb","offset":2}}"#,
            "\n",
        );
        let events = parse_ndjson::<FlowEvent>(text).unwrap();
        assert_eq!(
            events[2],
            FlowEvent::OwnerRecover {
                owner_state: Some(Offsets::EMPTY),
                stored: Some(Cell::tomb(2)),
            }
        );
        assert_eq!(to_ndjson(&events), text);
        let err = parse_ndjson::<FlowEvent>(
            r#"{"v":2,"vocabulary":"flow","action":"ZombieWrite","offset":1,"op":"persist"}"#,
        )
        .unwrap_err();
        assert!(err.to_string().contains("missing field `zombie`"), "{err}");
    }
}
