//! Berkeley DB 5.3 (Debian's `libdb5.3-dev`, linked from the installed library through our C
//! face `csrc/bdb_shim.c`) as an engine that claims snapshot isolation: a transaction begun
//! with `DB_TXN_SNAPSHOT` on databases opened `DB_MULTIVERSION` reads the versions committed
//! when it began, without read locks; this release has no serializable snapshot isolation
//! (libdb's SSI, #136/#151, came later), so write skew is what it must show, and a lost
//! update what it must refuse.
//!
//! Berkeley DB locks pages, not rows: a writer that meets a page another transaction changed
//! since its snapshot is refused (`DB_LOCK_DEADLOCK`, an update conflict), and one that meets
//! a page another transaction holds is refused at once (`DB_LOCK_NOTGRANTED`: the transactions
//! begin `DB_TXN_NOWAIT`, as SQLite's connections run with no busy timeout; with the wait,
//! 5.3.28 crashed in `__bam_get_root` when the waiting writer woke after the other's commit,
//! `csrc/bdb_shim.c` says where). Either way its transaction aborts. So that the
//! model's pages are Berkeley DB's, each page of the workload's layout is a database of its
//! own (`page-N` in one file): keys the model puts on one page share a btree leaf, keys on two
//! pages never do.
//!
//! The engine keeps no writer column or version log: each value carries its writer (as
//! PostgreSQL's `w`), and each commit appends its keys to a version log in the order commits
//! returned (taken one at a time under the log's lock, so that order is the commit order,
//! which under snapshot isolation is the version order).

use std::collections::{BTreeMap, HashMap};
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::path::PathBuf;
use std::sync::Mutex;

use crate::engine::{CommitStep, Layout, Page};
use crate::interleave::{self, Drivable, EveryInterleaving};
use crate::program::{Observed, Plan, Rows, Script};
use crate::race::{Run, VersionRow};
use crate::record::{select_by_reads, targeted_keys, Edit, ReadLog, VersionLog};
use crate::tier::{run_all, Conn, Scenario, Schedule};
use loadbearing_workload::workload::Workload;

/// The store's name in a workload's results.
pub const STORE: &str = "berkeley db 5.3 (DB_TXN_SNAPSHOT)";

mod ffi {
    use super::*;

    extern "C" {
        pub fn lb_bdb_env_open(home: *const c_char, out: *mut *mut c_void) -> c_int;
        pub fn lb_bdb_env_close(env: *mut c_void);
        pub fn lb_bdb_db_open(
            env: *mut c_void,
            file: *const c_char,
            name: *const c_char,
            out: *mut *mut c_void,
        ) -> c_int;
        pub fn lb_bdb_db_close(db: *mut c_void);
        pub fn lb_bdb_db_clear(env: *mut c_void, db: *mut c_void) -> c_int;
        pub fn lb_bdb_begin(env: *mut c_void, snapshot: c_int, out: *mut *mut c_void) -> c_int;
        pub fn lb_bdb_commit(txn: *mut c_void) -> c_int;
        pub fn lb_bdb_abort(txn: *mut c_void) -> c_int;
        pub fn lb_bdb_get(
            db: *mut c_void,
            txn: *mut c_void,
            key: *const c_char,
            val: *mut u8,
            cap: c_uint,
            len: *mut c_uint,
        ) -> c_int;
        pub fn lb_bdb_put(
            db: *mut c_void,
            txn: *mut c_void,
            key: *const c_char,
            val: *const u8,
            len: c_uint,
        ) -> c_int;
        pub fn lb_bdb_del(db: *mut c_void, txn: *mut c_void, key: *const c_char) -> c_int;
        pub fn lb_bdb_scan(
            db: *mut c_void,
            txn: *mut c_void,
            out: *mut c_char,
            cap: c_uint,
            len: *mut c_uint,
        ) -> c_int;
        pub fn lb_bdb_strerror(rc: c_int) -> *const c_char;
        pub fn lb_bdb_version() -> *const c_char;
    }
}

/// `DB_NOTFOUND`: no such key (db.h).
const DB_NOTFOUND: c_int = -30988;
/// `db.h`'s code for a key that is already there, what its own put with `DB_NOOVERWRITE`
/// answers: the refusal of an insert of a present row.
const DB_KEYEXIST: c_int = -30994;

/// The library's version line (`Berkeley DB 5.3.28: …`).
pub fn version() -> String {
    // SAFETY: db_version returns a static NUL-terminated string.
    unsafe { CStr::from_ptr(ffi::lb_bdb_version()) }
        .to_string_lossy()
        .into_owned()
}

/// A code Berkeley DB returned, named as the library names it (`DB_LOCK_DEADLOCK: Locker
/// killed to resolve a deadlock`).
#[derive(Debug, thiserror::Error)]
#[error("{}", name(*.0))]
pub struct Refused(pub c_int);

fn name(rc: c_int) -> String {
    // SAFETY: db_strerror returns a static NUL-terminated string for any code.
    let said = unsafe { CStr::from_ptr(ffi::lb_bdb_strerror(rc)) }.to_string_lossy();
    // Its words start with a message number, then the code's name for its own codes
    // (`BDB0068 DB_LOCK_DEADLOCK: Locker killed to resolve a deadlock`): the number goes.
    match said.split_once(' ') {
        Some((number, rest)) if number.starts_with("BDB") => rest.to_string(),
        _ => said.into_owned(),
    }
}

fn check(rc: c_int) -> Result<(), Refused> {
    if rc == 0 {
        Ok(())
    } else {
        Err(Refused(rc))
    }
}

/// Why the environment could not be used (not a refused transaction: that is an outcome).
#[derive(Debug, thiserror::Error)]
pub enum BdbError {
    #[error("Berkeley DB: {what}: {source}")]
    Library {
        what: &'static str,
        #[source]
        source: Refused,
    },
    #[error("Berkeley DB: cannot create its folder {}: {source}", path.display())]
    Folder {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn failed(what: &'static str) -> impl Fn(Refused) -> BdbError {
    move |source| BdbError::Library { what, source }
}

/// An environment or database handle opened `DB_THREAD`: free-threaded.
#[derive(Clone, Copy)]
struct Handle(*mut c_void);
// SAFETY: Berkeley DB handles opened with DB_THREAD may be used by any thread at once.
unsafe impl Send for Handle {}
unsafe impl Sync for Handle {}

/// A value and the writer of its version (0: the loaded data, t+1: transaction t), as stored.
fn encode(value: i64, writer: i32) -> [u8; 12] {
    let mut bytes = [0; 12];
    bytes[..8].copy_from_slice(&value.to_le_bytes());
    bytes[8..].copy_from_slice(&writer.to_le_bytes());
    bytes
}

fn decode(bytes: &[u8]) -> (i64, i32) {
    let mut v = [0; 8];
    let mut w = [0; 4];
    v.copy_from_slice(&bytes[..8]);
    w.copy_from_slice(&bytes[8..12]);
    (i64::from_le_bytes(v), i32::from_le_bytes(w))
}

fn c_key(key: &str) -> CString {
    CString::new(key).expect("workload keys have no NUL")
}

/// A transaction handle, owned by one thread at a time.
struct Txn(*mut c_void);
// SAFETY: a DB_TXN may move between threads; it is used by one at a time (its Conn's).
unsafe impl Send for Txn {}

fn get(db: Handle, txn: *mut c_void, key: &str) -> Result<Option<(i64, i32)>, Refused> {
    let key = c_key(key);
    let mut buf = [0u8; 12];
    let mut len: c_uint = 0;
    // SAFETY: live handles; buf holds cap bytes.
    let rc = unsafe { ffi::lb_bdb_get(db.0, txn, key.as_ptr(), buf.as_mut_ptr(), 12, &mut len) };
    match rc {
        0 if len == 12 => Ok(Some(decode(&buf))),
        0 => Err(Refused(EINVAL)),
        DB_NOTFOUND => Ok(None),
        rc => Err(Refused(rc)),
    }
}

fn del(db: Handle, txn: *mut c_void, key: &str) -> Result<(), Refused> {
    let key = c_key(key);
    // SAFETY: live handles; key outlives the call.
    check(unsafe { ffi::lb_bdb_del(db.0, txn, key.as_ptr()) })
}

/// A key no workload names, read to take a transaction's snapshot.
const SNAPSHOT_KEY: &str = "~snapshot";

/// EINVAL, as Berkeley DB names it: a record that is not one of ours, or a step with no
/// transaction open (the driver's mistake, never the engine's refusal).
const EINVAL: c_int = 22;

fn put(db: Handle, txn: *mut c_void, key: &str, value: i64, writer: i32) -> Result<(), Refused> {
    let key = c_key(key);
    let bytes = encode(value, writer);
    // SAFETY: live handles; bytes outlives the call.
    check(unsafe { ffi::lb_bdb_put(db.0, txn, key.as_ptr(), bytes.as_ptr(), 12) })
}

/// One transaction of the script.
struct BdbConn<'r> {
    env: Handle,
    dbs: &'r HashMap<Page, Handle>,
    txn: Option<Txn>,
    layout: Layout,
    /// Transaction t of the script: its writes carry `w = t + 1`.
    t: usize,
    written: Vec<String>,
    reads: &'r ReadLog,
    log: &'r Mutex<VersionLog>,
}

impl BdbConn<'_> {
    fn txn(&self) -> Result<*mut c_void, Refused> {
        self.txn.as_ref().map(|t| t.0).ok_or(Refused(EINVAL))
    }

    fn db_of(&self, key: &str) -> Handle {
        self.dbs[&self.layout.page_of(key)]
    }

    /// An update or delete, row by row.
    fn edit(&mut self, rows: &Rows, edit: &Edit) -> Result<Observed, Refused> {
        let txn = self.txn()?;
        let mut changed = Vec::new();
        for key in targeted_keys(&self.layout.keys(), rows) {
            let db = self.db_of(&key);
            let found = get(db, txn, &key)?;
            let Some(change) = edit.change(rows, &key, found) else {
                continue;
            };
            match change.value {
                Some(v) => put(db, txn, &key, v, self.t as i32 + 1)?,
                None => del(db, txn, &key)?,
            }
            self.written.push(key);
            changed.push(change);
        }
        Ok(Observed::Changed(changed))
    }
}

impl Conn for BdbConn<'_> {
    type Error = Refused;

    fn begin(&mut self) -> Result<(), Refused> {
        let mut txn = std::ptr::null_mut();
        // SAFETY: a live environment.
        check(unsafe { ffi::lb_bdb_begin(self.env.0, 1, &mut txn) })?;
        self.txn = Some(Txn(txn));
        // The snapshot is taken at the transaction's first read, not at txn_begin (observed:
        // without this read, a transaction begun before another's commit and reading after it
        // saw that commit): take it here, as PostgreSQL's begin does with `SELECT 1`.
        let any = *self.dbs.values().next().ok_or(Refused(EINVAL))?;
        get(any, txn, SNAPSHOT_KEY).map(|_| ())
    }

    fn exec(&mut self, plan: &Plan) -> Result<Observed, Refused> {
        match plan {
            Plan::Read(k) => {
                let found = get(self.db_of(k), self.txn()?, k)?;
                if let Some((v, writer)) = found {
                    self.reads.record(self.t, k.clone(), writer, v);
                }
                Ok(Observed::Value(found.map(|(v, _)| v)))
            }
            Plan::Scan(p) => {
                let Some(db) = self.dbs.get(p) else {
                    // No key of the workload lives on that page: nothing to find.
                    return Ok(Observed::Rows(Vec::new()));
                };
                let mut out = vec![0u8; 64 * 1024];
                let mut len: c_uint = 0;
                // SAFETY: live handles; out holds cap bytes.
                check(unsafe {
                    ffi::lb_bdb_scan(
                        db.0,
                        self.txn()?,
                        out.as_mut_ptr().cast(),
                        out.len() as c_uint,
                        &mut len,
                    )
                })?;
                let keys = out[..len as usize]
                    .split(|b| *b == 0)
                    .filter(|k| !k.is_empty())
                    .map(|k| String::from_utf8_lossy(k).into_owned())
                    .collect();
                Ok(Observed::Rows(keys))
            }
            Plan::Write(k, v) => {
                put(self.db_of(k), self.txn()?, k, *v, self.t as i32 + 1)?;
                self.written.push(k.clone());
                Ok(Observed::Wrote(*v))
            }
            Plan::Select(pred) => {
                let txn = self.txn()?;
                let keys = self.layout.keys();
                select_by_reads(&keys, *pred, |k| get(self.db_of(k), txn, k)).map(Observed::Matched)
            }
            // A key-value store has no insert of its own: a read of the key (the store sees
            // it, as a unique check), refused if the row is there, else a put.
            Plan::Insert(k, v) => {
                if get(self.db_of(k), self.txn()?, k)?.is_some() {
                    return Err(Refused(DB_KEYEXIST));
                }
                self.exec(&Plan::Write(k.clone(), *v))
            }
            Plan::Update { rows, set } => self.edit(rows, &Edit::Update(*set)),
            Plan::Delete(rows) => self.edit(rows, &Edit::Delete),
            Plan::Skip(_) => Ok(Observed::Skipped),
        }
    }

    fn commit(&mut self, hook: &mut dyn FnMut(CommitStep)) -> Result<(), Refused> {
        hook(CommitStep::Checked);
        hook(CommitStep::Recorded);
        let w = self.t as i32 + 1;
        let txn = self.txn.take().ok_or(Refused(EINVAL))?;
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: a live transaction, freed by its commit whatever it returns.
        check(unsafe { ffi::lb_bdb_commit(txn.0) })?;
        log.commit(w, &self.written);
        Ok(())
    }

    fn app_abort(&mut self) -> Result<(), Refused> {
        match self.txn.take() {
            // SAFETY: a live transaction, freed by its abort.
            Some(txn) => check(unsafe { ffi::lb_bdb_abort(txn.0) }),
            None => Ok(()),
        }
    }

    fn cleanup(&mut self) -> Result<(), Refused> {
        self.app_abort()
    }
}

/// One environment in a folder of the temp dir, a database per page of the layouts it has
/// run, the version log of the last run.
pub struct BdbTier {
    home: PathBuf,
    env: Handle,
    dbs: HashMap<Page, Handle>,
    log: Mutex<VersionLog>,
}

static TIERS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl BdbTier {
    /// A fresh environment (removed when the tier is dropped).
    pub fn create() -> Result<BdbTier, BdbError> {
        let home = std::env::temp_dir().join(format!(
            "lb-ssi-bdb-{}-{}",
            std::process::id(),
            TIERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&home);
        std::fs::create_dir_all(&home).map_err(|source| BdbError::Folder {
            path: home.clone(),
            source,
        })?;
        let c_home = CString::new(home.to_string_lossy().as_bytes()).expect("no NUL in a path");
        let mut env = std::ptr::null_mut();
        // SAFETY: c_home outlives the call; env is written on success.
        check(unsafe { ffi::lb_bdb_env_open(c_home.as_ptr(), &mut env) })
            .map_err(failed("open the environment"))?;
        Ok(BdbTier {
            home,
            env: Handle(env),
            dbs: HashMap::new(),
            log: Mutex::new(VersionLog::default()),
        })
    }

    /// Every interleaving of `workload`'s transactions (at most `bound`, else that many drawn
    /// with `seed`) driven step by step (store name [`STORE`]).
    pub fn every(
        &mut self,
        workload: &Workload,
        bound: usize,
        seed: u64,
    ) -> Result<EveryInterleaving, BdbError> {
        interleave::every(self, STORE, workload, bound, seed)
    }

    /// The database of `page`, opened on first use.
    fn db(&mut self, page: Page) -> Result<Handle, BdbError> {
        if let Some(db) = self.dbs.get(&page) {
            return Ok(*db);
        }
        let name = CString::new(format!("page-{page}")).expect("no NUL");
        let file = CString::new("kv.db").expect("no NUL");
        let mut db = std::ptr::null_mut();
        // SAFETY: a live environment; the names outlive the call.
        check(unsafe { ffi::lb_bdb_db_open(self.env.0, file.as_ptr(), name.as_ptr(), &mut db) })
            .map_err(failed("open a page's database"))?;
        self.dbs.insert(page, Handle(db));
        Ok(Handle(db))
    }

    /// Empties every page and loads the script's initial data (writer 0).
    fn reset(&mut self, script: &Script) -> Result<(), BdbError> {
        let layout = script.layout();
        for (k, _) in script.keys() {
            self.db(layout.page_of(&k))?;
        }
        for db in self.dbs.values() {
            // SAFETY: a live database, no transaction open on it.
            check(unsafe { ffi::lb_bdb_db_clear(self.env.0, db.0) })
                .map_err(failed("empty a page"))?;
        }
        let mut txn = std::ptr::null_mut();
        // SAFETY: a live environment.
        check(unsafe { ffi::lb_bdb_begin(self.env.0, 0, &mut txn) })
            .map_err(failed("begin the load"))?;
        for (k, v) in script.initial() {
            if let Some(v) = v {
                if let Err(e) = put(self.dbs[&layout.page_of(&k)], txn, &k, v, 0) {
                    // SAFETY: the live load transaction, freed by its abort.
                    unsafe { ffi::lb_bdb_abort(txn) };
                    return Err(failed("load")(e));
                }
            }
        }
        // SAFETY: the live load transaction.
        check(unsafe { ffi::lb_bdb_commit(txn) }).map_err(failed("commit the load"))?;
        self.log = Mutex::new(VersionLog::default());
        Ok(())
    }
}

impl Drivable for BdbTier {
    type Error = BdbError;

    fn run_once(
        &mut self,
        script: &Script,
        scenario: &Scenario,
        sched: &Schedule,
    ) -> Result<Run, BdbError> {
        self.reset(script)?;
        let reads = ReadLog::default();
        let layout = script.layout();
        let conns: Vec<BdbConn<'_>> = (0..script.txn_count())
            .map(|t| BdbConn {
                env: self.env,
                dbs: &self.dbs,
                txn: None,
                layout: layout.clone(),
                t,
                written: Vec::new(),
                reads: &reads,
                log: &self.log,
            })
            .collect();
        let (results, observed) = run_all(script, scenario, sched, conns);
        Ok((results, observed, reads.into_reads()))
    }

    fn state(&mut self, script: &Script) -> Result<BTreeMap<String, Option<i64>>, BdbError> {
        let layout = script.layout();
        let mut state = BTreeMap::new();
        for (k, _) in script.keys() {
            let db = self.db(layout.page_of(&k))?;
            // A read outside any transaction sees the last committed version.
            let v = get(db, std::ptr::null_mut(), &k).map_err(failed("read the final state"))?;
            state.insert(k, v.map(|(v, _)| v));
        }
        Ok(state)
    }

    fn versions(&mut self) -> Result<Vec<VersionRow>, BdbError> {
        Ok(self.log.lock().unwrap_or_else(|e| e.into_inner()).rows())
    }
}

impl Drop for BdbTier {
    fn drop(&mut self) {
        for db in self.dbs.values() {
            // SAFETY: live handles, closed once, before their environment.
            unsafe { ffi::lb_bdb_db_close(db.0) };
        }
        // SAFETY: the live environment, closed once.
        unsafe { ffi::lb_bdb_env_close(self.env.0) };
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Snapshot isolation without SSI, over every interleaving: write skew commits where the
    /// two transactions overlap (keys on two pages), and a lost update never does (the second
    /// writer of a page changed since its snapshot is refused).
    #[test]
    fn every_interleaving_on_berkeley_db_is_snapshot_isolation() {
        let mut tier = BdbTier::create().unwrap();
        let skew = loadbearing_workload::workload::named("write_skew").unwrap();
        let run = tier.every(&skew, 1000, 1).unwrap();
        assert!(run.interleavings.every());
        let skew_label = "G2-item (write skew)".to_string();
        assert!(
            run.race
                .problems(std::slice::from_ref(&skew_label))
                .is_empty(),
            "{:?}",
            run.race
        );
        assert!(
            run.race.anomalies.contains_key(&skew_label),
            "write skew commits: {:?}",
            run.race
        );
        let lost = loadbearing_workload::workload::named("lost_update").unwrap();
        let run = tier.every(&lost, 1000, 1).unwrap();
        assert!(run.race.problems(&[]).is_empty(), "{:?}", run.race);
        assert_eq!(
            run.race.serializable, run.race.attempts,
            "no lost update: {:?}",
            run.race
        );
    }
}
