//! Showing a spec to people: the explorer's path to a counterexample, the explicit state graph
//! for pictures, and (with the feature `explorer`) Stateright's web explorer on our models
//! (`explorer.rs`).

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;

use crate::model::Expectation;

use crate::check::CheckSpec;
use crate::erased::AnyReport;
use crate::fingerprint::fingerprint;
use crate::path::Path;
use crate::report::CounterexampleOf;
use crate::shown_value::Shown;
use crate::spec::{Spec, Variables};

#[cfg(feature = "explorer")]
mod explorer;
#[cfg(feature = "explorer")]
mod front;

/// The reachable state graph as people read it: for pictures of small configs.
pub struct ShownGraph {
    pub states: Vec<Vec<(String, Shown)>>,
    pub inits: Vec<usize>,
    /// State-changing steps; stutters are left out. Actions reaching the same successor share
    /// one edge.
    pub edges: Vec<ShownEdge>,
    /// The counterexample's states as indices into `states`, when one was given.
    pub path: Vec<usize>,
}

pub struct ShownEdge {
    pub from: usize,
    pub to: usize,
    pub actions: Vec<(String, String)>,
}

/// Why a view cannot show what was asked.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// The report is of another model type than the view's.
    #[error("the report is of the {report} model, not of this view's {view}")]
    ForeignReport {
        report: &'static str,
        view: &'static str,
    },
    /// The counterexample is no behaviour of the view's model (built from other constants).
    #[error("step {step} of the counterexample is no step of this view's model")]
    NotAPath { step: usize },
    #[error("more than {0} states: too many for a picture; raise --max-states")]
    TooManyStates(usize),
    #[error("cannot listen on {address}: {source}; pass --port with a free port")]
    Bind {
        address: SocketAddr,
        source: std::io::Error,
    },
    /// Built without the explorer.
    #[error("this build has no explorer: build loadbearing with the feature `explorer`")]
    NoExplorer,
}

/// A configured model behind an object-safe face, for the CLI's `explore` and `trace`. The
/// reports it is given are those of its own model (from the registry's `check` of the same
/// config): it reads their typed paths.
pub trait View: Send + Sync {
    /// Each refinement property of the model with the name of the abstract model it maps to.
    fn refinement_targets(&self) -> Vec<(String, String)>;

    /// The report's counterexample as the explorer's path: the initial state's index in
    /// `init_states`, then each step's action index in `actions`. `None` without one.
    fn explorer_path(&self, report: &dyn AnyReport) -> Result<Option<Vec<usize>>, ViewError>;

    /// Every reachable state and state-changing step, the report's counterexample marked; an
    /// error past `max_states` states.
    fn graph(
        &self,
        report: Option<&dyn AnyReport>,
        max_states: usize,
    ) -> Result<ShownGraph, ViewError>;

    /// The config's `eventually` properties: the explorer shows them on every state but does
    /// not check them (Stateright checks liveness only at terminal states).
    fn unchecked(&self) -> Vec<String>;

    /// Serves Stateright's explorer on `address`, the report's counterexample marked, with
    /// `title` (the config) for the model's name, and does not return while it runs. An error
    /// when the address cannot be bound (a taken port).
    fn serve(
        &self,
        address: SocketAddr,
        report: Option<&dyn AnyReport>,
        title: &str,
    ) -> Result<(), ViewError>;
}

/// The view of `model` checked against `spec`'s properties.
pub fn view<M: Spec + 'static>(model: M, spec: &CheckSpec) -> Box<dyn View> {
    Box::new(Viewer {
        model: Arc::new(model),
        spec: spec.clone(),
    })
}

struct Viewer<M> {
    model: Arc<M>,
    spec: CheckSpec,
}

fn owned(vars: Variables) -> Vec<(String, Shown)> {
    vars.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// The path as the explorer encodes it: the initial state's index among the model's initial
/// states, then each action's index among the actions of the state it leaves.
fn explorer_indices<M: Spec>(
    model: &M,
    path: &Path<M::State, M::Action>,
) -> Result<Vec<usize>, ViewError> {
    let init = model
        .init_states()
        .iter()
        .position(|s| s == path.init())
        .ok_or(ViewError::NotAPath { step: 0 })?;
    let mut indices = vec![init];
    let mut actions = Vec::new();
    for (i, (before, action, _)) in path.transitions().enumerate() {
        actions.clear();
        model.actions(before, &mut actions);
        let index = actions
            .iter()
            .position(|a| a == action)
            .ok_or(ViewError::NotAPath { step: i + 1 })?;
        indices.push(index);
    }
    Ok(indices)
}

impl<M: Spec + 'static> Viewer<M> {
    /// The report's counterexample, typed as this view's model.
    fn counterexample<'r>(
        &self,
        report: Option<&'r dyn AnyReport>,
    ) -> Result<Option<&'r CounterexampleOf<M>>, ViewError> {
        let Some(report) = report else {
            return Ok(None);
        };
        let typed = report.typed::<M>().ok_or(ViewError::ForeignReport {
            report: report.model_name(),
            view: std::any::type_name::<M>(),
        })?;
        Ok(typed.counterexample.as_ref())
    }
}

impl<M: Spec + 'static> View for Viewer<M> {
    fn refinement_targets(&self) -> Vec<(String, String)> {
        self.model
            .refinements()
            .iter()
            .map(|r| (r.name().to_string(), r.abstract_model().to_string()))
            .collect()
    }

    fn explorer_path(&self, report: &dyn AnyReport) -> Result<Option<Vec<usize>>, ViewError> {
        self.counterexample(Some(report))?
            .map(|cx| explorer_indices(self.model.as_ref(), &cx.path))
            .transpose()
    }

    fn graph(
        &self,
        report: Option<&dyn AnyReport>,
        max_states: usize,
    ) -> Result<ShownGraph, ViewError> {
        let cx = self.counterexample(report)?;
        let model = self.model.as_ref();
        let mut index: HashMap<u64, usize> = HashMap::new();
        let mut states: Vec<M::State> = Vec::new();
        let mut inits = Vec::new();
        let mut queue = VecDeque::new();
        let mut edges: Vec<ShownEdge> = Vec::new();
        let mut edge_of: HashMap<(usize, usize), usize> = HashMap::new();
        for s in model.init_states() {
            let fp = fingerprint(&s);
            if let std::collections::hash_map::Entry::Vacant(e) = index.entry(fp) {
                e.insert(states.len());
                inits.push(states.len());
                queue.push_back(states.len());
                states.push(s);
            }
        }
        let mut actions = Vec::new();
        while let Some(from) = queue.pop_front() {
            let state = states[from].clone();
            actions.clear();
            model.actions(&state, &mut actions);
            for action in actions.drain(..) {
                let shown = (model.format_action(&action), model.actor(&action));
                let Some(next) = model.next_state(&state, action) else {
                    continue;
                };
                if next == state {
                    continue;
                }
                let fp = fingerprint(&next);
                let to = match index.get(&fp) {
                    Some(&to) => to,
                    None => {
                        if states.len() >= max_states {
                            return Err(ViewError::TooManyStates(max_states));
                        }
                        let to = states.len();
                        index.insert(fp, to);
                        queue.push_back(to);
                        states.push(next);
                        to
                    }
                };
                let e = *edge_of.entry((from, to)).or_insert_with(|| {
                    edges.push(ShownEdge {
                        from,
                        to,
                        actions: Vec::new(),
                    });
                    edges.len() - 1
                });
                edges[e].actions.push(shown);
            }
        }
        let path = match cx {
            Some(cx) => cx
                .path
                .states()
                .enumerate()
                .map(|(step, s)| {
                    index
                        .get(&fingerprint(s))
                        .copied()
                        .ok_or(ViewError::NotAPath { step })
                })
                .collect::<Result<_, _>>()?,
            None => Vec::new(),
        };
        Ok(ShownGraph {
            states: states.iter().map(|s| owned(model.variables(s))).collect(),
            inits,
            edges,
            path,
        })
    }

    fn unchecked(&self) -> Vec<String> {
        let properties = self.model.properties();
        self.spec
            .properties
            .iter()
            .filter(|name| {
                properties
                    .iter()
                    .any(|p| p.name == name.as_str() && p.expectation == Expectation::Eventually)
            })
            .cloned()
            .collect()
    }

    fn serve(
        &self,
        address: SocketAddr,
        report: Option<&dyn AnyReport>,
        title: &str,
    ) -> Result<(), ViewError> {
        let cx = self.counterexample(report)?;
        #[cfg(feature = "explorer")]
        return explorer::serve(&self.model, &self.spec, cx, address, title);
        #[cfg(not(feature = "explorer"))]
        {
            let _ = (cx, address, title);
            Err(ViewError::NoExplorer)
        }
    }
}
