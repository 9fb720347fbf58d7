//! Breadth-first exploration for safety: invariants, witnesses, refinement steps and deadlocks;
//! and, when temporal properties are to be judged, the liveness graph in the same pass.
//!
//! Each level is expanded a batch at a time, on every core, against the visited set as it stood
//! before the batch. The batch's new states are then claimed in the set from every core at once,
//! the first in frontier order keeping each state whichever core comes first (`Visited::claim`):
//! parent links, graph ids and so every counterexample are the same on every run and thread
//! count, and level-by-level search makes them shortest. What is left to one core per batch is
//! appending the chunks' results in order.

use rayon::prelude::*;
use stateright::Property;

use crate::budget::{ChunkStop, Exhausted, Limits};
use crate::graph::{holding, Condition, GraphPart, StateGraph, NO_GROUP};
use crate::image::AbstractStep;
use crate::progress::Progress;
use crate::refinement::Refinement;
use crate::spec::Spec;
use crate::symmetry::Keys;
use crate::visited::Visited;

/// States expanded per parallel task at most: large enough to amortise scheduling.
const CHUNK: usize = 1024;

/// States expanded per parallel task at least, on a level too narrow to give every core a
/// few tasks of `CHUNK` states.
const MIN_CHUNK: usize = 128;

/// The states each parallel task of a batch of `states` expands: `CHUNK`, or fewer on a narrow
/// level, so that each core has about four tasks to take.
fn chunk_size(states: usize) -> usize {
    states
        .div_ceil(4 * rayon::current_num_threads())
        .clamp(MIN_CHUNK, CHUNK)
}

/// States expanded between claims in the visited set (see `explore`).
const BATCH: usize = 32 * CHUNK;

/// How many lookups ahead a pass over the visited set prefetches the slot it will read.
const AHEAD: usize = 8;

pub struct SafetyChecks<'a, M: Spec> {
    pub invariants: Vec<Property<M>>,
    pub witnesses: Vec<Property<M>>,
    pub refinements: Vec<&'a dyn Refinement<M::State>>,
    pub allow_end_states: bool,
    /// How states are keyed in the visited set (by orbit under a symmetry).
    pub keys: Keys<'a, M>,
}

/// Where a safety search runs out of a budget.
const PHASE: &str = "exploring";

/// What was found wrong, and where. `rank` orders findings of the same depth: lower first.
#[derive(Clone, Debug)]
pub enum Finding {
    Invariant {
        property: &'static str,
        state: u64,
    },
    /// An initial state the refinement maps to no initial state of the abstract spec.
    InitialRefinement {
        property: &'static str,
        state: u64,
        images: AbstractStep,
    },
    /// A step out of `from` that maps to no abstract step (nor a stutter). The step itself is
    /// found again when the counterexample is explained, from the replayed state.
    Refinement {
        property: &'static str,
        from: u64,
    },
    Deadlock {
        state: u64,
    },
}

impl Finding {
    pub fn property(&self) -> &'static str {
        match self {
            Finding::Invariant { property, .. }
            | Finding::InitialRefinement { property, .. }
            | Finding::Refinement { property, .. } => property,
            Finding::Deadlock { .. } => "deadlock",
        }
    }

    /// Transitions on the shortest path that shows it.
    pub(crate) fn path_len(&self, depth: usize) -> usize {
        match self {
            Finding::Refinement { .. } => depth + 1,
            _ => depth,
        }
    }
}

pub struct Exploration {
    /// Every state reached, by key, with its parent's key; in a search that built the graph,
    /// with its id and its parent's (`ids`).
    pub visited: Visited,
    /// Levels explored; with a finding, the transitions on its counterexample.
    pub depth: usize,
    /// States generated, TLC's count: the initial states and every successor computed, those
    /// already seen (and stutters) included.
    pub generated: u64,
    pub finding: Option<Finding>,
    /// For each witness, the first state found to satisfy it (at the shallowest depth).
    pub witnesses_found: Vec<Option<u64>>,
    pub incomplete: Option<Exhausted>,
    /// The liveness graph, when the search was given temporal conditions: complete once the
    /// search is (no finding, nothing spent).
    pub graph: Option<StateGraph>,
}

/// An initial state's parent id in a search that builds the graph.
const NO_PARENT: u32 = u32::MAX;

/// A state's value in the visited set of a search that builds the graph: its id and its
/// parent's, whose fingerprint the graph keeps.
fn ids(id: u32, parent: u32) -> u64 {
    (parent as u64) << 32 | id as u64
}

fn id_of(value: u64) -> u32 {
    value as u32
}

fn parent_of(value: u64) -> u32 {
    (value >> 32) as u32
}

impl Exploration {
    pub fn visited_bytes(&self) -> usize {
        self.visited.allocation_size()
    }

    /// Fingerprints from an initial state to `fp`, following parent links.
    pub fn path_to(&self, fp: u64) -> Vec<u64> {
        let mut path = vec![fp];
        let mut at = fp;
        while let Some(value) = self.visited.value(at) {
            let parent = match &self.graph {
                None => value,
                Some(graph) => match parent_of(value) {
                    NO_PARENT => 0,
                    parent => graph.fps[parent as usize],
                },
            };
            if parent == 0 {
                break;
            }
            path.push(parent);
            at = parent;
        }
        path.reverse();
        path
    }
}

/// A successor unknown to the visited set when its chunk was expanded, with its parent: the
/// parent's key, or in a search building the graph the parent's id.
struct Candidate<S> {
    fp: u64,
    parent: u64,
    state: S,
}

/// A chunk expanded, then carried through the batch's claims.
struct Expanded<S> {
    candidates: Vec<Candidate<S>>,
    /// Per candidate, the slot its claim reached.
    slots: Vec<usize>,
    /// The candidates that kept their key, in order: the next level's states from this chunk.
    arrived: Vec<(u64, S)>,
    /// In a search building the graph: the arrived states' slots and parent ids, given their
    /// own ids once every chunk's count is known.
    won: Vec<(usize, u32)>,
    /// In a search building the graph, per candidate: its place in `won` if it kept its key,
    /// else `LOST`. An edge to a winner of its own chunk learns its target's id from it
    /// rather than from the visited set, a cache miss fewer.
    winner: Vec<u32>,
    generated: u64,
    findings: Vec<(usize, usize, Finding)>,
    witnesses: Vec<Option<u64>>,
    graph: Option<GraphPart>,
    /// Edges to candidates, as (position in `graph.targets`, candidate): their targets are
    /// known once the candidates' winners have ids.
    pending: Vec<(usize, usize)>,
}

impl<S> Expanded<S> {
    fn empty(witnesses: usize, graph: bool) -> Self {
        Expanded {
            candidates: Vec::new(),
            slots: Vec::new(),
            arrived: Vec::new(),
            won: Vec::new(),
            winner: Vec::new(),
            generated: 0,
            findings: Vec::new(),
            witnesses: vec![None; witnesses],
            graph: graph.then(GraphPart::default),
            pending: Vec::new(),
        }
    }

    /// Empties it for the next chunk, keeping what its vectors hold room for.
    fn reset(&mut self, witnesses: usize, graph: bool) {
        self.candidates.clear();
        self.slots.clear();
        self.arrived.clear();
        self.won.clear();
        self.winner.clear();
        self.generated = 0;
        self.findings.clear();
        self.witnesses.clear();
        self.witnesses.resize(witnesses, None);
        match (&mut self.graph, graph) {
            (Some(part), true) => part.clear(),
            (slot, graph) => *slot = graph.then(GraphPart::default),
        }
        self.pending.clear();
    }
}

/// What every chunk of a level is expanded against.
struct Level<'a, M: Spec> {
    model: &'a M,
    checks: &'a SafetyChecks<'a, M>,
    visited: &'a Visited,
    /// Witnesses found at earlier levels.
    found: &'a [Option<u64>],
    /// The temporal properties' conditions, in a search building the graph.
    conditions: Option<&'a [Condition<'a, M::State>]>,
    /// In a search building the graph, the id of the level's first state: the frontier is the
    /// last ids given out, in order.
    first_id: usize,
}

/// Explores `model` breadth first, making `checks` at every state; with `conditions` (the
/// temporal properties'), builds the liveness graph in the same pass.
pub fn explore<'a, M: Spec>(
    model: &'a M,
    checks: &'a SafetyChecks<'a, M>,
    limits: &Limits,
    progress: Option<&str>,
    conditions: Option<&'a [Condition<'a, M::State>]>,
) -> Exploration {
    let mut visited = Visited::default();
    let mut graph = conditions.map(|c| StateGraph::new(model.fairness_groups().len(), c.len()));
    let mut frontier: Vec<(u64, M::State)> = Vec::new();
    let mut init_findings = Vec::new();
    let inits = model.init_states();
    let generated = inits.len() as u64;
    for state in inits {
        let fp = checks.keys.key(&state);
        if visited.contains(fp) {
            continue;
        }
        let value = match &mut graph {
            None => 0,
            Some(graph) => {
                let id = graph.add_state(fp).expect("fewer than 2^32 initial states");
                graph.inits.push(id);
                ids(id, NO_PARENT)
            }
        };
        visited.insert(fp, value);
        for refinement in &checks.refinements {
            if let Err(images) = refinement.check_init(&state) {
                init_findings.push(Finding::InitialRefinement {
                    property: refinement.name(),
                    state: fp,
                    images,
                });
            }
        }
        frontier.push((fp, state));
    }
    let mut result = Exploration {
        visited,
        depth: 0,
        generated,
        finding: init_findings.into_iter().next(),
        witnesses_found: vec![None; checks.witnesses.len()],
        incomplete: None,
        graph,
    };
    let phase = match conditions {
        None => "safety",
        Some(_) => "safety and liveness graph",
    };
    let mut progress = progress.map(|config| Progress::phase(config, phase));
    // Every batch's chunks are expanded into these, and the next level into `next`, emptied
    // and filled again: a batch's vectors are allocated on one core and emptied on another,
    // and freeing them each time made the cores wait on the allocator's locks.
    let mut pool: Vec<Expanded<M::State>> = Vec::new();
    let mut next: Vec<(u64, M::State)> = Vec::new();
    let witnesses = checks.witnesses.len();
    while result.finding.is_none() && !frontier.is_empty() {
        let depth = result.depth;
        let first_id = result
            .graph
            .as_ref()
            .map_or(0, |g| g.len() - frontier.len());
        let mut findings = Vec::new();
        // A level is expanded a batch at a time, each batch's new states claimed before the
        // next batch looks: the expansions waiting to be claimed stay small, and the first
        // parent in frontier order is still the one kept.
        for (batch_index, batch) in frontier.chunks(BATCH).enumerate() {
            let stop = ChunkStop::default();
            let level = Level {
                model,
                checks,
                visited: &result.visited,
                found: &result.witnesses_found,
                conditions,
                first_id,
            };
            let chunk_len = chunk_size(batch.len());
            let chunks = batch.len().div_ceil(chunk_len);
            if pool.len() < chunks {
                pool.resize_with(chunks, || Expanded::empty(witnesses, conditions.is_some()));
            }
            let expanded = &mut pool[..chunks];
            expanded
                .par_iter_mut()
                .zip(batch.par_chunks(chunk_len))
                .enumerate()
                .for_each(|(chunk_index, (out, chunk))| {
                    out.reset(witnesses, conditions.is_some());
                    if !stop.skip(limits) {
                        let first = batch_index * BATCH + chunk_index * chunk_len;
                        level.expand_chunk(chunk, first, out);
                    }
                });
            let arriving: usize = expanded.iter().map(|e| e.candidates.len()).sum();
            let spent = stop
                .spent()
                .or_else(|| limits.would_pass_memory(result.visited.growth_bytes(arriving)));
            if let Some(limit) = spent {
                result.incomplete = Some(Exhausted {
                    limit,
                    depth,
                    phase: PHASE,
                });
                return result;
            }
            result.visited.reserve(arriving);
            claim(&result.visited, expanded, result.graph.is_none());
            if let Some(graph) = &result.graph {
                let won: usize = expanded.iter().map(|e| e.won.len()).sum();
                if graph.len() + won >= (u32::MAX - 1) as usize {
                    result.incomplete =
                        Some(Exhausted::representation("2^32 states", depth, PHASE));
                    return result;
                }
                number(&result.visited, expanded, graph.len());
            }
            for chunk in expanded.iter_mut() {
                result.generated += chunk.generated;
                for (i, found) in chunk.witnesses.iter().enumerate() {
                    if result.witnesses_found[i].is_none() {
                        result.witnesses_found[i] = *found;
                    }
                }
                findings.append(&mut chunk.findings);
                result.visited.add_settled(chunk.arrived.len());
                if let Some(graph) = &mut result.graph {
                    for (fp, _) in &chunk.arrived {
                        graph.add_state(*fp).expect("ids counted before");
                    }
                    let part = chunk.graph.as_ref().expect("a graph part from every chunk");
                    if let Err(what) = graph.append(part) {
                        result.incomplete = Some(Exhausted::representation(what, depth, PHASE));
                        return result;
                    }
                }
                next.append(&mut chunk.arrived);
            }
            // After each batch, not each level: a wide level takes long.
            if let Some(line) = &mut progress {
                // Not yet expanded: the rest of this level, and the next level found so far.
                let left = frontier.len().saturating_sub((batch_index + 1) * BATCH);
                line.tick(
                    result.visited.len() as u64,
                    (left + next.len()) as u64,
                    depth,
                );
            }
        }
        // Shortest path first, then the configured property order, then frontier order.
        result.finding = findings
            .into_iter()
            .min_by_key(|(order, position, f)| (f.path_len(depth), *order, *position))
            .map(|(_, _, f)| f);
        if let Some(finding) = &result.finding {
            // The reported depth is that of the counterexample: one more than the level for
            // a refinement step out of it.
            result.depth = finding.path_len(depth);
        }
        if result.finding.is_none() && !next.is_empty() {
            result.depth += 1;
        }
        std::mem::swap(&mut frontier, &mut next);
        next.clear();

        let states = result.visited.len() as u64;
        if result.finding.is_none() && !frontier.is_empty() {
            if let Err(spent) = limits.check(states, result.depth, PHASE) {
                result.incomplete = Some(spent);
                return result;
            }
        }
    }
    if let Some(graph) = &mut result.graph {
        graph.shrink_to_fit();
    }
    result
}

/// Claims every chunk's candidates in the visited set, from every core, each claim numbered
/// by its place in the batch (chunk order, then candidate order: frontier order); then keeps,
/// in each chunk, the candidates whose claim kept its key, settling their parent keys at once
/// (`settle`), or in a search building the graph leaving that to `number`.
fn claim<S: Send>(visited: &Visited, expanded: &mut [Expanded<S>], settle: bool) {
    let firsts = starts(expanded.iter().map(|e| e.candidates.len()));
    expanded
        .par_iter_mut()
        .zip(&firsts)
        .for_each(|(chunk, &first)| {
            let candidates = &chunk.candidates;
            chunk.slots.clear();
            chunk.slots.extend((0..candidates.len()).map(|k| {
                if let Some(ahead) = candidates.get(k + AHEAD) {
                    visited.prefetch(ahead.fp);
                }
                visited.claim(candidates[k].fp, (first + k) as u64)
            }));
        });
    // Every claim is in: the least of each key's is final.
    expanded
        .par_iter_mut()
        .zip(&firsts)
        .for_each(|(chunk, &first)| {
            for (k, candidate) in chunk.candidates.drain(..).enumerate() {
                if let Some(&ahead) = chunk.slots.get(k + AHEAD) {
                    visited.prefetch_slot(ahead);
                }
                let slot = chunk.slots[k];
                if visited.value_at(slot) != (first + k) as u64 {
                    if !settle {
                        chunk.winner.push(LOST);
                    }
                    continue;
                }
                if settle {
                    visited.settle(slot, candidate.parent);
                } else {
                    chunk.winner.push(chunk.won.len() as u32);
                    chunk.won.push((slot, candidate.parent as u32));
                }
                chunk.arrived.push((candidate.fp, candidate.state));
            }
        });
}

/// Gives the batch's new states their ids, from `first_id` on in frontier order, and the
/// edges to them their targets.
fn number<S: Send>(visited: &Visited, expanded: &mut [Expanded<S>], first_id: usize) {
    let firsts = starts(expanded.iter().map(|e| e.won.len()));
    expanded
        .par_iter_mut()
        .zip(&firsts)
        .for_each(|(chunk, &first)| {
            for (w, &(slot, parent)) in chunk.won.iter().enumerate() {
                if let Some(&(ahead, _)) = chunk.won.get(w + AHEAD) {
                    visited.prefetch_slot(ahead);
                }
                visited.settle(slot, ids((first_id + first + w) as u32, parent));
            }
        });
    // Every new state has its id: the edges to them can be resolved.
    expanded
        .par_iter_mut()
        .zip(&firsts)
        .for_each(|(chunk, &first)| {
            let part = chunk.graph.as_mut().expect("a graph part from every chunk");
            for (j, &(position, candidate)) in chunk.pending.iter().enumerate() {
                if let Some(&(_, ahead)) = chunk.pending.get(j + AHEAD) {
                    if chunk.winner[ahead] == LOST {
                        visited.prefetch_slot(chunk.slots[ahead]);
                    }
                }
                part.targets[position] = match chunk.winner[candidate] {
                    LOST => id_of(visited.value_at(chunk.slots[candidate])),
                    w => (first_id + first + w as usize) as u32,
                };
            }
        });
}

/// A candidate that did not keep its key (`Expanded::winner`).
const LOST: u32 = u32::MAX;

/// Where each of a run of consecutive ranges of these lengths starts.
fn starts(lengths: impl Iterator<Item = usize>) -> Vec<usize> {
    lengths
        .scan(0, |next, len| {
            let start = *next;
            *next += len;
            Some(start)
        })
        .collect()
}

/// Fills `successors` with the states `state`'s actions reach, in the model's action order
/// (stutters included); `actions` is scratch space kept between calls.
pub(crate) fn successors_into<M: Spec>(
    model: &M,
    state: &M::State,
    actions: &mut Vec<M::Action>,
    successors: &mut Vec<M::State>,
) {
    successors.clear();
    append_successors(model, state, actions, successors);
}

/// Appends the states `state`'s actions reach to `successors`, in the model's action order
/// (stutters included); `actions` is scratch space kept between calls.
fn append_successors<M: Spec>(
    model: &M,
    state: &M::State,
    actions: &mut Vec<M::Action>,
    successors: &mut Vec<M::State>,
) {
    actions.clear();
    model.actions(state, actions);
    successors.extend(actions.drain(..).filter_map(|a| model.next_state(state, a)));
}

/// As `append_successors`, with each successor's fair group (`NO_GROUP` for none) appended
/// to `groups`.
fn append_grouped_successors<M: Spec>(
    model: &M,
    state: &M::State,
    actions: &mut Vec<M::Action>,
    successors: &mut Vec<M::State>,
    groups: &mut Vec<u8>,
) {
    actions.clear();
    model.actions(state, actions);
    for action in actions.drain(..) {
        let group = model.fairness_group(&action).map_or(NO_GROUP, |g| g as u8);
        if let Some(next) = model.next_state(state, action) {
            successors.push(next);
            groups.push(group);
        }
    }
}

/// States of a chunk whose successors are computed, and their slots prefetched, before the
/// first of their lookups: enough misses in flight to overlap, few enough to stay in cache.
const BLOCK: usize = 64;

/// A block's successors, flat: state i's are `states[ends[i - 1]..ends[i]]`, with their fair
/// groups (in a search building the graph) and keys (0 for a stutter) alongside.
struct BlockSuccessors<S> {
    states: Vec<S>,
    groups: Vec<u8>,
    keys: Vec<u64>,
    ends: Vec<usize>,
}

impl<S> Default for BlockSuccessors<S> {
    fn default() -> Self {
        BlockSuccessors {
            states: Vec::new(),
            groups: Vec::new(),
            keys: Vec::new(),
            ends: Vec::new(),
        }
    }
}

impl<M: Spec> Level<'_, M> {
    /// Expands `chunk` into `out` (emptied before).
    fn expand_chunk(
        &self,
        chunk: &[(u64, M::State)],
        first_position: usize,
        out: &mut Expanded<M::State>,
    ) {
        out.candidates.reserve(chunk.len() * 2);
        let mut actions = Vec::new();
        let mut block = BlockSuccessors::default();
        for (b, states) in chunk.chunks(BLOCK).enumerate() {
            let first = first_position + b * BLOCK;
            block.ends.clear();
            for (offset, (fp, state)) in states.iter().enumerate() {
                self.check_state(*fp, state, first + offset, &mut actions, &mut block, out);
            }
            self.record_successors(states, first, &mut block, out);
        }
    }

    /// Checks one state and computes its successors into `block`, with their keys, asking
    /// for their slots ahead of the lookups.
    fn check_state(
        &self,
        fp: u64,
        state: &M::State,
        position: usize,
        actions: &mut Vec<M::Action>,
        block: &mut BlockSuccessors<M::State>,
        out: &mut Expanded<M::State>,
    ) {
        let checks = self.checks;
        let model = self.model;
        for (order, invariant) in checks.invariants.iter().enumerate() {
            if !(invariant.condition)(model, state) {
                out.findings.push((
                    order,
                    position,
                    Finding::Invariant {
                        property: invariant.name,
                        state: fp,
                    },
                ));
            }
        }
        for (i, witness) in checks.witnesses.iter().enumerate() {
            // A witness found at an earlier level is the shallowest; it is not looked for
            // again.
            if self.found[i].is_none()
                && out.witnesses[i].is_none()
                && (witness.condition)(model, state)
            {
                out.witnesses[i] = Some(fp);
            }
        }
        let start = block.states.len();
        match self.conditions {
            None => append_successors(model, state, actions, &mut block.states),
            Some(_) => append_grouped_successors(
                model,
                state,
                actions,
                &mut block.states,
                &mut block.groups,
            ),
        }
        let successors = &block.states[start..];
        out.generated += successors.len() as u64;
        let refinement_order = checks.invariants.len();
        for (r, refinement) in checks.refinements.iter().enumerate() {
            if !refinement.check_steps(state, successors).is_empty() {
                out.findings.push((
                    refinement_order + r,
                    position,
                    Finding::Refinement {
                        property: refinement.name(),
                        from: fp,
                    },
                ));
            }
        }
        if successors.is_empty() && !checks.allow_end_states {
            out.findings
                .push((usize::MAX, position, Finding::Deadlock { state: fp }));
        }
        block.keys.extend(successors.iter().map(|next| {
            if next == state {
                return 0;
            }
            let key = checks.keys.key(next);
            self.visited.prefetch(key);
            key
        }));
        block.ends.push(block.states.len());
    }

    /// Looks up a block's successors, keeping those the visited set does not know as
    /// candidates and, in a search building the graph, recording each state's edges.
    fn record_successors(
        &self,
        states: &[(u64, M::State)],
        first_position: usize,
        block: &mut BlockSuccessors<M::State>,
        out: &mut Expanded<M::State>,
    ) {
        let mut successors = block.states.drain(..);
        let mut start = 0;
        for (offset, ((fp, state), &end)) in states.iter().zip(&block.ends).enumerate() {
            let parent = match self.conditions {
                None => *fp,
                Some(_) => (self.first_id + first_position + offset) as u64,
            };
            let mut enabled = 0u64;
            for i in start..end {
                let next = successors.next().expect("one state per key");
                let next_fp = block.keys[i];
                if next_fp == 0 {
                    continue;
                }
                let known = self.visited.find(next_fp);
                if let Some(part) = &mut out.graph {
                    let group = block.groups[i];
                    if group != NO_GROUP {
                        enabled |= 1 << group;
                    }
                    match known {
                        Ok(slot) => part.targets.push(id_of(self.visited.value_at(slot))),
                        Err(_) => {
                            out.pending.push((part.targets.len(), out.candidates.len()));
                            // Resolved by `number` once the candidate's winner has an id.
                            part.targets.push(u32::MAX);
                        }
                    }
                    part.groups.push(group);
                }
                if known.is_err() {
                    out.candidates.push(Candidate {
                        fp: next_fp,
                        parent,
                        state: next,
                    });
                }
            }
            start = end;
            if let (Some(part), Some(conditions)) = (&mut out.graph, self.conditions) {
                part.end_state(enabled, holding(conditions, state));
            }
        }
        drop(successors);
        block.groups.clear();
        block.keys.clear();
    }
}
