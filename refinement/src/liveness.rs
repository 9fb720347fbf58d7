//! `<>P` and `<>[]P` under weak fairness, with TLA+'s semantics.
//!
//! A violation of `<>P` is a fair lasso on which P never holds; of `<>[]P`, a fair lasso whose
//! loop passes a ¬P state. Every state may stutter, so a single state is a lasso of its own; it
//! is fair only where every weakly-fair group is disabled. A larger strongly connected
//! component admits a fair cycle iff, for each group, the group is disabled at some state of it
//! or takes some step inside it: one cycle can then visit all of those places (and start at the
//! ¬P state the loop must pass).
//!
//! The search keeps two words a state beside the graph: Tarjan's visit order and low link
//! (the low link becomes the state's component once it closes), then the component and the
//! breadth-first parent. Each component is judged fair as it closes, so no list of components
//! is kept. A walk with two bits a state goes first: a region without a cycle or a state fair
//! alone (every region of the kafka-flow 828 suite whose property holds) has no fair lasso,
//! and Tarjan's walk, whose marks miss the cache on a large graph, is not needed.

use crate::bits::{BitSet, PackedBits};
use crate::graph::StateGraph;
use crate::progress::Progress;

/// A behaviour that never reaches P: `prefix` ends at the loop's first state; `cycle` starts
/// there and returns to it. An empty cycle means the last state stutters forever.
#[derive(Debug, Clone)]
pub struct Lasso {
    pub prefix: Vec<u32>,
    pub cycle: Vec<u32>,
}

/// `<>P` for temporal property `property` of the graph. `groups` is the number of
/// weakly-fair groups in force (zero for a spec without fairness).
/// `progress` ticks while the components are searched.
pub fn find_unfulfilled(
    graph: &StateGraph,
    property: usize,
    groups: usize,
    progress: &mut Option<Progress>,
) -> Option<Lasso> {
    // A behaviour that never reaches P stays in ¬P states from its first state on.
    fair_lasso(
        graph,
        |s| !graph.holds(property, s),
        |_| true,
        groups,
        progress,
    )
}

/// `<>[]P` under weak fairness: a violation is a fair lasso whose loop passes a ¬P state, so P
/// is left infinitely often (its prefix may pass through P). An initial P does not help.
pub fn find_unstable(
    graph: &StateGraph,
    property: usize,
    groups: usize,
    progress: &mut Option<Progress>,
) -> Option<Lasso> {
    fair_lasso(
        graph,
        |_| true,
        |s| !graph.holds(property, s),
        groups,
        progress,
    )
}

/// What Tarjan's walk keeps of a state, side by side: the walk reads and writes both at once,
/// and a graph of millions of states reaches them at random, a cache miss each.
#[derive(Clone, Copy)]
struct Mark {
    /// Visit order while on the stack, `DONE` once closed; `NONE` before the visit.
    index: u32,
    /// The low link while on the stack, the component once closed (`NONE` outside the region).
    low: u32,
}

/// No state: unvisited, outside the region, or the root of a breadth-first search.
const NONE: u32 = u32::MAX;
/// A state whose component has closed (Tarjan's visit order is then no longer needed).
const DONE: u32 = u32::MAX - 1;

/// The fair lasso that stays inside `region` and whose loop starts at a state `entry_ok`
/// accepts, with the shortest prefix (then the lowest entry id): none if no such lasso exists.
fn fair_lasso(
    graph: &StateGraph,
    region: impl Fn(u32) -> bool,
    entry_ok: impl Fn(u32) -> bool,
    groups: usize,
    progress: &mut Option<Progress>,
) -> Option<Lasso> {
    let all_groups: u64 = if groups == 0 {
        0
    } else {
        u64::MAX >> (64 - groups)
    };
    if acyclic_without_fair_state(graph, &region, all_groups, progress) {
        return None;
    }
    let (marks, fair) = fair_components(graph, &region, all_groups, progress);
    let component = |s: u32| marks[s as usize].low;
    // No fair component, no lasso: the breadth-first search for the shortest way into one
    // would only walk the whole region to find none.
    if fair.is_clear() {
        return None;
    }
    let candidate = |s: u32| {
        let c = component(s);
        c != NONE && fair.contains(c as usize) && entry_ok(s)
    };

    // Breadth-first through the region, level by level, until a level holds a candidate entry.
    let mut parent = vec![NONE; graph.len()];
    let mut seen = BitSet::sized(graph.len());
    let mut level: Vec<u32> = Vec::new();
    for &i in &graph.inits {
        if region(i) && !seen.contains(i as usize) {
            seen.insert(i as usize);
            level.push(i);
        }
    }
    let entry = loop {
        if let Some(entry) = level.iter().copied().filter(|&s| candidate(s)).min() {
            break entry;
        }
        if level.is_empty() {
            return None;
        }
        let mut next = Vec::new();
        for &i in &level {
            for e in graph.edges(i) {
                if region(e.to) && !seen.contains(e.to as usize) {
                    seen.insert(e.to as usize);
                    parent[e.to as usize] = i;
                    next.push(e.to);
                }
            }
        }
        level = next;
    };
    drop(seen);

    let mut prefix = vec![entry];
    let mut at = entry;
    while parent[at as usize] != NONE {
        at = parent[at as usize];
        prefix.push(at);
    }
    prefix.reverse();
    drop(parent);

    let c = component(entry);
    let members: Vec<u32> = (0..graph.len() as u32)
        .filter(|&s| component(s) == c)
        .collect();
    let cycle = if members.len() == 1 {
        Vec::new()
    } else {
        fair_cycle(graph, entry, &members, groups, |s| component(s) == c)
    };
    Some(Lasso { prefix, cycle })
}

/// Whether the region's states reachable from its initial states form no cycle and none of
/// them is fair alone (each leaves some group enabled): then every component is a single
/// state, none fair, and there is no fair lasso. A depth-first walk with two bits a state
/// (`Colour`), a few megabytes where Tarjan's marks are two words a state: on a graph of
/// millions of states it stays in the cache that Tarjan's marks miss. It gives up (false) at
/// the first edge back into the walk, or the first state fair alone, and Tarjan then walks
/// the region again from the start: what it decides, and every counterexample, is its own.
fn acyclic_without_fair_state(
    graph: &StateGraph,
    region: &impl Fn(u32) -> bool,
    all_groups: u64,
    progress: &mut Option<Progress>,
) -> bool {
    let mut colours = PackedBits::zeroed(COLOUR_BITS, graph.len());
    let mut visited = 0u64;
    // The depth-first walk: each state with the position of its next edge to follow.
    let mut walk: Vec<(u32, u32)> = Vec::new();
    for &root in &graph.inits {
        if !region(root) || colour(&colours, root) != Colour::Unseen {
            continue;
        }
        let mut next = Some(root);
        loop {
            if let Some(v) = next.take() {
                // A state no group is enabled at may stutter forever: a fair lasso alone.
                if !graph.enabled(v) & all_groups == all_groups {
                    return false;
                }
                colours.set(v as usize, Colour::OnWalk as u64);
                visited += 1;
                let edges = graph.edge_range(v);
                for position in edges.clone() {
                    graph.prefetch_edges(graph.target(position));
                }
                walk.push((v, edges.start as u32));
            }
            let Some(&(v, position)) = walk.last() else {
                break;
            };
            if position & 0xfff == 0 {
                if let Some(line) = progress.as_mut() {
                    line.tick(visited, walk.len() as u64, walk.len());
                }
            }
            if (position as usize) < graph.edge_range(v).end {
                walk.last_mut().expect("the walk is not empty").1 += 1;
                let w = graph.target(position as usize);
                if !region(w) {
                    continue;
                }
                match colour(&colours, w) {
                    Colour::Unseen => next = Some(w),
                    // An edge back to a state on the walk: a cycle.
                    Colour::OnWalk => return false,
                    Colour::Closed => {}
                }
                continue;
            }
            walk.pop();
            colours.set(v as usize, Colour::Closed as u64);
        }
    }
    true
}

/// Where a state stands in `acyclic_without_fair_state`'s walk: two bits of a `PackedBits`,
/// so that the walk reads a state's colour in one access.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Colour {
    Unseen = 0,
    OnWalk = 1,
    Closed = 2,
}

const COLOUR_BITS: usize = 2;

fn colour(colours: &PackedBits, state: u32) -> Colour {
    match colours.get(state as usize) {
        0 => Colour::Unseen,
        1 => Colour::OnWalk,
        _ => Colour::Closed,
    }
}

/// The strongly connected components of the region's states reachable from its initial states,
/// by Tarjan's algorithm with an explicit stack (a deep graph would overflow the call stack):
/// each state's marks (its component in `low`, `NONE` outside), and which components admit a
/// fair cycle.
fn fair_components(
    graph: &StateGraph,
    region: &impl Fn(u32) -> bool,
    all_groups: u64,
    progress: &mut Option<Progress>,
) -> (Vec<Mark>, BitSet) {
    let n = graph.len();
    let mut marks = vec![
        Mark {
            index: NONE,
            low: NONE
        };
        n
    ];
    let mut fair = BitSet::default();
    let mut stack: Vec<u32> = Vec::new();
    // The depth-first walk: each state with the position of its next edge to follow.
    let mut walk: Vec<(u32, u32)> = Vec::new();
    // A cell: the walk's progress line reads it while `visit` counts with it.
    let next_index = std::cell::Cell::new(0u32);
    let visit = |v: u32, marks: &mut [Mark], stack: &mut Vec<u32>| {
        let i = next_index.get();
        marks[v as usize] = Mark { index: i, low: i };
        next_index.set(i + 1);
        stack.push(v);
        let edges = graph.edge_range(v);
        // The walk reads each successor's marks next, and its edges if it goes there: asked
        // for together, their cache misses overlap.
        for position in edges.clone() {
            let w = graph.target(position);
            crate::prefetch::prefetch(&marks[w as usize]);
            graph.prefetch_edges(w);
        }
        (v, edges.start as u32)
    };
    for &root in &graph.inits {
        if !region(root) || marks[root as usize].index != NONE {
            continue;
        }
        walk.push(visit(root, &mut marks, &mut stack));
        while let Some(&(v, position)) = walk.last() {
            // A clock read every few thousand steps of the walk: states visited, and the
            // walk's depth for its queue.
            if position & 0xfff == 0 {
                if let Some(line) = progress.as_mut() {
                    line.tick(u64::from(next_index.get()), walk.len() as u64, walk.len());
                }
            }
            if (position as usize) < graph.edge_range(v).end {
                walk.last_mut().expect("the walk is not empty").1 += 1;
                let w = graph.target(position as usize);
                if !region(w) {
                    continue;
                }
                match marks[w as usize].index {
                    NONE => walk.push(visit(w, &mut marks, &mut stack)),
                    DONE => {}
                    on_stack => marks[v as usize].low = marks[v as usize].low.min(on_stack),
                }
                continue;
            }
            walk.pop();
            if let Some(&(u, _)) = walk.last() {
                marks[u as usize].low = marks[u as usize].low.min(marks[v as usize].low);
            }
            if marks[v as usize].low == marks[v as usize].index {
                // `v` is its component's root: the states above it on the stack are the rest.
                let c = fair.len() as u32;
                let from = stack
                    .iter()
                    .rposition(|&s| s == v)
                    .expect("a component's root is on the stack");
                for &s in &stack[from..] {
                    marks[s as usize].index = DONE;
                    marks[s as usize].low = c;
                }
                // A loop through the component can pass every state and take every step inside
                // it, so it is fair iff each group is disabled at one of its states or takes a
                // step inside.
                let mut met = 0u64;
                for &s in &stack[from..] {
                    met |= !graph.enabled(s) & all_groups;
                    for e in graph.edges(s) {
                        if marks[e.to as usize].index == DONE && marks[e.to as usize].low == c {
                            if let Some(g) = e.group {
                                met |= 1 << g;
                            }
                        }
                    }
                }
                fair.push(met & all_groups == all_groups);
                stack.truncate(from);
            }
        }
    }
    (marks, fair)
}

/// A closed walk from `entry` inside the component that, for every fair group, passes a state
/// where the group is disabled or takes one of its steps.
fn fair_cycle(
    graph: &StateGraph,
    entry: u32,
    members: &[u32],
    groups: usize,
    inside: impl Fn(u32) -> bool,
) -> Vec<u32> {
    let mut walk = vec![entry];
    let mut at = entry;
    for g in 0..groups {
        if let Some(&s) = members.iter().find(|&&s| graph.enabled(s) & (1 << g) == 0) {
            extend(graph, &inside, &mut walk, &mut at, s);
            continue;
        }
        let (from, to) = members
            .iter()
            .find_map(|&s| {
                graph
                    .edges(s)
                    .find(|e| inside(e.to) && e.group == Some(g as u8))
                    .map(|e| (s, e.to))
            })
            .expect("a fair component takes every group it does not disable");
        extend(graph, &inside, &mut walk, &mut at, from);
        walk.push(to);
        at = to;
    }
    if walk.len() == 1 {
        // Fairness asked for nothing: any step inside the component and back closes a cycle.
        let to = graph
            .edges(entry)
            .find(|e| inside(e.to))
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
fn extend(
    graph: &StateGraph,
    inside: &impl Fn(u32) -> bool,
    walk: &mut Vec<u32>,
    at: &mut u32,
    target: u32,
) {
    if *at == target {
        return;
    }
    let mut parent = vec![NONE; graph.len()];
    let mut queue = std::collections::VecDeque::from([*at]);
    parent[*at as usize] = *at;
    while let Some(i) = queue.pop_front() {
        if i == target {
            break;
        }
        for e in graph.edges(i) {
            if inside(e.to) && parent[e.to as usize] == NONE {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Edge;

    fn edge(to: u32) -> Edge {
        Edge { to, group: Some(0) }
    }

    /// 0 -> 1 -> 2 by group 0; the second step is fair, the last state enables nothing.
    fn chain(p: [bool; 3]) -> StateGraph {
        StateGraph::from_parts(
            vec![0],
            vec![vec![edge(1)], vec![edge(2)], vec![]],
            vec![1, 1, 0],
            vec![p.to_vec()],
        )
    }

    #[test]
    fn a_behaviour_that_passes_p_and_leaves_it_violates_eventually_always_only() {
        let graph = chain([true, false, false]);
        assert!(find_unfulfilled(&graph, 0, 1, &mut None).is_none());
        let lasso = find_unstable(&graph, 0, 1, &mut None).expect("it ends stuttering in ¬P");
        assert_eq!(lasso.prefix, [0, 1, 2]);
        assert!(lasso.cycle.is_empty());
    }

    #[test]
    fn eventually_always_holds_when_every_fair_end_satisfies_p() {
        let graph = chain([false, false, true]);
        assert!(find_unstable(&graph, 0, 1, &mut None).is_none());
        // Without fairness the behaviour may stop at its first state.
        assert_eq!(find_unstable(&graph, 0, 0, &mut None).unwrap().prefix, [0]);
    }

    #[test]
    fn a_fair_loop_through_a_not_p_state_violates_eventually_always() {
        // 0 -> 1 -> 0, both by group 0: the loop takes the group, and 1 is ¬P.
        let graph = StateGraph::from_parts(
            vec![0],
            vec![vec![edge(1)], vec![edge(0)]],
            vec![1, 1],
            vec![vec![true, false]],
        );
        let lasso = find_unstable(&graph, 0, 1, &mut None).expect("a fair loop leaves P");
        assert_eq!(lasso.prefix, [0, 1]);
        assert_eq!(lasso.cycle, [1, 0]);
        assert!(find_unfulfilled(&graph, 0, 1, &mut None).is_none());
    }

    /// 0 -> 1 -> 3 and 0 -> 2 -> 3, then 3 -> 4, by group 0, with `back` an edge from 3 to 0;
    /// P holds at 4 only if `p4`. Every state enables group 0 but 4, which enables nothing.
    fn diamond(back: bool, p4: bool) -> StateGraph {
        let from_3 = if back {
            vec![edge(4), edge(0)]
        } else {
            vec![edge(4)]
        };
        StateGraph::from_parts(
            vec![0],
            vec![
                vec![edge(1), edge(2)],
                vec![edge(3)],
                vec![edge(3)],
                from_3,
                vec![],
            ],
            vec![1, 1, 1, 1, 0],
            vec![vec![false, false, false, false, p4]],
        )
    }

    #[test]
    fn the_walk_for_cycles_passes_a_state_reached_twice_and_stops_at_a_loop_or_a_fair_end() {
        // P at 4: the region is 0 to 3, each enabling group 0, and 3 is reached twice.
        let graph = diamond(false, true);
        let not_p = |s| !graph.holds(0, s);
        assert!(acyclic_without_fair_state(&graph, &not_p, 1, &mut None));
        assert!(find_unfulfilled(&graph, 0, 1, &mut None).is_none());
        // Without P at 4, 4 is a fair end: Tarjan decides, and finds it.
        let graph = diamond(false, false);
        assert!(!acyclic_without_fair_state(&graph, &|_| true, 1, &mut None));
        assert_eq!(
            find_unfulfilled(&graph, 0, 1, &mut None).unwrap().prefix,
            [0, 1, 3, 4]
        );
        // The edge back from 3 closes a loop outside P that takes group 0 everywhere.
        let graph = diamond(true, true);
        let not_p = |s| !graph.holds(0, s);
        assert!(!acyclic_without_fair_state(&graph, &not_p, 1, &mut None));
        let lasso = find_unfulfilled(&graph, 0, 1, &mut None).expect("a fair loop outside P");
        assert_eq!(lasso.prefix, [0]);
        assert_eq!(lasso.cycle, [0, 1, 3]);
    }

    #[test]
    fn an_unfair_loop_is_no_counterexample_but_its_fair_exit_is() {
        // 0 <-> 1 by group 1 only, while group 0 (enabled at both) leads out to 2, which
        // stutters with nothing enabled. P holds nowhere: the loop starves group 0, so the
        // only fair behaviour of <>P's violation ends at 2.
        let g1 = |to| Edge { to, group: Some(1) };
        let graph = StateGraph::from_parts(
            vec![0],
            vec![vec![g1(1), edge(2)], vec![g1(0), edge(2)], vec![]],
            vec![0b11, 0b11, 0],
            vec![vec![false; 3]],
        );
        let lasso = find_unfulfilled(&graph, 0, 2, &mut None).expect("the exit to 2 is fair");
        assert_eq!(lasso.prefix, [0, 2]);
        assert!(lasso.cycle.is_empty());
    }
}
