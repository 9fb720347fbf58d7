//! The transactional producer the Kafka families share (the group commit, the partition
//! flows, the lanes, token sync, the flows' liveness): the backends it runs on, the group
//! commit on the in-memory producer, the recorder of its step events, the model's reading of
//! how a transaction ended, and the group commit on a real broker. A family uses these; no
//! family reaches into another's module.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use loadbearing_impls::trace::Tracer;
use loadbearing_impls_kafka::group_commit::{
    GroupCommit, GroupCommitConfig, GroupMetadata, GroupMetadataSource, MemProducer,
};
use loadbearing_impls_kafka::trace::{KafkaStep, KafkaTracer, SharedKafkaTracer, TxnOutcome};

use crate::backend::BackendKind;

/// The backends a transactional producer runs on: the group commit's, and so the Kafka
/// family's (its flows commit through a group commit).
pub const PRODUCERS: &[BackendKind] = &[BackendKind::Memory, BackendKind::Kafka];

/// The input offset the partition was assigned at: the next record to consume is offset 1,
/// so the implementation's scheduled offset (the next to consume) is the model's `oc` + 1.
pub const SEED: i64 = 1;
/// The consumer generation the in-memory coordinator holds live.
const GENERATION: i32 = 1;
/// How long the flow waits for the writes below an offset to become durable.
pub const SCHEDULE_PATIENCE: Duration = Duration::from_secs(20);

fn member(generation: i32) -> GroupMetadata {
    GroupMetadata {
        group_id: "conform".into(),
        generation_id: generation,
        member_id: "member-1".into(),
        group_instance_id: None,
    }
}

/// A group commit on the in-memory producer, whose coordinator holds GENERATION live.
pub fn memory_commit(
    config: GroupCommitConfig,
    tracer: SharedKafkaTracer,
) -> (GroupCommit<MemProducer>, MemProducer) {
    let producer = MemProducer::new();
    producer.log().live_generation = Some(GENERATION);
    let meta: Arc<dyn GroupMetadataSource> = Arc::new(|| Some(member(GENERATION)));
    (
        GroupCommit::new(producer.clone(), config, meta, tracer),
        producer,
    )
}

/// Keeps the Kafka step events in order, and which input offsets were offered (the flow waits
/// for those before it schedules past them).
#[derive(Default)]
pub struct Recorder {
    steps: Mutex<Vec<KafkaStep>>,
    offered: Mutex<u64>,
    changed: Condvar,
}

impl Recorder {
    pub fn steps(&self) -> Vec<KafkaStep> {
        lock(&self.steps).clone()
    }

    /// Blocks until the writes of offsets 1..=o were offered.
    pub fn wait_offered(&self, o: u8) {
        let all: u64 = (1..=o).map(|k| 1u64 << k).sum();
        let mut offered = lock(&self.offered);
        while *offered & all != all {
            offered = self
                .changed
                .wait(offered)
                .unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Tracer for Recorder {}

impl KafkaTracer for Recorder {
    fn kafka(&self, step: &KafkaStep) {
        lock(&self.steps).push(step.clone());
        if let KafkaStep::Offer { offset, .. } = step {
            *lock(&self.offered) |= 1u64 << offset;
            self.changed.notify_all();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The model's reading of how a transaction ended: `None` for an outcome nobody knows (the
/// commit was sent and never answered), which the model may take either way.
pub fn outcome_of(outcome: &TxnOutcome) -> Option<loadbearing_specs::kafka::trace::TxnOutcome> {
    use loadbearing_specs::kafka::trace::TxnOutcome as Model;
    Some(match outcome {
        TxnOutcome::Committed => Model::Committed,
        TxnOutcome::Fenced(code) => Model::Fenced(code.clone()),
        TxnOutcome::Refused(why) => Model::Refused(why.clone()),
        TxnOutcome::Failed(why) => Model::Failed(why.clone()),
        TxnOutcome::Indeterminate(_) => return None,
    })
}

/// The group commit on a real Kafka 4.4 broker: a consumer group member supplies the live
/// group metadata, each run writes to a fresh snapshot topic with a fresh transactional id.
#[cfg(feature = "kafka")]
pub mod kafka_backend {
    use super::*;
    use crate::error::Error;
    use loadbearing_impls_kafka::flow::{Member, MemberConfig};
    use loadbearing_impls_kafka::group_commit::InputPartition;
    use loadbearing_impls_kafka::kafka::{self, KafkaTxnProducer, LiveGroupMetadata};
    use loadbearing_impls_kafka::trace::no_trace;

    pub struct Group {
        bootstrap: String,
        member: Member,
        run: String,
        input: String,
    }

    impl Group {
        pub fn join(bootstrap: &str) -> Result<Group, Error> {
            let run = format!(
                "conform-gc-{}-{}",
                std::process::id(),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_millis())
                    .unwrap_or(0)
            );
            let input = format!("{run}-input");
            kafka::create_topics(bootstrap, &[(&input, 1, false)])
                .map_err(Error::open("creating the input topic"))?;
            let member = Member::join(
                bootstrap,
                &format!("{run}-group"),
                &input,
                "conform",
                &MemberConfig::default(),
                no_trace(),
            )
            .map_err(Error::open("joining the consumer group"))?;
            member
                .poll_until_assigned(Duration::from_secs(60))
                .map_err(Error::open("waiting for the assignment"))?;
            Ok(Group {
                bootstrap: bootstrap.to_string(),
                member,
                run,
                input,
            })
        }

        /// A group commit on a fresh snapshot topic, fenced by the member's live generation.
        pub fn commit(
            &mut self,
            round: usize,
            config: GroupCommitConfig,
            tracer: SharedKafkaTracer,
        ) -> Result<GroupCommit<KafkaTxnProducer>, Error> {
            let topic = format!("{}-snapshots-{round}", self.run);
            kafka::create_topics(&self.bootstrap, &[(&topic, 1, true)])
                .map_err(Error::open("creating the snapshot topic"))?;
            let producer =
                KafkaTxnProducer::new(&self.bootstrap, &format!("{topic}-txn"), &topic, 0)
                    .map_err(|e| Error::Open {
                        what: "init_transactions",
                        reason: e.to_string(),
                    })?;
            // Keep the membership alive between runs (a member that stops polling is evicted).
            let _ = self.member.poll(Duration::from_millis(1));
            let config = GroupCommitConfig {
                input: InputPartition::new(&self.input, 0),
                ..config
            };
            Ok(GroupCommit::new(
                producer,
                config,
                Arc::new(LiveGroupMetadata(self.member.consumer.clone())),
                tracer,
            ))
        }
    }
}
