//! PostgreSQL backend (the `postgres` driver), guarded or last-write-wins.
//!
//! A persist or delete is ONE statement:
//!
//! ```sql
//! INSERT INTO snapshots AS s (key, "offset", value, expires_at) VALUES (…)
//! ON CONFLICT (key) DO UPDATE SET … WHERE s."offset" <= EXCLUDED."offset" OR <s expired>
//! RETURNING 1
//! ```
//!
//! Why this is atomic at READ COMMITTED, with any number of concurrent sessions: `INSERT … ON
//! CONFLICT DO UPDATE` guarantees an insert or an update outcome. When the key exists (or a
//! concurrent insert of it commits first), PostgreSQL takes the row lock of the conflicting
//! row and evaluates the `WHERE` against the *latest committed version* of that row, not
//! against the statement's snapshot (EvalPlanQual). Two writers to one key therefore serialize
//! on the row lock, and each compares its offset with what the other committed. No read-then-
//! write window exists, so no serializable isolation is needed. A `RETURNING` row means the
//! statement wrote; no row means the condition refused it, and the stored offset is read back
//! to build the [`Conflict`].

use std::collections::HashMap;
use std::sync::Mutex;

use postgres::types::ToSql;
use postgres::{Client, NoTls, Row, Statement};

pub mod launcher;

use super::Database;
use crate::store::{
    check_offset, BackendError, CompoundGuards, Conflict, Mode, Offset, Payload, Read, ReadError,
    SnapshotStore, StoreOptions, WriteError,
};
use crate::trace::{no_trace, CompoundStep, SharedTracer, StatementOutcome, Step};

const BACKEND: &str = "postgres";

/// One PostgreSQL session (open one per concurrent writer). A lost connection is reopened on
/// the next call.
pub struct PostgresStore {
    conn_str: String,
    table: String,
    session: Mutex<Option<Session>>,
    sql: Sql,
    options: StoreOptions,
    tracer: SharedTracer,
    compound: bool,
    guards: CompoundGuards,
}

/// One connection and the statements prepared on it (by SQL text), so each statement is
/// parsed once per connection rather than on every call. A reconnect starts a new session,
/// whose statements are prepared again on first use.
struct Session {
    client: Client,
    statements: HashMap<String, Statement>,
}

impl Session {
    fn new(client: Client) -> Self {
        Session {
            client,
            statements: HashMap::new(),
        }
    }

    /// The statement for `sql`, prepared on this connection the first time it is asked for.
    fn prepared(&mut self, sql: &str) -> Result<Statement, postgres::Error> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql)?;
        self.statements.insert(sql.to_string(), statement.clone());
        Ok(statement)
    }

    fn query_opt(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, postgres::Error> {
        let statement = self.prepared(sql)?;
        self.client.query_opt(&statement, params)
    }
}

/// A row's expiry from the TTL in milliseconds (`$4`, NULL for none).
const EXPIRES: &str = "CASE WHEN $4::bigint IS NULL THEN NULL \
                       ELSE now() + $4::bigint * interval '1 millisecond' END";

/// `INSERT … ON CONFLICT (key) DO UPDATE SET <every column> <condition> RETURNING 1`, with
/// parameters `$1` key, `$2` offset, `$3` value, `$4` TTL in milliseconds.
fn upsert(t: &str, condition: &str) -> String {
    format!(
        "INSERT INTO {t} AS s (key, \"offset\", value, expires_at) VALUES ($1, $2, $3, {EXPIRES})
         ON CONFLICT (key) DO UPDATE SET \"offset\" = EXCLUDED.\"offset\",
             value = EXCLUDED.value, expires_at = EXCLUDED.expires_at
         {condition}
         RETURNING 1"
    )
}

/// Every statement a store sends, built once per store: the table name, the mode and the
/// compound's guards are fixed when it is set up.
struct Sql {
    /// The single-statement write: the conditional upsert, or the blind one (last write wins).
    write: String,
    /// The stored offset of the key's row, if it has not expired.
    live_offset: String,
    /// The stored offset of the key's row, expired or not.
    offset: String,
    /// Offset, value, and whether the row has expired.
    read: String,
    /// Remove the row, returning its offset.
    reap: String,
    /// The compound's `Update1` / `RetryUpdate`.
    update: String,
    /// The compound's `Insert`.
    insert: String,
    /// The hard-delete mutant: lock the live row and read its offset …
    lock_live_offset: String,
    /// … then remove it if the guard lets the delete through.
    hard_delete: String,
}

impl Sql {
    fn new(t: &str, mode: Mode, guards: CompoundGuards) -> Self {
        let write = match mode {
            Mode::Guarded | Mode::HardDelete => upsert(
                t,
                "WHERE s.\"offset\" <= EXCLUDED.\"offset\" OR s.expires_at <= now()",
            ),
            Mode::LastWriteWins => upsert(t, ""),
        };
        // Without IF NOT EXISTS (the mutant) the insert lands on any row.
        let only_if_absent = if guards.insert_if_not_exists {
            "WHERE s.expires_at <= now()"
        } else {
            ""
        };
        Sql {
            write,
            live_offset: format!(
                "SELECT \"offset\" FROM {t} WHERE key = $1 AND (expires_at IS NULL OR expires_at > now())"
            ),
            offset: format!("SELECT \"offset\" FROM {t} WHERE key = $1"),
            read: format!(
                "SELECT \"offset\", value, expires_at IS NOT NULL AND expires_at <= now()
                 FROM {t} WHERE key = $1"
            ),
            reap: format!("DELETE FROM {t} WHERE key = $1 RETURNING \"offset\""),
            update: format!(
                "UPDATE {t} SET
                     value = CASE WHEN \"offset\" <= $2 THEN $3 ELSE value END,
                     expires_at = CASE WHEN \"offset\" <= $2 THEN {EXPIRES} ELSE expires_at END,
                     \"offset\" = CASE WHEN \"offset\" <= $2 THEN $2 ELSE \"offset\" END
                 WHERE key = $1 AND (expires_at IS NULL OR expires_at > now())
                 RETURNING \"offset\""
            ),
            insert: upsert(t, only_if_absent),
            lock_live_offset: format!(
                "SELECT \"offset\" FROM {t} WHERE key = $1
                   AND (expires_at IS NULL OR expires_at > now()) FOR UPDATE"
            ),
            hard_delete: format!(
                "DELETE FROM {t} WHERE key = $1
                   AND (\"offset\" <= $2 OR expires_at <= now())"
            ),
        }
    }
}

impl PostgresStore {
    /// Connect and create the table if needed. `table` must be a plain SQL identifier.
    pub fn connect(
        conn_str: &str,
        table: &str,
        options: StoreOptions,
    ) -> Result<Self, BackendError> {
        Self::connect_traced(conn_str, table, options, no_trace())
    }

    pub fn connect_traced(
        conn_str: &str,
        table: &str,
        options: StoreOptions,
        tracer: SharedTracer,
    ) -> Result<Self, BackendError> {
        if table.is_empty() || !table.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(BackendError::NotAnIdentifier(table.to_string()));
        }
        let setup = BackendError::while_::<postgres::Error>;
        let mut client = Client::connect(conn_str, NoTls).map_err(setup("connecting"))?;
        // Concurrent `CREATE TABLE IF NOT EXISTS` can collide in the catalog: serialize them.
        let mut tx = client.transaction().map_err(setup("creating the table"))?;
        tx.execute("SELECT pg_advisory_xact_lock(7320732)", &[])
            .map_err(setup("creating the table"))?;
        tx.batch_execute(&format!(
            "CREATE TABLE IF NOT EXISTS {table} (
                key text PRIMARY KEY,
                \"offset\" bigint NOT NULL,
                value bytea,
                expires_at timestamptz
            )"
        ))
        .map_err(setup("creating the table"))?;
        tx.commit().map_err(setup("creating the table"))?;
        Ok(PostgresStore {
            conn_str: conn_str.to_string(),
            table: table.to_string(),
            session: Mutex::new(Some(Session::new(client))),
            sql: Sql::new(table, options.mode, CompoundGuards::default()),
            options,
            tracer,
            compound: false,
            guards: CompoundGuards::default(),
        })
    }

    /// Write guarded keys with Cassandra's three-statement first-write compound instead of the
    /// single upsert (docs/models/casfirstwrite.md, `CasFirstWrite`), so the non-atomic first write runs on a
    /// real database here too. Each statement is atomic on its own, like one LWT:
    ///
    /// - `Update1` / `RetryUpdate`: `UPDATE … SET "offset" = CASE WHEN "offset" <= $o THEN $o
    ///   ELSE "offset" END, … WHERE key = $k AND <not expired> RETURNING "offset"`: no row → the
    ///   row is absent; the returned offset equals `$o` → applied (the row lock makes the
    ///   compare and the write one step, evaluated on the latest version at READ COMMITTED);
    ///   otherwise refused, and the returned offset is the stored one.
    /// - `Insert`: `INSERT … ON CONFLICT (key) DO UPDATE … WHERE <existing row expired>
    ///   RETURNING 1`: an `IF NOT EXISTS` for which an expired row counts as absent.
    pub fn compound(mut self, on: bool) -> Self {
        self.compound = on;
        self
    }

    /// The compound with some of its guards off (planted mutants; see [`CompoundGuards`]).
    pub fn compound_guards(mut self, guards: CompoundGuards) -> Self {
        self.guards = guards;
        self.sql = Sql::new(&self.table, self.options.mode, guards);
        self
    }

    /// Remove the key's row now, as a TTL expiry would (the model's `ReapRow`), and report it.
    /// Returns whether there was a row.
    pub fn reap(&self, key: &str) -> Result<bool, BackendError> {
        let removed = self
            .with_client(|c| c.query_opt(&self.sql.reap, &[&key]))
            .map_err(|e| BackendError::Database {
                what: "reaping",
                reason: format!("{key}: {e:?}"),
            })?;
        if let Some(row) = &removed {
            self.tracer.step(&Step::ReapRow {
                backend: BACKEND,
                key: key.to_string(),
                offset: row.get::<_, i64>(0) as Offset,
            });
        }
        Ok(removed.is_some())
    }

    fn ttl_millis(&self) -> Option<i64> {
        self.options.ttl.map(|t| t.as_millis() as i64)
    }

    /// Run `f` on the session, reconnecting first if the last call lost it. `Err(None)` means
    /// no connection could be made (nothing was sent).
    fn with_client<T>(
        &self,
        f: impl FnOnce(&mut Session) -> Result<T, postgres::Error>,
    ) -> Result<T, Option<postgres::Error>> {
        let mut guard = self.session.lock().unwrap_or_else(|e| e.into_inner());
        if guard.as_ref().is_none_or(|s| s.client.is_closed()) {
            *guard = Some(Session::new(
                Client::connect(&self.conn_str, NoTls).map_err(|_| None)?,
            ));
        }
        let session = guard.as_mut().expect("connected above");
        let result = f(session);
        if let Err(e) = &result {
            if e.as_db_error().is_none() {
                // An I/O or protocol failure: this session is gone.
                *guard = None;
            }
        }
        result.map_err(Some)
    }

    /// Map a failed statement to the store's outcome.
    fn failure(key: &str, offset: Offset, e: Option<postgres::Error>) -> WriteError {
        let (key, attempted) = (key.to_string(), offset);
        match e {
            None => WriteError::Failed {
                key,
                attempted,
                reason: "no connection to PostgreSQL".into(),
            },
            Some(e) if refused_before_commit(&e) => WriteError::Failed {
                key,
                attempted,
                reason: e.to_string(),
            },
            Some(e) => WriteError::Indeterminate {
                key,
                attempted,
                reason: format!("connection lost with the statement in flight: {e}"),
            },
        }
    }

    /// One statement of the compound, reported under `action`.
    fn compound_statement(
        &self,
        action: CompoundStep,
        key: &str,
        offset: Offset,
        payload: Payload<'_>,
        sql: &str,
        insert: bool,
    ) -> Result<StatementOutcome, WriteError> {
        let signed = offset as i64;
        let value = payload.bytes();
        let ttl = self.ttl_millis();
        let result = self.with_client(|c| {
            let row = c.query_opt(sql, &[&key, &signed, &value, &ttl])?;
            if row.is_none() && insert {
                // The insert found a live row. Its offset, read right after (informational: a
                // concurrent writer may have moved it on; 0 if it expired meanwhile).
                let stored = c.query_opt(&self.sql.offset, &[&key])?;
                return Ok(Some((false, stored.map_or(0, |r| r.get::<_, i64>(0)))));
            }
            Ok(row.map(|r| {
                if insert {
                    (true, signed)
                } else {
                    (false, r.get::<_, i64>(0))
                }
            }))
        });
        let outcome = match &result {
            Ok(Some((false, stored))) if insert => Ok(StatementOutcome::NotApplied {
                stored: *stored as u64,
            }),
            Ok(None) => Ok(StatementOutcome::RowAbsent),
            Ok(Some(_)) if insert => Ok(StatementOutcome::Applied),
            Ok(Some((_, stored))) => {
                let stored = *stored;
                Ok(if stored == signed {
                    StatementOutcome::Applied
                } else {
                    StatementOutcome::NotApplied {
                        stored: stored as u64,
                    }
                })
            }
            Err(_) => Err(()),
        };
        let (reported, returned) = match outcome {
            Ok(o) => (o.clone(), Ok(o)),
            Err(()) => {
                let e = Self::failure(key, offset, result.err().flatten());
                (StatementOutcome::from(&Err(e.clone())), Err(e))
            }
        };
        self.tracer
            .step(&action.step(BACKEND, key.to_string(), offset, payload.kind(), reported));
        returned
    }

    fn write_compound(
        &self,
        key: &str,
        offset: Offset,
        payload: Payload<'_>,
    ) -> Result<(), WriteError> {
        let (update, insert) = (&self.sql.update, &self.sql.insert);
        let conflict = |stored: u64| {
            Err(WriteError::Conflict(Conflict {
                key: key.to_string(),
                attempted: offset,
                stored,
            }))
        };
        match self.compound_statement(CompoundStep::Update1, key, offset, payload, update, false)? {
            StatementOutcome::Applied => return Ok(()),
            StatementOutcome::NotApplied { stored } => return conflict(stored),
            _ => {}
        }
        match self.compound_statement(CompoundStep::Insert, key, offset, payload, insert, true)? {
            StatementOutcome::Applied => return Ok(()),
            // Without the retry (the mutant) a lost insert race is reported as a conflict.
            StatementOutcome::NotApplied { stored } if !self.guards.retry => {
                return conflict(stored)
            }
            _ => {}
        }
        match self.compound_statement(
            CompoundStep::RetryUpdate,
            key,
            offset,
            payload,
            update,
            false,
        )? {
            StatementOutcome::Applied => Ok(()),
            StatementOutcome::NotApplied { stored } => conflict(stored),
            _ => Err(WriteError::Failed {
                key: key.to_string(),
                attempted: offset,
                reason: "the row vanished between the lost insert race and the retry (expired): \
                         a spurious conflict, nothing was written"
                    .into(),
            }),
        }
    }

    fn write(&self, key: &str, offset: Offset, payload: Payload<'_>) -> Result<(), WriteError> {
        let signed = check_offset(key, offset)?;
        if self.options.mode == Mode::HardDelete && payload == Payload::Tombstone {
            return self.hard_delete(key, offset, signed);
        }
        if self.compound && self.options.mode == Mode::Guarded {
            return self.write_compound(key, offset, payload);
        }
        let sql = &self.sql.write;
        let ttl = self.ttl_millis();
        let value = payload.bytes();
        let mut outcome = None;
        // A refused write whose refusing row expired (or vanished) by the time it is read back
        // is tried again: the row is absent now, so the next attempt decides cleanly.
        for _ in 0..5 {
            let attempt = self.with_client(|c| {
                let wrote = c.query_opt(sql, &[&key, &signed, &value, &ttl])?;
                if wrote.is_some() {
                    return Ok(None);
                }
                let stored = c.query_opt(&self.sql.live_offset, &[&key])?;
                Ok(Some(stored.map(|r| r.get::<_, i64>(0))))
            });
            let result = match attempt {
                Ok(None) => Ok(()),
                Ok(Some(Some(stored))) if stored as u64 > offset => {
                    Err(WriteError::Conflict(Conflict {
                        key: key.to_string(),
                        attempted: offset,
                        stored: stored as u64,
                    }))
                }
                Ok(Some(_)) => continue,
                Err(e) => Err(Self::failure(key, offset, e)),
            };
            outcome = Some(result);
            break;
        }
        let outcome = outcome.unwrap_or_else(|| {
            Err(WriteError::Failed {
                key: key.to_string(),
                attempted: offset,
                reason: "refused five times by a row that was gone when read back".into(),
            })
        });
        self.tracer.step(&Step::Persist {
            backend: BACKEND,
            key: key.to_string(),
            offset,
            kind: payload.kind(),
            outcome: StatementOutcome::from(&outcome),
        });
        outcome
    }

    /// The [`Mode::HardDelete`] mutant's delete: in one transaction, read the row (locked) and
    /// remove it if the guard lets the write through; the `DELETE` repeats the condition, so a
    /// row inserted after the read is never removed against the guard. Deleting an absent row
    /// is a no-op that applies.
    fn hard_delete(&self, key: &str, offset: Offset, signed: i64) -> Result<(), WriteError> {
        let attempt = self.with_client(|c| {
            let lock = c.prepared(&self.sql.lock_live_offset)?;
            let delete = c.prepared(&self.sql.hard_delete)?;
            let mut tx = c.client.transaction()?;
            let stored = tx.query_opt(&lock, &[&key])?;
            let stored = stored.map(|r| r.get::<_, i64>(0));
            if stored.is_none_or(|s| s <= signed) {
                tx.execute(&delete, &[&key, &signed])?;
            }
            tx.commit()?;
            Ok(stored)
        });
        let outcome = match attempt {
            Ok(Some(stored)) if stored > signed => Err(WriteError::Conflict(Conflict {
                key: key.to_string(),
                attempted: offset,
                stored: stored as u64,
            })),
            Ok(_) => Ok(()),
            Err(e) => Err(Self::failure(key, offset, e)),
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

/// Did the server refuse the statement with an ordinary ERROR (its autocommit transaction
/// rolled back, so nothing was written)? A FATAL or PANIC (the session or server is going away,
/// e.g. 57P01 admin shutdown, 57P02 crash shutdown) and every I/O failure are treated as unknown
/// outcomes instead: conservative, never reported as "not applied" on a guess.
fn refused_before_commit(e: &postgres::Error) -> bool {
    match e.as_db_error() {
        Some(db) => {
            db.severity() == "ERROR"
                && !db.code().code().starts_with("57P")
                && !db.code().code().starts_with("08")
        }
        None => false,
    }
}

impl SnapshotStore for PostgresStore {
    fn read(&self, key: &str) -> Result<Read, ReadError> {
        let row = self
            .with_client(|c| c.query_opt(&self.sql.read, &[&key]))
            .map_err(|e| ReadError {
                key: key.to_string(),
                reason: e.map_or("no connection to PostgreSQL".into(), |e| e.to_string()),
            })?;
        Ok(match row {
            None => Read::Absent,
            Some(r) => {
                let offset = r.get::<_, i64>(0) as u64;
                let value: Option<Vec<u8>> = r.get(1);
                let expired: bool = r.get(2);
                match (expired, value) {
                    (true, _) => {
                        self.tracer.step(&Step::ReapRow {
                            backend: BACKEND,
                            key: key.to_string(),
                            offset,
                        });
                        Read::Absent
                    }
                    (false, Some(value)) => Read::Live { offset, value },
                    (false, None) => Read::Tombstone { offset },
                }
            }
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

/// PostgreSQL at a connection string, one table: each session its own connection, the guarded
/// first write as one upsert or (`compound`) as Cassandra's three statements.
pub struct PostgresAt {
    pub conn: String,
    pub table: String,
    pub compound: bool,
    /// The compound's guards (turning one off is a planted mutant).
    pub guards: CompoundGuards,
}

impl PostgresAt {
    /// The `snapshots` table on the server of the test harness's local clusters listening on
    /// `port` of loopback.
    pub fn local(port: u16) -> PostgresAt {
        PostgresAt {
            conn: format!(
                "host=127.0.0.1 port={port} user=postgres dbname=postgres connect_timeout=5"
            ),
            table: "snapshots".to_string(),
            compound: false,
            guards: CompoundGuards::default(),
        }
    }
}

impl Database for PostgresAt {
    fn backend(&self) -> super::StoreBackend {
        super::StoreBackend::Postgres
    }
    fn session(
        &self,
        options: StoreOptions,
        tracer: SharedTracer,
    ) -> Result<Box<dyn SnapshotStore>, BackendError> {
        let store = PostgresStore::connect_traced(&self.conn, &self.table, options, tracer)?;
        Ok(Box::new(
            store.compound(self.compound).compound_guards(self.guards),
        ))
    }
}
