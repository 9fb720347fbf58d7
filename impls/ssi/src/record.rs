//! What the driver records beside an engine while a workload runs, so that each run's history
//! is built from what the engine answered: every read with the writer of the version it
//! returned, and, for an engine that keeps no version log a client can read (skipdb, Berkeley
//! DB, Badger), each commit's new versions in commit order; and, for an engine with no
//! predicate read, a page's scan as reads of its keys, and a predicate read as a read of every
//! key with the matching rows kept.

use std::collections::HashMap;
use std::sync::Mutex;

use loadbearing_workload::workload::{Pred, Set};

use crate::program::{Change, Row, Rows};
use crate::race::{LoggedRead, VersionRow};

/// The reads of one run, from every transaction's thread.
#[derive(Default)]
pub struct ReadLog(Mutex<Vec<LoggedRead>>);

impl ReadLog {
    /// Transaction `txn` read `key` and got `value` in the version `writer` wrote (0: the
    /// loaded data).
    pub fn record(&self, txn: usize, key: impl Into<String>, writer: i32, value: i64) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(LoggedRead {
                txn,
                key: key.into(),
                writer,
                value,
            });
    }

    pub fn into_reads(self) -> Vec<LoggedRead> {
        self.0.into_inner().unwrap_or_else(|e| e.into_inner())
    }
}

/// The committed versions of one run, in commit order, and each key's latest writer. Commits
/// are taken one at a time under the log's lock (the caller holds it across the engine's
/// commit), so that order is the engine's commit order, which for these engines is their
/// version order.
#[derive(Default)]
pub struct VersionLog {
    rows: Vec<VersionRow>,
    latest: HashMap<String, i32>,
}

impl VersionLog {
    /// `writer` committed its writes to `written` (in any order, a key any number of times):
    /// each key's new version follows its latest (0: the loaded data).
    pub fn commit(&mut self, writer: i32, written: &[String]) {
        let mut keys = written.to_vec();
        keys.sort();
        keys.dedup();
        for key in keys {
            let prev = self.latest.insert(key.clone(), writer).unwrap_or(0);
            self.rows.push((key, writer, Some(prev)));
        }
    }

    /// The rows as the tier reads a version log: (key, writer, previous writer).
    pub fn rows(&self) -> Vec<VersionRow> {
        self.rows.clone()
    }
}

/// A scan of a page on an engine that has no predicate read: the page's keys (of `keys`), each
/// read with `read` (so each read is logged as any other), those present, sorted.
pub fn scan_by_reads<'k, E>(
    keys: impl IntoIterator<Item = &'k String>,
    on_page: impl Fn(&str) -> bool,
    mut read: impl FnMut(&str) -> Result<Option<i64>, E>,
) -> Result<Vec<String>, E> {
    let mut found = Vec::new();
    for key in keys.into_iter().filter(|k| on_page(k)) {
        if read(key)?.is_some() {
            found.push(key.clone());
        }
    }
    found.sort();
    Ok(found)
}

/// A predicate read on a store with no predicates, as a program on it would do one: every key
/// of the workload read in key order (the store sees, and may guard, each of those reads), the
/// rows whose values match kept with their writers. Only those rows are the statement's item
/// reads: the caller's `get` logs nothing.
pub fn select_by_reads<'k, E>(
    keys: impl IntoIterator<Item = &'k String>,
    pred: Pred,
    mut get: impl FnMut(&str) -> Result<Option<(i64, i32)>, E>,
) -> Result<Vec<Row>, E> {
    let mut keys: Vec<&String> = keys.into_iter().collect();
    keys.sort();
    let mut rows = Vec::new();
    for key in keys {
        if let Some((value, writer)) = get(key)? {
            if pred.matches(Some(value)) {
                rows.push(Row {
                    key: key.clone(),
                    value,
                    writer,
                });
            }
        }
    }
    Ok(rows)
}

/// What a key-value store does for one `UPDATE` or `DELETE` statement, row by row, as a
/// program on a store with neither would: read each key [`targeted_keys`] names, and for each
/// row present that the target includes, put its new value or delete it ([`Edit::change`]).
pub enum Edit {
    Update(Set),
    Delete,
}

/// The keys an update or delete reads: its own key, or every key of the workload, in key order.
pub fn targeted_keys<'k>(keys: impl IntoIterator<Item = &'k String>, rows: &Rows) -> Vec<String> {
    let mut keys: Vec<String> = keys
        .into_iter()
        .filter(|k| !matches!(rows, Rows::Key(only) if only != *k))
        .cloned()
        .collect();
    keys.sort();
    keys
}

impl Edit {
    /// What the edit does to `key`, which the read `found` (value and writer; `None`: absent):
    /// nothing, or a change naming the version it replaces.
    pub fn change(&self, rows: &Rows, key: &str, found: Option<(i64, i32)>) -> Option<Change> {
        let (value, writer) = found?;
        if !rows.includes(key, Some(value)) {
            return None;
        }
        Some(Change {
            key: key.to_string(),
            value: match self {
                Edit::Update(set) => Some(set.apply(value)),
                Edit::Delete => None,
            },
            replaced: Some(writer),
        })
    }
}
