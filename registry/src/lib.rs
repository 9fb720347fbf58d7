//! Every configurable model by name, behind one object-safe face, so a config file can name a
//! model and the CLI can check it without knowing its types.
//!
//! This is where the engine meets every model: each entry instantiates the checker, the
//! explorer, the distributed engine and the trace validator for its model's types. It is a
//! crate of its own, apart from the models, so that this one expensive instantiation is compiled
//! once: the models' own unit tests (`loadbearing-specs`) do not compile it again, and its tests
//! live with the CLI's (`tests/it/registry.rs`), which link this library as it is built.

use std::fmt;
use std::sync::{Arc, LazyLock};

pub mod trace;

use loadbearing_trace::{judge, read_trace, TraceOptions, TraceReport};
use trace::{judge_atomic, judge_fitted, FitsFirstWrites, TraceProblem};

use loadbearing_refinement::check::{property_names, temporal_property_names};
#[cfg(feature = "distributed")]
use loadbearing_refinement::distributed::{self, Worker};
use loadbearing_refinement::view::{view, View};
use loadbearing_refinement::{check, erase, AnyReport, CheckSpec, Options, SpecError};
use serde::de::DeserializeOwned;
use serde::Serialize;

#[cfg(feature = "actors")]
use loadbearing_specs::cassandra::actors::CassandraActors;
use loadbearing_specs::cassandra::model::Cassandra;
use loadbearing_specs::cassandra::model_835::Cassandra835;
#[cfg(feature = "actors")]
use loadbearing_specs::epoch::actors::EpochActors;
use loadbearing_specs::epoch::model::Epoch;
use loadbearing_specs::first_write::atomic::CasFirstWriteAtomic;
use loadbearing_specs::first_write::compound::CasFirstWrite;
use loadbearing_specs::first_write::trace::FirstWriteEvent;
use loadbearing_specs::flows::alive::FlowsAlive;
use loadbearing_specs::flows::flush_cell::FlushCell;
use loadbearing_specs::flows::token_sync::TokenSync;
#[cfg(feature = "actors")]
use loadbearing_specs::group_commit::actors::GroupCommitActors;
use loadbearing_specs::group_commit::lanes::GroupCommitLanes;
use loadbearing_specs::group_commit::model::GroupCommit;
use loadbearing_specs::infra::guard::check_guards;
use loadbearing_specs::infra::knobs::{Constants, Knob, KnobError, Params, Resolved};
#[cfg(feature = "actors")]
use loadbearing_specs::kafka::actors::KafkaActors;
use loadbearing_specs::kafka::model::Kafka;
use loadbearing_specs::kafka::model_835::Kafka835;
use loadbearing_specs::recovery::deadline::RecoveryDeadline;
use loadbearing_specs::recovery::read::RecoveryRead;
use loadbearing_specs::recovery::read_atomic::RecoveryReadAtomic;
use loadbearing_specs::replay_fence::model::ReplayFence;
#[cfg(feature = "actors")]
use loadbearing_specs::ssi::actors::SsiActors;
use loadbearing_specs::ssi::Ssi;
use loadbearing_specs::store::model::SingleWriterStore;
use loadbearing_specs::{Configured, Guard, Under};
use loadbearing_trace::Conform;

/// Checks constants against a model's knobs and builds its parameters from them: the one place
/// a bad `--set` or suite value becomes an error.
pub type Resolve = fn(&Constants) -> Result<Resolved, KnobError>;

/// Checks the model a config's constants build, behind the registry's one face.
pub type CheckFn = fn(&Resolved, &CheckSpec, &Options) -> Result<Box<dyn AnyReport>, SpecError>;

/// Checks the model a config's constants build on one worker of a distributed run (every
/// worker of the run makes the same call), for models whose states can travel between
/// processes.
#[cfg(feature = "distributed")]
pub type DistributedFn =
    fn(&mut Worker, &Resolved, &CheckSpec, &Options) -> Result<Box<dyn AnyReport>, SpecError>;

#[derive(Clone)]
pub struct ModelEntry {
    pub name: &'static str,
    /// The model's description (`Configured::DOC`), compiled in.
    pub doc: &'static str,
    pub knobs: &'static [Knob],
    pub guards: &'static [Guard],
    /// The backends whose atomic step this model spells out (`Configured::UNDER`).
    pub under: &'static [Under],
    pub resolve: Resolve,
    /// Checks the model the constants build; the report hides the model's types (a caller
    /// that knows them takes the typed report back with `typed`).
    pub check: CheckFn,
    /// The distributed check, when the model's states can be sent between processes (not the
    /// actor models: Stateright's actor states cannot be read back).
    #[cfg(feature = "distributed")]
    pub distributed: Option<DistributedFn>,
    pub properties: fn(&Resolved) -> Vec<String>,
    /// The temporal ones among them, which the distributed engine refuses.
    pub temporal: fn(&Resolved) -> Vec<String>,
    pub fairness: fn(&Resolved) -> Vec<String>,
    /// The model for people: Stateright's explorer, explorer paths, the state graph.
    pub view: fn(&Resolved, &CheckSpec) -> Box<dyn View>,
}

/// A model's entry as a validated config's debug output shows it: its name.
impl fmt::Debug for ModelEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelEntry")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The model that constants made by its own [`ModelEntry::resolve`] describe. That already built
/// its parameters from them once, so building it again cannot fail.
fn model<M: Configured>(knobs: &Resolved) -> M {
    M::from_knobs(knobs).expect("constants this model resolved build it")
}

fn resolve<M: Configured>(given: &Constants) -> Result<Resolved, KnobError> {
    Resolved::resolve::<M::Params>(M::NAME, given)
}

/// A model's entry: what a config naming it is checked, explored and drawn with. For a model of
/// your own crate, handed to [`install`] (or `loadbearing::cli::Design`).
pub fn model_entry<M: Configured>() -> ModelEntry {
    entry::<M>()
}

fn entry<M: Configured>() -> ModelEntry {
    // Every guard names a knob the model declares, with its kind: a compile-time error otherwise.
    const { check_guards(<M::Params as Params>::KNOBS, M::GUARDS) };
    ModelEntry {
        name: M::NAME,
        doc: M::DOC,
        knobs: <M::Params as Params>::KNOBS,
        guards: M::GUARDS,
        under: M::UNDER,
        resolve: resolve::<M>,
        check: |knobs, spec, options| {
            let model = Arc::new(model::<M>(knobs));
            let report = check(model.as_ref(), spec, options)?;
            Ok(erase(model, report))
        },
        #[cfg(feature = "distributed")]
        distributed: None,
        properties: |knobs| property_names(&model::<M>(knobs)),
        temporal: |knobs| temporal_property_names(&model::<M>(knobs)),
        fairness: |knobs| model::<M>(knobs).fairness_groups(),
        view: |knobs, spec| view(model::<M>(knobs), spec),
    }
}

/// `entry`, for a model whose states serialize: it can also be checked distributed.
fn shardable<M>() -> ModelEntry
where
    M: Configured,
    M::State: Serialize + DeserializeOwned,
{
    ModelEntry {
        #[cfg(feature = "distributed")]
        distributed: Some(|worker, knobs, spec, options| {
            let model = Arc::new(model::<M>(knobs));
            let report = distributed::check_on(worker, model.as_ref(), spec, options)?;
            Ok(erase(model, report))
        }),
        ..entry::<M>()
    }
}

/// Models and trace readers of a design outside this crate, given by [`install`] before the
/// registry is first read.
static INSTALLED: std::sync::OnceLock<(Vec<ModelEntry>, Vec<ConformEntry>)> =
    std::sync::OnceLock::new();

/// Whether the registry has been read (after which [`install`] is too late).
static READ: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Why [`install`] refused.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error(
        "the registry was read before the design's models were installed: install them first, once"
    )]
    TooLate,
    #[error("a design's models were installed already")]
    Twice,
    #[error("the design's model `{0}` has the name of another model: give it its own")]
    NameTaken(&'static str),
}

/// Adds a design's own models (and those of them that read implementation traces) to the
/// built-in ones, before the registry is first read; then builds the registry, each name once.
/// `loadbearing::cli::main_with` calls it with a design's models; a crate of your own can too.
///
/// ```
/// use loadbearing_refinement::{Spec, Variables};
/// use loadbearing_specs::infra::knobs::{Knob, KnobError, Params, Resolved};
/// use loadbearing_specs::Configured;
/// use loadbearing_refinement::{Model, Property};
///
/// /// A counter that stops at 3.
/// #[derive(Clone, Debug)]
/// struct Ticker;
///
/// impl Model for Ticker {
///     type State = u8;
///     type Action = ();
///     fn init_states(&self) -> Vec<u8> {
///         vec![0]
///     }
///     fn actions(&self, s: &u8, actions: &mut Vec<()>) {
///         if *s < 3 {
///             actions.push(());
///         }
///     }
///     fn next_state(&self, s: &u8, _: ()) -> Option<u8> {
///         Some(s + 1)
///     }
///     fn properties(&self) -> Vec<Property<Self>> {
///         vec![Property::always("AtMostThree", |_, s: &u8| *s <= 3)]
///     }
/// }
///
/// impl Spec for Ticker {
///     fn variables(&self, s: &u8) -> Variables {
///         vec![("n", s.into())]
///     }
/// }
///
/// impl Params for Ticker {
///     const KNOBS: &'static [Knob] = &[];
///     fn from_resolved(_: &Resolved) -> Result<Self, KnobError> {
///         Ok(Ticker)
///     }
/// }
///
/// impl Configured for Ticker {
///     const NAME: &'static str = "Ticker";
///     const DOC: &'static str = "A counter that stops at 3.";
///     type Params = Ticker;
///     fn build(params: Ticker) -> Self {
///         params
///     }
/// }
///
/// use loadbearing_registry::{find, install, model_entry};
/// install(vec![model_entry::<Ticker>()], vec![]).unwrap();
/// let ticker = find("Ticker").expect("installed beside the built-in models");
/// assert_eq!(ticker.doc, "A counter that stops at 3.");
/// assert!(find("Cassandra").is_some());
/// // Once read, the registry takes no more models.
/// assert!(install(vec![], vec![]).is_err());
/// ```
pub fn install(
    models: Vec<ModelEntry>,
    conformance: Vec<ConformEntry>,
) -> Result<(), InstallError> {
    if READ.load(std::sync::atomic::Ordering::SeqCst) {
        return Err(InstallError::TooLate);
    }
    INSTALLED
        .set((models, conformance))
        .map_err(|_| InstallError::Twice)?;
    // Each name once among all models (built in and installed): building the registry here
    // is its first read.
    let mut seen = std::collections::HashSet::new();
    match self::models().iter().find(|m| !seen.insert(m.name)) {
        Some(taken) => Err(InstallError::NameTaken(taken.name)),
        None => Ok(()),
    }
}

/// The design's installed entries, taken once by the registry's first read.
fn installed_models() -> Vec<ModelEntry> {
    READ.store(true, std::sync::atomic::Ordering::SeqCst);
    INSTALLED
        .get()
        .map(|(models, _)| models.clone())
        .unwrap_or_default()
}

/// The models a config may name, built once: the built-in ones, then a design's installed
/// ones. CasFirstWriteAtomic is a refinement target only.
static MODELS: LazyLock<Vec<ModelEntry>> = LazyLock::new(|| {
    let mut models = vec![
        shardable::<SingleWriterStore>(),
        shardable::<Cassandra>(),
        shardable::<Kafka>(),
        shardable::<Epoch>(),
        shardable::<CasFirstWrite>(),
        shardable::<ReplayFence>(),
        shardable::<GroupCommit>(),
        shardable::<Ssi>(),
        #[cfg(feature = "actors")]
        entry::<CassandraActors>(),
        #[cfg(feature = "actors")]
        entry::<KafkaActors>(),
        #[cfg(feature = "actors")]
        entry::<EpochActors>(),
        #[cfg(feature = "actors")]
        entry::<GroupCommitActors>(),
        #[cfg(feature = "actors")]
        entry::<SsiActors>(),
        // The #835 suite's models with no counterpart in the tower.
        shardable::<FlowsAlive>(),
        shardable::<FlushCell>(),
        shardable::<RecoveryDeadline>(),
        shardable::<TokenSync>(),
        shardable::<GroupCommitLanes>(),
        shardable::<RecoveryReadAtomic>(),
        shardable::<RecoveryRead>(),
        shardable::<Cassandra835>(),
        shardable::<Kafka835>(),
    ];
    models.extend(installed_models());
    models
});

/// The models a config may name, in the registry's order.
pub fn models() -> &'static [ModelEntry] {
    &MODELS
}

/// Reads an NDJSON trace in the model's vocabulary, a sequence or a history, and judges it
/// against the model built from constants, for the models that read implementation events. A
/// malformed line (another vocabulary, an unknown action, a missing field, a wrong version, a
/// bad time) or a value the model cannot hold is an error naming it.
pub type ConformFn = fn(&Resolved, &str, &TraceOptions) -> Result<TraceReport, TraceProblem>;

/// A model an implementation trace can be checked against, with its constants.
#[derive(Clone)]
pub struct ConformEntry {
    pub name: &'static str,
    /// Checks constants against the model's knobs.
    pub resolve: Resolve,
    /// Reads a trace and judges it against the model the constants build.
    pub conform: ConformFn,
}

/// A model's entry with the validator `conform` (a non-capturing closure over its types).
fn trace_entry<M: Configured>(conform: ConformFn) -> ConformEntry {
    ConformEntry {
        name: M::NAME,
        resolve: resolve::<M>,
        conform,
    }
}

/// A model's trace reader: implementation traces in its vocabulary (`M::Event`) judged against
/// it. For a model of your own crate, handed to [`install`].
pub fn conformance_entry<M: Configured + Conform>() -> ConformEntry
where
    M::State: Eq,
{
    conform_entry::<M>()
}

fn conform_entry<M: Configured + Conform>() -> ConformEntry
where
    M::State: Eq,
{
    trace_entry::<M>(|knobs, ndjson, options| {
        let trace = read_trace::<M::Event>(ndjson, options)?;
        Ok(judge(&model::<M>(knobs), trace, options)?)
    })
}

/// A first-write model: its writers and offsets come from the trace (a real store's offsets by
/// rank, a model writer per write), whatever the constants say.
fn fitted_entry<M: Configured + FitsFirstWrites>() -> ConformEntry
where
    M::State: Eq,
{
    trace_entry::<M>(|knobs, ndjson, options| {
        let trace = read_trace::<M::Event>(ndjson, options)?;
        judge_fitted(model::<M>(knobs), trace, options)
    })
}

/// CasFirstWriteAtomic: a history is judged on each key's row (`judge_atomic`), a sequence
/// fitted as the compound's.
fn atomic_entry() -> ConformEntry {
    trace_entry::<CasFirstWriteAtomic>(|knobs, ndjson, options| {
        let trace = read_trace::<FirstWriteEvent>(ndjson, options)?;
        Ok(judge_atomic(
            model::<CasFirstWriteAtomic>(knobs),
            trace,
            options,
        )?)
    })
}

/// The one list of models that read implementation traces (in `models()` order, then the
/// refinement-only CasFirstWriteAtomic), built once.
static CONFORMANCE: LazyLock<Vec<ConformEntry>> = LazyLock::new(|| {
    READ.store(true, std::sync::atomic::Ordering::SeqCst);
    let mut entries = vec![
        conform_entry::<Cassandra>(),
        conform_entry::<Kafka>(),
        conform_entry::<Epoch>(),
        fitted_entry::<CasFirstWrite>(),
        conform_entry::<ReplayFence>(),
        conform_entry::<GroupCommit>(),
        conform_entry::<Ssi>(),
        conform_entry::<FlowsAlive>(),
        conform_entry::<FlushCell>(),
        conform_entry::<RecoveryDeadline>(),
        conform_entry::<TokenSync>(),
        conform_entry::<GroupCommitLanes>(),
        conform_entry::<RecoveryRead>(),
        conform_entry::<Cassandra835>(),
        #[cfg(feature = "actors")]
        conform_entry::<CassandraActors>(),
        #[cfg(feature = "actors")]
        conform_entry::<KafkaActors>(),
        #[cfg(feature = "actors")]
        conform_entry::<EpochActors>(),
        #[cfg(feature = "actors")]
        conform_entry::<GroupCommitActors>(),
        #[cfg(feature = "actors")]
        conform_entry::<SsiActors>(),
        atomic_entry(),
    ];
    entries.extend(INSTALLED.get().map(|(_, c)| c.clone()).unwrap_or_default());
    entries
});

/// The model an implementation trace can be checked against by this name: how to resolve its
/// constants, and the validator.
pub fn conformance(name: &str) -> Option<&'static ConformEntry> {
    CONFORMANCE.iter().find(|e| e.name == name)
}

/// The models that read implementation traces.
pub fn conformance_models() -> Vec<&'static str> {
    CONFORMANCE.iter().map(|e| e.name).collect()
}

/// The model a config may name by this name.
pub fn find(name: &str) -> Option<&'static ModelEntry> {
    models().iter().find(|m| m.name == name)
}

/// The description of a model no config names, which is only the abstract side of a
/// refinement (CasFirstWriteAtomic): it has no page of its own, so the page of the model that
/// refines it carries it.
pub fn refinement_target_doc(name: &str) -> Option<&'static str> {
    [(CasFirstWriteAtomic::NAME, CasFirstWriteAtomic::DOC)]
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, doc)| doc)
}
