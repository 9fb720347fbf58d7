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
//! {"v":2,"vocabulary":"first_write","action":"Persist","writer":"w1","offset":41007,"value":"c2VlZA==","outcome":"applied"}
//! {"v":2,"vocabulary":"first_write","action":"Delete","writer":"w2","offset":41010,"outcome":"applied"}
//! {"v":2,"vocabulary":"first_write","action":"Read","stored":41010,"tombstone":true}
//! ```
//!
//! A statement without an `outcome` was sent and never answered (`w3` above): the models
//! read it as unresolved, a step that may have landed, or not, at any later point. A `Read`
//! is the key's row once the writers are done.
//!
//! What a write puts in the row is its payload: a `value` (an opaque string: the store's
//! bytes in whatever text the store's owner likes, compared only for equality), a
//! `tombstone`, or nothing said. A `Delete` is a whole delete: guarded, the tombstone write
//! that keeps its offset (its first write an `INSERT … IF NOT EXISTS` with a null value);
//! last-write-wins, a plain `DELETE`. A `Repair` is the compound's `UPDATE … IF offset = null`,
//! the claim of a row whose guard expired: the compound model reads it as its `Insert` (a
//! guard that is gone fences nothing: the row is absent to the model).

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
    /// An `INSERT … IF NOT EXISTS` lost to a row that is there with its guard expired: the
    /// model's row is absent, and the writer claims it with a `Repair`.
    GuardExpired,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Applied => "applied",
            Outcome::NotApplied => "not_applied",
            Outcome::RowAbsent => "row_absent",
            Outcome::NotSent => "not_sent",
            Outcome::GuardExpired => "guard_expired",
        }
    }
}

/// What a write puts in the row, as far as the trace says.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Payload {
    /// The trace does not say (the models compare offsets only).
    #[default]
    Unsaid,
    /// A value: an opaque string, compared only for equality.
    Value(String),
    /// A tombstone: the row stays, with the write's offset and no value.
    Tombstone,
}

/// One statement of a writer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "StatementLine", into = "StatementLine")]
pub struct Statement {
    pub writer: Writer,
    /// The offset the writer persists.
    pub offset: u64,
    /// Absent when the implementation does not know (sent, no reply): the statement may have
    /// taken effect or not, at any later point (the models read it as unresolved).
    pub outcome: Option<Outcome>,
    /// The offset of the row that refused the statement (with `not_applied`).
    pub stored: Option<u64>,
    /// What the statement writes.
    pub payload: Payload,
}

impl Statement {
    /// A statement that says nothing of its payload.
    pub fn new(writer: Writer, offset: u64, outcome: Option<Outcome>, stored: Option<u64>) -> Self {
        Statement {
            writer,
            offset,
            outcome,
            stored,
            payload: Payload::Unsaid,
        }
    }

    /// The same statement writing `payload`.
    pub fn writing(self, payload: Payload) -> Self {
        Statement { payload, ..self }
    }
}

/// A statement as a line spells it: the payload as `value` or `tombstone`, never both.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StatementLine {
    writer: Writer,
    offset: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    outcome: Option<Outcome>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stored: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    value: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    tombstone: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl TryFrom<StatementLine> for Statement {
    type Error = String;

    fn try_from(line: StatementLine) -> Result<Statement, String> {
        let payload = match (line.value, line.tombstone) {
            (Some(_), true) => {
                return Err("a statement writes a `value` or a `tombstone`, not both".into())
            }
            (Some(value), false) => Payload::Value(value),
            (None, true) => Payload::Tombstone,
            (None, false) => Payload::Unsaid,
        };
        Ok(Statement::new(line.writer, line.offset, line.outcome, line.stored).writing(payload))
    }
}

impl From<Statement> for StatementLine {
    fn from(s: Statement) -> StatementLine {
        let (value, tombstone) = match s.payload {
            Payload::Unsaid => (None, false),
            Payload::Value(value) => (Some(value), false),
            Payload::Tombstone => (None, true),
        };
        StatementLine {
            writer: s.writer,
            offset: s.offset,
            outcome: s.outcome,
            stored: s.stored,
            value,
            tombstone,
        }
    }
}

/// A whole delete's statement: its payload is the tombstone, by the action; a line that names
/// a `value` or a `tombstone` on a `Delete` is refused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "StatementLine", into = "StatementLine")]
pub struct Deletion(pub Statement);

impl TryFrom<StatementLine> for Deletion {
    type Error = String;

    fn try_from(line: StatementLine) -> Result<Deletion, String> {
        if line.value.is_some() || line.tombstone {
            return Err("a `Delete` writes a tombstone: it takes no `value` or `tombstone`".into());
        }
        Ok(Deletion(
            Statement::new(line.writer, line.offset, line.outcome, line.stored)
                .writing(Payload::Tombstone),
        ))
    }
}

impl From<Deletion> for StatementLine {
    fn from(d: Deletion) -> StatementLine {
        let mut line = StatementLine::from(d.0);
        line.tombstone = false;
        line
    }
}

/// A key's row as a read found it: absent, a live row (with its value when the read says
/// it), or an offset-carrying tombstone.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "ReadLine", into = "ReadLine")]
pub enum StoreRow {
    Absent,
    Live { offset: u64, value: Option<String> },
    Tombstone { offset: u64 },
}

impl StoreRow {
    /// The row's offset (a tombstone's too), `None` when there is no row.
    pub fn offset(&self) -> Option<u64> {
        match self {
            StoreRow::Absent => None,
            StoreRow::Live { offset, .. } | StoreRow::Tombstone { offset } => Some(*offset),
        }
    }

    /// A live row at `offset` whose value is not said.
    pub fn at(offset: Option<u64>) -> StoreRow {
        match offset {
            Some(offset) => StoreRow::Live {
                offset,
                value: None,
            },
            None => StoreRow::Absent,
        }
    }

    /// Whether the read says more than the offset: a value or a tombstone.
    pub fn says_payload(&self) -> bool {
        matches!(
            self,
            StoreRow::Live { value: Some(_), .. } | StoreRow::Tombstone { .. }
        )
    }
}

impl fmt::Display for StoreRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreRow::Absent => write!(f, "Absent"),
            StoreRow::Live {
                offset,
                value: None,
            } => write!(f, "Present({offset})"),
            StoreRow::Live {
                offset,
                value: Some(value),
            } => write!(f, "Present({offset}, {value:?})"),
            StoreRow::Tombstone { offset } => write!(f, "Tombstone({offset})"),
        }
    }
}

/// A read as a line spells it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadLine {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stored: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    value: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    tombstone: bool,
}

impl TryFrom<ReadLine> for StoreRow {
    type Error = String;

    fn try_from(line: ReadLine) -> Result<StoreRow, String> {
        match (line.stored, line.value, line.tombstone) {
            (None, None, false) => Ok(StoreRow::Absent),
            (None, _, _) => Err("a read of no row names no `value` or `tombstone`".into()),
            (Some(_), Some(_), true) => {
                Err("a read finds a `value` or a `tombstone`, not both".into())
            }
            (Some(offset), value, false) => Ok(StoreRow::Live { offset, value }),
            (Some(offset), None, true) => Ok(StoreRow::Tombstone { offset }),
        }
    }
}

impl From<StoreRow> for ReadLine {
    fn from(row: StoreRow) -> ReadLine {
        let (stored, value, tombstone) = match row {
            StoreRow::Absent => (None, None, false),
            StoreRow::Live { offset, value } => (Some(offset), value, false),
            StoreRow::Tombstone { offset } => (Some(offset), None, true),
        };
        ReadLine {
            stored,
            value,
            tombstone,
        }
    }
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
    /// The compound's `UPDATE … IF offset = null`: the claim of a row whose guard expired,
    /// the model's `Insert` (to the model the row is absent).
    Repair(Statement),
    /// CasFirstWriteAtomic `Persist`: one atomic conditional upsert.
    Persist(Statement),
    /// A whole delete, judged on the row by the atomic model: guarded, the tombstone write
    /// (the model's `Persist`: the row keeps the delete's offset); last-write-wins, a plain
    /// `DELETE` (the row is gone).
    Delete(Deletion),
    /// `ReapRow`: the store found an expired row and treated it as absent or removed it.
    ReapRow {},
    /// A read of the key (a stutter): the row, as the store holds it. The model's row must be
    /// the same; a value or a tombstone is compared where the judge holds them.
    Read(StoreRow),
}

impl FirstWriteEvent {
    /// The writer's statement, for every event but a reap.
    pub fn statement(&self) -> Option<&Statement> {
        match self {
            FirstWriteEvent::Update1(s)
            | FirstWriteEvent::Insert(s)
            | FirstWriteEvent::RetryUpdate(s)
            | FirstWriteEvent::Repair(s)
            | FirstWriteEvent::Persist(s)
            | FirstWriteEvent::Delete(Deletion(s)) => Some(s),
            FirstWriteEvent::ReapRow {} | FirstWriteEvent::Read(_) => None,
        }
    }

    /// Whether the event says what a row holds beyond its offset: a write's value or
    /// tombstone, a whole delete, a read's value or tombstone. The models compare offsets
    /// only; the row judge (`register::AtomicRow`) compares these too.
    pub fn says_payload(&self) -> bool {
        match self {
            FirstWriteEvent::Delete(_) => true,
            FirstWriteEvent::Read(row) => row.says_payload(),
            other => other
                .statement()
                .is_some_and(|s| s.payload != Payload::Unsaid),
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
        self.is_unresolved() || matches!(self, FirstWriteEvent::Read(_))
    }

    /// Whether the event is an insert that lost to a row whose guard expired: to the compound,
    /// whose row is then absent, a stutter (the writer goes on to `Repair`).
    pub fn is_guard_expired(&self) -> bool {
        matches!(self, FirstWriteEvent::Insert(s) if s.outcome == Some(Outcome::GuardExpired))
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
            FirstWriteEvent::Repair(_) => "Repair",
            FirstWriteEvent::Persist(_) => "Persist",
            FirstWriteEvent::Delete(_) => "Delete",
            FirstWriteEvent::ReapRow {} => "ReapRow",
            FirstWriteEvent::Read(_) => "Read",
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
        FirstWriteEvent::Persist(Statement::new(
            Writer(w),
            offset,
            Some(Outcome::NotApplied),
            Some(3),
        ))
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
    fn payloads_deletes_and_rows_round_trip() {
        let events = vec![
            FirstWriteEvent::Persist(
                Statement::new(Writer(0), 41_007, Some(Outcome::Applied), None)
                    .writing(Payload::Value("seed".into())),
            ),
            FirstWriteEvent::Insert(
                Statement::new(Writer(1), 41_010, Some(Outcome::Applied), None)
                    .writing(Payload::Tombstone),
            ),
            FirstWriteEvent::Delete(Deletion(
                Statement::new(Writer(1), 41_011, None, None).writing(Payload::Tombstone),
            )),
            FirstWriteEvent::Repair(Statement::new(
                Writer(2),
                41_020,
                Some(Outcome::Applied),
                None,
            )),
            FirstWriteEvent::Read(StoreRow::Tombstone { offset: 41_011 }),
            FirstWriteEvent::Read(StoreRow::Live {
                offset: 41_020,
                value: Some("x".into()),
            }),
            FirstWriteEvent::Read(StoreRow::Absent),
        ];
        let text = to_ndjson(&events);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            r#"{"v":2,"vocabulary":"first_write","action":"Persist","writer":"w1","offset":41007,"outcome":"applied","value":"seed"}"#
        );
        assert_eq!(
            lines[2],
            r#"{"v":2,"vocabulary":"first_write","action":"Delete","writer":"w2","offset":41011}"#
        );
        assert_eq!(
            lines[4],
            r#"{"v":2,"vocabulary":"first_write","action":"Read","stored":41011,"tombstone":true}"#
        );
        assert_eq!(
            lines[6],
            r#"{"v":2,"vocabulary":"first_write","action":"Read"}"#
        );
        assert_eq!(parse_ndjson::<FirstWriteEvent>(&text).unwrap(), events);
        assert!(events.iter().filter(|e| e.says_payload()).count() == 5);
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
                line(r#""action":"Erase","writer":"w1","offset":1"#),
                "unknown variant `Erase`",
            ),
            (
                line(r#""action":"Persist","writer":"w1","offset":1,"value":"a","tombstone":true"#),
                "not both",
            ),
            (
                line(r#""action":"Delete","writer":"w1","offset":1,"value":"a""#),
                "takes no `value`",
            ),
            (line(r#""action":"Read","value":"a""#), "a read of no row"),
            (
                line(r#""action":"Read","stored":2,"value":"a","tombstone":true"#),
                "not both",
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
