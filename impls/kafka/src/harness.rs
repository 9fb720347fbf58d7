//! An Apache Kafka 4.4 broker for the tests: single node, KRaft (combined broker and
//! controller), on free loopback ports, started once per test binary and shared.
//!
//! The jars (`org.apache.kafka:kafka_2.13` and its runtime dependencies) come from Maven
//! Central through `scripts/fetch-kafka.sh` into a cache folder on first use
//! (`$LOADBEARING_KAFKA_CACHE`, default `$HOME/.cache/loadbearing/kafka-4.4.0`). The broker's
//! folder is fresh and a *guardian* (a detached shell waiting for the test process to exit)
//! kills the broker and removes the folder once the test process is gone, however it exits.
//!
//! [`shared`] returns the broker or the reason there is none; the tests turn that reason into
//! `skipped: <reason>` outside CI and a failure in CI (loadbearing-test-support's `or_skip`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::recovery::RecoveryBudget;
use loadbearing_impls::harness::{
    free_port, fresh_dir, pause_process, spawn_guardian, tail, SetupError,
};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;

pub const KAFKA_VERSION: &str = "4.4.0";

/// The test broker's abort scan (`transaction.abort.timed.out.transaction.cleanup.interval.ms`),
/// set so that a timed-out transaction's abort lands within a second of its timeout.
pub const ABORT_SCAN: Duration = Duration::from_secs(1);

/// The recovery budget of a member with default settings on the test broker: the middle of the
/// window.
pub fn recovery_budget() -> RecoveryBudget {
    let deployment = crate::kafka::deployment(
        ABORT_SCAN,
        crate::flow::MemberConfig::default().max_poll_interval,
    );
    RecoveryBudget::centred(deployment).expect("the default member leaves room for recovery")
}

/// Why no broker could be started.
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    #[error(
        "Maven (mvn) not found and no Kafka jars cached in {} (install Debian's maven \
         package, or run scripts/fetch-kafka.sh)",
        jars.display()
    )]
    NoMaven { jars: PathBuf },
    #[error("cannot run bash (for fetch-kafka.sh): {0}")]
    RunFetch(#[source] std::io::Error),
    /// `output`: the script's stdout and stderr.
    #[error("resolving the Kafka jars failed: {output}")]
    Fetch { output: String },
    #[error("Java not found ({}: {source}); Kafka 4.4 needs Java 17+", java.display())]
    NoJava {
        java: PathBuf,
        source: std::io::Error,
    },
    /// `version`: what `java -version` printed.
    #[error("Kafka 4.4 needs Java 17+, found: {version}")]
    OldJava { version: String },
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
    #[error("cannot run the storage tool: {0}")]
    RunStorageTool(#[source] std::io::Error),
    #[error("waiting for the storage tool: {0}")]
    WaitStorageTool(#[source] std::io::Error),
    /// `log`: the tool's last output lines.
    #[error("kafka.tools.StorageTool format did not finish within {timeout:?}: {log}")]
    FormatTimeout { timeout: Duration, log: String },
    #[error("kafka.tools.StorageTool format failed ({status}): {log}")]
    Format { status: ExitStatus, log: String },
    #[error("cannot start the broker: {0}")]
    Spawn(#[source] std::io::Error),
    #[error("cannot kill the broker: {0}")]
    Kill(#[source] std::io::Error),
    /// `waited`: since the restarted JVM was launched.
    #[error("{source}\n(restarted on its folder, then waited {waited:?})")]
    NotReadyAfterRestart {
        source: ReadyError,
        waited: Duration,
    },
    #[error("cannot run Kafka's TransactionsCommand: {0}")]
    Tool(#[source] std::io::Error),
    #[error("Kafka's TransactionsCommand failed ({status}): {output}")]
    ToolFailed { status: ExitStatus, output: String },
    #[error("{source}\n(storage formatted in {formatted_in:?}, then waited {waited:?})")]
    NotReady {
        source: ReadyError,
        formatted_in: Duration,
        waited: Duration,
    },
}

/// Why a started broker never answered.
#[derive(Debug, thiserror::Error)]
pub enum ReadyError {
    #[error("cannot create a client: {0}")]
    Client(#[source] KafkaError),
    /// `log`: the broker's last log lines.
    #[error("the broker exited ({status}) while starting:\n{log}")]
    Exited { status: ExitStatus, log: String },
    #[error("the broker did not answer a metadata request within {timeout:?}:\n{log}")]
    NoMetadata { timeout: Duration, log: String },
}

/// `std::fs::write`, the error naming the file.
fn write(path: &Path, text: String) -> Result<(), BrokerError> {
    std::fs::write(path, text).map_err(|source| BrokerError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// The error of a log file that cannot be created or opened.
fn log_error(path: &Path) -> impl FnOnce(std::io::Error) -> BrokerError + '_ {
    move |source| BrokerError::Log {
        path: path.to_path_buf(),
        source,
    }
}

/// A running broker.
pub struct KafkaBroker {
    dir: PathBuf,
    port: u16,
    /// The proxied listener's advertised port (see [`BrokerOptions::proxied`]).
    proxied: Option<Proxied>,
    launch: Launch,
    child: Mutex<Child>,
    pub started_in: Duration,
}

/// A second listener, advertised at a port a fault-injection proxy listens on: a client that
/// bootstraps there learns that address for the broker too, so all its traffic (the group
/// coordinator's and the transaction coordinator's included) crosses the proxy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proxied {
    /// Where the broker listens for it.
    pub listener: u16,
    /// Where the proxy listens, and so what the broker advertises.
    pub advertised: u16,
}

/// How to start a broker.
#[derive(Clone, Copy, Debug, Default)]
pub struct BrokerOptions {
    /// Advertise a second listener at this proxy port (the broker picks its own port for it).
    pub proxied: Option<u16>,
}

/// What it takes to launch the broker's JVM again on the same folder (a restart).
struct Launch {
    java: PathBuf,
    classpath: String,
    props: PathBuf,
    log4j: PathBuf,
}

impl loadbearing_impls::servers::RunningServer for KafkaBroker {
    fn address(&self) -> String {
        self.bootstrap()
    }
    fn stop(&self) {
        KafkaBroker::stop(self)
    }
}

impl KafkaBroker {
    /// `bootstrap.servers` for clients.
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
    /// The proxied listener, if the broker was started with one.
    pub fn proxied(&self) -> Option<Proxied> {
        self.proxied
    }
    /// `bootstrap.servers` through the proxy (the proxy must forward
    /// `127.0.0.1:{advertised}` to `127.0.0.1:{listener}`).
    pub fn proxied_bootstrap(&self) -> Option<String> {
        self.proxied.map(|p| format!("127.0.0.1:{}", p.advertised))
    }
    pub fn dir(&self) -> &Path {
        &self.dir
    }
    pub fn pid(&self) -> u32 {
        self.child.lock().unwrap_or_else(|e| e.into_inner()).id()
    }
    pub fn log_tail(&self, lines: usize) -> String {
        tail(&self.dir.join("broker.log"), lines)
    }
    /// Stop the broker (SIGKILL) and remove its folder. The guardian does this at exit too.
    pub fn stop(&self) {
        let mut c = self.child.lock().unwrap_or_else(|e| e.into_inner());
        let _ = c.kill();
        let _ = c.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }

    /// `kill -9` the broker's JVM and reap it: no shutdown hook runs, nothing is flushed by
    /// the broker (what the page cache holds survives, as after any process crash).
    pub fn kill9(&self) -> Result<(), BrokerError> {
        let mut c = self.child.lock().unwrap_or_else(|e| e.into_inner());
        c.kill().map_err(BrokerError::Kill)?;
        c.wait().map_err(BrokerError::Kill)?;
        Ok(())
    }

    /// Start the broker again on the same folder and ports (after [`KafkaBroker::kill9`]) and
    /// wait until it answers: it recovers its logs, the transaction and group coordinators
    /// load their state, and clients reconnect on their own.
    pub fn restart(&self) -> Result<Duration, BrokerError> {
        let t0 = Instant::now();
        let child = self.launch.spawn(&self.dir, true)?;
        *self.child.lock().unwrap_or_else(|e| e.into_inner()) = child;
        self.wait_ready(Duration::from_secs(120))
            .map_err(|source| BrokerError::NotReadyAfterRestart {
                source,
                waited: t0.elapsed(),
            })?;
        Ok(t0.elapsed())
    }

    /// Freeze the broker's JVM (`SIGSTOP`) or thaw it (`SIGCONT`): connections stay open and
    /// nothing answers, and when it thaws its clocks have jumped (sessions expire at once).
    pub fn pause(&self, paused: bool) -> Result<(), BrokerError> {
        Ok(pause_process(self.pid(), paused)?)
    }

    /// Abort the transaction open on `topic`-`partition` from `start_offset`, as an operator
    /// does with `kafka-transactions.sh abort` (KIP-664): the tool finds its producer
    /// (DescribeProducers) and has the partition's leader write an abort marker
    /// (WriteTxnMarkers). Returns the tool's output.
    pub fn abort_transaction(
        &self,
        topic: &str,
        partition: i32,
        start_offset: i64,
    ) -> Result<String, BrokerError> {
        let out = Command::new(&self.launch.java)
            .args(["-Xmx256m", "-cp", &self.launch.classpath])
            .arg(format!(
                "-Dlog4j2.configurationFile={}",
                self.launch.log4j.display()
            ))
            .args([
                "org.apache.kafka.tools.TransactionsCommand",
                "--bootstrap-server",
            ])
            .arg(self.bootstrap())
            .args(["abort", "--topic", topic, "--partition"])
            .arg(partition.to_string())
            .arg("--start-offset")
            .arg(start_offset.to_string())
            .stdin(Stdio::null())
            .output()
            .map_err(BrokerError::Tool)?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if out.status.success() {
            Ok(text)
        } else {
            Err(BrokerError::ToolFailed {
                status: out.status,
                output: text,
            })
        }
    }
}

impl Launch {
    /// Start the broker's JVM, its output appended to `broker.log` on a restart, and a
    /// guardian that kills it once this process is gone.
    fn spawn(&self, dir: &Path, append: bool) -> Result<Child, BrokerError> {
        let log_path = dir.join("broker.log");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(append)
            .write(true)
            .truncate(!append)
            .open(&log_path)
            .map_err(log_error(&log_path))?;
        let child = Command::new(&self.java)
            .args(["-Xms256m", "-Xmx768m", "-XX:+UseG1GC"])
            .args([
                "-Djava.security.egd=file:/dev/./urandom",
                "-cp",
                &self.classpath,
            ])
            .arg(format!(
                "-Dlog4j2.configurationFile={}",
                self.log4j.display()
            ))
            .arg("-Djava.net.preferIPv4Stack=true")
            .args(["kafka.Kafka"])
            .arg(&self.props)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(log_error(&log_path))?)
            .stderr(log)
            .spawn()
            .map_err(BrokerError::Spawn)?;
        spawn_guardian(&format!("kill -9 {} 2>/dev/null", child.id()))?;
        Ok(child)
    }
}

/// The cache folder for the jars.
pub fn cache_dir() -> PathBuf {
    if let Ok(d) = std::env::var("LOADBEARING_KAFKA_CACHE") {
        return PathBuf::from(d);
    }
    let home = std::env::var("HOME").unwrap_or_else(|_| "/tmp".into());
    PathBuf::from(home).join(format!(".cache/loadbearing/kafka-{KAFKA_VERSION}"))
}

/// `scripts/fetch-kafka.sh`, compiled in so that an installed binary (`conform --backend kafka`)
/// needs no checkout; `.ci/setup.d/30-kafka.sh` runs the same file to prefetch.
const FETCH_SCRIPT: &str = include_str!("../scripts/fetch-kafka.sh");

/// What `fetch-kafka.sh` leaves in the jar folder once it resolved the current list.
const COMPLETE: &str = ".complete-2";

/// The jar folder, resolving it with Maven on first use.
pub fn ensure_jars() -> Result<PathBuf, BrokerError> {
    let cache = cache_dir();
    let jars = cache.join("jars");
    if jars.join(COMPLETE).exists() {
        return Ok(jars);
    }
    if Command::new("mvn").arg("-v").output().is_err() {
        return Err(BrokerError::NoMaven { jars });
    }
    eprintln!(
        "resolving Apache Kafka {KAFKA_VERSION} jars with Maven into {} (first use)",
        jars.display()
    );
    // `bash -c SCRIPT NAME ARG`: NAME is the script's $0, the cache folder its $1.
    let out = Command::new("bash")
        .arg("-c")
        .arg(FETCH_SCRIPT)
        .arg("fetch-kafka.sh")
        .arg(&cache)
        .env("LOADBEARING_KAFKA_VERSION", KAFKA_VERSION)
        .output()
        .map_err(BrokerError::RunFetch)?;
    if !out.status.success() || !jars.join(COMPLETE).exists() {
        return Err(BrokerError::Fetch {
            output: format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        });
    }
    Ok(jars)
}

/// `java`, checked to be version 17 or later.
pub fn find_java() -> Result<PathBuf, BrokerError> {
    let java = std::env::var("JAVA_HOME")
        .map(|h| PathBuf::from(h).join("bin/java"))
        .ok()
        .filter(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from("java"));
    let out = match Command::new(&java).arg("-version").output() {
        Ok(out) => out,
        Err(source) => return Err(BrokerError::NoJava { java, source }),
    };
    let text = String::from_utf8_lossy(&out.stderr);
    let major = text
        .split('"')
        .nth(1)
        .and_then(|v| v.split('.').next())
        .and_then(|v| v.parse::<u32>().ok())
        .unwrap_or(0);
    if major < 17 {
        return Err(BrokerError::OldJava {
            version: text.trim().to_string(),
        });
    }
    Ok(java)
}

/// A KRaft cluster id: 16 random bytes, URL-safe base64 without padding.
fn cluster_id() -> String {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut bytes = [0u8; 16];
    for chunk in bytes.chunks_mut(8) {
        let mut h = RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0),
        );
        chunk.copy_from_slice(&h.finish().to_le_bytes());
    }
    let mut bits: u128 = u128::from_le_bytes(bytes);
    let mut s = String::new();
    for _ in 0..22 {
        s.push(ALPHABET[(bits & 63) as usize] as char);
        bits >>= 6;
    }
    // Kafka refuses ids that start with '-'.
    s.replace_range(0..1, "k");
    s
}

impl KafkaBroker {
    /// Format fresh storage and start a broker; wait until a metadata request succeeds.
    pub fn start() -> Result<KafkaBroker, BrokerError> {
        Self::start_with(BrokerOptions::default())
    }

    /// [`KafkaBroker::start`] with options.
    pub fn start_with(options: BrokerOptions) -> Result<KafkaBroker, BrokerError> {
        let t0 = Instant::now();
        let java = find_java()?;
        let jars = ensure_jars()?;
        let dir = fresh_dir("loadbearing-kafka")?;
        // Removes the folder once this process is gone, after the broker's guardian below
        // killed the broker (which would otherwise write into it again).
        spawn_guardian(&format!("sleep 3; rm -rf '{}'", dir.display()))?;
        let port = free_port()?;
        let mut cport = free_port()?;
        while cport == port {
            cport = free_port()?;
        }
        let proxied = match options.proxied {
            Some(advertised) => {
                let mut listener = free_port()?;
                while [port, cport, advertised].contains(&listener) {
                    listener = free_port()?;
                }
                Some(Proxied {
                    listener,
                    advertised,
                })
            }
            None => None,
        };
        let (listeners, advertised, protocols) = match proxied {
            Some(p) => (
                format!(
                    "PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{cport},\
                     PROXIED://127.0.0.1:{}",
                    p.listener
                ),
                format!(
                    "PLAINTEXT://127.0.0.1:{port},PROXIED://127.0.0.1:{}",
                    p.advertised
                ),
                "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,PROXIED:PLAINTEXT",
            ),
            None => (
                format!("PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{cport}"),
                format!("PLAINTEXT://127.0.0.1:{port}"),
                "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            ),
        };
        let props = dir.join("server.properties");
        let data = dir.join("data");
        write(
            &props,
            format!(
                "process.roles=broker,controller\n\
                 node.id=1\n\
                 controller.quorum.voters=1@127.0.0.1:{cport}\n\
                 listeners={listeners}\n\
                 advertised.listeners={advertised}\n\
                 listener.security.protocol.map={protocols}\n\
                 controller.listener.names=CONTROLLER\n\
                 inter.broker.listener.name=PLAINTEXT\n\
                 log.dirs={data}\n\
                 num.partitions=1\n\
                 auto.create.topics.enable=false\n\
                 offsets.topic.replication.factor=1\n\
                 offsets.topic.num.partitions=1\n\
                 transaction.state.log.replication.factor=1\n\
                 transaction.state.log.min.isr=1\n\
                 transaction.state.log.num.partitions=1\n\
                 share.coordinator.state.topic.replication.factor=1\n\
                 share.coordinator.state.topic.min.isr=1\n\
                 min.insync.replicas=1\n\
                 default.replication.factor=1\n\
                 group.initial.rebalance.delay.ms=0\n\
                 group.min.session.timeout.ms=500\n\
                 transaction.abort.timed.out.transaction.cleanup.interval.ms={scan}\n\
                 log.flush.interval.messages=9223372036854775807\n",
                data = data.display(),
                scan = ABORT_SCAN.as_millis(),
            ),
        )?;
        let log4j = dir.join("log4j2.properties");
        write(
            &log4j,
            "status = warn\n\
             appender.console.type = Console\n\
             appender.console.name = STDOUT\n\
             appender.console.layout.type = PatternLayout\n\
             appender.console.layout.pattern = [%d] %p %m (%c)%n\n\
             rootLogger.level = INFO\n\
             rootLogger.appenderRef.stdout.ref = STDOUT\n"
                .to_string(),
        )?;
        let classpath = format!("{}/*", jars.display());
        let t_format = Instant::now();
        let format_log = dir.join("format.log");
        let mut format = Command::new(&java)
            .args([
                "-Xmx256m",
                "-Djava.security.egd=file:/dev/./urandom",
                "-cp",
                &classpath,
            ])
            .arg(format!("-Dlog4j2.configurationFile={}", log4j.display()))
            .args([
                "kafka.tools.StorageTool",
                "format",
                "-t",
                &cluster_id(),
                "-c",
            ])
            .arg(&props)
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&format_log).map_err(log_error(&format_log))?)
            .stderr(Stdio::from(
                std::fs::OpenOptions::new()
                    .append(true)
                    .open(&format_log)
                    .map_err(log_error(&format_log))?,
            ))
            .spawn()
            .map_err(BrokerError::RunStorageTool)?;
        let format_timeout = Duration::from_secs(180);
        let status = loop {
            if let Some(status) = format.try_wait().map_err(BrokerError::WaitStorageTool)? {
                break status;
            }
            if t_format.elapsed() > format_timeout {
                let _ = format.kill();
                let _ = format.wait();
                return Err(BrokerError::FormatTimeout {
                    timeout: format_timeout,
                    log: tail(&format_log, 20),
                });
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        if !status.success() {
            return Err(BrokerError::Format {
                status,
                log: tail(&format_log, 20),
            });
        }
        let formatted_in = t_format.elapsed();
        let launch = Launch {
            java,
            classpath,
            props,
            log4j,
        };
        let child = launch.spawn(&dir, false)?;
        let broker = KafkaBroker {
            dir,
            port,
            proxied,
            launch,
            child: Mutex::new(child),
            started_in: Duration::ZERO,
        };
        let t_ready = Instant::now();
        broker
            .wait_ready(Duration::from_secs(120))
            .map_err(|source| BrokerError::NotReady {
                source,
                formatted_in,
                waited: t_ready.elapsed(),
            })?;
        Ok(KafkaBroker {
            started_in: t0.elapsed(),
            ..broker
        })
    }

    fn wait_ready(&self, timeout: Duration) -> Result<(), ReadyError> {
        let deadline = Instant::now() + timeout;
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", self.bootstrap())
            .set("log_level", "0")
            .create()
            .map_err(ReadyError::Client)?;
        loop {
            if let Ok(Some(status)) = self
                .child
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .try_wait()
            {
                return Err(ReadyError::Exited {
                    status,
                    log: self.log_tail(40),
                });
            }
            if let Ok(md) = consumer.fetch_metadata(None, Duration::from_secs(2)) {
                if !md.brokers().is_empty() {
                    return Ok(());
                }
            }
            if Instant::now() > deadline {
                return Err(ReadyError::NoMetadata {
                    timeout,
                    log: self.log_tail(40),
                });
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

/// The broker shared by every test of this binary, or why there is none (the one start's
/// error, shared as the broker would have been).
pub fn shared() -> Result<&'static KafkaBroker, &'static BrokerError> {
    static BROKER: OnceLock<Result<KafkaBroker, BrokerError>> = OnceLock::new();
    BROKER
        .get_or_init(|| {
            let b = KafkaBroker::start();
            if let Ok(b) = &b {
                // Straight to the process's stderr, past the test harness's capture, so a CI
                // log shows that the Kafka tests ran against a broker they started.
                use std::io::Write;
                let _ = writeln!(
                    std::io::stderr(),
                    "Apache Kafka {KAFKA_VERSION} broker at {} (pid {}, started in {:.1?})",
                    b.bootstrap(),
                    b.pid(),
                    b.started_in
                );
            }
            b
        })
        .as_ref()
}
