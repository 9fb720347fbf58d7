//! The group member: a consumer in the group (rdkafka, feature `kafka`) whose rebalance callback
//! tears down the flows of revoked partitions before the consumer joins the next generation.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext, Rebalance};
use rdkafka::message::Message;
use rdkafka::ClientContext;

use super::{FlowRegistry, InputRecord, KafkaFlow, TeardownMode};
use crate::group_commit::{GroupCommit, GroupCommitConfig, GroupMetadataSource, TxnProducer};
use crate::kafka::{committed_of, group_metadata_of, ClientError, LiveGroupMetadata};
use crate::trace::{KafkaStep, SharedKafkaTracer};

/// The member's consumer context: the rebalance callback.
pub struct MemberContext {
    name: String,
    tracer: SharedKafkaTracer,
    flows: FlowRegistry,
    torn_down: Mutex<Vec<i32>>,
    assigned: Mutex<Option<Vec<i32>>>,
}

impl ClientContext for MemberContext {}

impl ConsumerContext for MemberContext {
    fn pre_rebalance(&self, _consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Revoke(tpl) = rebalance {
            let revoked: Vec<i32> = tpl.elements().iter().map(|e| e.partition()).collect();
            let torn = self.flows.revoke(&revoked);
            self.torn_down
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend(torn);
            *self.assigned.lock().unwrap_or_else(|e| e.into_inner()) = None;
        }
    }

    fn post_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Assign(tpl) = rebalance {
            let partitions: Vec<i32> = tpl.elements().iter().map(|e| e.partition()).collect();
            let generation = group_metadata_of(consumer).map_or(-1, |m| m.generation_id);
            let torn_down =
                std::mem::take(&mut *self.torn_down.lock().unwrap_or_else(|e| e.into_inner()));
            self.tracer.kafka(&KafkaStep::Poll {
                member: self.name.clone(),
                generation,
                torn_down,
            });
            self.tracer.kafka(&KafkaStep::Rebalance {
                member: self.name.clone(),
                generation,
                partitions: partitions.clone(),
            });
            *self.assigned.lock().unwrap_or_else(|e| e.into_inner()) = Some(partitions);
        }
    }
}

/// A consumer in the group, with the rebalance callback above.
pub struct Member {
    pub consumer: Arc<BaseConsumer<MemberContext>>,
    pub name: String,
}

/// Consumer settings for a member.
#[derive(Clone, Debug)]
pub struct MemberConfig {
    pub session_timeout: Duration,
    pub max_poll_interval: Duration,
}

impl Default for MemberConfig {
    fn default() -> Self {
        MemberConfig {
            session_timeout: Duration::from_secs(6),
            // Room for a recovery read's no-progress budget above a healthy wait at an open
            // transaction (10 s timeout + a 10 s abort scan by default).
            max_poll_interval: Duration::from_secs(60),
        }
    }
}

impl Member {
    pub fn join(
        bootstrap: &str,
        group: &str,
        topic: &str,
        name: &str,
        config: &MemberConfig,
        tracer: SharedKafkaTracer,
    ) -> Result<Member, ClientError> {
        Self::join_with(
            bootstrap,
            group,
            topic,
            name,
            config,
            TeardownMode::Awaited,
            tracer,
        )
    }

    /// As [`Member::join`], with this teardown on revoke (the planted mutant: deferred).
    pub fn join_with(
        bootstrap: &str,
        group: &str,
        topic: &str,
        name: &str,
        config: &MemberConfig,
        teardown: TeardownMode,
        tracer: SharedKafkaTracer,
    ) -> Result<Member, ClientError> {
        let context = MemberContext {
            name: name.to_string(),
            flows: FlowRegistry::new(name, teardown, tracer.clone()),
            tracer,
            torn_down: Mutex::new(Vec::new()),
            assigned: Mutex::new(None),
        };
        let consumer: BaseConsumer<MemberContext> = ClientConfig::new()
            .set("bootstrap.servers", bootstrap)
            .set("group.id", group)
            .set("client.id", name)
            .set("enable.auto.commit", "false")
            .set("isolation.level", "read_committed")
            .set("auto.offset.reset", "earliest")
            .set("partition.assignment.strategy", "range")
            .set(
                "session.timeout.ms",
                config.session_timeout.as_millis().to_string(),
            )
            .set(
                "heartbeat.interval.ms",
                (config.session_timeout.as_millis() / 4)
                    .max(100)
                    .to_string(),
            )
            .set(
                "max.poll.interval.ms",
                config.max_poll_interval.as_millis().to_string(),
            )
            .set("log_level", "3")
            .create_with_context(context)
            .map_err(ClientError::while_(format!("consumer {name}")))?;
        consumer
            .subscribe(&[topic])
            .map_err(ClientError::while_(format!("subscribe {name}")))?;
        Ok(Member {
            consumer: Arc::new(consumer),
            name: name.to_string(),
        })
    }

    /// The partitions of the last assignment (None while unassigned).
    pub fn assigned(&self) -> Option<Vec<i32>> {
        self.consumer
            .context()
            .assigned
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Poll (running the rebalance callback) until assigned or `timeout`; the records
    /// polled meanwhile are returned.
    pub fn poll_until_assigned(&self, timeout: Duration) -> Result<Vec<InputRecord>, ClientError> {
        let deadline = Instant::now() + timeout;
        let mut records = Vec::new();
        loop {
            if let Some(a) = self.assigned() {
                if !a.is_empty() {
                    return Ok(records);
                }
            }
            if Instant::now() > deadline {
                return Err(ClientError::Timeout {
                    what: format!("{} not assigned", self.name),
                    after: timeout,
                });
            }
            records.extend(self.poll(Duration::from_millis(100))?);
        }
    }

    /// One poll: at most one record (the rebalance callback runs inside).
    pub fn poll(&self, timeout: Duration) -> Result<Option<InputRecord>, ClientError> {
        match self.consumer.poll(timeout) {
            None => Ok(None),
            Some(Ok(m)) => Ok(Some(InputRecord {
                partition: m.partition(),
                offset: m.offset(),
                key: m
                    .key()
                    .map(|k| String::from_utf8_lossy(k).into_owned())
                    .unwrap_or_default(),
                payload: m.payload().unwrap_or_default().to_vec(),
            })),
            // Consumer errors are events (a timed-out join, a lost session): librdkafka goes
            // on by itself. Report them and carry on.
            Some(Err(e)) => {
                eprintln!("{} poll: {e}", self.name);
                Ok(None)
            }
        }
    }

    /// Poll until `n` records arrived (or `timeout`).
    pub fn poll_records(
        &self,
        n: usize,
        timeout: Duration,
    ) -> Result<Vec<InputRecord>, ClientError> {
        let deadline = Instant::now() + timeout;
        let mut out = Vec::new();
        while out.len() < n {
            if Instant::now() > deadline {
                return Err(ClientError::Timeout {
                    what: format!("{}: {} of {n} records", self.name, out.len()),
                    after: timeout,
                });
            }
            out.extend(self.poll(Duration::from_millis(100))?);
        }
        Ok(out)
    }

    /// Open the flow of an assigned `partition` over `producer`, registered with the rebalance
    /// callback, which tears it down when the partition is revoked (S-3): the member is how a
    /// flow is made, so none runs uncoupled. Seeded at `config`'s offset, with the member's live
    /// group metadata unless `meta` says otherwise.
    pub fn open_flow<P: TxnProducer + 'static>(
        &self,
        producer: P,
        config: GroupCommitConfig,
        meta: Option<Arc<dyn GroupMetadataSource>>,
        tracer: SharedKafkaTracer,
    ) -> KafkaFlow<P> {
        let meta =
            meta.unwrap_or_else(|| Arc::new(LiveGroupMetadata(self.consumer.clone())) as Arc<_>);
        let generation = meta.current().map_or(-1, |m| m.generation_id);
        let partition = config.input.partition;
        let seed = config.seed;
        let commit = Arc::new(GroupCommit::new(producer, config, meta, tracer.clone()));
        self.flows().register(partition, commit.clone());
        KafkaFlow::new(commit, seed, generation, tracer)
    }

    /// The member's flows.
    pub fn flows(&self) -> &FlowRegistry {
        &self.consumer.context().flows
    }

    /// The committed offset of an assigned partition (read_committed: stable offsets only).
    pub fn committed(&self, topic: &str, partition: i32) -> Result<Option<i64>, ClientError> {
        committed_of(&self.consumer, topic, partition)
    }
}
