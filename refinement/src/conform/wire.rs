//! The NDJSON wire format of a trace: one event per line, each line an envelope (the schema
//! version and the vocabulary it speaks) around one event of a model's typed vocabulary.
//!
//! ```text
//! {"v":2,"vocabulary":"first_write","action":"Persist","writer":"w3","offset":2,"outcome":"applied"}
//! ```
//!
//! A vocabulary is a serde enum tagged by `action` (`#[serde(tag = "action")]`) whose variants
//! carry the event's fields flat beside the envelope. `docs/trace-format.md` lists them all.

use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The trace schema this checker reads and writes: version 2 is the typed, flat line.
pub const SCHEMA_VERSION: u64 = 2;

/// One model's trace vocabulary: the events an implementation reports and the model's
/// `Conform` adapter reads.
pub trait TraceEvent: Clone + fmt::Debug + Serialize + DeserializeOwned {
    /// Written in every line's `vocabulary` field; a line of another vocabulary is refused.
    const VOCABULARY: &'static str;

    /// The action the event reports (its `action` tag), for reports.
    fn action(&self) -> &str;

    /// One line of NDJSON: the envelope and the event's fields.
    fn to_line(&self) -> String {
        serde_json::to_string(&Line {
            v: SCHEMA_VERSION,
            vocabulary: Self::VOCABULARY,
            event: self,
        })
        .expect("trace events serialize")
    }

    /// Reads one line: the version first, then the vocabulary, then the event itself.
    fn from_line(line: &str) -> Result<Self, LineError> {
        let mut fields: Map<String, Value> =
            serde_json::from_str(line).map_err(|e| LineError::NotJson(e.to_string()))?;
        let version = fields.remove("v").and_then(|v| v.as_u64());
        if version != Some(SCHEMA_VERSION) {
            return Err(LineError::Version { found: version });
        }
        let vocabulary = fields.remove("vocabulary");
        match vocabulary.as_ref().and_then(Value::as_str) {
            Some(v) if v == Self::VOCABULARY => {}
            found => {
                return Err(LineError::Vocabulary {
                    found: found.map(str::to_string),
                    expected: Self::VOCABULARY,
                })
            }
        }
        Self::deserialize(Value::Object(fields)).map_err(|e| LineError::Event(e.to_string()))
    }
}

#[derive(Serialize)]
struct Line<'a, E> {
    v: u64,
    vocabulary: &'static str,
    #[serde(flatten)]
    event: &'a E,
}

/// What is wrong with one line of a trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum LineError {
    /// Not a JSON object.
    NotJson(String),
    /// No `v`, or a schema version this checker does not read.
    Version { found: Option<u64> },
    /// A line of another model's vocabulary (or none).
    Vocabulary {
        found: Option<String>,
        expected: &'static str,
    },
    /// The vocabulary's own fields: an unknown action, a missing or unknown field, a value of
    /// the wrong type (serde's message says which).
    Event(String),
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineError::NotJson(e) => write!(f, "not a JSON object: {e}"),
            LineError::Version { found: None } => {
                write!(
                    f,
                    "no schema version `v` (this checker reads {SCHEMA_VERSION})"
                )
            }
            LineError::Version { found: Some(v) } => {
                write!(
                    f,
                    "schema version {v} (this checker reads {SCHEMA_VERSION})"
                )
            }
            LineError::Vocabulary { found, expected } => write!(
                f,
                "{} event, this model reads `{expected}` events",
                match found {
                    Some(v) => format!("a `{v}`"),
                    None => "not a vocabulary's".to_string(),
                }
            ),
            LineError::Event(e) => write!(f, "not a step event: {e}"),
        }
    }
}

/// A malformed line, by its 1-based number.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TraceError {
    pub line: usize,
    pub error: LineError,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.error)
    }
}

impl std::error::Error for TraceError {}

/// Reads an NDJSON trace of one vocabulary; blank lines are skipped, anything else malformed
/// is an error that names its line.
pub fn parse_ndjson<E: TraceEvent>(text: &str) -> Result<Vec<E>, TraceError> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| E::from_line(line).map_err(|error| TraceError { line: i + 1, error }))
        .collect()
}

pub fn to_ndjson<E: TraceEvent>(events: &[E]) -> String {
    events.iter().map(|e| e.to_line() + "\n").collect()
}
