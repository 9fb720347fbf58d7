//! loadbearing: a model checker that proves each concurrency guard of a design is
//! load-bearing — the design holds with the guard, and the checker finds the shortest concrete
//! failure without it — and judges a real implementation's runs against the model.
//!
//! This is the front door for a design of your own: everything it needs, from this one crate.
//! A design is a [`Model`] (states, actions, properties) with a [`Spec`] (its variables by name,
//! its refinements and symmetries), its constants declared as knobs ([`knobs`]) and its guards
//! ([`Guard`]), so that [`Configured`] builds it from a suite file's constants. A model whose
//! implementation logs what it does reads those logs through [`Conform`] ([`conformance`]).
//! [`main_with`] is then the whole command line on it: `check`, `trace`, `mutate`,
//! `conform --trace`, `report`, `docs`, `list` (and `explore` with the feature `explorer`).
//!
//! ```toml
//! [dependencies]
//! loadbearing = { git = "…", default-features = false }
//! ```
//!
//! `default-features = false` compiles the engine, the built-in models and suites and the
//! design commands, and none of the project's implementations, harnesses, real engines, timely
//! or web servers (features `targets`, `distributed`, `explorer`, `actors`).
//! `docs/your-own-design.md` walks through a design from an empty crate.
//!
//! ```
//! use loadbearing::{Model, Property};
//!
//! /// A counter that must never pass 3: it stops there.
//! struct Counter;
//!
//! impl Model for Counter {
//!     type State = u8;
//!     type Action = ();
//!     fn init_states(&self) -> Vec<u8> {
//!         vec![0]
//!     }
//!     fn actions(&self, n: &u8, actions: &mut Vec<()>) {
//!         if *n < 3 {
//!             actions.push(());
//!         }
//!     }
//!     fn next_state(&self, n: &u8, _: ()) -> Option<u8> {
//!         Some(n + 1)
//!     }
//!     fn properties(&self) -> Vec<Property<Self>> {
//!         vec![Property::always("AtMostThree", |_, n| *n <= 3)]
//!     }
//! }
//!
//! assert_eq!(Counter.next_states(&2), vec![3]);
//! ```
#![warn(missing_docs)]

pub use loadbearing_refinement::{
    EventuallyAlways, Expectation, MappedRefinement, Model, Property, Refinement, Shown, Spec,
    Symmetry, Variables,
};
/// A model of one's own as the CLI knows it (a [`ModelEntry`]: its name, knobs, guards, and the
/// check, explorer and drawings instantiated for its types), made by [`model_entry`] and handed
/// to [`main_with`] in a [`Design`].
///
/// ```
/// use loadbearing::knobs::{Constants, Nat};
/// use loadbearing::{model_entry, Configured, Model, Property, Spec, Variables};
///
/// #[derive(Clone, Debug, PartialEq)]
/// struct Counter {
///     max: u8,
/// }
/// loadbearing::knobs::params! {
///     Counter {
///         max: const MAX: Nat<u8> = Nat::new("Max", 1, 9, 3, "where the counter stops");
///     }
/// }
/// impl Model for Counter {
///     type State = u8;
///     type Action = ();
///     fn init_states(&self) -> Vec<u8> { vec![0] }
///     fn actions(&self, n: &u8, a: &mut Vec<()>) { if *n < self.max { a.push(()) } }
///     fn next_state(&self, n: &u8, _: ()) -> Option<u8> { Some(n + 1) }
///     fn properties(&self) -> Vec<Property<Self>> {
///         vec![Property::always("Bounded", |m: &Counter, n: &u8| *n <= m.max)]
///     }
/// }
/// impl Spec for Counter {
///     fn variables(&self, n: &u8) -> Variables { vec![("n", n.into())] }
/// }
/// impl Configured for Counter {
///     const NAME: &'static str = "Counter";
///     const DOC: &'static str = "A counter up to Max.";
///     type Params = Counter;
///     fn build(params: Counter) -> Self { params }
/// }
///
/// let entry = model_entry::<Counter>();
/// assert_eq!(entry.name, "Counter");
/// let constants = (entry.resolve)(&Constants::new()).unwrap(); // Max = 3, its default
/// assert_eq!((entry.properties)(&constants), vec!["Bounded".to_string()]);
/// ```
pub use loadbearing_registry::{model_entry, ModelEntry};
pub use loadbearing_specs::{Configured, Guard, Under};

pub use cli::{main_with, Design};
pub use loadbearing_trace::Conform;

/// A design's constants: each a knob with a name, a meaning and a range, read from a suite
/// file or `--set NAME=VALUE`, and the parameters a model is built from. A knob is declared
/// once, beside the field it sets: [`params!`](knobs::params) makes it an associated constant
/// of the model (what a guard names) and implements [`Params`](knobs::Params) from the knobs;
/// [`Configured`] names the model and its guards:
///
/// ```
/// use loadbearing::knobs::{Constants, Flag, Nat, Value};
/// use loadbearing::{Configured, Guard, Model, Property, Spec, Variables};
///
/// /// A register counted up to `max`; without `compare`, a stale cas loses an increment.
/// #[derive(Clone, Debug, PartialEq)]
/// struct Register {
///     compare: bool,
///     max: u8,
/// }
///
/// loadbearing::knobs::params! {
///     Register {
///         compare: const COMPARE: Flag = Flag::new("Compare", true, "a cas compares first");
///         // name in suites, least, most, default, meaning
///         max: const MAX: Nat<u8> = Nat::new("MaxValue", 1, 255, 3, "the largest value held");
///     }
/// }
///
/// impl Model for Register {
///     type State = u8;
///     type Action = ();
///     fn init_states(&self) -> Vec<u8> {
///         vec![0]
///     }
///     fn actions(&self, v: &u8, actions: &mut Vec<()>) {
///         if *v < self.max {
///             actions.push(());
///         }
///     }
///     fn next_state(&self, v: &u8, _: ()) -> Option<u8> {
///         Some(v + 1)
///     }
///     fn properties(&self) -> Vec<Property<Self>> {
///         vec![Property::always("Bounded", |m: &Register, v: &u8| *v <= m.max)]
///     }
/// }
///
/// impl Spec for Register {
///     fn variables(&self, v: &u8) -> Variables {
///         vec![("value", v.into())]
///     }
/// }
///
/// impl Configured for Register {
///     const NAME: &'static str = "Register";
///     const DOC: &'static str = "A register counted up to MaxValue.";
///     type Params = Register;
///     const GUARDS: &'static [Guard] = &[Guard::off("the cas compares", Self::COMPARE)];
///     fn build(params: Register) -> Self {
///         params
///     }
/// }
///
/// // What a suite's `constants = { MaxValue = 5 }` builds; the rest take their defaults.
/// let mut given = Constants::new();
/// given.insert("MaxValue".to_string(), Value::Nat(5));
/// assert_eq!(Register::from_constants(&given).unwrap(), Register { compare: true, max: 5 });
/// // A value outside the knob's range is an error naming it, never another model.
/// given.insert("MaxValue".to_string(), Value::Nat(300));
/// assert!(Register::from_constants(&given).unwrap_err().to_string().contains("MaxValue"));
/// ```
pub mod knobs {
    pub use loadbearing_specs::infra::knobs::{
        Constants, Flag, Kind, Knob, KnobError, Nat, Params, Resolved, Value,
    };
    pub use loadbearing_specs::params;
}

/// Checking a model from code, as `check` does: [`check`](fn@engine::check) explores every
/// reachable state and returns a typed report; a long check tells a
/// [`Reporter`](engine::Reporter) you supply how it goes (the engine itself writes nothing):
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::time::Duration;
///
/// use loadbearing::engine::{check, CheckSpec, Options, Outcome, Reporter, Reporting, Tick};
/// use loadbearing::{Model, Property, Spec, Variables};
///
/// /// A counter that stops at 50,000 and must never pass it.
/// struct Counter;
/// impl Model for Counter {
///     type State = u32;
///     type Action = ();
///     fn init_states(&self) -> Vec<u32> {
///         vec![0]
///     }
///     fn actions(&self, n: &u32, actions: &mut Vec<()>) {
///         if *n < 50_000 {
///             actions.push(());
///         }
///     }
///     fn next_state(&self, n: &u32, _: ()) -> Option<u32> {
///         Some(n + 1)
///     }
///     fn properties(&self) -> Vec<Property<Self>> {
///         vec![Property::always("Bounded", |_, n: &u32| *n <= 50_000)]
///     }
/// }
/// impl Spec for Counter {
///     fn variables(&self, n: &u32) -> Variables {
///         vec![("n", n.into())]
///     }
/// }
///
/// /// Keeps the largest state count it was told.
/// struct Largest(AtomicU64);
/// impl Reporter for Largest {
///     fn interval(&self) -> Duration {
///         Duration::ZERO
///     }
///     fn progress(&self, tick: &Tick<'_>) {
///         self.0.fetch_max(tick.states, Ordering::Relaxed);
///     }
/// }
///
/// let largest = std::sync::Arc::new(Largest(AtomicU64::new(0)));
/// let options = Options {
///     progress: Some(Reporting(largest.clone())),
///     ..Options::default()
/// };
/// let spec = CheckSpec {
///     properties: vec!["Bounded".into()],
///     fair: false,
///     allow_end_states: true,
///     symmetry: vec![],
/// };
/// let report = check(&Counter, &spec, &options).unwrap();
/// assert_eq!(report.outcome, Outcome::Holds);
/// assert_eq!(report.distinct_states, 50_001);
/// assert!(largest.0.load(Ordering::Relaxed) > 0);
/// ```
pub mod engine {
    pub use loadbearing_refinement::progress::{Reporter, Reporting, Tick};
    pub use loadbearing_refinement::{check, CheckSpec, Options, Outcome, Report, ReportOf};
}

/// Judging an implementation's runs against the model: its vocabulary of events
/// ([`TraceEvent`](conformance::TraceEvent)), how the model reads them
/// ([`Conform`]), traces as sequences or histories with call and return
/// times, the values a model cannot hold ([`Beyond`](conformance::Beyond)), and the judge
/// (`conform --trace FILE --model YourModel` runs [`judge`](conformance::judge) through
/// [`conformance_entry`](conformance::conformance_entry)).
///
/// ```
/// use loadbearing::conformance::{judge, read_trace, Conform, Decision, TraceEvent, TraceOptions};
/// use loadbearing::{Model, Property, Spec, Variables};
/// use serde::{Deserialize, Serialize};
///
/// /// A register written and read by one client.
/// struct Register;
/// #[derive(Clone, Copy, Debug, PartialEq)]
/// enum Step {
///     Write(u8),
///     Read,
/// }
/// impl Model for Register {
///     type State = u8;
///     type Action = Step;
///     fn init_states(&self) -> Vec<u8> {
///         vec![0]
///     }
///     fn actions(&self, _: &u8, actions: &mut Vec<Step>) {
///         actions.extend([Step::Read, Step::Write(0), Step::Write(1)]);
///     }
///     fn next_state(&self, v: &u8, step: Step) -> Option<u8> {
///         Some(match step {
///             Step::Write(w) => w,
///             Step::Read => *v,
///         })
///     }
///     fn properties(&self) -> Vec<Property<Self>> {
///         vec![]
///     }
/// }
/// impl Spec for Register {
///     fn variables(&self, v: &u8) -> Variables {
///         vec![("value", v.into())]
///     }
/// }
///
/// /// The implementation's vocabulary: one event a line, tagged by `action`.
/// #[derive(Clone, Debug, Serialize, Deserialize)]
/// #[serde(tag = "action")]
/// enum Event {
///     Write { value: u8 },
///     Read { value: u8 },
/// }
/// impl TraceEvent for Event {
///     const VOCABULARY: &'static str = "register";
///     fn action(&self) -> &str {
///         match self {
///             Event::Write { .. } => "Write",
///             Event::Read { .. } => "Read",
///         }
///     }
/// }
///
/// impl Conform for Register {
///     type Event = Event;
///     type Contradiction = String;
///     fn reports(&self, step: &Step, event: &Event) -> bool {
///         matches!((step, event), (Step::Read, Event::Read { .. }))
///             || matches!((step, event), (Step::Write(w), Event::Write { value }) if w == value)
///     }
///     fn observe(&self, before: &u8, _: &u8, event: &Event) -> Result<(), String> {
///         match event {
///             Event::Read { value } if value != before => {
///                 Err(format!("read {value}, the register holds {before}"))
///             }
///             _ => Ok(()),
///         }
///     }
/// }
///
/// let options = TraceOptions::default();
/// // A history: two clients' operations with call and return times; the read overlaps the
/// // write, so it may see either value.
/// let history = concat!(
///     r#"{"v":2,"vocabulary":"register","call":0,"ret":3,"action":"Write","value":1}"#, "\n",
///     r#"{"v":2,"vocabulary":"register","call":1,"ret":2,"action":"Read","value":1}"#, "\n",
/// );
/// let report = judge(&Register, read_trace(history, &options).unwrap(), &options).unwrap();
/// assert_eq!(report.decision(), Decision::Conforms);
///
/// // Read after the write returned: 0 is no longer possible.
/// let stale = concat!(
///     r#"{"v":2,"vocabulary":"register","call":0,"ret":1,"action":"Write","value":1}"#, "\n",
///     r#"{"v":2,"vocabulary":"register","call":2,"ret":3,"action":"Read","value":0}"#, "\n",
/// );
/// let report = judge(&Register, read_trace(stale, &options).unwrap(), &options).unwrap();
/// assert_eq!(report.decision(), Decision::Diverges);
///
/// // A field the vocabulary does not read is refused, naming it (no `deny_unknown_fields`).
/// let extra = r#"{"v":2,"vocabulary":"register","action":"Read","value":0,"vlaue":1}"#;
/// let error = read_trace::<Event>(extra, &options).unwrap_err();
/// assert!(error.to_string().contains("unknown field `vlaue`"), "{error}");
/// ```
pub mod conformance {
    pub use loadbearing_registry::trace::TraceProblem;
    pub use loadbearing_registry::{conformance_entry, ConformEntry};
    pub use loadbearing_trace::{
        check_history, search_history, Budget, HistoryOutcome, HistoryVerdict, NotLinearizable,
        PartName, PartOrder, Placed, Progress, Refused, Sequential, Spent,
    };
    pub use loadbearing_trace::{
        judge, judge_history, read_trace, BeyondAt, Decision, Judgement, Legend, TraceOptions,
        TraceReport,
    };
    pub use loadbearing_trace::{
        parse_trace, to_history_ndjson, to_ndjson, Beyond, Bound, Conform, Key, Limits, LineError,
        Timed, Trace, TraceError, TraceEvent, Verdict,
    };
}

// The command line's own modules: what `main_with` runs. Public for the project's tests and
// benchmarks, not part of the front door.
#[doc(hidden)]
pub mod bench;
#[cfg(feature = "targets")]
#[doc(hidden)]
pub mod bench_engines;
#[doc(hidden)]
pub mod bench_histories;
#[doc(hidden)]
pub mod cli;
#[cfg(feature = "targets")]
#[doc(hidden)]
pub mod conform_table;
#[doc(hidden)]
pub mod docs;
#[doc(hidden)]
pub mod explore;
#[doc(hidden)]
pub mod histories;
#[cfg(feature = "targets")]
#[doc(hidden)]
pub mod isolation;
#[doc(hidden)]
pub mod junit;
#[doc(hidden)]
pub mod mutate;
#[doc(hidden)]
pub mod oracle;
#[doc(hidden)]
pub mod render;
#[doc(hidden)]
pub mod report;
#[cfg(feature = "actors")]
#[doc(hidden)]
pub mod run_actors;
#[doc(hidden)]
pub mod sequence;
#[doc(hidden)]
pub mod tlc;
#[doc(hidden)]
pub mod trace;
#[doc(hidden)]
pub mod verdict;
#[cfg(feature = "targets")]
#[doc(hidden)]
pub mod workload;

#[doc(hidden)]
pub use verdict::Verdict;
