//! The strongly connected components of a liveness region on every core: one Tarjan walk a
//! thread, each from its own place among the initial states, each publishing the components it
//! closes so that the others skip them. (The 835 suite's Kafka MaxOffset=4: 1.42 million
//! states in the region, each walk about half, where walks going round the roots opposite
//! ways, one taking edges in reverse, split them 915,000 and 508,000 and took as long.)
//!
//! Why every state ends in its own component of the graph, whichever walk closes it: a walk
//! treats a published state as closed and ignores the edges into it, and ignoring edges only
//! splits components, so whatever a walk closes lies inside one component of the graph (each
//! state it closes with was reached from the root and leads back to it). Components are
//! published under one lock, each whole or not at all, and the first piece of a component C to
//! be published is C itself: until then no state of C was published, so the walk that closed it
//! ignored no edge between states of C (an ignored edge leads to another component, which does
//! not lead back). A later piece of C finds its states published and is dropped. A walk keeps
//! its closed pieces until it has a few thousand, so the lock is taken that often rather than
//! once a state. When a walk has been round every initial state, every state reachable is in a
//! published component, and the others stop.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

use rayon::prelude::*;

use crate::bits::{BitSet, SharedBits};
use crate::graph::StateGraph;
use crate::progress::Ticker;
use crate::tarjan::{Mark, Tarjan, DONE, NONE};
use crate::threads::one_walk_a_thread;

/// Closed pieces a walk keeps before it publishes them.
const PUBLISH_EVERY: usize = 4096;

/// What the walks share.
struct Published {
    /// States whose component is published: a walk reads it at every edge, so a bit a state,
    /// which stays in the cache where the component words would not.
    states: SharedBits,
    /// Each published state's component: the id of the state its walk closed it at.
    component: Vec<AtomicU32>,
    /// The components that admit a fair cycle, by id; the lock every publication holds.
    fair: Mutex<Vec<u32>>,
    /// Set by the walk that went round every initial state: the others stop.
    finished: AtomicBool,
    /// States visited by every walk, for the progress line.
    visited: AtomicU64,
}

/// Pieces a walk has closed and not yet published: the states of piece i are
/// `states[ends[i - 1]..ends[i]]`, closed at `roots[i]`.
#[derive(Default)]
struct Closed {
    states: Vec<u32>,
    ends: Vec<usize>,
    roots: Vec<(u32, bool)>,
}

impl Published {
    /// Publishes the pieces that no other walk has, whole, and empties `closed`.
    fn publish(&self, closed: &mut Closed) {
        let mut fair = self.fair.lock().expect("no walk panics holding the lock");
        let mut start = 0;
        for (&end, &(root, is_fair)) in closed.ends.iter().zip(&closed.roots) {
            let piece = &closed.states[start..end];
            start = end;
            if piece.iter().any(|&s| self.states.contains(s as usize)) {
                continue;
            }
            for &s in piece {
                self.component[s as usize].store(root, Relaxed);
                self.states.insert_alone(s as usize);
            }
            if is_fair {
                fair.push(root);
            }
        }
        closed.states.clear();
        closed.ends.clear();
        closed.roots.clear();
    }
}

/// As `liveness::fair_components`, on every core: each state's marks (its component in
/// `low`, `NONE` outside the region or unreached), and which components admit a fair cycle.
/// A component is named by the state its walk closed it at, which can differ from run to run;
/// what is read of it, which states share it and whether it is fair, does not.
pub(crate) fn fair_components_shared(
    graph: &StateGraph,
    region: &(impl Fn(u32) -> bool + Sync),
    all_groups: u64,
    progress: &mut Option<Ticker>,
) -> (Vec<Mark>, BitSet) {
    let n = graph.len();
    let published = Published {
        states: SharedBits::sized(n),
        // Written on every core: the 8.5 MB of the 835 suite's Kafka MaxOffset=4 took
        // 2.7-2.9 ms on one while the other waited (1.3-2.4 ms so), where the search on one
        // thread, which shares nothing, has none of it.
        component: (0..n)
            .into_par_iter()
            .map(|_| AtomicU32::new(NONE))
            .collect(),
        fair: Mutex::new(Vec::new()),
        finished: AtomicBool::new(false),
        visited: AtomicU64::new(0),
    };
    let mut marks = one_walk_a_thread(progress, |walker, walkers, progress| {
        walk(
            graph, region, all_groups, &published, walker, walkers, progress,
        )
    });
    marks.par_iter_mut().enumerate().for_each(|(s, mark)| {
        *mark = Mark {
            index: DONE,
            low: published.component[s].load(Relaxed),
        };
    });
    let mut fair = BitSet::sized(n);
    for root in published.fair.into_inner().expect("no walk panicked") {
        fair.insert(root as usize);
    }
    (marks, fair)
}

/// Walk `walker` of `walkers`: Tarjan's algorithm from the initial states, starting at its
/// share's first and going round, skipping published states. Returns its own marks, for the
/// caller to overwrite.
fn walk(
    graph: &StateGraph,
    region: &impl Fn(u32) -> bool,
    all_groups: u64,
    published: &Published,
    walker: usize,
    walkers: usize,
    progress: &mut Option<Ticker>,
) -> Vec<Mark> {
    let roots = &graph.inits;
    let first = walker * roots.len() / walkers;
    let skip = |s: u32| !region(s) || published.states.contains(s as usize);
    let mut tarjan = Tarjan::new(graph, all_groups);
    let mut closed = Closed::default();
    let mut reported = 0u32;
    for k in 0..roots.len() {
        let root = roots[(first + k) % roots.len()];
        if !tarjan.unvisited(root, &skip) {
            continue;
        }
        let finished = tarjan.walk(
            root,
            &skip,
            &mut |members, component, is_fair| {
                closed.states.extend_from_slice(members);
                closed.ends.push(closed.states.len());
                closed.roots.push((component, is_fair));
                if closed.roots.len() >= PUBLISH_EVERY {
                    published.publish(&mut closed);
                }
            },
            // Another walk has been round every root: everything reachable is published.
            &mut |tarjan, depth| {
                let visited = tarjan.visited();
                published
                    .visited
                    .fetch_add(u64::from(visited - reported), Relaxed);
                reported = visited;
                if let Some(line) = progress.as_mut() {
                    let all = published.visited.load(Relaxed);
                    line.tick(all, depth as u64, depth);
                }
                !published.finished.load(Relaxed)
            },
        );
        if !finished {
            return tarjan.marks;
        }
    }
    published.publish(&mut closed);
    published.finished.store(true, Relaxed);
    tarjan.marks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Edge;
    use crate::liveness::fair_components;
    use crate::threads::in_pool;

    /// `states` states, `roots` of them initial, each with up to three edges drawn from `seed`
    /// (some by group 0, some by group 1, some by neither), and two groups each enabled or not.
    fn drawn(states: u32, roots: u32, seed: u64) -> StateGraph {
        let mut x = seed | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let edges = (0..states)
            .map(|_| {
                (0..next() % 4)
                    .map(|_| Edge {
                        to: (next() % u64::from(states)) as u32,
                        group: [Some(0), Some(1), None][(next() % 3) as usize],
                    })
                    .collect()
            })
            .collect();
        let enabled = (0..states).map(|_| next() % 4).collect();
        StateGraph::from_parts(
            (0..roots).collect(),
            edges,
            enabled,
            vec![vec![false; states as usize]],
        )
    }

    /// Each state's component as the least state in it (`NONE` outside), and whether it is fair.
    fn partition(graph: &StateGraph, (marks, fair): (Vec<Mark>, BitSet)) -> Vec<(u32, bool)> {
        let mut least = std::collections::HashMap::new();
        for s in 0..graph.len() as u32 {
            let c = marks[s as usize].low;
            least.entry(c).or_insert(s);
        }
        (0..graph.len())
            .map(|s| {
                let c = marks[s].low;
                match c {
                    NONE => (NONE, false),
                    c => (least[&c], fair.contains(c as usize)),
                }
            })
            .collect()
    }

    #[test]
    fn every_thread_count_finds_tarjans_components_and_their_fairness() {
        // Over the seeds: components of several states, fair and not.
        let (mut larger, mut fair, mut unfair) = (0, 0, 0);
        for seed in 1..60u64 {
            let graph = drawn(400, 1 + (seed % 9) as u32, seed);
            let region = |s: u32| s % 11 != 3;
            let expected = partition(&graph, fair_components(&graph, &region, 0b11, &mut None));
            for (s, &(c, is_fair)) in expected.iter().enumerate() {
                if c != NONE && c != s as u32 {
                    larger += 1;
                }
                if c != NONE {
                    *if is_fair { &mut fair } else { &mut unfair } += 1;
                }
            }
            for threads in [1, 2, 3, 4] {
                let shared = in_pool(threads, || {
                    fair_components_shared(&graph, &region, 0b11, &mut None)
                });
                assert_eq!(
                    partition(&graph, shared),
                    expected,
                    "seed {seed}, {threads} threads"
                );
            }
        }
        assert!(
            larger > 0 && fair > 0 && unfair > 0,
            "{larger} {fair} {unfair}"
        );
    }

    #[test]
    fn a_piece_of_a_published_component_is_dropped_whole() {
        let published = Published {
            states: SharedBits::sized(4),
            component: (0..4).map(|_| AtomicU32::new(NONE)).collect(),
            fair: Mutex::new(Vec::new()),
            finished: AtomicBool::new(false),
            visited: AtomicU64::new(0),
        };
        let mut closed = Closed::default();
        // {1, 2} closed at 2, fair; {3} at 3.
        closed.states.extend([1, 2, 3]);
        closed.ends.extend([2, 3]);
        closed.roots.extend([(2, true), (3, false)]);
        published.publish(&mut closed);
        assert!(closed.roots.is_empty() && closed.states.is_empty());
        // Another walk's pieces: {2} (inside {1, 2}) and {0, 3} (3 is published): both dropped,
        // though fair; {0} alone is new.
        closed.states.extend([2, 0, 3, 0]);
        closed.ends.extend([1, 3, 4]);
        closed.roots.extend([(2, true), (0, true), (0, false)]);
        published.publish(&mut closed);
        let component: Vec<u32> = published
            .component
            .iter()
            .map(|c| c.load(Relaxed))
            .collect();
        assert_eq!(component, [0, 2, 2, 3]);
        assert_eq!(*published.fair.lock().unwrap(), [2]);
        assert!((0..4).all(|s| published.states.contains(s)));
    }
}
