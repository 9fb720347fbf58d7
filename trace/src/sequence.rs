//! A sequence judged against a model: the model path it follows, or where it diverged and what
//! the model allowed instead (`validate`). The search is the history search's, over the
//! history in which each event returns before the next is called.

use std::collections::HashSet;
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use loadbearing_refinement::fingerprint::{fingerprint, BuildIdentity};
use loadbearing_refinement::Path;

use crate::history::{self, Budget, Searched, Spent, Step};
use crate::{Conform, TraceEvent};

/// One model action tried for the event that could not be matched, and why it did not fit.
#[derive(Clone, Debug, Serialize)]
pub struct Tried {
    pub action: String,
    pub why_not: String,
}

/// A model state the unmatched event was tried from.
#[derive(Clone, Debug, Serialize)]
pub struct TriedFrom {
    pub state: Vec<(String, String)>,
    pub allowed: Vec<Tried>,
    /// Why the model allows no step of the event's kind here, when it can say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disabled: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Divergence {
    /// Events matched before the one that could not be (the longest matched prefix).
    pub matched: usize,
    /// 1-based line of the unmatched event in the trace.
    pub line: usize,
    /// The unmatched event, as its trace line reads (envelope and fields).
    pub event: Value,
    /// The action it reports, and its line as written (for the text).
    #[serde(skip)]
    pub action: String,
    #[serde(skip)]
    pub as_written: String,
    /// The model path that explains the matched prefix.
    pub prefix: Vec<String>,
    /// Up to a few of the states consistent with the prefix, with what the model allowed.
    pub tried: Vec<TriedFrom>,
    /// How many states were consistent with the prefix in all.
    pub candidates: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    pub events: usize,
    pub conforming: bool,
    /// The model path the trace follows (model action names, silent steps included).
    pub witness: Option<Vec<String>>,
    pub divergence: Option<Divergence>,
    /// The search ran out of a budget before it could tell: neither conforming nor diverging.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<Spent>,
    /// The largest number of configurations (a model state, and which unresolved steps
    /// landed) consistent with a prefix: how ambiguous the trace was.
    pub max_candidates: usize,
}

impl Verdict {
    /// Diverging: neither conforming nor undecided.
    pub fn diverges(&self) -> bool {
        self.divergence.is_some()
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// States shown per divergence.
    pub shown_states: usize,
    /// How far the search may go before it answers that it could not tell.
    pub budget: Budget,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            shown_states: 3,
            budget: Budget::default(),
        }
    }
}

/// A verdict with the model path a fitting trace follows, in the model's own states and
/// actions (silent steps included).
pub struct Validated<S, A> {
    pub verdict: Verdict,
    pub path: Option<Path<S, A>>,
}

/// Why an action was not tried for an event that names another action.
const REPORTS_ANOTHER: &str = "the event reports another action";

/// Checks whether `events` is a behaviour of `model`.
pub fn validate<M: Conform>(model: &M, events: &[M::Event], limits: Limits) -> Verdict {
    validate_path(model, events, limits).verdict
}

/// Checks whether `events` is a behaviour of `model`, and for one that is, the model path it
/// follows as typed states and actions.
///
/// A sequence is the history in which each event returns before the next is called and an
/// unresolved event never returns (`history::sequence_as_history`), and it is judged by the
/// history search itself: one semantics for both. Silent actions may happen between any two
/// events, any number of times; an unresolved event's step may land once, anywhere after its
/// event, or never, and only where the model enables it.
pub fn validate_path<M: Conform>(
    model: &M,
    events: &[M::Event],
    limits: Limits,
) -> Validated<M::State, M::Action> {
    let history = history::sequence_as_history(events);
    let face = history::ModelSteps { model };
    let (found, widest) = history::search_whole(&face, &history, limits.budget);
    let verdict = |conforming, witness, divergence, incomplete| Verdict {
        events: events.len(),
        conforming,
        witness,
        divergence,
        incomplete,
        max_candidates: widest,
    };
    match found {
        Searched::Order { last } => {
            let steps = last.map(|node| node.order());
            let typed = steps
                .as_ref()
                .map(|(initial, steps)| typed_path(model, events, initial, steps));
            let witness = typed.as_ref().map(|path| shown(model, path));
            Validated {
                verdict: verdict(true, witness, None, None),
                path: typed.map(|p| p.path),
            }
        }
        Searched::None { due, held, .. } => {
            let states: Vec<&M::State> = distinct(held.iter().map(|node| &node.state));
            let prefix = held
                .first()
                .map(|node| {
                    let (initial, steps) = node.order();
                    shown(model, &typed_path(model, events, &initial, &steps))
                })
                .unwrap_or_default();
            let divergence = explain(model, &events[due], due, &states, prefix, limits);
            Validated {
                verdict: verdict(false, None, Some(divergence), None),
                path: None,
            }
        }
        Searched::Spent(spent) => Validated {
            verdict: verdict(false, None, None, Some(spent)),
            path: None,
        },
    }
}

/// The states in order, each once.
fn distinct<'a, S: std::hash::Hash + 'a>(states: impl Iterator<Item = &'a S>) -> Vec<&'a S> {
    let mut seen = Seen::default();
    states.filter(|s| seen.insert(fingerprint(*s))).collect()
}

/// A model path with, per action, whether it was silent (a declared silent action, or an
/// unresolved event's step landing).
struct TypedPath<S, A> {
    path: Path<S, A>,
    silent: Vec<bool>,
}

/// The model actions behind the search's steps: for each event, the action that reports it
/// and leads to the state the search reached (none for a stutter); for each silent step or
/// landing of an unresolved event, the action that does. The search built each step from
/// exactly such an action, so one is always found.
fn typed_path<M: Conform>(
    model: &M,
    events: &[M::Event],
    initial: &M::State,
    steps: &[(Step, M::State)],
) -> TypedPath<M::State, M::Action> {
    let mut path = Path::new(initial.clone());
    let mut silent = Vec::new();
    let mut actions = Vec::new();
    for (step, after) in steps {
        let before = path.last_state().clone();
        let fits =
            |action: &M::Action| model.next_state(&before, action.clone()).as_ref() == Some(after);
        actions.clear();
        model.actions(&before, &mut actions);
        let (action, quiet) = match *step {
            Step::Op(k) if !events[k].has_outcome() => {
                let unresolved = model.unresolved(std::slice::from_ref(&events[k]));
                let found = actions.iter().find(|a| unresolved.contains(a) && fits(a));
                (found.cloned(), true)
            }
            Step::Op(k) => {
                let event = &events[k];
                if model.is_stutter(event) {
                    continue;
                }
                let found = actions.iter().find(|a| {
                    model.reports(a, event)
                        && fits(a)
                        && model.observe(&before, after, event).is_ok()
                });
                (found.cloned(), false)
            }
            Step::Silent | Step::Start => {
                let found = actions.iter().find(|a| model.is_silent(a) && fits(a));
                (found.cloned(), true)
            }
        };
        let action = action.expect("the search's step is one of the model's actions");
        path.push(action, after.clone());
        silent.push(quiet);
    }
    TypedPath { path, silent }
}

/// A path as people read it: each action as the model formats it, a silent one marked so.
fn shown<M: Conform>(model: &M, typed: &TypedPath<M::State, M::Action>) -> Vec<String> {
    typed
        .path
        .actions()
        .zip(&typed.silent)
        .map(|(action, &silent)| {
            let shown = model.format_action(action);
            if silent {
                format!("{shown} (silent)")
            } else {
                shown
            }
        })
        .collect()
}

/// Fingerprints already seen: they are hashes already, so they are not hashed again.
type Seen = HashSet<u64, BuildIdentity>;

fn explain<M: Conform>(
    model: &M,
    event: &M::Event,
    index: usize,
    closure: &[&M::State],
    prefix: Vec<String>,
    limits: Limits,
) -> Divergence {
    let mut tried = Vec::new();
    let mut actions = Vec::new();
    for &state in closure.iter().take(limits.shown_states) {
        let mut allowed = Vec::new();
        if model.is_stutter(event) {
            if let Err(why) = model.observe(state, state, event) {
                allowed.push(Tried {
                    action: "(stutter)".into(),
                    why_not: why.to_string(),
                });
            }
        }
        actions.clear();
        model.actions(state, &mut actions);
        for action in actions.drain(..) {
            let shown = model.format_action(&action);
            let why_not = if !model.reports(&action, event) {
                REPORTS_ANOTHER.to_string()
            } else {
                match model.next_state(state, action) {
                    None => "not enabled".to_string(),
                    Some(after) => match model.observe(state, &after, event) {
                        Ok(()) => "fits (but led to a state already tried)".to_string(),
                        Err(why) => why.to_string(),
                    },
                }
            };
            allowed.push(Tried {
                action: shown,
                why_not,
            });
        }
        let reported = allowed.iter().any(|t| t.why_not != REPORTS_ANOTHER);
        tried.push(TriedFrom {
            disabled: if reported {
                None
            } else {
                model.disabled_reason(state, event)
            },
            state: model
                .variables(state)
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.into_text()))
                .collect(),
            allowed,
        });
    }
    Divergence {
        matched: index,
        line: index + 1,
        event: serde_json::from_str(&event.to_line()).expect("a trace line is JSON"),
        action: event.action().to_string(),
        as_written: event.to_line(),
        prefix,
        tried,
        candidates: closure.len(),
    }
}

impl Divergence {
    /// For people: what matched, the event that did not, and what the model allowed instead.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "diverged at event {} (line {}): {}",
            self.matched + 1,
            self.line,
            self.as_written
        );
        let _ = writeln!(
            out,
            "the first {} events match the model path: {}",
            self.matched,
            if self.prefix.is_empty() {
                "(none)".to_string()
            } else {
                self.prefix.join(", ")
            }
        );
        let _ = writeln!(
            out,
            "tried from {} consistent state(s){}:",
            self.candidates,
            if self.candidates > self.tried.len() {
                format!(", the first {} shown", self.tried.len())
            } else {
                String::new()
            }
        );
        for from in &self.tried {
            let vars: Vec<String> = from.state.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let _ = writeln!(out, "  in {}", vars.join("  "));
            let relevant: Vec<&Tried> = from
                .allowed
                .iter()
                .filter(|t| t.why_not != REPORTS_ANOTHER)
                .collect();
            if relevant.is_empty() {
                let names: Vec<&str> = from.allowed.iter().map(|t| t.action.as_str()).collect();
                let _ = writeln!(
                    out,
                    "    no allowed action reports `{}`; the model allowed: {}",
                    self.action,
                    if names.is_empty() {
                        "nothing".to_string()
                    } else {
                        names.join(", ")
                    }
                );
                if let Some(why) = &from.disabled {
                    let _ = writeln!(out, "    {why}");
                }
            }
            for t in relevant {
                let _ = writeln!(out, "    {}: {}", t.action, t.why_not);
            }
        }
        out
    }
}
