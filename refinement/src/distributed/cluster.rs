//! Where this process stands among the processes of a distributed run, and how timely starts
//! them: `-w` worker threads in each of `-n` processes, this one number `-p`, the addresses in
//! a host file (one `host:port` a line, process 0 first).

use std::path::Path;

use timely::worker::Worker;
use timely::{CommunicationConfig, WorkerConfig};

/// The first port timely gives process 0 when no host file names the addresses.
pub const FIRST_PORT: u16 = 2101;

/// One process's view of a cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cluster {
    /// Worker threads in each process.
    pub workers: usize,
    pub processes: usize,
    /// This process's number, `0..processes`.
    pub process: usize,
    /// Each process's `host:port`, in process order.
    pub addresses: Vec<String>,
}

/// A cluster that cannot be started as described.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClusterError {
    #[error("a distributed run needs at least one worker a process and one process")]
    Empty,
    #[error("process {process} is not one of the {processes} processes (-p counts from 0)")]
    NoSuchProcess { process: usize, processes: usize },
    #[error(
        "the host file names {named} addresses for {processes} processes (one `host:port` a line)"
    )]
    Addresses { named: usize, processes: usize },
    #[error("host file {path}: {why}")]
    HostFile { path: String, why: String },
    #[error("line {line} of host file {path} is not `host:port`: {text:?}")]
    HostLine {
        path: String,
        line: usize,
        text: String,
    },
    #[error("timely could not start the cluster: {0}")]
    Start(String),
    #[error("a worker of the distributed run failed: {0}")]
    Worker(String),
}

impl Cluster {
    /// The cluster `-w workers -n processes -p process`, its addresses from `hostfile` or, with
    /// none, 127.0.0.1 from port 2101 up (timely's default).
    pub fn new(
        workers: usize,
        processes: usize,
        process: usize,
        hostfile: Option<&Path>,
    ) -> Result<Cluster, ClusterError> {
        if workers == 0 || processes == 0 {
            return Err(ClusterError::Empty);
        }
        if process >= processes {
            return Err(ClusterError::NoSuchProcess { process, processes });
        }
        let addresses = match hostfile {
            Some(path) => read_hostfile(path)?,
            None => (0..processes)
                .map(|i| format!("127.0.0.1:{}", FIRST_PORT as usize + i))
                .collect(),
        };
        if addresses.len() != processes {
            return Err(ClusterError::Addresses {
                named: addresses.len(),
                processes,
            });
        }
        Ok(Cluster {
            workers,
            processes,
            process,
            addresses,
        })
    }

    /// Workers in the whole run.
    pub fn peers(&self) -> usize {
        self.workers * self.processes
    }

    fn config(&self) -> timely::Config {
        let communication = if self.processes == 1 {
            CommunicationConfig::Process(self.workers)
        } else {
            CommunicationConfig::Cluster {
                threads: self.workers,
                process: self.process,
                addresses: self.addresses.clone(),
                report: false,
                zerocopy: false,
            }
        };
        timely::Config {
            communication,
            worker: WorkerConfig::default(),
        }
    }

    /// Runs `job` on each of this process's workers, once every process has connected, and
    /// returns what each returned, in worker order.
    pub fn run<T, F>(&self, job: F) -> Result<Vec<T>, ClusterError>
    where
        T: Send + 'static,
        F: Fn(&mut Worker) -> T + Send + Sync + 'static,
    {
        let config = self.config();
        // timely prints its connection progress ("awaiting connections") on standard output,
        // where process 0 writes the report (JSON, say): it goes to standard error instead.
        let (builders, others) =
            on_stderr(|| config.communication.try_build()).map_err(ClusterError::Start)?;
        let guards = timely::execute::execute_from(builders, others, config.worker, job)
            .map_err(ClusterError::Start)?;
        guards
            .join()
            .into_iter()
            .map(|r| r.map_err(ClusterError::Worker))
            .collect()
    }
}

/// Runs `f` with the process's standard output sent to its standard error.
fn on_stderr<T>(f: impl FnOnce() -> T) -> T {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    // SAFETY: dup and dup2 on the process's own standard descriptors; the saved descriptor is
    // put back and closed before returning.
    let saved = unsafe { libc::dup(libc::STDOUT_FILENO) };
    if saved < 0 {
        return f();
    }
    unsafe { libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO) };
    let result = f();
    let _ = std::io::stdout().flush();
    unsafe {
        libc::dup2(saved, libc::STDOUT_FILENO);
        libc::close(saved);
    }
    result
}

/// Reads a host file: one `host:port` a line, blank lines and `#` comments skipped.
pub fn read_hostfile(path: &Path) -> Result<Vec<String>, ClusterError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ClusterError::HostFile {
        path: shown.clone(),
        why: e.to_string(),
    })?;
    let mut addresses = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let well_formed = line
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
        if !well_formed {
            return Err(ClusterError::HostLine {
                path: shown,
                line: i + 1,
                text: line.to_string(),
            });
        }
        addresses.push(line.to_string());
    }
    Ok(addresses)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_file_names_one_address_a_process() {
        let dir = std::env::temp_dir().join(format!("lb-hosts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("hosts");
        std::fs::write(
            &file,
            "# the cluster\n10.0.0.1:2101\n\n10.0.0.2:2101 # second\n",
        )
        .unwrap();
        let cluster = Cluster::new(2, 2, 1, Some(&file)).unwrap();
        assert_eq!(cluster.addresses, ["10.0.0.1:2101", "10.0.0.2:2101"]);
        assert_eq!(cluster.peers(), 4);
        assert_eq!(
            Cluster::new(1, 3, 0, Some(&file)),
            Err(ClusterError::Addresses {
                named: 2,
                processes: 3
            })
        );
        std::fs::write(&file, "10.0.0.1\n").unwrap();
        assert!(matches!(
            Cluster::new(1, 1, 0, Some(&file)),
            Err(ClusterError::HostLine { line: 1, .. })
        ));
    }

    #[test]
    fn a_process_outside_the_cluster_is_refused() {
        assert_eq!(
            Cluster::new(1, 2, 2, None),
            Err(ClusterError::NoSuchProcess {
                process: 2,
                processes: 2
            })
        );
        assert_eq!(Cluster::new(0, 2, 0, None), Err(ClusterError::Empty));
        let local = Cluster::new(1, 2, 0, None).unwrap();
        assert_eq!(local.addresses, ["127.0.0.1:2101", "127.0.0.1:2102"]);
    }
}
