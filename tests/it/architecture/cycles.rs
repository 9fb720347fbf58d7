//! Import cycles in a module graph, each named as the modules around it and the import that
//! leads from each to the next.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::graph::ModuleGraph;
use super::source::ModulePath;

/// One cycle of every knot of mutually importing modules (a strongly connected component),
/// as `a → b (via crate::b::T) → a (via …)`, in a fixed order.
pub fn cycles(graph: &ModuleGraph) -> Vec<String> {
    knots(graph)
        .into_iter()
        .map(|knot| name(graph, &shortest_cycle(graph, &knot)))
        .collect()
}

fn targets<'g>(graph: &'g ModuleGraph, from: &ModulePath) -> Vec<&'g ModulePath> {
    graph
        .imports
        .get(from)
        .map(|to| to.keys().collect())
        .unwrap_or_default()
}

/// The strongly connected components of more than one module (Tarjan's algorithm, iterative).
fn knots(graph: &ModuleGraph) -> Vec<BTreeSet<ModulePath>> {
    let nodes: Vec<&ModulePath> = graph.files.keys().collect();
    let index_of: BTreeMap<&ModulePath, usize> =
        nodes.iter().enumerate().map(|(i, m)| (*m, i)).collect();
    let edges: Vec<Vec<usize>> = nodes
        .iter()
        .map(|m| {
            targets(graph, m)
                .into_iter()
                .filter_map(|t| index_of.get(t).copied())
                .collect()
        })
        .collect();
    let mut order = vec![usize::MAX; nodes.len()];
    let mut low = vec![0; nodes.len()];
    let mut on_stack = vec![false; nodes.len()];
    let (mut stack, mut found, mut next) = (Vec::new(), Vec::new(), 0);
    for start in 0..nodes.len() {
        if order[start] != usize::MAX {
            continue;
        }
        // Each frame: a node and how many of its edges are done.
        let mut frames = vec![(start, 0)];
        order[start] = next;
        low[start] = next;
        next += 1;
        stack.push(start);
        on_stack[start] = true;
        while let Some(&mut (v, ref mut done)) = frames.last_mut() {
            if let Some(&w) = edges[v].get(*done) {
                *done += 1;
                if order[w] == usize::MAX {
                    order[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    frames.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(order[w]);
                }
                continue;
            }
            frames.pop();
            if let Some(&(parent, _)) = frames.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == order[v] {
                let mut knot = BTreeSet::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    knot.insert(nodes[w].clone());
                    if w == v {
                        break;
                    }
                }
                if knot.len() > 1 {
                    found.push(knot);
                }
            }
        }
    }
    found.sort();
    found
}

/// The shortest cycle through the knot's first module, found breadth first inside the knot.
fn shortest_cycle(graph: &ModuleGraph, knot: &BTreeSet<ModulePath>) -> Vec<ModulePath> {
    let start = knot.iter().next().expect("a knot has modules");
    let mut came_from: BTreeMap<&ModulePath, &ModulePath> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(at) = queue.pop_front() {
        for to in targets(graph, at) {
            if !knot.contains(to) || came_from.contains_key(to) {
                continue;
            }
            came_from.insert(to, at);
            if to == start {
                let mut cycle = vec![start.clone()];
                let mut back = at;
                while back != start {
                    cycle.push(back.clone());
                    back = came_from[back];
                }
                cycle.push(start.clone());
                cycle.reverse();
                return cycle;
            }
            queue.push_back(to);
        }
    }
    unreachable!("every module of a knot lies on a cycle through every other")
}

fn module_name(module: &ModulePath) -> String {
    if module.is_empty() {
        "crate root".to_string()
    } else {
        module.join("::")
    }
}

fn name(graph: &ModuleGraph, cycle: &[ModulePath]) -> String {
    let mut text = module_name(&cycle[0]);
    for pair in cycle.windows(2) {
        let via = &graph.imports[&pair[0]][&pair[1]];
        text.push_str(&format!(" → {} (via {via})", module_name(&pair[1])));
    }
    text
}
