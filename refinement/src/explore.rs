//! Breadth-first exploration for safety: invariants, witnesses, refinement steps and deadlocks.
//!
//! Each level is expanded in parallel against a read-only visited set; the new states are then
//! inserted in frontier order. That order makes parent links, and so every counterexample,
//! the same on every run and thread count, and level-by-level search makes them shortest.

use rayon::prelude::*;
use stateright::Property;

use crate::budget::{ChunkStop, Exhausted, Limits};
use crate::image::AbstractStep;
use crate::progress::Progress;
use crate::refinement::Refinement;
use crate::spec::Spec;
use crate::symmetry::Keys;
use crate::visited::Visited;

/// States expanded per parallel task: large enough to amortise scheduling, small enough to
/// balance two cores on a narrow level.
const CHUNK: usize = 1024;

/// States expanded between insertions into the visited set (see `explore`).
const BATCH: usize = 32 * CHUNK;

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
}

impl Exploration {
    pub fn visited_bytes(&self) -> usize {
        self.visited.allocation_size()
    }

    /// Fingerprints from an initial state to `fp`, following parent links.
    pub fn path_to(&self, fp: u64) -> Vec<u64> {
        let mut path = vec![fp];
        let mut at = fp;
        while let Some(parent) = self.visited.parent(at) {
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

struct Expanded<S> {
    new_states: Vec<(u64, u64, S)>,
    generated: u64,
    findings: Vec<(usize, usize, Finding)>,
    witnesses: Vec<Option<u64>>,
}

pub fn explore<M: Spec>(
    model: &M,
    checks: &SafetyChecks<'_, M>,
    limits: &Limits,
    progress: Option<&str>,
) -> Exploration {
    let mut visited = Visited::default();
    let mut frontier: Vec<(u64, M::State)> = Vec::new();
    let mut init_findings = Vec::new();
    let inits = model.init_states();
    let generated = inits.len() as u64;
    for state in inits {
        let fp = checks.keys.key(&state);
        if visited.insert(fp, 0) {
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
    }
    let mut result = Exploration {
        visited,
        depth: 0,
        generated,
        finding: init_findings.into_iter().next(),
        witnesses_found: vec![None; checks.witnesses.len()],
        incomplete: None,
    };
    // The phase is named: a check with temporal properties builds its graph after this.
    let mut progress = progress.map(|config| Progress::phase(config, "safety"));
    while result.finding.is_none() && !frontier.is_empty() {
        let depth = result.depth;
        let mut findings = Vec::new();
        let mut next = Vec::new();
        // A level is expanded a batch at a time, each batch's new states inserted before the
        // next batch looks: the expansions waiting to be inserted stay small, and the first
        // parent in frontier order is still the one kept.
        for (batch_index, batch) in frontier.chunks(BATCH).enumerate() {
            let stop = ChunkStop::default();
            let visited = &result.visited;
            let found = &result.witnesses_found;
            let expanded: Vec<Expanded<M::State>> = batch
                .par_chunks(CHUNK)
                .enumerate()
                .map(|(chunk_index, chunk)| {
                    if stop.skip(limits) {
                        return Expanded {
                            new_states: Vec::new(),
                            generated: 0,
                            findings: Vec::new(),
                            witnesses: Vec::new(),
                        };
                    }
                    let position = batch_index * BATCH + chunk_index * CHUNK;
                    expand_chunk(model, checks, visited, found, chunk, position)
                })
                .collect();
            let arriving: usize = expanded.iter().map(|e| e.new_states.len()).sum();
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
            for chunk in expanded {
                result.generated += chunk.generated;
                for (i, found) in chunk.witnesses.iter().enumerate() {
                    if result.witnesses_found[i].is_none() {
                        result.witnesses_found[i] = *found;
                    }
                }
                findings.extend(chunk.findings);
                for (fp, parent, state) in chunk.new_states {
                    if result.visited.insert(fp, parent) {
                        next.push((fp, state));
                    }
                }
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
        frontier = next;

        let states = result.visited.len() as u64;
        if result.finding.is_none() && !frontier.is_empty() {
            if let Err(spent) = limits.check(states, result.depth, PHASE) {
                result.incomplete = Some(spent);
                return result;
            }
        }
    }
    result
}

/// Fills `successors` with the states `state`'s actions reach, in the model's action order
/// (stutters included); `actions` is scratch space kept between calls.
pub(crate) fn successors_into<M: Spec>(
    model: &M,
    state: &M::State,
    actions: &mut Vec<M::Action>,
    successors: &mut Vec<M::State>,
) {
    actions.clear();
    model.actions(state, actions);
    successors.clear();
    successors.extend(actions.drain(..).filter_map(|a| model.next_state(state, a)));
}

fn expand_chunk<M: Spec>(
    model: &M,
    checks: &SafetyChecks<'_, M>,
    visited: &Visited,
    found: &[Option<u64>],
    chunk: &[(u64, M::State)],
    first_position: usize,
) -> Expanded<M::State> {
    let mut out = Expanded {
        new_states: Vec::with_capacity(chunk.len() * 2),
        generated: 0,
        findings: Vec::new(),
        witnesses: vec![None; checks.witnesses.len()],
    };
    let mut actions = Vec::new();
    let mut successors = Vec::new();
    let refinement_order = checks.invariants.len();
    for (offset, (fp, state)) in chunk.iter().enumerate() {
        let position = first_position + offset;
        for (order, invariant) in checks.invariants.iter().enumerate() {
            if !(invariant.condition)(model, state) {
                out.findings.push((
                    order,
                    position,
                    Finding::Invariant {
                        property: invariant.name,
                        state: *fp,
                    },
                ));
            }
        }
        for (i, witness) in checks.witnesses.iter().enumerate() {
            // A witness found at an earlier level is the shallowest; it is not looked for again.
            if found[i].is_none() && out.witnesses[i].is_none() && (witness.condition)(model, state)
            {
                out.witnesses[i] = Some(*fp);
            }
        }
        successors_into(model, state, &mut actions, &mut successors);
        out.generated += successors.len() as u64;
        for (r, refinement) in checks.refinements.iter().enumerate() {
            if !refinement.check_steps(state, &successors).is_empty() {
                out.findings.push((
                    refinement_order + r,
                    position,
                    Finding::Refinement {
                        property: refinement.name(),
                        from: *fp,
                    },
                ));
            }
        }
        if successors.is_empty() && !checks.allow_end_states {
            out.findings
                .push((usize::MAX, position, Finding::Deadlock { state: *fp }));
        }
        for next in successors.drain(..) {
            if &next == state {
                continue;
            }
            let next_fp = checks.keys.key(&next);
            if !visited.contains(next_fp) {
                out.new_states.push((next_fp, *fp, next));
            }
        }
    }
    out
}
