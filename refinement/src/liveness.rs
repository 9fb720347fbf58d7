//! `<>P` and `<>[]P` under weak fairness, with TLA+'s semantics.
//!
//! A violation of `<>P` is a fair lasso on which P never holds; of `<>[]P`, a fair lasso whose
//! loop passes a ¬P state. Every state may stutter, so a single state is a lasso of its own; it
//! is fair only where every weakly-fair group is disabled. A larger strongly connected
//! component admits a fair cycle iff, for each group, the group is disabled at some state of it
//! or takes some step inside it: one cycle can then visit all of those places (and start at the
//! ¬P state the loop must pass).

use std::collections::VecDeque;

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
    // A behaviour that never reaches P stays in ¬P states from its first state on.
    let bad: Vec<bool> = graph.states.iter().map(|s| !holds(s)).collect();
    fair_lasso(graph, &bad, |_| true, groups)
}

/// `<>[]P` under weak fairness: a violation is a fair lasso whose loop passes a ¬P state, so P
/// is left infinitely often (its prefix may pass through P). An initial P does not help.
pub fn find_unstable<S>(
    graph: &StateGraph<S>,
    holds: impl Fn(&S) -> bool,
    groups: usize,
) -> Option<Lasso> {
    let anywhere = vec![true; graph.states.len()];
    fair_lasso(
        graph,
        &anywhere,
        |s| !holds(&graph.states[s as usize]),
        groups,
    )
}

/// The fair lasso that stays inside `region` and whose loop starts at a state `entry_ok`
/// accepts, with the shortest prefix: none if no such lasso exists.
fn fair_lasso<S>(
    graph: &StateGraph<S>,
    region: &[bool],
    entry_ok: impl Fn(u32) -> bool,
    groups: usize,
) -> Option<Lasso> {
    let n = graph.states.len();
    let all_groups: u64 = if groups == 0 { 0 } else { (1u64 << groups) - 1 };

    // Region states reachable through the region, with shortest-path parents for the prefix.
    let mut depth = vec![u32::MAX; n];
    let mut parent = vec![u32::MAX; n];
    let mut queue = VecDeque::new();
    for &i in &graph.inits {
        if region[i as usize] && depth[i as usize] == u32::MAX {
            depth[i as usize] = 0;
            queue.push_back(i);
        }
    }
    let mut order = Vec::new();
    while let Some(i) = queue.pop_front() {
        order.push(i);
        for e in &graph.edges[i as usize] {
            let t = e.to as usize;
            if region[t] && depth[t] == u32::MAX {
                depth[t] = depth[i as usize] + 1;
                parent[t] = i;
                queue.push_back(e.to);
            }
        }
    }
    if order.is_empty() {
        return None;
    }

    let reached: Vec<bool> = depth.iter().map(|&d| d != u32::MAX).collect();
    let (component, components) = components(graph, &reached, &order);

    let mut best: Option<(u32, u32, usize)> = None;
    for (c, members) in components.iter().enumerate() {
        // A loop through the component can pass every state and take every step inside it, so
        // it is fair iff each group is disabled at one of its states or takes a step inside.
        let mut met = 0u64;
        for &s in members {
            met |= !graph.enabled[s as usize] & all_groups;
            for e in &graph.edges[s as usize] {
                if component[e.to as usize] == c as u32 {
                    if let Some(g) = e.group {
                        met |= 1 << g;
                    }
                }
            }
        }
        if met & all_groups != all_groups {
            continue;
        }
        let Some(entry) = members
            .iter()
            .copied()
            .filter(|&s| entry_ok(s))
            .min_by_key(|&s| (depth[s as usize], s))
        else {
            continue;
        };
        let key = (depth[entry as usize], entry);
        if best.as_ref().is_none_or(|(d, e, _)| key < (*d, *e)) {
            best = Some((key.0, entry, c));
        }
    }
    let (_, entry, c) = best?;
    let members = &components[c];

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
        fair_cycle(graph, entry, members, groups, |s| {
            component[s as usize] == c as u32
        })
    };
    Some(Lasso { prefix, cycle })
}

/// The strongly connected components of the states `within` marks, by Tarjan's algorithm
/// with an explicit stack (a deep graph would overflow the call stack), walking the graph's
/// own successor lists rather than a copy: each state's component (`u32::MAX` outside), and
/// each component's members.
fn components<S>(
    graph: &StateGraph<S>,
    within: &[bool],
    roots: &[u32],
) -> (Vec<u32>, Vec<Vec<u32>>) {
    let mut t = Tarjan::new(within.len());
    for &root in roots {
        if !within[root as usize] || t.index[root as usize] != NONE {
            continue;
        }
        t.visit(root);
        while let Some(top) = t.walk.len().checked_sub(1) {
            let (v, position) = t.walk[top];
            let successors = &graph.edges[v as usize];
            if let Some(edge) = successors.get(position) {
                t.walk[top].1 += 1;
                let w = edge.to as usize;
                if !within[w] {
                    continue;
                }
                if t.index[w] == NONE {
                    t.visit(edge.to);
                } else if t.on_stack[w] {
                    t.low[v as usize] = t.low[v as usize].min(t.index[w]);
                }
                continue;
            }
            t.walk.pop();
            if let Some(&(u, _)) = t.walk.last() {
                t.low[u as usize] = t.low[u as usize].min(t.low[v as usize]);
            }
            if t.low[v as usize] == t.index[v as usize] {
                t.close(v);
            }
        }
    }
    (t.component, t.components)
}

const NONE: u32 = u32::MAX;

/// Tarjan's bookkeeping, per state: its visit order, its low link, whether it is on the stack.
struct Tarjan {
    index: Vec<u32>,
    low: Vec<u32>,
    on_stack: Vec<bool>,
    component: Vec<u32>,
    components: Vec<Vec<u32>>,
    stack: Vec<u32>,
    /// The depth-first walk: each state with the position of its next successor to visit.
    walk: Vec<(u32, usize)>,
    next_index: u32,
}

impl Tarjan {
    fn new(n: usize) -> Tarjan {
        Tarjan {
            index: vec![NONE; n],
            low: vec![0; n],
            on_stack: vec![false; n],
            component: vec![NONE; n],
            components: Vec::new(),
            stack: Vec::new(),
            walk: Vec::new(),
            next_index: 0,
        }
    }

    fn visit(&mut self, v: u32) {
        self.index[v as usize] = self.next_index;
        self.low[v as usize] = self.next_index;
        self.next_index += 1;
        self.stack.push(v);
        self.on_stack[v as usize] = true;
        self.walk.push((v, 0));
    }

    /// `v` is its component's root: the states above it on the stack are the component.
    fn close(&mut self, v: u32) {
        let c = self.components.len() as u32;
        let mut members = Vec::new();
        loop {
            let w = self
                .stack
                .pop()
                .expect("a component's states are on the stack");
            self.on_stack[w as usize] = false;
            self.component[w as usize] = c;
            members.push(w);
            if w == v {
                break;
            }
        }
        // In state order (breadth-first discovery), so the loop chosen is the same whatever
        // order the walk met the states in.
        members.sort_unstable();
        self.components.push(members);
    }
}

/// A closed walk from `entry` inside the component that, for every fair group, passes a state
/// where the group is disabled or takes one of its steps.
fn fair_cycle<S>(
    graph: &StateGraph<S>,
    entry: u32,
    members: &[u32],
    groups: usize,
    inside: impl Fn(u32) -> bool,
) -> Vec<u32> {
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
        let to = graph.edges[entry as usize]
            .iter()
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
fn extend<S>(
    graph: &StateGraph<S>,
    inside: &impl Fn(u32) -> bool,
    walk: &mut Vec<u32>,
    at: &mut u32,
    target: u32,
) {
    if *at == target {
        return;
    }
    let mut parent = vec![u32::MAX; graph.states.len()];
    let mut queue = VecDeque::from([*at]);
    parent[*at as usize] = *at;
    while let Some(i) = queue.pop_front() {
        if i == target {
            break;
        }
        for e in &graph.edges[i as usize] {
            if inside(e.to) && parent[e.to as usize] == u32::MAX {
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

    /// 0 -> 1 -> 2 by group 0; the second step is fair, the last state enables nothing.
    fn chain(p: [bool; 3]) -> StateGraph<bool> {
        StateGraph {
            states: p.to_vec(),
            inits: vec![0],
            edges: vec![
                vec![Edge {
                    to: 1,
                    group: Some(0),
                }],
                vec![Edge {
                    to: 2,
                    group: Some(0),
                }],
                vec![],
            ],
            enabled: vec![1, 1, 0],
        }
    }

    #[test]
    fn a_behaviour_that_passes_p_and_leaves_it_violates_eventually_always_only() {
        let graph = chain([true, false, false]);
        assert!(find_unfulfilled(&graph, |&p| p, 1).is_none());
        let lasso = find_unstable(&graph, |&p| p, 1).expect("it ends stuttering in ¬P");
        assert_eq!(lasso.prefix, [0, 1, 2]);
        assert!(lasso.cycle.is_empty());
    }

    #[test]
    fn eventually_always_holds_when_every_fair_end_satisfies_p() {
        let graph = chain([false, false, true]);
        assert!(find_unstable(&graph, |&p| p, 1).is_none());
        // Without fairness the behaviour may stop at its first state.
        assert_eq!(find_unstable(&graph, |&p| p, 0).unwrap().prefix, [0]);
    }

    #[test]
    fn a_fair_loop_through_a_not_p_state_violates_eventually_always() {
        // 0 -> 1 -> 0, both by group 0: the loop takes the group, and 1 is ¬P.
        let graph = StateGraph {
            states: vec![true, false],
            inits: vec![0],
            edges: vec![
                vec![Edge {
                    to: 1,
                    group: Some(0),
                }],
                vec![Edge {
                    to: 0,
                    group: Some(0),
                }],
            ],
            enabled: vec![1, 1],
        };
        let lasso = find_unstable(&graph, |&p| p, 1).expect("a fair loop leaves P");
        assert_eq!(lasso.prefix, [0, 1]);
        assert_eq!(lasso.cycle, [1, 0]);
        assert!(find_unfulfilled(&graph, |&p| p, 1).is_none());
    }
}
