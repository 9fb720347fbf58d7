//! The store API every backend implements: offset-carrying snapshots, guarded by the stored
//! offset (compare-and-set) or last-write-wins (the broken design, kept for the tests).
//!
//! The contract is the Cassandra model's write gate (docs/models/cassandra.md): a write of offset `o` lands
//! iff the row is absent (or expired) or `stored.offset <= o`. A delete is an offset-carrying
//! tombstone: the row keeps its offset so the gate survives the delete.

use std::fmt;

/// A Kafka-style offset. The SQL and CQL columns are signed 64-bit, so offsets above
/// [`MAX_OFFSET`] are refused before anything is sent.
pub type Offset = u64;

/// The largest offset a backend can store (`i64::MAX`, as Kafka's own offsets).
pub const MAX_OFFSET: Offset = i64::MAX as u64;

/// What a read of one key returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Read {
    /// A snapshot written at `offset`.
    Live { offset: Offset, value: Vec<u8> },
    /// The key was deleted at `offset`; the row is kept so the offset still guards it.
    Tombstone { offset: Offset },
    /// No row (never written, or reaped by its TTL).
    Absent,
}

impl Read {
    /// The stored offset, if there is a row.
    pub fn offset(&self) -> Option<Offset> {
        match self {
            Read::Live { offset, .. } | Read::Tombstone { offset } => Some(*offset),
            Read::Absent => None,
        }
    }

    /// The live value, if any (a tombstone reads as no value).
    pub fn value(&self) -> Option<&[u8]> {
        match self {
            Read::Live { value, .. } => Some(value),
            _ => None,
        }
    }
}

/// A write was refused because a newer offset is stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    pub key: String,
    /// The offset this write carried.
    pub attempted: Offset,
    /// The offset found in the row that refused it (always `> attempted`).
    pub stored: Offset,
}

/// Why a write is not reported as applied. A write is only ever reported as applied when the
/// database said so.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteError {
    /// The guard refused the write: a newer snapshot is stored.
    Conflict(Conflict),
    /// The outcome is unknown: the statement may or may not have landed (an LWT write timeout
    /// of type CAS, a connection lost after the statement was sent).
    Indeterminate {
        key: String,
        attempted: Offset,
        reason: String,
    },
    /// Known not to have been applied: nothing was sent (no connection, an offset above
    /// [`MAX_OFFSET`]) or the database rejected the statement before executing it.
    Failed {
        key: String,
        attempted: Offset,
        reason: String,
    },
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteError::Conflict(c) => write!(
                f,
                "conflict on key {:?}: attempted offset {} but offset {} is stored",
                c.key, c.attempted, c.stored
            ),
            WriteError::Indeterminate {
                key,
                attempted,
                reason,
            } => write!(
                f,
                "indeterminate write of key {key:?} at offset {attempted}: {reason}"
            ),
            WriteError::Failed {
                key,
                attempted,
                reason,
            } => {
                write!(
                    f,
                    "write of key {key:?} at offset {attempted} not applied: {reason}"
                )
            }
        }
    }
}

impl std::error::Error for WriteError {}

/// A read that could not be answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadError {
    pub key: String,
    pub reason: String,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "read of key {:?} failed: {}", self.key, self.reason)
    }
}

impl std::error::Error for ReadError {}

/// A session, keyspace or table that could not be opened or set up, or a maintenance statement
/// (a reap, a set-up statement) that failed. Writes fail with [`WriteError`], reads with
/// [`ReadError`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackendError {
    /// A keyspace or table name that is not a plain identifier (names are spliced into SQL
    /// and CQL).
    NotAnIdentifier(String),
    /// The database or its client refused while doing `what`.
    Database { what: &'static str, reason: String },
}

impl BackendError {
    /// A failure while doing `what`, for `map_err`.
    pub fn while_<E: fmt::Display>(what: &'static str) -> impl Fn(E) -> BackendError + Copy {
        move |e| BackendError::Database {
            what,
            reason: e.to_string(),
        }
    }
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackendError::NotAnIdentifier(name) => write!(f, "not a plain identifier: {name:?}"),
            BackendError::Database { what, reason } => write!(f, "{what}: {reason}"),
        }
    }
}

impl std::error::Error for BackendError {}

/// How writes are gated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Compare-and-set on the stored offset (`stored <= new`), tombstones keep their offset.
    Guarded,
    /// Last write wins: every write lands (the design issue #732 breaks).
    LastWriteWins,
    /// TEST-ONLY PLANTED MUTANT (the Cassandra model's `Tombstone = false`): writes are guarded
    /// as in [`Mode::Guarded`], but a delete removes the row (a conditional hard delete,
    /// `DELETE … WHERE offset <= o`) instead of keeping an offset-carrying tombstone, so the
    /// guard is lost with the row. Never use it outside conformance tests: it exists to show
    /// that the tombstone is load-bearing (`loadbearing conform flow-hard-delete`).
    HardDelete,
}

/// Per-store options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreOptions {
    pub mode: Mode,
    /// Rows (snapshots and tombstones) expire this long after their last write.
    pub ttl: Option<std::time::Duration>,
}

impl StoreOptions {
    pub fn guarded() -> Self {
        StoreOptions {
            mode: Mode::Guarded,
            ttl: None,
        }
    }
    pub fn last_write_wins() -> Self {
        StoreOptions {
            mode: Mode::LastWriteWins,
            ttl: None,
        }
    }
    pub fn with_ttl(mut self, ttl: std::time::Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }
}

/// A single-writer snapshot store. Every handle may be used from one thread at a time per
/// call (implementations lock internally); open one handle per concurrent session to get real
/// concurrent sessions on the database.
pub trait SnapshotStore: Send + Sync {
    fn read(&self, key: &str) -> Result<Read, ReadError>;
    /// Store `value` at `offset`, unless (guarded) a newer offset is stored.
    fn persist(&self, key: &str, offset: Offset, value: &[u8]) -> Result<(), WriteError>;
    /// Tombstone the key at `offset` (value removed, offset kept), unless (guarded) a newer
    /// offset is stored.
    fn delete(&self, key: &str, offset: Offset) -> Result<(), WriteError>;
    fn options(&self) -> StoreOptions;
    /// A short name for messages: `sqlite`, `postgres`, `cassandra`.
    fn backend(&self) -> &'static str;
}

impl<T: SnapshotStore + ?Sized> SnapshotStore for std::sync::Arc<T> {
    fn read(&self, key: &str) -> Result<Read, ReadError> {
        (**self).read(key)
    }
    fn persist(&self, key: &str, offset: Offset, value: &[u8]) -> Result<(), WriteError> {
        (**self).persist(key, offset, value)
    }
    fn delete(&self, key: &str, offset: Offset) -> Result<(), WriteError> {
        (**self).delete(key, offset)
    }
    fn options(&self) -> StoreOptions {
        (**self).options()
    }
    fn backend(&self) -> &'static str {
        (**self).backend()
    }
}

impl<T: SnapshotStore + ?Sized> SnapshotStore for Box<T> {
    fn read(&self, key: &str) -> Result<Read, ReadError> {
        (**self).read(key)
    }
    fn persist(&self, key: &str, offset: Offset, value: &[u8]) -> Result<(), WriteError> {
        (**self).persist(key, offset, value)
    }
    fn delete(&self, key: &str, offset: Offset) -> Result<(), WriteError> {
        (**self).delete(key, offset)
    }
    fn options(&self) -> StoreOptions {
        (**self).options()
    }
    fn backend(&self) -> &'static str {
        (**self).backend()
    }
}

/// Refuse offsets the signed columns cannot hold, before anything is sent.
pub(crate) fn check_offset(key: &str, offset: Offset) -> Result<i64, WriteError> {
    i64::try_from(offset).map_err(|_| WriteError::Failed {
        key: key.to_string(),
        attempted: offset,
        reason: format!("offset {offset} is above the largest storable offset {MAX_OFFSET}"),
    })
}

/// The payload of a write: a snapshot value or a tombstone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Payload<'a> {
    Value(&'a [u8]),
    Tombstone,
}

impl Payload<'_> {
    pub(crate) fn bytes(&self) -> Option<&[u8]> {
        match self {
            Payload::Value(v) => Some(v),
            Payload::Tombstone => None,
        }
    }
}

/// The compound's two guards besides the offset compare (docs/models/casfirstwrite.md's `InsertIfNotExists` and
/// `Retry`). Turning one off is a planted mutant, for conformance only: the configs
/// `casfw_no_ine` and `casfw_noretry` show what breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompoundGuards {
    /// `Insert` lands only on an absent row; off, it is a blind upsert.
    pub insert_if_not_exists: bool,
    /// After a lost insert race, the conditional update is retried once; off, the writer
    /// reports a conflict without looking again.
    pub retry: bool,
}

impl Default for CompoundGuards {
    fn default() -> Self {
        CompoundGuards {
            insert_if_not_exists: true,
            retry: true,
        }
    }
}
