//! The explicit state graph, kept only for liveness, in a few bytes per state.
//!
//! States themselves are not kept: the graph holds each state's fingerprint (to rebuild a
//! counterexample by replay), its state-changing successors as ids in one flat array, the fair
//! groups it enables and, per temporal property, whether the property's condition holds there.
//! Those are all the lasso search reads. The safety search builds it in the same pass
//! (`explore`), so the states live only in the frontier of the level being expanded.

use crate::bits::{BitSet, PackedBits};
use crate::extend::{extend_in_parts, starts};

/// A successor's fair group, or none (`NO_GROUP`).
pub(crate) const NO_GROUP: u8 = u8::MAX;

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
    /// Bit g of state i: fair group g has a state-changing step there (TLA+'s `ENABLED
    /// <<A>>_vars`).
    enabled: PackedBits,
    /// Per temporal property, in the order given to `build`: the states where it holds.
    holds: Vec<BitSet>,
    /// The graph has no cycle: the model's variant (`Spec::variant`) increased on every edge.
    pub(crate) acyclic: bool,
    /// The search kept each state's edges (`explore::Edges`). Without them the offsets, the
    /// targets and their groups stay empty, and only what needs no edge may be asked
    /// (`liveness::settled_by_variant`); the lasso search refuses such a graph.
    pub(crate) edges_kept: bool,
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

    /// Asks for where `state`'s edges begin ahead of `edge_range` (`prefetch`).
    #[inline]
    pub(crate) fn prefetch_edges(&self, state: u32) {
        crate::prefetch::prefetch(&self.offsets[state as usize]);
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
            graph.enabled.extend(std::iter::once(enabled[i]));
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
            acyclic: false,
            edges_kept: true,
        }
    }
}

/// A temporal property's condition on a state, as the search evaluates it.
pub type Condition<'a, S> = Box<dyn Fn(&S) -> bool + Sync + 'a>;

/// What the search records of a chunk of expanded states, in frontier order: each state's
/// state-changing successors (in the model's order) end at `ends[i]` in `targets` (their ids)
/// and `groups` (their fair groups, or `NO_GROUP`); and per state, the fair groups it enables
/// and which temporal properties hold at it (bit p for property p).
#[derive(Default)]
pub(crate) struct GraphPart {
    pub targets: Vec<u32>,
    pub groups: Vec<u8>,
    pub ends: Vec<usize>,
    pub enabled: Vec<u64>,
    pub holds: Vec<u64>,
}

impl GraphPart {
    /// Empties it for the next chunk, keeping its room.
    pub fn clear(&mut self) {
        self.targets.clear();
        self.groups.clear();
        self.ends.clear();
        self.enabled.clear();
        self.holds.clear();
    }

    /// Records one state's successors (after `targets` and `groups` were pushed) and what
    /// holds there.
    pub fn end_state(&mut self, enabled: u64, holds: u64) {
        self.ends.push(self.targets.len());
        self.enabled.push(enabled);
        self.holds.push(holds);
    }
}

/// The bits of the temporal properties that hold at `state`.
pub(crate) fn holding<S>(conditions: &[Condition<'_, S>], state: &S) -> u64 {
    conditions
        .iter()
        .enumerate()
        .filter(|(_, holds)| holds(state))
        .fold(0u64, |bits, (p, _)| bits | 1 << p)
}

impl StateGraph {
    /// An empty graph for a model of `groups` fair groups and `properties` temporal
    /// properties (at most 64 each).
    pub(crate) fn new(groups: usize, properties: usize) -> StateGraph {
        assert!(properties <= 64, "at most 64 temporal properties");
        StateGraph::empty(groups, properties)
    }

    /// Numbers a state new to the graph: ids follow breadth-first discovery. Err once ids
    /// would no longer fit their 32 bits.
    pub(crate) fn add_state(&mut self, fp: u64) -> Result<u32, &'static str> {
        let id = u32::try_from(self.fps.len())
            .ok()
            .filter(|&id| id < u32::MAX - 1)
            .ok_or("2^32 states")?;
        self.fps.push(fp);
        Ok(id)
    }

    /// Appends a batch's chunks in order: the states each found new (numbered already: their
    /// fingerprints, in id order), and its graph part, the edges and labels of the states it
    /// expanded (the next ids to be given edges). The arrays are written on every core
    /// (`extend_in_parts`), the packed bits on one meanwhile: split between the cores, a
    /// batch's bits cost what handing them over does (docs/scale.md).
    pub(crate) fn append_chunks<S: Sync>(
        &mut self,
        chunks: &[(&[(u64, S)], &GraphPart)],
    ) -> Result<(), &'static str> {
        let base = self.targets.len();
        let edges = chunks.iter().map(|(_, part)| part.targets.len());
        let firsts = starts(edges.clone());
        if u32::try_from(base + edges.sum::<usize>()).is_err() {
            return Err("2^32 transitions");
        }
        let StateGraph {
            fps,
            offsets,
            targets,
            groups,
            enabled,
            holds,
            edges_kept,
            ..
        } = self;
        let arrays = || {
            extend_in_parts(
                fps,
                chunks
                    .iter()
                    .map(|(arrived, _)| (arrived.len(), arrived.iter().map(|(fp, _)| *fp)))
                    .collect(),
            );
            if !*edges_kept {
                // Every state has no edge: the offsets would all be 0, and nothing reads them.
                return;
            }
            extend_in_parts(
                offsets,
                chunks
                    .iter()
                    .zip(&firsts)
                    .map(|((_, part), &first)| {
                        let ends = part
                            .ends
                            .iter()
                            .map(move |&end| (base + first + end) as u32);
                        (part.ends.len(), ends)
                    })
                    .collect(),
            );
            extend_in_parts(
                targets,
                chunks
                    .iter()
                    .map(|(_, part)| (part.targets.len(), part.targets.iter().copied()))
                    .collect(),
            );
            extend_in_parts(
                groups,
                chunks
                    .iter()
                    .map(|(_, part)| (part.groups.len(), part.groups.iter().copied()))
                    .collect(),
            );
        };
        let bits = || {
            for (_, part) in chunks {
                enabled.extend(part.enabled.iter().copied());
                for (p, column) in holds.iter_mut().enumerate() {
                    column.extend(part.holds.iter().map(|holds| holds & (1 << p) != 0));
                }
            }
        };
        rayon::join(bits, arrays);
        Ok(())
    }

    /// The arrays grew by doubling; what the lasso search reads is what they hold.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.fps.shrink_to_fit();
        self.inits.shrink_to_fit();
        self.offsets.shrink_to_fit();
        self.targets.shrink_to_fit();
        self.groups.shrink_to_fit();
    }
}
