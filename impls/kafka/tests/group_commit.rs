//! GroupCommit against the in-memory producer (no broker): these always run.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Barrier};

use loadbearing_impls_kafka::group_commit::{
    CommitError, Fence, GroupCommit, GroupCommitConfig, GroupMetadata, GroupMetadataSource,
    InputPartition, MemCall, MemProducer, SnapshotWrite,
};
use loadbearing_impls_kafka::trace::{KafkaRecorder, KafkaStep, SharedKafkaTracer, TxnOutcome};

fn member(generation: i32) -> GroupMetadata {
    GroupMetadata {
        group_id: "g".into(),
        generation_id: generation,
        member_id: "m-1".into(),
        group_instance_id: None,
    }
}

fn live(generation: i32) -> Arc<dyn GroupMetadataSource> {
    Arc::new(move || Some(member(generation)))
}

fn gc(
    cap: usize,
    seed: i64,
    meta: Arc<dyn GroupMetadataSource>,
) -> (
    Arc<GroupCommit<MemProducer>>,
    MemProducer,
    Arc<KafkaRecorder>,
) {
    let producer = MemProducer::new();
    let rec = KafkaRecorder::new();
    let tracer: SharedKafkaTracer = rec.clone();
    let config = GroupCommitConfig::new(InputPartition::new("in", 0), seed).cap(cap);
    (
        Arc::new(GroupCommit::new(producer.clone(), config, meta, tracer)),
        producer,
        rec,
    )
}

/// `n` writers, all released at once, each writing its own key at offset = its number.
fn concurrent_writes(g: &Arc<GroupCommit<MemProducer>>, n: usize) -> Vec<Result<(), String>> {
    let barrier = Arc::new(Barrier::new(n));
    let handles: Vec<_> = (1..=n)
        .map(|w| {
            let g = g.clone();
            let barrier = barrier.clone();
            std::thread::Builder::new()
                .stack_size(128 * 1024)
                .spawn(move || {
                    barrier.wait();
                    g.write(SnapshotWrite::persist(
                        &format!("k{w}"),
                        w as i64,
                        format!("v{w}").as_bytes(),
                    ))
                    .map(|_| ())
                    .map_err(|e| e.to_string())
                })
                .expect("spawn")
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().expect("join"))
        .collect()
}

fn every_write_commits_exactly_once(cap: usize) {
    const N: usize = 600;
    let (g, producer, rec) = gc(cap, 0, live(1));
    producer.log().commit_latency = Some(std::time::Duration::from_millis(1));
    let results = concurrent_writes(&g, N);
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let log = producer.log();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for w in &log.durable {
        *seen.entry(w.key.clone()).or_default() += 1;
    }
    assert_eq!(seen.len(), N, "every key is durable");
    assert!(
        seen.values().all(|&c| c == 1),
        "each write committed exactly once"
    );
    let begins = log.calls.iter().filter(|c| **c == MemCall::Begin).count();
    let commits = log.calls.iter().filter(|c| **c == MemCall::Commit).count();
    assert_eq!(begins, commits, "every begun transaction committed");
    assert!(!log.calls.contains(&MemCall::Abort));
    let stats = g.stats();
    assert!(stats.max_batch <= cap, "cap {cap} held: {stats:?}");
    assert_eq!(stats.writes_committed, N as u64);
    assert_eq!(stats.begins, stats.commits);
    if cap == 1 {
        assert_eq!(stats.commits, N as u64, "cap 1: one transaction per write");
    } else {
        assert!(stats.commits < N as u64, "writes were grouped: {stats:?}");
    }
    // Every transaction carried the seeded offset and this member's generation.
    assert!(log.calls.iter().all(|c| match c {
        MemCall::Offsets { offset, meta } => *offset == 0 && meta.generation_id == 1,
        _ => true,
    }));
    // The GroupCommit steps: one offer, at least one acq and commit, one await_ per writer.
    assert_eq!(rec.count("offer"), N);
    assert_eq!(rec.count("await_"), N);
    assert!(rec.count("acq") >= N && rec.count("commit") >= N);
}

#[test]
fn cap_1_every_write_commits_exactly_once() {
    every_write_commits_exactly_once(1);
}

#[test]
fn cap_256_every_write_commits_exactly_once_and_batches() {
    every_write_commits_exactly_once(256);
}

#[test]
fn cap_holds_when_the_queue_is_longer() {
    let (g, producer, _) = gc(4, 0, live(1));
    // Hold the lock while 20 writers queue, then let them go: batches of at most 4.
    let handles = g.with_producer(|_| {
        let hs: Vec<_> = (1..=20)
            .map(|w| {
                let g = g.clone();
                std::thread::spawn(move || {
                    g.write(SnapshotWrite::persist(&format!("k{w}"), w, b"x"))
                })
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(200));
        hs
    });
    for h in handles {
        h.join().unwrap().unwrap();
    }
    let s = g.stats();
    assert!(s.max_batch <= 4 && s.max_batch >= 2, "{s:?}");
    assert_eq!(producer.log().durable.len(), 20);
}

/// K-5: the cap bounds a transaction's payload too, so large snapshots cannot stretch one
/// past `transaction.timeout.ms`; a write larger than the budget still commits, alone.
#[test]
fn k5_a_transaction_drains_no_more_bytes_than_its_budget() {
    let producer = MemProducer::new();
    let config = GroupCommitConfig::new(InputPartition::new("in", 0), 0).max_txn_bytes(250);
    let g = Arc::new(GroupCommit::new(
        producer.clone(),
        config,
        live(1),
        loadbearing_impls_kafka::trace::no_trace(),
    ));
    // 10 queued writes of 2 + 100 bytes while the lock is held: at most two fit 250 bytes.
    let handles = g.with_producer(|_| {
        let hs: Vec<_> = (1..=10)
            .map(|w| {
                let g = g.clone();
                std::thread::spawn(move || {
                    g.write(SnapshotWrite::persist(
                        &format!("k{}", w % 10),
                        w,
                        &[7; 100],
                    ))
                })
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(200));
        hs
    });
    for h in handles {
        h.join().unwrap().unwrap();
    }
    let s = g.stats();
    assert_eq!(s.max_batch, 2, "{s:?}");
    assert_eq!(producer.log().durable.len(), 10);
    // A single write over the budget is not refused: it goes alone.
    g.write(SnapshotWrite::persist("big", 11, &[7; 1000]))
        .expect("an oversized write commits alone");
    assert_eq!(producer.log().durable.len(), 11);
}

#[test]
fn offset_only_commit_has_no_writes_and_carries_the_seed() {
    let (g, producer, rec) = gc(256, 42, live(3));
    let c = g.commit_now().expect("offset-only commit");
    assert_eq!(c.batch, 0);
    assert_eq!(c.offset, 42);
    let log = producer.log();
    assert_eq!(
        log.calls,
        vec![
            MemCall::Begin,
            MemCall::Offsets {
                offset: 42,
                meta: member(3)
            },
            MemCall::Commit
        ]
    );
    assert!(log.durable.is_empty());
    assert_eq!(log.committed_offset, Some(42));
    assert_eq!(g.stats().offset_only, 1);
    assert_eq!(rec.actions(), vec!["acq", "commit", "transaction"]);
}

#[test]
fn the_first_flush_carries_the_seeded_offset() {
    let (g, producer, _) = gc(256, 7, live(1));
    g.write(SnapshotWrite::persist("k", 9, b"v")).unwrap();
    let log = producer.log();
    assert_eq!(
        log.calls[..2],
        [
            MemCall::Begin,
            MemCall::Offsets {
                offset: 7,
                meta: member(1)
            }
        ],
        "offsets go first, and the first transaction carries the seed"
    );
}

#[test]
fn missing_group_metadata_fails_loudly_and_commits_no_offset() {
    for meta in [None, Some(GroupMetadata::group_only("g"))] {
        let m = meta.clone();
        let (g, producer, _) = gc(256, 5, Arc::new(move || m.clone()));
        let err = g.write(SnapshotWrite::persist("k", 6, b"v")).unwrap_err();
        assert!(
            matches!(err, CommitError::MissingGroupMetadata { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("no live group metadata"), "{err}");
        let log = producer.log();
        assert!(log.calls.is_empty(), "nothing sent: {:?}", log.calls);
        assert_eq!(log.committed_offset, None);
        assert!(log.durable.is_empty());
        assert!(matches!(
            g.commit_now(),
            Err(CommitError::MissingGroupMetadata { .. })
        ));
    }
}

#[test]
fn a_commit_failure_aborts_and_reaches_the_caller() {
    let (g, producer, rec) = gc(256, 0, live(1));
    producer.log().fail_commit_at = Some(1);
    let err = g.write(SnapshotWrite::persist("k", 1, b"v")).unwrap_err();
    assert!(
        matches!(&err, CommitError::Failed { code, .. } if code == "INJECTED"),
        "{err}"
    );
    {
        let log = producer.log();
        assert_eq!(log.calls.last(), Some(&MemCall::Abort));
        assert!(log.durable.is_empty());
        assert_eq!(log.committed_offset, None);
    }
    assert!(rec.kafka_steps().iter().any(|s| matches!(
        s,
        KafkaStep::Await { outcome: TxnOutcome::Failed(c), .. } if c == "INJECTED"
    )));
    // Not a fence: the next write goes through.
    g.write(SnapshotWrite::persist("k", 1, b"v")).unwrap();
    assert_eq!(producer.log().durable.len(), 1);
    let s = g.stats();
    assert_eq!((s.begins, s.commits, s.aborts), (2, 1, 1));
}

#[test]
fn sched_never_lets_the_offset_lead_the_durable_writes() {
    let (g, producer, _) = gc(256, 0, live(1));
    producer.log().fail_commit_at = Some(1);
    assert!(g.write(SnapshotWrite::persist("a", 3, b"v")).is_err());
    // The write of offset 3 is not durable: offsets past it are refused.
    assert_eq!(
        g.schedule(4),
        Err(CommitError::Ungated {
            offset: 4,
            pending: 3
        })
    );
    assert!(
        g.schedule(3).is_ok(),
        "offset 3 = events before 3, all durable"
    );
    g.write(SnapshotWrite::persist("a", 3, b"v")).unwrap();
    g.schedule(10).unwrap();
    assert_eq!(g.scheduled(), Some(10));
    g.commit_now().unwrap();
    assert_eq!(producer.log().committed_offset, Some(10));
    assert_eq!(g.committed(), Some(10));
}

#[test]
fn a_stale_generation_is_fenced_and_later_flushes_fail_fast() {
    let generation = Arc::new(AtomicI32::new(1));
    let gen2 = generation.clone();
    let (g, producer, _) = gc(
        256,
        0,
        Arc::new(move || Some(member(gen2.load(Ordering::SeqCst)))),
    );
    producer.log().live_generation = Some(2);
    let err = g
        .write(SnapshotWrite::persist("k", 1, b"stale"))
        .unwrap_err();
    assert!(matches!(&err, CommitError::Fenced { code, .. } if code == "ILLEGAL_GENERATION"));
    let calls = producer.log().calls.len();
    let err = g
        .write(SnapshotWrite::persist("k", 2, b"stale"))
        .unwrap_err();
    assert!(matches!(err, CommitError::AlreadyFenced { .. }), "{err}");
    assert_eq!(
        producer.log().calls.len(),
        calls,
        "nothing sent after the fence"
    );
    assert!(producer.log().durable.is_empty());
}

#[test]
fn the_epoch_variant_commits_offsets_without_a_generation() {
    let producer = MemProducer::new();
    producer.log().live_generation = Some(2);
    let config =
        GroupCommitConfig::new(InputPartition::new("in", 0), 0).fence(Fence::ProducerEpoch {
            group_id: "g".into(),
        });
    // No member metadata at all: the Epoch design never reads it.
    let g = GroupCommit::new(
        producer.clone(),
        config,
        Arc::new(|| None),
        loadbearing_impls_kafka::trace::no_trace(),
    );
    g.write(SnapshotWrite::persist("k", 1, b"stale")).unwrap();
    assert_eq!(producer.log().durable.len(), 1, "nothing fences it");
}

/// K-4: the committed input offset lags the snapshots (it rides the next transaction), so a
/// successor replays records its recovered snapshot already folded. The flow drops every
/// record at or below the recovered offset, and the next flush writes the exact fold
/// (`kafka_lag_nofilter` without the filter).
#[test]
fn k4_a_flow_drops_replays_up_to_its_recovered_snapshot() {
    use loadbearing_impls::store::Read;
    use loadbearing_impls_kafka::flow::{Folded, KafkaFlow};
    let (g, producer, rec) = gc(256, 0, live(1));
    let mut flow = KafkaFlow::new(g, 0, 1, rec);
    flow.recover(HashMap::from([(
        "k".to_string(),
        Read::Live {
            offset: 5,
            value: b"e1\ne2\ne3\ne4\ne5".to_vec(),
        },
    )]));
    for o in 1..=5 {
        assert_eq!(
            flow.fold("k", o, format!("e{o}").as_bytes()),
            Folded::Replay { recovered_at: 5 }
        );
    }
    assert_eq!(flow.fold("k", 6, b"e6"), Folded::Folded);
    assert_eq!(flow.flush(), Ok(1));
    let log = producer.log();
    let last = log.durable.last().expect("the flush's write");
    assert_eq!(last.offset, 6);
    assert_eq!(last.value.as_deref(), Some(&b"e1\ne2\ne3\ne4\ne5\ne6"[..]));
}

/// K-5's marker lane: a flush commits the position it scheduled, with no later write to carry
/// it and no explicit `commit_offset` (`gclanes_starve` without the self-trigger).
#[test]
fn k5_a_flush_commits_its_position_by_itself() {
    use loadbearing_impls_kafka::flow::KafkaFlow;
    let (g, producer, rec) = gc(256, 0, live(1));
    let mut flow = KafkaFlow::new(g.clone(), 0, 1, rec);
    for o in 0..3 {
        flow.fold("k", o, format!("e{o}").as_bytes());
    }
    assert_eq!(flow.flush(), Ok(1));
    assert_eq!(producer.log().committed_offset, Some(3));
    assert_eq!(g.stats().offset_only, 1, "the marker's own transaction");
    // A flush that moved nothing starts no transaction.
    assert_eq!(flow.flush(), Ok(0));
    assert_eq!(g.stats().offset_only, 1);
}
