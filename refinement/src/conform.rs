//! Trace conformance, implementation → model: is a recorded run a behaviour of the model?
//!
//! A trace is NDJSON, one event of the model's typed vocabulary per line (`wire`,
//! `docs/trace-format.md`). The checker keeps every model state consistent with the prefix
//! read so far, so an event may carry only some variables (the rest are searched), a declared
//! silent action may happen between events (up to a bound), and an event that reports no model
//! action is a stutter. A trace that fits ends with a witness, the model path it follows; one
//! that does not ends with a divergence report: the longest matched prefix, the event that could
//! not be matched, and for each state it was tried from, what the model allowed there and why
//! the event contradicts it. Data first (serde), text second.

use std::collections::HashSet;
use std::fmt::{self, Write as _};

use serde::Serialize;
use serde_json::Value;

use crate::fingerprint::{fingerprint, BuildIdentity};
use crate::path::Path;
use crate::spec::Spec;

pub mod history;
mod wire;

pub use history::{check_history, Budget, HistoryOutcome, HistoryVerdict, Sequential};
pub use wire::{
    parse_ndjson, parse_trace, to_history_line, to_history_ndjson, to_ndjson, LineError, Timed,
    Trace, TraceError, TraceEvent, SCHEMA_VERSION,
};

/// How a model reads an implementation's events.
pub trait Conform: Spec {
    /// The model's trace vocabulary.
    type Event: TraceEvent;

    /// Why an event contradicts a model step, as data (expected against observed); its
    /// `Display` is the reason a divergence report shows.
    type Contradiction: fmt::Display;

    /// The states a trace may start from. The default is every initial state; a model whose
    /// initial states are too many to enumerate builds them from what the trace reveals.
    fn initial_candidates(&self, _events: &[Self::Event]) -> Vec<Self::State> {
        self.init_states()
    }

    /// Whether `action` is the model action the event reports (its name, actor, arguments).
    fn reports(&self, action: &Self::Action, event: &Self::Event) -> bool;

    /// Compares what the event observed with the model step `before → after`; `Err` says
    /// which value contradicts the model.
    fn observe(
        &self,
        before: &Self::State,
        after: &Self::State,
        event: &Self::Event,
    ) -> Result<(), Self::Contradiction>;

    /// An event that reports no model action (a read, a lifecycle note): a stutter, accepted
    /// where `observe(s, s)` holds.
    fn is_stutter(&self, _event: &Self::Event) -> bool {
        false
    }

    /// A model action the implementation never logs; it may happen between events.
    fn is_silent(&self, _action: &Self::Action) -> bool {
        false
    }

    /// The steps of the trace's unresolved events: sent, and never answered (a reply lost to a
    /// reset, a cut, a timeout). Such a step may have taken effect, or not, and when is unknown:
    /// a write whose client gave up may still land on the server after later writes. The
    /// model may take each of these actions silently at any point of the trace (each event
    /// itself should be a stutter); nothing is inferred from the event's missing outcome.
    fn unresolved(&self, _events: &[Self::Event]) -> Vec<Self::Action> {
        Vec::new()
    }

    /// Why no action of the event's kind is enabled in `state`, when the model can say (shown
    /// in a divergence report instead of a bare "not allowed").
    fn disabled_reason(&self, _state: &Self::State, _event: &Self::Event) -> Option<String> {
        None
    }
}

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
    /// The largest number of model states consistent with a prefix: how ambiguous the trace was.
    pub max_candidates: usize,
}

#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Silent model steps allowed between two events.
    pub silent_steps: usize,
    /// States shown per divergence.
    pub shown_states: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            silent_steps: 2,
            shown_states: 3,
        }
    }
}

/// A node of the witness forest: how a candidate state was reached. A root is an initial
/// candidate, by its index in the forest's `roots`.
struct Node<A> {
    parent: Option<usize>,
    action: Option<A>,
    /// Whether `action` was a silent step (taken between events, reported by none).
    silent: bool,
}

impl<A> Node<A> {
    fn root() -> Self {
        Node {
            parent: None,
            action: None,
            silent: false,
        }
    }

    fn step(parent: usize, action: A, silent: bool) -> Self {
        Node {
            parent: Some(parent),
            action: Some(action),
            silent,
        }
    }
}

/// The steps from a root to node `at`: the root's node index, then each action with whether
/// it was silent, in order.
fn steps<A>(nodes: &[Node<A>], mut at: usize) -> (usize, Vec<(&A, bool)>) {
    let mut steps = Vec::new();
    loop {
        let node = &nodes[at];
        if let Some(a) = &node.action {
            steps.push((a, node.silent));
        }
        match node.parent {
            Some(p) => at = p,
            None => break,
        }
    }
    steps.reverse();
    (at, steps)
}

/// The model path to node `at` as people read it: each action as the model formats it, a
/// silent step marked so.
fn path<M: Conform>(model: &M, nodes: &[Node<M::Action>], at: usize) -> Vec<String> {
    steps(nodes, at)
        .1
        .into_iter()
        .map(|(action, silent)| {
            let shown = model.format_action(action);
            if silent {
                format!("{shown} (silent)")
            } else {
                shown
            }
        })
        .collect()
}

/// A verdict with the model path a fitting trace follows, in the model's own states and
/// actions (silent steps included).
pub struct Validated<S, A> {
    pub verdict: Verdict,
    pub path: Option<Path<S, A>>,
}

/// Fingerprints already seen: they are hashes already, so they are not hashed again.
type Seen = HashSet<u64, BuildIdentity>;

/// Why an action was not tried for an event that names another action.
const REPORTS_ANOTHER: &str = "the event reports another action";

/// Checks whether `events` is a behaviour of `model`.
pub fn validate<M: Conform>(model: &M, events: &[M::Event], limits: Limits) -> Verdict {
    validate_path(model, events, limits).verdict
}

/// Checks whether `events` is a behaviour of `model`, and for one that is, the model path it
/// follows as typed states and actions.
pub fn validate_path<M: Conform>(
    model: &M,
    events: &[M::Event],
    limits: Limits,
) -> Validated<M::State, M::Action> {
    let mut nodes: Vec<Node<M::Action>> = Vec::new();
    let mut frontier: Vec<(M::State, usize)> = Vec::new();
    // Each initial candidate with its root node.
    let mut roots: Vec<(usize, M::State)> = Vec::new();
    let mut seen = Seen::default();
    for state in model.initial_candidates(events) {
        if seen.insert(fingerprint(&state)) {
            nodes.push(Node::root());
            roots.push((nodes.len() - 1, state.clone()));
            frontier.push((state, nodes.len() - 1));
        }
    }
    let mut max_candidates = frontier.len();
    let mut actions = Vec::new();
    // Each unresolved event's step, with where the event stands: it may land only after the
    // statement was sent, that is after its event.
    let late = Late {
        actions: events
            .iter()
            .enumerate()
            .flat_map(|(i, e)| {
                model
                    .unresolved(std::slice::from_ref(e))
                    .into_iter()
                    .map(move |a| (i, a))
            })
            .collect(),
    };
    // Every unresolved step may land between the same two events.
    let silent_steps = limits.silent_steps + late.actions.len();
    for (i, event) in events.iter().enumerate() {
        let closure = silent_closure(model, frontier, &mut nodes, silent_steps, &late.before(i));
        let mut next: Vec<(M::State, usize)> = Vec::new();
        let mut next_seen = Seen::default();
        let stutter = model.is_stutter(event);
        for (state, node) in &closure {
            if stutter && model.observe(state, state, event).is_ok() {
                if next_seen.insert(fingerprint(state)) {
                    next.push((state.clone(), *node));
                }
                continue;
            }
            actions.clear();
            model.actions(state, &mut actions);
            for action in actions.drain(..) {
                if !model.reports(&action, event) {
                    continue;
                }
                let Some(after) = model.next_state(state, action.clone()) else {
                    continue;
                };
                if model.observe(state, &after, event).is_ok()
                    && next_seen.insert(fingerprint(&after))
                {
                    nodes.push(Node::step(*node, action, false));
                    next.push((after, nodes.len() - 1));
                }
            }
        }
        if next.is_empty() {
            let divergence = explain(model, event, i, &closure, &nodes, limits);
            return Validated {
                verdict: Verdict {
                    events: events.len(),
                    conforming: false,
                    witness: None,
                    divergence: Some(divergence),
                    max_candidates,
                },
                path: None,
            };
        }
        max_candidates = max_candidates.max(next.len());
        frontier = next;
    }
    let end = frontier.first().map(|(_, node)| *node);
    Validated {
        verdict: Verdict {
            events: events.len(),
            conforming: true,
            witness: end.map(|node| path(model, &nodes, node)),
            divergence: None,
            max_candidates,
        },
        path: end.map(|node| typed_path(model, &nodes, &roots, node)),
    }
}

/// The typed path to node `at`: its root's initial state, then each action applied in turn
/// (each one was enabled there when the forest grew, and `next_state` is a function).
fn typed_path<M: Conform>(
    model: &M,
    nodes: &[Node<M::Action>],
    roots: &[(usize, M::State)],
    at: usize,
) -> Path<M::State, M::Action> {
    let (root, steps) = steps(nodes, at);
    let init = roots
        .iter()
        .find(|(node, _)| *node == root)
        .map(|(_, state)| state.clone())
        .expect("every root of the forest is an initial candidate");
    let mut path = Path::new(init);
    for (action, _) in steps {
        let next = model
            .next_state(path.last_state(), action.clone())
            .expect("an action of the forest is enabled where it was taken");
        path.push(action.clone(), next);
    }
    path
}

/// The unresolved steps of a trace ([`Conform::unresolved`]), each with the index of its event:
/// silent for this trace only, and only after their event.
struct Late<A> {
    actions: Vec<(usize, A)>,
}

impl<A: PartialEq + Clone> Late<A> {
    /// The steps that may land before event `i`: those of the unresolved events before it.
    fn before(&self, i: usize) -> Landing<A> {
        Landing {
            actions: self
                .actions
                .iter()
                .filter(|(at, _)| *at < i)
                .map(|(_, a)| a.clone())
                .collect(),
        }
    }
}

/// The unresolved steps that may land at one point of the trace.
struct Landing<A> {
    actions: Vec<A>,
}

impl<A: PartialEq> Landing<A> {
    fn silent<M: Conform<Action = A>>(&self, model: &M, action: &A) -> bool {
        model.is_silent(action) || self.actions.contains(action)
    }
}

/// The states reachable by up to `bound` silent steps (the states themselves included).
fn silent_closure<M: Conform>(
    model: &M,
    frontier: Vec<(M::State, usize)>,
    nodes: &mut Vec<Node<M::Action>>,
    bound: usize,
    late: &Landing<M::Action>,
) -> Vec<(M::State, usize)> {
    let mut seen: Seen = frontier.iter().map(|(s, _)| fingerprint(s)).collect();
    let mut all = frontier;
    // The last layer added is `all[layer..]`.
    let mut layer = 0;
    let mut actions = Vec::new();
    for _ in 0..bound {
        let mut next_layer = Vec::new();
        for (state, node) in &all[layer..] {
            actions.clear();
            model.actions(state, &mut actions);
            for action in actions.drain(..) {
                if !late.silent(model, &action) {
                    continue;
                }
                if let Some(after) = model.next_state(state, action.clone()) {
                    if seen.insert(fingerprint(&after)) {
                        nodes.push(Node::step(*node, action, true));
                        next_layer.push((after, nodes.len() - 1));
                    }
                }
            }
        }
        if next_layer.is_empty() {
            break;
        }
        layer = all.len();
        all.extend(next_layer);
    }
    all
}

fn explain<M: Conform>(
    model: &M,
    event: &M::Event,
    index: usize,
    closure: &[(M::State, usize)],
    nodes: &[Node<M::Action>],
    limits: Limits,
) -> Divergence {
    let mut tried = Vec::new();
    let mut actions = Vec::new();
    for (state, _) in closure.iter().take(limits.shown_states) {
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
                .map(|(k, v)| (k.to_string(), v))
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
        prefix: closure
            .first()
            .map(|(_, n)| path(model, nodes, *n))
            .unwrap_or_default(),
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
