//! The explicit state graph, kept only for liveness, in a few bytes per state.
//!
//! States themselves are not kept: the graph holds each state's fingerprint (to rebuild a
//! counterexample by replay), its state-changing successors as ids in one flat array, the fair
//! groups it enables and, per temporal property, whether the property's condition holds there.
//! Those are all the lasso search reads. The states live only in the frontier of the level
//! being built.

use rayon::prelude::*;

use crate::bits::{BitSet, PackedBits};
use crate::budget::{ChunkStop, Exhausted, Limit, Limits};
use crate::fingerprint::fingerprint;
use crate::spec::Spec;

/// A successor's fair group, or none (`NO_GROUP`).
const NO_GROUP: u8 = u8::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    pub to: u32,
    pub group: Option<u8>,
}

pub struct StateGraph {
    /// Each state's fingerprint, by id. Ids follow breadth-first discovery.
    pub fps: Vec<u64>,
    pub inits: Vec<u32>,
    /// Successors that change the state (stutter self-loops are implicit everywhere): those of
    /// state `i` are `targets[offsets[i]..offsets[i + 1]]`, with their groups alongside.
    offsets: Vec<u32>,
    targets: Vec<u32>,
    groups: Vec<u8>,
    /// Bit g of state i: fair group g has a state-changing step there (TLA+'s ENABLED
    /// <<A>>_vars).
    enabled: PackedBits,
    /// Per temporal property, in the order given to `build`: the states where it holds.
    holds: Vec<BitSet>,
}

impl StateGraph {
    pub fn len(&self) -> usize {
        self.fps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fps.is_empty()
    }

    pub fn edges(&self, state: u32) -> impl Iterator<Item = Edge> + '_ {
        let range = self.edge_range(state);
        self.targets[range.clone()]
            .iter()
            .zip(&self.groups[range])
            .map(|(&to, &group)| Edge {
                to,
                group: (group != NO_GROUP).then_some(group),
            })
    }

    /// The positions of `state`'s successors in the flat edge arrays.
    pub fn edge_range(&self, state: u32) -> std::ops::Range<usize> {
        self.offsets[state as usize] as usize..self.offsets[state as usize + 1] as usize
    }

    /// The target of the edge at a position `edge_range` gave.
    pub fn target(&self, position: usize) -> u32 {
        self.targets[position]
    }

    pub fn enabled(&self, state: u32) -> u64 {
        self.enabled.get(state as usize)
    }

    /// Whether temporal property `property` (its position in `build`'s list) holds at `state`.
    pub fn holds(&self, property: usize, state: u32) -> bool {
        self.holds[property].contains(state as usize)
    }

    /// Bytes held by the graph's arrays.
    pub fn allocation_size(&self) -> usize {
        self.fps.capacity() * 8
            + self.inits.capacity() * 4
            + self.offsets.capacity() * 4
            + self.targets.capacity() * 4
            + self.groups.capacity()
            + self.enabled.allocation_size()
            + self
                .holds
                .iter()
                .map(BitSet::allocation_size)
                .sum::<usize>()
    }

    /// A graph given edge by edge, for tests of the lasso search.
    #[cfg(test)]
    pub fn from_parts(
        inits: Vec<u32>,
        edges: Vec<Vec<Edge>>,
        enabled: Vec<u64>,
        holds: Vec<Vec<bool>>,
    ) -> StateGraph {
        let n = edges.len();
        let mut graph = StateGraph::empty(64, holds.len());
        graph.inits = inits;
        for (i, successors) in edges.into_iter().enumerate() {
            graph.fps.push(i as u64 + 1);
            graph.enabled.push(enabled[i]);
            for e in successors {
                graph.targets.push(e.to);
                graph.groups.push(e.group.unwrap_or(NO_GROUP));
            }
            graph.offsets.push(graph.targets.len() as u32);
        }
        for (p, column) in holds.into_iter().enumerate() {
            for holds in column.into_iter().take(n) {
                graph.holds[p].push(holds);
            }
        }
        graph
    }

    fn empty(groups: usize, properties: usize) -> StateGraph {
        StateGraph {
            fps: Vec::new(),
            inits: Vec::new(),
            offsets: vec![0],
            targets: Vec::new(),
            groups: Vec::new(),
            enabled: PackedBits::new(groups),
            holds: (0..properties).map(|_| BitSet::default()).collect(),
        }
    }
}

/// A temporal property's condition on a state, as the build evaluates it.
pub type Condition<'a, S> = Box<dyn Fn(&S) -> bool + Sync + 'a>;

/// Where the graph's build runs out of a budget.
const PHASE: &str = "building the liveness graph";

/// States expanded per parallel task.
const CHUNK: usize = 512;

/// A successor of a state being expanded: its fingerprint, its fair group, and whether it was
/// new to the graph at expansion time (its state is then carried, in `Expanded::carried`).
struct Successor {
    fp: u64,
    group: u8,
    carried: bool,
}

/// A chunk of states expanded, flat: each state's state-changing successors (in the order the
/// model gives them) end at `ends[i]`; the states among
/// them that were new are carried in that order; and per state, the fair groups it enables
/// and which temporal properties hold at it. The new states are kept apart so an edge to a
/// known state costs a few bytes, not a state's size, and nothing is allocated per state.
struct Expanded<S> {
    successors: Vec<Successor>,
    ends: Vec<usize>,
    carried: Vec<S>,
    enabled: Vec<u64>,
    holds: Vec<u64>,
}

/// States expanded between merges into the graph: enough to keep every core busy, few enough
/// that the expansions waiting to be merged stay small beside the graph. States a batch adds
/// are known to the next, which then does not carry them.
const BATCH: usize = 64 * CHUNK;

/// Builds the graph level by level: each batch of a level is expanded on every core against
/// the read-only index, then its new states are numbered in frontier order, so ids are the
/// same on every run. `conditions` are the temporal properties' conditions, evaluated once per
/// state (at most 64).
pub fn build<M: Spec>(
    model: &M,
    conditions: &[Condition<'_, M::State>],
    limits: &Limits,
    progress: Option<&str>,
) -> Result<StateGraph, Exhausted> {
    // The graph phase has its own progress line: the safety search's has ended by now.
    let mut progress =
        progress.map(|config| crate::progress::Progress::phase(config, "liveness graph"));
    assert!(conditions.len() <= 64, "at most 64 temporal properties");
    let groups = model.fairness_groups().len();
    let mut graph = StateGraph::empty(groups, conditions.len());
    let mut index = IdIndex::default();
    // The level being expanded: each state's id (in increasing order) with the state.
    let mut frontier: Vec<(u32, M::State)> = Vec::new();
    for state in model.init_states() {
        let fp = fingerprint(&state);
        if index.get(fp, &graph.fps).is_none() {
            let id = graph.fps.len() as u32;
            graph.fps.push(fp);
            index.insert(id, &graph.fps);
            graph.inits.push(id);
            frontier.push((id, state));
        }
    }
    let mut depth = 0;
    while !frontier.is_empty() {
        let mut next = Vec::new();
        for (batch_index, batch) in frontier.chunks(BATCH).enumerate() {
            let expanded = expand_batch(model, conditions, batch, &index, &graph.fps, limits)
                .map_err(|limit| Exhausted {
                    limit,
                    depth,
                    phase: PHASE,
                })?;
            let mut ids = batch.iter().map(|(id, _)| *id);
            for chunk in expanded {
                merge(&mut graph, &mut index, &mut ids, chunk, &mut next, depth)?;
            }
            if let Some(line) = &mut progress {
                let left = frontier.len().saturating_sub((batch_index + 1) * BATCH);
                line.tick(graph.fps.len() as u64, (left + next.len()) as u64, depth);
            }
        }
        frontier = next;
        depth += 1;
        if !frontier.is_empty() {
            limits.check(graph.fps.len() as u64, depth, PHASE)?;
        }
    }
    // The arrays grew by doubling; what the search reads is what they hold.
    graph.fps.shrink_to_fit();
    graph.offsets.shrink_to_fit();
    graph.targets.shrink_to_fit();
    graph.groups.shrink_to_fit();
    Ok(graph)
}

/// Expands a batch on every core, or says which budget the first chunk to look found spent.
fn expand_batch<M: Spec>(
    model: &M,
    conditions: &[Condition<'_, M::State>],
    batch: &[(u32, M::State)],
    known: &IdIndex,
    fps: &[u64],
    limits: &Limits,
) -> Result<Vec<Expanded<M::State>>, Limit> {
    let stop = ChunkStop::default();
    let expanded = batch
        .par_chunks(CHUNK)
        .map(|chunk| {
            let mut out = Expanded {
                successors: Vec::new(),
                ends: Vec::with_capacity(chunk.len()),
                carried: Vec::new(),
                enabled: Vec::with_capacity(chunk.len()),
                holds: Vec::with_capacity(chunk.len()),
            };
            if !stop.skip(limits) {
                let mut actions = Vec::new();
                for (_, state) in chunk {
                    expand(model, conditions, state, known, fps, &mut actions, &mut out);
                }
            }
            out
        })
        .collect();
    match stop.spent() {
        Some(limit) => Err(limit),
        None => Ok(expanded),
    }
}

/// Adds a chunk's expansions to the graph, in frontier order: the states' edges, numbering
/// each new successor and queueing it for the next level (the level being expanded is `depth`).
fn merge<S>(
    graph: &mut StateGraph,
    index: &mut IdIndex,
    ids: &mut impl Iterator<Item = u32>,
    chunk: Expanded<S>,
    next: &mut Vec<(u32, S)>,
    depth: usize,
) -> Result<(), Exhausted> {
    let mut carried = chunk.carried.into_iter();
    let mut successors = chunk.successors.into_iter();
    let mut start = 0;
    for (i, end) in chunk.ends.into_iter().enumerate() {
        let id = ids.next().expect("one expansion per frontier state");
        debug_assert_eq!(id as usize + 1, graph.offsets.len());
        graph.enabled.push(chunk.enabled[i]);
        for (p, column) in graph.holds.iter_mut().enumerate() {
            column.push(chunk.holds[i] & (1 << p) != 0);
        }
        for successor in successors.by_ref().take(end - start) {
            // Taken in step with the successors, so each carried state meets its own edge.
            let state = successor.carried.then(|| carried.next()).flatten();
            let to = match index.get(successor.fp, &graph.fps) {
                Some(to) => to,
                None => {
                    let to = u32::try_from(graph.fps.len())
                        .ok()
                        .filter(|&to| to < u32::MAX - 1)
                        .ok_or_else(|| Exhausted::representation("2^32 states", depth, PHASE))?;
                    // Unknown when the batch was expanded, so the expansion carried it.
                    let state = state.expect("a successor unknown to the index is carried");
                    graph.fps.push(successor.fp);
                    index.insert(to, &graph.fps);
                    next.push((to, state));
                    to
                }
            };
            graph.targets.push(to);
            graph.groups.push(successor.group);
        }
        start = end;
        let end = u32::try_from(graph.targets.len())
            .map_err(|_| Exhausted::representation("2^32 transitions", depth, PHASE))?;
        graph.offsets.push(end);
    }
    Ok(())
}

/// Expands one state into `out`.
fn expand<M: Spec>(
    model: &M,
    conditions: &[Condition<'_, M::State>],
    state: &M::State,
    known: &IdIndex,
    fps: &[u64],
    actions: &mut Vec<M::Action>,
    out: &mut Expanded<M::State>,
) {
    let mut enabled = 0u64;
    actions.clear();
    model.actions(state, actions);
    for action in actions.drain(..) {
        let group = model.fairness_group(&action).map_or(NO_GROUP, |g| g as u8);
        let Some(next) = model.next_state(state, action) else {
            continue;
        };
        if &next == state {
            continue;
        }
        if group != NO_GROUP {
            enabled |= 1 << group;
        }
        let fp = fingerprint(&next);
        let is_new = known.get(fp, fps).is_none();
        if is_new {
            out.carried.push(next);
        }
        out.successors.push(Successor {
            fp,
            group,
            carried: is_new,
        });
    }
    out.ends.push(out.successors.len());
    out.enabled.push(enabled);
    out.holds.push(
        conditions
            .iter()
            .enumerate()
            .filter(|(_, holds)| holds(state))
            .fold(0u64, |bits, (p, _)| bits | 1 << p),
    );
}

/// Fingerprint → id, as an open-addressing table of ids that compares through the graph's own
/// fingerprint array: 4 bytes a slot, at most three quarters full, so 5 to 8 bytes a state
/// where a general map of `(u64, u32)` pairs would take 16 to 32.
struct IdIndex {
    slots: Vec<u32>,
    len: usize,
}

const EMPTY: u32 = u32::MAX;

impl Default for IdIndex {
    fn default() -> Self {
        IdIndex {
            slots: vec![EMPTY; 1024],
            len: 0,
        }
    }
}

impl IdIndex {
    fn home(&self, fp: u64) -> usize {
        ((fp as u128 * self.slots.len() as u128) >> 64) as usize
    }

    fn get(&self, fp: u64, fps: &[u64]) -> Option<u32> {
        let mut i = self.home(fp);
        loop {
            match self.slots[i] {
                EMPTY => return None,
                id if fps[id as usize] == fp => return Some(id),
                _ => i = (i + 1) % self.slots.len(),
            }
        }
    }

    /// Adds `id`, whose fingerprint is `fps[id]` and not yet in the table.
    fn insert(&mut self, id: u32, fps: &[u64]) {
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.grow(fps);
        }
        self.place(id, fps);
        self.len += 1;
    }

    fn place(&mut self, id: u32, fps: &[u64]) {
        let mut i = self.home(fps[id as usize]);
        while self.slots[i] != EMPTY {
            i = (i + 1) % self.slots.len();
        }
        self.slots[i] = id;
    }

    fn grow(&mut self, fps: &[u64]) {
        let bigger = vec![EMPTY; self.slots.len() * 3 / 2 + 1];
        let old = std::mem::replace(&mut self.slots, bigger);
        for id in old.into_iter().filter(|&id| id != EMPTY) {
            self.place(id, fps);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_finds_every_id_after_growing() {
        let fps: Vec<u64> = (1..=50_000u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
            .collect();
        let mut index = IdIndex::default();
        for id in 0..fps.len() as u32 {
            assert_eq!(index.get(fps[id as usize], &fps[..id as usize]), None);
            index.insert(id, &fps);
        }
        for (id, &fp) in fps.iter().enumerate() {
            assert_eq!(index.get(fp, &fps), Some(id as u32));
        }
        assert_eq!(index.get(2, &fps), None);
        let per_state = index.slots.len() as f64 * 4.0 / fps.len() as f64;
        assert!(per_state <= 8.0, "{per_state} bytes per state");
    }
}
