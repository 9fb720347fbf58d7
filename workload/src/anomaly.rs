//! Naming what went wrong, as the isolation literature does: Adya's direct serialization graph
//! of the committed transactions (Adya, Liskov and O'Neil, ICDE 2000), and its cycles, as
//! Elle (Kingsbury and Alvaro, VLDB 2020) reports them.
//!
//! Edges, on a key's version order (initial version first, then the committed writers):
//! `Ti -ww(k)-> Tj` Tj installs the version after Ti's; `Ti -wr(k)-> Tj` Tj reads Ti's version;
//! `Ti -rw(k)-> Tj` Ti reads a version and Tj installs the next one. Classes: G0 (a cycle of ww
//! only), G1a (a committed transaction read an aborted one's write), G1b (it read a version its
//! writer later overwrote), G1c (a cycle of ww and wr), G-single (a cycle with exactly one rw),
//! G2-item (a cycle with rw edges, all of them item reads'), G2 (a cycle whose rw edges need a
//! predicate read's). Each cycle is classed by its weakest reading: where two transactions
//! have several edges, the dependency (ww, then wr) is taken over the rw, an item's over a
//! predicate's.
//!
//! A predicate read (`SELECT … WHERE value % 3 = 0`) has Adya's edges too: it saw one version
//! of every key (a row's absence is a version); a writer whose version of the key *changes the
//! matches* (matches where its predecessor did not, or the reverse) is a `wr` predecessor of
//! the read when its version is the one seen or earlier, an `rw` successor when later. A row it
//! returned is also an item read. Where a store says only that a row did not match, the
//! version seen is one of those that do not: an edge counts only if every such version gives
//! it.

use std::fmt;

use serde::Serialize;

use super::workload::{Key, Pred};

pub type TxnId = usize;

/// Who wrote the version a read saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Writer {
    Initial,
    Txn(TxnId),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ReadOp {
    pub key: Key,
    pub from: Writer,
    /// The writer overwrote this version itself later (the read saw an intermediate state).
    pub intermediate: bool,
}

/// A predicate read and the versions it saw.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PredRead {
    pub pred: Pred,
    /// Per key: the version the read saw, by its writer (`Initial`: the loaded data, or the
    /// key's absence before anyone wrote it). One when known (a row it returned); every
    /// version that does not match when the store says only that the row was not returned.
    pub seen: Vec<Vec<Writer>>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct TxnRecord {
    pub committed: bool,
    pub reads: Vec<ReadOp>,
    /// The keys it wrote (its final version of each).
    pub writes: Vec<Key>,
    /// Its predicate reads, in order (their returned rows are in `reads` too).
    pub predicate_reads: Vec<PredRead>,
    /// Keys it read after writing them without seeing its own write.
    pub internal: Vec<Key>,
}

/// What classification needs of a run: transactions, what each read, and every key's order of
/// committed versions.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct History {
    pub keys: Vec<String>,
    pub txns: Vec<TxnRecord>,
    /// Per key: the committed writers in version order, after the initial version.
    pub version_order: Vec<Vec<TxnId>>,
    /// Per key: the value of each version, the initial first, then one per writer of
    /// `version_order` (`None`: absent). Needed where a transaction reads by predicate (whether
    /// a version changes the matches); empty otherwise.
    pub values: Vec<Vec<Option<i64>>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Dep {
    Ww,
    Wr,
    Rw,
}

impl Dep {
    fn name(self) -> &'static str {
        match self {
            Dep::Ww => "ww",
            Dep::Wr => "wr",
            Dep::Rw => "rw",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Edge {
    pub from: TxnId,
    pub to: TxnId,
    pub dep: Dep,
    pub key: Key,
    /// The predicate read the edge comes from (`None`: an item's read or write).
    pub via: Option<Pred>,
}

/// Adya's classes, weakest violation first, after Elle's `internal`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Class {
    /// A transaction read a key after writing it and did not see its own write (Elle's
    /// internal inconsistency): no order of transactions explains it.
    Internal,
    G0,
    G1a,
    G1b,
    G1c,
    GSingle,
    G2Item,
    /// An anti-dependency cycle that needs a predicate read's `rw` edge (Adya's G2 beyond
    /// G2-item: phantoms).
    G2,
}

impl Class {
    /// Every class, weakest violation first.
    pub const ALL: [Class; 8] = [
        Class::Internal,
        Class::G0,
        Class::G1a,
        Class::G1b,
        Class::G1c,
        Class::GSingle,
        Class::G2Item,
        Class::G2,
    ];

    /// Every label an anomaly of this class is reported under: the class alone, and each
    /// named pattern of it (`G-single`, `G-single (lost update)`).
    pub fn labels(self) -> Vec<String> {
        let patterns = Pattern::ALL.into_iter().filter(|p| p.class() == self);
        std::iter::once(self.name().to_string())
            .chain(patterns.map(|p| format!("{} ({})", self.name(), p.name())))
            .collect()
    }

    pub fn name(self) -> &'static str {
        match self {
            Class::Internal => "internal",
            Class::G0 => "G0",
            Class::G1a => "G1a",
            Class::G1b => "G1b",
            Class::G1c => "G1c",
            Class::GSingle => "G-single",
            Class::G2Item => "G2-item",
            Class::G2 => "G2",
        }
    }
}

/// The anomalies with names of their own, each a shape of one class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Pattern {
    /// Two transactions read the same version of a key and both write it (a G-single).
    LostUpdate,
    /// Two transactions, each reading a key the other writes (a G2-item of two rw edges on
    /// different keys).
    WriteSkew,
    /// A G2-item cycle through a committed transaction that wrote nothing (Fekete, O'Neil and
    /// O'Neil 2004: without the reader, the writers serialize).
    ReadOnly,
    /// A reader sees a version from before a writer's, then one of that writer's (a G-single
    /// of two transactions, the reader's `rw` read first): Hermitage's read skew.
    ReadSkew,
    /// A reader sees one of a writer's versions, then a version from before that writer's
    /// (a G-single of two transactions, the reader's `wr` read first): the writer it observed
    /// vanishes, Hermitage's OTV.
    ObservedVanishes,
    /// A predicate read misses a writer that another read of the same transaction sees (a
    /// G-single of two transactions whose `rw` edge is a predicate read's): Adya's
    /// predicate-many-preceders, Hermitage's PMP.
    PredicateManyPreceders,
}

impl Pattern {
    pub const ALL: [Pattern; 6] = [
        Pattern::LostUpdate,
        Pattern::WriteSkew,
        Pattern::ReadOnly,
        Pattern::ReadSkew,
        Pattern::ObservedVanishes,
        Pattern::PredicateManyPreceders,
    ];

    /// The class every anomaly of this shape is.
    pub fn class(self) -> Class {
        match self {
            Pattern::LostUpdate
            | Pattern::ReadSkew
            | Pattern::ObservedVanishes
            | Pattern::PredicateManyPreceders => Class::GSingle,
            Pattern::WriteSkew | Pattern::ReadOnly => Class::G2Item,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Pattern::LostUpdate => "lost update",
            Pattern::WriteSkew => "write skew",
            Pattern::ReadOnly => "read-only anomaly",
            Pattern::ReadSkew => "read skew",
            Pattern::ObservedVanishes => "observed transaction vanishes",
            Pattern::PredicateManyPreceders => "PMP",
        }
    }
}

/// The evidence of an anomaly.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Evidence {
    Cycle(Vec<Edge>),
    /// G1a, G1b: the read.
    Read {
        reader: TxnId,
        key: Key,
        writer: TxnId,
    },
    /// Internal: the transaction and the key it read without its own write.
    Own {
        txn: TxnId,
        key: Key,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Anomaly {
    pub class: Class,
    pub pattern: Option<Pattern>,
    pub evidence: Evidence,
}

impl Anomaly {
    /// `G2-item (write skew)`.
    pub fn label(&self) -> String {
        match self.pattern {
            Some(p) => format!("{} ({})", self.class.name(), p.name()),
            None => self.class.name().to_string(),
        }
    }

    /// `G2-item (write skew): T1 -rw(bob)-> T2 -rw(alice)-> T1`.
    pub fn render(&self, keys: &[String]) -> String {
        format!("{}: {}", self.label(), self.evidence_text(keys))
    }

    pub fn evidence_text(&self, keys: &[String]) -> String {
        match &self.evidence {
            Evidence::Cycle(edges) => {
                let mut out = format!("T{}", edges[0].from + 1);
                for e in edges {
                    let on = match e.via {
                        Some(p) => format!("{p}: {}", keys[e.key]),
                        None => keys[e.key].clone(),
                    };
                    out.push_str(&format!(" -{}({on})-> T{}", e.dep.name(), e.to + 1));
                }
                out
            }
            Evidence::Own { txn, key } => format!(
                "T{} read {} after writing it, and not its own write",
                txn + 1,
                keys[*key]
            ),
            Evidence::Read {
                reader,
                key,
                writer,
            } => {
                let how = match self.class {
                    Class::G1a => "aborted",
                    _ => "intermediate version of",
                };
                format!(
                    "T{} read {} from {how} T{}",
                    reader + 1,
                    keys[*key],
                    writer + 1
                )
            }
        }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The direct serialization graph's edges among the committed transactions.
pub fn edges(h: &History) -> Vec<Edge> {
    let mut out = Vec::new();
    for (key, order) in h.version_order.iter().enumerate() {
        for pair in order.windows(2) {
            out.push(Edge {
                from: pair[0],
                to: pair[1],
                dep: Dep::Ww,
                key,
                via: None,
            });
        }
    }
    for (reader, txn) in h.txns.iter().enumerate().filter(|(_, t)| t.committed) {
        for read in &txn.reads {
            let order = &h.version_order[read.key];
            if let Writer::Txn(w) = read.from {
                if w != reader && order.contains(&w) {
                    out.push(Edge {
                        from: w,
                        to: reader,
                        dep: Dep::Wr,
                        key: read.key,
                        via: None,
                    });
                }
            }
            // The version installed right after the one read.
            let next = match read.from {
                Writer::Initial => order.first(),
                Writer::Txn(w) => order
                    .iter()
                    .position(|&x| x == w)
                    .and_then(|i| order.get(i + 1)),
            };
            if let Some(&next) = next.filter(|&&n| n != reader) {
                out.push(Edge {
                    from: reader,
                    to: next,
                    dep: Dep::Rw,
                    key: read.key,
                    via: None,
                });
            }
        }
        for read in &txn.predicate_reads {
            for (key, seen) in read.seen.iter().enumerate() {
                out.extend(predicate_edges(h, reader, read.pred, key, seen));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// A predicate read's edges on one key: those every version it may have seen gives.
fn predicate_edges(h: &History, reader: TxnId, pred: Pred, key: Key, seen: &[Writer]) -> Vec<Edge> {
    let mut each = seen
        .iter()
        .map(|&from| predicate_edges_from(h, reader, pred, key, from));
    let Some(first) = each.next() else {
        return Vec::new();
    };
    each.fold(first, |common, edges| {
        common.into_iter().filter(|e| edges.contains(e)).collect()
    })
}

/// A predicate read's edges on one key when it saw `from`'s version: each committed writer
/// whose version changes the matches, before the read's version (or it) `wr`, after it `rw`.
fn predicate_edges_from(
    h: &History,
    reader: TxnId,
    pred: Pred,
    key: Key,
    from: Writer,
) -> Vec<Edge> {
    let order = &h.version_order[key];
    let values = &h.values[key];
    // The version seen, as an index into `values` (0: the initial one). A version the order
    // lacks (an aborted or unfinished writer's) is a G1a or no version: no predicate edge.
    let seen_at = match from {
        Writer::Initial => 0,
        Writer::Txn(w) => match order.iter().position(|&x| x == w) {
            Some(i) => i + 1,
            None => return Vec::new(),
        },
    };
    let matches = |i: usize| pred.matches(values[i]);
    order
        .iter()
        .enumerate()
        .filter(|&(i, &w)| w != reader && matches(i + 1) != matches(i))
        .map(|(i, &w)| {
            let (from, to, dep) = if i < seen_at {
                (w, reader, Dep::Wr)
            } else {
                (reader, w, Dep::Rw)
            };
            Edge {
                from,
                to,
                dep,
                key,
                via: Some(pred),
            }
        })
        .collect()
}

/// Every elementary cycle of the graph, each as its node sequence starting at its smallest.
fn node_cycles(n: usize, edges: &[Edge], budget: usize) -> Result<Vec<Vec<TxnId>>, OverBudget> {
    struct Search<'a> {
        start: TxnId,
        n: usize,
        adj: &'a [Vec<bool>],
        out: Vec<Vec<TxnId>>,
        steps: usize,
        budget: usize,
    }
    fn extend(search: &mut Search<'_>, path: &mut Vec<TxnId>) -> Result<(), OverBudget> {
        search.steps += 1;
        if search.steps > search.budget {
            return Err(OverBudget {
                steps: search.budget,
                txns: search.n,
            });
        }
        let last = *path.last().expect("a path starts at its start");
        for next in search.start..search.n {
            if !search.adj[last][next] {
                continue;
            }
            if next == search.start {
                search.out.push(path.clone());
            } else if !path.contains(&next) {
                path.push(next);
                extend(search, path)?;
                path.pop();
            }
        }
        Ok(())
    }
    let mut adj = vec![vec![false; n]; n];
    for e in edges {
        adj[e.from][e.to] = true;
    }
    let mut search = Search {
        start: 0,
        n,
        adj: &adj,
        out: Vec::new(),
        steps: 0,
        budget,
    };
    for start in 0..n {
        search.start = start;
        extend(&mut search, &mut vec![start])?;
    }
    Ok(search.out)
}

/// The classifier gave up: following every cycle of the history's graph took more than
/// `steps` steps (a history of many transactions, densely dependent).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the anomaly classifier's budget: more than {steps} steps following the cycles among {txns} transactions"
)]
pub struct OverBudget {
    pub steps: usize,
    pub txns: usize,
}

/// The steps [`classify_within`] takes for a real store's history before it says it gave up:
/// a fraction of a second, far beyond any history of a handful of transactions.
pub const CLASSIFY_BUDGET: usize = 2_000_000;

/// The edge between consecutive nodes that makes the weakest reading: ww before wr before rw.
fn weakest(edges: &[Edge], from: TxnId, to: TxnId) -> Edge {
    *edges
        .iter()
        .filter(|e| e.from == from && e.to == to)
        .min_by_key(|e| (e.dep, e.via, e.key))
        .expect("a cycle's consecutive nodes have an edge")
}

fn classify_cycle(h: &History, edges: &[Edge], nodes: &[TxnId]) -> Anomaly {
    let hops: Vec<(TxnId, TxnId)> = (0..nodes.len())
        .map(|i| (nodes[i], nodes[(i + 1) % nodes.len()]))
        .collect();
    let mut chosen: Vec<Edge> = hops.iter().map(|&(a, b)| weakest(edges, a, b)).collect();
    let rw = chosen.iter().filter(|e| e.dep == Dep::Rw).count();
    let predicate_rw = chosen.iter().any(|e| e.dep == Dep::Rw && e.via.is_some());
    let class = match rw {
        0 if chosen.iter().all(|e| e.dep == Dep::Ww) => Class::G0,
        0 => Class::G1c,
        1 => Class::GSingle,
        _ if predicate_rw => Class::G2,
        _ => Class::G2Item,
    };
    let pattern = if nodes.len() == 2 && class == Class::GSingle {
        if predicate_rw {
            Some(Pattern::PredicateManyPreceders)
        } else if lost_update(h, nodes) {
            Some(Pattern::LostUpdate)
        } else {
            skew_or_vanish(h, nodes[0], nodes[1]).or_else(|| skew_or_vanish(h, nodes[1], nodes[0]))
        }
    } else {
        None
    };
    let pattern = pattern.or_else(|| {
        if nodes.len() == 2 && rw == 2 && class == Class::G2Item {
            // Write skew wants the two rw edges on different keys; pick such a pair if any.
            let rw_of = |(a, b): (TxnId, TxnId)| -> Vec<Edge> {
                edges
                    .iter()
                    .filter(|e| e.from == a && e.to == b && e.dep == Dep::Rw && e.via.is_none())
                    .copied()
                    .collect()
            };
            let pair = rw_of(hops[0]).into_iter().find_map(|x| {
                rw_of(hops[1])
                    .into_iter()
                    .find(|y| y.key != x.key)
                    .map(|y| (x, y))
            });
            pair.map(|(x, y)| {
                chosen = vec![x, y];
                Pattern::WriteSkew
            })
        } else {
            None
        }
    });
    let pattern = pattern.or_else(|| {
        let read_only = nodes.iter().any(|&t| h.txns[t].writes.is_empty());
        (class == Class::G2Item && read_only).then_some(Pattern::ReadOnly)
    });
    Anomaly {
        class,
        pattern,
        evidence: Evidence::Cycle(chosen),
    }
}

/// Both transactions read the same version of some key and both wrote it.
fn lost_update(h: &History, nodes: &[TxnId]) -> bool {
    let (a, b) = (&h.txns[nodes[0]], &h.txns[nodes[1]]);
    a.reads.iter().any(|ra| {
        a.writes.contains(&ra.key)
            && b.writes.contains(&ra.key)
            && b.reads.iter().any(|rb| {
                rb.key == ra.key && rb.from == ra.from && rb.from != Writer::Txn(nodes[0])
            })
    })
}

/// The writer of the version installed right after the one `read` saw, if any.
fn overwritten_by(h: &History, read: &ReadOp) -> Option<TxnId> {
    let order = &h.version_order[read.key];
    match read.from {
        Writer::Initial => order.first().copied(),
        Writer::Txn(w) => order
            .iter()
            .position(|&x| x == w)
            .and_then(|i| order.get(i + 1).copied()),
    }
}

/// How `reader` saw `writer` in a two-transaction G-single: a read of a version `writer`
/// overwrote (`rw`) and a read of `writer`'s own (`wr`). Its `wr` read before an `rw` read is
/// the observed transaction vanishing; otherwise, its `rw` read first, read skew.
fn skew_or_vanish(h: &History, reader: TxnId, writer: TxnId) -> Option<Pattern> {
    let reads = &h.txns[reader].reads;
    let saw = |r: &ReadOp| r.from == Writer::Txn(writer);
    let missed = |r: &ReadOp| overwritten_by(h, r) == Some(writer);
    let first_saw = reads.iter().position(saw)?;
    let last_missed = reads.iter().rposition(missed)?;
    Some(if first_saw < last_missed {
        Pattern::ObservedVanishes
    } else {
        Pattern::ReadSkew
    })
}

/// Every anomaly of the history: aborted and intermediate reads, then one per cycle. Empty
/// exactly when the committed transactions are conflict-serializable. With no budget: the
/// model's histories have three transactions at most.
pub fn classify(h: &History) -> Vec<Anomaly> {
    classify_within(h, usize::MAX).expect("no budget to exceed")
}

/// [`classify`], or [`OverBudget`] when following every cycle would take more than `budget`
/// steps (every cycle is followed, so a history of many densely dependent transactions
/// could otherwise take years).
pub fn classify_within(h: &History, budget: usize) -> Result<Vec<Anomaly>, OverBudget> {
    let mut out = Vec::new();
    for (t, txn) in h.txns.iter().enumerate().filter(|(_, t)| t.committed) {
        for &key in &txn.internal {
            out.push(Anomaly {
                class: Class::Internal,
                pattern: None,
                evidence: Evidence::Own { txn: t, key },
            });
        }
    }
    for (reader, txn) in h.txns.iter().enumerate().filter(|(_, t)| t.committed) {
        for read in &txn.reads {
            let Writer::Txn(writer) = read.from else {
                continue;
            };
            if writer == reader {
                continue;
            }
            let class = if !h.txns[writer].committed {
                Class::G1a
            } else if read.intermediate {
                Class::G1b
            } else {
                continue;
            };
            out.push(Anomaly {
                class,
                pattern: None,
                evidence: Evidence::Read {
                    reader,
                    key: read.key,
                    writer,
                },
            });
        }
    }
    let edges = edges(h);
    for nodes in node_cycles(h.txns.len(), &edges, budget)? {
        out.push(classify_cycle(h, &edges, &nodes));
    }
    out.sort_by_key(|a| (a.class, a.pattern));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(names: &[&str]) -> Vec<String> {
        names.iter().map(|k| k.to_string()).collect()
    }

    fn read(key: Key, from: Writer) -> ReadOp {
        ReadOp {
            key,
            from,
            intermediate: false,
        }
    }

    fn committed(reads: Vec<ReadOp>, writes: Vec<Key>) -> TxnRecord {
        TxnRecord {
            predicate_reads: Vec::new(),
            internal: Vec::new(),
            committed: true,
            reads,
            writes,
        }
    }

    fn rendered(h: &History) -> Vec<String> {
        classify(h).iter().map(|a| a.render(&h.keys)).collect()
    }

    /// A history of many transactions each reading what every other writes has more cycles
    /// than any budget follows: the classifier says it gave up, naming the budget, rather than
    /// running on; within the budget it answers as `classify` does.
    #[test]
    fn a_history_past_the_budget_is_named_as_such() {
        let n = 14;
        let h = History {
            values: Vec::new(),
            keys: (0..n).map(|k| format!("k{k}")).collect(),
            // Each reads every key in its initial version and writes its own: rw edges from
            // every transaction to every other.
            txns: (0..n)
                .map(|t| {
                    committed(
                        (0..n)
                            .filter(|&k| k != t)
                            .map(|k| read(k, Writer::Initial))
                            .collect(),
                        vec![t],
                    )
                })
                .collect(),
            version_order: (0..n).map(|t| vec![t]).collect(),
        };
        let over = classify_within(&h, CLASSIFY_BUDGET).unwrap_err();
        assert_eq!(
            over.to_string(),
            "the anomaly classifier's budget: more than 2000000 steps following the cycles among 14 transactions"
        );
        let small = History {
            txns: h.txns[..3]
                .iter()
                .map(|t| TxnRecord {
                    reads: t.reads.iter().filter(|r| r.key < 3).cloned().collect(),
                    ..t.clone()
                })
                .collect(),
            version_order: h.version_order[..3].to_vec(),
            keys: h.keys[..3].to_vec(),
            values: Vec::new(),
        };
        assert_eq!(
            classify_within(&small, CLASSIFY_BUDGET).unwrap(),
            classify(&small)
        );
        assert!(!classify(&small).is_empty());
    }

    #[test]
    fn write_skew_is_a_g2_item_of_two_rw_edges() {
        use Writer::Initial;
        let (alice, bob) = (0, 1);
        let h = History {
            values: Vec::new(),
            keys: keys(&["alice", "bob"]),
            txns: vec![
                committed(vec![read(bob, Initial)], vec![alice]),
                committed(vec![read(alice, Initial)], vec![bob]),
            ],
            version_order: vec![vec![0], vec![1]],
        };
        assert_eq!(
            rendered(&h),
            ["G2-item (write skew): T1 -rw(bob)-> T2 -rw(alice)-> T1"]
        );
    }

    #[test]
    fn lost_update_is_a_g_single() {
        use Writer::Initial;
        let h = History {
            values: Vec::new(),
            keys: keys(&["x"]),
            txns: vec![
                committed(vec![read(0, Initial)], vec![0]),
                committed(vec![read(0, Initial)], vec![0]),
            ],
            version_order: vec![vec![0, 1]],
        };
        assert_eq!(
            rendered(&h),
            ["G-single (lost update): T1 -ww(x)-> T2 -rw(x)-> T1"]
        );
    }

    #[test]
    fn the_read_only_anomaly_runs_through_the_reader() {
        use Writer::{Initial, Txn};
        let (x, y) = (0, 1);
        // Deposit T1 writes y; withdrawal T2 read both before it and writes x; report T3 sees
        // T1's y and the old x.
        let h = History {
            values: Vec::new(),
            keys: keys(&["x", "y"]),
            txns: vec![
                committed(vec![read(y, Initial)], vec![y]),
                committed(vec![read(x, Initial), read(y, Initial)], vec![x]),
                committed(vec![read(x, Initial), read(y, Txn(0))], vec![]),
            ],
            version_order: vec![vec![1], vec![0]],
        };
        assert_eq!(
            rendered(&h),
            ["G2-item (read-only anomaly): T1 -wr(y)-> T3 -rw(x)-> T2 -rw(y)-> T1"]
        );
    }

    #[test]
    fn a_cycle_with_one_rw_and_no_shared_write_is_a_plain_g_single() {
        use Writer::{Initial, Txn};
        // Read skew: T2 writes x and y; T1 reads the old x and T2's y.
        let h = History {
            values: Vec::new(),
            keys: keys(&["x", "y"]),
            txns: vec![
                committed(vec![read(0, Initial), read(1, Txn(1))], vec![]),
                committed(vec![], vec![0, 1]),
            ],
            version_order: vec![vec![1], vec![1]],
        };
        let found = classify(&h);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].class, Class::GSingle);
        // Read skew, which snapshot isolation forbids; the read-only name is for G2-items.
        assert_eq!(found[0].pattern, Some(Pattern::ReadSkew));
    }

    /// Hermitage's OTV: T3 sees T2's y, then T1's x although T2 overwrote it.
    #[test]
    fn a_writer_seen_then_missed_is_an_observed_transaction_vanishing() {
        use Writer::Txn;
        let (x, y) = (0, 1);
        let h = History {
            values: Vec::new(),
            keys: keys(&["x", "y"]),
            txns: vec![
                committed(vec![], vec![x, y]),
                committed(vec![], vec![x, y]),
                committed(vec![read(y, Txn(1)), read(x, Txn(0))], vec![]),
            ],
            version_order: vec![vec![0, 1], vec![0, 1]],
        };
        assert_eq!(
            rendered(&h),
            ["G-single (observed transaction vanishes): T2 -wr(y)-> T3 -rw(x)-> T2"]
        );
        // The same reads the other way round: T3 misses T2's x, then sees its y.
        let mut skew = h.clone();
        skew.txns[2].reads.reverse();
        assert_eq!(
            rendered(&skew),
            ["G-single (read skew): T2 -wr(y)-> T3 -rw(x)-> T2"]
        );
    }

    #[test]
    fn ww_cycles_are_g0_and_ww_wr_cycles_g1c() {
        use Writer::Txn;
        let g0 = History {
            values: Vec::new(),
            keys: keys(&["x", "y"]),
            txns: vec![committed(vec![], vec![0, 1]), committed(vec![], vec![0, 1])],
            version_order: vec![vec![0, 1], vec![1, 0]],
        };
        assert_eq!(rendered(&g0), ["G0: T1 -ww(x)-> T2 -ww(y)-> T1"]);
        let g1c = History {
            values: Vec::new(),
            keys: keys(&["x", "y"]),
            txns: vec![
                committed(vec![read(1, Txn(1))], vec![0]),
                committed(vec![read(0, Txn(0))], vec![1]),
            ],
            version_order: vec![vec![0], vec![1]],
        };
        assert_eq!(rendered(&g1c), ["G1c: T1 -wr(x)-> T2 -wr(y)-> T1"]);
    }

    #[test]
    fn aborted_and_intermediate_reads_are_g1a_and_g1b() {
        use Writer::Txn;
        let h = History {
            values: Vec::new(),
            keys: keys(&["x"]),
            txns: vec![
                TxnRecord {
                    predicate_reads: Vec::new(),
                    internal: Vec::new(),
                    committed: false,
                    reads: vec![],
                    writes: vec![0],
                },
                committed(vec![read(0, Txn(0))], vec![]),
                committed(vec![], vec![0]),
                committed(
                    vec![ReadOp {
                        key: 0,
                        from: Txn(2),
                        intermediate: true,
                    }],
                    vec![],
                ),
            ],
            version_order: vec![vec![2]],
        };
        assert_eq!(
            rendered(&h),
            [
                "G1a: T2 read x from aborted T1",
                "G1b: T4 read x from intermediate version of T3"
            ]
        );
    }

    #[test]
    fn a_serial_history_has_no_anomaly() {
        use Writer::{Initial, Txn};
        let h = History {
            values: Vec::new(),
            keys: keys(&["x"]),
            txns: vec![
                committed(vec![read(0, Initial)], vec![0]),
                committed(vec![read(0, Txn(0))], vec![0]),
            ],
            version_order: vec![vec![0, 1]],
        };
        assert!(classify(&h).is_empty());
    }

    /// Hermitage's PMP: T1's predicate read misses T2's insert (`rw` by the predicate), its
    /// second returns it (`wr`): a G-single whose `rw` edge is a predicate read's.
    #[test]
    fn a_predicate_read_missing_an_insert_its_next_read_sees_is_pmp() {
        use crate::workload::Cmp;
        use Writer::{Initial, Txn};
        let (eq30, mod3) = (
            Pred::Compare(Cmp::Eq, 30),
            Pred::Mod {
                modulus: 3,
                remainder: 0,
            },
        );
        let h = History {
            keys: keys(&["x", "z"]),
            txns: vec![
                TxnRecord {
                    committed: true,
                    reads: vec![read(1, Txn(1))],
                    writes: vec![],
                    internal: Vec::new(),
                    predicate_reads: vec![
                        PredRead {
                            pred: eq30,
                            seen: vec![vec![Initial], vec![Initial]],
                        },
                        PredRead {
                            pred: mod3,
                            seen: vec![vec![Initial], vec![Txn(1)]],
                        },
                    ],
                },
                committed(vec![], vec![1]),
            ],
            version_order: vec![vec![], vec![1]],
            values: vec![vec![Some(10)], vec![None, Some(30)]],
        };
        assert_eq!(
            rendered(&h),
            ["G-single (PMP): T1 -rw(where value = 30: z)-> T2 -wr(z)-> T1"]
        );
        // Had the first read matched nothing T2 changes (value = 40), no cycle.
        let mut apart = h.clone();
        apart.txns[0].predicate_reads[0].pred = Pred::Compare(Cmp::Eq, 40);
        assert!(classify(&apart).is_empty());
    }

    /// Hermitage's G2: each reads by a predicate and inserts a row the other's matches.
    #[test]
    fn inserts_each_into_the_others_predicate_are_g2() {
        use Writer::Initial;
        let mod3 = Pred::Mod {
            modulus: 3,
            remainder: 0,
        };
        let reader = |wrote: Key| TxnRecord {
            committed: true,
            reads: vec![],
            writes: vec![wrote],
            internal: Vec::new(),
            predicate_reads: vec![PredRead {
                pred: mod3,
                seen: vec![vec![Initial], vec![Initial]],
            }],
        };
        let h = History {
            keys: keys(&["z", "w"]),
            txns: vec![reader(0), reader(1)],
            version_order: vec![vec![0], vec![1]],
            values: vec![vec![None, Some(30)], vec![None, Some(42)]],
        };
        assert_eq!(
            rendered(&h),
            ["G2: T1 -rw(where value % 3 = 0: w)-> T2 -rw(where value % 3 = 0: z)-> T1"]
        );
    }

    /// Where the store said only that a row did not match, an edge counts only if every
    /// version that does not match gives it: here the read saw x either before T1's version or
    /// after T2's, and the edges of the two readings have none in common.
    #[test]
    fn an_unreturned_rows_version_gives_only_the_edges_every_candidate_gives() {
        use crate::workload::Cmp;
        use Writer::{Initial, Txn};
        let eq20 = Pred::Compare(Cmp::Eq, 20);
        let reader = |seen: Vec<Writer>| TxnRecord {
            committed: true,
            reads: vec![],
            writes: vec![],
            internal: Vec::new(),
            predicate_reads: vec![PredRead {
                pred: eq20,
                seen: vec![seen],
            }],
        };
        let mut h = History {
            keys: keys(&["x"]),
            txns: vec![
                committed(vec![], vec![0]),
                committed(vec![], vec![0]),
                reader(vec![Initial, Txn(1)]),
            ],
            version_order: vec![vec![0, 1]],
            values: vec![vec![Some(10), Some(20), Some(30)]],
        };
        assert!(edges(&h).iter().all(|e| e.via.is_none()), "{:?}", edges(&h));
        // Known to have seen the initial version: T3 -rw-> T1 (10 to 20 starts matching) and
        // T3 -rw-> T2 (20 to 30 stops).
        h.txns[2] = reader(vec![Initial]);
        let by_predicate: Vec<(TxnId, TxnId)> = edges(&h)
            .iter()
            .filter(|e| e.via.is_some())
            .map(|e| (e.from, e.to))
            .collect();
        assert_eq!(by_predicate, [(2, 0), (2, 1)]);
    }

    /// The oracle of the cycle search: a history has no anomaly exactly when no committed
    /// transaction read an aborted or intermediate version and some order of the committed
    /// transactions puts every writer before its readers, every key's writers in its version
    /// order, and each reader before the writer of the version after the one it read: tried
    /// by brute force over every order, on generated histories.
    #[test]
    fn no_anomaly_exactly_when_some_serial_order_explains_the_history() {
        use crate::workload::Cmp;
        fn orders(items: &[TxnId]) -> Vec<Vec<TxnId>> {
            if items.len() <= 1 {
                return vec![items.to_vec()];
            }
            let mut out = Vec::new();
            for (i, &first) in items.iter().enumerate() {
                let mut rest = items.to_vec();
                rest.remove(i);
                for mut tail in orders(&rest) {
                    tail.insert(0, first);
                    out.push(tail);
                }
            }
            out
        }
        fn explained(h: &History) -> bool {
            let committed: Vec<TxnId> =
                (0..h.txns.len()).filter(|&t| h.txns[t].committed).collect();
            let dirty = committed.iter().any(|&r| {
                h.txns[r].reads.iter().any(|read| match read.from {
                    Writer::Txn(w) if w != r => !h.txns[w].committed || read.intermediate,
                    _ => false,
                })
            });
            if dirty {
                return false;
            }
            orders(&committed).into_iter().any(|order| {
                let at = |t: TxnId| order.iter().position(|&x| x == t).unwrap();
                let versions_in_order = h
                    .version_order
                    .iter()
                    .all(|vs| vs.windows(2).all(|p| at(p[0]) < at(p[1])));
                let reads_in_order = committed.iter().all(|&r| {
                    h.txns[r].reads.iter().all(|read| {
                        let vs = &h.version_order[read.key];
                        let (after_writer, next) = match read.from {
                            Writer::Txn(w) if w == r => return true,
                            Writer::Initial => (true, vs.first()),
                            Writer::Txn(w) => {
                                let i = vs.iter().position(|&x| x == w);
                                (at(w) < at(r), i.and_then(|i| vs.get(i + 1)))
                            }
                        };
                        after_writer && next.is_none_or(|&n| n == r || at(r) < at(n))
                    })
                });
                // A predicate read sits after every writer whose version changes its matches
                // up to the version it saw, and before every later one (Adya's definition).
                let predicates_in_order = committed.iter().all(|&r| {
                    h.txns[r].predicate_reads.iter().all(|pr| {
                        pr.seen.iter().enumerate().all(|(key, seen)| {
                            let vs = &h.version_order[key];
                            let seen_at = match seen[0] {
                                Writer::Initial => 0,
                                Writer::Txn(w) => vs.iter().position(|&x| x == w).unwrap() + 1,
                            };
                            let matches = |i: usize| pr.pred.matches(h.values[key][i]);
                            vs.iter().enumerate().all(|(i, &w)| {
                                w == r
                                    || matches(i + 1) == matches(i)
                                    || (i < seen_at) == (at(w) < at(r))
                            })
                        })
                    })
                });
                let consistent = committed.iter().all(|&r| h.txns[r].internal.is_empty());
                consistent && versions_in_order && reads_in_order && predicates_in_order
            })
        }
        let mut seed: u64 = 7;
        let mut next = |bound: u64| {
            seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = seed;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (z ^ (z >> 31)) % bound
        };
        let (mut clean, mut anomalous) = (0, 0);
        for _ in 0..4000 {
            let n = 2 + next(3) as usize;
            let k = 1 + next(3) as usize;
            let mut txns: Vec<TxnRecord> = (0..n)
                .map(|_| TxnRecord {
                    predicate_reads: Vec::new(),
                    internal: Vec::new(),
                    committed: next(10) < 8,
                    reads: Vec::new(),
                    writes: (0..k).filter(|_| next(2) == 0).collect(),
                })
                .collect();
            // Each key's committed writers in a random version order.
            let mut version_order = Vec::new();
            for key in 0..k {
                let mut vs: Vec<TxnId> = (0..n)
                    .filter(|&t| txns[t].committed && txns[t].writes.contains(&key))
                    .collect();
                for i in (1..vs.len()).rev() {
                    vs.swap(i, next(i as u64 + 1) as usize);
                }
                version_order.push(vs);
            }
            // Each version's value: absent, or one of a few that some predicates match.
            let values: Vec<Vec<Option<i64>>> = version_order
                .iter()
                .map(|vs| {
                    (0..=vs.len())
                        .map(|_| [None, Some(10), Some(20), Some(30)][next(4) as usize])
                        .collect()
                })
                .collect();
            let preds = [
                Pred::All,
                Pred::Compare(Cmp::Eq, 20),
                Pred::Compare(Cmp::Gt, 15),
                Pred::Mod {
                    modulus: 3,
                    remainder: 0,
                },
            ];
            for txn in txns.iter_mut() {
                if next(40) == 0 {
                    txn.internal.push(next(k as u64) as usize);
                }
            }
            for r in 0..n {
                // A predicate read sees one committed version of every key, and reads each
                // row it returns.
                for _ in 0..next(2) {
                    let pred = preds[next(preds.len() as u64) as usize];
                    let mut seen = Vec::new();
                    for (key, vs) in version_order.iter().enumerate() {
                        let at = next(vs.len() as u64 + 1) as usize;
                        let from = if at == 0 {
                            Writer::Initial
                        } else {
                            Writer::Txn(vs[at - 1])
                        };
                        if pred.matches(values[key][at]) {
                            txns[r].reads.push(ReadOp {
                                key,
                                from,
                                intermediate: false,
                            });
                        }
                        seen.push(vec![from]);
                    }
                    txns[r].predicate_reads.push(PredRead { pred, seen });
                }
                for _ in 0..next(3) {
                    let key = next(k as u64) as usize;
                    let writers: Vec<TxnId> =
                        (0..n).filter(|&w| txns[w].writes.contains(&key)).collect();
                    let pick = next(writers.len() as u64 + 1) as usize;
                    let from = writers
                        .get(pick)
                        .map_or(Writer::Initial, |&w| Writer::Txn(w));
                    txns[r].reads.push(ReadOp {
                        key,
                        from,
                        intermediate: next(20) == 0,
                    });
                }
            }
            let h = History {
                keys: (0..k).map(|i| format!("k{i}")).collect(),
                txns,
                version_order,
                values,
            };
            let found = classify(&h);
            assert_eq!(found.is_empty(), explained(&h), "{h:?}: {found:?}");
            if found.is_empty() {
                clean += 1;
            } else {
                anomalous += 1;
            }
        }
        // Both verdicts are exercised.
        assert!(
            clean > 500 && anomalous > 500,
            "{clean} clean, {anomalous} anomalous"
        );
    }
}
