//! The harness's C calls (`csrc/harness.c`), once per flavour: each flavour is its own copy of
//! libdb whose only global names are `lbdb_<flavour>_*`, and [`Api`] is one flavour's table of
//! them.

use std::ffi::{c_char, c_int, c_void};

/// libdb's handles, opaque here.
#[repr(C)]
pub struct DbEnv {
    _private: [u8; 0],
}
#[repr(C)]
pub struct Db {
    _private: [u8; 0],
}
#[repr(C)]
pub struct DbTxn {
    _private: [u8; 0],
}

/// One flavour's calls. Every call returns libdb's return code; [`Api::classify`] says what it
/// means.
pub struct Api {
    pub classify: unsafe extern "C" fn(c_int) -> c_int,
    pub strerror: unsafe extern "C" fn(c_int) -> *const c_char,
    pub version: unsafe extern "C" fn() -> *const c_char,
    pub env_open: unsafe extern "C" fn(*mut *mut DbEnv) -> c_int,
    pub env_close: unsafe extern "C" fn(*mut DbEnv) -> c_int,
    pub db_open: unsafe extern "C" fn(*mut DbEnv, *const c_char, u32, *mut *mut Db) -> c_int,
    pub db_close: unsafe extern "C" fn(*mut Db) -> c_int,
    pub txn_begin: unsafe extern "C" fn(*mut DbEnv, c_int, *mut *mut DbTxn) -> c_int,
    pub txn_commit: unsafe extern "C" fn(*mut DbTxn) -> c_int,
    pub txn_abort: unsafe extern "C" fn(*mut DbTxn) -> c_int,
    pub get:
        unsafe extern "C" fn(*mut Db, *mut DbTxn, *const c_char, *mut i64, *mut c_int) -> c_int,
    pub put: unsafe extern "C" fn(*mut Db, *mut DbTxn, *const c_char, *const c_void, u32) -> c_int,
    pub scan: unsafe extern "C" fn(*mut Db, *mut DbTxn, *mut c_char, usize, *mut usize) -> c_int,
    pub leaf_pages: unsafe extern "C" fn(*mut Db, *mut DbTxn, *mut u32) -> c_int,
}

/// Declares one flavour's calls by their linked names and gathers them in its [`Api`].
macro_rules! flavour {
    ($module:ident, $prefix:literal) => {
        pub mod $module {
            use super::*;

            extern "C" {
                #[link_name = concat!("lbdb_", $prefix, "_classify")]
                fn classify(ret: c_int) -> c_int;
                #[link_name = concat!("lbdb_", $prefix, "_strerror")]
                fn strerror(ret: c_int) -> *const c_char;
                #[link_name = concat!("lbdb_", $prefix, "_version")]
                fn version() -> *const c_char;
                #[link_name = concat!("lbdb_", $prefix, "_env_open")]
                fn env_open(out: *mut *mut DbEnv) -> c_int;
                #[link_name = concat!("lbdb_", $prefix, "_env_close")]
                fn env_close(env: *mut DbEnv) -> c_int;
                #[link_name = concat!("lbdb_", $prefix, "_db_open")]
                fn db_open(
                    env: *mut DbEnv,
                    name: *const c_char,
                    page: u32,
                    out: *mut *mut Db,
                ) -> c_int;
                #[link_name = concat!("lbdb_", $prefix, "_db_close")]
                fn db_close(db: *mut Db) -> c_int;
                #[link_name = concat!("lbdb_", $prefix, "_txn_begin")]
                fn txn_begin(env: *mut DbEnv, snapshot: c_int, out: *mut *mut DbTxn) -> c_int;
                #[link_name = concat!("lbdb_", $prefix, "_txn_commit")]
                fn txn_commit(txn: *mut DbTxn) -> c_int;
                #[link_name = concat!("lbdb_", $prefix, "_txn_abort")]
                fn txn_abort(txn: *mut DbTxn) -> c_int;
                #[link_name = concat!("lbdb_", $prefix, "_get")]
                fn get(
                    db: *mut Db,
                    txn: *mut DbTxn,
                    key: *const c_char,
                    value: *mut i64,
                    found: *mut c_int,
                ) -> c_int;
                #[link_name = concat!("lbdb_", $prefix, "_put")]
                fn put(
                    db: *mut Db,
                    txn: *mut DbTxn,
                    key: *const c_char,
                    data: *const c_void,
                    size: u32,
                ) -> c_int;
                #[link_name = concat!("lbdb_", $prefix, "_scan")]
                fn scan(
                    db: *mut Db,
                    txn: *mut DbTxn,
                    buf: *mut c_char,
                    cap: usize,
                    len: *mut usize,
                ) -> c_int;
                #[link_name = concat!("lbdb_", $prefix, "_leaf_pages")]
                fn leaf_pages(db: *mut Db, txn: *mut DbTxn, out: *mut u32) -> c_int;
            }

            pub static API: Api = Api {
                classify,
                strerror,
                version,
                env_open,
                env_close,
                db_open,
                db_close,
                txn_begin,
                txn_commit,
                txn_abort,
                get,
                put,
                scan,
                leaf_pages,
            };
        }
    };
}

flavour!(prefix, "prefix");
flavour!(fix, "fix");
flavour!(readerunfixed, "readerunfixed");
