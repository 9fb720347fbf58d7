//! skipdb (crates.io), an in-memory MVCC engine whose `SerializableDb::serializable_write`
//! transactions its documentation calls "a totally Serializable Snapshot Isolation
//! transaction" that "can handle all kinds of write skew anomaly, including indirect
//! dependencies" (the transaction model of FoundationDB's paper and Badger's): a claim of
//! serializable histories, driven through a workload's every interleaving.
//!
//! A transaction's snapshot is its read version, taken when it is created (its `Begin`); it
//! never blocks, and a conflict shows at `commit`. The engine has no writer column or version
//! log of its own, so each value carries its writer (`(value, writer)`, as PostgreSQL's `w`),
//! and each successful commit appends its keys to a version log, in the order the commits
//! returned; commits are taken one at a time under the log's lock, so that order is the
//! engine's commit order, which is its version order.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use ::skipdb::serializable::{SerializableDb, SerializableTransaction};

use crate::engine::{CommitStep, Layout};
use crate::interleave::{self, Drivable, EveryInterleaving};
use crate::program::{Observed, Plan, Rows, Script};
use crate::race::{Run, VersionRow};
use crate::record::{scan_by_reads, select_by_reads, targeted_keys, Edit, ReadLog, VersionLog};
use crate::tier::{run_all, Conn, Scenario, Schedule};
use loadbearing_workload::workload::Workload;

/// The store's name in a workload's results.
pub const STORE: &str = "skipdb (serializable_write)";

/// A row's value and the writer of its version (0: the loaded data, t+1: transaction t).
type Versioned = (i64, i32);

type Db = SerializableDb<u32, Versioned>;

/// A step skipdb refused (the transaction is aborted): its error, as the engine words it.
#[derive(Debug, thiserror::Error)]
#[error("skipdb {0}")]
pub struct Refused(String);

/// An engine error as the tier tallies it: `skipdb conflict` for the refusal a transaction
/// gets at commit when what it read changed, else skipdb's own words.
fn refused(e: impl std::fmt::Display) -> Refused {
    let said = e.to_string();
    Refused(if said.contains("conflict") {
        "conflict".into()
    } else {
        said
    })
}

/// One transaction.
struct SkipConn<'r> {
    db: Db,
    txn: Option<SerializableTransaction<u32, Versioned>>,
    /// Each key's index in the engine (its keys are `u32`s: skipdb wants cheap clones).
    keys: &'r HashMap<String, u32>,
    layout: Layout,
    /// Transaction t of the script: its writes carry `w = t + 1`.
    t: usize,
    written: Vec<String>,
    reads: &'r ReadLog,
    log: &'r Mutex<VersionLog>,
}

impl SkipConn<'_> {
    fn txn(&mut self) -> Result<&mut SerializableTransaction<u32, Versioned>, Refused> {
        self.txn
            .as_mut()
            .ok_or_else(|| Refused("no transaction is open".into()))
    }

    fn index(&self, key: &str) -> u32 {
        self.keys[key]
    }

    /// The key's value and writer as the transaction sees it, logged as nothing.
    fn versioned(&mut self, key: &str) -> Result<Option<(i64, i32)>, Refused> {
        let i = self.index(key);
        let found = self.txn()?.get(&i).map_err(refused)?.map(|r| *r.value());
        Ok(found)
    }

    /// An update or delete, row by row.
    fn edit(&mut self, rows: &Rows, edit: &Edit) -> Result<Observed, Refused> {
        let mut changed = Vec::new();
        for key in targeted_keys(self.keys.keys(), rows) {
            let found = self.versioned(&key)?;
            let Some(change) = edit.change(rows, &key, found) else {
                continue;
            };
            let (i, w) = (self.index(&key), self.t as i32 + 1);
            match change.value {
                Some(v) => self.txn()?.insert(i, (v, w)).map_err(refused)?,
                None => self.txn()?.remove(i).map_err(refused)?,
            }
            self.written.push(key);
            changed.push(change);
        }
        Ok(Observed::Changed(changed))
    }

    fn read(&mut self, key: &str) -> Result<Option<i64>, Refused> {
        let t = self.t;
        let found = self.versioned(key)?;
        if let Some((v, writer)) = found {
            self.reads.record(t, key.to_string(), writer, v);
        }
        Ok(found.map(|(v, _)| v))
    }
}

impl Conn for SkipConn<'_> {
    type Error = Refused;

    fn begin(&mut self) -> Result<(), Refused> {
        self.txn = Some(self.db.serializable_write());
        Ok(())
    }

    fn exec(&mut self, plan: &Plan) -> Result<Observed, Refused> {
        match plan {
            Plan::Read(k) => Ok(Observed::Value(self.read(k)?)),
            Plan::Scan(p) => {
                // The workloads' files have no scan; a model script's is the page's reads.
                let (keys, layout) = (self.keys, self.layout.clone());
                let found =
                    scan_by_reads(keys.keys(), |k| layout.page_of(k) == *p, |k| self.read(k))?;
                Ok(Observed::Rows(found))
            }
            Plan::Write(k, v) => {
                let (i, w) = (self.index(k), self.t as i32 + 1);
                self.txn()?.insert(i, (*v, w)).map_err(refused)?;
                self.written.push(k.clone());
                Ok(Observed::Wrote(*v))
            }
            Plan::Select(pred) => {
                let keys = self.keys;
                select_by_reads(keys.keys(), *pred, |k| self.versioned(k)).map(Observed::Matched)
            }
            // A key-value store has no insert of its own: a read of the key (the store sees
            // it, as a unique check), refused if the row is there, else a put.
            Plan::Insert(k, v) => {
                if self.versioned(k)?.is_some() {
                    return Err(Refused(format!("duplicate key `{k}` (insert)")));
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
        let mut txn = self
            .txn
            .take()
            .ok_or_else(|| Refused("no transaction is open".into()))?;
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        txn.commit().map_err(refused)?;
        log.commit(w, &self.written);
        Ok(())
    }

    fn app_abort(&mut self) -> Result<(), Refused> {
        match self.txn.take() {
            Some(mut txn) => txn.rollback().map_err(refused),
            None => Ok(()),
        }
    }

    fn cleanup(&mut self) -> Result<(), Refused> {
        self.app_abort()
    }
}

/// A fresh database each run, the version log of the last one.
#[derive(Default)]
pub struct SkipTier {
    db: Option<Db>,
    keys: HashMap<String, u32>,
    log: Mutex<VersionLog>,
}

impl SkipTier {
    pub fn new() -> SkipTier {
        SkipTier::default()
    }

    /// Every interleaving of `workload`'s transactions (at most `bound`, else that many drawn
    /// with `seed`) driven step by step (store name [`STORE`]).
    pub fn every(
        &mut self,
        workload: &Workload,
        bound: usize,
        seed: u64,
    ) -> Result<EveryInterleaving, Refused> {
        interleave::every(self, STORE, workload, bound, seed)
    }
}

impl Drivable for SkipTier {
    type Error = Refused;

    fn run_once(
        &mut self,
        script: &Script,
        scenario: &Scenario,
        sched: &Schedule,
    ) -> Result<Run, Refused> {
        let db = Db::new();
        self.keys = script
            .keys()
            .into_iter()
            .enumerate()
            .map(|(i, (k, _))| (k, i as u32))
            .collect();
        let mut load = db.serializable_write();
        for (k, v) in script.initial() {
            if let Some(v) = v {
                load.insert(self.keys[&k], (v, 0)).map_err(refused)?;
            }
        }
        load.commit().map_err(refused)?;
        self.log = Mutex::new(VersionLog::default());
        let reads = ReadLog::default();
        let layout = script.layout();
        let conns: Vec<SkipConn<'_>> = (0..script.txn_count())
            .map(|t| SkipConn {
                db: db.clone(),
                txn: None,
                keys: &self.keys,
                layout: layout.clone(),
                t,
                written: Vec::new(),
                reads: &reads,
                log: &self.log,
            })
            .collect();
        let (results, observed) = run_all(script, scenario, sched, conns);
        self.db = Some(db);
        Ok((results, observed, reads.into_reads()))
    }

    fn state(&mut self, script: &Script) -> Result<BTreeMap<String, Option<i64>>, Refused> {
        let db = self
            .db
            .as_ref()
            .ok_or_else(|| Refused("no run yet".into()))?;
        let read = db.read();
        Ok(script
            .keys()
            .into_iter()
            .map(|(k, _)| {
                let v = read.get(&self.keys[&k]).map(|r| r.value().0);
                (k, v)
            })
            .collect())
    }

    fn versions(&mut self) -> Result<Vec<VersionRow>, Refused> {
        Ok(self.log.lock().unwrap_or_else(|e| e.into_inner()).rows())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Over every interleaving of the write-skew pair and of two read-modify-writes, skipdb's
    /// serializable transactions commit no anomaly, every history established; where the two
    /// overlap, one of them is refused at commit.
    #[test]
    fn every_interleaving_on_skipdb_is_serializable() {
        let mut tier = SkipTier::new();
        for name in ["write_skew", "lost_update"] {
            let w = loadbearing_workload::workload::named(name).unwrap();
            let run = tier.every(&w, 1000, 1).unwrap();
            let race = &run.race;
            assert!(run.interleavings.every(), "{name}");
            assert_eq!(race.attempts, 70, "{name}");
            assert!(race.problems(&[]).is_empty(), "{name}: {race:?}");
            assert_eq!(race.serializable, race.attempts, "{name}: {race:?}");
            assert!(
                race.outcomes.keys().any(|o| o.contains("conflict")),
                "{name}: {:?}",
                race.outcomes
            );
        }
    }
}
