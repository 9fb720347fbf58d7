//! The #835 register's recovery-read MUSTs (R-850, R-849, K-7, K-9) and the platform facts the
//! #835 models hold as knobs, observed on the real Apache Kafka 4.4 broker (see `harness`).
//! Each fact test compares what it saw with `expected/facts.toml`, where the suite's configs
//! are checked against it: a broker that behaves otherwise turns this red.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use loadbearing_impls::store::Read;
use loadbearing_impls_kafka::group_commit::{SnapshotWrite, TxnProducer};
use loadbearing_impls_kafka::harness::{self, shared, KafkaBroker, ABORT_SCAN};
use loadbearing_impls_kafka::kafka::{self, group_metadata_of, KafkaTxnProducer};
use loadbearing_impls_kafka::recovery::{
    Deployment, RecoveryBudget, RecoveryError, StallCause, DIAGNOSIS,
};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext, Rebalance};
use rdkafka::ClientContext;

mod common;

use common::{recorded, unique};

fn broker_or_skip(test: &str) -> Option<&'static KafkaBroker> {
    loadbearing_test_support::or_skip(test, shared())
}

/// A fresh one-partition compacted snapshot topic.
fn snapshot_topic(broker: &KafkaBroker, name: &str) -> (String, String) {
    let bootstrap = broker.bootstrap();
    let topic = unique(name);
    kafka::create_topics(&bootstrap, &[(&topic, 1, true)]).expect("create the topic");
    (bootstrap, topic)
}

/// A snapshot producer with this transaction timeout.
fn producer(bootstrap: &str, topic: &str, id: &str, txn_timeout: Duration) -> KafkaTxnProducer {
    KafkaTxnProducer::with_txn_timeout(bootstrap, &unique(id), topic, 0, txn_timeout)
        .expect("init_transactions")
}

/// Commit one snapshot of `key` at `offset`.
fn commit(p: &mut KafkaTxnProducer, key: &str, offset: i64, value: &[u8]) {
    p.begin().unwrap();
    p.send(&SnapshotWrite::persist(key, offset, value)).unwrap();
    p.commit().unwrap();
}

/// Leave a transaction open with one snapshot of `key` on the broker.
fn open(p: &mut KafkaTxnProducer, key: &str, offset: i64, value: &[u8]) {
    p.begin().unwrap();
    p.send(&SnapshotWrite::persist(key, offset, value)).unwrap();
    p.deliver();
}

/// The log end once every transaction on it has ended: a commit returns before its markers
/// are on the log, so the end read right after it is the marker's own position.
fn settled_end(bootstrap: &str, topic: &str) -> i64 {
    let t = Instant::now();
    loop {
        let ends = kafka::ends(bootstrap, topic, 0).unwrap();
        if ends.stable == ends.high {
            return ends.high;
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "never settled: {ends:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The test broker's deployment with snapshot producers of this transaction timeout.
fn deployment(txn_timeout: Duration) -> Deployment {
    Deployment {
        txn_timeout,
        abort_scan: ABORT_SCAN,
        max_poll_interval: Duration::from_secs(60),
    }
}

/// The scene of R-850: a committed snapshot of `k` at 1, an open transaction with a snapshot
/// of `k` at 99, and the owner's snapshot of `k` at 7 committed after it, all on the broker.
/// Returns the open transaction's producer and its position.
fn committed_above_an_open_transaction(
    bootstrap: &str,
    topic: &str,
    open_for: Duration,
) -> (KafkaTxnProducer, i64) {
    let mut owner = producer(bootstrap, topic, "owner", Duration::from_secs(2));
    commit(&mut owner, "k", 1, b"first");
    let pinned_at = settled_end(bootstrap, topic);
    let mut zombie = producer(bootstrap, topic, "zombie", open_for);
    open(&mut zombie, "k", 99, b"zombie");
    commit(&mut owner, "k", 7, b"owner");
    let ends = kafka::ends(bootstrap, topic, 0).unwrap();
    // The precondition that makes the test mean something: the open transaction holds the
    // read_committed end below the owner's snapshot.
    assert_eq!(ends.stable, pinned_at, "the open transaction pins the LSO");
    assert!(ends.stable < ends.high, "{ends:?}");
    (zombie, pinned_at)
}

fn value_of(read: &HashMap<String, Read>, key: &str) -> Option<(u64, Vec<u8>)> {
    match read.get(key)? {
        Read::Live { offset, value } => Some((*offset, value.clone())),
        _ => None,
    }
}

#[test]
fn r850_a_an_open_transaction_held_across_the_read_is_waited_out_and_the_snapshot_above_it_returned(
) {
    let Some(broker) = broker_or_skip("r850_a_open_transaction_held_across_the_read") else {
        return;
    };
    let (bootstrap, topic) = snapshot_topic(broker, "r850a");
    let txn_timeout = Duration::from_secs(2);
    let (_zombie, _) = committed_above_an_open_transaction(&bootstrap, &topic, txn_timeout);
    let budget = RecoveryBudget::new(Duration::from_secs(6), deployment(txn_timeout)).unwrap();
    let t = Instant::now();
    let read = kafka::recover(&bootstrap, &topic, 0, &budget)
        .expect("a healthy park within the budget does not trip (R-849 with R-850)");
    let took = t.elapsed();
    assert_eq!(
        value_of(&read, "k"),
        Some((7, b"owner".to_vec())),
        "the snapshot above the open transaction, nothing of the transaction (K-7)"
    );
    // It parked until the broker aborted the transaction: the read did not end at its own
    // read_committed end (the LSO), which would have returned k at 1.
    let ends = kafka::ends(&bootstrap, &topic, 0).unwrap();
    assert_eq!(ends.stable, ends.high, "the open transaction was aborted");
    println!("R-850 A: recovered k at 7 after waiting {took:?} for the timeout abort");
}

#[test]
fn r849_a_hanging_transaction_trips_the_read_on_no_progress_within_the_stall_naming_it() {
    let Some(broker) = broker_or_skip("r849_hanging_transaction_trips_the_read") else {
        return;
    };
    let (bootstrap, topic) = snapshot_topic(broker, "r849");
    // The deployment promises 2 s transactions; one stays open for 120 s: a hanging
    // transaction, the stand-in for #849's (HealthyProgress = FALSE).
    let (mut zombie, pinned_at) =
        committed_above_an_open_transaction(&bootstrap, &topic, Duration::from_secs(120));
    let stall = Duration::from_secs(4);
    let budget = RecoveryBudget::new(stall, deployment(Duration::from_secs(2))).unwrap();
    let t = Instant::now();
    let err = kafka::recover(&bootstrap, &topic, 0, &budget).expect_err("no progress");
    let took = t.elapsed();
    println!("R-849: {err} after {took:?}");
    match err {
        RecoveryError::Stalled {
            target,
            cause: StallCause::OpenTransaction { stable_now },
            ..
        } => {
            assert_eq!(stable_now, pinned_at);
            assert!(target > pinned_at);
        }
        other => panic!("expected a stall naming the open transaction: {other}"),
    }
    assert!(
        took >= stall && took < stall + DIAGNOSIS + Duration::from_secs(3),
        "{took:?}"
    );
    zombie.abort().unwrap();
}

/// K-7 needs a scene a read_uncommitted reader would get wrong: the owner's snapshot of `k`
/// at 7 committed, then a zombie's snapshot of `k` at 99 in a transaction left open, after it
/// on the log. A reader that keeps the last record of each key returns 99 under
/// read_uncommitted (the scene asserts that first, with a read_uncommitted scan), and must return
/// 7: the open transaction is aborted while the read waits for it.
#[test]
fn k7_recovery_returns_nothing_of_a_transaction_open_at_its_start_and_aborted_during_it() {
    let Some(broker) = broker_or_skip("k7_recovery_is_read_committed") else {
        return;
    };
    let (bootstrap, topic) = snapshot_topic(broker, "k7");
    let mut owner = producer(&bootstrap, &topic, "owner", Duration::from_secs(2));
    commit(&mut owner, "k", 7, b"owner");
    let committed_end = settled_end(&bootstrap, &topic);
    let mut zombie = producer(&bootstrap, &topic, "zombie", Duration::from_secs(120));
    open(&mut zombie, "k", 99, b"zombie");
    // What a read_uncommitted reader sees: the zombie's record last for `k`.
    let mut scan = kafka::UncommittedScan::open(&bootstrap, &topic, 0).unwrap();
    let mut last_of_k = None;
    let deadline = Instant::now() + Duration::from_secs(20);
    while last_of_k.is_none_or(|at| at < committed_end) && Instant::now() < deadline {
        if let Some((key, at)) = scan.next(Duration::from_millis(500)).unwrap() {
            if key == "k" {
                last_of_k = Some(at);
            }
        }
    }
    assert!(
        last_of_k.is_some_and(|at| at >= committed_end),
        "read_uncommitted must see the open record of k after the committed one (last at {last_of_k:?}, committed end {committed_end})"
    );
    let aborter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(800));
        zombie.abort().expect("abort");
    });
    let read = kafka::recover(&bootstrap, &topic, 0, &harness::recovery_budget()).unwrap();
    aborter.join().unwrap();
    assert_eq!(
        value_of(&read, "k"),
        Some((7, b"owner".to_vec())),
        "read_committed: nothing of the open transaction"
    );
}

/// The groups the broker knows that hold a committed offset of `topic`'s partition 0, by name.
fn groups_with_offsets_on(bootstrap: &str, topic: &str) -> Vec<String> {
    let admin: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .unwrap();
    let groups = admin
        .fetch_group_list(None, Duration::from_secs(10))
        .unwrap();
    groups
        .groups()
        .iter()
        .map(|g| g.name().to_string())
        .filter(|g| {
            kafka::committed_offset(bootstrap, g, topic, 0)
                .unwrap()
                .is_some()
        })
        .collect()
}

/// K-9, whatever the readers' group ids are named: after two recovery reads no group holds an
/// offset of the snapshot topic. The check is shown able to fail first: a reader that commits
/// (auto-commit on, as the old fixed-group reader had) leaves its group's offset on a topic of
/// its own, and the check finds it.
#[test]
fn k9_the_recovery_reader_joins_no_group_and_commits_nothing() {
    let Some(broker) = broker_or_skip("k9_the_recovery_reader_joins_no_group") else {
        return;
    };
    let (bootstrap, probe_topic) = snapshot_topic(broker, "k9-probe");
    let mut p = producer(
        &bootstrap,
        &probe_topic,
        "k9-probe",
        Duration::from_secs(10),
    );
    commit(&mut p, "k", 3, b"v");
    {
        let committing: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", &bootstrap)
            .set("group.id", unique("k9-committing-reader"))
            .set("enable.auto.commit", "true")
            .set("isolation.level", "read_committed")
            .create()
            .unwrap();
        let mut tpl = rdkafka::TopicPartitionList::new();
        tpl.add_partition_offset(&probe_topic, 0, rdkafka::Offset::Beginning)
            .unwrap();
        committing.assign(&tpl).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while committing.poll(Duration::from_millis(500)).is_none() && Instant::now() < deadline {}
        committing
            .commit_consumer_state(rdkafka::consumer::CommitMode::Sync)
            .unwrap();
    }
    assert_eq!(
        groups_with_offsets_on(&bootstrap, &probe_topic).len(),
        1,
        "the check finds a reader that commits"
    );

    let (bootstrap, topic) = snapshot_topic(broker, "k9");
    let mut p = producer(&bootstrap, &topic, "k9", Duration::from_secs(10));
    commit(&mut p, "k", 3, b"v");
    for _ in 0..2 {
        let read = kafka::recover(&bootstrap, &topic, 0, &harness::recovery_budget()).unwrap();
        assert_eq!(
            value_of(&read, "k"),
            Some((3, b"v".to_vec())),
            "read from 0"
        );
    }
    let holding = groups_with_offsets_on(&bootstrap, &topic);
    assert!(
        holding.is_empty(),
        "groups hold offsets of the snapshot topic after the recovery reads: {holding:?}"
    );
}

#[test]
fn fact_end_offsets_is_lso_the_read_committed_end_is_the_last_stable_offset() {
    let Some(broker) = broker_or_skip("fact_end_offsets_is_lso") else {
        return;
    };
    let (bootstrap, topic) = snapshot_topic(broker, "lso");
    let mut first = producer(&bootstrap, &topic, "first", Duration::from_secs(60));
    commit(&mut first, "a", 1, b"1");
    let open_at = settled_end(&bootstrap, &topic);
    let mut held = producer(&bootstrap, &topic, "held", Duration::from_secs(60));
    open(&mut held, "b", 2, b"2");
    commit(&mut first, "c", 3, b"3");
    commit(&mut first, "d", 4, b"4");
    let ends = kafka::ends(&bootstrap, &topic, 0).unwrap();
    held.abort().unwrap();
    println!("an open transaction at {open_at}: {ends:?}");
    assert!(ends.high > open_at + 2, "the later commits are on the log");
    let observed = ends.stable == open_at;
    assert!(
        observed || ends.stable == ends.high,
        "neither the LSO nor the high watermark: {ends:?}"
    );
    assert_eq!(observed, recorded("EndOffsetsIsLSO"), "{ends:?}");
}

#[test]
fn fact_timeout_abort_lands_after_the_transaction_timeout_within_one_abort_scan() {
    let Some(broker) = broker_or_skip("fact_timeout_abort") else {
        return;
    };
    let (bootstrap, topic) = snapshot_topic(broker, "abort");
    let timeout = Duration::from_secs(2);
    let mut held = producer(&bootstrap, &topic, "held", timeout);
    let t = Instant::now();
    open(&mut held, "k", 1, b"1");
    let aborted_after = loop {
        let ends = kafka::ends(&bootstrap, &topic, 0).unwrap();
        if ends.stable == ends.high {
            break t.elapsed();
        }
        assert!(t.elapsed() < Duration::from_secs(30), "never aborted");
        std::thread::sleep(Duration::from_millis(50));
    };
    println!("a {timeout:?} transaction aborted after {aborted_after:?} (scan {ABORT_SCAN:?})");
    // The timeout runs from the transaction's start on the coordinator, a little after `t`.
    assert!(aborted_after >= timeout, "{aborted_after:?}");
    assert!(
        aborted_after < timeout + ABORT_SCAN + Duration::from_millis(1500),
        "{aborted_after:?}"
    );
}

#[test]
fn fact_init_with_the_same_transactional_id_aborts_the_open_predecessor() {
    let Some(broker) = broker_or_skip("fact_init_aborts_the_predecessor") else {
        return;
    };
    let (bootstrap, topic) = snapshot_topic(broker, "init");
    let id = unique("stable");
    let mut old =
        KafkaTxnProducer::with_txn_timeout(&bootstrap, &id, &topic, 0, Duration::from_secs(120))
            .unwrap();
    open(&mut old, "k", 1, b"old");
    let ends = kafka::ends(&bootstrap, &topic, 0).unwrap();
    assert!(ends.stable < ends.high, "open: {ends:?}");
    let _new = KafkaTxnProducer::new(&bootstrap, &id, &topic, 0).unwrap();
    let ends = kafka::ends(&bootstrap, &topic, 0).unwrap();
    assert_eq!(
        ends.stable, ends.high,
        "init_transactions returned before the predecessor's abort was stable"
    );
}

/// Counts the assignment callbacks a member gets.
#[derive(Default)]
struct Callbacks(std::sync::Mutex<Vec<i32>>);

struct Counting(Arc<Callbacks>);

impl ClientContext for Counting {}

impl ConsumerContext for Counting {
    fn post_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Assign(_) = rebalance {
            let generation = group_metadata_of(consumer).map_or(-1, |m| m.generation_id);
            self.0 .0.lock().unwrap().push(generation);
        }
    }
}

fn member(
    bootstrap: &str,
    group: &str,
    topic: &str,
    seen: Arc<Callbacks>,
) -> BaseConsumer<Counting> {
    let c: BaseConsumer<Counting> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("partition.assignment.strategy", "range")
        .set("session.timeout.ms", "6000")
        .set("log_level", "3")
        .create_with_context(Counting(seen))
        .unwrap();
    c.subscribe(&[topic]).unwrap();
    c
}

#[test]
fn fact_allow_silent_under_the_classic_protocol_every_generation_reaches_the_member_by_a_callback()
{
    let Some(broker) = broker_or_skip("fact_allow_silent") else {
        return;
    };
    let bootstrap = broker.bootstrap();
    let (mine, other) = (unique("silent-a"), unique("silent-b"));
    kafka::create_topics(&bootstrap, &[(&mine, 1, false), (&other, 1, false)]).unwrap();
    let group = unique("silent-g");
    let seen = Arc::new(Callbacks::default());
    let a = member(&bootstrap, &group, &mine, seen.clone());
    // Every generation A is in, as its group metadata shows between polls.
    let mut generations = Vec::new();
    let mut poll_a = |until: &dyn Fn(&[i32]) -> bool| {
        let t = Instant::now();
        loop {
            a.poll(Duration::from_millis(100));
            if let Some(g) = group_metadata_of(&a).map(|m| m.generation_id) {
                if g >= 0 && generations.last() != Some(&g) {
                    generations.push(g);
                }
            }
            if until(&generations) || t.elapsed() > Duration::from_secs(30) {
                return;
            }
        }
    };
    poll_a(&|g| !g.is_empty());
    // B joins subscribed to another topic, so no partition of A's moves; then B leaves.
    let b = member(&bootstrap, &group, &other, Arc::new(Callbacks::default()));
    let b_polls = std::thread::spawn(move || {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(8) {
            b.poll(Duration::from_millis(100));
        }
        b.unsubscribe();
        drop(b);
    });
    poll_a(&|g| g.len() >= 3);
    b_polls.join().unwrap();
    poll_a(&|g| g.len() >= 3);
    let callbacks = seen.0.lock().unwrap().clone();
    println!("generations {generations:?}, assignment callbacks at {callbacks:?}");
    assert!(
        generations.len() >= 3,
        "B's join and leave bumped A's generation"
    );
    let silent: Vec<i32> = generations
        .iter()
        .copied()
        .filter(|g| !callbacks.contains(g))
        .collect();
    assert_eq!(
        !silent.is_empty(),
        recorded("AllowSilent"),
        "generations with no callback: {silent:?}"
    );
}
