//! Safe handles on one flavour's libdb: an environment wholly in memory, its btrees, and
//! transactions, every call's result as a typed [`DbError`].

use std::ffi::{c_char, c_int, CStr, CString};
use std::fmt;

use crate::ffi::{self, Api, Db, DbEnv, DbTxn};

/// Which libdb: as released, or with our patches (build.rs applies them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Flavour {
    /// 5.3.34 as released: the #136 commit window is open.
    Prefix,
    /// The #151 fix: SICHECKED published by a passing check, TXN_SI_PAST_CHECK at both sites.
    Fix,
    /// The fix at the lock manager's writer site only; mpool's reader site keeps
    /// `status == TXN_COMMITTED`.
    ReaderUnfixed,
}

impl Flavour {
    pub const ALL: [Flavour; 3] = [Flavour::Prefix, Flavour::Fix, Flavour::ReaderUnfixed];

    /// The column and target name: `libdb-prefix`.
    pub fn name(self) -> &'static str {
        match self {
            Flavour::Prefix => "libdb-prefix",
            Flavour::Fix => "libdb-fix",
            Flavour::ReaderUnfixed => "libdb-readerunfixed",
        }
    }

    /// The SSI model's variant this flavour implements (`Variant::named`, `ssi_<variant>_*`).
    pub fn variant(self) -> &'static str {
        match self {
            Flavour::Prefix => "prefix",
            Flavour::Fix => "fix",
            Flavour::ReaderUnfixed => "readerunfixed",
        }
    }

    fn api(self) -> &'static Api {
        match self {
            Flavour::Prefix => &ffi::prefix::API,
            Flavour::Fix => &ffi::fix::API,
            Flavour::ReaderUnfixed => &ffi::readerunfixed::API,
        }
    }

    /// libdb's own version string (`db_version`).
    pub fn version(self) -> String {
        // SAFETY: db_version returns a static string.
        unsafe { CStr::from_ptr((self.api().version)()) }
            .to_string_lossy()
            .into_owned()
    }
}

impl fmt::Display for Flavour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a libdb return code means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    NotFound,
    /// `DB_SNAPSHOT_CONFLICT`: this transaction is a pivot (commit check, or mpool's reader site).
    SnapshotConflict,
    /// `DB_SNAPSHOT_UNSAFE`: the lock manager's writer site refused the write.
    SnapshotUnsafe,
    /// `DB_LOCK_NOTGRANTED`: another transaction holds the page's write lock (we never wait).
    LockNotGranted,
    /// `DB_LOCK_DEADLOCK`: for a snapshot writer, the page changed after its snapshot.
    LockDeadlock,
    Other,
}

/// A libdb call that did not return 0.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{call}: {message} ({ret})")]
pub struct DbError {
    pub call: &'static str,
    pub code: Code,
    pub ret: i32,
    pub message: String,
}

/// A database of an [`Env`], by index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DbId(usize);

/// A live transaction. libdb frees it at commit or abort, which consume it.
#[derive(Debug)]
pub struct Txn(*mut DbTxn);

// SAFETY: the environment is opened DB_THREAD, so its handles are free-threaded.
unsafe impl Send for Txn {}

/// One flavour's environment: private regions, in-memory logs, in-memory btrees.
pub struct Env {
    flavour: Flavour,
    api: &'static Api,
    env: *mut DbEnv,
    dbs: Vec<*mut Db>,
}

// SAFETY: opened DB_THREAD (every handle free-threaded); closed only by Drop.
unsafe impl Send for Env {}
unsafe impl Sync for Env {}

impl Env {
    pub fn open(flavour: Flavour) -> Result<Env, DbError> {
        let api = flavour.api();
        let mut env = std::ptr::null_mut();
        // SAFETY: env_open writes a handle or leaves it null and returns an error.
        let ret = unsafe { (api.env_open)(&mut env) };
        let opened = Env {
            flavour,
            api,
            env,
            dbs: Vec::new(),
        };
        opened.check("DB_ENV->open", ret)?;
        Ok(opened)
    }

    pub fn flavour(&self) -> Flavour {
        self.flavour
    }

    fn error(&self, call: &'static str, ret: c_int) -> DbError {
        // SAFETY: pure functions of the code; db_strerror returns a static or thread string.
        let (kind, message) = unsafe {
            (
                (self.api.classify)(ret),
                CStr::from_ptr((self.api.strerror)(ret))
                    .to_string_lossy()
                    .into_owned(),
            )
        };
        let code = match kind {
            1 => Code::NotFound,
            2 => Code::SnapshotConflict,
            3 => Code::SnapshotUnsafe,
            4 => Code::LockNotGranted,
            5 => Code::LockDeadlock,
            _ => Code::Other,
        };
        DbError {
            call,
            code,
            ret,
            message,
        }
    }

    fn check(&self, call: &'static str, ret: c_int) -> Result<(), DbError> {
        if ret == 0 {
            Ok(())
        } else {
            Err(self.error(call, ret))
        }
    }

    /// An in-memory multiversion btree; `page_size` 0 is libdb's default.
    pub fn database(&mut self, name: &str, page_size: u32) -> Result<DbId, DbError> {
        let name = CString::new(name).expect("database names have no NUL");
        let mut db = std::ptr::null_mut();
        // SAFETY: a live env; db_open writes a handle or returns an error.
        let ret = unsafe { (self.api.db_open)(self.env, name.as_ptr(), page_size, &mut db) };
        self.check("DB->open", ret)?;
        self.dbs.push(db);
        Ok(DbId(self.dbs.len() - 1))
    }

    /// A transaction: `snapshot` is DB_TXN_SNAPSHOT (SSI); either way it never waits for a lock.
    pub fn begin(&self, snapshot: bool) -> Result<Txn, DbError> {
        let mut txn = std::ptr::null_mut();
        // SAFETY: a live env.
        let ret = unsafe { (self.api.txn_begin)(self.env, c_int::from(snapshot), &mut txn) };
        self.check("DB_ENV->txn_begin", ret)?;
        Ok(Txn(txn))
    }

    pub fn commit(&self, txn: Txn) -> Result<(), DbError> {
        // SAFETY: a live transaction, consumed: libdb frees it whatever commit returns.
        let ret = unsafe { (self.api.txn_commit)(txn.0) };
        self.check("DB_TXN->commit", ret)
    }

    pub fn abort(&self, txn: Txn) -> Result<(), DbError> {
        // SAFETY: as commit.
        let ret = unsafe { (self.api.txn_abort)(txn.0) };
        self.check("DB_TXN->abort", ret)
    }

    pub fn get(&self, db: DbId, txn: &Txn, key: &str) -> Result<Option<i64>, DbError> {
        let key = CString::new(key).expect("keys have no NUL");
        let (mut value, mut found) = (0i64, 0 as c_int);
        // SAFETY: live handles; the value buffer is 8 bytes, as the call expects.
        let ret =
            unsafe { (self.api.get)(self.dbs[db.0], txn.0, key.as_ptr(), &mut value, &mut found) };
        self.check("DB->get", ret)?;
        Ok((found != 0).then_some(value))
    }

    pub fn put(&self, db: DbId, txn: &Txn, key: &str, value: i64) -> Result<(), DbError> {
        self.put_bytes(db, txn, key, &value.to_ne_bytes())
    }

    /// A value that is not one of ours (a filler): `get` and `scan` ignore it.
    pub fn put_bytes(&self, db: DbId, txn: &Txn, key: &str, data: &[u8]) -> Result<(), DbError> {
        let key = CString::new(key).expect("keys have no NUL");
        // SAFETY: live handles; libdb copies the data.
        let ret = unsafe {
            (self.api.put)(
                self.dbs[db.0],
                txn.0,
                key.as_ptr(),
                data.as_ptr().cast(),
                data.len() as u32,
            )
        };
        self.check("DB->put", ret)
    }

    /// Every key with an integer value, in key order (a cursor over the whole btree).
    pub fn scan(&self, db: DbId, txn: &Txn) -> Result<Vec<String>, DbError> {
        let mut buf = vec![0u8; 256];
        loop {
            let mut len = 0usize;
            // SAFETY: the buffer is `buf.len()` bytes; the call writes at most that.
            let ret = unsafe {
                (self.api.scan)(
                    self.dbs[db.0],
                    txn.0,
                    buf.as_mut_ptr() as *mut c_char,
                    buf.len(),
                    &mut len,
                )
            };
            self.check("DBC->get", ret)?;
            if len <= buf.len() {
                let text = String::from_utf8_lossy(&buf[..len]);
                return Ok(text.lines().map(str::to_string).collect());
            }
            buf.resize(len, 0);
        }
    }

    /// The btree's leaf pages (DB->stat).
    pub fn leaf_pages(&self, db: DbId, txn: &Txn) -> Result<u32, DbError> {
        let mut pages = 0;
        // SAFETY: live handles.
        let ret = unsafe { (self.api.leaf_pages)(self.dbs[db.0], txn.0, &mut pages) };
        self.check("DB->stat", ret)?;
        Ok(pages)
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        // SAFETY: every transaction is resolved by now (Txn handles are consumed by commit or
        // abort, and the tier resolves each); the handles close once.
        unsafe {
            for db in self.dbs.drain(..).rev() {
                (self.api.db_close)(db);
            }
            if !self.env.is_null() {
                (self.api.env_close)(self.env);
            }
        }
    }
}
