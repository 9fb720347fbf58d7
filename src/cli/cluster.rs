//! `check --distributed`: where this process stands in a distributed run (docs/distributed.md),
//! and the selected configs checked on its timely workers.

use std::path::PathBuf;

use crate::Verdict;
use loadbearing_expected::suite::Config;
use loadbearing_refinement::Options;

use super::format::ResultFormat;
use super::BadInput;

/// Where this process stands in a distributed run (docs/distributed.md).
#[derive(clap::Args)]
pub struct ClusterArgs {
    /// Check on timely dataflow workers, states sharded over them: safety and refinement
    /// only. Every process of the run is started with the same configs and options.
    #[arg(long)]
    pub distributed: bool,
    /// With --distributed: worker threads in each process.
    #[arg(short = 'w', long, default_value_t = 1, requires = "distributed")]
    workers: usize,
    /// With --distributed: processes in the run.
    #[arg(short = 'n', long, default_value_t = 1, requires = "distributed")]
    processes: usize,
    /// With --distributed: this process's number, from 0; process 0 prints the report.
    #[arg(short = 'p', long, default_value_t = 0, requires = "distributed")]
    process: usize,
    /// With --distributed: each process's host:port, one a line, process 0 first (default:
    /// 127.0.0.1 from port 2101 up).
    #[arg(long, requires = "distributed")]
    hostfile: Option<PathBuf>,
}

/// Runs the configs of a distributed run on this process's workers, once every process has
/// connected. Configs it cannot check (temporal properties, actor models) are named first and
/// make the run's verdict bad input; the others are checked.
#[cfg(not(feature = "distributed"))]
pub fn check_distributed(
    _: Vec<Config>,
    _: &Options,
    _: ResultFormat,
    _: &ClusterArgs,
) -> Result<Verdict, BadInput> {
    Err(BadInput::NotBuiltIn {
        what: "check --distributed",
        feature: "distributed",
    })
}

/// Runs the configs of a distributed run on this process's workers, once every process has
/// connected. Configs it cannot check (temporal properties, actor models) are named first and
/// make the run's verdict bad input; the others are checked.
#[cfg(feature = "distributed")]
pub fn check_distributed(
    selected: Vec<Config>,
    options: &Options,
    format: ResultFormat,
    args: &ClusterArgs,
) -> Result<Verdict, BadInput> {
    use super::checking::{check_with, Shown};
    use loadbearing_expected::run::{distributable, run_distributed};
    use loadbearing_refinement::distributed::Cluster;
    use std::sync::Arc;

    let cluster = Cluster::new(
        args.workers,
        args.processes,
        args.process,
        args.hostfile.as_deref(),
    )?;
    let leader = cluster.process == 0;
    let mut runnable = Vec::new();
    let mut refused = 0;
    for config in selected {
        match distributable(&config) {
            Ok(()) => runnable.push(config),
            Err(e) => {
                refused += 1;
                if leader {
                    eprintln!("error: {}: {e}", config.name);
                }
            }
        }
    }
    if runnable.is_empty() {
        return Err(BadInput::NothingDistributable);
    }
    if leader {
        eprintln!(
            "distributed: {} configs on {} workers ({} processes × {}), waiting for every process",
            runnable.len(),
            cluster.peers(),
            cluster.processes,
            cluster.workers
        );
    }
    let runnable = Arc::new(runnable);
    let options = options.clone();
    let errors_before = refused;
    let verdicts = cluster.run(move |worker| {
        let shown = if leader && worker.index() == 0 {
            Shown::Yes
        } else {
            Shown::No
        };
        let mut on_worker =
            |config: &Config, options: &Options| run_distributed(worker, config, options);
        check_with(
            &runnable,
            &options,
            format,
            shown,
            errors_before,
            &mut on_worker,
        )
    })?;
    if !leader {
        eprintln!(
            "process {} of {}: done; process 0 prints the report",
            cluster.process, cluster.processes
        );
    }
    Ok(verdicts[0])
}
