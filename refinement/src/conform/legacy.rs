//! The untyped step event of schema version 1, kept while the models move to their typed
//! vocabularies: free-form `args` and `vars` maps around an action name.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::wire::{LineError, TraceEvent};

/// The schema version of an untyped line.
pub const UNTYPED_VERSION: u64 = 1;

/// One untyped step event of an implementation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Event {
    pub v: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    pub action: String,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub args: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub vars: Map<String, Value>,
}

impl Event {
    pub fn new(actor: Option<&str>, action: &str) -> Event {
        Event {
            v: UNTYPED_VERSION,
            actor: actor.map(str::to_string),
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

    pub fn arg_u64(&self, name: &str) -> Option<u64> {
        self.args.get(name).and_then(Value::as_u64)
    }

    pub fn arg_str(&self, name: &str) -> Option<&str> {
        self.args.get(name).and_then(Value::as_str)
    }

    pub fn var_u64(&self, name: &str) -> Option<u64> {
        self.vars.get(name).and_then(Value::as_u64)
    }

    pub fn var_str(&self, name: &str) -> Option<&str> {
        self.vars.get(name).and_then(Value::as_str)
    }

    pub fn var_bool(&self, name: &str) -> Option<bool> {
        self.vars.get(name).and_then(Value::as_bool)
    }

    /// One line of NDJSON.
    pub fn to_line(&self) -> String {
        <Self as TraceEvent>::to_line(self)
    }
}

impl TraceEvent for Event {
    const VOCABULARY: &'static str = "untyped";

    fn action(&self) -> &str {
        &self.action
    }

    fn to_line(&self) -> String {
        serde_json::to_string(self).expect("events serialize")
    }

    fn from_line(line: &str) -> Result<Self, LineError> {
        let event: Event =
            serde_json::from_str(line).map_err(|e| LineError::Event(e.to_string()))?;
        if event.v != UNTYPED_VERSION {
            return Err(LineError::Version {
                found: Some(event.v),
            });
        }
        Ok(event)
    }
}
