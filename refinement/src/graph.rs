//! The explicit state graph, kept only for liveness: states, their successors and which
//! weakly-fair groups each state enables.

use std::collections::VecDeque;
use std::time::Instant;

use hashbrown::HashMap;

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
    let mut queue = VecDeque::new();
    for state in model.init_states() {
        let fp = fingerprint(&state);
        if !index.contains_key(&fp) {
            let id = graph.states.len() as u32;
            index.insert(fp, id);
            graph.inits.push(id);
            graph.states.push(state);
            queue.push_back(id);
        }
    }
    let mut actions = Vec::new();
    while let Some(id) = queue.pop_front() {
        if let Some(deadline) = deadline {
            if Instant::now() >= deadline {
                return Err(GraphError::TimeLimit);
            }
        }
        let state = graph.states[id as usize].clone();
        let mut edges = Vec::new();
        let mut enabled = 0u64;
        actions.clear();
        model.actions(&state, &mut actions);
        for action in actions.drain(..) {
            let group = model.fairness_group(&action).map(|g| g as u8);
            let Some(next) = model.next_state(&state, action) else {
                continue;
            };
            if next == state {
                continue;
            }
            if let Some(g) = group {
                enabled |= 1 << g;
            }
            let fp = fingerprint(&next);
            let to = match index.get(&fp) {
                Some(&to) => to,
                None => {
                    let to = graph.states.len() as u32;
                    if let Some(max) = max_states {
                        if to as u64 >= max {
                            return Err(GraphError::StateLimit(max));
                        }
                    }
                    index.insert(fp, to);
                    graph.states.push(next);
                    queue.push_back(to);
                    to
                }
            };
            edges.push(Edge { to, group });
        }
        // States are numbered in discovery order, so edges and enabled line up by id.
        graph.edges.push(edges);
        graph.enabled.push(enabled);
    }
    Ok(graph)
}
