//! Workloads run as transactions: the model's programs (`loadbearing_workload::workload`),
//! statement by statement, and one the model's statements cannot express — a predicate read
//! followed by an insert-if-absent — for the engine and the tier only.
//!
//! The serializability oracle is the model's (`serial::serializable`) for the model's workloads
//! and the same search, over serial orders of the committed transactions, for the predicate one.

use std::collections::BTreeMap;
use std::fmt;

use loadbearing_workload::serial::{self, Seen};
use loadbearing_workload::workload::{self, eval, Pred, Set, Stmt, Target, Workload};

use crate::engine::{Engine, Error, Layout, Page, Txn};

/// What a statement observed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Observed {
    /// Not executed (yet).
    Nothing,
    /// A read: the value (None: absent).
    Value(Option<i64>),
    /// A scan of a page: the keys present on it.
    Rows(Vec<String>),
    /// A predicate read (`read where …`): each matching row, by key.
    Matched(Vec<Row>),
    /// An update or delete: each row it changed, by key.
    Changed(Vec<Change>),
    Wrote(i64),
    /// A conditional write whose condition was false.
    Skipped,
}

/// One row a predicate read returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub key: String,
    pub value: i64,
    /// The transaction whose version it is (`t + 1`; 0: the loaded data), as the store's writer
    /// column says.
    pub writer: i32,
}

/// One row an update or delete changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub key: String,
    /// Its new value; `None`: deleted.
    pub value: Option<i64>,
    /// The writer of the version it replaced, where the store said (a key-value store's read
    /// before its put); `None` for a SQL store, whose update replaces the latest committed
    /// version, the one before the writer's in the version order.
    pub replaced: Option<i32>,
}

/// The rows an update or delete targets, as a store is told them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rows {
    Key(String),
    Where(Pred),
}

impl Rows {
    /// Whether a row of `key` holding `value` is one of them (`None`: absent, never).
    pub fn includes(&self, key: &str, value: Option<i64>) -> bool {
        value.is_some()
            && match self {
                Rows::Key(k) => k == key,
                Rows::Where(p) => p.matches(value),
            }
    }
}

/// The kind of a statement, with its key: how replay and reports name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StmtKind {
    Read(String),
    Write(String),
    Scan(Page),
    Select(Pred),
    /// An update or delete: its target as the step says it (`x`, `where value = 20`), and its
    /// predicate where it has one.
    Change {
        target: String,
        pred: Option<Pred>,
    },
}

/// A predicate workload: every transaction reads a whole page (say, the bookings of one room)
/// and inserts its own key there if the page was empty. Keys differ, so first-updater-wins
/// cannot help: only the page's SIREAD markers can. Serially exactly one booking is made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Predicate {
    pub name: &'static str,
    pub txns: usize,
}

impl Predicate {
    pub const PAGE: Page = 0;

    fn key(t: usize) -> String {
        format!("room/T{}", t + 1)
    }
}

/// A workload the engine (and PostgreSQL) can run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Script {
    Model(Workload),
    Predicate(Predicate),
}

pub const PREDICATE: &str = "insert_if_absent";

/// The model's workloads by name, and `insert_if_absent`.
pub fn script(name: &str) -> Option<Script> {
    if name == PREDICATE {
        return Some(Script::Predicate(Predicate {
            name: PREDICATE,
            txns: 2,
        }));
    }
    workload::named(name).map(Script::Model)
}

impl Script {
    pub fn name(&self) -> &str {
        match self {
            Script::Model(w) => &w.name,
            Script::Predicate(p) => p.name,
        }
    }

    /// Whether transaction t's program ends by rolling itself back (`abort`).
    pub fn aborts(&self, t: usize) -> bool {
        match self {
            Script::Model(w) => w.ending(t) == workload::Ending::Abort,
            Script::Predicate(_) => false,
        }
    }

    pub fn txn_count(&self) -> usize {
        match self {
            Script::Model(w) => w.programs.len(),
            Script::Predicate(p) => p.txns,
        }
    }

    pub fn stmt_count(&self, t: usize) -> usize {
        match self {
            Script::Model(w) => w.programs[t].len(),
            Script::Predicate(_) => 2,
        }
    }

    /// Every key with its page.
    pub fn keys(&self) -> Vec<(String, Page)> {
        match self {
            Script::Model(w) => w
                .keys
                .iter()
                .zip(&w.pages)
                .map(|(k, p)| (k.to_string(), *p))
                .collect(),
            Script::Predicate(p) => (0..p.txns)
                .map(|t| (Predicate::key(t), Predicate::PAGE))
                .collect(),
        }
    }

    pub fn initial(&self) -> BTreeMap<String, Option<i64>> {
        match self {
            Script::Model(w) => w
                .keys
                .iter()
                .zip(&w.initial)
                .map(|(k, v)| (k.to_string(), v.map(i64::from)))
                .collect(),
            Script::Predicate(p) => (0..p.txns).map(|t| (Predicate::key(t), None)).collect(),
        }
    }

    pub fn layout(&self) -> Layout {
        self.keys()
            .into_iter()
            .fold(Layout::new(), |l, (k, p)| l.key(&k, p))
    }

    /// An engine with this script's layout and initial data.
    pub fn engine(&self, variant: crate::engine::Variant) -> Engine {
        let e = Engine::new(variant, self.layout());
        self.load(&e);
        e
    }

    pub fn load(&self, engine: &Engine) {
        for (k, v) in self.initial() {
            if let Some(v) = v {
                engine.load(&k, v);
            }
        }
    }

    pub fn stmt_kind(&self, t: usize, i: usize) -> StmtKind {
        match self {
            Script::Model(w) => match &w.programs[t][i] {
                Stmt::Read(k) => StmtKind::Read(w.keys[*k].to_string()),
                Stmt::Write { key, .. } | Stmt::Insert { key, .. } => {
                    StmtKind::Write(w.keys[*key].to_string())
                }
                Stmt::Select(p) => StmtKind::Select(*p),
                Stmt::Update { target, .. } | Stmt::Delete(target) => StmtKind::Change {
                    target: match target {
                        Target::Key(k) => w.keys[*k].to_string(),
                        Target::Where(p) => p.to_string(),
                    },
                    pred: match target {
                        Target::Key(_) => None,
                        Target::Where(p) => Some(*p),
                    },
                },
            },
            Script::Predicate(_) => match i {
                0 => StmtKind::Scan(Predicate::PAGE),
                _ => StmtKind::Write(Predicate::key(t)),
            },
        }
    }

    /// What statement i of transaction t does, given what the earlier statements observed:
    /// the action to take on a store.
    pub fn plan(&self, t: usize, i: usize, seen: &[Observed]) -> Plan {
        match self {
            Script::Model(w) => {
                let program = &w.programs[t];
                match &program[i] {
                    Stmt::Read(k) => Plan::Read(w.keys[*k].to_string()),
                    Stmt::Select(p) => Plan::Select(*p),
                    Stmt::Insert { key, value } => Plan::Insert(w.keys[*key].to_string(), *value),
                    Stmt::Update { target, set } => Plan::Update {
                        rows: rows(w, *target),
                        set: *set,
                    },
                    Stmt::Delete(target) => Plan::Delete(rows(w, *target)),
                    Stmt::Write {
                        key,
                        value,
                        only_if,
                    } => {
                        let reads = statement_reads(seen, program.len());
                        let last = |k: usize| serial::last_read(program, &reads, i, k);
                        let name = w.keys[*key].to_string();
                        if only_if.is_none_or(|(k, v)| last(k) == v) {
                            Plan::Write(name, eval::<i64>(value, &last))
                        } else {
                            Plan::Skip(name)
                        }
                    }
                }
            }
            Script::Predicate(_) => match i {
                0 => Plan::Scan(Predicate::PAGE),
                _ => {
                    let empty = matches!(&seen[0], Observed::Rows(r) if r.is_empty());
                    if empty {
                        Plan::Write(Predicate::key(t), 1)
                    } else {
                        Plan::Skip(Predicate::key(t))
                    }
                }
            },
        }
    }

    /// Runs statement i of transaction t on the engine.
    pub fn exec(
        &self,
        t: usize,
        i: usize,
        seen: &[Observed],
        txn: &Txn,
    ) -> Result<Observed, Error> {
        Ok(match self.plan(t, i, seen) {
            Plan::Read(k) => Observed::Value(txn.read(&k)?),
            Plan::Scan(p) => Observed::Rows(txn.scan(p)?.into_keys().collect()),
            Plan::Write(k, v) => {
                txn.write(&k, v)?;
                Observed::Wrote(v)
            }
            Plan::Skip(k) => {
                txn.skip_write(&k)?;
                Observed::Skipped
            }
            Plan::Select(_) | Plan::Insert(..) | Plan::Update { .. } | Plan::Delete(_) => {
                return Err(outside_the_engine())
            }
        })
    }

    /// Does some serial order of `committed` reproduce what each of them observed and `state`
    /// (the committed value of every key)?
    pub fn serializable(
        &self,
        committed: &[usize],
        observed: &[Vec<Observed>],
        state: &BTreeMap<String, Option<i64>>,
    ) -> bool {
        match self {
            Script::Model(w) => {
                let final_state: Vec<Option<i64>> = w
                    .keys
                    .iter()
                    .map(|k| state.get(k).copied().flatten())
                    .collect();
                serial::serializable_rows(
                    w,
                    committed,
                    &|t| seen_of(w, &observed[t], w.programs[t].len()),
                    &final_state,
                )
            }
            Script::Predicate(p) => serial::permutations(committed).iter().any(|order| {
                let mut present: BTreeMap<String, i64> = BTreeMap::new();
                for &t in order {
                    let rows: Vec<String> = present.keys().cloned().collect();
                    if observed[t].first() != Some(&Observed::Rows(rows.clone())) {
                        return false;
                    }
                    if rows.is_empty() {
                        present.insert(Predicate::key(t), 1);
                    }
                }
                (0..p.txns).all(|t| {
                    let k = Predicate::key(t);
                    state.get(&k).copied().flatten() == present.get(&k).copied()
                })
            }),
        }
    }

    /// The programs, one line per transaction.
    pub fn text(&self) -> String {
        match self {
            Script::Model(w) => w.to_string(),
            Script::Predicate(p) => (0..p.txns)
                .map(|t| {
                    format!(
                        "T{}: scan page {}; insert {}=1 if the page was empty\n",
                        t + 1,
                        Predicate::PAGE,
                        Predicate::key(t)
                    )
                })
                .collect(),
        }
    }
}

/// One statement's action on a store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    Read(String),
    Scan(Page),
    /// Every row whose value matches, in key order.
    Select(Pred),
    Write(String, i64),
    /// Adds a row that must be absent.
    Insert(String, i64),
    /// Sets each targeted row's value in one statement.
    Update {
        rows: Rows,
        set: Set,
    },
    /// Removes each targeted row.
    Delete(Rows),
    Skip(String),
}

/// A statement's target as a store is told it.
fn rows(w: &Workload, target: Target) -> Rows {
    match target {
        Target::Key(k) => Rows::Key(w.keys[k].to_string()),
        Target::Where(p) => Rows::Where(p),
    }
}

/// The SSI engine's answer to a statement the model has no counterpart of: it runs the model's
/// workloads only (the isolation runs give it none outside the model).
pub fn outside_the_engine() -> Error {
    Error::NotAllowed(
        "the SSI engine runs the model's statements; predicate reads and inserts are outside the model"
            .into(),
    )
}

/// What the serial oracle compares of a transaction's statements: each read's value, each
/// predicate read's rows (by key index), nothing for the rest.
pub fn seen_of(w: &Workload, seen: &[Observed], len: usize) -> Vec<Seen> {
    (0..len)
        .map(|i| match seen.get(i) {
            Some(Observed::Value(v)) => Seen::Value(*v),
            Some(Observed::Matched(rows)) => Seen::Rows(
                rows.iter()
                    .map(|r| {
                        let k = w.keys.iter().position(|k| *k == r.key);
                        // A row of no key of the workload matches no serial run's.
                        (k.unwrap_or(usize::MAX), r.value)
                    })
                    .collect(),
            ),
            Some(Observed::Changed(rows)) => Seen::Changed(
                rows.iter()
                    .map(|r| {
                        let k = w.keys.iter().position(|k| *k == r.key);
                        (k.unwrap_or(usize::MAX), r.value)
                    })
                    .collect(),
            ),
            _ => Seen::Nothing,
        })
        .collect()
}

/// A transaction's reads as its writes compute from them: by statement index, the value each
/// read returned.
pub fn statement_reads(seen: &[Observed], len: usize) -> Vec<Option<i64>> {
    (0..len)
        .map(|i| match seen.get(i) {
            Some(Observed::Value(v)) => *v,
            _ => None,
        })
        .collect()
}

/// How one transaction ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TxnResult {
    Committed,
    /// The error kind (`SnapshotUnsafe`, `AppAbort`, or PostgreSQL's SQLSTATE and reason).
    Aborted(String),
    /// Never finished (a stuck or lost run).
    Unfinished,
}

impl fmt::Display for TxnResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TxnResult::Committed => write!(f, "committed"),
            TxnResult::Aborted(why) => write!(f, "{why}"),
            TxnResult::Unfinished => write!(f, "unfinished"),
        }
    }
}

/// A finished run of a script on some store, judged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub results: Vec<TxnResult>,
    pub observed: Vec<Vec<Observed>>,
    /// The committed value of every key of the script.
    pub state: BTreeMap<String, Option<i64>>,
    pub serializable: bool,
}

impl Outcome {
    pub fn judge(
        script: &Script,
        results: Vec<TxnResult>,
        observed: Vec<Vec<Observed>>,
        state: BTreeMap<String, Option<i64>>,
    ) -> Outcome {
        let committed: Vec<usize> = (0..results.len())
            .filter(|&t| results[t] == TxnResult::Committed)
            .collect();
        let serializable = script.serializable(&committed, &observed, &state);
        Outcome {
            results,
            observed,
            state,
            serializable,
        }
    }

    /// `T1 SnapshotConflict` / `all commit`: who aborted and why.
    pub fn summary(&self) -> String {
        let aborted: Vec<String> = self
            .results
            .iter()
            .enumerate()
            .filter(|(_, r)| **r != TxnResult::Committed)
            .map(|(t, r)| format!("T{} {r}", t + 1))
            .collect();
        if aborted.is_empty() {
            "all commit".into()
        } else {
            aborted.join(", ")
        }
    }

    pub fn state_text(&self) -> String {
        self.state
            .iter()
            .map(|(k, v)| match v {
                Some(v) => format!("{k}={v}"),
                None => format!("{k}=absent"),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The engine's committed state of a script's keys, and each transaction's result.
pub fn engine_outcome(script: &Script, engine: &Engine, observed: Vec<Vec<Observed>>) -> Outcome {
    let txns = engine.txns();
    let results = (0..script.txn_count())
        .map(|t| match txns.get(t) {
            Some(v) if v.status == crate::engine::Status::Committed => TxnResult::Committed,
            Some(v) => match v.failure {
                Some(f) => TxnResult::Aborted(f.name().to_string()),
                None => TxnResult::Unfinished,
            },
            None => TxnResult::Unfinished,
        })
        .collect();
    let state = script
        .keys()
        .into_iter()
        .map(|(k, _)| {
            let v = engine.committed_value(&k);
            (k, v)
        })
        .collect();
    Outcome::judge(script, results, observed, state)
}

/// A script's transactions on one engine, driven one step at a time (a deterministic
/// scheduler: whoever calls decides the interleaving). Transaction t is registered as
/// `T{t+1}` up front, so the writer path visits T1 first, as the model does.
pub struct Session<'e> {
    pub script: &'e Script,
    pub engine: &'e Engine,
    txns: Vec<Txn<'e>>,
    pub pc: Vec<usize>,
    pub observed: Vec<Vec<Observed>>,
}

impl<'e> Session<'e> {
    pub fn new(script: &'e Script, engine: &'e Engine) -> Session<'e> {
        let n = script.txn_count();
        Session {
            script,
            engine,
            txns: (0..n)
                .map(|t| engine.register(&format!("T{}", t + 1)))
                .collect(),
            pc: vec![0; n],
            observed: (0..n)
                .map(|t| vec![Observed::Nothing; script.stmt_count(t)])
                .collect(),
        }
    }

    pub fn txn(&self, t: usize) -> Txn<'e> {
        self.txns[t]
    }

    /// Transaction t's next statement.
    pub fn next(&mut self, t: usize) -> Result<Observed, Error> {
        let i = self.pc[t];
        if i >= self.script.stmt_count(t) {
            return Err(Error::NotAllowed(format!(
                "T{} has no statement left",
                t + 1
            )));
        }
        let seen = self.script.exec(t, i, &self.observed[t], &self.txns[t])?;
        self.observed[t][i] = seen.clone();
        self.pc[t] += 1;
        Ok(seen)
    }

    pub fn outcome(&self) -> Outcome {
        engine_outcome(self.script, self.engine, self.observed.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Variant;

    #[test]
    fn the_predicate_script_is_serializable_only_with_one_booking() {
        let s = script(PREDICATE).unwrap();
        let empty = Observed::Rows(vec![]);
        let saw_t1 = Observed::Rows(vec!["room/T1".into()]);
        let one: BTreeMap<String, Option<i64>> = [
            ("room/T1".to_string(), Some(1)),
            ("room/T2".to_string(), None),
        ]
        .into();
        let both: BTreeMap<String, Option<i64>> = [
            ("room/T1".to_string(), Some(1)),
            ("room/T2".to_string(), Some(1)),
        ]
        .into();
        let serial = vec![
            vec![empty.clone(), Observed::Wrote(1)],
            vec![saw_t1, Observed::Skipped],
        ];
        assert!(s.serializable(&[0, 1], &serial, &one));
        let skew = vec![
            vec![empty.clone(), Observed::Wrote(1)],
            vec![empty, Observed::Wrote(1)],
        ];
        assert!(!s.serializable(&[0, 1], &skew, &both));
    }

    #[test]
    fn a_session_runs_the_model_programs_serially_like_the_oracle() {
        for name in workload::NAMES.iter().copied().chain([PREDICATE]) {
            let s = script(name).unwrap();
            let e = s.engine(Variant::FIX);
            let mut run = Session::new(&s, &e);
            for t in 0..s.txn_count() {
                run.txn(t).begin().unwrap();
                while run.pc[t] < s.stmt_count(t) {
                    run.next(t).unwrap();
                }
                run.txn(t).commit().unwrap();
            }
            let outcome = run.outcome();
            assert_eq!(outcome.summary(), "all commit", "{name}");
            assert!(outcome.serializable, "{name}: {outcome:?}");
        }
    }
}
