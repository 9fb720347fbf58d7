//! Why a conformance run could not be carried out. A run that was carried out and found the
//! implementation at odds with its model is not an error: that is the result's verdict.

use loadbearing_expected::suite::SuiteError;
use loadbearing_impls::flow::FlowError;
use loadbearing_impls::{ReadError, WriteError};
use loadbearing_impls_kafka::group_commit::CommitError;

use std::time::Duration;

use crate::backend_kind::BackendKind;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No target has this name.
    #[error(transparent)]
    UnknownTarget(#[from] crate::target_id::UnknownTarget),
    /// A target was asked to run on a backend it does not run on.
    #[error("{target}: runs on {} (--backend), not {backend}", names(runs_on))]
    WrongBackend {
        target: &'static str,
        runs_on: &'static [BackendKind],
        backend: BackendKind,
    },
    /// This build has no client for the backend (its Cargo feature was left out).
    #[error(
        "the {0} backend is not compiled into this build: rebuild with `--features {0}` (or `--features full`)"
    )]
    NotCompiled(BackendKind),
    /// A part of the harness that needs another backend than the one given.
    #[error("{needs}, not {backend}")]
    Unsupported {
        needs: &'static str,
        backend: BackendKind,
    },
    /// A throwaway server could not be started.
    #[error("cannot start {0}: {1}")]
    ServerStart(BackendKind, #[source] ServerError),
    /// A session, connection or topic of the implementation could not be opened.
    #[error("{what}: {reason}")]
    Open { what: &'static str, reason: String },
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A trace could not be written where `--save` said.
    #[error("saving a trace: {0}")]
    Save(std::sync::Arc<std::io::Error>),
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("{during}: {source}")]
    Flow {
        during: &'static str,
        source: FlowError,
    },
    #[error(transparent)]
    Commit(#[from] CommitError),
    #[error(transparent)]
    Suite(#[from] SuiteError),
    #[error(transparent)]
    Replays(#[from] loadbearing_expected::replays::ReplaysError),
    /// A config of the suite could not be used as asked.
    #[error("{config}: {problem}")]
    Config {
        config: String,
        problem: ConfigProblem,
    },
    /// A model step of a path the harness drives is not enabled in the model.
    #[error("step {step} {action}: not enabled in the model")]
    NotEnabled { step: usize, action: String },
    /// An implementation value the model has no reading of.
    #[error(transparent)]
    Value(#[from] ValueError),
    /// The harness could not carry the run out: the instrumentation or the harness's own
    /// assumptions, not the design, are at fault.
    #[error("the harness: {0}")]
    Harness(#[from] HarnessError),
}

/// Why a harness could not carry a run out.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// The implementation did not report a step the harness relies on.
    #[error("the implementation recorded no {0}")]
    NotRecorded(&'static str),
    /// The implementation gave a value the model has no reading of.
    #[error("{what} {value} is outside the model")]
    OutsideModel { what: &'static str, value: String },
    /// An operation of the implementation the harness needs failed.
    #[error("{during}: {reason}")]
    Failed { during: String, reason: String },
    /// What the harness waited for did not happen in time.
    #[error("{what} did not happen within {after:?}")]
    TimedOut { what: String, after: Duration },
    /// A step the harness cannot take in the state it is in.
    #[error("{step}: {why}")]
    OutOfOrder { step: String, why: &'static str },
    /// A counterexample whose schedule the harness cannot reproduce.
    #[error("a counterexample the harness cannot time: {0}")]
    CannotTime(String),
}

impl HarnessError {
    /// An operation of the implementation that failed `during` what.
    pub fn failed<E: std::fmt::Display>(during: impl Into<String>) -> impl FnOnce(E) -> Error {
        let during = during.into();
        move |reason| {
            Error::Harness(HarnessError::Failed {
                during,
                reason: reason.to_string(),
            })
        }
    }

    /// A recorded value outside the model: `what` it is, and the value.
    pub fn outside(what: &'static str, value: impl std::fmt::Debug) -> Error {
        Error::Harness(HarnessError::OutsideModel {
            what,
            value: format!("{value:?}"),
        })
    }

    pub fn not_recorded(what: &'static str) -> Error {
        Error::Harness(HarnessError::NotRecorded(what))
    }

    pub fn out_of_order(step: impl std::fmt::Debug, why: &'static str) -> Error {
        Error::Harness(HarnessError::OutOfOrder {
            step: format!("{step:?}"),
            why,
        })
    }

    pub fn timed_out(what: impl Into<String>, after: Duration) -> Error {
        Error::Harness(HarnessError::TimedOut {
            what: what.into(),
            after,
        })
    }
}

/// Why a throwaway server did not start: its launcher's error. This build's servers only (one
/// variant per server feature; none in the default build).
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error(transparent)]
    Store(#[from] loadbearing_impls::servers::StartError),
    #[cfg(feature = "kafka")]
    #[error(transparent)]
    Kafka(#[from] loadbearing_impls_kafka::harness::BrokerError),
}

/// Why a must-fail config's counterexample could not be had.
#[derive(Debug, thiserror::Error)]
pub enum ConfigProblem {
    #[error("no such config in the suite")]
    Unknown,
    #[error("a {found} config, not {wanted}")]
    WrongModel {
        found: &'static str,
        wanted: &'static str,
    },
    #[error("the check failed: {0}")]
    Check(String),
    #[error("has no counterexample")]
    NoCounterexample,
    #[error("the refinement gives no {0}")]
    NoAbstractStep(String),
    #[error("the engine cannot take the path: {0}")]
    Engine(String),
    /// No target of the replay data builds the implementation the config's broken way.
    #[error("no {family} target reproduces it, so nothing is built its broken way")]
    NoBrokenBuild { family: &'static str },
    /// The implementation has no script for the config's workload.
    #[error("no engine script for the workload {0}")]
    NoScript(String),
    /// The config's constants do not build the model asked for.
    #[error("its constants do not build the model: {0}")]
    Constants(loadbearing_specs::infra::knobs::KnobError),
}

/// An implementation value outside what the model can represent.
#[derive(Debug, thiserror::Error)]
pub enum ValueError {
    #[error("offset {0} is outside the model's range")]
    OffsetOutOfRange(u64),
    #[error("a row value line is not an offset: {0:?}")]
    NotAnOffset(String),
    /// A value that folded one record twice: the models fold sets, so only a reader that
    /// refuses the repeat can see a double fold.
    #[error("a row value folds offset {0} twice")]
    FoldedTwice(u8),
}

impl Error {
    /// A flow operation the harness needs that failed for another reason than a fence.
    pub(crate) fn flow(during: &'static str) -> impl FnOnce(FlowError) -> Error {
        move |source| Error::Flow { during, source }
    }

    pub(crate) fn config(config: &str, problem: ConfigProblem) -> Error {
        Error::Config {
            config: config.to_string(),
            problem,
        }
    }

    #[cfg_attr(
        not(any(feature = "postgres", feature = "cassandra", feature = "kafka")),
        allow(dead_code)
    )]
    pub(crate) fn open<E: std::fmt::Display>(what: &'static str) -> impl FnOnce(E) -> Error {
        move |reason| Error::Open {
            what,
            reason: reason.to_string(),
        }
    }
}

fn names(kinds: &[BackendKind]) -> String {
    kinds
        .iter()
        .map(|k| k.name())
        .collect::<Vec<_>>()
        .join(" or ")
}
