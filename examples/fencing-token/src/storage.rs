//! Storage over SQLite: one row, the value written last, with the token it was written with.
//! The token check is in the `UPDATE` itself (`WHERE token <= ?`), so two writers racing on
//! the database cannot both pass it: the database decides, not a read before the write.

use std::path::Path;

use rusqlite::{params, Connection, OptionalExtension};

use crate::lock::{ClientId, Token};

/// Whether storage checks tokens. `Unchecked` is the planted mutant: the guard removed from the
/// implementation, which `conform --trace` must catch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenCheck {
    Checked,
    Unchecked,
}

/// A write storage refused, with both tokens: the one offered and the highest accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StaleToken {
    pub offered: Token,
    pub highest: Token,
}

#[derive(Debug)]
pub enum WriteError {
    Stale(StaleToken),
    Sqlite(rusqlite::Error),
}

impl From<rusqlite::Error> for WriteError {
    fn from(e: rusqlite::Error) -> Self {
        WriteError::Sqlite(e)
    }
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteError::Stale(s) => write!(
                f,
                "token {} refused: storage has accepted {}",
                s.offered, s.highest
            ),
            WriteError::Sqlite(e) => write!(f, "SQLite: {e}"),
        }
    }
}

impl std::error::Error for WriteError {}

pub struct Storage {
    db: Connection,
    check: TokenCheck,
}

/// What storage holds: the token, who wrote, and the value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stored {
    pub token: Token,
    pub writer: ClientId,
    pub value: String,
}

impl Storage {
    /// Opens (creating it if need be) the database at `path`; the row starts empty.
    pub fn open(path: &Path, check: TokenCheck) -> rusqlite::Result<Storage> {
        let db = Connection::open(path)?;
        db.execute_batch(
            "CREATE TABLE IF NOT EXISTS storage (
                 id INTEGER PRIMARY KEY CHECK (id = 1),
                 token INTEGER NOT NULL,
                 writer INTEGER,
                 value TEXT
             );
             DELETE FROM storage;
             INSERT INTO storage (id, token) VALUES (1, 0);",
        )?;
        Ok(Storage { db, check })
    }

    /// Writes `value` with `token`: refused with [`StaleToken`] if storage has accepted a
    /// higher token (unless the check is the mutant's `Unchecked`).
    pub fn write(&self, token: Token, writer: ClientId, value: &str) -> Result<(), WriteError> {
        let changed = match self.check {
            TokenCheck::Checked => self.db.execute(
                "UPDATE storage SET token = ?1, writer = ?2, value = ?3 WHERE id = 1 AND token <= ?1",
                params![token, writer.0, value],
            )?,
            TokenCheck::Unchecked => self.db.execute(
                "UPDATE storage SET token = ?1, writer = ?2, value = ?3 WHERE id = 1",
                params![token, writer.0, value],
            )?,
        };
        if changed == 1 {
            return Ok(());
        }
        let highest = self.highest()?;
        Err(WriteError::Stale(StaleToken {
            offered: token,
            highest,
        }))
    }

    fn highest(&self) -> rusqlite::Result<Token> {
        self.db
            .query_row("SELECT token FROM storage WHERE id = 1", [], |row| {
                row.get(0)
            })
    }

    /// What storage holds, `None` before the first write.
    pub fn read(&self) -> rusqlite::Result<Option<Stored>> {
        self.db
            .query_row(
                "SELECT token, writer, value FROM storage WHERE id = 1 AND writer IS NOT NULL",
                [],
                |row| {
                    Ok(Stored {
                        token: row.get(0)?,
                        writer: ClientId(row.get(1)?),
                        value: row.get(2)?,
                    })
                },
            )
            .optional()
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn storage(check: TokenCheck) -> (Storage, PathBuf) {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "fencing-token-storage-{}-{n}.sqlite",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&path);
        (Storage::open(&path, check).unwrap(), path)
    }

    #[test]
    fn a_stale_token_is_refused_with_both_tokens_and_storage_keeps_the_newer_write() {
        let (store, path) = storage(TokenCheck::Checked);
        store.write(2, ClientId(2), "newer").unwrap();
        let refused = store.write(1, ClientId(1), "stale").unwrap_err();
        assert!(
            matches!(
                refused,
                WriteError::Stale(StaleToken {
                    offered: 1,
                    highest: 2
                })
            ),
            "{refused:?}"
        );
        let kept = store.read().unwrap().unwrap();
        assert_eq!((kept.token, kept.value.as_str()), (2, "newer"));
        // The same token again is the same holder writing again: accepted.
        store.write(2, ClientId(2), "newer still").unwrap();
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn the_planted_mutant_accepts_the_stale_write() {
        let (store, path) = storage(TokenCheck::Unchecked);
        store.write(2, ClientId(2), "newer").unwrap();
        store.write(1, ClientId(1), "stale").unwrap();
        assert_eq!(store.read().unwrap().unwrap().token, 1);
        let _ = std::fs::remove_file(path);
    }
}
