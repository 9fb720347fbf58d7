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

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The trace schema version.
pub const SCHEMA_VERSION: u64 = 1;

/// One step event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub v: u64,
    pub actor: String,
    pub action: String,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub args: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub vars: Map<String, Value>,
}

impl Event {
    pub fn new(actor: &str, action: &str) -> Event {
        Event {
            v: SCHEMA_VERSION,
            actor: actor.to_string(),
            action: action.to_string(),
            args: Map::new(),
            vars: Map::new(),
        }
    }

    pub fn arg(mut self, name: &str, value: impl Into<Value>) -> Event {
        self.args.insert(name.to_string(), value.into());
        self
    }

    pub fn var(mut self, name: &str, value: impl Into<Value>) -> Event {
        self.vars.insert(name.to_string(), value.into());
        self
    }

    /// The error kind of a failed step, if it failed.
    pub fn failed(&self) -> Option<&str> {
        self.vars.get("failed").and_then(Value::as_str)
    }

    pub fn key(&self) -> Option<&str> {
        self.args.get("key").and_then(Value::as_str)
    }

    pub fn skipped(&self) -> bool {
        self.args.get("skipped").and_then(Value::as_bool) == Some(true)
    }

    /// One NDJSON line (no newline).
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("events serialize")
    }

    /// A short human form: `T2 Write(bob=0) failed SnapshotUnsafe`.
    pub fn brief(&self) -> String {
        let mut s = format!("{} {}", self.actor, self.action);
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

/// A recorded trace as NDJSON, one event per line.
pub fn to_ndjson(events: &[Event]) -> String {
    events.iter().map(|e| e.to_line() + "\n").collect()
}

/// Reads NDJSON written by [`to_ndjson`]; blank lines are skipped.
pub fn from_ndjson(text: &str) -> Result<Vec<Event>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| serde_json::from_str(l).map_err(|e| format!("line {}: {e}", i + 1)))
        .collect()
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
        let read = Event::new("T1", "Read").arg("key", "bob").var("value", 1);
        assert_eq!(
            read.to_line(),
            r#"{"v":1,"actor":"T1","action":"Read","args":{"key":"bob"},"vars":{"value":1}}"#
        );
        let begin = Event::new("T1", "Begin");
        assert_eq!(begin.to_line(), r#"{"v":1,"actor":"T1","action":"Begin"}"#);
        let text = to_ndjson(&[begin.clone(), read.clone()]);
        assert_eq!(from_ndjson(&text).unwrap(), vec![begin, read]);
        assert!(from_ndjson("{").unwrap_err().starts_with("line 1"));
    }
}
