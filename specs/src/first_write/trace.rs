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

use loadbearing_trace::TraceEvent;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A writer, by the name the trace gives it: any non-empty string (a client id, a host, an
/// owner's generation). The models' own writers are named `w1`, `w2`, … (model writer 0, 1,
/// …): a trace in the models' terms names them so, and the fitting (`real::fit`) renames each
/// write of a real trace to one of them.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Writer(String);

impl Writer {
    /// The model's writer `index` (`w1` is 0).
    pub fn model(index: usize) -> Writer {
        Writer(format!("w{}", index + 1))
    }

    /// A writer by any name.
    pub fn named(name: impl Into<String>) -> Writer {
        Writer(name.into())
    }

    pub fn name(&self) -> &str {
        &self.0
    }

    /// The model writer this name is, when it is one (`w1` is 0; `w01`, `w0` and other names
    /// are none).
    pub fn index(&self) -> Option<usize> {
        let digits = self.0.strip_prefix('w')?;
        if digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse::<usize>().ok()?.checked_sub(1)
    }
}

impl fmt::Display for Writer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for Writer {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Writer {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Writer, D::Error> {
        let name = String::deserialize(d)?;
        if name.is_empty() {
            return Err(serde::de::Error::custom(
                "a writer is named by a non-empty string",
            ));
        }
        Ok(Writer(name))
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

/// A key's row as the judge holds it: absent, a live row (with its value when the write said
/// it), or an offset-carrying tombstone.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
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

/// What a read of the key found, as far as it says: no row, or a row at an offset with, when
/// the read says them, its value and whether it is a tombstone. What a read does not say is not
/// compared: `{"stored":5}` is any row at offset 5, live or a tombstone, whatever its value.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "ReadLine", into = "ReadLine")]
pub enum ReadRow {
    Absent,
    Row {
        offset: u64,
        /// The value read (a live row's).
        value: Option<String>,
        /// Whether the row is a tombstone (`false`: a live row), when the read says.
        tombstone: Option<bool>,
    },
}

impl ReadRow {
    /// A read of the row's offset alone (`None`: no row).
    pub fn at(offset: Option<u64>) -> ReadRow {
        match offset {
            Some(offset) => ReadRow::Row {
                offset,
                value: None,
                tombstone: None,
            },
            None => ReadRow::Absent,
        }
    }

    /// The read's offset, `None` for no row.
    pub fn offset(&self) -> Option<u64> {
        match self {
            ReadRow::Absent => None,
            ReadRow::Row { offset, .. } => Some(*offset),
        }
    }

    /// Whether the read says more than the offset: a value, or whether it is a tombstone.
    pub fn says_payload(&self) -> bool {
        matches!(self, ReadRow::Row { value, tombstone, .. } if value.is_some() || tombstone.is_some())
    }

    /// Whether the row could be what the read found: the same offset (or both absent), and
    /// what the read says of the row (live or a tombstone, its value) where the row is known
    /// (a write that did not say its value leaves it unknown, so any value read fits).
    pub fn matches(&self, row: &StoreRow) -> bool {
        match (self, row) {
            (ReadRow::Absent, StoreRow::Absent) => true,
            (
                ReadRow::Row {
                    offset,
                    value,
                    tombstone,
                },
                StoreRow::Live {
                    offset: o,
                    value: v,
                },
            ) => {
                offset == o
                    && *tombstone != Some(true)
                    && (value.is_none() || v.is_none() || value == v)
            }
            (
                ReadRow::Row {
                    offset,
                    value,
                    tombstone,
                },
                StoreRow::Tombstone { offset: o },
            ) => offset == o && *tombstone != Some(false) && value.is_none(),
            _ => false,
        }
    }
}

impl fmt::Display for ReadRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadRow::Absent => write!(f, "no row"),
            ReadRow::Row {
                offset,
                value,
                tombstone,
            } => match (value, tombstone) {
                (Some(value), _) => write!(f, "Present({offset}, {value:?})"),
                (None, Some(true)) => write!(f, "Tombstone({offset})"),
                (None, Some(false)) => write!(f, "Present({offset})"),
                (None, None) => write!(f, "a row at offset {offset}"),
            },
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tombstone: Option<bool>,
}

impl TryFrom<ReadLine> for ReadRow {
    type Error = String;

    fn try_from(line: ReadLine) -> Result<ReadRow, String> {
        match (line.stored, line.value, line.tombstone) {
            (None, None, None) => Ok(ReadRow::Absent),
            (None, _, _) => Err(
                "a read of no row names no `value` or `tombstone` (a row read names its offset, `stored`)"
                    .into(),
            ),
            (Some(_), Some(_), Some(true)) => {
                Err("a read finds a `value` or a `tombstone`, not both".into())
            }
            (Some(offset), value, tombstone) => Ok(ReadRow::Row {
                offset,
                value,
                tombstone,
            }),
        }
    }
}

impl From<ReadRow> for ReadLine {
    fn from(row: ReadRow) -> ReadLine {
        match row {
            ReadRow::Absent => ReadLine {
                stored: None,
                value: None,
                tombstone: None,
            },
            ReadRow::Row {
                offset,
                value,
                tombstone,
            } => ReadLine {
                stored: Some(offset),
                value,
                tombstone,
            },
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
    /// A read of the key (a stutter): the row, as far as the read says. The model's row must
    /// fit it; a value or a tombstone is compared where the judge holds them.
    Read(ReadRow),
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

    /// The writer's statement, to change (a generator's, a fitting's).
    pub fn statement_mut(&mut self) -> Option<&mut Statement> {
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

/// The initial offsets a trace's statements allow: each model writer persists one offset, and
/// an event reports a writer's step only if it names that writer's offset. A writer whose
/// events name several offsets gets a candidate for each (all but one then fail to fit: the
/// trace diverges, naming the offset); a writer no event names persists offset 0. No candidate
/// when a writer is not one of the model's (`w1` … `w8`) or an offset is past the model's 8
/// bits: such a trace matches no initial state, never a clamped one (`real::fit` maps a real
/// store's trace into the model first).
pub fn offset_choices(events: &[FirstWriteEvent]) -> Vec<[u8; super::MAX_WRITERS]> {
    let mut named: [Vec<u8>; super::MAX_WRITERS] = Default::default();
    for s in events.iter().filter_map(FirstWriteEvent::statement) {
        let (Some(offsets), Ok(offset)) = (
            s.writer.index().and_then(|w| named.get_mut(w)),
            u8::try_from(s.offset),
        ) else {
            return Vec::new();
        };
        if !offsets.contains(&offset) {
            offsets.push(offset);
        }
    }
    let mut choices = vec![[0; super::MAX_WRITERS]];
    for (w, offsets) in named.iter().enumerate().filter(|(_, o)| !o.is_empty()) {
        choices = choices
            .iter()
            .flat_map(|choice| {
                offsets.iter().map(move |&o| {
                    let mut next = *choice;
                    next[w] = o;
                    next
                })
            })
            .collect();
    }
    choices
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadbearing_trace::{parse_ndjson, to_ndjson, LineError};

    fn persist(w: usize, offset: u64) -> FirstWriteEvent {
        FirstWriteEvent::Persist(Statement::new(
            Writer::model(w),
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
                Statement::new(Writer::model(0), 41_007, Some(Outcome::Applied), None)
                    .writing(Payload::Value("seed".into())),
            ),
            FirstWriteEvent::Insert(
                Statement::new(Writer::model(1), 41_010, Some(Outcome::Applied), None)
                    .writing(Payload::Tombstone),
            ),
            FirstWriteEvent::Delete(Deletion(
                Statement::new(Writer::model(1), 41_011, None, None).writing(Payload::Tombstone),
            )),
            FirstWriteEvent::Repair(Statement::new(
                Writer::model(2),
                41_020,
                Some(Outcome::Applied),
                None,
            )),
            FirstWriteEvent::Read(ReadRow::Row {
                offset: 41_011,
                value: None,
                tombstone: Some(true),
            }),
            FirstWriteEvent::Read(ReadRow::Row {
                offset: 41_020,
                value: Some("x".into()),
                tombstone: None,
            }),
            FirstWriteEvent::Read(ReadRow::Absent),
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
                line(r#""action":"Persist","writer":"","offset":1"#),
                "a writer is named by a non-empty string",
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

    /// Writers are any names; the model's own are `w1`, `w2`, ….
    #[test]
    fn writers_are_any_names_and_the_models_are_w1_onwards() {
        let line = r#"{"v":2,"vocabulary":"first_write","action":"Persist","writer":"owner-7 (host b)","offset":1,"outcome":"applied"}"#;
        let events = parse_ndjson::<FirstWriteEvent>(line).unwrap();
        let writer = &events[0].statement().unwrap().writer;
        assert_eq!(writer.name(), "owner-7 (host b)");
        assert_eq!(writer.index(), None);
        assert_eq!(to_ndjson(&events).trim(), line);
        assert_eq!(Writer::model(0).name(), "w1");
        assert_eq!(Writer::named("w12").index(), Some(11));
        for none in ["w0", "w01", "w", "wx", "W1", "w-1", "w1 "] {
            assert_eq!(Writer::named(none).index(), None, "{none}");
        }
    }

    /// A read says what it says: `stored` alone is any row at that offset; a value, or whether
    /// it is a tombstone, is compared when said; a row whose value no write said fits any value.
    #[test]
    fn a_read_matches_the_rows_it_could_have_found() {
        let read = |text: &str| match parse_ndjson::<FirstWriteEvent>(&format!(
            r#"{{"v":2,"vocabulary":"first_write","action":"Read"{text}}}"#
        ))
        .unwrap()
        .remove(0)
        {
            FirstWriteEvent::Read(read) => read,
            other => panic!("{other:?}"),
        };
        let live = |value: Option<&str>| StoreRow::Live {
            offset: 5,
            value: value.map(str::to_string),
        };
        let tomb = StoreRow::Tombstone { offset: 5 };
        let cases: [(&str, [bool; 5]); 6] = [
            // Against: live "a", live unsaid, tombstone, live at 6, absent.
            (r#","stored":5"#, [true, true, true, false, false]),
            (
                r#","stored":5,"value":"a""#,
                [true, true, false, false, false],
            ),
            (
                r#","stored":5,"value":"b""#,
                [false, true, false, false, false],
            ),
            (
                r#","stored":5,"tombstone":true"#,
                [false, false, true, false, false],
            ),
            (
                r#","stored":5,"tombstone":false"#,
                [true, true, false, false, false],
            ),
            ("", [false, false, false, false, true]),
        ];
        for (text, expected) in cases {
            let read = read(text);
            let rows = [
                live(Some("a")),
                live(None),
                tomb.clone(),
                StoreRow::Live {
                    offset: 6,
                    value: None,
                },
                StoreRow::Absent,
            ];
            let got: Vec<bool> = rows.iter().map(|row| read.matches(row)).collect();
            assert_eq!(got, expected, "{text}");
        }
    }

    #[test]
    fn each_writer_gets_each_offset_its_events_name() {
        let choices = offset_choices(&[persist(0, 5), persist(1, 2), persist(0, 9)]);
        let mut firsts: Vec<(u8, u8)> = choices.iter().map(|c| (c[0], c[1])).collect();
        firsts.sort();
        assert_eq!(firsts, [(5, 2), (9, 2)]);
        // Past the model's writers or its 8-bit offsets: no initial state, never a clamped one.
        assert!(offset_choices(&[persist(8, 1)]).is_empty());
        assert!(offset_choices(&[persist(0, 256)]).is_empty());
        let named = FirstWriteEvent::Persist(Statement::new(Writer::named("a"), 1, None, None));
        assert!(offset_choices(&[named]).is_empty());
    }
}
