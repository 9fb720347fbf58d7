//! Was an abort needed? The dependency graph of a finished engine history, at key level.
//!
//! For a transaction V that the SSI machinery aborted, take the committed transactions plus V
//! (with what V read and what it tried to write, and what the rest of its program would have
//! read at its snapshot and written — the tier records that as ghost steps before cleanup;
//! application aborts and other victims do not count: their effects never happened) and build the serialization graph: `rw` (R read a key,
//! or scanned a page, that W wrote, and R's snapshot did not see W's version), `wr` (R read W's
//! version) and `ww` (commit order). Then:
//! - **over-abort**: no dangerous structure (two consecutive `rw` edges, Cahill's pivot) goes
//!   through V — nothing an SSI engine should react to (an edge to an aborted peer, a page-level
//!   false conflict);
//! - **unneeded**: a dangerous structure, but no cycle through V — committing V would still have
//!   been serializable (PostgreSQL's commit-order rule lets some of these commit);
//! - **needed**: a cycle through V.

use std::collections::BTreeSet;

use crate::engine::{Layout, Status, TxnId, TxnView};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    Needed,
    Unneeded,
    OverAbort,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Edge {
    Rw,
    Wr,
    Ww,
}

fn reads_of(t: &TxnView) -> Vec<String> {
    let mut keys: Vec<String> = t
        .reads
        .iter()
        .chain(&t.ghost_reads)
        .map(|r| r.key.clone())
        .collect();
    if let Some((k, false)) = &t.failed_op {
        keys.push(k.clone());
    }
    keys
}

fn writes_of(t: &TxnView) -> Vec<String> {
    let mut keys = t.writes.clone();
    if let Some((k, true)) = &t.failed_op {
        keys.push(k.clone());
    }
    keys.extend(t.ghost_writes.iter().cloned());
    keys
}

fn edges(txns: &[TxnView], members: &[TxnId], layout: &Layout) -> BTreeSet<(TxnId, TxnId, Edge)> {
    let visible_to =
        |w: &TxnView, r: &TxnView| w.status == Status::Committed && w.commit_seq <= r.snapshot;
    let order = |t: &TxnView| {
        if t.status == Status::Committed {
            t.commit_seq
        } else {
            u64::MAX
        }
    };
    let mut out = BTreeSet::new();
    for &r in members {
        for &w in members {
            if r == w {
                continue;
            }
            let (rt, wt) = (&txns[r], &txns[w]);
            let wrote = writes_of(wt);
            let read = reads_of(rt);
            let anti = read.iter().any(|k| wrote.contains(k))
                || rt
                    .scanned
                    .iter()
                    .chain(&rt.ghost_scans)
                    .any(|p| wrote.iter().any(|k| layout.page_of(k) == *p));
            if anti && !visible_to(wt, rt) {
                out.insert((r, w, Edge::Rw));
            }
            if rt
                .reads
                .iter()
                .chain(&rt.ghost_reads)
                .any(|x| x.writer == Some(w))
            {
                out.insert((w, r, Edge::Wr));
            }
            if order(wt) < order(rt) && writes_of(rt).iter().any(|k| wrote.contains(k)) {
                out.insert((w, r, Edge::Ww));
            }
        }
    }
    out
}

/// Was aborting `victim` needed, judged at key level over the committed transactions and it?
pub fn need(txns: &[TxnView], victim: TxnId, layout: &Layout) -> Need {
    let members: Vec<TxnId> = txns
        .iter()
        .filter(|t| t.status == Status::Committed || t.id == victim)
        .map(|t| t.id)
        .collect();
    let e = edges(txns, &members, layout);
    let rw = |a: TxnId, b: TxnId| e.contains(&(a, b, Edge::Rw));
    let mut dangerous = false;
    for &a in &members {
        for &b in &members {
            for &c in &members {
                if a != b && b != c && rw(a, b) && rw(b, c) && [a, b, c].contains(&victim) {
                    dangerous = true;
                }
            }
        }
    }
    if !dangerous {
        return Need::OverAbort;
    }
    // A cycle through the victim: can the victim reach itself?
    let mut seen = BTreeSet::new();
    let mut stack = vec![victim];
    while let Some(n) = stack.pop() {
        for &(a, b, _) in &e {
            if a == n {
                if b == victim {
                    return Need::Needed;
                }
                if seen.insert(b) {
                    stack.push(b);
                }
            }
        }
    }
    Need::Unneeded
}

/// Every transaction the SSI machinery aborted, with the verdict.
pub fn judge(txns: &[TxnView], layout: &Layout) -> Vec<(TxnId, Need)> {
    txns.iter()
        .filter(|t| t.status == Status::Aborted && t.failure.is_some_and(|f| f.is_ssi()))
        .map(|t| (t.id, need(txns, t.id, layout)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Engine, Variant};

    fn skew() -> Engine {
        let e = Engine::new(Variant::FIX, Layout::new().key("alice", 0).key("bob", 1));
        e.load("alice", 1);
        e.load("bob", 1);
        e
    }

    #[test]
    fn write_skew_control_abort_is_needed() {
        let e = skew();
        let (t1, t2) = (e.begin("T1"), e.begin("T2"));
        t1.read("bob").unwrap();
        t2.read("alice").unwrap();
        t1.write("alice", 0).unwrap();
        t2.write("bob", 0).unwrap();
        t1.commit().unwrap_err();
        t2.commit().unwrap();
        assert_eq!(judge(&e.txns(), e.layout()), [(0, Need::Needed)]);
    }

    #[test]
    fn an_edge_to_an_aborted_peer_is_an_over_abort() {
        let e = skew();
        let (t1, t2) = (e.begin("T1"), e.begin("T2"));
        t1.read("bob").unwrap();
        t1.write("alice", 0).unwrap();
        t2.read("alice").unwrap();
        t1.abort().unwrap();
        t2.write("bob", 0).unwrap_err();
        t1.cleanup().unwrap();
        assert_eq!(judge(&e.txns(), e.layout()), [(1, Need::OverAbort)]);
    }

    #[test]
    fn a_pivot_that_commits_first_is_aborted_although_no_cycle_exists() {
        let e = Engine::new(Variant::FIX, Layout::new().key("a", 0).key("b", 1));
        e.load("a", 0);
        e.load("b", 0);
        let (t1, t2, t3) = (e.begin("T1"), e.begin("T2"), e.begin("T3"));
        t1.read("b").unwrap();
        t2.read("b").unwrap();
        t2.read("a").unwrap();
        t1.write("a", 1).unwrap();
        t3.write("b", 1).unwrap();
        assert!(t1.commit().is_err());
        t3.commit().unwrap();
        t2.commit().unwrap();
        assert_eq!(judge(&e.txns(), e.layout()), [(0, Need::Unneeded)]);
    }
}
