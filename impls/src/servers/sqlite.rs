//! SQLite backend (rusqlite, bundled library): the embedded default.
//!
//! A persist or delete is ONE conditional upsert:
//! `INSERT … ON CONFLICT(key) DO UPDATE SET … WHERE snapshots."offset" <= excluded."offset"`.
//! SQLite runs it under the database write lock, so the check and the write are one atomic
//! step (the model's `CasFirstWriteAtomic::Persist`). A delete is the same upsert with a NULL
//! value: an offset-carrying tombstone. An expired row (TTL) counts as absent.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use super::Database;
use crate::store::{
    check_offset, BackendError, Conflict, Mode, Offset, Payload, Read, ReadError, SnapshotStore,
    StoreOptions, WriteError,
};
use crate::trace::{no_trace, SharedTracer, StatementOutcome, Step};

const BACKEND: &str = "sqlite";

/// One SQLite session on a database file (open one per concurrent writer).
pub struct SqliteStore {
    conn: Mutex<Connection>,
    options: StoreOptions,
    tracer: SharedTracer,
}

pub(crate) fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl SqliteStore {
    /// Open (and create if needed) the `snapshots` table in the database file at `path`.
    pub fn open(path: impl AsRef<Path>, options: StoreOptions) -> rusqlite::Result<Self> {
        Self::open_traced(path, options, no_trace())
    }

    pub fn open_traced(
        path: impl AsRef<Path>,
        options: StoreOptions,
        tracer: SharedTracer,
    ) -> rusqlite::Result<Self> {
        let conn = Connection::open(path)?;
        conn.busy_timeout(Duration::from_secs(10))?;
        // Switching to WAL and creating the table can meet another session doing the same,
        // and SQLite does not always call the busy handler for those: retry for a while.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let setup = conn
                .pragma_update(None, "journal_mode", "WAL")
                .and_then(|_| {
                    conn.pragma_update(None, "synchronous", "NORMAL")?;
                    conn.execute_batch(
                        "CREATE TABLE IF NOT EXISTS snapshots (
                        key TEXT PRIMARY KEY,
                        \"offset\" INTEGER NOT NULL,
                        value BLOB,
                        expires_at INTEGER
                    )",
                    )
                });
            match setup {
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if e.code == rusqlite::ErrorCode::DatabaseBusy
                        && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(10));
                }
                other => break other?,
            }
        }
        Ok(SqliteStore {
            conn: Mutex::new(conn),
            options,
            tracer,
        })
    }

    /// An in-memory database (one session only): handy for examples and unit tests.
    pub fn in_memory(options: StoreOptions) -> rusqlite::Result<Self> {
        Self::open(":memory:", options)
    }

    /// Delete every expired row; returns how many were reaped (each reported as `ReapRow`).
    pub fn reap_expired(&self) -> rusqlite::Result<usize> {
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let mut stmt = conn.prepare(
            "DELETE FROM snapshots WHERE expires_at IS NOT NULL AND expires_at <= ?1
             RETURNING key, \"offset\"",
        )?;
        let rows: Vec<(String, i64)> = stmt
            .query_map(params![now_millis()], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        for (key, offset) in &rows {
            self.tracer.step(&Step::ReapRow {
                backend: BACKEND,
                key: key.clone(),
                offset: *offset as u64,
            });
        }
        Ok(rows.len())
    }

    fn expires_at(&self) -> Option<i64> {
        self.options
            .ttl
            .map(|ttl| now_millis() + ttl.as_millis() as i64)
    }

    fn write(&self, key: &str, offset: Offset, payload: Payload<'_>) -> Result<(), WriteError> {
        let signed = check_offset(key, offset)?;
        let failed = |e: rusqlite::Error| WriteError::Failed {
            key: key.to_string(),
            attempted: offset,
            reason: e.to_string(),
        };
        if self.options.mode == Mode::HardDelete && payload == Payload::Tombstone {
            return self.hard_delete(key, offset, signed);
        }
        let mut conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        // IMMEDIATE: take the write lock up front, so the follow-up read of a refused write
        // sees the row that refused it.
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(failed)?;
        let now = now_millis();
        let sql = match self.options.mode {
            Mode::Guarded | Mode::HardDelete => {
                "INSERT INTO snapshots (key, \"offset\", value, expires_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(key) DO UPDATE SET \"offset\" = excluded.\"offset\",
                     value = excluded.value, expires_at = excluded.expires_at
                 WHERE snapshots.\"offset\" <= excluded.\"offset\"
                    OR (snapshots.expires_at IS NOT NULL AND snapshots.expires_at <= ?5)"
            }
            Mode::LastWriteWins => {
                "INSERT INTO snapshots (key, \"offset\", value, expires_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(key) DO UPDATE SET \"offset\" = excluded.\"offset\",
                     value = excluded.value, expires_at = excluded.expires_at
"
            }
        };
        let expires = self.expires_at();
        let changed = match self.options.mode {
            Mode::Guarded | Mode::HardDelete => {
                tx.execute(sql, params![key, signed, payload.bytes(), expires, now])
            }
            Mode::LastWriteWins => tx.execute(sql, params![key, signed, payload.bytes(), expires]),
        }
        .map_err(failed)?;
        let outcome = if changed == 1 {
            tx.commit().map_err(|e| WriteError::Indeterminate {
                key: key.to_string(),
                attempted: offset,
                reason: format!("commit failed: {e}"),
            })?;
            Ok(())
        } else {
            let stored: Option<i64> = tx
                .query_row(
                    "SELECT \"offset\" FROM snapshots WHERE key = ?1",
                    params![key],
                    |r| r.get(0),
                )
                .optional()
                .map_err(failed)?;
            drop(tx);
            match stored {
                Some(stored) => Err(WriteError::Conflict(Conflict {
                    key: key.to_string(),
                    attempted: offset,
                    stored: stored as u64,
                })),
                None => Err(WriteError::Failed {
                    key: key.to_string(),
                    attempted: offset,
                    reason: "the upsert changed nothing and no row exists".into(),
                }),
            }
        };
        self.tracer.step(&Step::Persist {
            backend: BACKEND,
            key: key.to_string(),
            offset,
            kind: payload.kind(),
            outcome: StatementOutcome::from(&outcome),
        });
        outcome
    }

    /// The [`Mode::HardDelete`] mutant's delete: the row is removed if the guard lets the
    /// write through (or the row expired). Deleting an absent row is a no-op that applies.
    fn hard_delete(&self, key: &str, offset: Offset, signed: i64) -> Result<(), WriteError> {
        let failed = |e: rusqlite::Error| WriteError::Failed {
            key: key.to_string(),
            attempted: offset,
            reason: e.to_string(),
        };
        let mut conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(failed)?;
        let stored: Option<i64> = tx
            .query_row(
                "SELECT \"offset\" FROM snapshots WHERE key = ?1
                   AND (expires_at IS NULL OR expires_at > ?2)",
                params![key, now_millis()],
                |r| r.get(0),
            )
            .optional()
            .map_err(failed)?;
        let outcome = match stored {
            Some(stored) if stored > signed => Err(WriteError::Conflict(Conflict {
                key: key.to_string(),
                attempted: offset,
                stored: stored as u64,
            })),
            _ => {
                tx.execute("DELETE FROM snapshots WHERE key = ?1", params![key])
                    .map_err(failed)?;
                tx.commit().map_err(|e| WriteError::Indeterminate {
                    key: key.to_string(),
                    attempted: offset,
                    reason: format!("commit failed: {e}"),
                })
            }
        };
        self.tracer.step(&Step::Persist {
            backend: BACKEND,
            key: key.to_string(),
            offset,
            kind: crate::trace::WriteKind::Delete,
            outcome: StatementOutcome::from(&outcome),
        });
        outcome
    }
}

impl SnapshotStore for SqliteStore {
    fn read(&self, key: &str) -> Result<Read, ReadError> {
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let row: Option<(i64, Option<Vec<u8>>, Option<i64>)> = conn
            .query_row(
                "SELECT \"offset\", value, expires_at FROM snapshots WHERE key = ?1",
                params![key],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .map_err(|e| ReadError {
                key: key.to_string(),
                reason: e.to_string(),
            })?;
        Ok(match row {
            None => Read::Absent,
            Some((offset, _, Some(expires))) if expires <= now_millis() => {
                self.tracer.step(&Step::ReapRow {
                    backend: BACKEND,
                    key: key.to_string(),
                    offset: offset as u64,
                });
                Read::Absent
            }
            Some((offset, Some(value), _)) => Read::Live {
                offset: offset as u64,
                value,
            },
            Some((offset, None, _)) => Read::Tombstone {
                offset: offset as u64,
            },
        })
    }

    fn persist(&self, key: &str, offset: Offset, value: &[u8]) -> Result<(), WriteError> {
        self.write(key, offset, Payload::Value(value))
    }

    fn delete(&self, key: &str, offset: Offset) -> Result<(), WriteError> {
        self.write(key, offset, Payload::Tombstone)
    }

    fn options(&self) -> StoreOptions {
        self.options
    }

    fn backend(&self) -> &'static str {
        BACKEND
    }
}

/// SQLite in a database file: each session its own connection.
pub struct SqliteFile {
    pub path: PathBuf,
    /// A database of one run (conformance's): gone with the value.
    remove_on_drop: bool,
}

impl SqliteFile {
    /// A fresh database at `path` (an earlier run's file and its journals removed); the file
    /// stays when the value is dropped.
    pub fn fresh(path: PathBuf) -> SqliteFile {
        remove_database(&path);
        SqliteFile {
            path,
            remove_on_drop: false,
        }
    }

    /// A fresh database `name.db` in the temp dir, removed with the value.
    pub(crate) fn temporary(name: &str) -> Result<SqliteFile, BackendError> {
        let dir = std::env::temp_dir().join("loadbearing-conform");
        std::fs::create_dir_all(&dir)
            .map_err(BackendError::while_("creating the SQLite folder"))?;
        let path = dir.join(format!("{name}.db"));
        remove_database(&path);
        Ok(SqliteFile {
            path,
            remove_on_drop: true,
        })
    }
}

/// Removes a database file and its journals (WAL, shared memory), if there are any.
pub fn remove_database(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

impl Drop for SqliteFile {
    fn drop(&mut self) {
        if self.remove_on_drop {
            remove_database(&self.path);
        }
    }
}

impl Database for SqliteFile {
    fn backend(&self) -> super::StoreBackend {
        super::StoreBackend::Sqlite
    }
    fn session(
        &self,
        options: StoreOptions,
        tracer: SharedTracer,
    ) -> Result<Box<dyn SnapshotStore>, BackendError> {
        SqliteStore::open_traced(&self.path, options, tracer)
            .map(|s| Box::new(s) as Box<dyn SnapshotStore>)
            .map_err(BackendError::while_("opening the SQLite store"))
    }
}
