//! Breadth-first exploration for safety: invariants, witnesses, refinement steps and deadlocks;
//! and, when temporal properties are to be judged, the liveness graph in the same pass.
//!
//! Each level is expanded a batch at a time, on every core, against the visited set as it stood
//! before the batch. The batch's new states are then claimed in the set from every core at once,
//! the first in frontier order keeping each state whichever core comes first (`Visited::claim`):
//! parent links, graph ids and so every counterexample are the same on every run and thread
//! count, and level-by-level search makes them shortest. The chunks' results are appended in
//! order, each chunk into its own stretch of the vectors, on every core (`extend_in_parts`);
//! only the graph's packed bits are appended on one.

use crate::model::Property;
use rayon::prelude::*;

use crate::budget::{ChunkStop, Exhausted, Limits};
use crate::extend::{extend_in_parts, starts};
use crate::graph::{holding, Condition, GraphPart, StateGraph, NO_GROUP};
use crate::image::AbstractStep;
use crate::progress::{Reporting, Ticker};
use crate::refinement::Refinement;
use crate::spec::Spec;
use crate::symmetry::Keys;
use crate::visited::{Lookup, Visited};

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

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

/// Whether a search building the liveness graph keeps each state's edges, or only its states
/// (their fingerprints, fair groups enabled and properties holding): enough where the model's
/// variant settles every temporal property (`liveness::settled_by_variant`), for the bytes and
/// the time of some five bytes an edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edges {
    Kept,
    Dropped,
}

pub struct SafetyChecks<'a, M: Spec> {
    pub invariants: Vec<Property<M>>,
    pub witnesses: Vec<Property<M>>,
    pub refinements: Vec<&'a dyn Refinement<M::State>>,
    pub allow_end_states: bool,
    /// How states are keyed in the visited set (by orbit under a symmetry).
    pub keys: Keys<'a, M>,
}

impl<'a, M: Spec> SafetyChecks<'a, M> {
    /// No checks at all, end states allowed, plain keys: a search that only explores (and,
    /// given temporal conditions, builds the graph).
    pub fn none(model: &'a M) -> Self {
        SafetyChecks {
            invariants: Vec::new(),
            witnesses: Vec::new(),
            refinements: Vec::new(),
            allow_end_states: true,
            keys: Keys::plain(model),
        }
    }
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
    /// Distinct states reached: the visited set's keys, or under keys that count orbits
    /// (`Keys::counting`) the states of every orbit reached.
    pub distinct: u64,
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
/// parent's key, or in a search building the graph the parent's id; and its claim on its key.
struct Candidate<S> {
    fp: u64,
    parent: u64,
    claim: u64,
    state: S,
}

/// Bits of a claim that number a successor among its state's: the rest is the state's place
/// in the level, so that claims follow frontier order.
const SUCCESSOR_BITS: u32 = 24;

/// The claim of the `index`th successor of the state at `position` in its level.
fn claim_of(position: usize, index: usize) -> u64 {
    (position as u64) << SUCCESSOR_BITS | index as u64
}

/// A chunk expanded, then carried through the batch's claims.
struct Expanded<S> {
    candidates: Vec<Candidate<S>>,
    /// Per candidate, the slot its claim reached: claimed while looking up, or else in
    /// `claim` (`unclaimed`).
    slots: Vec<usize>,
    /// Some of the candidates were not claimed while looking up: the batch ran out of room.
    unclaimed: bool,
    /// A state had more successors than a claim can number (`SUCCESSOR_BITS`).
    too_many: bool,
    /// In a search building the graph: a step of the chunk did not increase the model's
    /// variant, or the model has none (`Spec::variant`).
    variant_broken: bool,
    /// The candidates that kept their key, in order: the next level's states from this chunk.
    arrived: Vec<(u64, S)>,
    /// In a search building the graph: the arrived states' slots and parent ids, given their
    /// own ids once every chunk's count is known.
    won: Vec<(usize, u32)>,
    /// In a chunk with edges to resolve (`pending`), per candidate: its place in `won` if it
    /// kept its key, else `LOST`. An edge to a winner of its own chunk learns its target's id
    /// from it rather than from the visited set, a cache miss fewer.
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
            unclaimed: false,
            too_many: false,
            variant_broken: false,
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
        self.unclaimed = false;
        self.too_many = false;
        self.variant_broken = false;
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
    /// Whether the graph keeps each state's edges.
    edges: Edges,
    /// In a search building the graph, the id of the level's first state: the frontier is the
    /// last ids given out, in order.
    first_id: usize,
    /// New keys the batch may still claim while looking up (`Visited::room`), taken a block
    /// at a time.
    room: &'a AtomicUsize,
}

/// Explores `model` breadth first, making `checks` at every state; with `conditions` (the
/// temporal properties'), builds the liveness graph in the same pass, with its `edges` or not.
pub fn explore<'a, M: Spec>(
    model: &'a M,
    checks: &'a SafetyChecks<'a, M>,
    limits: &Limits,
    progress: Option<&Reporting>,
    conditions: Option<&'a [Condition<'a, M::State>]>,
    edges: Edges,
) -> Exploration {
    explore_claiming(
        model,
        checks,
        limits,
        progress,
        conditions,
        edges,
        usize::MAX,
    )
}

/// As `explore`, with at most `most_claimed` keys of a batch claimed while looking up: its
/// tests run the claims left to `claim` with it.
fn explore_claiming<'a, M: Spec>(
    model: &'a M,
    checks: &'a SafetyChecks<'a, M>,
    limits: &Limits,
    progress: Option<&Reporting>,
    conditions: Option<&'a [Condition<'a, M::State>]>,
    edges: Edges,
    most_claimed: usize,
) -> Exploration {
    let mut visited = Visited::default();
    let mut graph = conditions.map(|c| StateGraph::new(model.fairness_groups().len(), c.len()));
    if let Some(graph) = &mut graph {
        // Until a step is found that does not increase the model's variant.
        graph.acyclic = true;
        graph.edges_kept = edges == Edges::Kept;
    }
    let mut frontier: Vec<(u64, M::State)> = Vec::new();
    let mut init_findings = Vec::new();
    let inits = model.init_states();
    let generated = inits.len() as u64;
    let mut distinct = 0;
    for state in inits {
        let fp = checks.keys.key(&state);
        if visited.contains(fp) {
            continue;
        }
        distinct += checks.keys.states_of(&state);
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
        distinct,
        depth: 0,
        generated,
        finding: init_findings.into_iter().next(),
        witnesses_found: vec![None; checks.witnesses.len()],
        incomplete: None,
        graph,
    };
    let phase = match (conditions, edges) {
        (None, _) => "safety",
        (Some(_), Edges::Kept) => "safety and liveness graph",
        (Some(_), Edges::Dropped) => "safety and liveness states",
    };
    let mut progress = progress.map(|reporting| Ticker::new(reporting, phase));
    // Every batch's chunks are expanded into these, and the next level into `next`, emptied
    // and filled again: a batch's vectors are allocated on one core and emptied on another,
    // and freeing them each time made the cores wait on the allocator's locks.
    let mut pool: Vec<Expanded<M::State>> = Vec::new();
    let mut next: Vec<(u64, M::State)> = Vec::new();
    let witnesses = checks.witnesses.len();
    let room = AtomicUsize::new(0);
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
            // The lookups claim new keys while the table has room for them; the batch that
            // would fill it leaves the rest to `claim`, once it has grown as far as the
            // batch's new keys need (the table's size does not rest on a guess).
            room.store(result.visited.room().min(most_claimed), Relaxed);
            let level = Level {
                model,
                checks,
                visited: &result.visited,
                found: &result.witnesses_found,
                conditions,
                edges,
                first_id,
                room: &room,
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
            let unclaimed = expanded.iter().any(|e| e.unclaimed);
            let spent = stop.spent().or_else(|| {
                unclaimed
                    .then(|| limits.would_pass_memory(result.visited.growth_bytes(arriving)))
                    .flatten()
            });
            if let Some(limit) = spent {
                result.incomplete = Some(Exhausted {
                    limit,
                    depth,
                    phase: PHASE,
                });
                return result;
            }
            if expanded.iter().any(|e| e.too_many) {
                result.incomplete = Some(Exhausted::representation(
                    "2^24 successors of one state",
                    depth,
                    PHASE,
                ));
                return result;
            }
            if unclaimed {
                // Growing moves the claims made so far: every candidate claims again (the
                // same claim twice is one), and learns its slot anew.
                result.visited.reserve(arriving);
                claim(&result.visited, expanded);
            }
            keep_winners(&result.visited, expanded, result.graph.is_none());
            result.distinct += arrived_states(&checks.keys, expanded);
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
                if let (Some(graph), true) = (&mut result.graph, chunk.variant_broken) {
                    graph.acyclic = false;
                }
                result.generated += chunk.generated;
                for (i, found) in chunk.witnesses.iter().enumerate() {
                    if result.witnesses_found[i].is_none() {
                        result.witnesses_found[i] = *found;
                    }
                }
                findings.append(&mut chunk.findings);
                result.visited.add_settled(chunk.arrived.len());
            }
            if let Some(graph) = &mut result.graph {
                let chunks: Vec<_> = expanded
                    .iter()
                    .map(|chunk| {
                        let part = chunk.graph.as_ref().expect("a graph part from every chunk");
                        (&chunk.arrived[..], part)
                    })
                    .collect();
                if let Err(what) = graph.append_chunks(&chunks) {
                    result.incomplete = Some(Exhausted::representation(what, depth, PHASE));
                    return result;
                }
            }
            let arrived = expanded.iter_mut().map(|chunk| {
                let states = &mut chunk.arrived;
                (states.len(), states.drain(..))
            });
            extend_in_parts(&mut next, arrived.collect());
            // After each batch, not each level: a wide level takes long.
            if let Some(line) = &mut progress {
                // Not yet expanded: the rest of this level, and the next level found so far.
                let left = frontier.len().saturating_sub((batch_index + 1) * BATCH);
                line.tick(result.distinct, (left + next.len()) as u64, depth);
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

        if result.finding.is_none() && !frontier.is_empty() {
            if let Err(spent) = limits.check(result.distinct, result.depth, PHASE) {
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

/// Claims every chunk's candidates in the visited set, from every core, and records the slots
/// their claims reached: for a batch whose lookups could not claim them all.
fn claim<S: Send>(visited: &Visited, expanded: &mut [Expanded<S>]) {
    expanded.par_iter_mut().for_each(|chunk| {
        let candidates = &chunk.candidates;
        chunk.slots.clear();
        chunk.slots.extend((0..candidates.len()).map(|k| {
            if let Some(ahead) = candidates.get(k + AHEAD) {
                visited.prefetch(ahead.fp);
            }
            visited.claim(candidates[k].fp, candidates[k].claim)
        }));
    });
}

/// Once every claim of the batch is in (the least of each key's is then final), keeps in each
/// chunk the candidates whose claim kept its key, settling their parent keys at once
/// (`settle`), or in a search building the graph leaving that to `number`.
fn keep_winners<S: Send>(visited: &Visited, expanded: &mut [Expanded<S>], settle: bool) {
    expanded.par_iter_mut().for_each(|chunk| {
        // Only an edge still to be resolved reads its candidate's winner.
        let winners = !chunk.pending.is_empty();
        for (k, candidate) in chunk.candidates.drain(..).enumerate() {
            if let Some(&ahead) = chunk.slots.get(k + AHEAD) {
                visited.prefetch_slot(ahead);
            }
            let slot = chunk.slots[k];
            if visited.value_at(slot) != candidate.claim {
                if winners {
                    chunk.winner.push(LOST);
                }
                continue;
            }
            if settle {
                visited.settle(slot, candidate.parent);
            } else {
                if winners {
                    chunk.winner.push(chunk.won.len() as u32);
                }
                chunk.won.push((slot, candidate.parent as u32));
            }
            chunk.arrived.push((candidate.fp, candidate.state));
        }
    });
}

/// The states a batch's new keys stand for: one a key, or each orbit's states under keys that
/// count them (computed on every core: a factorial a state for a model that cannot count
/// them itself).
fn arrived_states<M: Spec>(keys: &Keys<'_, M>, expanded: &[Expanded<M::State>]) -> u64 {
    if !keys.counts_orbits() {
        return expanded.iter().map(|e| e.arrived.len() as u64).sum();
    }
    expanded
        .par_iter()
        .map(|e| {
            e.arrived
                .iter()
                .map(|(_, s)| keys.states_of(s))
                .sum::<u64>()
        })
        .sum()
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

/// Fills `successors` with the states `state`'s actions reach, in the model's action order
/// (stutters included); `actions` is scratch space kept between calls.
#[cfg(feature = "distributed")]
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

/// Whether every step from `state` to `successors` that changes it (its key not 0, the mark
/// of a stutter) increases the model's variant (`Spec::variant`); false for a model that
/// declares none.
fn increases_variant<M: Spec>(
    model: &M,
    state: &M::State,
    successors: &[M::State],
    keys: &[u64],
) -> bool {
    let Some(before) = model.variant(state) else {
        return false;
    };
    successors
        .iter()
        .zip(keys)
        .filter(|(_, &key)| key != 0)
        .all(|(next, _)| model.variant(next).is_some_and(|after| after > before))
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
        // Every state of the orbit has as many successors (`Keys::counting`).
        out.generated += checks.keys.states_of(state) * successors.len() as u64;
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
        if self.conditions.is_some() && !out.variant_broken {
            let keys = &block.keys[start..];
            out.variant_broken = !increases_variant(model, state, successors, keys);
        }
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
        // The block's lookups claim the keys they find new if the batch has room for every
        // key they look up, what is not claimed given back after; else `claim` claims them.
        let looked_up = block.keys.iter().filter(|&&key| key != 0).count();
        let claiming = self
            .room
            .fetch_update(Relaxed, Relaxed, |room| room.checked_sub(looked_up))
            .is_ok();
        out.unclaimed |= !claiming;
        let mut claimed = 0;
        let mut successors = block.states.drain(..);
        let mut start = 0;
        for (offset, ((fp, state), &end)) in states.iter().zip(&block.ends).enumerate() {
            let position = first_position + offset;
            let parent = match self.conditions {
                None => *fp,
                Some(_) => (self.first_id + position) as u64,
            };
            if end - start >= 1 << SUCCESSOR_BITS {
                out.too_many = true;
            }
            let mut enabled = 0u64;
            for i in start..end {
                let next = successors.next().expect("one state per key");
                let next_fp = block.keys[i];
                if next_fp == 0 {
                    continue;
                }
                let claim = claim_of(position, i - start);
                // The slot of a key the table held before the batch, or else of its claim
                // (`None`: left to `claim`).
                let known = if claiming {
                    match self.visited.claim_or_find(next_fp, claim) {
                        Lookup::Held(slot) => Ok(slot),
                        Lookup::Claimed(slot) => Err(Some(slot)),
                    }
                } else {
                    self.visited.find(next_fp).map_err(|_| None)
                };
                if let Some(part) = &mut out.graph {
                    let group = block.groups[i];
                    if group != NO_GROUP {
                        enabled |= 1 << group;
                    }
                    if self.edges == Edges::Kept {
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
                }
                if let Err(slot) = known {
                    if let Some(slot) = slot {
                        out.slots.push(slot);
                        claimed += 1;
                    }
                    out.candidates.push(Candidate {
                        fp: next_fp,
                        parent,
                        claim,
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
        if claiming {
            self.room.fetch_add(looked_up - claimed, Relaxed);
        }
        block.groups.clear();
        block.keys.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Condition;
    use crate::model::Model;
    use crate::spec::Variables;
    use std::collections::HashMap;

    /// States 0..size, each with three successors spread pseudo-randomly (one a stutter now
    /// and then, two the same for every fifth state): many states reach each new one from
    /// several chunks of a level.
    struct Scatter {
        size: u64,
    }

    impl Model for Scatter {
        type State = u64;
        type Action = u64;
        fn init_states(&self) -> Vec<u64> {
            vec![0, 1]
        }
        fn actions(&self, _: &u64, actions: &mut Vec<u64>) {
            actions.extend([1, 2, 3]);
        }
        fn next_state(&self, s: &u64, branch: u64) -> Option<u64> {
            // Every fifth state's third step goes where its first does.
            let branch = if branch == 3 && s.is_multiple_of(5) {
                1
            } else {
                branch
            };
            Some((s * 2_654_435_761 + branch * 40_503) % self.size)
        }
    }

    impl Spec for Scatter {
        fn variables(&self, s: &u64) -> Variables {
            vec![("s", s.into())]
        }
    }

    /// Each reachable state's breadth-first depth, by a plain search.
    fn depths(model: &Scatter) -> HashMap<u64, usize> {
        let mut depth: HashMap<u64, usize> =
            model.init_states().into_iter().map(|s| (s, 0)).collect();
        let mut level = model.init_states();
        let mut d = 0;
        while !level.is_empty() {
            d += 1;
            let mut next = Vec::new();
            for s in level {
                for a in 1..=3 {
                    let t = model.next_state(&s, a).unwrap();
                    depth.entry(t).or_insert_with(|| {
                        next.push(t);
                        d
                    });
                }
            }
            level = next;
        }
        depth
    }

    /// A batch whose lookups could not claim every new key (no room, or room for some blocks
    /// only) leaves them to `claim`: the states, their parents, the graph's ids and edges are
    /// those of a search that claimed all while looking up, on one thread and on two.
    #[test]
    fn claims_left_to_the_claim_pass_keep_the_same_states_parents_and_graph() {
        let model = Scatter { size: 150_000 };
        let depth = depths(&model);
        let by_key: HashMap<u64, u64> = depth
            .keys()
            .map(|&s| (fingerprint_of(&model, s), s))
            .collect();
        let checks = SafetyChecks::none(&model);
        let limits = Limits::default();
        let conditions: Vec<Condition<'_, u64>> = vec![Box::new(|s: &u64| s.is_multiple_of(7))];
        let run = |threads: usize, most_claimed: usize, graph: bool| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let conditions = graph.then_some(&conditions[..]);
            let found = pool.install(|| {
                explore_claiming(
                    &model,
                    &checks,
                    &limits,
                    None,
                    conditions,
                    Edges::Kept,
                    most_claimed,
                )
            });
            assert_eq!(
                found.visited.len(),
                depth.len(),
                "every reachable state once"
            );
            // Each state's path is a shortest one, of the model's steps: its parents are right.
            let paths: Vec<Vec<u64>> = depth
                .keys()
                .map(|&s| found.path_to(fingerprint_of(&model, s)))
                .collect();
            for path in &paths {
                let states: Vec<u64> = path.iter().map(|fp| by_key[fp]).collect();
                assert_eq!(states.len(), depth[states.last().unwrap()] + 1);
                assert!(model.init_states().contains(&states[0]));
                for step in states.windows(2) {
                    assert!((1..=3).any(|a| model.next_state(&step[0], a) == Some(step[1])));
                }
            }
            let edges = found.graph.as_ref().map(|g| {
                (0..g.len() as u32)
                    .map(|id| (g.fps[id as usize], g.edges(id).map(|e| e.to).collect()))
                    .collect::<Vec<(u64, Vec<u32>)>>()
            });
            (paths, found.generated, found.depth, edges)
        };
        for graph in [false, true] {
            let claimed = run(1, usize::MAX, graph);
            for (threads, most_claimed) in [(1, 0), (2, 0), (2, 500), (2, usize::MAX)] {
                assert!(
                    run(threads, most_claimed, graph) == claimed,
                    "{threads} threads, {most_claimed} claimed while looking up, graph {graph}"
                );
            }
        }
    }

    fn fingerprint_of(model: &Scatter, s: u64) -> u64 {
        Keys::plain(model).key(&s)
    }
}
