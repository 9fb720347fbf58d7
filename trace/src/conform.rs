//! How a model reads an implementation's events (`Conform`), and what a value past the model's
//! bounds is (`Beyond`): the one trait a model implements to judge traces.

use std::fmt;

use serde::Serialize;

use loadbearing_refinement::Spec;

use crate::wire::TraceEvent;

/// How a model reads an implementation's events: which model step an event reports, and what
/// the event observed that the step must agree with.
///
/// ```
/// use loadbearing_refinement::{Model, Spec, Variables};
/// use loadbearing_trace::{parse_ndjson, validate, Conform, Limits, TraceEvent};
/// use serde::{Deserialize, Serialize};
///
/// /// A register one client writes (0 or 1) and reads.
/// struct Register;
/// #[derive(Clone, Copy, Debug, PartialEq)]
/// enum Step {
///     Write(u8),
///     Read,
/// }
/// impl Model for Register {
///     type State = u8;
///     type Action = Step;
///     fn init_states(&self) -> Vec<u8> { vec![0] }
///     fn actions(&self, _: &u8, a: &mut Vec<Step>) {
///         a.extend([Step::Read, Step::Write(0), Step::Write(1)])
///     }
///     fn next_state(&self, v: &u8, s: Step) -> Option<u8> {
///         Some(if let Step::Write(w) = s { w } else { *v })
///     }
/// }
/// impl Spec for Register {
///     fn variables(&self, v: &u8) -> Variables { vec![("value", v.into())] }
/// }
///
/// /// The implementation's events, one a line, tagged by `action`.
/// #[derive(Clone, Debug, Serialize, Deserialize)]
/// #[serde(tag = "action")]
/// enum Event {
///     Write { value: u8 },
///     Read { value: u8 },
/// }
/// impl TraceEvent for Event {
///     const VOCABULARY: &'static str = "register";
///     fn action(&self) -> &str {
///         if let Event::Write { .. } = self { "Write" } else { "Read" }
///     }
/// }
///
/// impl Conform for Register {
///     type Event = Event;
///     type Contradiction = String;
///     fn reports(&self, step: &Step, event: &Event) -> bool {
///         match (step, event) {
///             (Step::Write(w), Event::Write { value }) => w == value,
///             (Step::Read, Event::Read { .. }) => true,
///             _ => false,
///         }
///     }
///     fn observe(&self, before: &u8, _: &u8, event: &Event) -> Result<(), String> {
///         match event {
///             Event::Read { value } if value != before => Err(format!("read {value}, held {before}")),
///             _ => Ok(()),
///         }
///     }
/// }
///
/// let trace = concat!(
///     r#"{"v":2,"vocabulary":"register","action":"Write","value":1}"#, "\n",
///     r#"{"v":2,"vocabulary":"register","action":"Read","value":0}"#, "\n",
/// );
/// let verdict = validate(&Register, &parse_ndjson::<Event>(trace).unwrap(), Limits::default());
/// assert!(!verdict.conforming); // the read saw 0 after the write of 1
/// ```
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

    /// The first value of the trace the model, as its constants build it, cannot hold (an
    /// offset past `MaxOffset`, a writer past `Writers`), with the bound it passes. A trace
    /// with one is not judged: a model that cannot hold a value would call the trace
    /// diverging, which says nothing of the implementation. `conform --trace` stops with an
    /// error naming the bound and the `--set` that lifts it (exit 2). A model whose events
    /// carry bounded values declares them here; the default declares none.
    fn beyond(&self, _events: &[Self::Event]) -> Option<Beyond> {
        None
    }
}

/// A value of a trace past what the model holds: which event, what value, and the bound.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Beyond {
    /// The event's index in the trace (0-based).
    pub event: usize,
    /// The value as people read it (`offset 7`, `writer w9`).
    pub what: String,
    pub bound: Bound,
}

/// What a value passes: a constant a `--set` lifts, or a limit of the model's representation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Bound {
    /// A knob of the model: its value, and the least that holds the trace's value (`None`
    /// when no value of the knob does: it is past the knob's own limit).
    Knob {
        name: &'static str,
        value: u64,
        needs: Option<u64>,
    },
    /// A limit of the model's representation, no knob: the most it holds.
    Fixed { what: &'static str, most: u64 },
}

impl Beyond {
    /// The same, at the event's line of a file (its index when the file's lines are not known).
    pub fn text(&self, line: usize) -> String {
        let at = format!("line {line}: {} is past what the model holds", self.what);
        match &self.bound {
            Bound::Knob {
                name,
                value,
                needs: Some(needs),
            } => format!(
                "{at} ({name} = {value}): judge it with --set {name}={needs} (a value the model cannot hold would be no verdict on the implementation)"
            ),
            Bound::Knob {
                name,
                value,
                needs: None,
            } => format!("{at} ({name} = {value}), and no value of {name} holds it"),
            Bound::Fixed { what, most } => {
                format!("{at}: the model holds at most {most} {what}, whatever its constants")
            }
        }
    }
}
