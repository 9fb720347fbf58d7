//! Scenario plumbing for the tests against the real broker.
#![allow(dead_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use loadbearing_impls_kafka::flow::{KafkaFlow, Member, MemberConfig};
use loadbearing_impls_kafka::group_commit::{
    GroupCommitConfig, GroupMetadataSource, InputPartition, TxnProducer,
};
use loadbearing_impls_kafka::harness::{self, KafkaBroker};
use loadbearing_impls_kafka::kafka::{self, KafkaTxnProducer, LiveGroupMetadata};
use loadbearing_impls_kafka::trace::{KafkaRecorder, SharedKafkaTracer};

pub const KEY: &str = "k";
/// Input events 0..EVENTS for KEY.
pub const EVENTS: i64 = 10;
/// The zombie folded events 0..ZOMBIE_UPTO before it stalled.
pub const ZOMBIE_UPTO: i64 = 5;

/// Names no other test (or earlier run on the same broker) uses.
pub fn unique(name: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "{name}-{}-{nanos:x}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// One test's topics and group.
pub struct Scenario {
    pub bootstrap: String,
    pub input: String,
    pub snapshots: String,
    pub group: String,
    pub rec: Arc<KafkaRecorder>,
}

impl Scenario {
    /// Topics (input: plain, snapshots: compacted, one partition each) and EVENTS input
    /// records for KEY.
    pub fn new(broker: &KafkaBroker, name: &str) -> Scenario {
        let s = Scenario {
            bootstrap: broker.bootstrap(),
            input: unique(&format!("{name}-in")),
            snapshots: unique(&format!("{name}-snap")),
            group: unique(&format!("{name}-g")),
            rec: KafkaRecorder::new(),
        };
        kafka::create_topics(
            &s.bootstrap,
            &[(&s.input, 1, false), (&s.snapshots, 1, true)],
        )
        .expect("create topics");
        let payloads: Vec<String> = (0..EVENTS).map(|i| format!("e{i}")).collect();
        let records: Vec<(&str, &[u8])> = payloads.iter().map(|p| (KEY, p.as_bytes())).collect();
        kafka::produce_input(&s.bootstrap, &s.input, 0, &records).expect("produce input");
        s
    }

    pub fn tracer(&self) -> SharedKafkaTracer {
        self.rec.clone()
    }

    pub fn join(&self, name: &str, config: &MemberConfig) -> Member {
        Member::join(
            &self.bootstrap,
            &self.group,
            &self.input,
            name,
            config,
            self.tracer(),
        )
        .expect("join the group")
    }

    pub fn producer(&self, transactional_id: &str) -> KafkaTxnProducer {
        KafkaTxnProducer::new(&self.bootstrap, transactional_id, &self.snapshots, 0)
            .expect("init_transactions")
    }

    /// A flow for `member` on partition 0, seeded at the committed offset (or 0), recovered,
    /// and registered with the member's rebalance callback.
    pub fn flow(
        &self,
        member: &Member,
        transactional_id: &str,
        config: impl FnOnce(GroupCommitConfig) -> GroupCommitConfig,
    ) -> KafkaFlow<KafkaTxnProducer> {
        let meta: Arc<dyn GroupMetadataSource> =
            Arc::new(LiveGroupMetadata(member.consumer.clone()));
        self.flow_with(member, transactional_id, meta, config)
    }

    pub fn flow_with(
        &self,
        member: &Member,
        transactional_id: &str,
        meta: Arc<dyn GroupMetadataSource>,
        config: impl FnOnce(GroupCommitConfig) -> GroupCommitConfig,
    ) -> KafkaFlow<KafkaTxnProducer> {
        self.flow_over(member, self.producer(transactional_id), meta, config)
    }

    /// A flow over any producer.
    pub fn flow_over<P: TxnProducer + 'static>(
        &self,
        member: &Member,
        producer: P,
        meta: Arc<dyn GroupMetadataSource>,
        config: impl FnOnce(GroupCommitConfig) -> GroupCommitConfig,
    ) -> KafkaFlow<P> {
        self.flow_full(member, producer, meta, config, true)
    }

    /// A flow, recovered from the snapshot topic or not (a zombie's stale state).
    pub fn flow_full<P: TxnProducer + 'static>(
        &self,
        member: &Member,
        producer: P,
        meta: Arc<dyn GroupMetadataSource>,
        config: impl FnOnce(GroupCommitConfig) -> GroupCommitConfig,
        recover: bool,
    ) -> KafkaFlow<P> {
        let seed = member
            .committed(&self.input, 0)
            .expect("committed offset")
            .unwrap_or(0);
        let mut flow = member.open_flow(
            producer,
            config(GroupCommitConfig::new(
                InputPartition::new(&self.input, 0),
                seed,
            )),
            Some(meta),
            self.tracer(),
        );
        if recover {
            flow.recover(self.recover().expect("recover"));
        }
        flow
    }

    pub fn recover(
        &self,
    ) -> Result<std::collections::HashMap<String, loadbearing_impls::store::Read>, String> {
        kafka::recover(
            &self.bootstrap,
            &self.snapshots,
            0,
            &harness::recovery_budget(),
        )
        .map_err(|e| e.to_string())
    }

    /// The snapshot of KEY recovered now: (offset, value).
    pub fn recovered_key(&self) -> Option<(u64, String)> {
        match self.recover().expect("recover").remove(KEY)? {
            loadbearing_impls::store::Read::Live { offset, value } => {
                Some((offset, String::from_utf8_lossy(&value).into_owned()))
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

/// The correct fold of events 0..=upto.
pub fn fold_upto(upto: i64) -> String {
    (0..=upto)
        .map(|i| format!("e{i}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A member that stalls: the coordinator waits for a member to rejoin for its rebalance
/// timeout (its max.poll.interval.ms; its heartbeats go on meanwhile), so a short one lets the
/// coordinator drop it soon after another member joins. librdkafka then resets its member id.
pub fn stalling() -> MemberConfig {
    MemberConfig {
        session_timeout: Duration::from_millis(1500),
        max_poll_interval: Duration::from_secs(6),
    }
}

/// Fold the records below `upto` into the flow.
pub fn fold_records<P: TxnProducer + 'static>(
    flow: &mut KafkaFlow<P>,
    records: &[loadbearing_impls_kafka::flow::InputRecord],
    upto: i64,
) {
    for r in records.iter().filter(|r| r.offset < upto) {
        flow.fold(&r.key, r.offset, &r.payload);
    }
}

/// The zombie: member A joins, gets partition 0, its flow (built by `make`) folds events
/// 0..ZOMBIE_UPTO, then A stalls (stops polling). Member B joins; the coordinator drops A;
/// B's flow (generation-fenced) recovers, folds every event, flushes and commits offset
/// EVENTS. Returns (A, A's flow, B, B's flow).
pub fn overlap<P: TxnProducer + 'static>(
    s: &Scenario,
    make: impl FnOnce(&Member) -> KafkaFlow<P>,
) -> (Member, KafkaFlow<P>, Member, KafkaFlow<KafkaTxnProducer>) {
    overlap_with(s, make, |s, b| s.flow(b, &unique("B-txn"), |c| c))
}

/// [`overlap`] with the owner's flow built by `make_owner`.
pub fn overlap_with<P: TxnProducer + 'static, Q: TxnProducer + 'static>(
    s: &Scenario,
    make: impl FnOnce(&Member) -> KafkaFlow<P>,
    make_owner: impl FnOnce(&Scenario, &Member) -> KafkaFlow<Q>,
) -> (Member, KafkaFlow<P>, Member, KafkaFlow<Q>) {
    let a = s.join("A", &stalling());
    let mut records = a
        .poll_until_assigned(Duration::from_secs(30))
        .expect("A assigned");
    let mut zombie = make(&a);
    while !records.iter().any(|r| r.offset >= ZOMBIE_UPTO - 1) {
        records.extend(a.poll_records(1, Duration::from_secs(20)).expect("A polls"));
    }
    fold_records(&mut zombie, &records, ZOMBIE_UPTO);
    eprintln!(
        "A before the stall: {:?}",
        loadbearing_impls_kafka::kafka::group_metadata_of(&a.consumer)
    );
    // A stalls from here on. B joins.
    let b = s.join("B", &MemberConfig::default());
    let t = std::time::Instant::now();
    let mut b_records = b
        .poll_until_assigned(Duration::from_secs(60))
        .expect("B assigned");
    eprintln!(
        "B assigned after {:?}: {:?}",
        t.elapsed(),
        loadbearing_impls_kafka::kafka::group_metadata_of(&b.consumer)
    );
    eprintln!(
        "A (stalled) now: {:?}",
        loadbearing_impls_kafka::kafka::group_metadata_of(&a.consumer)
    );
    let mut owner = make_owner(s, &b);
    while (b_records.len() as i64) < EVENTS {
        b_records.extend(b.poll_records(1, Duration::from_secs(20)).expect("B polls"));
    }
    fold_records(&mut owner, &b_records, EVENTS);
    owner.flush().expect("the owner's flush");
    owner.commit_offset().expect("the owner's offset commit");
    assert_eq!(
        s.recovered_key(),
        Some(((EVENTS - 1) as u64, fold_upto(EVENTS - 1))),
        "the owner's snapshot is durable"
    );
    (a, zombie, b, owner)
}

/// What `expected/facts.toml` records as observed for a fact knob.
pub fn recorded(knob: &str) -> bool {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../expected/facts.toml");
    let text = std::fs::read_to_string(path).expect("expected/facts.toml");
    let file: toml::Table = toml::from_str(&text).expect("facts.toml parses");
    file["fact"]
        .as_array()
        .expect("[[fact]] tables")
        .iter()
        .find(|f| f["knob"].as_str() == Some(knob))
        .unwrap_or_else(|| panic!("{knob} is not in facts.toml"))["observed"]
        .as_bool()
        .unwrap_or_else(|| panic!("{knob}: observed is not a boolean"))
}
