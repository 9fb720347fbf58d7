//! The models of loadbearing, by family: the TLA+ specs of the single-writer suites (kafka-flow
//! PR #828, the tower, and PR #835), their actor models, and the SSI model. A family's module
//! holds its versions, its actor model and its trace vocabulary, each model beside its
//! description (`<module>.md`, its `Configured::DOC`).
//!
//! The single-writer tower: `SingleWriterStore` at the top; `Cassandra`, `Kafka` and the rejected
//! `Epoch` refine it (or must fail to); `CasFirstWrite` refines `CasFirstWriteAtomic`;
//! `ReplayFence` and `GroupCommit` are lemmas under Cassandra and Kafka.

// The model families, each with its versions (the #828 tower's, the #835 suite's), its actor
// model and its trace vocabulary.
pub mod cassandra;
pub mod epoch;
pub mod first_write;
pub mod flows;
pub mod group_commit;
pub mod kafka;
pub mod recovery;
pub mod replay_fence;
pub mod ssi;
pub mod store;

// What the models are built from: knobs, guards, the single-writer vocabulary, the actor
// models' network and trace; and what the one-key backends (Cassandra, Kafka, Epoch) share.
pub mod infra;
pub mod one_key;

use loadbearing_refinement::Spec;

pub use infra::guard::{Guard, Setting};
use infra::knobs::{Constants, KnobError, Params, Resolved};

/// A finer model's place under a backend: the backend's step it spells out in finer grain.
///
/// ```
/// use loadbearing_specs::Under;
///
/// // A compound first write spells out the store's one compare-and-set.
/// const UNDER: &[Under] = &[Under { backend: "Cassandra", step: "the LWT write" }];
/// assert_eq!(UNDER[0].backend, "Cassandra");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Under {
    pub backend: &'static str,
    /// The backend's step, as its page names it.
    pub step: &'static str,
}

/// A model that a config can build: its name in `expected/`, its typed parameters, its guards,
/// and how the parameters make an instance.
///
/// ```
/// use loadbearing_specs::infra::knobs::{Constants, Value};
/// use loadbearing_specs::{Configured, Guard};
/// # use loadbearing_refinement::{Model, Spec, Variables};
/// # use loadbearing_specs::infra::knobs::{Flag, Nat};
/// # #[derive(Debug, PartialEq)]
/// # pub struct Register { compare: bool, max: u8 }
/// # loadbearing_specs::params! {
/// #     Register {
/// #         compare: pub const COMPARE: Flag = Flag::new("Compare", true, "a cas compares");
/// #         max: pub const MAX: Nat<u8> = Nat::new("MaxValue", 1, 255, 3, "the largest value");
/// #     }
/// # }
/// # impl Model for Register {
/// #     type State = u8;
/// #     type Action = ();
/// #     fn init_states(&self) -> Vec<u8> { vec![0] }
/// #     fn actions(&self, v: &u8, a: &mut Vec<()>) { if *v < self.max { a.push(()) } }
/// #     fn next_state(&self, v: &u8, _: ()) -> Option<u8> { Some(v + 1) }
/// # }
/// # impl Spec for Register {
/// #     fn variables(&self, v: &u8) -> Variables { vec![("value", v.into())] }
/// # }
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
/// let mut given = Constants::new();
/// given.insert("MaxValue".to_string(), Value::Nat(5));
/// assert_eq!(Register::from_constants(&given).unwrap(), Register { compare: true, max: 5 });
/// ```
pub trait Configured: Spec + 'static {
    const NAME: &'static str;
    /// The model described for people: its variables, actions with their guards and effects,
    /// fairness, properties and refinement mapping. The same markdown is the module's rustdoc
    /// and, through the registry, the prose of the model's page that `loadbearing docs` writes,
    /// so the installed binary carries it and the two cannot drift.
    const DOC: &'static str;
    /// The model's constants, typed; their knobs are `<Self::Params as Params>::KNOBS`.
    type Params: Params;
    /// The design's guards, each a switch the model already reads (a knob of `Self::Params`,
    /// which the registry checks when it compiles).
    const GUARDS: &'static [Guard] = &[];
    /// The backends whose one atomic step this finer model spells out, if it is one (the tower
    /// draws it under them). The link is a correspondence the model's page argues; no check
    /// substitutes one model into the other.
    const UNDER: &'static [Under] = &[];

    fn build(params: Self::Params) -> Self;

    /// The model that resolved constants describe.
    fn from_knobs(knobs: &Resolved) -> Result<Self, KnobError> {
        Self::Params::from_resolved(knobs).map(Self::build)
    }

    /// The model with `given` constants and defaults for the rest.
    fn from_constants(given: &Constants) -> Result<Self, KnobError> {
        Self::from_knobs(&Resolved::resolve::<Self::Params>(Self::NAME, given)?)
    }
}
