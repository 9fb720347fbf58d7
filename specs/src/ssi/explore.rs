//! Every interleaving of a workload under one configuration of the model, with the history
//! classification needs: which version each read saw. The model's state records a read's
//! value, not its writer (values can coincide), so the search runs over (state, reads-from)
//! pairs, breadth first, with a visited set and a budget; the reads-from of a read is the
//! model's own [`Ssi::visible_version`] in the state the read runs in.
//!
//! The result is honest about its budget: an exploration stopped by it is `complete: false`,
//! and what it found is a lower bound, never "no anomaly".

use std::collections::{BTreeMap, HashSet, VecDeque};

use loadbearing_refinement::Model;
use serde::Serialize;

use super::anomaly::{self, Anomaly, History, ReadOp, TxnRecord, Writer};
use super::workload::Stmt;
use super::{Ssi, SsiAction, SsiState, Status, MAX_STMTS, MAX_TXNS};

/// Per transaction and statement: the writer (0 initial, t + 1 transaction t) of the version
/// the read returned.
pub type ReadsFrom = [[Option<u8>; MAX_STMTS]; MAX_TXNS];

struct Node {
    state: SsiState,
    reads_from: ReadsFrom,
    parent: Option<(usize, SsiAction)>,
}

/// One final state (no action enabled: every transaction committed, or aborted and cleaned).
pub struct Final {
    pub history: History,
    pub anomalies: Vec<Anomaly>,
    /// The model's value-based oracle (some serial order gives every read and the state).
    pub serializable: bool,
    /// The actions from the initial state, as the model formats them.
    pub schedule: Vec<String>,
}

pub struct Exploration {
    /// (state, reads-from) pairs visited.
    pub states: usize,
    /// Distinct model states among them.
    pub model_states: usize,
    pub complete: bool,
    pub finals: Vec<Final>,
}

/// The history of a finished state.
pub fn history(model: &Ssi, s: &SsiState, reads_from: &ReadsFrom) -> History {
    let w = &model.workload;
    let txns = (0..w.programs.len())
        .map(|t| TxnRecord {
            committed: s.txns[t].status == Status::Committed,
            reads: w.programs[t]
                .iter()
                .enumerate()
                .filter_map(|(i, stmt)| match (stmt, reads_from[t][i]) {
                    (Stmt::Read(k), Some(writer)) => Some(ReadOp {
                        key: *k,
                        from: match writer {
                            0 => Writer::Initial,
                            w => Writer::Txn(w as usize - 1),
                        },
                        // The model updates a transaction's own version in place: no read
                        // ever sees an intermediate one.
                        intermediate: false,
                    }),
                    _ => None,
                })
                .collect(),
            writes: (0..w.keys.len())
                .filter(|&k| s.versions[k].iter().any(|v| v.writer as usize == t + 1))
                .collect(),
            // The model reads keys only, a transaction's own keys from its own version.
            predicate_reads: Vec::new(),
            internal: Vec::new(),
        })
        .collect();
    let committed = model.committed(s);
    let version_order = s
        .versions
        .iter()
        .map(|versions| {
            let mut order: Vec<(u8, usize)> = versions
                .iter()
                .filter(|v| v.writer != 0 && committed.contains(&(v.writer as usize - 1)))
                .map(|v| {
                    let t = v.writer as usize - 1;
                    (s.txns[t].commit_seq, t)
                })
                .collect();
            order.sort();
            order.into_iter().map(|(_, t)| t).collect()
        })
        .collect();
    History {
        keys: w.keys.clone(),
        txns,
        version_order,
        values: Vec::new(),
    }
}

/// The reads-from after `action` takes `state` to `next`: a read that returned records the
/// writer of the version the model made visible to it.
fn reads_after(
    model: &Ssi,
    state: &SsiState,
    action: SsiAction,
    next: &SsiState,
    mut reads_from: ReadsFrom,
) -> ReadsFrom {
    if let SsiAction::Exec(t, i) = action {
        let (t, i) = (t as usize, i as usize);
        if let Stmt::Read(k) = model.workload.programs[t][i] {
            // A read that the reader path failed returned nothing.
            if next.txns[t].reads[i].is_some() {
                reads_from[t][i] = Some(model.visible_version(state, t, k).writer);
            }
        }
    }
    reads_from
}

/// The anomalies of the history a path of the model commits (a counterexample's), each as
/// `G2-item (write skew): T1 -rw(bob)-> T2 -rw(alice)-> T1`.
pub fn anomalies_of_path(
    model: &Ssi,
    path: &loadbearing_refinement::path::Path<SsiState, SsiAction>,
) -> Vec<String> {
    let mut reads_from = [[None; MAX_STMTS]; MAX_TXNS];
    for (before, action, after) in path.transitions() {
        reads_from = reads_after(model, before, *action, after, reads_from);
    }
    let last = path.transitions().last().map_or(path.init(), |(_, _, s)| s);
    let history = history(model, last, &reads_from);
    anomaly::classify(&history)
        .iter()
        .map(|a| a.render(&history.keys))
        .collect()
}

/// Explores every interleaving, up to `max_states` (state, reads-from) pairs.
pub fn explore(model: &Ssi, max_states: usize) -> Exploration {
    let mut nodes: Vec<Node> = Vec::new();
    let mut seen: HashSet<(SsiState, ReadsFrom)> = HashSet::new();
    let mut model_states: HashSet<SsiState> = HashSet::new();
    let mut queue = VecDeque::new();
    for state in model.init_states() {
        let reads_from = [[None; MAX_STMTS]; MAX_TXNS];
        seen.insert((state.clone(), reads_from));
        model_states.insert(state.clone());
        nodes.push(Node {
            state,
            reads_from,
            parent: None,
        });
        queue.push_back(nodes.len() - 1);
    }
    let mut complete = true;
    let mut final_nodes = Vec::new();
    let mut actions = Vec::new();
    while let Some(at) = queue.pop_front() {
        actions.clear();
        model.actions(&nodes[at].state, &mut actions);
        if actions.is_empty() {
            final_nodes.push(at);
            continue;
        }
        for &action in &actions {
            let (state, reads_from) = (&nodes[at].state, nodes[at].reads_from);
            let Some(next) = model.next_state(state, action) else {
                continue;
            };
            let next_reads = reads_after(model, state, action, &next, reads_from);
            let key = (next, next_reads);
            if seen.contains(&key) {
                continue;
            }
            if seen.len() >= max_states {
                complete = false;
                continue;
            }
            model_states.insert(key.0.clone());
            seen.insert(key.clone());
            nodes.push(Node {
                state: key.0,
                reads_from: key.1,
                parent: Some((at, action)),
            });
            queue.push_back(nodes.len() - 1);
        }
    }
    let finals = final_nodes
        .into_iter()
        .map(|at| {
            let node = &nodes[at];
            let history = history(model, &node.state, &node.reads_from);
            Final {
                anomalies: anomaly::classify(&history),
                serializable: model.serializable(&node.state),
                schedule: schedule(model, &nodes, at),
                history,
            }
        })
        .collect();
    Exploration {
        states: seen.len(),
        model_states: model_states.len(),
        complete,
        finals,
    }
}

fn schedule(model: &Ssi, nodes: &[Node], mut at: usize) -> Vec<String> {
    let mut out = Vec::new();
    while let Some((parent, action)) = nodes[at].parent {
        out.push(model.format_action(&action));
        at = parent;
    }
    out.reverse();
    out
}

/// One anomaly class (with its pattern) and where it was reached.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// `G2-item (write skew)`.
    pub label: String,
    pub class: anomaly::Class,
    pub pattern: Option<anomaly::Pattern>,
    /// Final states with this anomaly.
    pub finals: usize,
    /// The first (shortest) example: `T1 -rw(bob)-> T2 -rw(alice)-> T1`.
    pub example: String,
    pub schedule: Vec<String>,
}

/// The value-based oracle against the graph, over the final states.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OracleAgreement {
    /// Final states the value oracle finds not serializable.
    pub not_serializable: usize,
    /// Final states with some anomaly.
    pub anomalous: usize,
    /// Not serializable by values, yet no anomaly: would be a classification bug.
    pub unexplained: usize,
    /// An anomaly whose values happen to match a serial order (a cycle the values hide).
    pub hidden_by_values: usize,
}

/// What an exploration found, for reports.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub states: usize,
    pub model_states: usize,
    pub finals: usize,
    pub complete: bool,
    pub findings: Vec<Finding>,
    pub oracle: OracleAgreement,
}

impl Exploration {
    pub fn summary(&self) -> Summary {
        let mut findings: BTreeMap<(anomaly::Class, Option<anomaly::Pattern>), Finding> =
            BTreeMap::new();
        let mut oracle = OracleAgreement::default();
        for f in &self.finals {
            let anomalous = !f.anomalies.is_empty();
            oracle.not_serializable += usize::from(!f.serializable);
            oracle.anomalous += usize::from(anomalous);
            oracle.unexplained += usize::from(!f.serializable && !anomalous);
            oracle.hidden_by_values += usize::from(f.serializable && anomalous);
            let mut labels: Vec<&Anomaly> = f.anomalies.iter().collect();
            labels.dedup_by_key(|a| (a.class, a.pattern));
            for a in labels {
                findings
                    .entry((a.class, a.pattern))
                    .or_insert_with(|| Finding {
                        label: a.label(),
                        class: a.class,
                        pattern: a.pattern,
                        finals: 0,
                        example: a.evidence_text(&f.history.keys),
                        schedule: f.schedule.clone(),
                    })
                    .finals += 1;
            }
        }
        Summary {
            states: self.states,
            model_states: self.model_states,
            finals: self.finals.len(),
            complete: self.complete,
            findings: findings.into_values().collect(),
            oracle,
        }
    }
}

// Tested through the CLI's workload module, whose models come from the engine's variants.
