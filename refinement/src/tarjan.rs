//! Tarjan's algorithm over the liveness graph, with an explicit stack (a deep graph would
//! overflow the call stack), judging each component fair as it closes. One walker serves the
//! search on one thread (`liveness::fair_components`) and each thread of the search on several
//! (`components`): what differs is which states a walk does not enter and what it does with a
//! component it closes.

use crate::graph::StateGraph;

/// What the walk keeps of a state, side by side: it reads and writes both at once, and a
/// graph of millions of states reaches them at random, a cache miss each.
#[derive(Clone, Copy)]
pub(crate) struct Mark {
    /// Visit order while on the stack, `DONE` once closed; `NONE` before the visit.
    pub(crate) index: u32,
    /// The low link while on the stack, the component once closed (`NONE` outside the region).
    pub(crate) low: u32,
}

/// No state: unvisited, outside the region, or the root of a breadth-first search.
pub(crate) const NONE: u32 = u32::MAX;
/// A state whose component has closed (the visit order is then no longer needed).
pub(crate) const DONE: u32 = u32::MAX - 1;

/// Steps of a walk between two calls of its `tick`.
const TICK_EVERY: u32 = 0x1000;

/// Tarjan's marks for every state of a graph, and the walk's stacks, kept from one root's walk
/// to the next.
pub(crate) struct Tarjan<'g> {
    graph: &'g StateGraph,
    all_groups: u64,
    pub(crate) marks: Vec<Mark>,
    stack: Vec<u32>,
    /// The depth-first path: each state with the position of its next edge to follow.
    path: Vec<(u32, u32)>,
    next_index: u32,
    steps: u32,
}

impl<'g> Tarjan<'g> {
    pub(crate) fn new(graph: &'g StateGraph, all_groups: u64) -> Tarjan<'g> {
        let unvisited = Mark {
            index: NONE,
            low: NONE,
        };
        Tarjan {
            graph,
            all_groups,
            marks: crate::huge_pages::filled(graph.len(), unvisited),
            stack: Vec::new(),
            path: Vec::new(),
            next_index: 0,
            steps: 0,
        }
    }

    /// States visited so far.
    pub(crate) fn visited(&self) -> u32 {
        self.next_index
    }

    /// Whether `root` is still to be walked from: not visited, and not one `skip` names.
    pub(crate) fn unvisited(&self, root: u32, skip: &impl Fn(u32) -> bool) -> bool {
        self.marks[root as usize].index == NONE && !skip(root)
    }

    /// Walks from `root`, entering no state `skip` names. Each component closes with its
    /// members' marks `DONE` and their low link the id of the state it closed at, and is handed
    /// to `close` with that id and whether it admits a fair cycle. `tick` is called with the
    /// path's depth every few thousand steps; when it says stop, the walk returns false,
    /// unfinished.
    pub(crate) fn walk(
        &mut self,
        root: u32,
        skip: &impl Fn(u32) -> bool,
        close: &mut impl FnMut(&[u32], u32, bool),
        tick: &mut impl FnMut(&Self, usize) -> bool,
    ) -> bool {
        self.visit(root);
        while let Some(&(v, position)) = self.path.last() {
            self.steps = self.steps.wrapping_add(1);
            if self.steps.is_multiple_of(TICK_EVERY) && !tick(self, self.path.len()) {
                return false;
            }
            if (position as usize) < self.graph.edge_range(v).end {
                self.path.last_mut().expect("the path is not empty").1 += 1;
                let w = self.graph.target(position as usize);
                if skip(w) {
                    continue;
                }
                match self.marks[w as usize].index {
                    NONE => self.visit(w),
                    DONE => {}
                    on_stack => {
                        let low = &mut self.marks[v as usize].low;
                        *low = (*low).min(on_stack);
                    }
                }
                continue;
            }
            self.path.pop();
            let low = self.marks[v as usize].low;
            if let Some(&(u, _)) = self.path.last() {
                let parent = &mut self.marks[u as usize].low;
                *parent = (*parent).min(low);
            }
            if low == self.marks[v as usize].index {
                self.close_at(v, close);
            }
        }
        true
    }

    fn visit(&mut self, v: u32) {
        let i = self.next_index;
        self.marks[v as usize] = Mark { index: i, low: i };
        self.next_index += 1;
        self.stack.push(v);
        let edges = self.graph.edge_range(v);
        // The walk reads each successor's marks next, and its edges if it goes there: asked
        // for together, their cache misses overlap.
        for position in edges.clone() {
            let w = self.graph.target(position);
            crate::prefetch::prefetch(&self.marks[w as usize]);
            self.graph.prefetch_edges(w);
        }
        self.path.push((v, edges.start as u32));
    }

    /// `v` is its component's root: the states above it on the stack are the rest.
    fn close_at(&mut self, v: u32, close: &mut impl FnMut(&[u32], u32, bool)) {
        let from = self
            .stack
            .iter()
            .rposition(|&s| s == v)
            .expect("a component's root is on the stack");
        let members = &self.stack[from..];
        for &s in members {
            self.marks[s as usize] = Mark {
                index: DONE,
                low: v,
            };
        }
        // A loop through the component can pass every state and take every step inside it, so
        // it is fair iff each group is disabled at one of its states or takes a step inside.
        let mut met = 0u64;
        for &s in members {
            met |= !self.graph.enabled(s) & self.all_groups;
            for e in self.graph.edges(s) {
                let to = self.marks[e.to as usize];
                if to.index == DONE && to.low == v {
                    if let Some(g) = e.group {
                        met |= 1 << g;
                    }
                }
            }
        }
        close(members, v, met & self.all_groups == self.all_groups);
        self.stack.truncate(from);
    }
}
