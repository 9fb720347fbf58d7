//! The first-write family's trace vocabulary, read by `CasFirstWrite` (the three-statement
//! compound: Cassandra, and its PostgreSQL rendition) and `CasFirstWriteAtomic` (one atomic
//! conditional upsert: SQLite, PostgreSQL). One vocabulary for both, because the stores of
//! both are written by the same step reporter and a trace of one is a (diverging) trace of
//! the other.
//!
//! ```text
//! {"v":2,"vocabulary":"first_write","action":"Update1","writer":"w1","offset":3,"outcome":"row_absent"}
//! {"v":2,"vocabulary":"first_write","action":"Persist","writer":"w2","offset":1,"outcome":"not_applied","stored":3}
//! {"v":2,"vocabulary":"first_write","action":"Persist","writer":"w3","offset":4}
//! {"v":2,"vocabulary":"first_write","action":"Read","stored":4}
//! ```
//!
//! A statement without an `outcome` was sent and never answered (`w3` above): the models
//! read it as unresolved, a step that may have landed, or not, at any later point. A `Read`
//! is the key's row once the writers are done.

use std::fmt;

use loadbearing_refinement::conform::TraceEvent;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A writer by index; on the wire `w1` is writer 0 (the model's writer names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Writer(pub u8);

impl Writer {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for Writer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "w{}", self.0 as u16 + 1)
    }
}

impl Serialize for Writer {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Writer {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Writer, D::Error> {
        let name = String::deserialize(d)?;
        name.strip_prefix('w')
            .and_then(|n| n.parse::<u8>().ok())
            .and_then(|n| n.checked_sub(1))
            .map(Writer)
            .ok_or_else(|| {
                serde::de::Error::custom(format!("`{name}` is not a writer (w1, w2, …)"))
            })
    }
}

/// What one statement did, as the store reported it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Applied,
    /// The condition failed on a present row.
    NotApplied,
    /// A conditional UPDATE found no row.
    RowAbsent,
    /// Known not applied: never sent (the session was lost before it), or refused before it
    /// ran. The writer gave up at this statement.
    NotSent,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Applied => "applied",
            Outcome::NotApplied => "not_applied",
            Outcome::RowAbsent => "row_absent",
            Outcome::NotSent => "not_sent",
        }
    }
}

/// One statement of a writer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Statement {
    pub writer: Writer,
    /// The offset the writer persists.
    pub offset: u64,
    /// Absent when the implementation does not know (sent, no reply): the statement may have
    /// taken effect or not, at any later point (the models read it as unresolved).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// The offset of the row that refused the statement (with `not_applied`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored: Option<u64>,
}

/// The first-write family's events, one per model action an implementation reports.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", deny_unknown_fields)]
pub enum FirstWriteEvent {
    /// CasFirstWrite `Update1`: the first `UPDATE … IF offset <= ?`.
    Update1(Statement),
    /// CasFirstWrite `Insert`: `INSERT … IF NOT EXISTS` after Update1 found no row.
    Insert(Statement),
    /// CasFirstWrite `RetryUpdate`: the one retry after a lost insert race.
    RetryUpdate(Statement),
    /// CasFirstWriteAtomic `Persist`: one atomic conditional upsert.
    Persist(Statement),
    /// `ReapRow`: the store found an expired row and treated it as absent or removed it.
    ReapRow {},
    /// A read of the key once the writers are done (a stutter): the row's offset, absent when
    /// there is none. The model's row must be the same.
    Read {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stored: Option<u64>,
    },
}

impl FirstWriteEvent {
    /// The writer's statement, for every event but a reap.
    pub fn statement(&self) -> Option<&Statement> {
        match self {
            FirstWriteEvent::Update1(s)
            | FirstWriteEvent::Insert(s)
            | FirstWriteEvent::RetryUpdate(s)
            | FirstWriteEvent::Persist(s) => Some(s),
            FirstWriteEvent::ReapRow {} | FirstWriteEvent::Read { .. } => None,
        }
    }

    /// Whether a model must read the event as unresolved: a writer's statement that was sent
    /// and never answered.
    pub fn is_unresolved(&self) -> bool {
        self.statement().is_some_and(|s| s.outcome.is_none())
    }

    /// Whether the event reports no model step in either model: an unresolved statement (its
    /// step is the model's to place) or a read.
    pub fn is_stutter(&self) -> bool {
        self.is_unresolved() || matches!(self, FirstWriteEvent::Read { .. })
    }

    /// Whether the event is a statement that was never sent.
    pub fn not_sent(&self) -> bool {
        self.statement()
            .is_some_and(|s| s.outcome == Some(Outcome::NotSent))
    }
}

impl TraceEvent for FirstWriteEvent {
    const VOCABULARY: &'static str = "first_write";

    /// A statement sent and never answered carries no outcome: in a history, its `ret` is null.
    fn has_outcome(&self) -> bool {
        !self.is_unresolved()
    }

    fn action(&self) -> &str {
        match self {
            FirstWriteEvent::Update1(_) => "Update1",
            FirstWriteEvent::Insert(_) => "Insert",
            FirstWriteEvent::RetryUpdate(_) => "RetryUpdate",
            FirstWriteEvent::Persist(_) => "Persist",
            FirstWriteEvent::ReapRow {} => "ReapRow",
            FirstWriteEvent::Read { .. } => "Read",
        }
    }
}

/// Each writer's offset as its statements name it; the last event wins, a writer no event
/// names persists offset 0. `None` when a writer or an offset is beyond what the model holds
/// (8 writers, 8-bit offsets): such a trace matches no initial state, never a clamped one
/// (`real::fit` maps a real store's trace into the model first).
pub fn revealed_offsets(events: &[FirstWriteEvent]) -> Option<[u8; super::MAX_WRITERS]> {
    let mut off = [0; super::MAX_WRITERS];
    for s in events.iter().filter_map(FirstWriteEvent::statement) {
        *off.get_mut(s.writer.index())? = u8::try_from(s.offset).ok()?;
    }
    Some(off)
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadbearing_refinement::conform::{parse_ndjson, to_ndjson, LineError};

    fn persist(w: u8, offset: u64) -> FirstWriteEvent {
        FirstWriteEvent::Persist(Statement {
            writer: Writer(w),
            offset,
            outcome: Some(Outcome::NotApplied),
            stored: Some(3),
        })
    }

    #[test]
    fn lines_round_trip_and_read_as_documented() {
        let events = vec![persist(1, 2), FirstWriteEvent::ReapRow {}];
        let text = to_ndjson(&events);
        assert_eq!(
            text.lines().next().unwrap(),
            r#"{"v":2,"vocabulary":"first_write","action":"Persist","writer":"w2","offset":2,"outcome":"not_applied","stored":3}"#
        );
        assert_eq!(parse_ndjson::<FirstWriteEvent>(&text).unwrap(), events);
    }

    #[test]
    fn a_malformed_line_is_refused_with_its_number() {
        let line = |rest: &str| format!("{{\"v\":2,\"vocabulary\":\"first_write\",{rest}}}");
        let cases = [
            (
                line(r#""action":"Persist","writer":"w1""#),
                "missing field `offset`",
            ),
            (
                line(r#""action":"Delete","writer":"w1","offset":1"#),
                "unknown variant `Delete`",
            ),
            (
                line(r#""action":"Persist","writer":"w1","offset":1,"colour":1"#),
                "unknown field `colour`",
            ),
            (
                line(r#""action":"ReapRow","colour":1"#),
                "unknown field `colour`",
            ),
            (
                line(r#""action":"Persist","writer":"x","offset":1"#),
                "not a writer",
            ),
        ];
        for (bad, why) in cases {
            let err = parse_ndjson::<FirstWriteEvent>(&format!("\n{bad}\n")).unwrap_err();
            assert_eq!(err.line, 2, "{bad}");
            match &err.error {
                LineError::Event(message) => assert!(message.contains(why), "{err}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
        let err = parse_ndjson::<FirstWriteEvent>(
            r#"{"v":1,"vocabulary":"first_write","action":"ReapRow"}"#,
        )
        .unwrap_err();
        assert_eq!(err.error, LineError::Version { found: Some(1) });
        let err =
            parse_ndjson::<FirstWriteEvent>(r#"{"v":2,"vocabulary":"kafka","action":"Poll"}"#)
                .unwrap_err();
        assert_eq!(
            err.error,
            LineError::Vocabulary {
                found: Some("kafka".into()),
                expected: "first_write"
            }
        );
    }
}
