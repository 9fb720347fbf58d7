//! Bad input, of every subcommand: what `main` reports as `error: …` before it exits 2. The
//! library modules' errors are carried as they are (their messages are the ones people read);
//! the rest is what only the command line can get wrong.

use std::path::PathBuf;

use crate::bench::BenchError;
use crate::docs::DocsError;
use crate::explore::ExploreError;
#[cfg(feature = "targets")]
use crate::isolation::IsolationError;
use crate::mutate::MutateError;
use crate::report::ReportError;
#[cfg(feature = "actors")]
use crate::run_actors::RunActorsError;
use crate::trace::{DrawError, SvgError, TraceError};
#[cfg(feature = "targets")]
use crate::workload::WorkloadError;
#[cfg(feature = "targets")]
use loadbearing_conform as conform;
use loadbearing_expected::suite::{LookupError, SetError, SuiteError};
#[cfg(feature = "distributed")]
use loadbearing_refinement::distributed::ClusterError;
use loadbearing_registry::trace::TraceProblem as TraceFileError;
use loadbearing_specs::infra::knobs::KnobError;

#[derive(Debug, thiserror::Error)]
pub enum BadInput {
    /// `check`'s or `mutate`'s filters select nothing.
    #[error("no config matches {filters:?}; `loadbearing list` shows them")]
    NoConfigMatches { filters: Vec<String> },
    /// A `--set` that does not apply to this config.
    #[error("{config}: {source}")]
    Override { config: String, source: SetError },
    /// Every config selected for a distributed run is one it cannot check (each named above).
    #[error("no selected config can be checked distributed (see above)")]
    NothingDistributable,
    #[error("--writers {0}: the models hold 1 to 8 writers")]
    Writers(usize),
    /// `conform --trace FILE --model NAME`: NAME is neither a config nor a model.
    #[error(
        "`{name}` is neither a config (`loadbearing list` names them) nor a model that reads implementation traces ({})",
        known.join(", ")
    )]
    NotAConformanceModel {
        name: String,
        known: Vec<&'static str>,
    },
    /// `conform --trace FILE --model CONFIG`: the config's model reads no implementation trace.
    #[error(
        "`{config}` is a config of {model}, which reads no implementation traces; the models that do: {} (or a config of one of them)",
        known.join(", ")
    )]
    ConfigReadsNoTraces {
        config: String,
        model: String,
        known: Vec<&'static str>,
    },
    /// `conform --trace FILE`: the file holds no event.
    #[error("{}: the file holds no event (an empty trace conforms to nothing: write the implementation's events, one JSON object a line; docs/trace-format.md)", path.display())]
    EmptyTrace { path: PathBuf },
    #[error("{}: {source}", path.display())]
    TraceFileUnreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A trace file that is not one of the model's traces (a malformed line, named).
    #[error("{}: {source}", path.display())]
    TraceFile {
        path: PathBuf,
        source: TraceFileError,
    },
    #[error(transparent)]
    Suite(#[from] SuiteError),
    #[error(transparent)]
    Lookup(#[from] LookupError),
    #[error(transparent)]
    Set(#[from] SetError),
    #[error(transparent)]
    Constants(#[from] KnobError),
    #[cfg(feature = "distributed")]
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[cfg(feature = "targets")]
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    #[cfg(feature = "targets")]
    #[error(transparent)]
    Conform(#[from] conform::Error),
    #[error(transparent)]
    Mutate(#[from] MutateError),
    #[error(transparent)]
    Trace(#[from] TraceError),
    #[error(transparent)]
    Draw(#[from] DrawError),
    #[error(transparent)]
    Svg(#[from] SvgError),
    #[error(transparent)]
    Explore(#[from] ExploreError),
    #[error(transparent)]
    Docs(#[from] DocsError),
    #[error(transparent)]
    Report(#[from] ReportError),
    #[cfg(feature = "targets")]
    #[error(transparent)]
    Isolation(#[from] IsolationError),
    #[cfg(feature = "actors")]
    #[error(transparent)]
    RunActors(#[from] RunActorsError),
    /// A command or option of a feature this build was made without.
    #[error("{what} needs loadbearing built with the feature `{feature}` (cargo build --features {feature}, or the default features)")]
    NotBuiltIn {
        what: &'static str,
        feature: &'static str,
    },
    #[error(transparent)]
    Bench(#[from] BenchError),
    #[error(transparent)]
    HistoryBench(#[from] crate::bench_histories::HistoryBenchError),
}
