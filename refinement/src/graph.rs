//! The explicit state graph, kept only for liveness: states, their successors and which
//! weakly-fair groups each state enables.

use std::time::Instant;

use hashbrown::HashMap;
use rayon::prelude::*;

use crate::fingerprint::{fingerprint, BuildIdentity};
use crate::spec::Spec;

#[derive(Clone, Copy, Debug)]
pub struct Edge {
    pub to: u32,
    pub group: Option<u8>,
}

pub struct StateGraph<S> {
    pub states: Vec<S>,
    pub inits: Vec<u32>,
    /// Successors that change the state; stutter self-loops are implicit everywhere.
    pub edges: Vec<Vec<Edge>>,
    /// Bit g set: fair group g has a state-changing step here (TLA+'s ENABLED <<A>>_vars).
    pub enabled: Vec<u64>,
}

pub enum GraphError {
    StateLimit(u64),
    TimeLimit,
}

/// States expanded per parallel task.
const CHUNK: usize = 512;

/// One state's expansion: its state-changing successors (the state itself only when it is new
/// to the graph) and the fair groups it enables.
type Expansion<S> = (Vec<(u64, Option<u8>, Option<S>)>, u64);

/// Builds the graph level by level: each level is expanded on every core against the read-only
/// index, then the new states are numbered in frontier order, so ids are the same on every run.
pub fn build<M: Spec>(
    model: &M,
    max_states: Option<u64>,
    deadline: Option<Instant>,
) -> Result<StateGraph<M::State>, GraphError> {
    let mut index: HashMap<u64, u32, BuildIdentity> = HashMap::default();
    let mut graph = StateGraph {
        states: Vec::new(),
        inits: Vec::new(),
        edges: Vec::new(),
        enabled: Vec::new(),
    };
    let mut frontier: Vec<u32> = Vec::new();
    for state in model.init_states() {
        let fp = fingerprint(&state);
        if !index.contains_key(&fp) {
            let id = graph.states.len() as u32;
            index.insert(fp, id);
            graph.inits.push(id);
            graph.states.push(state);
            graph.edges.push(Vec::new());
            graph.enabled.push(0);
            frontier.push(id);
        }
    }
    while !frontier.is_empty() {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(GraphError::TimeLimit);
        }
        let (states, known) = (&graph.states, &index);
        let expanded: Vec<Vec<Expansion<M::State>>> = frontier
            .par_chunks(CHUNK)
            .map(|chunk| {
                let mut actions = Vec::new();
                chunk
                    .iter()
                    .map(|&id| expand(model, &states[id as usize], known, &mut actions))
                    .collect()
            })
            .collect();
        let mut next = Vec::new();
        for (&id, (successors, enabled)) in frontier.iter().zip(expanded.into_iter().flatten()) {
            graph.enabled[id as usize] = enabled;
            let mut edges = Vec::with_capacity(successors.len());
            for (fp, group, state) in successors {
                let to = match index.get(&fp) {
                    Some(&to) => to,
                    None => {
                        let to = graph.states.len() as u32;
                        if max_states.is_some_and(|max| to as u64 >= max) {
                            return Err(GraphError::StateLimit(max_states.unwrap_or_default()));
                        }
                        // Unknown when the level was expanded, so the expansion carried it.
                        let state = state.expect("a successor unknown to the index is carried");
                        index.insert(fp, to);
                        graph.states.push(state);
                        graph.edges.push(Vec::new());
                        graph.enabled.push(0);
                        next.push(to);
                        to
                    }
                };
                edges.push(Edge { to, group });
            }
            graph.edges[id as usize] = edges;
        }
        frontier = next;
    }
    Ok(graph)
}

fn expand<M: Spec>(
    model: &M,
    state: &M::State,
    known: &HashMap<u64, u32, BuildIdentity>,
    actions: &mut Vec<M::Action>,
) -> Expansion<M::State> {
    let mut successors = Vec::new();
    let mut enabled = 0u64;
    actions.clear();
    model.actions(state, actions);
    for action in actions.drain(..) {
        let group = model.fairness_group(&action).map(|g| g as u8);
        let Some(next) = model.next_state(state, action) else {
            continue;
        };
        if &next == state {
            continue;
        }
        if let Some(g) = group {
            enabled |= 1 << g;
        }
        let fp = fingerprint(&next);
        let carried = (!known.contains_key(&fp)).then_some(next);
        successors.push((fp, group, carried));
    }
    (successors, enabled)
}
