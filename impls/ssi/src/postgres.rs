//! PostgreSQL at SERIALIZABLE as a second opinion: the tier's scenarios on real SSI (Ports and
//! Grittner, VLDB 2012), on the throwaway cluster of `loadbearing_impls::servers::postgres::launcher`.
//!
//! One table `kv (k text primary key, page int, v bigint, w int)` with an index on `page`; every
//! connection runs with `enable_seqscan = off`, so a read of a key takes a predicate lock on
//! its index entry (or gap) and a scan of a page one on the `page` index range — the nearest
//! thing to the engine's page markers; a sequential scan would lock the whole relation.
//!
//! Steps map as follows: `Begin` is `BEGIN ISOLATION LEVEL SERIALIZABLE` plus `SELECT 1` (the
//! snapshot is taken at the first statement), a read `SELECT v … WHERE k = $1`, a scan
//! `SELECT k … WHERE page = $1`, a write an upsert; CHECK and the commit record are no-ops and
//! END is `COMMIT` (PostgreSQL's commit is one step: there is no window to place a write in,
//! so the trigger's T2 writes after T1's last statement and before its `COMMIT`); `AppAbort`
//! is `ROLLBACK`, cleanup a `ROLLBACK` of whatever is left.
//!
//! A workload's every interleaving ([`PgTier::every`]) runs at either level: SERIALIZABLE
//! (PostgreSQL's SSI) or REPEATABLE READ (its snapshot isolation), [`Level`].
//!
//! For classifying a workload's runs the store itself says who wrote what:
//! `w` is the writer of a row's version (0: the loaded data, t+1: transaction t), returned with
//! every read, and a trigger appends each new version to `kv_versions (k, w, prev)` inside the
//! writing transaction, so the committed rows of that log chain every key's versions in order.
//! Neither adds a read to any transaction: PostgreSQL's predicate locks are those of the
//! statements above.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use postgres::{Client, NoTls};

use crate::engine::{CommitStep, Layout};
use loadbearing_workload::workload::Workload;

use crate::interleave::{self, Drivable, EveryInterleaving};
use crate::program::{script, Change, Observed, Outcome, Plan, Row, Script};
use crate::race::{Run, VersionRow};
use crate::record::ReadLog;
use crate::sql;
use crate::tier::{attempt_seed, run_all, Conn, Scenario, Schedule, Tally, Waiting};

pub use loadbearing_impls::servers::postgres::launcher::{PgServer, PgServerError};

/// Why the tier's cluster could not be used (not a refused transaction: that is an outcome).
#[derive(Debug, thiserror::Error)]
pub enum PgTierError {
    #[error("connect: {0}")]
    Connect(#[source] postgres::Error),
    #[error("session setup: {0}")]
    SessionSetup(#[source] postgres::Error),
    #[error("create table: {0}")]
    CreateTable(#[source] postgres::Error),
    #[error("resetting the table: {0}")]
    Reset(#[source] postgres::Error),
    #[error("reading the final state: {0}")]
    ReadState(#[source] postgres::Error),
    #[error("reading the version log: {0}")]
    ReadVersions(#[source] postgres::Error),
}

/// A step PostgreSQL refused, shown as the tier tallies it: [`label`].
#[derive(Debug, thiserror::Error)]
#[error("{}", label(.0))]
pub struct Refused(#[source] pub postgres::Error);

/// An error as the tier reports it: SQLSTATE and the reason, shortened.
pub fn label(e: &postgres::Error) -> String {
    let Some(db) = e.as_db_error() else {
        return format!("connection: {e}");
    };
    let code = db.code().code();
    let msg = db.message();
    if msg.contains("read/write dependencies") {
        format!("{code} rw-dependencies")
    } else if msg.contains("concurrent update") {
        format!("{code} concurrent update")
    } else {
        format!("{code} {msg}")
    }
}

fn connect(conn_str: &str) -> Result<Client, PgTierError> {
    let mut c = Client::connect(conn_str, NoTls).map_err(PgTierError::Connect)?;
    c.batch_execute("SET enable_seqscan = off; SET client_min_messages = error")
        .map_err(PgTierError::SessionSetup)?;
    Ok(c)
}

/// The level a tier's transactions begin at. On PostgreSQL: SERIALIZABLE is serializable
/// snapshot isolation (it promises serializable histories); REPEATABLE READ is snapshot
/// isolation (it admits write skew and refuses lost updates: first committer wins); READ
/// COMMITTED, its default, takes a snapshot per statement, and a write waits for a row's
/// writer and then applies to the row as committed, so lost updates, read skew and write skew
/// commit.
pub use crate::level::Level;

/// The store's name at `level` in a workload's results.
pub fn store(level: Level) -> &'static str {
    match level {
        Level::Serializable => "postgres (SERIALIZABLE)",
        Level::RepeatableRead => "postgres (REPEATABLE READ)",
        Level::ReadCommitted => "postgres (READ COMMITTED)",
    }
}

/// `BEGIN` at `level`, and the first statement, which takes the snapshot.
fn begin_at(level: Level) -> String {
    format!("BEGIN ISOLATION LEVEL {}; SELECT 1", level.sql())
}

/// One transaction's connection.
pub struct PgConn<'c> {
    client: &'c mut Client,
    layout: Layout,
    /// Transaction t of the script: its writes carry `w = t + 1`.
    txn: usize,
    reads: &'c ReadLog,
    level: Level,
}

impl Conn for PgConn<'_> {
    type Error = Refused;

    fn begin(&mut self) -> Result<(), Refused> {
        self.client
            .batch_execute(&begin_at(self.level))
            .map_err(Refused)
    }

    fn exec(&mut self, plan: &Plan) -> Result<Observed, Refused> {
        match plan {
            Plan::Read(k) => {
                let row = self
                    .client
                    .query_opt("SELECT v, w FROM kv WHERE k = $1", &[k])
                    .map_err(Refused)?;
                if let Some(r) = &row {
                    self.reads.record(self.txn, k.clone(), r.get(1), r.get(0));
                }
                Ok(Observed::Value(row.map(|r| r.get::<_, i64>(0))))
            }
            Plan::Scan(p) => self
                .client
                .query(
                    "SELECT k FROM kv WHERE page = $1 ORDER BY k",
                    &[&(*p as i32)],
                )
                .map(|rows| Observed::Rows(rows.iter().map(|r| r.get::<_, String>(0)).collect()))
                .map_err(Refused),
            Plan::Write(k, v) => {
                let page = self.layout.page_of(k) as i32;
                let writer = self.txn as i32 + 1;
                self.client
                    .execute(
                        "INSERT INTO kv (k, page, v, w) VALUES ($1, $2, $3, $4) \
                         ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v, w = EXCLUDED.w",
                        &[k, &page, v, &writer],
                    )
                    .map(|_| Observed::Wrote(*v))
                    .map_err(Refused)
            }
            Plan::Select(pred) => self
                .client
                .query(&sql::select(*pred), &[])
                .map(|rows| {
                    Observed::Matched(
                        rows.iter()
                            .map(|r| Row {
                                key: r.get(0),
                                value: r.get(1),
                                writer: r.get(2),
                            })
                            .collect(),
                    )
                })
                .map_err(Refused),
            Plan::Insert(k, v) => {
                let page = self.layout.page_of(k) as i32;
                let writer = self.txn as i32 + 1;
                self.client
                    .execute(
                        "INSERT INTO kv (k, page, v, w) VALUES ($1, $2, $3, $4)",
                        &[k, &page, v, &writer],
                    )
                    .map(|_| Observed::Wrote(*v))
                    .map_err(Refused)
            }
            Plan::Update { rows, set } => {
                // As written: one UPDATE; the trigger logs each new version.
                let (sql, key) = sql::update(rows, *set, "$1", "$2", " RETURNING k, v");
                let writer = self.txn as i32 + 1;
                let found = match key {
                    Some(k) => self.client.query(&sql, &[&writer, &k]),
                    None => self.client.query(&sql, &[&writer]),
                }
                .map_err(Refused)?;
                let mut changed: Vec<Change> = found
                    .iter()
                    .map(|r| Change {
                        key: r.get(0),
                        value: Some(r.get(1)),
                        replaced: None,
                    })
                    .collect();
                changed.sort_by(|a, b| a.key.cmp(&b.key));
                Ok(Observed::Changed(changed))
            }
            Plan::Delete(rows) => {
                let (sql, key) = sql::delete(rows, "$1");
                let found = match key {
                    Some(k) => self.client.query(&sql, &[&k]),
                    None => self.client.query(&sql, &[]),
                }
                .map_err(Refused)?;
                let writer = self.txn as i32 + 1;
                let log = sql::log_deletion(["$1", "$2", "$3"]);
                let mut keys = Vec::new();
                for r in &found {
                    let (k, prev): (String, i32) = (r.get(0), r.get(1));
                    self.client
                        .execute(&log, &[&k, &writer, &prev])
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
        self.client.batch_execute("COMMIT").map_err(Refused)
    }

    fn app_abort(&mut self) -> Result<(), Refused> {
        self.client.batch_execute("ROLLBACK").map_err(Refused)
    }

    fn cleanup(&mut self) -> Result<(), Refused> {
        // After a failed statement the transaction is aborted but open; after a failed COMMIT
        // or a ROLLBACK there is none (ROLLBACK then only warns).
        self.client.batch_execute("ROLLBACK").map_err(Refused)
    }
}

/// A cluster's connections for the tier: one per transaction, plus one for setup, and one the
/// schedule asks who waits for a lock.
pub struct PgTier {
    conn_str: String,
    admin: Client,
    clients: Vec<Client>,
    level: Level,
    waiting: Arc<PgWaiting>,
}

/// Who of the tier's transactions waits for a lock, as PostgreSQL says
/// (`pg_blocking_pids`): a step is blocked the moment it is, not after a timeout.
struct PgWaiting {
    monitor: Mutex<Client>,
    /// Each transaction's connection's backend.
    pids: Vec<i32>,
}

impl PgWaiting {
    /// A monitor connection of its own, asking about `clients`' backends.
    fn of(conn_str: &str, clients: &mut [Client]) -> Result<PgWaiting, PgTierError> {
        let pids = clients
            .iter_mut()
            .map(|c| {
                c.query_one("SELECT pg_backend_pid()", &[])
                    .map(|r| r.get(0))
            })
            .collect::<Result<_, _>>()
            .map_err(PgTierError::SessionSetup)?;
        Ok(PgWaiting {
            monitor: Mutex::new(connect(conn_str)?),
            pids,
        })
    }
}

impl Waiting for PgWaiting {
    fn is_waiting(&self, t: usize) -> bool {
        let Some(&pid) = self.pids.get(t) else {
            return false;
        };
        let mut monitor = self.monitor.lock().unwrap_or_else(|e| e.into_inner());
        // An error is no answer: the schedule's own patience decides then.
        monitor
            .query_one("SELECT cardinality(pg_blocking_pids($1)) > 0", &[&pid])
            .map(|row| row.get::<_, bool>(0))
            .unwrap_or(false)
    }
}

impl PgTier {
    pub fn connect(conn_str: &str) -> Result<PgTier, PgTierError> {
        let mut admin = connect(conn_str)?;
        admin
            .batch_execute(
                "DROP TABLE IF EXISTS kv; DROP TABLE IF EXISTS kv_versions; \
                 CREATE TABLE kv (k text PRIMARY KEY, page int NOT NULL, v bigint NOT NULL, \
                                  w int NOT NULL DEFAULT 0); \
                 CREATE INDEX kv_page ON kv (page); \
                 CREATE TABLE kv_versions (id bigserial, k text NOT NULL, w int NOT NULL, prev int); \
                 CREATE OR REPLACE FUNCTION kv_log_version() RETURNS trigger AS $$ \
                 BEGIN \
                   INSERT INTO kv_versions (k, w, prev) \
                   VALUES (NEW.k, NEW.w, CASE WHEN TG_OP = 'UPDATE' THEN OLD.w END); \
                   RETURN NULL; \
                 END $$ LANGUAGE plpgsql; \
                 CREATE TRIGGER kv_log_version AFTER INSERT OR UPDATE ON kv \
                   FOR EACH ROW EXECUTE FUNCTION kv_log_version();",
            )
            .map_err(PgTierError::CreateTable)?;
        let mut clients: Vec<Client> = (0..3)
            .map(|_| connect(conn_str))
            .collect::<Result<_, _>>()?;
        let waiting = Arc::new(PgWaiting::of(conn_str, &mut clients)?);
        Ok(PgTier {
            conn_str: conn_str.to_string(),
            admin,
            clients,
            level: Level::Serializable,
            waiting,
        })
    }

    /// A connection for each of `n` transactions (a workload for engines may have any number),
    /// opened the first time a workload has that many, and a monitor that knows them all.
    fn connections_for(&mut self, n: usize) -> Result<(), PgTierError> {
        if self.clients.len() >= n {
            return Ok(());
        }
        while self.clients.len() < n {
            self.clients.push(connect(&self.conn_str)?);
        }
        self.waiting = Arc::new(PgWaiting::of(&self.conn_str, &mut self.clients)?);
        Ok(())
    }

    fn reset(&mut self, script: &Script) -> Result<(), PgTierError> {
        let mut tx = self.admin.transaction().map_err(PgTierError::Reset)?;
        tx.batch_execute("DELETE FROM kv; DELETE FROM kv_versions")
            .map_err(PgTierError::Reset)?;
        let layout = script.layout();
        for (k, v) in script.initial() {
            if let Some(v) = v {
                tx.execute(
                    "INSERT INTO kv (k, page, v) VALUES ($1, $2, $3)",
                    &[&k, &(layout.page_of(&k) as i32), &v],
                )
                .map_err(PgTierError::Reset)?;
            }
        }
        tx.commit().map_err(PgTierError::Reset)
    }

    /// One attempt of `scenario`: the judged outcome and the waits that timed out.
    pub fn attempt(
        &mut self,
        scenario: &Scenario,
        seed: u64,
        jitter_us: u64,
    ) -> Result<(Outcome, usize), PgTierError> {
        let script = script(scenario.script).expect("scenarios name known scripts");
        let sched = Schedule::new(
            scenario.waits.clone(),
            Duration::from_secs(20),
            jitter_us,
            seed,
        );
        let (results, observed, _) = self.run_once(&script, scenario, &sched)?;
        let state = self.state(&script)?;
        Ok((
            Outcome::judge(&script, results, observed, state),
            sched.timeouts(),
        ))
    }

    /// The same connections, their transactions at `level` from now on.
    pub fn at(mut self, level: Level) -> PgTier {
        self.level = level;
        self
    }

    /// Every interleaving of `workload`'s transactions (at most `bound`, else that many drawn
    /// with `seed`) driven step by step at `level` (store name [`store`]).
    pub fn every(
        &mut self,
        workload: &Workload,
        level: Level,
        bound: usize,
        seed: u64,
    ) -> Result<EveryInterleaving, PgTierError> {
        self.level = level;
        interleave::every(self, store(level), workload, bound, seed)
    }

    /// `attempts` attempts of `scenario`, tallied under the store name `postgres`.
    pub fn run(
        &mut self,
        scenario: &Scenario,
        attempts: usize,
        jitter_us: u64,
    ) -> Result<Tally, PgTierError> {
        let mut tally = Tally::new(scenario.name, "postgres");
        for i in 0..attempts {
            let (outcome, timeouts) = self.attempt(scenario, attempt_seed(i), jitter_us)?;
            tally.add(&outcome, || {
                format!("{}; final {}", outcome.summary(), outcome.state_text())
            });
            tally.timeouts += timeouts;
        }
        Ok(tally)
    }
}

/// The store the interleavings (and the tier's attempts) run on: a freshly loaded table, a
/// connection a transaction, the writer column and the version log.
impl Drivable for PgTier {
    type Error = PgTierError;

    fn state(&mut self, script: &Script) -> Result<BTreeMap<String, Option<i64>>, PgTierError> {
        let mut state = BTreeMap::new();
        for (k, _) in script.keys() {
            let v = self
                .admin
                .query_opt("SELECT v FROM kv WHERE k = $1", &[&k])
                .map_err(PgTierError::ReadState)?
                .map(|r| r.get::<_, i64>(0));
            state.insert(k, v);
        }
        Ok(state)
    }

    fn run_once(
        &mut self,
        script: &Script,
        scenario: &Scenario,
        sched: &Schedule,
    ) -> Result<Run, PgTierError> {
        let n = script.txn_count();
        self.connections_for(n)?;
        self.reset(script)?;
        sched.ask(Arc::clone(&self.waiting) as Arc<dyn Waiting>);
        let layout = script.layout();
        let reads = ReadLog::default();
        let conns: Vec<PgConn<'_>> = self.clients[..n]
            .iter_mut()
            .enumerate()
            .map(|(txn, client)| PgConn {
                client,
                layout: layout.clone(),
                txn,
                reads: &reads,
                level: self.level,
            })
            .collect();
        let (results, observed) = run_all(script, scenario, sched, conns);
        Ok((results, observed, reads.into_reads()))
    }

    fn versions(&mut self) -> Result<Vec<VersionRow>, PgTierError> {
        Ok(self
            .admin
            .query("SELECT k, w, prev FROM kv_versions ORDER BY id", &[])
            .map_err(PgTierError::ReadVersions)?
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect())
    }
}
