//! The register on SQLite: one row, and a cas that is one `UPDATE … WHERE value = ?`, so the
//! database decides. Each client opens its own connection; SQLite runs one writer at a time
//! and a busy client waits for the lock.

use std::path::Path;
use std::time::Duration;

use rusqlite::{params, Connection};

/// Whether a cas compares: the guard, and the planted mutant without it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compare {
    /// `UPDATE … WHERE value = expected`: the register's compare-and-set.
    Checked,
    /// `UPDATE …` alone: a cas that only sets (the mutant).
    Unchecked,
}

/// One client's connection to the register.
pub struct Register {
    conn: Connection,
    compare: Compare,
}

impl Register {
    /// Creates the register at `path`, holding 0.
    pub fn create(path: &Path) -> rusqlite::Result<()> {
        let conn = Connection::open(path)?;
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             CREATE TABLE register (id INTEGER PRIMARY KEY CHECK (id = 1), value INTEGER NOT NULL);
             INSERT INTO register (id, value) VALUES (1, 0);",
        )
    }

    /// A connection to the register at `path`.
    pub fn open(path: &Path, compare: Compare) -> rusqlite::Result<Register> {
        let conn = Connection::open(path)?;
        conn.busy_timeout(Duration::from_secs(30))?;
        Ok(Register { conn, compare })
    }

    pub fn read(&self) -> rusqlite::Result<u64> {
        self.conn
            .query_row("SELECT value FROM register WHERE id = 1", [], |row| {
                row.get(0)
            })
    }

    pub fn write(&self, value: u64) -> rusqlite::Result<()> {
        self.conn.execute(
            "UPDATE register SET value = ?1 WHERE id = 1",
            params![value],
        )?;
        Ok(())
    }

    /// Sets the register to `new` if it holds `expected`; whether it did.
    pub fn cas(&self, expected: u64, new: u64) -> rusqlite::Result<bool> {
        let changed = match self.compare {
            Compare::Checked => self.conn.execute(
                "UPDATE register SET value = ?1 WHERE id = 1 AND value = ?2",
                params![new, expected],
            )?,
            Compare::Unchecked => self
                .conn
                .execute("UPDATE register SET value = ?1 WHERE id = 1", params![new])?,
        };
        Ok(changed == 1)
    }
}
