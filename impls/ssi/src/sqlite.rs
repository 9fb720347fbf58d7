//! SQLite as an engine that claims serializable transactions: it gets them by locking, not by
//! SSI. The database is a file in WAL mode with one connection a transaction: a transaction's
//! snapshot is taken at its first read (so its `Begin` reads the table, as PostgreSQL's takes
//! it at `SELECT 1`), readers never block, one writer at a time holds the write lock, and a
//! transaction whose snapshot is older than the last commit cannot write
//! (`SQLITE_BUSY_SNAPSHOT`). Every connection runs with no busy timeout, so a step that would
//! wait for the write lock fails at once (`SQLITE_BUSY`) and its transaction aborts.
//!
//! The same table and version log as PostgreSQL's tier (`postgres.rs`): `kv (k, page, v, w)`,
//! `w` the writer of a row's version returned with every read, and triggers that append each
//! new version to `kv_versions (k, w, prev)` inside the writing transaction.

use std::collections::BTreeMap;
use std::path::PathBuf;

use loadbearing_impls::servers::sqlite::remove_database;
use rusqlite::{Connection, ErrorCode, OptionalExtension};

use crate::engine::{CommitStep, Layout};
use crate::interleave::{self, Drivable, EveryInterleaving};
use crate::program::{Change, Observed, Plan, Row, Script};
use crate::race::{Run, VersionRow};
use crate::record::ReadLog;
use crate::sql;
use crate::tier::{run_all, Conn, Scenario, Schedule};
use loadbearing_workload::workload::Workload;

/// The store's name in a workload's results.
pub const STORE: &str = "sqlite (serializable by locking)";

/// Why the database could not be used (not a refused transaction: that is an outcome).
#[derive(Debug, thiserror::Error)]
#[error("SQLite: {what}: {source}")]
pub struct SqliteTierError {
    what: &'static str,
    #[source]
    source: rusqlite::Error,
}

fn failed(what: &'static str) -> impl Fn(rusqlite::Error) -> SqliteTierError {
    move |source| SqliteTierError { what, source }
}

/// A step SQLite refused, as the tier tallies it: `SQLITE_BUSY_SNAPSHOT`, `SQLITE_BUSY`, …
#[derive(Debug, thiserror::Error)]
#[error("{}", label(.0))]
pub struct Refused(#[source] pub rusqlite::Error);

/// An error as the tier reports it: SQLite's (extended) result code by name.
pub fn label(e: &rusqlite::Error) -> String {
    match e {
        rusqlite::Error::SqliteFailure(f, _) => match (f.code, f.extended_code) {
            (_, 517) => "SQLITE_BUSY_SNAPSHOT".into(),
            (ErrorCode::DatabaseBusy, _) => "SQLITE_BUSY".into(),
            (ErrorCode::DatabaseLocked, _) => "SQLITE_LOCKED".into(),
            (code, extended) => format!("SQLite {code:?} ({extended})"),
        },
        other => format!("SQLite: {other}"),
    }
}

/// One transaction's connection.
struct SqliteConn<'c> {
    conn: &'c mut Connection,
    layout: Layout,
    /// Transaction t of the script: its writes carry `w = t + 1`.
    txn: usize,
    reads: &'c ReadLog,
}

impl Conn for SqliteConn<'_> {
    type Error = Refused;

    fn begin(&mut self) -> Result<(), Refused> {
        self.conn.execute_batch("BEGIN").map_err(Refused)?;
        // The snapshot is the first read's: take it here.
        self.conn
            .query_row("SELECT count(*) FROM kv", [], |r| r.get::<_, i64>(0))
            .map(|_| ())
            .map_err(Refused)
    }

    fn exec(&mut self, plan: &Plan) -> Result<Observed, Refused> {
        match plan {
            Plan::Read(k) => {
                let row: Option<(i64, i32)> = self
                    .conn
                    .query_row("SELECT v, w FROM kv WHERE k = ?1", [k], |r| {
                        Ok((r.get(0)?, r.get(1)?))
                    })
                    .optional()
                    .map_err(Refused)?;
                if let Some((v, writer)) = row {
                    self.reads.record(self.txn, k.clone(), writer, v);
                }
                Ok(Observed::Value(row.map(|(v, _)| v)))
            }
            Plan::Scan(p) => {
                let mut stmt = self
                    .conn
                    .prepare("SELECT k FROM kv WHERE page = ?1 ORDER BY k")
                    .map_err(Refused)?;
                let keys = stmt
                    .query_map([*p as i64], |r| r.get::<_, String>(0))
                    .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
                    .map_err(Refused)?;
                Ok(Observed::Rows(keys))
            }
            Plan::Write(k, v) => {
                let page = self.layout.page_of(k) as i64;
                let writer = self.txn as i64 + 1;
                self.conn
                    .execute(
                        "INSERT INTO kv (k, page, v, w) VALUES (?1, ?2, ?3, ?4) \
                         ON CONFLICT (k) DO UPDATE SET v = excluded.v, w = excluded.w",
                        rusqlite::params![k, page, v, writer],
                    )
                    .map(|_| Observed::Wrote(*v))
                    .map_err(Refused)
            }
            Plan::Select(pred) => {
                let mut stmt = self.conn.prepare(&sql::select(*pred)).map_err(Refused)?;
                let rows = stmt
                    .query_map([], |r| {
                        Ok(Row {
                            key: r.get(0)?,
                            value: r.get(1)?,
                            writer: r.get(2)?,
                        })
                    })
                    .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
                    .map_err(Refused)?;
                Ok(Observed::Matched(rows))
            }
            Plan::Insert(k, v) => {
                let page = self.layout.page_of(k) as i64;
                let writer = self.txn as i64 + 1;
                self.conn
                    .execute(
                        "INSERT INTO kv (k, page, v, w) VALUES (?1, ?2, ?3, ?4)",
                        rusqlite::params![k, page, v, writer],
                    )
                    .map(|_| Observed::Wrote(*v))
                    .map_err(Refused)
            }
            Plan::Update { rows, set } => {
                // As written: one UPDATE; the trigger logs each new version.
                let (sql, key) = sql::update(rows, *set, "?1", "?2", " RETURNING k, v");
                let writer = self.txn as i64 + 1;
                let mut stmt = self.conn.prepare(&sql).map_err(Refused)?;
                let change = |r: &rusqlite::Row<'_>| {
                    Ok(Change {
                        key: r.get(0)?,
                        value: Some(r.get(1)?),
                        replaced: None,
                    })
                };
                let mut changed = match key {
                    Some(k) => stmt.query_map(rusqlite::params![writer, k], change),
                    None => stmt.query_map(rusqlite::params![writer], change),
                }
                .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
                .map_err(Refused)?;
                changed.sort_by(|a, b| a.key.cmp(&b.key));
                Ok(Observed::Changed(changed))
            }
            Plan::Delete(rows) => {
                let (sql, key) = sql::delete(rows, "?1");
                let mut stmt = self.conn.prepare(&sql).map_err(Refused)?;
                let row = |r: &rusqlite::Row<'_>| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?));
                let found = match key {
                    Some(k) => stmt.query_map([k], row),
                    None => stmt.query_map([], row),
                }
                .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
                .map_err(Refused)?;
                drop(stmt);
                let writer = self.txn as i64 + 1;
                let log = sql::log_deletion(["?1", "?2", "?3"]);
                let mut keys = Vec::new();
                for (k, prev) in found {
                    self.conn
                        .execute(&log, rusqlite::params![k, writer, prev])
                        .map_err(Refused)?;
                    keys.push(k);
                }
                Ok(Observed::Changed(sql::deleted(keys)))
            }
            Plan::Skip(_) => Ok(Observed::Skipped),
        }
    }

    fn commit(&mut self, hook: &mut dyn FnMut(CommitStep)) -> Result<(), Refused> {
        hook(CommitStep::Checked);
        hook(CommitStep::Recorded);
        self.conn.execute_batch("COMMIT").map_err(Refused)
    }

    fn app_abort(&mut self) -> Result<(), Refused> {
        self.conn.execute_batch("ROLLBACK").map_err(Refused)
    }

    fn cleanup(&mut self) -> Result<(), Refused> {
        // After some errors SQLite has rolled the transaction back itself; a ROLLBACK then
        // fails, harmlessly.
        self.conn.execute_batch("ROLLBACK").map_err(Refused)
    }
}

/// A database file and its connections: one per transaction, plus one for setup.
pub struct SqliteTier {
    path: PathBuf,
    admin: Connection,
    clients: Vec<Connection>,
}

impl SqliteTier {
    /// A fresh database at `path` (an earlier one there is replaced).
    pub fn create(path: PathBuf) -> Result<SqliteTier, SqliteTierError> {
        remove_database(&path);
        let admin = Connection::open(&path).map_err(failed("open"))?;
        admin
            .execute_batch(
                "PRAGMA journal_mode = WAL; \
                 CREATE TABLE kv (k TEXT PRIMARY KEY, page INTEGER NOT NULL, \
                                  v INTEGER NOT NULL, w INTEGER NOT NULL DEFAULT 0); \
                 CREATE INDEX kv_page ON kv (page); \
                 CREATE TABLE kv_versions (id INTEGER PRIMARY KEY, k TEXT NOT NULL, w INTEGER NOT NULL, \
                                           prev INTEGER); \
                 CREATE TRIGGER kv_log_insert AFTER INSERT ON kv BEGIN \
                   INSERT INTO kv_versions (k, w, prev) VALUES (NEW.k, NEW.w, NULL); END; \
                 CREATE TRIGGER kv_log_update AFTER UPDATE ON kv BEGIN \
                   INSERT INTO kv_versions (k, w, prev) VALUES (NEW.k, NEW.w, OLD.w); END;",
            )
            .map_err(failed("create the table"))?;
        let mut tier = SqliteTier {
            path,
            admin,
            clients: Vec::new(),
        };
        tier.connections_for(3)?;
        Ok(tier)
    }

    /// A connection for each of `n` transactions (a workload for engines may have any number).
    fn connections_for(&mut self, n: usize) -> Result<(), SqliteTierError> {
        while self.clients.len() < n {
            let c = Connection::open(&self.path).map_err(failed("open a connection"))?;
            // No busy wait: a step that would wait for the write lock fails at once.
            c.busy_timeout(std::time::Duration::ZERO)
                .map_err(failed("open a connection"))?;
            self.clients.push(c);
        }
        Ok(())
    }

    /// Every interleaving of `workload`'s transactions (at most `bound`, else that many drawn
    /// with `seed`) driven step by step (store name [`STORE`]).
    pub fn every(
        &mut self,
        workload: &Workload,
        bound: usize,
        seed: u64,
    ) -> Result<EveryInterleaving, SqliteTierError> {
        interleave::every(self, STORE, workload, bound, seed)
    }

    fn reset(&mut self, script: &Script) -> Result<(), SqliteTierError> {
        let tx = self.admin.transaction().map_err(failed("reset"))?;
        tx.execute_batch("DELETE FROM kv; DELETE FROM kv_versions")
            .map_err(failed("reset"))?;
        let layout = script.layout();
        for (k, v) in script.initial() {
            if let Some(v) = v {
                tx.execute(
                    "INSERT INTO kv (k, page, v) VALUES (?1, ?2, ?3)",
                    rusqlite::params![k, layout.page_of(&k) as i64, v],
                )
                .map_err(failed("load"))?;
            }
        }
        tx.commit().map_err(failed("load"))
    }
}

impl Drivable for SqliteTier {
    type Error = SqliteTierError;

    fn run_once(
        &mut self,
        script: &Script,
        scenario: &Scenario,
        sched: &Schedule,
    ) -> Result<Run, SqliteTierError> {
        let n = script.txn_count();
        self.connections_for(n)?;
        self.reset(script)?;
        let layout = script.layout();
        let reads = ReadLog::default();
        let conns: Vec<SqliteConn<'_>> = self.clients[..n]
            .iter_mut()
            .enumerate()
            .map(|(txn, conn)| SqliteConn {
                conn,
                layout: layout.clone(),
                txn,
                reads: &reads,
            })
            .collect();
        let (results, observed) = run_all(script, scenario, sched, conns);
        Ok((results, observed, reads.into_reads()))
    }

    fn state(&mut self, script: &Script) -> Result<BTreeMap<String, Option<i64>>, Self::Error> {
        let mut state = BTreeMap::new();
        for (k, _) in script.keys() {
            let v = self
                .admin
                .query_row("SELECT v FROM kv WHERE k = ?1", [&k], |r| {
                    r.get::<_, i64>(0)
                })
                .optional()
                .map_err(failed("read the final state"))?;
            state.insert(k, v);
        }
        Ok(state)
    }

    fn versions(&mut self) -> Result<Vec<VersionRow>, Self::Error> {
        let mut stmt = self
            .admin
            .prepare("SELECT k, w, prev FROM kv_versions ORDER BY id")
            .map_err(failed("read the version log"))?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(failed("read the version log"))?;
        Ok(rows)
    }
}

impl Drop for SqliteTier {
    fn drop(&mut self) {
        remove_database(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tier(name: &str) -> SqliteTier {
        let path =
            std::env::temp_dir().join(format!("lb-ssi-sqlite-{name}-{}.db", std::process::id()));
        SqliteTier::create(path).unwrap()
    }

    /// Serializable by locking: over every interleaving, no anomaly, every history
    /// established from the writer column and the version log; the write skew pair cannot
    /// both commit where they overlap.
    #[test]
    fn every_interleaving_on_sqlite_is_serializable_and_established() {
        let mut tier = tier("every");
        for name in ["write_skew", "lost_update", "read_only"] {
            let w = loadbearing_workload::workload::named(name).unwrap();
            // read_only's three transactions have more interleavings: a sample of 200.
            let run = tier.every(&w, 200, 1).unwrap();
            let race = &run.race;
            assert_eq!(race.attempts, run.interleavings.orders.len(), "{name}");
            assert!(race.problems(&[]).is_empty(), "{name}: {race:?}");
            assert_eq!(race.serializable, race.attempts, "{name}: {race:?}");
        }
        let skew = loadbearing_workload::workload::named("write_skew").unwrap();
        let run = tier.every(&skew, 1000, 1).unwrap();
        assert!(
            run.race.outcomes.keys().any(|o| o.contains("SQLITE_BUSY")),
            "overlapping writers are refused: {:?}",
            run.race.outcomes
        );
    }
}
