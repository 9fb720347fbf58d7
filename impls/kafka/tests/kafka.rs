//! Against a real Apache Kafka 4.4 broker, started by the tests (see `harness`).

mod common;

use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use common::*;
use loadbearing_impls_kafka::flow::MemberConfig;
use loadbearing_impls_kafka::group_commit::{
    CommitError, Fence, GroupCommit, GroupCommitConfig, GroupMetadata, InputPartition, MemProducer,
    SnapshotWrite, TxnError, TxnProducer,
};
use loadbearing_impls_kafka::harness::{shared, KafkaBroker};

/// The broker shared by this binary's tests, or `None` after a loud skip (outside CI; in CI a
/// missing broker fails the test).
fn broker_or_skip(test: &str) -> Option<&'static KafkaBroker> {
    loadbearing_test_support::or_skip(test, shared())
}
use loadbearing_impls_kafka::kafka::{
    self, group_metadata_of, KafkaTxnProducer, LiveGroupMetadata, PlainProducer,
};
use loadbearing_impls_kafka::trace::{KafkaStep, KafkaTracer, TxnOutcome};

#[test]
fn issue_732_plain_producer_stale_write_lands() {
    let Some(broker) = broker_or_skip("issue_732_plain_producer_stale_write_lands") else {
        return;
    };
    let s = Scenario::new(broker, "plain732");
    let (_a, mut zombie, _b, _owner) = overlap(&s, |a| {
        let p = PlainProducer::new(&s.bootstrap, &s.snapshots, 0).unwrap();
        let mut f = s.flow_over(a, p, Arc::new(LiveGroupMetadata(a.consumer.clone())), |c| {
            c.fence(Fence::Unfenced)
        });
        f.mark_zombie();
        f
    });
    zombie.flush().expect("nothing stops the plain producer");
    assert_eq!(
        s.recovered_key(),
        Some(((ZOMBIE_UPTO - 1) as u64, fold_upto(ZOMBIE_UPTO - 1))),
        "#732: the stale flush overwrote the newer snapshot"
    );
}

#[test]
fn issue_732_prevented_by_the_generation_fence() {
    let Some(broker) = broker_or_skip("issue_732_prevented_by_the_generation_fence") else {
        return;
    };
    let s = Scenario::new(broker, "fence732");
    let (a, mut zombie, _b, _owner) = overlap(&s, |a| {
        let mut f = s.flow(a, &unique("A-txn"), |c| c);
        f.mark_zombie();
        f
    });
    let err = zombie
        .flush()
        .expect_err("the zombie's flush must be fenced");
    eprintln!("zombie flush: {err}");
    eprintln!(
        "A now: {:?}",
        loadbearing_impls_kafka::kafka::group_metadata_of(&a.consumer)
    );
    assert!(matches!(err, CommitError::Fenced { .. }), "{err}");
    assert_eq!(
        s.recovered_key(),
        Some(((EVENTS - 1) as u64, fold_upto(EVENTS - 1))),
        "the owner's snapshot survives"
    );
    // The step events, named after the model actions.
    let actions = s.rec.actions();
    for a in [
        "Poll",
        "Rebalance",
        "OwnerRecover",
        "OwnerFold",
        "offer",
        "acq",
        "commit",
        "await_",
        "sched",
        "ZombieCommit",
    ] {
        assert!(actions.contains(&a), "no {a} in {actions:?}");
    }
    assert!(s.rec.kafka_steps().iter().any(|k| matches!(
        k,
        KafkaStep::ZombieCommit {
            outcome: TxnOutcome::Fenced(_),
            ..
        }
    )));
}

#[test]
fn a_fenced_writer_fails_fast_on_its_next_flush() {
    let Some(broker) = broker_or_skip("a_fenced_writer_fails_fast_on_its_next_flush") else {
        return;
    };
    let s = Scenario::new(broker, "failfast");
    let (_a, mut zombie, _b, _owner) = overlap(&s, |a| s.flow(a, &unique("A-txn"), |c| c));
    assert!(zombie.flush().unwrap_err().is_fence());
    let before = zombie.commit().stats();
    // The zombie folds one more event (it still has not noticed) and flushes again.
    zombie.fold(KEY, ZOMBIE_UPTO, b"late");
    let t = Instant::now();
    let err = zombie.flush().expect_err("still fenced");
    assert!(matches!(err, CommitError::AlreadyFenced { .. }), "{err}");
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(
        zombie.commit().stats().begins,
        before.begins,
        "nothing sent"
    );
    assert_eq!(
        s.recovered_key(),
        Some(((EVENTS - 1) as u64, fold_upto(EVENTS - 1)))
    );
}

/// The decoupled zombie: its consumer already rejoined at the new generation, but the flow
/// still carries the generation it started with. And the dropped zombie of the #732 tests.
#[test]
fn a_stale_generations_transactional_offset_commit_is_rejected() {
    let Some(broker) =
        broker_or_skip("a_stale_generations_transactional_offset_commit_is_rejected")
    else {
        return;
    };
    let s = Scenario::new(broker, "stalegen");
    let a = s.join("A", &MemberConfig::default());
    a.poll_until_assigned(Duration::from_secs(30)).unwrap();
    let captured = group_metadata_of(&a.consumer).expect("A's metadata");
    assert!(captured.generation_id >= 1 && !captured.member_id.is_empty());
    // B joins and A keeps polling, so both are members of the next generation.
    let b = s.join("B", &MemberConfig::default());
    let deadline = Instant::now() + Duration::from_secs(60);
    while group_metadata_of(&a.consumer).map(|m| m.generation_id) == Some(captured.generation_id)
        || b.assigned().is_none()
    {
        assert!(Instant::now() < deadline, "no second generation");
        a.poll(Duration::from_millis(50)).unwrap();
        b.poll(Duration::from_millis(50)).unwrap();
    }
    let now = group_metadata_of(&a.consumer).unwrap();
    assert_eq!(now.member_id, captured.member_id, "A is still a member");
    assert!(now.generation_id > captured.generation_id);
    // A transaction carrying the captured (stale) generation.
    let frozen = captured.clone();
    let gc = GroupCommit::new(
        s.producer(&unique("stale-txn")),
        GroupCommitConfig::new(InputPartition::new(&s.input, 0), 0),
        Arc::new(move || Some(frozen.clone())),
        s.tracer(),
    );
    let err = gc
        .write(SnapshotWrite::persist(KEY, 3, b"stale"))
        .expect_err("stale generation");
    eprintln!(
        "stale generation {} (member still in the group at {}): {err}",
        captured.generation_id, now.generation_id
    );
    let CommitError::Fenced { code, .. } = &err else {
        panic!("not a fence: {err}")
    };
    assert!(
        code == "ILLEGAL_GENERATION" || code == "UNKNOWN_MEMBER_ID",
        "the broker returned {code}"
    );
    println!("stale generation of a live member: the broker returned {code}");
    // The fact EnableAbort: a fenced generation's transaction aborts, none of it lands.
    let landed = s.recover().unwrap().contains_key(KEY);
    assert_eq!(!landed, recorded("EnableAbort"), "the stale write landed");
    // A generation for a group the coordinator does not know.
    let ghost = GroupMetadata {
        group_id: unique("no-such-group"),
        ..captured.clone()
    };
    let gc = GroupCommit::new(
        s.producer(&unique("ghost-txn")),
        GroupCommitConfig::new(InputPartition::new(&s.input, 0), 0),
        Arc::new(move || Some(ghost.clone())),
        s.tracer(),
    );
    let err = gc
        .write(SnapshotWrite::persist(KEY, 3, b"ghost"))
        .expect_err("unknown group");
    println!("a generation of a group that does not exist: {err}");
    assert!(err.is_fence(), "{err}");
    // The live generation is accepted.
    let live = GroupCommit::new(
        s.producer(&unique("live-txn")),
        GroupCommitConfig::new(InputPartition::new(&s.input, 0), 0),
        Arc::new(LiveGroupMetadata(a.consumer.clone())),
        s.tracer(),
    );
    live.write(SnapshotWrite::persist(KEY, 4, b"live"))
        .expect("the live generation commits");
    assert_eq!(s.recovered_key(), Some((4, "live".into())));
}

#[test]
fn the_first_flush_is_gated_by_the_seed() {
    let Some(broker) = broker_or_skip("the_first_flush_is_gated_by_the_seed") else {
        return;
    };
    let s = Scenario::new(broker, "seed");
    // Two zombie flows on A, both never flushed before: one seeded, one not.
    let mut unseeded = None;
    let (_a, mut seeded, _b, _owner) = overlap(&s, |a| {
        let mut u = s.flow(a, &unique("A-unseeded"), |c| c.unseeded());
        u.mark_zombie();
        unseeded = Some(u);
        let mut f = s.flow(a, &unique("A-seeded"), |c| c);
        f.mark_zombie();
        f
    });
    let mut unseeded = unseeded.unwrap();
    for r in 0..ZOMBIE_UPTO {
        unseeded.fold(KEY, r, format!("e{r}").as_bytes());
    }
    let err = seeded
        .flush()
        .expect_err("the seeded first flush carries the offset");
    assert!(err.is_fence(), "{err}");
    assert_eq!(
        s.recovered_key(),
        Some(((EVENTS - 1) as u64, fold_upto(EVENTS - 1)))
    );
    // Seeded = false (the kafka_unseeded config): the first flush carries no offset, so
    // nothing fences it and the stale write lands. Only the marker transaction that follows it
    // (K-5), which carries the position, is fenced.
    if let Err(e) = unseeded.flush() {
        assert!(e.is_fence(), "only the marker's offset is refused: {e}");
    }
    assert_eq!(
        s.recovered_key(),
        Some(((ZOMBIE_UPTO - 1) as u64, fold_upto(ZOMBIE_UPTO - 1))),
        "without the seed the stale first flush lands"
    );
}

#[test]
fn concurrent_writes_to_many_keys_are_safe() {
    let Some(broker) = broker_or_skip("concurrent_writes_to_many_keys_are_safe") else {
        return;
    };
    const KEYS: usize = 300;
    let s = Scenario::new(broker, "many");
    let payloads: Vec<(String, String)> = (0..KEYS)
        .map(|i| (format!("key{i}"), format!("v{i}")))
        .collect();
    let records: Vec<(&str, &[u8])> = payloads
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_bytes()))
        .collect();
    kafka::produce_input(&s.bootstrap, &s.input, 0, &records).unwrap();
    let total = EVENTS + KEYS as i64;
    let a = s.join("A", &MemberConfig::default());
    let mut got = a.poll_until_assigned(Duration::from_secs(30)).unwrap();
    let mut flow = s.flow(&a, &unique("A-txn"), |c| c);
    while (got.len() as i64) < total {
        got.extend(a.poll_records(1, Duration::from_secs(20)).unwrap());
    }
    fold_records(&mut flow, &got, total);
    let landed = flow.flush().expect("flush");
    assert_eq!(landed, KEYS + 1);
    flow.commit_offset().unwrap();
    let stats = flow.commit().stats();
    assert!(stats.max_batch <= 256, "{stats:?}");
    assert_eq!(stats.begins, stats.commits, "{stats:?}");
    assert_eq!(stats.writes_committed, (KEYS + 1) as u64);
    let recovered = s.recover().unwrap();
    assert_eq!(recovered.len(), KEYS + 1);
    for (k, v) in &payloads {
        assert_eq!(
            recovered.get(k).and_then(|r| r.value()),
            Some(v.as_bytes()),
            "{k}"
        );
    }
    assert_eq!(a.committed(&s.input, 0).unwrap(), Some(total));
    assert!(s.rec.count("offer") > KEYS && s.rec.count("sched") >= 1);
}

/// Pauses a transaction whose offsets were rejected, before it is aborted.
struct PauseAfterFence {
    inner: KafkaTxnProducer,
    paused: mpsc::Sender<String>,
    resume: mpsc::Receiver<()>,
}

impl TxnProducer for PauseAfterFence {
    fn begin(&mut self) -> Result<(), TxnError> {
        self.inner.begin()
    }
    fn send_offsets(
        &mut self,
        input: &InputPartition,
        offset: i64,
        meta: &GroupMetadata,
    ) -> Result<(), TxnError> {
        let r = self.inner.send_offsets(input, offset, meta);
        if let Err(e) = &r {
            let _ = self.paused.send(e.code.clone());
            let _ = self.resume.recv();
        }
        r
    }
    fn send(&mut self, write: &SnapshotWrite) -> Result<(), TxnError> {
        self.inner.send(write)
    }
    fn commit(&mut self) -> Result<(), TxnError> {
        self.inner.commit()
    }
    fn abort(&mut self) -> Result<(), TxnError> {
        self.inner.abort()
    }
}

/// The offsets ride the transaction ahead of the records (K-1), so a zombie whose offsets were
/// rejected has sent no snapshot: paused there, its transaction holds nothing on the snapshot
/// partition. (A transaction that does hold records open across a recovery read:
/// tests/register.rs, `r850_a_*`.)
#[test]
fn k1_a_zombie_paused_after_its_offsets_were_rejected_has_sent_no_snapshot() {
    let Some(broker) =
        broker_or_skip("k1_a_zombie_paused_after_its_offsets_were_rejected_has_sent_no_snapshot")
    else {
        return;
    };
    let s = Scenario::new(broker, "open");
    let (paused_tx, paused_rx) = mpsc::channel();
    let (resume_tx, resume_rx) = mpsc::channel();
    let (_a, mut zombie, _b, _owner) = overlap(&s, |a| {
        let p = PauseAfterFence {
            inner: s.producer(&unique("A-txn")),
            paused: paused_tx,
            resume: resume_rx,
        };
        s.flow_over(a, p, Arc::new(LiveGroupMetadata(a.consumer.clone())), |c| c)
    });
    let flush = std::thread::spawn(move || zombie.flush());
    let code = paused_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the zombie's offsets were rejected");
    let ends = kafka::ends(&s.bootstrap, &s.snapshots, 0).unwrap();
    assert_eq!(ends.stable, ends.high, "nothing of the zombie pins the LSO");
    let recovered = s.recover().expect("recovery");
    let snap = recovered.get(KEY).and_then(|r| r.value()).unwrap();
    assert_eq!(
        snap,
        fold_upto(EVENTS - 1).as_bytes(),
        "nothing of the zombie ({code})"
    );
    resume_tx.send(()).unwrap();
    let err = flush.join().unwrap().expect_err("fenced");
    assert!(err.is_fence(), "{err}");
    assert_eq!(
        s.recovered_key(),
        Some(((EVENTS - 1) as u64, fold_upto(EVENTS - 1))),
        "after the abort too"
    );
}

/// The rejected Epoch design (docs/models/epoch.md): the owner and the stale owner share a stable
/// `transactional.id`; epochs go by `init_transactions` order, so the stale owner that
/// initialises late wins, and its write lands.
#[test]
fn the_epoch_variant_lets_a_late_initialising_stale_owners_write_land() {
    let Some(broker) =
        broker_or_skip("the_epoch_variant_lets_a_late_initialising_stale_owners_write_land")
    else {
        return;
    };
    let s = Scenario::new(broker, "epoch");
    let stable_id = unique("epoch-snapshots-0");
    let group = s.group.clone();
    let epoch_cfg = move |c: GroupCommitConfig| {
        c.fence(Fence::ProducerEpoch {
            group_id: group.clone(),
        })
    };
    let id = stable_id.clone();
    let cfg = epoch_cfg.clone();
    let (a, mut unused, _b, mut owner) = overlap_with(
        &s,
        |a| {
            s.flow_over(a, MemProducer::new(), Arc::new(|| None), |c| {
                c.fence(Fence::Unfenced)
            })
        },
        move |s, b| s.flow(b, &id, cfg),
    );
    let _ = unused.flush();
    // ZombieInit: the stale owner (re)initialises its producer with the stable id now.
    s.rec.kafka(&KafkaStep::ZombieInit {
        transactional_id: stable_id.clone(),
    });
    let late = s.producer(&stable_id);
    let meta = Arc::new(LiveGroupMetadata(a.consumer.clone()));
    // Its in-memory state is its own (the stale fold), not recovered.
    let mut zombie = s.flow_full(&a, late, meta, epoch_cfg, false);
    zombie.mark_zombie();
    for r in 0..ZOMBIE_UPTO {
        zombie.fold(KEY, r, format!("e{r}").as_bytes());
    }
    zombie
        .flush()
        .expect("the producer epoch does not fence the late stale owner");
    zombie
        .commit_offset()
        .expect("its offset commit carries no generation");
    assert_eq!(
        s.recovered_key(),
        Some(((ZOMBIE_UPTO - 1) as u64, fold_upto(ZOMBIE_UPTO - 1))),
        "Epoch: the stale write landed over the owner's newer snapshot"
    );
    // And the live owner is the one fenced.
    owner.fold(KEY, EVENTS, b"more");
    let err = owner
        .flush()
        .expect_err("the owner was fenced by the late init");
    eprintln!("the owner after the zombie's late init: {err}");
    assert!(err.is_fence(), "{err}");
    let actions = s.rec.actions();
    assert!(actions.contains(&"ZombieInit") && actions.contains(&"ZombieCommit"));
}

/// The capture-coupling guard: the rebalance callback that captures the new generation tears
/// the revoked flow down in the same step, so the flow never commits with the new generation.
#[test]
fn capturing_a_new_generation_tears_the_flow_down_in_the_same_step() {
    let Some(broker) =
        broker_or_skip("capturing_a_new_generation_tears_the_flow_down_in_the_same_step")
    else {
        return;
    };
    let s = Scenario::new(broker, "coupled");
    let a = s.join("A", &MemberConfig::default());
    let mut records = a.poll_until_assigned(Duration::from_secs(30)).unwrap();
    let mut flow = s.flow(&a, &unique("A-txn"), |c| c);
    while (records.len() as i64) < ZOMBIE_UPTO {
        records.extend(a.poll_records(1, Duration::from_secs(20)).unwrap());
    }
    fold_records(&mut flow, &records, ZOMBIE_UPTO);
    let first = group_metadata_of(&a.consumer).unwrap().generation_id;
    // B joins; A keeps polling, so its rebalance callback runs (eager: everything revoked).
    let b = s.join("B", &MemberConfig::default());
    let deadline = Instant::now() + Duration::from_secs(60);
    while group_metadata_of(&a.consumer).map(|m| m.generation_id) == Some(first)
        || a.assigned().is_none()
        || b.assigned().is_none()
    {
        assert!(Instant::now() < deadline, "no second generation");
        a.poll(Duration::from_millis(50)).unwrap();
        b.poll(Duration::from_millis(50)).unwrap();
    }
    assert!(flow.commit().is_torn_down());
    let begins = flow.commit().stats().begins;
    let err = flow.flush().expect_err("a torn-down flow commits nothing");
    assert_eq!(err, CommitError::TornDown);
    assert_eq!(flow.commit().stats().begins, begins, "no transaction begun");
    // A's Poll step: the generation it captured and the flow it tore down, together.
    let polls: Vec<KafkaStep> = s
        .rec
        .kafka_steps()
        .into_iter()
        .filter(|k| matches!(k, KafkaStep::Poll { member, .. } if member == "A"))
        .collect();
    assert!(
        polls.iter().any(|p| matches!(
            p,
            KafkaStep::Poll { generation, torn_down, .. }
                if *generation > first && torn_down == &vec![0]
        )),
        "{polls:?}"
    );
}
