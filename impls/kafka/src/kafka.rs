//! The real thing, on rdkafka: the transactional producer GroupCommit drives, the consumer's
//! live group metadata, read_committed recovery bounded by the high watermark, the plain
//! (non-transactional, last-write-wins) producer of issue #732, and topic creation.
//!
//! Snapshot records: key = the snapshot key, value = the snapshot (absent for a delete: a
//! compaction tombstone), header `offset` = the input offset the snapshot folds up to.

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::time::{Duration, Instant};

use loadbearing_impls::store::Read;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::error::KafkaError;
use rdkafka::message::{Header, Headers, Message, OwnedHeaders};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};
use rdkafka_sys as rdsys;

use crate::group_commit::{
    ErrorClass, GroupMetadata, GroupMetadataSource, InputPartition, SnapshotWrite, TxnError,
    TxnProducer,
};
use crate::recovery::{
    read_to_target, Deployment, Ends, LogError, RecoveryBudget, RecoveryError, SnapshotLog,
    SnapshotRecord, WallClock,
};

/// How long one transactional call may take.
pub const TXN_TIMEOUT: Duration = Duration::from_secs(30);

/// `transaction.timeout.ms` of the snapshot producers: the broker aborts a transaction open
/// longer, which bounds how long a recovery read parks at it.
pub const SNAPSHOT_TXN_TIMEOUT: Duration = Duration::from_secs(10);

/// The broker's default `transaction.abort.timed.out.transaction.cleanup.interval.ms`.
pub const DEFAULT_ABORT_SCAN: Duration = Duration::from_secs(10);

/// Error names that mean "you are no longer the owner".
const FENCE_CODES: &[&str] = &[
    "ILLEGAL_GENERATION",
    "UNKNOWN_MEMBER_ID",
    "FENCED_INSTANCE_ID",
    "PRODUCER_FENCED",
    "INVALID_PRODUCER_EPOCH",
    "_FENCED",
];

/// What librdkafka says of an error besides its name.
#[derive(Clone, Copy, Debug, Default)]
struct Flags {
    fatal: bool,
    /// The call may be retried (a timeout, the coordinator unreachable).
    retriable: bool,
    /// The transaction must be aborted: it did not commit.
    requires_abort: bool,
}

fn classify(code: String, message: String, flags: Flags) -> TxnError {
    let class = if FENCE_CODES.contains(&code.as_str()) {
        ErrorClass::Fenced
    } else if flags.fatal {
        ErrorClass::Fatal
    } else if flags.retriable && !flags.requires_abort {
        ErrorClass::Retriable
    } else {
        ErrorClass::Abortable
    };
    TxnError {
        class,
        code,
        message,
    }
}

fn from_kafka(e: KafkaError) -> TxnError {
    match &e {
        KafkaError::Transaction(rde) => classify(
            rde.name(),
            rde.string(),
            Flags {
                fatal: rde.is_fatal(),
                retriable: rde.is_retriable(),
                requires_abort: rde.txn_requires_abort(),
            },
        ),
        other => {
            let code = other
                .rdkafka_error_code()
                .map(|c| err_name(c as i32))
                .unwrap_or_else(|| "CLIENT".into());
            classify(code, other.to_string(), Flags::default())
        }
    }
}

fn err_name(code: i32) -> String {
    // SAFETY: rd_kafka_err2name returns a static string for every code.
    unsafe {
        let p =
            rdsys::rd_kafka_err2name(std::mem::transmute::<i32, rdsys::rd_kafka_resp_err_t>(code));
        if p.is_null() {
            format!("ERR{code}")
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    }
}

/// Producer-side settings shared by the transactional and plain producers.
fn producer_config(bootstrap: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    // librdkafka's debug contexts (e.g. `eos,protocol`), to see where a transaction waits.
    if let Ok(debug) = std::env::var("LOADBEARING_KAFKA_DEBUG") {
        c.set("debug", debug).set("log_level", "7");
    } else {
        c.set("log_level", "3");
    }
    c.set("bootstrap.servers", bootstrap)
        .set("linger.ms", "5")
        .set("message.max.bytes", "10000000")
        .set("queue.buffering.max.messages", "1000000")
        .set("queue.buffering.max.kbytes", "1048576");
    c
}

/// Forwards librdkafka's log lines to stderr with a timestamp when `LOADBEARING_KAFKA_DEBUG`
/// is set (otherwise they go to the `log` crate, i.e. nowhere).
pub struct StderrLog {
    start: Instant,
    on: bool,
}

impl Default for StderrLog {
    fn default() -> Self {
        StderrLog {
            start: Instant::now(),
            on: std::env::var_os("LOADBEARING_KAFKA_DEBUG").is_some(),
        }
    }
}

impl rdkafka::ClientContext for StderrLog {
    fn log(&self, level: rdkafka::config::RDKafkaLogLevel, fac: &str, log_message: &str) {
        if self.on {
            eprintln!(
                "{:>10.3?} {level:?} {fac} {log_message}",
                self.start.elapsed()
            );
        }
    }
}

impl rdkafka::producer::ProducerContext for StderrLog {
    type DeliveryOpaque = ();
    fn delivery(&self, _: &rdkafka::message::DeliveryResult<'_>, _: ()) {}
}

/// The transactional producer of one snapshot partition.
pub struct KafkaTxnProducer {
    producer: BaseProducer<StderrLog>,
    topic: String,
    partition: i32,
}

impl KafkaTxnProducer {
    /// Create and `init_transactions`. With a `transactional_id` another producer already
    /// uses (the Epoch design's stable id), this bumps the epoch and fences that producer.
    pub fn new(
        bootstrap: &str,
        transactional_id: &str,
        snapshot_topic: &str,
        partition: i32,
    ) -> Result<Self, TxnError> {
        Self::with_txn_timeout(
            bootstrap,
            transactional_id,
            snapshot_topic,
            partition,
            SNAPSHOT_TXN_TIMEOUT,
        )
    }

    /// As [`KafkaTxnProducer::new`], with this `transaction.timeout.ms`.
    pub fn with_txn_timeout(
        bootstrap: &str,
        transactional_id: &str,
        snapshot_topic: &str,
        partition: i32,
        txn_timeout: Duration,
    ) -> Result<Self, TxnError> {
        let producer: BaseProducer<StderrLog> = producer_config(bootstrap)
            .set("transactional.id", transactional_id)
            .set(
                "transaction.timeout.ms",
                txn_timeout.as_millis().to_string(),
            )
            // A transaction that begins while the previous one's markers are still being
            // written gets CONCURRENT_TRANSACTIONS and is retried after this back-off; the
            // default (100 ms) dominates a small transaction's latency.
            .set("retry.backoff.ms", "5")
            .set("retry.backoff.max.ms", "50")
            .create_with_context(StderrLog::default())
            .map_err(from_kafka)?;
        producer
            .init_transactions(TXN_TIMEOUT)
            .map_err(from_kafka)?;
        Ok(KafkaTxnProducer {
            producer,
            topic: snapshot_topic.to_string(),
            partition,
        })
    }
}

impl KafkaTxnProducer {
    /// Wait until every record sent is on the broker (an open transaction's records then pin
    /// the last stable offset).
    pub fn deliver(&self) {
        drain(&self.producer, TXN_TIMEOUT);
    }
}

/// Serve delivery reports until nothing is in flight. rdkafka's own flush (which its
/// `commit_transaction` runs first) re-checks only after a poll of up to 100 ms, which put a
/// fixed ~100 ms into every transaction commit.
fn drain<C: rdkafka::producer::ProducerContext>(producer: &BaseProducer<C>, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    while producer.in_flight_count() > 0 && Instant::now() < deadline {
        producer.poll(Duration::from_millis(1));
    }
}

fn send_record<C: rdkafka::producer::ProducerContext<DeliveryOpaque = ()>>(
    producer: &BaseProducer<C>,
    topic: &str,
    partition: i32,
    write: &SnapshotWrite,
) -> Result<(), TxnError> {
    let offset = write.offset.to_string();
    let headers = OwnedHeaders::new().insert(Header {
        key: "offset",
        value: Some(offset.as_bytes()),
    });
    let mut record: BaseRecord<'_, str, [u8]> = BaseRecord::to(topic)
        .partition(partition)
        .key(write.key.as_str())
        .headers(headers);
    if let Some(v) = &write.value {
        record = record.payload(v.as_slice());
    }
    loop {
        match producer.send(record) {
            Ok(()) => return Ok(()),
            Err((
                KafkaError::MessageProduction(rdkafka::types::RDKafkaErrorCode::QueueFull),
                r,
            )) => {
                record = r;
                producer.poll(Duration::from_millis(10));
            }
            Err((e, _)) => return Err(from_kafka(e)),
        }
    }
}

impl TxnProducer for KafkaTxnProducer {
    fn begin(&mut self) -> Result<(), TxnError> {
        self.producer.begin_transaction().map_err(from_kafka)
    }

    fn send_offsets(
        &mut self,
        input: &InputPartition,
        offset: i64,
        meta: &GroupMetadata,
    ) -> Result<(), TxnError> {
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(&input.topic, input.partition, Offset::Offset(offset))
            .map_err(from_kafka)?;
        let cstr = |s: &str| {
            CString::new(s)
                .map_err(|_| classify("CLIENT".into(), "NUL in a name".into(), Flags::default()))
        };
        let group = cstr(&meta.group_id)?;
        let member = cstr(&meta.member_id)?;
        let instance = match &meta.group_instance_id {
            Some(i) => Some(cstr(i)?),
            None => None,
        };
        // SAFETY: the strings outlive the calls; the metadata is destroyed after use; the
        // error, when returned, is read and destroyed here.
        unsafe {
            let cgmd = rdsys::rd_kafka_consumer_group_metadata_new_with_genid(
                group.as_ptr(),
                meta.generation_id,
                member.as_ptr(),
                instance.as_ref().map_or(std::ptr::null(), |i| i.as_ptr()),
            );
            let err = rdsys::rd_kafka_send_offsets_to_transaction(
                self.producer.client().native_ptr(),
                tpl.ptr(),
                cgmd,
                TXN_TIMEOUT.as_millis() as i32,
            );
            rdsys::rd_kafka_consumer_group_metadata_destroy(cgmd);
            if err.is_null() {
                return Ok(());
            }
            let code = CStr::from_ptr(rdsys::rd_kafka_error_name(err))
                .to_string_lossy()
                .into_owned();
            let message = CStr::from_ptr(rdsys::rd_kafka_error_string(err))
                .to_string_lossy()
                .into_owned();
            let flags = Flags {
                fatal: rdsys::rd_kafka_error_is_fatal(err) != 0,
                retriable: rdsys::rd_kafka_error_is_retriable(err) != 0,
                requires_abort: rdsys::rd_kafka_error_txn_requires_abort(err) != 0,
            };
            rdsys::rd_kafka_error_destroy(err);
            Err(classify(code, message, flags))
        }
    }

    fn send(&mut self, write: &SnapshotWrite) -> Result<(), TxnError> {
        send_record(&self.producer, &self.topic, self.partition, write)
    }

    fn commit(&mut self) -> Result<(), TxnError> {
        drain(&self.producer, TXN_TIMEOUT);
        self.producer
            .commit_transaction(TXN_TIMEOUT)
            .map_err(from_kafka)
    }

    fn abort(&mut self) -> Result<(), TxnError> {
        self.producer
            .abort_transaction(TXN_TIMEOUT)
            .map_err(from_kafka)
    }
}

/// The design before the fix (issue #732): a plain producer, every write lands.
pub struct PlainProducer {
    producer: BaseProducer,
    topic: String,
    partition: i32,
}

impl PlainProducer {
    pub fn new(bootstrap: &str, snapshot_topic: &str, partition: i32) -> Result<Self, TxnError> {
        let producer: BaseProducer = producer_config(bootstrap)
            .set("acks", "all")
            .create()
            .map_err(from_kafka)?;
        Ok(PlainProducer {
            producer,
            topic: snapshot_topic.to_string(),
            partition,
        })
    }

    /// Send without waiting (the benchmark's pipelined writes); [`PlainProducer::flush`] waits.
    pub fn send(&self, write: &SnapshotWrite) -> Result<(), TxnError> {
        send_record(&self.producer, &self.topic, self.partition, write)
    }

    pub fn flush(&self) -> Result<(), TxnError> {
        drain(&self.producer, TXN_TIMEOUT);
        self.producer.flush(TXN_TIMEOUT).map_err(from_kafka)
    }

    /// Write one snapshot and wait for it.
    pub fn write(&self, write: &SnapshotWrite) -> Result<(), TxnError> {
        self.send(write)?;
        self.flush()
    }
}

/// The #732 design as a [`TxnProducer`] (with [`crate::group_commit::Fence::Unfenced`]): no
/// transaction, no offset in the write; `commit` waits for the sends.
impl TxnProducer for PlainProducer {
    fn begin(&mut self) -> Result<(), TxnError> {
        Ok(())
    }
    fn send_offsets(
        &mut self,
        _input: &InputPartition,
        _offset: i64,
        _meta: &GroupMetadata,
    ) -> Result<(), TxnError> {
        Ok(())
    }
    fn send(&mut self, write: &SnapshotWrite) -> Result<(), TxnError> {
        PlainProducer::send(self, write)
    }
    fn commit(&mut self) -> Result<(), TxnError> {
        self.flush()
    }
    fn abort(&mut self) -> Result<(), TxnError> {
        Ok(())
    }
}

/// The consumer's group metadata right now (None if librdkafka has none).
pub fn group_metadata_of<C: ConsumerContext>(consumer: &BaseConsumer<C>) -> Option<GroupMetadata> {
    // SAFETY: the metadata is a copy owned here, read through its accessors and destroyed.
    unsafe {
        let cgmd = rdsys::rd_kafka_consumer_group_metadata(consumer.client().native_ptr());
        if cgmd.is_null() {
            return None;
        }
        let s = |p: *const std::os::raw::c_char| {
            (!p.is_null()).then(|| CStr::from_ptr(p).to_string_lossy().into_owned())
        };
        let meta = GroupMetadata {
            group_id: s(rdsys::rd_kafka_consumer_group_metadata_group_id(cgmd)).unwrap_or_default(),
            generation_id: rdsys::rd_kafka_consumer_group_metadata_generation_id(cgmd),
            member_id: s(rdsys::rd_kafka_consumer_group_metadata_member_id(cgmd))
                .unwrap_or_default(),
            group_instance_id: s(rdsys::rd_kafka_consumer_group_metadata_group_instance_id(
                cgmd,
            )),
        };
        rdsys::rd_kafka_consumer_group_metadata_destroy(cgmd);
        Some(meta)
    }
}

/// Live group metadata, read from the consumer on every call.
pub struct LiveGroupMetadata<C: ConsumerContext + 'static>(pub std::sync::Arc<BaseConsumer<C>>);

impl<C: ConsumerContext + 'static> GroupMetadataSource for LiveGroupMetadata<C> {
    fn current(&self) -> Option<GroupMetadata> {
        group_metadata_of(&self.0)
    }
}

/// A Kafka client call that failed (`what` was being done), or a wait for the broker that ran
/// out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientError {
    Client { what: String, reason: String },
    Timeout { what: String, after: Duration },
}

impl ClientError {
    /// A failure while doing `what`, for `map_err`.
    pub fn while_<E: std::fmt::Display>(what: impl Into<String>) -> impl FnOnce(E) -> ClientError {
        let what = what.into();
        move |e| ClientError::Client {
            what,
            reason: e.to_string(),
        }
    }
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Client { what, reason } => write!(f, "{what}: {reason}"),
            ClientError::Timeout { what, after } => write!(f, "{what} within {after:?}"),
        }
    }
}

impl std::error::Error for ClientError {}

/// Create topics (1 replica); `compacted` ones get `cleanup.policy=compact`.
pub fn create_topics(bootstrap: &str, topics: &[(&str, i32, bool)]) -> Result<(), ClientError> {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .map_err(ClientError::while_("admin client"))?;
    let new: Vec<NewTopic<'_>> = topics
        .iter()
        .map(|(name, partitions, compacted)| {
            let t = NewTopic::new(name, *partitions, TopicReplication::Fixed(1));
            if *compacted {
                t.set("cleanup.policy", "compact")
            } else {
                t
            }
        })
        .collect();
    let opts = AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)));
    let results = futures::executor::block_on(admin.create_topics(&new, &opts))
        .map_err(ClientError::while_("create topics"))?;
    for r in results {
        if let Err((name, code)) = r {
            return Err(ClientError::Client {
                what: format!("create topic {name}"),
                reason: code.to_string(),
            });
        }
    }
    Ok(())
}

/// Produce plain input records (key, payload) to a partition; returns their offsets.
pub fn produce_input(
    bootstrap: &str,
    topic: &str,
    partition: i32,
    records: &[(&str, &[u8])],
) -> Result<(), ClientError> {
    let producer: BaseProducer = producer_config(bootstrap)
        .create()
        .map_err(ClientError::while_("input producer"))?;
    for (key, payload) in records {
        producer
            .send(
                BaseRecord::to(topic)
                    .partition(partition)
                    .key(*key)
                    .payload(*payload),
            )
            .map_err(|(e, _)| ClientError::while_("produce input")(e))?;
    }
    producer
        .flush(TXN_TIMEOUT)
        .map_err(ClientError::while_("flush input"))
}

/// The recovery read's consumers: a `read_committed` reader and a `read_uncommitted` probe for
/// the target (R-850 option A). The reader is assigned, never subscribed, so it never joins a
/// group; librdkafka's `assign` still wants a `group.id`, so each read gets one of its own that
/// nothing ever commits under (K-9: no auto-commit, no offset store, an explicit start).
pub struct KafkaSnapshotLog {
    reader: BaseConsumer,
    /// The target's `read_uncommitted` probe and the diagnosis's both ends.
    ends: EndsProbe,
    topic: String,
    partition: i32,
    lens: TargetLens,
}

/// Where the read takes its target from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetLens {
    /// The high watermark, through the `read_uncommitted` probe (R-850 option A).
    HighWatermark,
    /// TEST-ONLY PLANTED MUTANT, for conformance (F-10 as found): the reader's own end offset,
    /// which under `read_committed` is the last stable offset, so a snapshot committed above
    /// an open transaction is left out.
    OwnEnd,
}

/// The group id prefix of recovery readers; the rest is unique per read.
const RECOVERY_GROUP_PREFIX: &str = "loadbearing-recovery-";

fn log_error(what: &'static str) -> impl Fn(KafkaError) -> LogError {
    move |e| LogError {
        what,
        reason: e.to_string(),
    }
}

impl KafkaSnapshotLog {
    /// The partition, read with the target `lens` gives (the design's is
    /// [`TargetLens::HighWatermark`]).
    pub fn open(
        bootstrap: &str,
        topic: &str,
        partition: i32,
        lens: TargetLens,
    ) -> Result<Self, LogError> {
        static READS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let group = format!(
            "{RECOVERY_GROUP_PREFIX}{}-{}",
            std::process::id(),
            READS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let reader: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", bootstrap)
            .set("group.id", group)
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("isolation.level", "read_committed")
            .set("log_level", "3")
            .create()
            .map_err(log_error("recovery reader"))?;
        Ok(KafkaSnapshotLog {
            reader,
            ends: EndsProbe::open(bootstrap, topic, partition)?,
            topic: topic.to_string(),
            partition,
            lens,
        })
    }
}

fn key_of(m: &rdkafka::message::BorrowedMessage<'_>) -> String {
    m.key()
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .unwrap_or_default()
}

fn offset_header(m: &rdkafka::message::BorrowedMessage<'_>) -> Option<u64> {
    m.headers()?
        .iter()
        .find(|h| h.key == "offset")?
        .value
        .and_then(|v| std::str::from_utf8(v).ok()?.parse().ok())
}

impl SnapshotLog for KafkaSnapshotLog {
    fn target(&mut self) -> Result<i64, LogError> {
        let wait = Duration::from_secs(10);
        match self.lens {
            TargetLens::HighWatermark => self.ends.high(wait),
            TargetLens::OwnEnd => self
                .reader
                .fetch_watermarks(&self.topic, self.partition, wait)
                .map(|(_, end)| end)
                .map_err(log_error("the reader's own end offset")),
        }
    }

    fn start(&mut self) -> Result<(), LogError> {
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(&self.topic, self.partition, Offset::Beginning)
            .map_err(log_error("assignment"))?;
        self.reader.assign(&tpl).map_err(log_error("assign"))
    }

    fn position(&mut self) -> i64 {
        self.reader
            .position()
            .ok()
            .and_then(|p| {
                p.find_partition(&self.topic, self.partition)?
                    .offset()
                    .to_raw()
            })
            .unwrap_or(-1)
    }

    fn poll(&mut self, wait: Duration) -> Result<Option<SnapshotRecord>, LogError> {
        match self.reader.poll(wait) {
            Some(Ok(m)) => Ok(Some(SnapshotRecord {
                position: m.offset(),
                key: key_of(&m),
                offset: offset_header(&m),
                value: m.payload().map(<[u8]>::to_vec),
            })),
            Some(Err(KafkaError::PartitionEOF(_))) | None => Ok(None),
            Some(Err(e)) => Err(log_error("read")(e)),
        }
    }

    fn ends_now(&mut self, wait: Duration) -> Result<Ends, LogError> {
        self.ends.read(wait)
    }
}

/// Read a snapshot partition with `read_committed`, from the beginning up to the high
/// watermark taken at the start: records of aborted (fenced) transactions are never returned,
/// and a snapshot committed after an open transaction is waited for (R-850 option A). Fails
/// only when the read makes no progress for the budget's stall, with the cause.
pub fn recover(
    bootstrap: &str,
    topic: &str,
    partition: i32,
    budget: &RecoveryBudget,
) -> Result<HashMap<String, Read>, RecoveryError> {
    let mut log = KafkaSnapshotLog::open(bootstrap, topic, partition, TargetLens::HighWatermark)?;
    read_to_target(&mut log, &WallClock::default(), budget)
}

/// Both ends of a partition now: the high watermark (a `read_uncommitted` client) and what a
/// `read_committed` client is told is the end (the last stable offset, if Kafka says so).
pub fn ends(bootstrap: &str, topic: &str, partition: i32) -> Result<Ends, ClientError> {
    EndsProbe::open(bootstrap, topic, partition)
        .and_then(|mut probe| probe.read(Duration::from_secs(10)))
        .map_err(|e| ClientError::Client {
            what: e.what.to_string(),
            reason: e.reason,
        })
}

/// Reads both ends of one partition, as often as asked, through a client of each isolation
/// level (kept open: a harness reads the ends after every step).
pub struct EndsProbe {
    uncommitted: BaseConsumer,
    committed: BaseConsumer,
    topic: String,
    partition: i32,
}

impl EndsProbe {
    pub fn open(bootstrap: &str, topic: &str, partition: i32) -> Result<Self, LogError> {
        let client = |isolation: &str, what: &'static str| -> Result<BaseConsumer, LogError> {
            ClientConfig::new()
                .set("bootstrap.servers", bootstrap)
                .set("isolation.level", isolation)
                .set("log_level", "3")
                .create()
                .map_err(log_error(what))
        };
        Ok(EndsProbe {
            uncommitted: client("read_uncommitted", "high watermark probe")?,
            committed: client("read_committed", "last stable offset probe")?,
            topic: topic.to_string(),
            partition,
        })
    }

    /// The high watermark: the `read_uncommitted` end.
    pub fn high(&mut self, wait: Duration) -> Result<i64, LogError> {
        self.uncommitted
            .fetch_watermarks(&self.topic, self.partition, wait)
            .map(|(_, high)| high)
            .map_err(log_error("read_uncommitted end offset"))
    }

    pub fn read(&mut self, wait: Duration) -> Result<Ends, LogError> {
        let high = self.high(wait)?;
        let (_, stable) = self
            .committed
            .fetch_watermarks(&self.topic, self.partition, wait)
            .map_err(log_error("read_committed end offset"))?;
        Ok(Ends { high, stable })
    }
}

/// Every record of one partition in order, with its position, records of open and aborted
/// transactions included (`read_uncommitted`; control markers are never returned): for a
/// harness that maps positions back to what it wrote.
pub struct UncommittedScan {
    consumer: BaseConsumer,
}

impl UncommittedScan {
    pub fn open(bootstrap: &str, topic: &str, partition: i32) -> Result<Self, LogError> {
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", bootstrap)
            // `assign` wants a group id; nothing is ever committed under it.
            .set("group.id", format!("loadbearing-scan-{topic}"))
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("isolation.level", "read_uncommitted")
            .set("log_level", "3")
            .create()
            .map_err(log_error("uncommitted scan"))?;
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(topic, partition, Offset::Beginning)
            .map_err(log_error("assignment"))?;
        consumer.assign(&tpl).map_err(log_error("assign"))?;
        Ok(UncommittedScan { consumer })
    }

    /// The next record's key and position, waiting up to `wait`.
    pub fn next(&mut self, wait: Duration) -> Result<Option<(String, i64)>, LogError> {
        match self.consumer.poll(wait) {
            Some(Ok(m)) => Ok(Some((key_of(&m), m.offset()))),
            Some(Err(KafkaError::PartitionEOF(_))) | None => Ok(None),
            Some(Err(e)) => Err(log_error("scan")(e)),
        }
    }
}

/// The timings of our deployment: the snapshot producers' transaction timeout, the broker's
/// abort scan, and the member's poll interval.
pub fn deployment(abort_scan: Duration, max_poll_interval: Duration) -> Deployment {
    Deployment {
        txn_timeout: SNAPSHOT_TXN_TIMEOUT,
        abort_scan,
        max_poll_interval,
    }
}

/// The input offset committed for the group (read_committed: waits for pending transactional
/// offsets, KIP-447's require_stable), or None.
pub fn committed_offset(
    bootstrap: &str,
    group: &str,
    topic: &str,
    partition: i32,
) -> Result<Option<i64>, ClientError> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", group)
        .set("isolation.level", "read_committed")
        .set("enable.auto.commit", "false")
        .set("log_level", "3")
        .create()
        .map_err(ClientError::while_("offset consumer"))?;
    committed_of(&consumer, topic, partition)
}

/// The offset `consumer`'s group committed for the partition (stable offsets only under
/// read_committed), or None when nothing is committed.
pub(crate) fn committed_of<C: ConsumerContext>(
    consumer: &BaseConsumer<C>,
    topic: &str,
    partition: i32,
) -> Result<Option<i64>, ClientError> {
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition(topic, partition);
    let got = consumer
        .committed_offsets(tpl, Duration::from_secs(20))
        .map_err(ClientError::while_("committed offsets"))?;
    Ok(got
        .find_partition(topic, partition)
        .and_then(|e| e.offset().to_raw())
        .filter(|o| *o >= 0))
}
