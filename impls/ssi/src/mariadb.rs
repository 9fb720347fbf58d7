//! MariaDB (InnoDB) as an engine under a workload's interleavings, at READ COMMITTED,
//! REPEATABLE READ (its default) and SERIALIZABLE, on a throwaway server of Debian's
//! `mariadb-server` ([`MariaServer`]: `mariadb-install-db` into a fresh folder, `mariadbd` on a
//! free loopback port, removed by its guardian when the process exits).
//!
//! One InnoDB table `kv (k varchar primary key, page int, v bigint, w int)`. Steps are what a
//! person writes for InnoDB: `Begin` is `SET TRANSACTION ISOLATION LEVEL …` and `START
//! TRANSACTION WITH CONSISTENT SNAPSHOT` (the read view taken there, as PostgreSQL's is at our
//! begin's `SELECT 1`), a read `SELECT v, w … WHERE k = ?` (a consistent read, which InnoDB
//! makes a locking one at SERIALIZABLE), a write `UPDATE kv SET v = ?, w = ? WHERE k = ?` (an
//! `INSERT` where no row matched), `COMMIT`, and `ROLLBACK` for an abort and after a refusal.
//!
//! As on PostgreSQL, `w` is the writer of a row's version (0: the loaded data, t+1: transaction
//! t), returned with every read, and triggers append each new version to `kv_versions (k, w,
//! prev)` inside the writing transaction: the store itself says who wrote what. A step InnoDB
//! makes wait is seen waiting in `information_schema.INNODB_TRX` (`LOCK WAIT`), asked by a
//! monitor connection, so a blocked step is known at once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use loadbearing_impls::harness::{free_port, fresh_dir, is_root, spawn_guardian, tail, SetupError};
use mysql::prelude::Queryable;
use mysql::{Conn as Client, OptsBuilder};

use crate::engine::{CommitStep, Layout};
use crate::interleave::Drivable;
use crate::program::{Change, Observed, Plan, Row, Script};
use crate::race::{Run, VersionRow};
use crate::record::ReadLog;
use crate::sql;
use crate::tier::{run_all, Conn, Scenario, Schedule, Waiting};

/// Why the throwaway server could not be had.
#[derive(Debug, thiserror::Error)]
pub enum MariaServerError {
    #[error(
        "MariaDB not found (no mariadbd or mariadb-install-db on PATH or in /usr/sbin; install \
         Debian's `mariadb-server`: .ci/setup.d/15-mariadb.sh)"
    )]
    NotInstalled,
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error("cannot run {tool}: {source}")]
    Run {
        tool: String,
        source: std::io::Error,
    },
    #[error("mariadb-install-db failed: {0}")]
    Install(String),
    #[error("mariadbd did not accept connections within 60 s: {log}")]
    NotUp { log: String },
}

/// Why the tier's server could not be used (not a refused transaction: that is an outcome).
#[derive(Debug, thiserror::Error)]
pub enum MariaTierError {
    #[error("connect: {0}")]
    Connect(#[source] mysql::Error),
    #[error("create table: {0}")]
    CreateTable(#[source] mysql::Error),
    #[error("resetting the table: {0}")]
    Reset(#[source] mysql::Error),
    #[error("reading the final state: {0}")]
    ReadState(#[source] mysql::Error),
    #[error("reading the version log: {0}")]
    ReadVersions(#[source] mysql::Error),
}

/// A step MariaDB refused, as the tier tallies it: the error code and its gist.
#[derive(Debug, thiserror::Error)]
#[error("{}", label(.0))]
pub struct Refused(#[source] pub mysql::Error);

/// `1213 deadlock`, `1205 lock wait timeout`, else the code and MariaDB's message.
pub fn label(e: &mysql::Error) -> String {
    match e {
        mysql::Error::MySqlError(db) => match db.code {
            1213 => "1213 deadlock".into(),
            1205 => "1205 lock wait timeout".into(),
            code => format!("{code} {}", db.message),
        },
        other => format!("connection: {other}"),
    }
}

/// The program at `name` on PATH, else in /usr/sbin (where Debian puts `mariadbd`).
fn find(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/bin")])
        .map(|dir| dir.join(name))
        .find(|p| p.exists())
}

/// Whether Debian's server is installed: `mariadbd` and `mariadb-install-db`.
pub fn find_bin() -> Result<(PathBuf, PathBuf), MariaServerError> {
    match (find("mariadbd"), find("mariadb-install-db")) {
        (Some(server), Some(install)) => Ok((server, install)),
        _ => Err(MariaServerError::NotInstalled),
    }
}

/// A throwaway MariaDB server: its own data folder and a free loopback port.
pub struct MariaServer {
    dir: PathBuf,
    port: u16,
}

impl MariaServer {
    /// Installs a fresh data folder and starts `mariadbd` on it.
    pub fn start() -> Result<MariaServer, MariaServerError> {
        let (server_bin, install_bin) = find_bin()?;
        let dir = fresh_dir("loadbearing-mariadb")?;
        let data = dir.join("data");
        let port = free_port()?;
        let pid = dir.join("mariadbd.pid");
        spawn_guardian(&format!(
            "kill -9 $(cat {}) >/dev/null 2>&1; rm -rf {}",
            pid.display(),
            dir.display()
        ))?;
        // As root (CI), the server must be told it may run as root.
        let user: &[&str] = if is_root() { &["--user=root"] } else { &[] };
        let out = Command::new(&install_bin)
            .args(["--no-defaults", "--auth-root-authentication-method=normal"])
            .args(["--skip-test-db", "--skip-name-resolve"])
            .arg(format!("--datadir={}", data.display()))
            .args(user)
            .output()
            .map_err(|source| MariaServerError::Run {
                tool: install_bin.display().to_string(),
                source,
            })?;
        if !out.status.success() {
            return Err(MariaServerError::Install(format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        let log = dir.join("server.log");
        let log_file = std::fs::File::create(&log).map_err(|source| MariaServerError::Run {
            tool: log.display().to_string(),
            source,
        })?;
        Command::new("setsid")
            .arg(&server_bin)
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--port={port}"))
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--socket={}", dir.join("mariadbd.sock").display()))
            .arg(format!("--pid-file={}", pid.display()))
            .args(["--skip-log-bin", "--skip-name-resolve"])
            // A lock wait ends in an error after this long (the default is 50 s); a schedule
            // waits for no blocked step that long.
            .arg("--innodb-lock-wait-timeout=20")
            .arg("--innodb-flush-log-at-trx-commit=0")
            .args(user)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .map_err(|source| MariaServerError::Run {
                tool: server_bin.display().to_string(),
                source,
            })?;
        let server = MariaServer { dir, port };
        let deadline = Instant::now() + Duration::from_secs(60);
        while Client::new(server.opts()).is_err() {
            if Instant::now() > deadline {
                return Err(MariaServerError::NotUp {
                    log: tail(&log, 20),
                });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(server)
    }

    /// How a client reaches it: root over TCP, the `mysql` database.
    pub fn opts(&self) -> OptsBuilder {
        OptsBuilder::new()
            .ip_or_hostname(Some("127.0.0.1"))
            .tcp_port(self.port)
            .user(Some("root"))
            .db_name(Some("mysql"))
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Kills the server and removes its folder.
    pub fn stop(&self) {
        if let Ok(pid) = std::fs::read_to_string(self.dir.join("mariadbd.pid")) {
            let _ = Command::new("kill").args(["-9", pid.trim()]).status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The level a transaction begins at. On InnoDB: SERIALIZABLE is REPEATABLE READ whose plain
/// reads take shared locks; REPEATABLE READ, its default, reads a consistent view from the
/// first read (here, the begin) and writes the latest committed row version, waiting for its
/// lock; READ COMMITTED takes a read view per statement.
pub use crate::level::Level;

/// The store's name at `level` in a workload's results.
pub fn store(level: Level) -> &'static str {
    match level {
        Level::Serializable => "mariadb (SERIALIZABLE)",
        Level::RepeatableRead => "mariadb (REPEATABLE READ)",
        Level::ReadCommitted => "mariadb (READ COMMITTED)",
    }
}

/// One transaction's connection.
pub struct MariaConn<'c> {
    client: &'c mut Client,
    layout: Layout,
    /// Transaction t of the script: its writes carry `w = t + 1`.
    txn: usize,
    reads: &'c ReadLog,
    level: Level,
    /// Told when each statement begins, so that it answers only for that statement.
    waiting: &'c MariaWaiting,
}

impl Conn for MariaConn<'_> {
    type Error = Refused;

    fn begin(&mut self) -> Result<(), Refused> {
        self.waiting.starts(self.txn);
        self.client
            .query_drop(format!(
                "SET TRANSACTION ISOLATION LEVEL {}",
                self.level.sql()
            ))
            .and_then(|()| {
                self.client
                    .query_drop("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            })
            .map_err(Refused)
    }

    fn exec(&mut self, plan: &Plan) -> Result<Observed, Refused> {
        self.waiting.starts(self.txn);
        match plan {
            Plan::Read(k) => {
                let row: Option<(i64, i32)> = self
                    .client
                    .exec_first("SELECT v, w FROM kv WHERE k = ?", (k,))
                    .map_err(Refused)?;
                if let Some((v, w)) = row {
                    self.reads.record(self.txn, k.clone(), w, v);
                }
                Ok(Observed::Value(row.map(|(v, _)| v)))
            }
            Plan::Scan(p) => self
                .client
                .exec::<String, _, _>("SELECT k FROM kv WHERE page = ? ORDER BY k", (*p as i32,))
                .map(Observed::Rows)
                .map_err(Refused),
            Plan::Write(k, v) => {
                let writer = self.txn as i32 + 1;
                // A row's writer changes with every transaction's write, so a matched row is
                // an affected one, except a transaction writing the same value twice: then the
                // row is there and nothing is left to do.
                self.client
                    .exec_drop("UPDATE kv SET v = ?, w = ? WHERE k = ?", (*v, writer, k))
                    .map_err(Refused)?;
                if self.client.affected_rows() == 0 {
                    let page = self.layout.page_of(k) as i32;
                    self.client
                        .exec_drop(
                            "INSERT INTO kv (k, page, v, w) SELECT ?, ?, ?, ? FROM DUAL \
                             WHERE NOT EXISTS (SELECT 1 FROM kv WHERE k = ? AND w = ?)",
                            (k, page, *v, writer, k, writer),
                        )
                        .map_err(Refused)?;
                }
                Ok(Observed::Wrote(*v))
            }
            Plan::Select(pred) => self
                .client
                .query_map(sql::select(*pred), |(key, value, writer)| Row {
                    key,
                    value,
                    writer,
                })
                .map(Observed::Matched)
                .map_err(Refused),
            Plan::Insert(k, v) => {
                let page = self.layout.page_of(k) as i32;
                let writer = self.txn as i32 + 1;
                self.client
                    .exec_drop(
                        "INSERT INTO kv (k, page, v, w) VALUES (?, ?, ?, ?)",
                        (k, page, *v, writer),
                    )
                    .map(|()| Observed::Wrote(*v))
                    .map_err(Refused)
            }
            Plan::Update { rows, set } => {
                // As written: one UPDATE; the trigger logs each new version and names it.
                let (sql, key) = sql::update(rows, *set, "?", "?", "");
                let writer = self.txn as i32 + 1;
                self.client
                    .query_drop("SET @lb_changed = NULL")
                    .map_err(Refused)?;
                match key {
                    Some(k) => self.client.exec_drop(sql, (writer, k)),
                    None => self.client.exec_drop(sql, (writer,)),
                }
                .map_err(Refused)?;
                let named: Option<String> = self
                    .client
                    .query_first("SELECT @lb_changed")
                    .map_err(Refused)?
                    .flatten();
                let mut changed = Vec::new();
                // Our trigger writes `key=value`: key names are identifiers, values integers.
                for row in named.iter().flat_map(|n| n.split(',')) {
                    let (k, v) = row
                        .rsplit_once('=')
                        .expect("the update trigger writes key=value");
                    changed.push(Change {
                        key: k.to_string(),
                        value: Some(v.parse().expect("the update trigger writes an integer")),
                        replaced: None,
                    });
                }
                changed.sort_by(|a, b| a.key.cmp(&b.key));
                Ok(Observed::Changed(changed))
            }
            Plan::Delete(rows) => {
                let (sql, key) = sql::delete(rows, "?");
                let found: Vec<(String, i32)> = match key {
                    Some(k) => self.client.exec(sql, (k,)),
                    None => self.client.query(sql),
                }
                .map_err(Refused)?;
                let writer = self.txn as i32 + 1;
                let log = sql::log_deletion(["?", "?", "?"]);
                let mut keys = Vec::new();
                for (k, prev) in found {
                    self.client
                        .exec_drop(&log, (&k, writer, prev))
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
        self.waiting.starts(self.txn);
        self.client.query_drop("COMMIT").map_err(Refused)
    }

    fn app_abort(&mut self) -> Result<(), Refused> {
        self.waiting.starts(self.txn);
        self.client.query_drop("ROLLBACK").map_err(Refused)
    }

    fn cleanup(&mut self) -> Result<(), Refused> {
        self.client.query_drop("ROLLBACK").map_err(Refused)
    }
}

/// Who of the tier's transactions waits for a lock, as InnoDB says (`LOCK WAIT` in
/// `information_schema.INNODB_TRX`).
///
/// InnoDB serves that table from a cache it refreshes only when nobody has read it for 0.1 s
/// (observed on 10.11: asked every 2 ms, the table showed the first transaction `RUNNING`
/// for 20 s while its statement waited, and never the second). So the monitor reads it at
/// most every [`MARIADB_ASK_EVERY`], each read a fresh one, and answers in between from its
/// last read: never blocking the schedule that asks, and never taken before the statement
/// asked about began (a read from before it says nothing of it).
struct MariaWaiting {
    monitor: Mutex<Monitor>,
    /// Each transaction's connection id.
    ids: Vec<u32>,
    /// When each transaction's current statement began.
    began: Vec<Mutex<Option<Instant>>>,
}

impl MariaWaiting {
    /// A monitor connection of its own, asking about `clients`' threads.
    fn of(opts: &OptsBuilder, clients: &[Client]) -> Result<MariaWaiting, MariaTierError> {
        let ids: Vec<u32> = clients.iter().map(Client::connection_id).collect();
        Ok(MariaWaiting {
            monitor: Mutex::new(Monitor {
                client: connect(opts)?,
                last: None,
            }),
            began: ids.iter().map(|_| Mutex::new(None)).collect(),
            ids,
        })
    }

    /// Transaction t starts a statement now.
    fn starts(&self, t: usize) {
        if let Some(b) = self.began.get(t) {
            *b.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        }
    }

    /// A new run: nothing read before it counts. The time of the last read stays: a read
    /// sooner than [`MARIADB_ASK_EVERY`] after it would get InnoDB's stale copy (the last run's
    /// waits).
    fn forget(&self) {
        let mut monitor = self.monitor.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, waiting)) = monitor.last.as_mut() {
            waiting.clear();
        }
        for b in &self.began {
            *b.lock().unwrap_or_else(|e| e.into_inner()) = None;
        }
    }
}

struct Monitor {
    client: Client,
    /// When the table was last read, and the connections it showed waiting.
    last: Option<(Instant, Vec<u32>)>,
}

/// Longer than InnoDB's 0.1 s: a read this long after the last refreshes the cache.
const MARIADB_ASK_EVERY: Duration = Duration::from_millis(120);

impl Waiting for MariaWaiting {
    fn is_waiting(&self, t: usize) -> bool {
        let Some(&id) = self.ids.get(t) else {
            return false;
        };
        let began = self
            .began
            .get(t)
            .and_then(|b| *b.lock().unwrap_or_else(|e| e.into_inner()));
        let mut monitor = self.monitor.lock().unwrap_or_else(|e| e.into_inner());
        let recent = monitor
            .last
            .as_ref()
            .is_some_and(|(at, _)| at.elapsed() < MARIADB_ASK_EVERY);
        if !recent {
            // The read speaks of the moment it was asked, not of when it came back.
            let asked = Instant::now();
            // An error is no answer (nobody waiting): the schedule's own patience decides.
            let waiting: Vec<u32> = monitor
                .client
                .query(
                    "SELECT trx_mysql_thread_id FROM information_schema.INNODB_TRX \
                     WHERE trx_state = 'LOCK WAIT'",
                )
                .unwrap_or_default();
            monitor.last = Some((asked, waiting));
        }
        // Only a read taken after the statement began speaks of it; until then, not known
        // to wait (the schedule asks again).
        monitor
            .last
            .as_ref()
            .is_some_and(|(at, waiting)| began.is_some_and(|b| *at > b) && waiting.contains(&id))
    }
}

/// A server's connections for the interleavings: one per transaction, one for setup, one the
/// schedule asks who waits.
pub struct MariaTier {
    opts: OptsBuilder,
    admin: Client,
    clients: Vec<Client>,
    level: Level,
    waiting: Arc<MariaWaiting>,
}

fn connect(opts: &OptsBuilder) -> Result<Client, MariaTierError> {
    Client::new(opts.clone()).map_err(MariaTierError::Connect)
}

impl MariaTier {
    /// Creates the tables (in a database of their own) and opens the connections.
    pub fn connect(server: &MariaServer) -> Result<MariaTier, MariaTierError> {
        let mut admin = connect(&server.opts())?;
        admin
            .query_drop("CREATE DATABASE IF NOT EXISTS lb")
            .map_err(MariaTierError::CreateTable)?;
        let opts = server.opts().db_name(Some("lb"));
        let mut admin = connect(&opts)?;
        for statement in [
            "DROP TABLE IF EXISTS kv",
            "DROP TABLE IF EXISTS kv_versions",
            "CREATE TABLE kv (k VARCHAR(64) PRIMARY KEY, page INT NOT NULL, v BIGINT NOT NULL, \
             w INT NOT NULL DEFAULT 0, KEY kv_page (page)) ENGINE=InnoDB",
            "CREATE TABLE kv_versions (id BIGINT AUTO_INCREMENT PRIMARY KEY, k VARCHAR(64) NOT NULL, \
             w INT NOT NULL, prev INT NULL) ENGINE=InnoDB",
            "CREATE TRIGGER kv_log_insert AFTER INSERT ON kv FOR EACH ROW \
             INSERT INTO kv_versions (k, w, prev) VALUES (NEW.k, NEW.w, NULL)",
            // MariaDB's UPDATE returns no rows: the trigger tells the session which it changed
            // (a user variable: no table read, so no lock taken to learn it).
            "CREATE TRIGGER kv_log_update AFTER UPDATE ON kv FOR EACH ROW BEGIN \
             INSERT INTO kv_versions (k, w, prev) VALUES (NEW.k, NEW.w, OLD.w); \
             SET @lb_changed = CONCAT_WS(',', @lb_changed, CONCAT(NEW.k, '=', NEW.v)); \
             END",
        ] {
            admin
                .query_drop(statement)
                .map_err(MariaTierError::CreateTable)?;
        }
        let clients: Vec<Client> = (0..3).map(|_| connect(&opts)).collect::<Result<_, _>>()?;
        let waiting = Arc::new(MariaWaiting::of(&opts, &clients)?);
        Ok(MariaTier {
            opts,
            admin,
            clients,
            level: Level::RepeatableRead,
            waiting,
        })
    }

    /// A connection for each of `n` transactions (a workload for engines may have any number),
    /// opened the first time a workload has that many, and a monitor that knows them all.
    fn connections_for(&mut self, n: usize) -> Result<(), MariaTierError> {
        if self.clients.len() >= n {
            return Ok(());
        }
        while self.clients.len() < n {
            self.clients.push(connect(&self.opts)?);
        }
        self.waiting = Arc::new(MariaWaiting::of(&self.opts, &self.clients)?);
        Ok(())
    }

    /// The same connections, their transactions at `level` from now on.
    pub fn at(mut self, level: Level) -> MariaTier {
        self.level = level;
        self
    }

    fn reset(&mut self, script: &Script) -> Result<(), MariaTierError> {
        let layout = script.layout();
        let mut tx = self
            .admin
            .start_transaction(mysql::TxOpts::default())
            .map_err(MariaTierError::Reset)?;
        tx.query_drop("DELETE FROM kv")
            .and_then(|()| tx.query_drop("DELETE FROM kv_versions"))
            .map_err(MariaTierError::Reset)?;
        for (k, v) in script.initial() {
            if let Some(v) = v {
                tx.exec_drop(
                    "INSERT INTO kv (k, page, v) VALUES (?, ?, ?)",
                    (&k, layout.page_of(&k) as i32, v),
                )
                .map_err(MariaTierError::Reset)?;
            }
        }
        tx.commit().map_err(MariaTierError::Reset)
    }
}

impl Drivable for MariaTier {
    type Error = MariaTierError;

    fn run_once(
        &mut self,
        script: &Script,
        scenario: &Scenario,
        sched: &Schedule,
    ) -> Result<Run, MariaTierError> {
        let n = script.txn_count();
        self.connections_for(n)?;
        self.reset(script)?;
        self.waiting.forget();
        sched.ask(Arc::clone(&self.waiting) as Arc<dyn Waiting>);
        let layout = script.layout();
        let reads = ReadLog::default();
        let conns: Vec<MariaConn<'_>> = self.clients[..n]
            .iter_mut()
            .enumerate()
            .map(|(txn, client)| MariaConn {
                client,
                layout: layout.clone(),
                txn,
                reads: &reads,
                level: self.level,
                waiting: &self.waiting,
            })
            .collect();
        let (results, observed) = run_all(script, scenario, sched, conns);
        Ok((results, observed, reads.into_reads()))
    }

    fn state(&mut self, script: &Script) -> Result<BTreeMap<String, Option<i64>>, MariaTierError> {
        let mut state = BTreeMap::new();
        for (k, _) in script.keys() {
            let v: Option<i64> = self
                .admin
                .exec_first("SELECT v FROM kv WHERE k = ?", (&k,))
                .map_err(MariaTierError::ReadState)?;
            state.insert(k, v);
        }
        Ok(state)
    }

    fn versions(&mut self) -> Result<Vec<VersionRow>, MariaTierError> {
        self.admin
            .query_map(
                "SELECT k, w, prev FROM kv_versions ORDER BY id",
                |(k, w, prev)| (k, w, prev),
            )
            .map_err(MariaTierError::ReadVersions)
    }
}
