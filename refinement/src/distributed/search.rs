//! The breadth-first safety search, sharded: each state lives on the worker its key names, and
//! each level is three rounds of messages.
//!
//! The single-process engine visits a level in frontier order and keeps, for each new state, the
//! first parent in that order; its counterexamples follow those parents. To give the same
//! counterexamples, every frontier state here carries its rank (its place in that order), and a
//! successor is put forward with its parent's rank and its own index among the parent's
//! successors. The state's owner keeps the least such pair: the parent the single-process
//! engine keeps. The next level's ranks are those pairs in order, made dense by a sort split
//! over the workers by parent rank.
//!
//! 1. **Expand**: each worker checks its frontier states and sends each successor to its owner.
//! 2. **Place**: owners drop the states already visited, keep the least pair for each new one,
//!    and send the pair to the worker that ranks that part of the order; every worker tells
//!    every other what it found and how many new states each ranking worker will get.
//! 3. **Rank**: each ranking worker sorts its pairs and sends each state its rank, counting on
//!    from the states ranked by the workers before it.

use std::collections::HashMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use timely::worker::Worker;

use super::net::Net;
use crate::budget::{Exhausted, Limit, Limits};
use crate::explore::{successors_into, Finding, SafetyChecks};
use crate::fingerprint::BuildIdentity;
use crate::progress::{Reporting, Ticker};
use crate::spec::Spec;
use crate::visited::Visited;

/// Where a safety search runs out of a budget (as the single-process engine says).
const PHASE: &str = "exploring";

/// A successor's place in the next level's order: its parent's rank, then its index among
/// the parent's successors. The least one a state is reached by names its parent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Order {
    parent_rank: u64,
    successor: u32,
}

/// What a worker found wrong in a level, ordered as the single-process engine chooses among
/// findings: the shortest path first, then the configured property order, then frontier order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Noted {
    path_len: u64,
    property_order: u64,
    rank: u64,
    kind: Kind,
    key: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
enum Kind {
    Invariant(u32),
    Refinement(u32),
    Deadlock,
}

/// A budget one worker found spent (time and memory are each process's own to judge).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
enum Spent {
    Time(u64),
    Memory(u64),
}

/// What each worker tells every other at the end of a level's second round.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Summary {
    worker: u32,
    /// New states this worker will send to each ranking worker, by worker.
    placed: Vec<u64>,
    finding: Option<Noted>,
    /// Per witness, the least-ranked state of this level that satisfies it.
    witnesses: Vec<Option<(u64, u64)>>,
    spent: Option<Spent>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(bound = "S: Serialize + DeserializeOwned")]
pub enum Message<S> {
    /// A successor, to the worker that owns its key.
    Successor {
        key: u64,
        parent: u64,
        order: Order,
        state: S,
    },
    /// A new state's place in the order, to the worker that ranks that part of it.
    Place {
        order: Order,
        key: u64,
    },
    Summary(Summary),
    /// A new state's rank, to its owner.
    Rank {
        key: u64,
        rank: u64,
    },
    /// A state's parent, to every worker, while a path is walked back.
    Parent {
        key: u64,
        parent: u64,
    },
    /// A worker's share of the visited set, at the end, and of the states generated.
    Size {
        states: u64,
        bytes: u64,
        generated: u64,
    },
}

/// The worker that owns (stores, checks and expands) the state with key `key`.
pub fn owner(key: u64, peers: usize) -> usize {
    (key % peers as u64) as usize
}

/// The worker that ranks new states whose parent has rank `rank` in a level of `level_size`:
/// equal slices of the parent ranks, so each ranking worker sorts about as many pairs.
fn ranker(rank: u64, level_size: u64, peers: usize) -> usize {
    ((u128::from(rank) * peers as u128) / u128::from(level_size.max(1))) as usize
}

/// What this worker's part of the search ends with.
pub struct Searched {
    /// This worker's share of the visited set: its keys with their parents.
    pub visited: Visited,
    /// Distinct states over every worker.
    pub distinct_states: u64,
    /// States this worker generated (worker 0 counts the initial states too): summed over the
    /// workers by [`sizes`], TLC's count.
    pub generated: u64,
    pub depth: usize,
    pub finding: Option<Finding>,
    pub witnesses_found: Vec<Option<u64>>,
    pub incomplete: Option<Exhausted>,
}

pub fn search<M>(
    worker: &mut Worker,
    net: &mut Net<Message<M::State>>,
    model: &M,
    checks: &SafetyChecks<'_, M>,
    limits: &Limits,
    progress: Option<&Reporting>,
) -> Searched
where
    M: Spec,
    M::State: Serialize + DeserializeOwned + 'static,
{
    let me = worker.index();
    let peers = net.peers();
    let mut visited = Visited::default();

    // Every worker lists the initial states in the same order and checks them all, so all
    // agree on their ranks and on a refinement an initial state breaks; each keeps its own.
    let mut initial: Vec<(u64, M::State)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let inits = model.init_states();
    // Generated, TLC's count: every initial state, counted once over the workers (by worker 0).
    let inits_generated = if me == 0 { inits.len() as u64 } else { 0 };
    for state in inits {
        let key = checks.keys.key(&state);
        if seen.insert(key) {
            initial.push((key, state));
        }
    }
    let mut finding = initial.iter().find_map(|(key, state)| {
        checks.refinements.iter().find_map(|refinement| {
            refinement
                .check_init(state)
                .err()
                .map(|images| Finding::InitialRefinement {
                    property: refinement.name(),
                    state: *key,
                    images,
                })
        })
    });
    let mut level_size = initial.len() as u64;
    let mut distinct_states = level_size;
    let mut frontier: Vec<(u64, u64, M::State)> = Vec::new();
    for (rank, (key, state)) in initial.into_iter().enumerate() {
        if owner(key, peers) == me {
            visited.insert(key, 0);
            frontier.push((rank as u64, key, state));
        }
    }

    let mut result = Searched {
        visited: Visited::default(),
        distinct_states: 0,
        generated: inits_generated,
        depth: 0,
        finding: None,
        witnesses_found: vec![None; checks.witnesses.len()],
        incomplete: None,
    };
    let mut progress = progress
        .filter(|_| me == 0)
        .map(|reporting| Ticker::new(reporting, format!("{peers} workers")));
    while finding.is_none() && level_size > 0 {
        let depth = result.depth;
        // Round 1: expand this worker's part of the level, in rank order.
        frontier.sort_unstable_by_key(|(rank, _, _)| *rank);
        let mut noted: Option<Noted> = None;
        let mut witnesses: Vec<Option<(u64, u64)>> = vec![None; checks.witnesses.len()];
        let mut note = |n: Noted| {
            if noted.is_none_or(|best| n < best) {
                noted = Some(n);
            }
        };
        let mut actions = Vec::new();
        let mut successors = Vec::new();
        for (rank, key, state) in &frontier {
            let (rank, key) = (*rank, *key);
            for (i, invariant) in checks.invariants.iter().enumerate() {
                if !(invariant.condition)(model, state) {
                    note(Noted {
                        path_len: depth as u64,
                        property_order: i as u64,
                        rank,
                        kind: Kind::Invariant(i as u32),
                        key,
                    });
                }
            }
            for (i, witness) in checks.witnesses.iter().enumerate() {
                if result.witnesses_found[i].is_none()
                    && witnesses[i].is_none()
                    && (witness.condition)(model, state)
                {
                    witnesses[i] = Some((rank, key));
                }
            }
            successors_into(model, state, &mut actions, &mut successors);
            result.generated += successors.len() as u64;
            for (r, refinement) in checks.refinements.iter().enumerate() {
                if !refinement.check_steps(state, &successors).is_empty() {
                    note(Noted {
                        path_len: depth as u64 + 1,
                        property_order: (checks.invariants.len() + r) as u64,
                        rank,
                        kind: Kind::Refinement(r as u32),
                        key,
                    });
                }
            }
            if successors.is_empty() && !checks.allow_end_states {
                note(Noted {
                    path_len: depth as u64,
                    property_order: u64::MAX,
                    rank,
                    kind: Kind::Deadlock,
                    key,
                });
            }
            for (index, next) in successors.drain(..).enumerate() {
                if &next == state {
                    continue;
                }
                let next_key = checks.keys.key(&next);
                let to = owner(next_key, peers);
                if to == me && visited.contains(next_key) {
                    continue;
                }
                let order = Order {
                    parent_rank: rank,
                    successor: index as u32,
                };
                net.send(
                    worker,
                    to,
                    Message::Successor {
                        key: next_key,
                        parent: key,
                        order,
                        state: next,
                    },
                );
            }
        }
        frontier.clear();

        // Round 2: keep the new states, each with its least order, and place them.
        // Keys are fingerprints already: hashing them again would only cost time.
        let mut fresh: HashMap<u64, (Order, u64, M::State), BuildIdentity> = HashMap::default();
        for message in net.round(worker) {
            if let Message::Successor {
                key,
                parent,
                order,
                state,
            } = message
            {
                if visited.contains(key) {
                    continue;
                }
                match fresh.get_mut(&key) {
                    Some(kept) if kept.0 <= order => {}
                    Some(kept) => *kept = (order, parent, state),
                    None => {
                        fresh.insert(key, (order, parent, state));
                    }
                }
            }
        }
        let mut placed = vec![0u64; peers];
        for (&key, (order, parent, _)) in &fresh {
            visited.insert(key, *parent);
            let to = ranker(order.parent_rank, level_size, peers);
            placed[to] += 1;
            net.send(worker, to, Message::Place { order: *order, key });
        }
        let spent = match limits.time_or_memory() {
            Some(Limit::Time(ms)) => Some(Spent::Time(ms)),
            Some(Limit::Memory(bytes)) => Some(Spent::Memory(bytes)),
            _ => None,
        };
        net.broadcast(
            worker,
            Message::Summary(Summary {
                worker: me as u32,
                placed,
                finding: noted,
                witnesses,
                spent,
            }),
        );
        let mut places = Vec::new();
        let mut summaries = Vec::with_capacity(peers);
        for message in net.round(worker) {
            match message {
                Message::Place { order, key } => places.push((order, key)),
                Message::Summary(summary) => summaries.push(summary),
                _ => unreachable!("only places and summaries are sent in the second round"),
            }
        }
        summaries.sort_unstable_by_key(|s| s.worker);
        let placed_with = |ranking: usize| summaries.iter().map(|s| s.placed[ranking]).sum::<u64>();
        let next_size: u64 = (0..peers).map(placed_with).sum();
        distinct_states += next_size;
        for (i, found) in result.witnesses_found.iter_mut().enumerate() {
            if found.is_none() {
                *found = summaries
                    .iter()
                    .filter_map(|s| s.witnesses[i])
                    .min()
                    .map(|(_, key)| key);
            }
        }
        if let Some(best) = summaries.iter().filter_map(|s| s.finding).min() {
            finding = Some(best.finding(checks));
            result.depth = best.path_len as usize;
            break;
        }
        if next_size == 0 {
            break;
        }
        result.depth += 1;
        let over = limits
            .max_states
            .filter(|&max| distinct_states >= max)
            .map(Limit::States)
            .or_else(|| {
                summaries.iter().find_map(|s| {
                    s.spent.map(|spent| match spent {
                        Spent::Time(ms) => Limit::Time(ms),
                        Spent::Memory(bytes) => Limit::Memory(bytes),
                    })
                })
            });
        if let Some(limit) = over {
            result.incomplete = Some(Exhausted {
                limit,
                depth: result.depth,
                phase: PHASE,
            });
            break;
        }

        // Round 3: rank this worker's slice of the order and tell each state its rank.
        places.sort_unstable();
        let first: u64 = (0..me).map(placed_with).sum();
        for (rank, (_, key)) in (first..).zip(places) {
            net.send(worker, owner(key, peers), Message::Rank { key, rank });
        }
        for message in net.round(worker) {
            if let Message::Rank { key, rank } = message {
                let (_, _, state) = fresh
                    .remove(&key)
                    .expect("a rank is sent for a state its owner placed");
                frontier.push((rank, key, state));
            }
        }
        level_size = next_size;

        if let Some(line) = &mut progress {
            line.tick(distinct_states, level_size, result.depth);
        }
    }
    result.visited = visited;
    result.distinct_states = distinct_states;
    result.finding = finding;
    result
}

impl Noted {
    fn finding<M: Spec>(&self, checks: &SafetyChecks<'_, M>) -> Finding {
        match self.kind {
            Kind::Invariant(i) => Finding::Invariant {
                property: checks.invariants[i as usize].name,
                state: self.key,
            },
            Kind::Refinement(r) => Finding::Refinement {
                property: checks.refinements[r as usize].name(),
                from: self.key,
            },
            Kind::Deadlock => Finding::Deadlock { state: self.key },
        }
    }
}

/// Walks each of `ends` back to its initial state along the parent links, which are spread
/// over the workers: a round a step, each link sent by the worker that holds it to all.
/// Returns each path from its initial state, by its end.
pub fn paths<S>(
    worker: &mut Worker,
    net: &mut Net<Message<S>>,
    visited: &Visited,
    ends: &[u64],
) -> HashMap<u64, Vec<u64>>
where
    S: Serialize + DeserializeOwned + Clone + Send + 'static,
{
    let me = worker.index();
    let peers = net.peers();
    let mut walks: Vec<Vec<u64>> = ends.iter().map(|&end| vec![end]).collect();
    loop {
        let mut asked: Vec<u64> = walks
            .iter()
            .filter_map(|walk| walk.last().copied())
            .filter(|&at| at != 0)
            .collect();
        if asked.is_empty() {
            break;
        }
        asked.sort_unstable();
        asked.dedup();
        for &at in asked.iter().filter(|&&at| owner(at, peers) == me) {
            let parent = visited
                .value(at)
                .expect("a state on a path was visited by its owner");
            net.broadcast(worker, Message::Parent { key: at, parent });
        }
        let mut parents: HashMap<u64, u64, BuildIdentity> = HashMap::default();
        for message in net.round(worker) {
            if let Message::Parent { key, parent } = message {
                parents.insert(key, parent);
            }
        }
        for walk in &mut walks {
            let at = *walk.last().expect("a walk starts at its end");
            if at != 0 {
                walk.push(parents[&at]);
            }
        }
    }
    ends.iter()
        .zip(walks)
        .map(|(&end, mut walk)| {
            walk.pop(); // the 0 above an initial state
            walk.reverse();
            (end, walk)
        })
        .collect()
}

/// The visited set's states and bytes, and the states generated, summed over the workers.
pub fn sizes<S>(worker: &mut Worker, net: &mut Net<Message<S>>, searched: &Searched) -> Sizes
where
    S: Serialize + DeserializeOwned + Clone + Send + 'static,
{
    net.broadcast(
        worker,
        Message::Size {
            states: searched.visited.len() as u64,
            bytes: searched.visited.allocation_size() as u64,
            generated: searched.generated,
        },
    );
    net.round(worker)
        .into_iter()
        .fold(Sizes::default(), |sum, message| match message {
            Message::Size {
                states,
                bytes,
                generated,
            } => Sizes {
                states: sum.states + states,
                bytes: sum.bytes + bytes,
                generated: sum.generated + generated,
            },
            _ => sum,
        })
}

/// What [`sizes`] sums.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sizes {
    pub states: u64,
    pub bytes: u64,
    pub generated: u64,
}
