//! A script's keys on one flavour's libdb, and the isolation tier's [`Conn`] over it: each
//! step a libdb call, recorded as the SSI model's trace event.
//!
//! Every step runs under one step lock, and its event is recorded before the lock is let go,
//! so the trace is a linearization of the run, whatever the threads do. No step can block
//! another: transactions never wait for a lock (a write meeting another's write lock fails
//! `DB_LOCK_NOTGRANTED` at once), and a commit lets go of the step lock only at the two points
//! the hooks reach, where libdb holds none of its own mutexes.
//!
//! libdb aborts a transaction in one call, so a refused step is followed at once by its
//! cleanup (`DB_TXN->abort`, recorded as `Cleanup`), and a commit that fails its check has
//! already aborted inside `DB_TXN->commit`.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use loadbearing_specs::ssi::trace::Txn as TxnId;
use loadbearing_specs::ssi::Failure;
use loadbearing_ssi_engine::engine::{CommitStep, Page};
use loadbearing_ssi_engine::program::{Observed, Plan, Script};
use loadbearing_ssi_engine::race::LoggedRead;
use loadbearing_ssi_engine::tier::Conn;
use loadbearing_ssi_engine::trace::{Recorder, SsiEvent, Tracer};

use crate::db::{Code, DbError, DbId, Env, Flavour, Txn};
use crate::hooks::{with_hook, Point};

/// Where a script's pages go in libdb. The model's page is the unit of its SIREAD markers;
/// in libdb it is a btree leaf page, which is also the unit of write locks and versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    /// Each model page is its own btree (one leaf page): the reporter's two-database shape.
    Databases,
    /// One btree of 512-byte pages, the model's pages kept on separate leaf pages by filler
    /// keys between them: the PR's same-btree shape.
    OneBtree,
}

/// Filler records between two model pages of the one-btree shape: 40 records of about 70
/// bytes fill more than five 512-byte leaves, so no leaf holds keys of two model pages.
const FILLERS: usize = 40;
const FILLER_BYTES: usize = 48;
const SMALL_PAGE: u32 = 512;
/// The one key of the snapshot-pin btree.
const PIN: &str = "pin";

/// A data record holds its value and its writer (0: the loaded data, t+1: transaction t) in
/// its 8 bytes, so that a read says whose version it saw, as the engine's version records do
/// (a raced workload's history is classified from that, `loadbearing_ssi_engine::race`). The
/// values are the model's small integers; libdb treats the bytes as opaque either way.
fn pack(value: i64, writer: usize) -> i64 {
    value * WRITERS + writer as i64
}

/// The value and the writer of a record [`pack`] made.
fn unpack(stored: i64) -> (i64, i32) {
    (
        stored.div_euclid(WRITERS),
        stored.rem_euclid(WRITERS) as i32,
    )
}

const WRITERS: i64 = 16;

/// Why a script could not be put on libdb (not a refused transaction: that is an outcome).
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("{flavour}: {source}")]
    Db {
        flavour: Flavour,
        #[source]
        source: DbError,
    },
    #[error("{flavour}: the one-btree layout has {leaves} leaf pages for {pages} model pages; the keys could share a leaf")]
    PagesShared {
        flavour: Flavour,
        leaves: u32,
        pages: usize,
    },
}

/// A script's keys on a fresh environment of one flavour, and the trace of what ran there.
pub struct Store {
    env: Env,
    /// Every key: its database and its name there.
    placed: BTreeMap<String, (DbId, String)>,
    /// Each model page's database, and the prefix its keys carry there.
    pages: BTreeMap<Page, (DbId, String)>,
    /// A btree nobody writes, read at begin (see [`LibdbConn::begin`]).
    snapshot_pin: DbId,
    step: Mutex<()>,
    recorder: Arc<Recorder>,
    /// Every read that found a record, with the record's writer.
    reads: Mutex<Vec<LoggedRead>>,
}

impl Store {
    pub fn new(flavour: Flavour, script: &Script, shape: Shape) -> Result<Store, SetupError> {
        let db_err = |source| SetupError::Db { flavour, source };
        let mut env = Env::open(flavour).map_err(db_err)?;
        let keys = script.keys();
        let mut page_list: Vec<Page> = keys.iter().map(|(_, p)| *p).collect();
        page_list.sort();
        page_list.dedup();
        let mut pages = BTreeMap::new();
        match shape {
            Shape::Databases => {
                for &p in &page_list {
                    let db = env.database(&format!("page{p}"), 0).map_err(db_err)?;
                    pages.insert(p, (db, String::new()));
                }
            }
            Shape::OneBtree => {
                let db = env.database("pages", SMALL_PAGE).map_err(db_err)?;
                for &p in &page_list {
                    pages.insert(p, (db, format!("p{p}:")));
                }
            }
        }
        let placed: BTreeMap<String, (DbId, String)> = keys
            .iter()
            .map(|(k, p)| {
                let (db, prefix) = &pages[p];
                (k.clone(), (*db, format!("{prefix}{k}")))
            })
            .collect();
        let snapshot_pin = env.database("snapshot-pin", 0).map_err(db_err)?;
        let setup = env.begin(false).map_err(db_err)?;
        env.put(snapshot_pin, &setup, PIN, 0).map_err(db_err)?;
        for (k, v) in script.initial() {
            if let Some(v) = v {
                let (db, name) = &placed[&k];
                env.put(*db, &setup, name, pack(v, 0)).map_err(db_err)?;
            }
        }
        if shape == Shape::OneBtree {
            let (db, _) = pages[&page_list[0]];
            // Fillers sort after a page's keys (`~` after `:`) and before the next page's.
            for &p in &page_list[..page_list.len().saturating_sub(1)] {
                for i in 0..FILLERS {
                    env.put_bytes(db, &setup, &format!("p{p}~{i:03}"), &[b'.'; FILLER_BYTES])
                        .map_err(db_err)?;
                }
            }
            let leaves = env.leaf_pages(db, &setup).map_err(db_err)?;
            if (leaves as usize) < 2 * page_list.len() {
                let _ = env.abort(setup);
                return Err(SetupError::PagesShared {
                    flavour,
                    leaves,
                    pages: page_list.len(),
                });
            }
        }
        env.commit(setup).map_err(db_err)?;
        Ok(Store {
            env,
            placed,
            pages,
            snapshot_pin,
            step: Mutex::new(()),
            recorder: Recorder::new(),
            reads: Mutex::new(Vec::new()),
        })
    }

    pub fn flavour(&self) -> Flavour {
        self.env.flavour()
    }

    /// Every read so far that found a record, with whose version it was.
    pub fn reads(&self) -> Vec<LoggedRead> {
        self.reads.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The trace so far, in step order.
    pub fn events(&self) -> Vec<SsiEvent> {
        self.recorder.events()
    }

    fn lock(&self) -> MutexGuard<'_, ()> {
        self.step.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn record(&self, event: SsiEvent) {
        self.recorder.step(&event);
    }

    /// The committed value of every key of `script`, read by a plain transaction.
    pub fn state(&self, script: &Script) -> Result<BTreeMap<String, Option<i64>>, SetupError> {
        let db_err = |source| SetupError::Db {
            flavour: self.flavour(),
            source,
        };
        let _step = self.lock();
        let txn = self.env.begin(false).map_err(db_err)?;
        let mut state = BTreeMap::new();
        for (k, _) in script.keys() {
            let (db, name) = &self.placed[&k];
            match self.env.get(*db, &txn, name) {
                Ok(v) => {
                    state.insert(k, v.map(|v| unpack(v).0));
                }
                Err(e) => {
                    let _ = self.env.abort(txn);
                    return Err(db_err(e));
                }
            }
        }
        self.env.commit(txn).map_err(db_err)?;
        Ok(state)
    }

    /// Transaction `t`'s connection.
    pub fn conn(&self, t: usize) -> LibdbConn<'_> {
        LibdbConn {
            store: self,
            t,
            txn: None,
        }
    }
}

/// A step libdb refused; the transaction is aborted (and cleaned up) already.
#[derive(Debug, thiserror::Error)]
#[error("{}", label(.0))]
pub struct Refused(#[source] pub DbError);

/// The model's failure a libdb refusal is.
pub fn failure(e: &DbError) -> Option<Failure> {
    match e.code {
        Code::SnapshotConflict => Some(Failure::SnapshotConflict),
        Code::SnapshotUnsafe => Some(Failure::SnapshotUnsafe),
        // First updater wins: the page is write-locked by a live writer, or was written after
        // our snapshot.
        Code::LockNotGranted | Code::LockDeadlock => Some(Failure::WriteConflict),
        Code::NotFound | Code::Other => None,
    }
}

/// A refusal as the tier tallies it: libdb's own name for the code.
pub fn label(e: &DbError) -> String {
    match e.code {
        Code::SnapshotConflict => "DB_SNAPSHOT_CONFLICT".into(),
        Code::SnapshotUnsafe => "DB_SNAPSHOT_UNSAFE".into(),
        Code::LockNotGranted => "DB_LOCK_NOTGRANTED".into(),
        Code::LockDeadlock => "DB_LOCK_DEADLOCK".into(),
        Code::NotFound | Code::Other => format!("{} {}", e.call, e.message),
    }
}

/// One transaction of the tier on a [`Store`].
pub struct LibdbConn<'s> {
    store: &'s Store,
    t: usize,
    txn: Option<Txn>,
}

impl LibdbConn<'_> {
    fn id(&self) -> TxnId {
        TxnId(self.t as u8)
    }

    fn env(&self) -> &Env {
        &self.store.env
    }

    /// After a refused step: abort at once and record the cleanup (under the step lock).
    fn refused(&mut self, e: DbError) -> Refused {
        if let Some(txn) = self.txn.take() {
            let _ = self.store.env.abort(txn);
            self.store.record(SsiEvent::Cleanup { txn: self.id() });
        }
        Refused(e)
    }

    fn live(&self) -> &Txn {
        self.txn
            .as_ref()
            .expect("the tier runs statements of a live transaction only")
    }
}

impl Conn for LibdbConn<'_> {
    type Error = Refused;

    /// `DB_ENV->txn_begin`, then a read of the snapshot-pin btree: libdb takes a snapshot
    /// transaction's snapshot (its read_lsn) lazily, at its first page access, while the model
    /// takes it at Begin. Nobody writes that btree, so the read's SIREAD marker meets no writer
    /// and no newer version: it fixes the snapshot and nothing else.
    fn begin(&mut self) -> Result<(), Refused> {
        let store = self.store;
        let _step = store.lock();
        let txn = self.env().begin(true).map_err(Refused)?;
        if let Err(e) = self.env().get(store.snapshot_pin, &txn, PIN) {
            let _ = self.env().abort(txn);
            return Err(Refused(e));
        }
        self.txn = Some(txn);
        self.store.record(SsiEvent::Begin { txn: self.id() });
        Ok(())
    }

    fn exec(&mut self, plan: &Plan) -> Result<Observed, Refused> {
        let store = self.store;
        let _step = store.lock();
        let txn = self.id();
        match plan {
            Plan::Read(k) => {
                let (db, name) = &self.store.placed[k];
                match self.env().get(*db, self.live(), name) {
                    Ok(stored) => {
                        let value = stored.map(|s| {
                            let (value, writer) = unpack(s);
                            self.store
                                .reads
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .push(LoggedRead {
                                    txn: self.t,
                                    key: k.clone(),
                                    writer,
                                });
                            value
                        });
                        self.store.record(SsiEvent::Read {
                            txn,
                            key: k.clone(),
                            value,
                            failed: None,
                        });
                        Ok(Observed::Value(value))
                    }
                    Err(e) => {
                        self.store.record(SsiEvent::Read {
                            txn,
                            key: k.clone(),
                            value: None,
                            failed: failure(&e),
                        });
                        Err(self.refused(e))
                    }
                }
            }
            Plan::Write(k, v) => {
                let (db, name) = &self.store.placed[k];
                let result = self.env().put(*db, self.live(), name, pack(*v, self.t + 1));
                let failed = result.as_ref().err().and_then(failure);
                self.store.record(SsiEvent::Write {
                    txn,
                    key: k.clone(),
                    value: Some(*v),
                    skipped: false,
                    failed,
                });
                match result {
                    Ok(()) => Ok(Observed::Wrote(*v)),
                    Err(e) => Err(self.refused(e)),
                }
            }
            Plan::Skip(k) => {
                self.store.record(SsiEvent::Write {
                    txn,
                    key: k.clone(),
                    value: None,
                    skipped: true,
                    failed: None,
                });
                Ok(Observed::Skipped)
            }
            Plan::Scan(p) => {
                let (db, prefix) = &self.store.pages[p];
                match self.env().scan(*db, self.live()) {
                    Ok(keys) => {
                        let rows: Vec<String> = keys
                            .iter()
                            .filter_map(|k| k.strip_prefix(prefix.as_str()))
                            .filter(|k| !k.is_empty())
                            .map(str::to_string)
                            .collect();
                        self.store.record(SsiEvent::Scan {
                            txn,
                            page: *p as u64,
                            rows: Some(rows.iter().map(|k| (k.clone(), 1)).collect()),
                            failed: None,
                        });
                        Ok(Observed::Rows(rows))
                    }
                    Err(e) => {
                        self.store.record(SsiEvent::Scan {
                            txn,
                            page: *p as u64,
                            rows: None,
                            failed: failure(&e),
                        });
                        Err(self.refused(e))
                    }
                }
            }
        }
    }

    /// `DB_TXN->commit` under the step lock, let go at each point the hooks reach (and the
    /// scenario's waits placed there); a read-only transaction reaches the first hook at the
    /// commit record, so its CHECK is taken there, just before.
    fn commit(&mut self, hook: &mut dyn FnMut(CommitStep)) -> Result<(), Refused> {
        let store = self.store;
        let id = self.id();
        let txn = self.txn.take().expect("commit of a live transaction");
        let held = RefCell::new(Some(store.lock()));
        let mut checked = false;
        let mut pause = |step: CommitStep| {
            held.borrow_mut().take();
            hook(step);
            *held.borrow_mut() = Some(store.lock());
        };
        let mut on_point = |point: Point| {
            if !checked {
                checked = true;
                store.record(SsiEvent::Check {
                    txn: id,
                    failed: None,
                });
                pause(CommitStep::Checked);
            }
            if point == Point::Recorded {
                store.record(SsiEvent::Record { txn: id });
                pause(CommitStep::Recorded);
            }
        };
        let result = with_hook(&mut on_point, || store.env.commit(txn));
        match result {
            Ok(()) => {
                store.record(SsiEvent::End {
                    txn: id,
                    failed: None,
                });
                Ok(())
            }
            Err(e) => {
                // libdb aborted the transaction inside commit.
                if checked {
                    store.record(SsiEvent::End {
                        txn: id,
                        failed: failure(&e),
                    });
                } else {
                    store.record(SsiEvent::Check {
                        txn: id,
                        failed: failure(&e),
                    });
                }
                store.record(SsiEvent::Cleanup { txn: id });
                Err(Refused(e))
            }
        }
    }

    fn app_abort(&mut self) -> Result<(), Refused> {
        let store = self.store;
        let _step = store.lock();
        self.store.record(SsiEvent::AppAbort { txn: self.id() });
        let txn = self.txn.take().expect("an abort of a live transaction");
        let result = self.env().abort(txn).map_err(Refused);
        self.store.record(SsiEvent::Cleanup { txn: self.id() });
        result
    }

    /// libdb cleaned up when it aborted; only a transaction never resolved is aborted here.
    fn cleanup(&mut self) -> Result<(), Refused> {
        match self.txn.take() {
            Some(txn) => {
                let store = self.store;
                let _step = store.lock();
                let r = self.env().abort(txn).map_err(Refused);
                self.store.record(SsiEvent::Cleanup { txn: self.id() });
                r
            }
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{pack, unpack};

    #[test]
    fn a_packed_record_gives_back_its_value_and_writer_for_negative_values_too() {
        for value in [-21, -1, 0, 1, 7, 120] {
            for writer in 0..4 {
                assert_eq!(unpack(pack(value, writer)), (value, writer as i32));
            }
        }
    }
}
