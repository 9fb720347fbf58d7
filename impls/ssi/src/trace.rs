//! Step events: the engine reports each step it takes, named after the SSI model's action, from
//! inside its critical section, so the order of the events is a linearization of the run.
//!
//! The events are the SSI model's trace vocabulary (`loadbearing_specs::ssi::trace`, the
//! `ssi` vocabulary of `docs/trace-format.md`), so the engine (the writer) and the model's
//! conformance adapter (the reader) share one type. The wire format is NDJSON, one event per
//! line:
//!
//! ```text
//! {"v":2,"vocabulary":"ssi","action":"Begin","txn":"T1"}
//! {"v":2,"vocabulary":"ssi","action":"Read","txn":"T1","key":"bob","value":1}
//! {"v":2,"vocabulary":"ssi","action":"Write","txn":"T1","key":"alice","value":0}
//! {"v":2,"vocabulary":"ssi","action":"Write","txn":"T2","key":"bob","value":0,"failed":"SnapshotUnsafe"}
//! {"v":2,"vocabulary":"ssi","action":"Write","txn":"T2","key":"bob","skipped":true}
//! {"v":2,"vocabulary":"ssi","action":"Check","txn":"T1"}
//! {"v":2,"vocabulary":"ssi","action":"Record","txn":"T1"}
//! {"v":2,"vocabulary":"ssi","action":"End","txn":"T1"}
//! ```
//!
//! `AppAbort` and `Cleanup` have no values; a failed `Check` carries
//! `"failed":"SnapshotConflict"` and a failed `End` (option 2) `"failed":"RecheckConflict"`.
//! `Scan` (a predicate read of a whole page) is the one event with no model action: the
//! model's statements cannot express it.

use std::sync::{Arc, Mutex};

pub use loadbearing_refinement::conform::{parse_ndjson, to_ndjson, SCHEMA_VERSION};
pub use loadbearing_specs::ssi::trace::{SsiEvent, Txn};

/// Receives step events (called with the engine's conflict mutex held). The default does
/// nothing, so tracing costs nothing unless asked.
pub trait Tracer: Send + Sync {
    fn step(&self, _event: &SsiEvent) {}
}

/// Drops every event.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoTrace;

impl Tracer for NoTrace {}

/// Keeps every event, in order.
#[derive(Debug, Default)]
pub struct Recorder {
    events: Mutex<Vec<SsiEvent>>,
}

impl Recorder {
    pub fn new() -> Arc<Self> {
        Arc::new(Recorder::default())
    }

    pub fn events(&self) -> Vec<SsiEvent> {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn ndjson(&self) -> String {
        to_ndjson(&self.events())
    }
}

impl Tracer for Recorder {
    fn step(&self, event: &SsiEvent) {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(event.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadbearing_refinement::conform::TraceEvent;

    #[test]
    fn events_serialize_in_the_agreed_shape_and_read_back() {
        let read = SsiEvent::Read {
            txn: Txn(0),
            key: "bob".into(),
            value: Some(1),
            failed: None,
        };
        assert_eq!(
            read.to_line(),
            r#"{"v":2,"vocabulary":"ssi","action":"Read","txn":"T1","key":"bob","value":1}"#
        );
        let begin = SsiEvent::Begin { txn: Txn(0) };
        assert_eq!(
            begin.to_line(),
            r#"{"v":2,"vocabulary":"ssi","action":"Begin","txn":"T1"}"#
        );
        let text = to_ndjson(&[begin.clone(), read.clone()]);
        assert_eq!(parse_ndjson::<SsiEvent>(&text).unwrap(), vec![begin, read]);
        assert!(parse_ndjson::<SsiEvent>("{")
            .unwrap_err()
            .to_string()
            .starts_with("line 1"));
    }
}
