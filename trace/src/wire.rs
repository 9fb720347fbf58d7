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

    /// Whether the event carries the outcome of what it did. In a history, an operation that
    /// never returned (`"ret": null`) must carry none, and one that returned must carry one.
    fn has_outcome(&self) -> bool {
        true
    }

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
        let fields: Map<String, Value> =
            serde_json::from_str(line).map_err(|e| LineError::NotJson(e.to_string()))?;
        Self::from_fields(fields)
    }

    /// Reads the fields of one line (its times, if any, already taken out).
    fn from_fields(mut fields: Map<String, Value>) -> Result<Self, LineError> {
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
        let given = Value::Object(fields);
        let event = Self::deserialize(&given).map_err(|e| LineError::Event(e.to_string()))?;
        // A field the vocabulary does not read is refused whether or not its type says
        // `deny_unknown_fields`: a misspelt `outcome` must not be judged as an event without one.
        match unread_field::<Self>(&given, &event) {
            Some(unread) => Err(unread),
            None => Ok(event),
        }
    }
}

/// The first field of `given` that reading it as an `E` ignored, as an error naming it and the
/// fields the event has. A field is read when the event, written back, holds it; one it does
/// not hold (a default the event leaves out, or a field no variant has) is read when a value
/// of no event's type in its place makes the line unreadable. Each such field costs one more
/// read of the line; fields the event holds cost nothing.
fn unread_field<E: TraceEvent>(given: &Value, event: &E) -> Option<LineError> {
    let kept = serde_json::to_value(event).ok()?;
    let mut path = Vec::new();
    let field = unread_at::<E>(given, given, &kept, &mut path)?;
    let known = match &kept {
        Value::Object(fields) => fields.keys().cloned().collect(),
        _ => Vec::new(),
    };
    Some(LineError::UnknownField {
        field,
        action: event.action().to_string(),
        known,
    })
}

/// A step into a JSON value: an object's field or an array's element.
enum Step {
    Field(String),
    Element(usize),
}

fn unread_at<E: TraceEvent>(
    whole: &Value,
    given: &Value,
    kept: &Value,
    path: &mut Vec<Step>,
) -> Option<String> {
    match (given, kept) {
        (Value::Object(given), Value::Object(kept)) => {
            for (name, value) in given {
                path.push(Step::Field(name.clone()));
                let unread = match kept.get(name) {
                    Some(kept) => unread_at::<E>(whole, value, kept, path),
                    None if ignored::<E>(whole, path) => Some(dotted(path)),
                    None => None,
                };
                path.pop();
                if unread.is_some() {
                    return unread;
                }
            }
            None
        }
        (Value::Array(given), Value::Array(kept)) if given.len() == kept.len() => {
            for (i, (given, kept)) in given.iter().zip(kept).enumerate() {
                path.push(Step::Element(i));
                let unread = unread_at::<E>(whole, given, kept, path);
                path.pop();
                if unread.is_some() {
                    return unread;
                }
            }
            None
        }
        _ => None,
    }
}

/// Whether the line still reads with a value of no event's type at `path`: then nothing read
/// the field there.
fn ignored<E: TraceEvent>(whole: &Value, path: &[Step]) -> bool {
    let mut probed = whole.clone();
    let mut at = &mut probed;
    for step in path {
        at = match (step, at) {
            (Step::Field(name), Value::Object(fields)) => match fields.get_mut(name) {
                Some(value) => value,
                None => return false,
            },
            (Step::Element(i), Value::Array(items)) => match items.get_mut(*i) {
                Some(value) => value,
                None => return false,
            },
            _ => return false,
        };
    }
    *at = serde_json::json!({ "\u{1}not a field of any event": [[]] });
    E::deserialize(&probed).is_ok()
}

/// `outcome`, `writes[2].offset`: where a field is, as people write it.
fn dotted(path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            Step::Field(name) if out.is_empty() => out.push_str(name),
            Step::Field(name) => {
                out.push('.');
                out.push_str(name);
            }
            Step::Element(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
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
    /// A field the event's type does not read (whether or not it denies unknown fields).
    UnknownField {
        /// Where: `outcome`, or `writes[2].offset` inside the event.
        field: String,
        /// The event's action.
        action: String,
        /// The fields the event has.
        known: Vec<String>,
    },
    /// A history's times: `call` and `ret` missing, not whole numbers, `ret` before `call`, or
    /// at odds with the outcome (the message says which).
    Time(String),
    /// A history's `key`: not a string or a whole number, or on a sequence.
    Key(String),
    /// The file holds no event at all: nothing to judge, which is no conformance.
    NoEvents,
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
            LineError::UnknownField {
                field,
                action,
                known,
            } => write!(
                f,
                "unknown field `{field}`: a `{action}` event has {}",
                known
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            LineError::Time(e) | LineError::Key(e) => write!(f, "{e}"),
            LineError::NoEvents => write!(f, "the trace holds no event: there is nothing to judge"),
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
        match self.error {
            // Of the whole file, not of a line.
            LineError::NoEvents => write!(f, "{}", self.error),
            _ => write!(f, "line {}: {}", self.line, self.error),
        }
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

/// The key an operation of a history is on, typed as the line wrote it: `"17"` and `17` are
/// two keys.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Key {
    Number(u64),
    Name(String),
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Key::Number(n) => write!(f, "{n}"),
            Key::Name(name) => write!(f, "{name:?}"),
        }
    }
}

impl From<&str> for Key {
    fn from(name: &str) -> Key {
        Key::Name(name.to_string())
    }
}

impl From<String> for Key {
    fn from(name: String) -> Key {
        Key::Name(name)
    }
}

impl From<u64> for Key {
    fn from(n: u64) -> Key {
        Key::Number(n)
    }
}

/// One operation of a history: what it did (an event of the model's vocabulary), when it was
/// called, and when it returned (`None`: it never did, and its outcome is unknown).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timed<E> {
    pub call: u64,
    pub ret: Option<u64>,
    /// The key the operation is on (the envelope's `key`; `None`: the history's one key).
    /// Operations on different keys never constrain each other: each key's operations are
    /// judged apart, each against a model of its own.
    pub key: Option<Key>,
    pub event: E,
    /// Its 1-based line in the trace file, for reports.
    pub line: usize,
}

impl<E> Timed<E> {
    /// Whether this operation must have taken effect before `other` was called.
    pub fn precedes(&self, other: &Timed<E>) -> bool {
        self.ret.is_some_and(|r| r < other.call)
    }
}

/// A trace as recorded: a sequence (the order the events happened in), or a history
/// (operations with call and return times, whose file order means nothing).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Trace<E> {
    Sequence(Vec<E>),
    History(Vec<Timed<E>>),
}

impl<E> Trace<E> {
    pub fn len(&self) -> usize {
        match self {
            Trace::Sequence(events) => events.len(),
            Trace::History(ops) => ops.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every event, in the order of the file, whichever kind of trace it is.
    pub fn events(&self) -> Box<dyn Iterator<Item = &E> + '_> {
        match self {
            Trace::Sequence(events) => Box::new(events.iter()),
            Trace::History(ops) => Box::new(ops.iter().map(|op| &op.event)),
        }
    }
}

/// Reads an NDJSON trace of one vocabulary, a sequence or a history: a trace whose events carry
/// `call` is a history, and then every event must carry `call` and `ret` (a whole number, or
/// `null` for an operation that never returned, which carries no outcome). Blank lines are
/// skipped; anything malformed is an error that names its line.
pub fn parse_trace<E: TraceEvent>(text: &str) -> Result<Trace<E>, TraceError> {
    let mut sequence = Vec::new();
    let mut history = Vec::new();
    let mut first_kind: Option<(bool, usize)> = None;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = |error| TraceError { line: i + 1, error };
        let mut fields: Map<String, Value> =
            serde_json::from_str(line).map_err(|e| at(LineError::NotJson(e.to_string())))?;
        let call = fields.remove("call");
        let ret = fields.remove("ret");
        let key = fields.remove("key");
        let timed = call.is_some();
        match first_kind {
            None => first_kind = Some((timed, i + 1)),
            Some((kind, first)) if kind != timed => {
                return Err(at(LineError::Time(if timed {
                    format!("`call` here, but line {first} has none: in a history every event carries `call` and `ret`, in a sequence none does")
                } else {
                    format!("no `call`, but line {first} has one: in a history every event carries `call` and `ret`")
                })))
            }
            Some(_) => {}
        }
        if !timed {
            if ret.is_some() {
                return Err(at(LineError::Time(
                    "`ret` without `call`: an operation of a history carries both".into(),
                )));
            }
            if key.is_some() {
                return Err(at(LineError::Key(
                    "a `key` in a sequence: a sequence is one key's events (a history, whose events carry `call` and `ret`, may name many keys)".into(),
                )));
            }
            sequence.push(E::from_fields(fields).map_err(at)?);
            continue;
        }
        let call = time(call.as_ref(), "call").map_err(at)?;
        let ret = match ret {
            None => {
                return Err(at(LineError::Time(
                    "no `ret`: give the return time, or `\"ret\": null` for an operation that never returned".into(),
                )))
            }
            Some(Value::Null) => None,
            Some(v) => Some(time(Some(&v), "ret").map_err(at)?),
        };
        let key = match key {
            None => None,
            Some(Value::String(k)) => Some(Key::Name(k)),
            Some(Value::Number(n)) if n.is_u64() => Some(Key::Number(n.as_u64().expect("a u64"))),
            Some(other) => {
                return Err(at(LineError::Key(format!(
                    "`key` is {other}, not a string or a whole number"
                ))))
            }
        };
        let event = E::from_fields(fields).map_err(at)?;
        match ret {
            Some(r) if r < call => {
                return Err(at(LineError::Time(format!(
                    "`ret` {r} is before `call` {call}"
                ))))
            }
            Some(_) if !event.has_outcome() => {
                return Err(at(LineError::Time(
                    "a `ret` on an operation with no outcome: one that returned says what it did; one that never returned has `\"ret\": null`".into(),
                )))
            }
            None if event.has_outcome() => {
                return Err(at(LineError::Time(
                    "`\"ret\": null` on an operation with an outcome: one that never returned cannot know what it did".into(),
                )))
            }
            _ => {}
        }
        history.push(Timed {
            call,
            ret,
            key,
            event,
            line: i + 1,
        });
    }
    match first_kind {
        Some((true, _)) => Ok(Trace::History(history)),
        Some((false, _)) => Ok(Trace::Sequence(sequence)),
        None => Err(TraceError {
            line: 0,
            error: LineError::NoEvents,
        }),
    }
}

/// A time of a history: a whole number (of any unit, one clock for the whole trace).
fn time(value: Option<&Value>, field: &str) -> Result<u64, LineError> {
    value.and_then(Value::as_u64).ok_or_else(|| {
        LineError::Time(format!(
            "`{field}` is {}, not a whole number of the trace's clock",
            value.map_or("missing".to_string(), Value::to_string)
        ))
    })
}

#[derive(Serialize)]
struct TimedLine<'a, E> {
    v: u64,
    vocabulary: &'static str,
    call: u64,
    ret: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<&'a Key>,
    #[serde(flatten)]
    event: &'a E,
}

/// One line of a history: the envelope, the times, and the event.
pub fn to_history_line<E: TraceEvent>(op: &Timed<E>) -> String {
    serde_json::to_string(&TimedLine {
        v: SCHEMA_VERSION,
        vocabulary: E::VOCABULARY,
        call: op.call,
        ret: op.ret,
        key: op.key.as_ref(),
        event: &op.event,
    })
    .expect("trace events serialize")
}

pub fn to_history_ndjson<E: TraceEvent>(ops: &[Timed<E>]) -> String {
    ops.iter().map(|op| to_history_line(op) + "\n").collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A vocabulary of one write, whose outcome is optional (absent: it never returned).
    #[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(tag = "action", deny_unknown_fields)]
    enum Ev {
        Write {
            value: u8,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            ok: Option<bool>,
        },
    }

    impl TraceEvent for Ev {
        const VOCABULARY: &'static str = "test";

        fn action(&self) -> &str {
            "Write"
        }

        fn has_outcome(&self) -> bool {
            let Ev::Write { ok, .. } = self;
            ok.is_some()
        }
    }

    /// A vocabulary that does not deny unknown fields, with a field left out at its default
    /// and one inside a list.
    #[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(tag = "action")]
    enum Loose {
        Put {
            writes: Vec<Put>,
            #[serde(default, skip_serializing_if = "std::ops::Not::not")]
            retried: bool,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            ok: Option<bool>,
        },
    }

    #[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
    struct Put {
        offset: u64,
    }

    impl TraceEvent for Loose {
        const VOCABULARY: &'static str = "loose";

        fn action(&self) -> &str {
            "Put"
        }
    }

    fn loose(rest: &str) -> Result<Loose, LineError> {
        Loose::from_line(&format!(
            r#"{{"v":2,"vocabulary":"loose","action":"Put","writes":[{{"offset":1}}]{rest}}}"#
        ))
    }

    #[test]
    fn a_field_no_event_reads_is_refused_though_the_type_does_not_deny_it() {
        assert!(loose("").is_ok());
        // Fields left out when at their default read as given.
        assert!(loose(r#","retried":false,"ok":null"#).is_ok());
        assert!(loose(r#","retried":true,"ok":true"#).is_ok());
        let misspelt = loose(r#","outcome":true"#).unwrap_err();
        assert_eq!(
            misspelt,
            LineError::UnknownField {
                field: "outcome".into(),
                action: "Put".into(),
                known: vec!["action".into(), "writes".into()],
            }
        );
        assert_eq!(
            misspelt.to_string(),
            "unknown field `outcome`: a `Put` event has `action`, `writes`"
        );
        // Unread as null, and inside the event's own values.
        assert!(matches!(
            loose(r#","extra":null"#),
            Err(LineError::UnknownField { field, .. }) if field == "extra"
        ));
        let nested = Loose::from_line(
            r#"{"v":2,"vocabulary":"loose","action":"Put","writes":[{"offset":1},{"offset":2,"size":3}]}"#,
        );
        assert!(matches!(
            nested,
            Err(LineError::UnknownField { field, .. }) if field == "writes[1].size"
        ));
    }

    fn line(rest: &str) -> String {
        format!(r#"{{"v":2,"vocabulary":"test","action":"Write","value":1{rest}}}"#)
    }

    fn error(text: &str) -> (usize, String) {
        let err = parse_trace::<Ev>(text).unwrap_err();
        (err.line, err.to_string())
    }

    #[test]
    fn a_trace_with_call_is_a_history_and_round_trips() {
        let text = [
            line(r#","ok":true,"call":3,"ret":5"#),
            line(r#","call":4,"ret":null"#),
        ]
        .join("\n");
        let Trace::History(ops) = parse_trace::<Ev>(&text).unwrap() else {
            panic!("a history");
        };
        assert_eq!((ops[0].call, ops[0].ret, ops[0].line), (3, Some(5), 1));
        assert_eq!((ops[1].call, ops[1].ret), (4, None));
        let Trace::History(again) = parse_trace::<Ev>(&to_history_ndjson(&ops)).unwrap() else {
            panic!("a history");
        };
        assert_eq!(
            again.iter().map(|o| (o.call, o.ret)).collect::<Vec<_>>(),
            [(3, Some(5)), (4, None)]
        );
        assert!(to_history_line(&ops[1]).contains(r#""call":4,"ret":null"#));
    }

    #[test]
    fn a_history_names_its_keys_and_a_sequence_none() {
        let text = [
            line(r#","ok":true,"call":3,"ret":5,"key":"k1""#),
            line(r#","ok":true,"call":3,"ret":5,"key":17"#),
            line(r#","ok":true,"call":3,"ret":5"#),
        ]
        .join("\n");
        let Trace::History(ops) = parse_trace::<Ev>(&text).unwrap() else {
            panic!("a history");
        };
        let keys: Vec<Option<&Key>> = ops.iter().map(|o| o.key.as_ref()).collect();
        // Typed as written: a name and a number are two keys, even "17" and 17.
        assert_eq!(keys, [Some(&"k1".into()), Some(&Key::Number(17)), None]);
        assert_ne!(Key::from("17"), Key::Number(17));
        assert!(to_history_line(&ops[1]).contains(r#""key":17"#));
        assert!(to_history_line(&ops[0]).contains(r#""key":"k1""#));
        assert!(!to_history_line(&ops[2]).contains("key"));
        let Trace::History(again) = parse_trace::<Ev>(&to_history_ndjson(&ops)).unwrap() else {
            panic!("a history");
        };
        assert_eq!(again, ops);

        let (at, message) = error(&line(r#","ok":true,"call":3,"ret":5,"key":[1]"#));
        assert_eq!(at, 1);
        assert!(
            message.contains("not a string or a whole number"),
            "{message}"
        );
        let (at, message) = error(&line(r#","ok":true,"key":"k1""#));
        assert_eq!(at, 1);
        assert!(message.contains("a `key` in a sequence"), "{message}");
    }

    #[test]
    fn a_trace_without_call_is_a_sequence() {
        let Trace::Sequence(events) = parse_trace::<Ev>(&line(r#","ok":true"#)).unwrap() else {
            panic!("a sequence");
        };
        assert_eq!(events.len(), 1);
    }

    #[test]
    fn bad_times_are_refused_naming_the_line_and_the_reason() {
        let cases = [
            (
                line(r#","ok":true,"call":5,"ret":3"#),
                "`ret` 3 is before `call` 5",
            ),
            (
                line(r#","ok":true,"call":"soon","ret":3"#),
                "`call` is \"soon\", not a whole number",
            ),
            (
                line(r#","ok":true,"call":1.5,"ret":3"#),
                "`call` is 1.5, not a whole number",
            ),
            (
                line(r#","ok":true,"call":-1,"ret":3"#),
                "`call` is -1, not a whole number",
            ),
            (
                line(r#","call":1,"ret":3"#),
                "a `ret` on an operation with no outcome",
            ),
            (
                line(r#","ok":true,"call":1,"ret":null"#),
                "on an operation with an outcome",
            ),
            (line(r#","ok":true,"call":1"#), "no `ret`"),
            (line(r#","ok":true,"ret":1"#), "`ret` without `call`"),
        ];
        for (bad, why) in cases {
            let (at, message) = error(&format!("\n{bad}"));
            assert_eq!(at, 2, "{bad}");
            assert!(message.contains(why), "{bad}: {message}");
        }
        // Mixing: every event of a history carries call.
        let (at, message) = error(
            &[
                line(r#","ok":true,"call":1,"ret":2"#),
                line(r#","ok":true"#),
            ]
            .join("\n"),
        );
        assert_eq!(at, 2);
        assert!(message.contains("line 1 has one"), "{message}");
    }

    #[test]
    fn an_empty_trace_is_refused() {
        for empty in ["", "\n\n  \n"] {
            let err = parse_trace::<Ev>(empty).unwrap_err();
            assert_eq!(err.error, LineError::NoEvents);
            assert_eq!(
                err.to_string(),
                "the trace holds no event: there is nothing to judge"
            );
        }
    }
}
