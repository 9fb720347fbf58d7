//! `<>P` and `<>[]P` under weak fairness, with TLA+'s semantics.
//!
//! A violation of `<>P` is a fair lasso on which P never holds; of `<>[]P`, a fair lasso whose
//! loop passes a ¬P state. Every state may stutter, so a single state is a lasso of its own; it
//! is fair only where every weakly-fair group is disabled. A larger strongly connected
//! component admits a fair cycle iff, for each group, the group is disabled at some state of it
//! or takes some step inside it: one cycle can then visit all of those places (and start at the
//! ¬P state the loop must pass).
//!
//! The search keeps two words a state beside the graph (each thread its own on several):
//! Tarjan's visit order and low link
//! (the low link becomes the state's component once it closes), then the component and the
//! breadth-first parent. Each component is judged fair as it closes, so no list of components
//! is kept. Walks with two bits a state go first, one a thread: a region without a cycle or a
//! state fair alone (every region of the kafka-flow 828 suite whose property holds) has no
//! fair lasso, and Tarjan's walk, whose marks miss the cache on a large graph, is not needed.
//! Where it is, it runs one a thread too (`components`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use rayon::prelude::*;

use crate::bits::{BitSet, SharedBits};
use crate::components::fair_components_shared;
use crate::graph::StateGraph;
use crate::progress::Ticker;
use crate::tarjan::{Mark, Tarjan, NONE};
use crate::threads::one_walk_a_thread;

/// A behaviour that never reaches P: `prefix` ends at the loop's first state; `cycle` starts
/// there and returns to it. An empty cycle means the last state stutters forever.
#[derive(Debug, Clone)]
pub struct Lasso {
    pub prefix: Vec<u32>,
    pub cycle: Vec<u32>,
}

/// The form of a temporal property.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// `<>P`
    Eventually,
    /// `<>[]P`
    EventuallyAlways,
}

/// Where a fair lasso violating temporal property `property` of `form` stays (its region), and
/// where its loop may start. `<>P`: a behaviour that never reaches P stays in ¬P states from
/// its first state on. `<>[]P`: the loop passes a ¬P state, so P is left infinitely often; the
/// prefix may pass through P, and an initial P does not help.
fn violating(
    graph: &StateGraph,
    property: usize,
    form: Form,
) -> (impl Fn(u32) -> bool + Sync + '_, impl Fn(u32) -> bool + '_) {
    let eventually = form == Form::Eventually;
    let region = move |s| !eventually || !graph.holds(property, s);
    let entry = move |s| eventually || !graph.holds(property, s);
    (region, entry)
}

/// The shortest fair lasso violating temporal property `property` of `form`, if any. `groups`
/// is the number of weakly-fair groups in force (zero for a spec without fairness).
/// `progress` ticks while the components are searched.
pub(crate) fn find_violation(
    graph: &StateGraph,
    property: usize,
    form: Form,
    groups: usize,
    progress: &mut Option<Ticker>,
) -> Option<Lasso> {
    let (region, entry) = violating(graph, property, form);
    fair_lasso(graph, region, entry, groups, progress)
}

/// Whether temporal property `property` of `form` holds on a graph whose model's variant grew
/// on every step, read without its edges (which it may lack): false where that does not settle
/// it, and the lasso search needs the edges (`acyclic_without_stutter`).
pub fn settled_by_variant(graph: &StateGraph, property: usize, form: Form, groups: usize) -> bool {
    let (region, _) = violating(graph, property, form);
    acyclic_without_stutter(graph, &region, all_groups(groups))
}

/// Whether the graph has no cycle (the model's variant grew on every step) and no state of
/// the region may stutter forever: then the only fair lassos, which stutter forever at their
/// last state, are not in the region, and there is none to find.
fn acyclic_without_stutter(
    graph: &StateGraph,
    region: &(impl Fn(u32) -> bool + Sync),
    all_groups: u64,
) -> bool {
    graph.acyclic && !any_fair_alone(graph, region, all_groups)
}

/// The bits of `groups` fair groups.
fn all_groups(groups: usize) -> u64 {
    if groups == 0 {
        0
    } else {
        u64::MAX >> (64 - groups)
    }
}

/// The fair lasso that stays inside `region` and whose loop starts at a state `entry_ok`
/// accepts, with the shortest prefix (then the lowest entry id): none if no such lasso exists.
fn fair_lasso(
    graph: &StateGraph,
    region: impl Fn(u32) -> bool + Sync,
    entry_ok: impl Fn(u32) -> bool,
    groups: usize,
    progress: &mut Option<Ticker>,
) -> Option<Lasso> {
    assert!(
        graph.edges_kept,
        "a lasso is searched for on a graph that kept its edges"
    );
    let all_groups = all_groups(groups);
    // Without a cycle a region with no state that may stutter forever needs no walk.
    if acyclic_without_stutter(graph, &region, all_groups) {
        return None;
    }
    if acyclic_without_fair_state(graph, &region, all_groups, progress) {
        return None;
    }
    // Which state is in which component is a fact of the graph: on one core Tarjan's walk
    // finds it, on several one walk a core, sharing the components they close.
    let (marks, fair) = if rayon::current_num_threads() > 1 {
        fair_components_shared(graph, &region, all_groups, progress)
    } else {
        fair_components(graph, &region, all_groups, progress)
    };
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
/// state, none fair, and there is no fair lasso. Depth-first walks with a bit or two a state,
/// a few megabytes where Tarjan's marks are two words a state: on a graph of millions of
/// states they stay in the cache that Tarjan's marks miss. It gives up (false) at the first
/// edge back into a walk, or the first state fair alone, and Tarjan then walks the region
/// again from the start: what it decides, and every counterexample, is its own.
///
/// One walk a thread, each from its own place in the initial states and every other one
/// taking edges in reverse, so that they set out into different parts of the graph. A state
/// a walk has closed (everything it reaches walked, and no cycle found) is closed for every
/// walk; a state only on another walk's path is walked again. The answer is a fact of the
/// graph, the same on every thread count.
fn acyclic_without_fair_state(
    graph: &StateGraph,
    region: &(impl Fn(u32) -> bool + Sync),
    all_groups: u64,
    progress: &mut Option<Ticker>,
) -> bool {
    let shared = Walks::new(graph.len());
    one_walk_a_thread(progress, |walker, walkers, progress| {
        walk_for_cycles(
            graph, region, all_groups, &shared, walker, walkers, progress,
        )
    });
    !shared.gave_up.load(Relaxed)
}

/// Whether state `v` may stutter forever on a fair behaviour, a fair lasso alone: no fair
/// group is enabled there.
fn fair_alone(graph: &StateGraph, v: u32, all_groups: u64) -> bool {
    !graph.enabled(v) & all_groups == all_groups
}

/// Whether some state of the region, reachable or not, may stutter forever (`fair_alone`).
fn any_fair_alone(
    graph: &StateGraph,
    region: &(impl Fn(u32) -> bool + Sync),
    all_groups: u64,
) -> bool {
    (0..graph.len() as u32)
        .into_par_iter()
        .any(|s| region(s) && fair_alone(graph, s, all_groups))
}

/// What the walks of `acyclic_without_fair_state` share.
struct Walks {
    /// States whose every successor in the region has been walked without finding a cycle.
    closed: SharedBits,
    /// Set by the walk that met a cycle or a state fair alone: the others stop too.
    gave_up: AtomicBool,
    /// States visited by every walk, for the progress line.
    visited: AtomicU64,
}

impl Walks {
    fn new(states: usize) -> Walks {
        Walks {
            closed: SharedBits::sized(states),
            gave_up: AtomicBool::new(false),
            visited: AtomicU64::new(0),
        }
    }
}

/// Walk `walker` of `walkers`: from the initial states, starting at its share's first and
/// going round, taking edges in reverse if `walker` is odd.
fn walk_for_cycles(
    graph: &StateGraph,
    region: &impl Fn(u32) -> bool,
    all_groups: u64,
    shared: &Walks,
    walker: usize,
    walkers: usize,
    progress: &mut Option<Ticker>,
) {
    let reverse = walker % 2 == 1;
    let roots = &graph.inits;
    let first = walker * roots.len() / walkers;
    // Walks going round the roots the same way would meet at each root in turn, both walking
    // it; going opposite ways they meet once.
    let root = |k: usize| {
        if reverse {
            roots[(first + roots.len() - k) % roots.len()]
        } else {
            roots[(first + k) % roots.len()]
        }
    };
    let mut on_walk = BitSet::sized(graph.len());
    let mut visited = 0u64;
    let mut steps = 0u32;
    // The depth-first walk: each state with how many of its edges it has followed.
    let mut walk: Vec<(u32, u32)> = Vec::new();
    let edge_at = |v: u32, taken: u32| -> Option<u32> {
        let edges = graph.edge_range(v);
        let taken = taken as usize;
        (taken < edges.len()).then(|| {
            let position = if reverse {
                edges.end - 1 - taken
            } else {
                edges.start + taken
            };
            graph.target(position)
        })
    };
    for k in 0..roots.len() {
        let root = root(k);
        if !region(root) || shared.closed.contains(root as usize) {
            continue;
        }
        let mut next = Some(root);
        loop {
            if let Some(v) = next.take() {
                if fair_alone(graph, v, all_groups) {
                    shared.gave_up.store(true, Relaxed);
                    return;
                }
                on_walk.insert(v as usize);
                visited += 1;
                for position in graph.edge_range(v) {
                    graph.prefetch_edges(graph.target(position));
                }
                walk.push((v, 0));
            }
            let Some(&(v, taken)) = walk.last() else {
                break;
            };
            steps = steps.wrapping_add(1);
            if steps & 0xfff == 0 {
                shared.visited.fetch_add(visited, Relaxed);
                visited = 0;
                if shared.gave_up.load(Relaxed) {
                    return;
                }
                if let Some(line) = progress.as_mut() {
                    line.tick(shared.visited.load(Relaxed), walk.len() as u64, walk.len());
                }
            }
            if let Some(w) = edge_at(v, taken) {
                walk.last_mut().expect("the walk is not empty").1 += 1;
                if !region(w) || shared.closed.contains(w as usize) {
                    continue;
                }
                if on_walk.contains(w as usize) {
                    // An edge back to a state on this walk: a cycle.
                    shared.gave_up.store(true, Relaxed);
                    return;
                }
                next = Some(w);
                continue;
            }
            walk.pop();
            // Its mark as on the walk stays: a state is looked up as closed first.
            shared.closed.insert(v as usize);
        }
    }
}

/// The strongly connected components of the region's states reachable from its initial states,
/// by Tarjan's algorithm on one thread: each state's marks (its component in `low`, named by
/// a state of it; `NONE` outside), and which components admit a fair cycle.
pub(crate) fn fair_components(
    graph: &StateGraph,
    region: &impl Fn(u32) -> bool,
    all_groups: u64,
    progress: &mut Option<Ticker>,
) -> (Vec<Mark>, BitSet) {
    let mut tarjan = Tarjan::new(graph, all_groups);
    let mut fair = BitSet::sized(graph.len());
    let outside = |s: u32| !region(s);
    for &root in &graph.inits {
        if tarjan.unvisited(root, &outside) {
            tarjan.walk(
                root,
                &outside,
                &mut |_, component, is_fair| {
                    if is_fair {
                        fair.insert(component as usize);
                    }
                },
                // States visited, and the walk's depth for its queue.
                &mut |tarjan, depth| {
                    if let Some(line) = progress.as_mut() {
                        line.tick(u64::from(tarjan.visited()), depth as u64, depth);
                    }
                    true
                },
            );
        }
    }
    (tarjan.marks, fair)
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
    use crate::threads::in_pool;

    /// The shortest fair lasso violating the graph's property 0 of `form`, with `groups`
    /// fair groups.
    fn violation(graph: &StateGraph, form: Form, groups: usize) -> Option<Lasso> {
        find_violation(graph, 0, form, groups, &mut None)
    }

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

    /// A graph the search marked acyclic (the model's variant grew on every step) is not
    /// walked for a cycle: only a state that may stutter forever makes a lasso. Marked so
    /// wrongly, a fair loop 0 -> 1 -> 0 goes unseen, which is why the search marks a graph
    /// only where the variant held on every step (the engine's tests: a variant that fails).
    #[test]
    fn an_acyclic_graph_is_not_walked_for_a_cycle() {
        let mut graph = StateGraph::from_parts(
            vec![0],
            vec![vec![edge(1)], vec![edge(0), edge(2)], vec![]],
            vec![1, 1, 1],
            vec![vec![false, false, false]],
        );
        let lasso = violation(&graph, Form::Eventually, 1).expect("the fair loop");
        assert_eq!(lasso.cycle.len(), 2);
        graph.acyclic = true;
        assert!(violation(&graph, Form::Eventually, 1).is_none());
        // A state that enables no fair group may stutter forever: found on any graph.
        let mut stuck = chain([false, false, false]);
        stuck.acyclic = true;
        let lasso = violation(&stuck, Form::Eventually, 1).expect("stuttering at 2");
        assert_eq!(lasso.prefix, [0, 1, 2]);
    }

    #[test]
    fn a_behaviour_that_passes_p_and_leaves_it_violates_eventually_always_only() {
        let graph = chain([true, false, false]);
        assert!(violation(&graph, Form::Eventually, 1).is_none());
        let lasso = violation(&graph, Form::EventuallyAlways, 1).expect("it ends stuttering in ¬P");
        assert_eq!(lasso.prefix, [0, 1, 2]);
        assert!(lasso.cycle.is_empty());
    }

    #[test]
    fn eventually_always_holds_when_every_fair_end_satisfies_p() {
        let graph = chain([false, false, true]);
        assert!(violation(&graph, Form::EventuallyAlways, 1).is_none());
        // Without fairness the behaviour may stop at its first state.
        assert_eq!(
            violation(&graph, Form::EventuallyAlways, 0).unwrap().prefix,
            [0]
        );
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
        let lasso = violation(&graph, Form::EventuallyAlways, 1).expect("a fair loop leaves P");
        assert_eq!(lasso.prefix, [0, 1]);
        assert_eq!(lasso.cycle, [1, 0]);
        assert!(violation(&graph, Form::Eventually, 1).is_none());
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
        assert!(violation(&graph, Form::Eventually, 1).is_none());
        // Without P at 4, 4 is a fair end: Tarjan decides, and finds it.
        let graph = diamond(false, false);
        assert!(!acyclic_without_fair_state(&graph, &|_| true, 1, &mut None));
        assert_eq!(
            violation(&graph, Form::Eventually, 1).unwrap().prefix,
            [0, 1, 3, 4]
        );
        // The edge back from 3 closes a loop outside P that takes group 0 everywhere.
        let graph = diamond(true, true);
        let not_p = |s| !graph.holds(0, s);
        assert!(!acyclic_without_fair_state(&graph, &not_p, 1, &mut None));
        let lasso = violation(&graph, Form::Eventually, 1).expect("a fair loop outside P");
        assert_eq!(lasso.prefix, [0]);
        assert_eq!(lasso.cycle, [0, 1, 3]);
    }

    /// Roots 0 to 5, each leading to 6 and 7, which lead to 8 and then 9, by group 0; with
    /// `back`, an edge from 9 to 6 closes a loop; with `fair_end`, 9 enables nothing.
    fn fan_in(back: bool, fair_end: bool) -> StateGraph {
        let mut edges: Vec<Vec<Edge>> = (0..6).map(|_| vec![edge(6), edge(7)]).collect();
        edges.push(vec![edge(8)]);
        edges.push(vec![edge(8)]);
        edges.push(vec![edge(9)]);
        edges.push(if back { vec![edge(6)] } else { vec![] });
        let mut enabled = vec![1; 10];
        if fair_end {
            enabled[9] = 0;
        }
        StateGraph::from_parts((0..6).collect(), edges, enabled, vec![vec![false; 10]])
    }

    #[test]
    fn walks_from_many_roots_agree_on_every_thread_count() {
        for threads in [1, 2, 3] {
            let walk = |graph: &StateGraph| {
                in_pool(threads, || {
                    acyclic_without_fair_state(graph, &|_| true, 1, &mut None)
                })
            };
            // States reached from every root, on other walks' paths or closed by them, are
            // no cycle.
            assert!(walk(&fan_in(false, false)), "{threads} threads");
            assert!(!walk(&fan_in(true, false)), "a loop, {threads} threads");
            assert!(!walk(&fan_in(false, true)), "a fair end, {threads} threads");
        }
    }

    #[test]
    fn a_walk_going_round_the_roots_backwards_takes_every_root_and_edge() {
        // Walk 1 of 2 starts at root 3 and goes down: the loop, reached from every root by
        // each root's last edge (the first a backward walk takes), is found.
        let graph = fan_in(true, false);
        let shared = Walks::new(graph.len());
        walk_for_cycles(&graph, &|_| true, 1, &shared, 1, 2, &mut None);
        assert!(shared.gave_up.load(Relaxed));
        // Without the loop it closes every state, roots below its start included.
        let graph = fan_in(false, false);
        let shared = Walks::new(graph.len());
        walk_for_cycles(&graph, &|_| true, 1, &shared, 1, 2, &mut None);
        assert!(!shared.gave_up.load(Relaxed));
        assert!((0..10).all(|s| shared.closed.contains(s)));
        // A state another walk closed is not walked again: a loop behind it goes unseen.
        let graph = fan_in(true, false);
        let shared = Walks::new(graph.len());
        shared.closed.insert(6);
        shared.closed.insert(7);
        walk_for_cycles(&graph, &|_| true, 1, &shared, 0, 2, &mut None);
        assert!(!shared.gave_up.load(Relaxed));
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
        let lasso = violation(&graph, Form::Eventually, 2).expect("the exit to 2 is fair");
        assert_eq!(lasso.prefix, [0, 2]);
        assert!(lasso.cycle.is_empty());
    }
}
