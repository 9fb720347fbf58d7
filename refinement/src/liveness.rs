//! `<>P` under weak fairness, with TLA+'s semantics.
//!
//! A violation is a fair lasso on which P never holds. Every state may stutter, so a single
//! state is a lasso of its own; it is fair only where every weakly-fair group is disabled.
//! A larger strongly connected component of ¬P states admits a fair cycle iff, for each group,
//! the group is disabled at some state of it or takes some step inside it: one cycle can then
//! visit all of those places.

use std::collections::VecDeque;

use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};

use crate::graph::StateGraph;

/// A behaviour that never reaches P: `prefix` ends at the loop's first state; `cycle` starts
/// there and returns to it. An empty cycle means the last state stutters forever.
#[derive(Debug, Clone)]
pub struct Lasso {
    pub prefix: Vec<u32>,
    pub cycle: Vec<u32>,
}

/// `groups` is the number of weakly-fair groups in force (zero for a spec without fairness).
pub fn find_unfulfilled<S>(
    graph: &StateGraph<S>,
    holds: impl Fn(&S) -> bool,
    groups: usize,
) -> Option<Lasso> {
    let n = graph.states.len();
    let bad: Vec<bool> = graph.states.iter().map(|s| !holds(s)).collect();
    let all_groups: u64 = if groups == 0 { 0 } else { (1u64 << groups) - 1 };

    // ¬P states reachable through ¬P states, with shortest-path parents for the prefix.
    let mut depth = vec![u32::MAX; n];
    let mut parent = vec![u32::MAX; n];
    let mut queue = VecDeque::new();
    for &i in &graph.inits {
        if bad[i as usize] && depth[i as usize] == u32::MAX {
            depth[i as usize] = 0;
            queue.push_back(i);
        }
    }
    let mut order = Vec::new();
    while let Some(i) = queue.pop_front() {
        order.push(i);
        for e in &graph.edges[i as usize] {
            let t = e.to as usize;
            if bad[t] && depth[t] == u32::MAX {
                depth[t] = depth[i as usize] + 1;
                parent[t] = i;
                queue.push_back(e.to);
            }
        }
    }
    if order.is_empty() {
        return None;
    }

    let mut sub: DiGraph<u32, Option<u8>> = DiGraph::new();
    let mut node = vec![NodeIndex::end(); n];
    for &i in &order {
        node[i as usize] = sub.add_node(i);
    }
    for &i in &order {
        for e in &graph.edges[i as usize] {
            if node[e.to as usize] != NodeIndex::end() {
                sub.add_edge(node[i as usize], node[e.to as usize], e.group);
            }
        }
    }

    let mut best: Option<(u32, u32, Vec<u32>)> = None;
    for component in tarjan_scc(&sub) {
        let members: Vec<u32> = component.iter().map(|&v| sub[v]).collect();
        let fair = if members.len() == 1 {
            graph.enabled[members[0] as usize] & all_groups == 0
        } else {
            let inside = component_mask(&members, n);
            (0..groups).all(|g| {
                members
                    .iter()
                    .any(|&s| graph.enabled[s as usize] & (1 << g) == 0)
                    || members.iter().any(|&s| {
                        graph.edges[s as usize]
                            .iter()
                            .any(|e| inside[e.to as usize] && e.group == Some(g as u8))
                    })
            })
        };
        if !fair {
            continue;
        }
        let entry = *members
            .iter()
            .min_by_key(|&&s| (depth[s as usize], s))
            .expect("components are non-empty");
        let key = (depth[entry as usize], entry);
        if best.as_ref().is_none_or(|(d, e, _)| key < (*d, *e)) {
            best = Some((key.0, entry, members));
        }
    }
    let (_, entry, members) = best?;

    let mut prefix = vec![entry];
    let mut at = entry;
    while parent[at as usize] != u32::MAX {
        at = parent[at as usize];
        prefix.push(at);
    }
    prefix.reverse();
    let cycle = if members.len() == 1 {
        Vec::new()
    } else {
        fair_cycle(graph, entry, &members, groups, n)
    };
    Some(Lasso { prefix, cycle })
}

fn component_mask(members: &[u32], n: usize) -> Vec<bool> {
    let mut inside = vec![false; n];
    for &m in members {
        inside[m as usize] = true;
    }
    inside
}

/// A closed walk from `entry` inside the component that, for every fair group, passes a state
/// where the group is disabled or takes one of its steps.
fn fair_cycle<S>(
    graph: &StateGraph<S>,
    entry: u32,
    members: &[u32],
    groups: usize,
    n: usize,
) -> Vec<u32> {
    let inside = component_mask(members, n);
    let mut walk = vec![entry];
    let mut at = entry;
    for g in 0..groups {
        if let Some(&s) = members
            .iter()
            .find(|&&s| graph.enabled[s as usize] & (1 << g) == 0)
        {
            extend(graph, &inside, &mut walk, &mut at, s);
            continue;
        }
        let (from, to) = members
            .iter()
            .find_map(|&s| {
                graph.edges[s as usize]
                    .iter()
                    .find(|e| inside[e.to as usize] && e.group == Some(g as u8))
                    .map(|e| (s, e.to))
            })
            .expect("a fair component takes every group it does not disable");
        extend(graph, &inside, &mut walk, &mut at, from);
        walk.push(to);
        at = to;
    }
    if walk.len() == 1 {
        // Fairness asked for nothing: any step inside the component and back closes a cycle.
        let to = graph.edges[entry as usize]
            .iter()
            .find(|e| inside[e.to as usize])
            .expect("a component of two or more states has an edge out of each state")
            .to;
        walk.push(to);
        at = to;
    }
    extend(graph, &inside, &mut walk, &mut at, entry);
    walk.pop();
    walk
}

/// Appends the shortest path inside the component from `*at` to `target` (excluding `*at`).
fn extend<S>(
    graph: &StateGraph<S>,
    inside: &[bool],
    walk: &mut Vec<u32>,
    at: &mut u32,
    target: u32,
) {
    if *at == target {
        return;
    }
    let mut parent = vec![u32::MAX; inside.len()];
    let mut queue = VecDeque::from([*at]);
    parent[*at as usize] = *at;
    while let Some(i) = queue.pop_front() {
        if i == target {
            break;
        }
        for e in &graph.edges[i as usize] {
            if inside[e.to as usize] && parent[e.to as usize] == u32::MAX {
                parent[e.to as usize] = i;
                queue.push_back(e.to);
            }
        }
    }
    let mut path = vec![target];
    let mut i = target;
    while parent[i as usize] != i {
        i = parent[i as usize];
        path.push(i);
    }
    path.pop();
    path.reverse();
    walk.extend(&path);
    *at = target;
}
