//! Step events: the engine reports each step it takes, named after the SSI model's action, from
//! inside its critical section, so the order of the events is a linearization of the run.
//!
//! The wire format is NDJSON, one event per line, read by the conformance checkers
//! (`crate::conform` here, and the generic one in `refinement/`):
//!
//! ```text
//! {"v":1,"actor":"T1","action":"Begin"}
//! {"v":1,"actor":"T1","action":"Read","args":{"key":"bob"},"vars":{"value":1}}
//! {"v":1,"actor":"T1","action":"Write","args":{"key":"alice","value":0}}
//! {"v":1,"actor":"T2","action":"Write","args":{"key":"bob","value":0},"vars":{"failed":"SnapshotUnsafe"}}
//! {"v":1,"actor":"T2","action":"Write","args":{"key":"bob","skipped":true}}
//! {"v":1,"actor":"T1","action":"Check"}
//! {"v":1,"actor":"T1","action":"Record"}
//! {"v":1,"actor":"T1","action":"End"}
//! ```
//!
//! `AppAbort` and `Cleanup` have no arguments; a failed `Check` carries
//! `"vars":{"failed":"SnapshotConflict"}` and a failed `End` (option 2)
//! `"vars":{"failed":"RecheckConflict"}`. `Scan` (a predicate read of a whole page) is the one
//! event with no model action: the model's statements cannot express it.

use std::sync::{Arc, Mutex};

use serde_json::Value;

/// The events are the project's trace events, read by the generic checker as they are.
pub use loadbearing_refinement::conform::{parse_ndjson, to_ndjson, Event, SCHEMA_VERSION};

/// The SSI engine's reading of a step event.
pub trait SsiEvent {
    /// The error kind of a failed step, if it failed.
    fn failed(&self) -> Option<&str>;
    fn key(&self) -> Option<&str>;
    fn skipped(&self) -> bool;
    /// A short human form: `T2 Write(bob=0) failed SnapshotUnsafe`.
    fn brief(&self) -> String;
}

impl SsiEvent for Event {
    fn failed(&self) -> Option<&str> {
        self.var_str("failed")
    }

    fn key(&self) -> Option<&str> {
        self.arg_str("key")
    }

    fn skipped(&self) -> bool {
        self.args.get("skipped").and_then(Value::as_bool) == Some(true)
    }

    fn brief(&self) -> String {
        let actor = self.actor.as_deref().unwrap_or("");
        let mut s = format!("{actor} {}", self.action);
        if let Some(key) = self.key() {
            if self.skipped() {
                s += &format!("({key}, skipped)");
            } else if let Some(v) = self.args.get("value") {
                s += &format!("({key}={v})");
            } else {
                s += &format!("({key})");
            }
        }
        if let Some(page) = self.args.get("page") {
            s += &format!("(page {page})");
        }
        if let Some(v) = self.vars.get("value") {
            s += &format!(" -> {v}");
        }
        if let Some(rows) = self.vars.get("rows") {
            s += &format!(" -> {rows}");
        }
        if let Some(f) = self.failed() {
            s += &format!(" failed {f}");
        }
        s
    }
}

/// Receives step events (called with the engine's conflict mutex held). The default does
/// nothing, so tracing costs nothing unless asked.
pub trait Tracer: Send + Sync {
    fn step(&self, _event: &Event) {}
}

/// Drops every event.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoTrace;

impl Tracer for NoTrace {}

/// Keeps every event, in order.
#[derive(Debug, Default)]
pub struct Recorder {
    events: Mutex<Vec<Event>>,
}

impl Recorder {
    pub fn new() -> Arc<Self> {
        Arc::new(Recorder::default())
    }

    pub fn events(&self) -> Vec<Event> {
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
    fn step(&self, event: &Event) {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(event.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_serialize_in_the_agreed_shape_and_read_back() {
        let read = Event::new(Some("T1"), "Read")
            .arg("key", "bob")
            .var("value", 1);
        assert_eq!(
            read.to_line(),
            r#"{"v":1,"actor":"T1","action":"Read","args":{"key":"bob"},"vars":{"value":1}}"#
        );
        let begin = Event::new(Some("T1"), "Begin");
        assert_eq!(begin.to_line(), r#"{"v":1,"actor":"T1","action":"Begin"}"#);
        let text = to_ndjson(&[begin.clone(), read.clone()]);
        assert_eq!(parse_ndjson::<Event>(&text).unwrap(), vec![begin, read]);
        assert!(parse_ndjson::<Event>("{")
            .unwrap_err()
            .to_string()
            .starts_with("line 1"));
    }
}
