//! A throwaway Cassandra 5.0 node on loopback, from Maven Central's jars.
//!
//! - Jars: `org.apache.cassandra:cassandra-all:5.0.5` and its runtime dependencies, resolved
//!   with Maven (`dependency:copy-dependencies`) on first use into a cache folder
//!   (`$LOADBEARING_CASSANDRA_HOME`, else `$XDG_CACHE_HOME/loadbearing-impls/cassandra-5.0.5`,
//!   else `~/.cache/…`); `.ci/setup.d/11-cassandra.sh` resolves the same folder ahead of time.
//! - Java 17 (or 11) with the `--add-exports`/`--add-opens` block of Cassandra's
//!   `conf/jvm17-server.options`; `$LOADBEARING_JAVA` overrides the `java` found.
//! - A fresh folder per node (yaml, logback, data, commit log, a private tmp dir for JNA), free
//!   loopback ports, ready when the log says "Starting listening for CQL clients" and a CQL
//!   session connects. Killed and removed by its guardian when the test process exits.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::harness::{create_dir, free_port, fresh_dir, spawn_guardian, tail, SetupError};

pub const CASSANDRA_VERSION: &str = "5.0.5";

/// Why the throwaway node could not be had (its jars, its Java, its start), or killed.
#[derive(Debug, thiserror::Error)]
pub enum CassandraError {
    #[error("Maven (`mvn`) not found: cannot resolve the Cassandra jars")]
    NoMaven,
    #[error("cannot run mvn: {0}")]
    RunMaven(#[source] std::io::Error),
    /// `output`: Maven's stdout and stderr.
    #[error("Maven could not resolve cassandra-all:{CASSANDRA_VERSION} into {}: {output}", lib.display())]
    Resolve { lib: PathBuf, output: String },
    #[error("no Java 17 or 11 found (Cassandra 5.0 runs on those only; set LOADBEARING_JAVA)")]
    NoJava,
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot open the log {}: {source}", path.display())]
    Log {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot start {}: {source}", java.display())]
    Spawn {
        java: PathBuf,
        source: std::io::Error,
    },
    /// `log`: the node's last log lines.
    #[error("Cassandra exited at start ({status}):\n{log}")]
    ExitedAtStart { status: ExitStatus, log: String },
    #[error("Cassandra not ready after 240 s:\n{log}")]
    NotReady { log: String },
    #[error("the node is not running")]
    NotRunning,
    #[error("cannot kill -9 the node: {0}")]
    Kill(#[source] std::io::Error),
    #[error("cannot reap the killed node: {0}")]
    Reap(#[source] std::io::Error),
}

/// `std::fs::write`, the error naming the file.
fn write(path: &Path, text: impl AsRef<[u8]>) -> Result<(), CassandraError> {
    std::fs::write(path, text).map_err(|source| CassandraError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// The cache folder holding `pom.xml`, `m2/` (Maven's local repository) and `lib/` (the jars).
pub fn cache_dir() -> PathBuf {
    if let Ok(d) = std::env::var("LOADBEARING_CASSANDRA_HOME") {
        return PathBuf::from(d);
    }
    let base = std::env::var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_else(|_| "/tmp".into())).join(".cache")
        });
    base.join("loadbearing-impls")
        .join(format!("cassandra-{CASSANDRA_VERSION}"))
}

const POM: &str = r#"<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>loadbearing</groupId>
  <artifactId>cassandra-jars</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.cassandra</groupId>
      <artifactId>cassandra-all</artifactId>
      <version>VERSION</version>
    </dependency>
  </dependencies>
</project>
"#;

/// The jar folder, resolving it with Maven first if it is missing or incomplete.
pub fn jars() -> Result<PathBuf, CassandraError> {
    let cache = cache_dir();
    let lib = cache.join("lib");
    let complete = |lib: &Path| {
        let n = std::fs::read_dir(lib)
            .map(|d| d.filter_map(|e| e.ok()).count())
            .unwrap_or(0);
        n > 50
            && lib
                .join(format!("cassandra-all-{CASSANDRA_VERSION}.jar"))
                .exists()
    };
    if complete(&lib) {
        return Ok(lib);
    }
    let mvn = which("mvn").ok_or(CassandraError::NoMaven)?;
    create_dir(&cache)?;
    write(
        &cache.join("pom.xml"),
        POM.replace("VERSION", CASSANDRA_VERSION),
    )?;
    let out = Command::new(mvn)
        .current_dir(&cache)
        .args([
            "-B",
            "-q",
            "org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies",
            "-DincludeScope=runtime",
        ])
        .arg(format!("-DoutputDirectory={}", lib.display()))
        .arg(format!("-Dmaven.repo.local={}", cache.join("m2").display()))
        .output()
        .map_err(CassandraError::RunMaven)?;
    if !out.status.success() || !complete(&lib) {
        return Err(CassandraError::Resolve {
            output: format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
            lib,
        });
    }
    Ok(lib)
}

fn which(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(tool))
        .find(|p| p.is_file())
}

/// A Java 17 (or 11) `java`.
pub fn find_java() -> Result<PathBuf, CassandraError> {
    if let Ok(j) = std::env::var("LOADBEARING_JAVA") {
        return Ok(PathBuf::from(j));
    }
    let mut candidates: Vec<PathBuf> = std::fs::read_dir("/usr/lib/jvm")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("bin/java"))
        .filter(|p| p.is_file())
        .collect();
    candidates.sort();
    candidates.extend(which("java"));
    for java in candidates {
        let v = Command::new(&java).arg("-version").output().ok();
        let text = v
            .map(|o| String::from_utf8_lossy(&o.stderr).to_string())
            .unwrap_or_default();
        if text.contains("version \"17") || text.contains("version \"11") {
            return Ok(java);
        }
    }
    Err(CassandraError::NoJava)
}

/// The JPMS block of Cassandra 5.0's conf/jvm17-server.options (without it the JVM dies at
/// start on Java 17).
const JVM17: &[&str] = &[
    "-Djdk.attach.allowAttachSelf=true",
    "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-exports=java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED",
    "--add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED",
    "--add-exports=java.rmi/sun.rmi.server=ALL-UNNAMED",
    "--add-exports=java.sql/java.sql=ALL-UNNAMED",
    "--add-exports=java.base/java.lang.ref=ALL-UNNAMED",
    "--add-exports=jdk.unsupported/sun.misc=ALL-UNNAMED",
    "--add-exports=jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED",
    "--add-exports=jdk.attach/sun.tools.attach=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.module=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.loader=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.reflect=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.math=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.module=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.util.jar=ALL-UNNAMED",
    "--add-opens=jdk.management/com.sun.management.internal=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=jdk.compiler/com.sun.tools.javac=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Dio.netty.allocator.useCacheForAllThreads=true",
    "-Dio.netty.allocator.maxOrder=11",
];

/// How the node syncs its commit log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommitLogSync {
    /// `periodic` (every 10 s): fast; a write is acknowledged before its commit-log entry is
    /// synced. Seen here: a `kill -9` loses the writes acknowledged in the last ~100 ms.
    Periodic,
    /// `batch`: a write is acknowledged only after its commit-log entry is synced; survives
    /// `kill -9`.
    Batch,
}

/// A running single node.
pub struct CassandraNode {
    dir: PathBuf,
    java: PathBuf,
    lib: PathBuf,
    cql_port: u16,
    child: Mutex<Option<Child>>,
}

impl CassandraNode {
    /// Resolve the jars if needed, write the config, start the node and wait until CQL answers.
    /// Periodic commit-log sync (fast; not durable across `kill -9`).
    pub fn start() -> Result<CassandraNode, CassandraError> {
        Self::start_with(CommitLogSync::Periodic)
    }

    /// As [`CassandraNode::start`], choosing the commit-log sync.
    pub fn start_with(sync: CommitLogSync) -> Result<CassandraNode, CassandraError> {
        let java = find_java()?;
        let lib = jars()?;
        let dir = fresh_dir("loadbearing-cassandra")?;
        let (storage_port, cql_port) = (free_port()?, free_port()?);
        for sub in ["data", "commitlog", "saved_caches", "hints", "cdc", "tmp"] {
            create_dir(&dir.join(sub))?;
        }
        let d = dir.display();
        let sync = match sync {
            CommitLogSync::Periodic => "commitlog_sync: periodic\ncommitlog_sync_period: 10000ms",
            CommitLogSync::Batch => "commitlog_sync: batch",
        };
        let yaml = format!(
            "cluster_name: loadbearing
num_tokens: 1
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
endpoint_snitch: SimpleSnitch
{sync}
commitlog_directory: {d}/commitlog
data_file_directories: [{d}/data]
saved_caches_directory: {d}/saved_caches
hints_directory: {d}/hints
cdc_raw_directory: {d}/cdc
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: \"127.0.0.1:{storage_port}\"
listen_address: 127.0.0.1
rpc_address: 127.0.0.1
storage_port: {storage_port}
native_transport_port: {cql_port}
start_native_transport: true
auto_snapshot: false
hinted_handoff_enabled: false
write_request_timeout: 10000ms
cas_contention_timeout: 10000ms
read_request_timeout: 10000ms
"
        );
        write(&dir.join("cassandra.yaml"), yaml)?;
        write(
            &dir.join("logback.xml"),
            "<configuration>\n  <appender name=\"OUT\" class=\"ch.qos.logback.core.ConsoleAppender\">\n    \
             <encoder><pattern>%-5level %date{ISO8601} %msg%n</pattern></encoder>\n  </appender>\n  \
             <root level=\"INFO\"><appender-ref ref=\"OUT\"/></root>\n</configuration>\n",
        )?;
        spawn_guardian(&format!(
            "[ -f {d}/pid ] && kill -9 $(cat {d}/pid) 2>/dev/null; sleep 1; rm -rf {d}"
        ))?;
        let node = CassandraNode {
            dir,
            java,
            lib,
            cql_port,
            child: Mutex::new(None),
        };
        node.launch()?;
        Ok(node)
    }

    fn log(&self) -> PathBuf {
        self.dir.join("cassandra.log")
    }

    fn launch(&self) -> Result<(), CassandraError> {
        let d = &self.dir;
        let log_error = |source| CassandraError::Log {
            path: self.log(),
            source,
        };
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log())
            .map_err(log_error)?;
        let started_at = std::fs::metadata(self.log()).map(|m| m.len()).unwrap_or(0);
        let child = Command::new(&self.java)
            .args(["-Xms1G", "-Xmx1G", "-XX:+UseG1GC", "-Xss512k"])
            .args(JVM17)
            .arg("-Djava.net.preferIPv4Stack=true")
            .arg(format!(
                "-Dcassandra.config=file://{}/cassandra.yaml",
                d.display()
            ))
            .arg("-Dcassandra-foreground=yes")
            .arg(format!(
                "-Dlogback.configurationFile={}/logback.xml",
                d.display()
            ))
            .arg("-Dcassandra.skip_wait_for_gossip_to_settle=0")
            // No `cassandra.unsafesystem`: it keeps schema changes out of the commit log, and
            // a node killed with -9 then restarts without its keyspace.
            .arg(format!("-Dcassandra-pidfile={}/pid", d.display()))
            .arg(format!("-Dcassandra.storagedir={}", d.display()))
            .arg(format!("-Djava.io.tmpdir={}/tmp", d.display()))
            .arg("-cp")
            .arg(format!("{}/*", self.lib.display()))
            .arg("org.apache.cassandra.service.CassandraDaemon")
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(log_error)?)
            .stderr(log)
            .spawn()
            .map_err(|source| CassandraError::Spawn {
                java: self.java.clone(),
                source,
            })?;
        let pid = child.id();
        let _ = std::fs::write(d.join("pid"), pid.to_string());
        *self.child.lock().unwrap_or_else(|e| e.into_inner()) = Some(child);
        let deadline = Instant::now() + Duration::from_secs(240);
        loop {
            let text = std::fs::read(self.log()).unwrap_or_default();
            let fresh =
                String::from_utf8_lossy(&text[(started_at as usize).min(text.len())..]).to_string();
            if fresh.contains("Starting listening for CQL clients")
                && std::net::TcpStream::connect(("127.0.0.1", self.cql_port)).is_ok()
            {
                return Ok(());
            }
            let exited = self
                .child
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten());
            if let Some(status) = exited {
                return Err(CassandraError::ExitedAtStart {
                    status,
                    log: tail(&self.log(), 40),
                });
            }
            if Instant::now() > deadline {
                return Err(CassandraError::NotReady {
                    log: tail(&self.log(), 40),
                });
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// `host:port` of the CQL listener.
    pub fn node(&self) -> String {
        format!("127.0.0.1:{}", self.cql_port)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Crash the node: `kill -9` the JVM (by pid) and reap it.
    pub fn kill9(&self) -> Result<(), CassandraError> {
        let mut guard = self.child.lock().unwrap_or_else(|e| e.into_inner());
        let child = guard.as_mut().ok_or(CassandraError::NotRunning)?;
        let pid = child.id();
        Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .map_err(CassandraError::Kill)?;
        child.wait().map_err(CassandraError::Reap)?;
        *guard = None;
        Ok(())
    }

    /// Freeze the node's JVM (`SIGSTOP`) or thaw it (`SIGCONT`): a pause, during which its
    /// connections stay open and nothing answers (a stop-the-world stall, as a long GC is).
    pub fn pause(&self, paused: bool) -> Result<(), CassandraError> {
        let guard = self.child.lock().unwrap_or_else(|e| e.into_inner());
        let child = guard.as_ref().ok_or(CassandraError::NotRunning)?;
        Ok(crate::harness::pause_process(child.id(), paused)?)
    }

    /// Start the node again on the same folders and ports (the commit log replays).
    pub fn restart(&self) -> Result<(), CassandraError> {
        self.launch()
    }

    /// Kill the node and remove its folder.
    pub fn stop(&self) {
        let _ = self.kill9();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl crate::servers::RunningServer for CassandraNode {
    fn address(&self) -> String {
        self.node()
    }
    fn stop(&self) {
        CassandraNode::stop(self)
    }
}
