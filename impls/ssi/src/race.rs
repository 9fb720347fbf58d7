//! A user's workload (a workload file) raced on a store: its transactions on one thread each,
//! no waits, seeded jitter between steps, many attempts. Every finished run becomes a [`History`] — who read whose version, every key's order of committed
//! versions — taken from what the store itself knows (the engine's version records, PostgreSQL's
//! writer column and version log), never guessed from values, and is classified as the isolation
//! literature names anomalies (`loadbearing_workload::anomaly`): the same classes the model's
//! exploration reports for the file, so a store's observations can be held to the model's.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use loadbearing_workload::anomaly::{
    classify_within, History, PredRead, ReadOp, TxnId, TxnRecord, Writer, CLASSIFY_BUDGET,
};
use loadbearing_workload::workload::{Pred, Workload};

use crate::engine::{Engine, Status, TxnView, Variant};
use crate::judge::{Divergence, Judge};
use crate::program::{engine_outcome, Change, Observed, Outcome, Script, StmtKind, TxnResult};
use crate::tier::{attempt_seed, count_conformance, history_text, run_all, Scenario, Schedule};
use crate::trace::Recorder;

/// The scenario of a race: no waits, no application abort.
pub fn free_race() -> Scenario {
    Scenario {
        name: "race",
        script: "",
        timing: "no waits: the transactions race freely (seeded jitter only)",
        waits: Vec::new(),
        app_abort: None,
    }
}

/// The schedule of attempt `i`: the same seeds on every store, so a rerun repeats its jitter.
pub fn schedule(i: usize, jitter_us: u64) -> Schedule {
    Schedule::new(
        Vec::new(),
        Duration::from_secs(20),
        jitter_us,
        attempt_seed(i),
    )
}

/// An anomaly class as a store showed it: how often, and the first time.
#[derive(Clone, Debug, Serialize)]
pub struct Seen {
    /// Attempts whose history had it.
    pub attempts: usize,
    /// Its evidence in the first such attempt (`T1 -rw(bob)-> T2 -rw(alice)-> T1`).
    pub example: String,
    /// That attempt's run in a few words.
    pub history: String,
}

/// One store's race of a workload.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Race {
    /// `fix`, `plainsi`, … `postgres`.
    pub store: String,
    pub attempts: usize,
    /// Attempts by outcome (`all commit`, `T2 SnapshotUnsafe`).
    pub outcomes: BTreeMap<String, usize>,
    /// Attempts whose committed transactions have no anomaly.
    pub serializable: usize,
    /// Anomaly label (`G2-item (write skew)`) → how the store showed it.
    pub anomalies: BTreeMap<String, Seen>,
    /// Attempts whose history could not be established (the reason of the first): they are
    /// neither serializable nor anomalous.
    pub unknown: usize,
    pub example_unknown: Option<String>,
    /// Attempts the value oracle finds unserializable (no serial order reproduces the reads
    /// and the final state) although the graph has no anomaly: the graph missed something.
    pub unexplained: usize,
    /// Engine traces replayed in the model: (conforming, checked).
    pub conforming: Option<(usize, usize)>,
    pub example_divergence: Option<String>,
}

impl Race {
    pub fn new(store: &str) -> Race {
        Race {
            store: store.into(),
            ..Race::default()
        }
    }

    /// Adds one attempt: its judged outcome, and its history (or why there is none). Gives
    /// the attempt's anomaly labels, sorted (none when its history is unknown).
    pub fn add(
        &mut self,
        outcome: &Outcome,
        history: Result<History, String>,
        describe: impl Fn() -> String,
    ) -> Vec<String> {
        self.attempts += 1;
        *self.outcomes.entry(outcome.summary()).or_default() += 1;
        let history = match history {
            Ok(h) => h,
            Err(why) => {
                self.unknown += 1;
                self.example_unknown.get_or_insert(why);
                return Vec::new();
            }
        };
        // A history of many transactions could have more cycles than anyone can follow: past
        // the classifier's budget it is a history not established, saying so.
        let found = match classify_within(&history, CLASSIFY_BUDGET) {
            Ok(found) => found,
            Err(over) => {
                self.unknown += 1;
                self.example_unknown.get_or_insert(over.to_string());
                return Vec::new();
            }
        };
        if found.is_empty() {
            self.serializable += 1;
            if !outcome.serializable {
                self.unexplained += 1;
            }
        }
        let mut labels: Vec<(String, String)> = found
            .iter()
            .map(|a| (a.label(), a.evidence_text(&history.keys)))
            .collect();
        // One count per attempt and label, the first piece of evidence as the example.
        labels.sort_by(|a, b| a.0.cmp(&b.0));
        labels.dedup_by(|a, b| a.0 == b.0);
        let names = labels.iter().map(|(l, _)| l.clone()).collect();
        for (label, evidence) in labels {
            self.anomalies
                .entry(label)
                .and_modify(|s| s.attempts += 1)
                .or_insert_with(|| Seen {
                    attempts: 1,
                    example: evidence,
                    history: describe(),
                });
        }
        names
    }

    /// Adds one trace's verdict in the model (the first divergence is kept as the example).
    pub fn add_conformance(&mut self, verdict: &Result<(), Divergence>) {
        count_conformance(&mut self.conforming, &mut self.example_divergence, verdict);
    }

    /// The anomaly labels the store showed, sorted.
    pub fn labels(&self) -> Vec<String> {
        self.anomalies.keys().cloned().collect()
    }

    /// What is wrong with this race when the store may show at most `allowed` (the labels the
    /// model reaches for its design; empty for a serializable store): every anomaly outside
    /// it, every history that could not be established or that the graph cannot explain, every
    /// trace outside the model.
    pub fn problems(&self, allowed: &[String]) -> Vec<String> {
        let mut out = Vec::new();
        for (label, seen) in &self.anomalies {
            if !allowed.contains(label) {
                out.push(format!(
                    "{}: {label} in {} of {} attempts, which its model never reaches: {} ({})",
                    self.store, seen.attempts, self.attempts, seen.example, seen.history
                ));
            }
        }
        if self.unknown > 0 {
            out.push(format!(
                "{}: {} of {} histories could not be established: {}",
                self.store,
                self.unknown,
                self.attempts,
                self.example_unknown.as_deref().unwrap_or("")
            ));
        }
        if self.unexplained > 0 {
            out.push(format!(
                "{}: {} histories have no serial order by their values yet no anomaly in the graph",
                self.store, self.unexplained
            ));
        }
        if let Some((ok, n)) = self.conforming {
            if ok < n {
                out.push(format!(
                    "{}: {} of {n} traces are outside the model: {}",
                    self.store,
                    n - ok,
                    self.example_divergence.as_deref().unwrap_or("")
                ));
            }
        }
        out
    }
}

/// The engine's history of a finished run of `workload`: reads from the engine's version
/// records, version order from commit sequence numbers. Transaction t is the t-th registered.
pub fn engine_history(workload: &Workload, views: &[TxnView]) -> Result<History, String> {
    let key = |name: &str| {
        workload
            .keys
            .iter()
            .position(|k| k == name)
            .ok_or_else(|| format!("the engine reports key `{name}`, which the workload lacks"))
    };
    let txn_of = |id: usize| {
        views
            .iter()
            .position(|v| v.id == id)
            .ok_or_else(|| format!("a version written by unknown transaction {id}"))
    };
    let txns = views
        .iter()
        .map(|v| {
            Ok(TxnRecord {
                committed: v.status == Status::Committed,
                reads: v
                    .reads
                    .iter()
                    .map(|r| {
                        Ok(ReadOp {
                            key: key(&r.key)?,
                            from: match r.writer {
                                None => Writer::Initial,
                                Some(id) => Writer::Txn(txn_of(id)?),
                            },
                            // A transaction's versions of a key are visible to others only
                            // once committed, and then only its last: no intermediate reads.
                            intermediate: false,
                        })
                    })
                    .collect::<Result<_, String>>()?,
                writes: v
                    .writes
                    .iter()
                    .map(|k| key(k))
                    .collect::<Result<_, String>>()?,
                // The engine runs the model's statements only: no predicate reads, and a
                // transaction's reads of its own keys come from its own version.
                predicate_reads: Vec::new(),
                internal: Vec::new(),
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let version_order = (0..workload.keys.len())
        .map(|k| {
            let mut writers: Vec<(u64, usize)> = txns
                .iter()
                .enumerate()
                .filter(|(_, t)| t.committed && t.writes.contains(&k))
                .map(|(t, _)| (views[t].commit_seq, t))
                .collect();
            writers.sort();
            writers.into_iter().map(|(_, t)| t).collect()
        })
        .collect();
    Ok(History {
        keys: workload.keys.iter().map(|k| k.to_string()).collect(),
        txns,
        version_order,
        values: Vec::new(),
    })
}

/// A read as a store answered it, for stores that keep the writer beside the value
/// (PostgreSQL's writer column and version log): transaction, key, whose version it saw
/// (0: the loaded data, t+1: transaction t), and the value it saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggedRead {
    pub txn: usize,
    pub key: String,
    pub writer: i32,
    pub value: i64,
}

/// A finished run on a store: how each transaction ended, what each observed, every logged
/// read.
pub type Run = (Vec<TxnResult>, Vec<Vec<Observed>>, Vec<LoggedRead>);

/// A row of a store's version log: the key, the writer of the new version, the writer of the
/// version it replaced (none for an insert).
pub type VersionRow = (String, i32, Option<i32>);

/// Each key's version order as a store's version log chains it from the loaded version: the
/// committed rows `(key, writer, previous writer)` in the order the log wrote them, a
/// transaction's later writes of a key no new version. An insert names no
/// previous writer (its trigger sees no old row): it follows the version it can only follow,
/// one where the row is absent (the start of a key that starts absent, or a deletion), and
/// of two inserts of one key the one the log wrote first comes first (the second could only
/// be written once a deletion after the first had committed).
pub fn chained(
    versions: &[VersionRow],
) -> impl Fn(&str, &[TxnRecord]) -> Result<Vec<usize>, String> + '_ {
    move |name, txns| {
        // New versions of this key, in log order: (writer, the writer it replaced; `None`
        // for an insert).
        let mut links: Vec<(i32, Option<i32>)> = Vec::new();
        for (_, w, prev) in versions.iter().filter(|(vk, w, _)| vk == name && *w != 0) {
            // A writer's first row links its version; its later ones (an update of its own
            // row, an insert after its own delete) are that same version.
            if !links.iter().any(|(seen, _)| seen == w) {
                links.push((*w, *prev));
            }
        }
        let mut order = Vec::new();
        let mut current = 0;
        while !links.is_empty() {
            let mut next: Vec<usize> = (0..links.len())
                .filter(|&i| links[i].1 == Some(current))
                .collect();
            if next.is_empty() {
                // Nothing replaces the current version: the row is absent, and the first
                // insert follows.
                next.extend((0..links.len()).find(|&i| links[i].1.is_none()));
            }
            let [i] = next[..] else {
                let after = match current {
                    0 => "the loaded version".to_string(),
                    w => format!("T{w}'s"),
                };
                return Err(format!(
                    "the version log of `{name}` does not chain: {} versions follow {after}",
                    next.len()
                ));
            };
            current = links.remove(i).0;
            match writer(current, txns.len())? {
                Writer::Txn(t) if txns[t].committed => order.push(t),
                _ => {
                    return Err(format!(
                        "the version log of `{name}` holds an uncommitted writer"
                    ))
                }
            }
        }
        Ok(order)
    }
}

/// The writer a store's writer field names, among `txns` transactions.
pub fn writer(w: i32, txns: usize) -> Result<Writer, String> {
    match w {
        0 => Ok(Writer::Initial),
        w if w > 0 && (w as usize) <= txns => Ok(Writer::Txn(w as usize - 1)),
        w => Err(format!("a version written by unknown transaction {w}")),
    }
}

/// A run's history from a store's logged reads: writes are the statements that wrote,
/// commitment the transactions' results, and each key's committed versions in the order
/// `version_order` (given the key's name and the transactions) establishes. A predicate read's
/// rows are item reads of their versions; each row it did not return it saw in one of the
/// versions that do not match (the store says no more), its own where it had written it. An
/// update or delete reads each row it changes, in the version it replaced (the store's word
/// for a key-value store's read, else the version before its own in the version order); one
/// with a predicate is a predicate read too, its changed rows the rows it returned.
pub fn logged_history(
    script: &Script,
    workload: &Workload,
    results: &[TxnResult],
    observed: &[Vec<Observed>],
    reads: &[LoggedRead],
    version_order: impl Fn(&str, &[TxnRecord]) -> Result<Vec<TxnId>, String>,
) -> Result<History, String> {
    let key = |name: &str| key_of(workload, name);
    let last_written = (0..results.len())
        .map(|t| last_written(script, workload, t, &observed[t]))
        .collect::<Result<Vec<_>, String>>()?;
    let mut txns = Vec::new();
    for (t, result) in results.iter().enumerate() {
        // The keys it wrote, in the order of their first writes.
        let mut writes = Vec::new();
        for (i, seen) in observed[t].iter().enumerate() {
            for (k, _) in stmt_writes(script, workload, t, i, seen)? {
                if !writes.contains(&k) {
                    writes.push(k);
                }
            }
        }
        let mut item_reads = reads
            .iter()
            .filter(|r| r.txn == t)
            .map(|r| Ok((key(&r.key)?, r.writer, r.value)))
            .collect::<Result<Vec<_>, String>>()?;
        for seen in &observed[t] {
            if let Observed::Matched(rows) = seen {
                for row in rows {
                    item_reads.push((key(&row.key)?, row.writer, row.value));
                }
            }
        }
        let reads = item_reads
            .into_iter()
            .map(|(key, w, value)| {
                let from = writer(w, results.len())?;
                Ok(ReadOp {
                    key,
                    from,
                    intermediate: intermediate(&last_written, t, from, key, value),
                })
            })
            .collect::<Result<_, String>>()?;
        txns.push(TxnRecord {
            committed: *result == TxnResult::Committed,
            reads,
            writes,
            predicate_reads: Vec::new(),
            internal: internal_reads(script, workload, t, &observed[t])?,
        });
    }
    let version_order: Vec<Vec<TxnId>> = workload
        .keys
        .iter()
        .map(|name| version_order(name, &txns))
        .collect::<Result<_, String>>()?;
    // Only committed transactions' reads have edges (what an aborted one saw is moot).
    for (t, txn) in txns.iter_mut().enumerate().filter(|(_, x)| x.committed) {
        for (k, from) in changed_reads(workload, results.len(), t, &observed[t], &version_order)? {
            if !txn.reads.iter().any(|r| r.key == k) {
                txn.reads.push(ReadOp {
                    key: k,
                    from,
                    intermediate: false,
                });
            }
        }
    }
    let predicates = observed
        .iter()
        .flatten()
        .any(|s| matches!(s, Observed::Matched(_)) || matches!(s, Observed::Changed(_)));
    let mut values = Vec::new();
    if predicates {
        values = version_values(script, workload, &last_written, &version_order)?;
        for (t, txn) in txns.iter_mut().enumerate().filter(|(_, x)| x.committed) {
            txn.predicate_reads =
                predicate_reads(script, workload, t, &observed[t], &version_order, &values)?;
        }
    }
    Ok(History {
        keys: workload.keys.iter().map(|k| k.to_string()).collect(),
        txns,
        version_order,
        values,
    })
}

/// What statement `i` of transaction `t`, which showed `seen`, wrote: each key with the value
/// it left (`None`: deleted). The one place that says which statements write.
fn stmt_writes(
    script: &Script,
    workload: &Workload,
    t: usize,
    i: usize,
    seen: &Observed,
) -> Result<Vec<(usize, Option<i64>)>, String> {
    match (seen, script.stmt_kind(t, i)) {
        (Observed::Wrote(v), StmtKind::Write(k)) => Ok(vec![(key_of(workload, &k)?, Some(*v))]),
        (Observed::Changed(rows), _) => rows
            .iter()
            .map(|r| Ok((key_of(workload, &r.key)?, r.value)))
            .collect(),
        _ => Ok(Vec::new()),
    }
}

/// Each key transaction `t` wrote, with the value its last write of it left (`None`: deleted).
fn last_written(
    script: &Script,
    workload: &Workload,
    t: usize,
    observed: &[Observed],
) -> Result<BTreeMap<usize, Option<i64>>, String> {
    let mut last = BTreeMap::new();
    for (i, seen) in observed.iter().enumerate() {
        last.extend(stmt_writes(script, workload, t, i, seen)?);
    }
    Ok(last)
}

/// Whether transaction `reader`'s read of `key`, which saw `value` in a version of `from`'s,
/// saw one of `from`'s intermediate versions (Adya's G1b): the store names the writer, and the
/// value is not the one the writer's last write of the key left. A writer that wrote one value
/// twice leaves its intermediate version indistinguishable from its last, and such a read is
/// taken as the last (a value it did leave): never a G1b that did not happen.
fn intermediate(
    last_written: &[BTreeMap<usize, Option<i64>>],
    reader: usize,
    from: Writer,
    key: usize,
    value: i64,
) -> bool {
    match from {
        Writer::Txn(w) if w != reader => last_written[w]
            .get(&key)
            .is_some_and(|last| *last != Some(value)),
        _ => false,
    }
}

/// The index of the key a store names.
fn key_of(workload: &Workload, name: &str) -> Result<usize, String> {
    workload
        .keys
        .iter()
        .position(|k| k == name)
        .ok_or_else(|| format!("the store reports key `{name}`, which the workload lacks"))
}

/// The keys transaction `t` read after writing them without seeing its own write: a read of the
/// key, or a predicate read that returned the row otherwise than its own write left it (or
/// passed over a row its own write left matching).
fn internal_reads(
    script: &Script,
    workload: &Workload,
    t: usize,
    observed: &[Observed],
) -> Result<Vec<usize>, String> {
    // Each key's value as the transaction's own writes so far left it (`None`: deleted).
    let mut own: BTreeMap<usize, Option<i64>> = BTreeMap::new();
    let mut missed = Vec::new();
    for (i, seen) in observed.iter().enumerate() {
        match (seen, script.stmt_kind(t, i)) {
            (Observed::Value(v), StmtKind::Read(k)) => {
                let k = key_of(workload, &k)?;
                if own.get(&k).is_some_and(|mine| mine != v) {
                    missed.push(k);
                }
            }
            (Observed::Matched(rows), StmtKind::Select(pred)) => {
                for (&k, mine) in &own {
                    let name = &workload.keys[k];
                    let returned = rows.iter().find(|r| r.key == *name).map(|r| r.value);
                    let expected = mine.filter(|v| pred.matches(Some(*v)));
                    if returned != expected {
                        missed.push(k);
                    }
                }
            }
            _ => own.extend(stmt_writes(script, workload, t, i, seen)?),
        }
    }
    missed.sort();
    missed.dedup();
    Ok(missed)
}

/// The version an update or delete read of a row it changed: the one it replaced, as a
/// key-value store said, or the one before its writer's own in the version order.
fn replaced(
    change: &Change,
    k: usize,
    t: usize,
    version_order: &[Vec<TxnId>],
    txns: usize,
) -> Result<Option<Writer>, String> {
    if let Some(w) = change.replaced {
        return writer(w, txns).map(Some);
    }
    let order = &version_order[k];
    Ok(order.iter().position(|&w| w == t).map(|i| match i {
        0 => Writer::Initial,
        i => Writer::Txn(order[i - 1]),
    }))
}

/// Committed transaction `t`'s reads of the rows its updates and deletes changed.
fn changed_reads(
    workload: &Workload,
    txns: usize,
    t: usize,
    observed: &[Observed],
    version_order: &[Vec<TxnId>],
) -> Result<Vec<(usize, Writer)>, String> {
    let mut out = Vec::new();
    for seen in observed {
        let Observed::Changed(rows) = seen else {
            continue;
        };
        for change in rows {
            let k = key_of(workload, &change.key)?;
            if let Some(from) = replaced(change, k, t, version_order, txns)? {
                out.push((k, from));
            }
        }
    }
    Ok(out)
}

/// The value of each key's versions: the loaded one, then each committed writer's last write
/// of the key (`None`: a deletion).
fn version_values(
    script: &Script,
    workload: &Workload,
    last_written: &[BTreeMap<usize, Option<i64>>],
    version_order: &[Vec<TxnId>],
) -> Result<Vec<Vec<Option<i64>>>, String> {
    let initial = script.initial();
    workload
        .keys
        .iter()
        .zip(version_order)
        .enumerate()
        .map(|(k, (name, order))| {
            let mut values = vec![initial.get(name).copied().flatten()];
            for &t in order {
                let last = last_written[t].get(&k).ok_or_else(|| {
                    format!("T{} has a version of `{name}` yet wrote none", t + 1)
                })?;
                values.push(*last);
            }
            Ok(values)
        })
        .collect()
}

/// Transaction `t`'s predicate reads (`read where`, and updates and deletes by predicate) with
/// the versions each saw of every key.
fn predicate_reads(
    script: &Script,
    workload: &Workload,
    t: usize,
    observed: &[Observed],
    version_order: &[Vec<TxnId>],
    values: &[Vec<Option<i64>>],
) -> Result<Vec<PredRead>, String> {
    let txns = script.txn_count();
    let mut out = Vec::new();
    // The keys the transaction wrote before the statement at hand, gathered as it goes.
    let mut wrote_before: Vec<usize> = Vec::new();
    for (i, seen) in observed.iter().enumerate() {
        let before = wrote_before.len();
        wrote_before.extend(
            stmt_writes(script, workload, t, i, seen)?
                .into_iter()
                .map(|(k, _)| k),
        );
        let wrote_before = &wrote_before[..before];
        // The rows the statement returned or changed, each with the version it saw.
        let (pred, returned): (Pred, Vec<(String, Writer)>) = match (seen, script.stmt_kind(t, i)) {
            (Observed::Matched(rows), StmtKind::Select(pred)) => (
                pred,
                rows.iter()
                    .map(|r| Ok((r.key.clone(), writer(r.writer, txns)?)))
                    .collect::<Result<_, String>>()?,
            ),
            (
                Observed::Changed(rows),
                StmtKind::Change {
                    pred: Some(pred), ..
                },
            ) => {
                let mut returned = Vec::new();
                for change in rows {
                    let k = key_of(workload, &change.key)?;
                    if let Some(from) = replaced(change, k, t, version_order, txns)? {
                        returned.push((change.key.clone(), from));
                    }
                }
                (pred, returned)
            }
            _ => continue,
        };
        let mut per_key = Vec::new();
        for (k, name) in workload.keys.iter().enumerate() {
            let versions = &version_order[k];
            let candidates = if let Some((_, from)) = returned.iter().find(|(n, _)| n == name) {
                vec![*from]
            } else if wrote_before.contains(&k) {
                vec![Writer::Txn(t)]
            } else {
                let all = std::iter::once(Writer::Initial)
                    .chain(versions.iter().map(|&w| Writer::Txn(w)));
                let unmatched: Vec<Writer> = all
                    .zip(&values[k])
                    .filter(|(_, v)| !pred.matches(**v))
                    .map(|(w, _)| w)
                    .collect();
                if unmatched.is_empty() {
                    return Err(format!(
                        "T{}'s statement {} by `{pred}` passed over `{name}`, yet every committed version of it matches",
                        t + 1,
                        i + 1
                    ));
                }
                unmatched
            };
            per_key.push(candidates);
        }
        out.push(PredRead {
            pred,
            seen: per_key,
        });
    }
    Ok(out)
}

/// Each key's committed writers in the order of their END events in a linearized trace (a
/// store whose writers of one key cannot overlap: a second writer waits or fails until the
/// first has ended).
pub fn by_end_order<'a>(
    trace: &'a [crate::trace::EngineEvent],
    keys: &'a [String],
) -> impl Fn(&str, &[TxnRecord]) -> Result<Vec<TxnId>, String> + 'a {
    let ended: Vec<usize> = trace
        .iter()
        .filter_map(|e| match e {
            crate::trace::EngineEvent::End { txn, failed: None } => Some(txn.index()),
            _ => None,
        })
        .collect();
    move |name, txns| {
        let k = keys
            .iter()
            .position(|n| n == name)
            .ok_or_else(|| format!("no key `{name}`"))?;
        Ok(ended
            .iter()
            .copied()
            .filter(|&t| t < txns.len() && txns[t].committed && txns[t].writes.contains(&k))
            .collect())
    }
}

/// `attempts` races of `workload` on fresh engines of `variant`, each trace also judged by
/// `judge` (if any; the CLI's replays it in the variant's model).
pub fn race_engine(
    workload: &Workload,
    variant: &str,
    attempts: usize,
    jitter_us: u64,
    judge: Option<&dyn Judge>,
) -> Race {
    let v = Variant::named(variant).expect("a known variant");
    let script = Script::Model(workload.clone());
    let scenario = free_race();
    let mut race = Race::new(variant);
    for i in 0..attempts {
        let recorder = Recorder::new();
        let engine = Engine::new(v, script.layout())
            .with_tracer(recorder.clone() as Arc<dyn crate::trace::Tracer>);
        script.load(&engine);
        let txns: Vec<_> = (0..script.txn_count())
            .map(|t| engine.register(&format!("T{}", t + 1)))
            .collect();
        let sched = schedule(i, jitter_us);
        let (_, observed) = run_all(&script, &scenario, &sched, txns);
        let outcome = engine_outcome(&script, &engine, observed);
        let trace = recorder.events();
        let history = engine_history(workload, &engine.txns());
        race.add(&outcome, history, || history_text(&trace, &outcome));
        if let Some(judge) = judge {
            race.add_conformance(&judge.judge(v, workload, &trace));
        }
    }
    race
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::Session;
    use loadbearing_workload::anomaly::classify;
    use loadbearing_workload::workload::named;

    /// Both read, both write, both commit: the write skew, driven step by step.
    fn skew_on(variant: Variant) -> (Outcome, Result<History, String>) {
        let w = named("write_skew").unwrap();
        let script = Script::Model(w.clone());
        let engine = script.engine(variant);
        let mut run = Session::new(&script, &engine);
        run.txn(0).begin().unwrap();
        run.txn(1).begin().unwrap();
        for t in [0, 1, 0, 1] {
            let _ = run.next(t);
        }
        for t in [0, 1] {
            let _ = run.txn(t).commit();
        }
        (run.outcome(), engine_history(&w, &engine.txns()))
    }

    #[test]
    fn the_engine_history_of_a_write_skew_under_plain_si_is_a_g2_item_cycle() {
        let (outcome, history) = skew_on(Variant::named("plainsi").unwrap());
        assert_eq!(outcome.summary(), "all commit");
        let mut race = Race::new("plainsi");
        race.add(&outcome, history, || "skew".into());
        assert_eq!(race.labels(), ["G2-item (write skew)"]);
        let seen = &race.anomalies["G2-item (write skew)"];
        assert!(
            seen.example.contains("-rw(") && seen.example.starts_with("T1"),
            "{}",
            seen.example
        );
        assert_eq!(race.serializable, 0);
        assert!(!race.problems(&[]).is_empty());
        assert!(race.problems(&race.labels()).is_empty());
    }

    #[test]
    fn the_fix_commits_only_one_side_and_its_history_is_serializable() {
        let (outcome, history) = skew_on(Variant::FIX);
        assert_ne!(outcome.summary(), "all commit");
        let mut race = Race::new("fix");
        race.add(&outcome, history, String::new);
        assert!(race.anomalies.is_empty(), "{race:?}");
        assert_eq!((race.serializable, race.unexplained), (1, 0));
    }

    #[test]
    fn a_history_that_cannot_be_established_is_unknown_and_a_problem() {
        let (outcome, _) = skew_on(Variant::FIX);
        let mut race = Race::new("fix");
        race.add(&outcome, Err("no version log".into()), String::new);
        assert_eq!((race.unknown, race.serializable), (1, 0));
        assert!(race.problems(&[])[0].contains("no version log"));
    }

    #[test]
    fn racing_the_lost_update_on_the_fix_shows_no_anomaly() {
        let race = race_engine(&named("lost_update").unwrap(), "fix", 20, 50, None);
        assert_eq!(race.attempts, 20);
        assert!(race.problems(&[]).is_empty(), "{race:?}");
        assert_eq!(race.conforming, None, "no judge, no verdicts");
    }

    /// A store's predicate reads in a history: the rows returned are item reads of their
    /// versions; a row not returned was seen in one of its versions that do not match, or its
    /// own where the reader had written it; a row missing though every version matches is no
    /// history at all.
    #[test]
    fn a_predicate_reads_rows_and_the_versions_it_cannot_have_missed() {
        use crate::program::Row;
        use loadbearing_workload::workload::{Cmp, Ending, Pred, Stmt};
        let w = Workload {
            name: "pmp".into(),
            keys: vec!["x".into(), "z".into()],
            pages: vec![0, 1],
            initial: vec![Some(10), None],
            programs: vec![
                vec![
                    Stmt::Select(Pred::Compare(Cmp::Eq, 30)),
                    Stmt::Select(Pred::Compare(Cmp::Gt, 0)),
                ],
                vec![Stmt::Insert { key: 1, value: 30 }],
            ],
            endings: vec![Ending::Commit; 2],
        };
        let script = Script::Model(w.clone());
        let results = vec![TxnResult::Committed, TxnResult::Committed];
        let row = |key: &str, value, writer| Row {
            key: key.into(),
            value,
            writer,
        };
        let observed = |second: Vec<Row>| {
            vec![
                vec![Observed::Matched(vec![]), Observed::Matched(second)],
                vec![Observed::Wrote(30)],
            ]
        };
        let versions: Vec<VersionRow> = vec![("z".into(), 2, None)];
        let history = |second| {
            logged_history(
                &script,
                &w,
                &results,
                &observed(second),
                &[],
                chained(&versions),
            )
        };
        let h = history(vec![row("x", 10, 0), row("z", 30, 2)]).unwrap();
        assert_eq!(h.values, [vec![Some(10)], vec![None, Some(30)]]);
        let reads = &h.txns[0].predicate_reads;
        // `value = 30` returned nothing: x's only version does not match, z's absence neither.
        assert_eq!(
            reads[0].seen,
            [vec![Writer::Initial], vec![Writer::Initial]]
        );
        // `value > 0` returned both rows: their versions, and item reads of them.
        assert_eq!(reads[1].seen, [vec![Writer::Initial], vec![Writer::Txn(1)]]);
        assert_eq!(h.txns[0].reads.len(), 2);
        assert_eq!(
            classify(&h)[0].render(&h.keys),
            "G-single (PMP): T1 -rw(where value = 30: z)-> T2 -wr(z)-> T1"
        );
        // x matches `value > 0` in every version, yet was not returned.
        let err = history(vec![row("z", 30, 2)]).unwrap_err();
        assert!(err.contains("passed over `x`"), "{err}");
    }

    /// A deleted row inserted again chains: the insert (no previous writer in the log) follows
    /// the deletion, and of two inserts the one logged first comes first; a transaction that
    /// deletes and inserts a row again is one version. A log where a version is followed
    /// twice still does not chain.
    #[test]
    fn an_insert_follows_the_deletion_before_it() {
        let txns = |n: usize| -> Vec<TxnRecord> {
            (0..n)
                .map(|_| TxnRecord {
                    committed: true,
                    reads: Vec::new(),
                    writes: vec![0],
                    predicate_reads: Vec::new(),
                    internal: Vec::new(),
                })
                .collect()
        };
        let row = |w: i32, prev: Option<i32>| -> VersionRow { ("x".into(), w, prev) };
        // Loaded, deleted by T1, inserted by T2, deleted by T3, inserted by T4.
        let log = vec![row(1, Some(0)), row(2, None), row(3, Some(2)), row(4, None)];
        assert_eq!(chained(&log)("x", &txns(4)).unwrap(), [0, 1, 2, 3]);
        // Starting absent: inserted by T1, deleted by T2, inserted by T3.
        let absent = vec![row(1, None), row(2, Some(1)), row(3, None)];
        assert_eq!(chained(&absent)("x", &txns(3)).unwrap(), [0, 1, 2]);
        // T1 deletes the row and inserts it again: one version of T1's, then T2's update.
        let again = vec![row(1, Some(0)), row(1, None), row(2, Some(1))];
        assert_eq!(chained(&again)("x", &txns(2)).unwrap(), [0, 1]);
        let forked = vec![row(1, Some(0)), row(2, Some(0))];
        assert!(chained(&forked)("x", &txns(2))
            .unwrap_err()
            .contains("2 versions follow the loaded version"));
    }

    /// A read of a version the store says another transaction wrote, with a value that
    /// transaction's last write of the key did not leave, saw an intermediate version: G1b
    /// (Hermitage's T1 writing 101 then 11). The writer's last value is no G1b, nor is a read
    /// of a writer that wrote one value twice.
    #[test]
    fn a_read_of_a_writers_earlier_value_is_an_intermediate_read() {
        use loadbearing_workload::workload::{Ending, Expr, Stmt};
        let put = |v| Stmt::Write {
            key: 0,
            value: Expr::Const(v),
            only_if: None,
        };
        let w = Workload {
            name: "g1b".into(),
            keys: vec!["x".into()],
            pages: vec![0],
            initial: vec![Some(10)],
            programs: vec![vec![put(101), put(11)], vec![Stmt::Read(0)]],
            endings: vec![Ending::Commit; 2],
        };
        let script = Script::Model(w.clone());
        let results = vec![TxnResult::Committed, TxnResult::Committed];
        let versions: Vec<VersionRow> = vec![("x".into(), 1, Some(0)), ("x".into(), 1, Some(1))];
        let history = |second: i64, saw: i64| {
            let observed = vec![
                vec![Observed::Wrote(101), Observed::Wrote(second)],
                vec![Observed::Value(Some(saw))],
            ];
            let reads = [LoggedRead {
                txn: 1,
                key: "x".into(),
                writer: 1,
                value: saw,
            }];
            logged_history(&script, &w, &results, &observed, &reads, chained(&versions)).unwrap()
        };
        let h = history(11, 101);
        assert!(h.txns[1].reads[0].intermediate);
        assert_eq!(
            classify(&h)[0].render(&h.keys),
            "G1b: T2 read x from intermediate version of T1"
        );
        assert!(classify(&history(11, 11)).is_empty());
        // 101 twice: the last version holds 101 too.
        assert!(classify(&history(101, 101)).is_empty());
    }

    /// An update or delete reads each row it changes in the version before its own (a SQL
    /// store's word), a delete by predicate is a predicate read, and a transaction reading a
    /// row it deleted as present is internally inconsistent.
    #[test]
    fn changed_rows_are_read_and_a_read_missing_its_own_delete_is_internal() {
        use crate::program::{Change, Row};
        use loadbearing_workload::workload::{Cmp, Ending, Pred, Set, Stmt, Target};
        let eq20 = Pred::Compare(Cmp::Eq, 20);
        let w = Workload {
            name: "pmp_write".into(),
            keys: vec!["x".into(), "y".into()],
            pages: vec![0, 1],
            initial: vec![Some(10), Some(20)],
            programs: vec![
                vec![Stmt::Update {
                    target: Target::Where(Pred::All),
                    set: Set::Add(10),
                }],
                vec![Stmt::Delete(Target::Where(eq20)), Stmt::Select(eq20)],
            ],
            endings: vec![Ending::Commit; 2],
        };
        let script = Script::Model(w.clone());
        let results = vec![TxnResult::Committed, TxnResult::Committed];
        let change = |key: &str, value| Change {
            key: key.into(),
            value,
            replaced: None,
        };
        let observed = |second: Vec<Row>| {
            vec![
                vec![Observed::Changed(vec![
                    change("x", Some(20)),
                    change("y", Some(30)),
                ])],
                vec![
                    Observed::Changed(vec![change("x", None)]),
                    Observed::Matched(second),
                ],
            ]
        };
        let versions: Vec<VersionRow> = vec![
            ("x".into(), 1, Some(0)),
            ("y".into(), 1, Some(0)),
            ("x".into(), 2, Some(1)),
        ];
        let h = logged_history(
            &script,
            &w,
            &results,
            &observed(vec![]),
            &[],
            chained(&versions),
        )
        .unwrap();
        assert_eq!(h.version_order, [vec![0, 1], vec![0]]);
        assert_eq!(
            h.values,
            [vec![Some(10), Some(20), None], vec![Some(20), Some(30)]]
        );
        // T2's delete read T1's x, and passed over y, which matches in its first version only.
        let t2 = &h.txns[1];
        assert_eq!(t2.reads[0].from, Writer::Txn(0));
        assert_eq!(t2.predicate_reads[0].seen[1], [Writer::Txn(0)]);
        assert!(t2.internal.is_empty());
        assert!(classify(&h).is_empty(), "{:?}", classify(&h));
        // Its read by predicate returns the x it deleted: internal.
        let row = Row {
            key: "x".into(),
            value: 20,
            writer: 1,
        };
        let h = logged_history(
            &script,
            &w,
            &results,
            &observed(vec![row]),
            &[],
            chained(&versions),
        )
        .unwrap();
        assert_eq!(h.txns[1].internal, [0]);
        assert_eq!(
            classify(&h)[0].render(&h.keys),
            "internal: T2 read x after writing it, and not its own write"
        );
    }
}
