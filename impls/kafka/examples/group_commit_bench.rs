//! Group commit on the local broker: 2,000 keys × 10 KiB written by 2,000 concurrent writers
//! through GroupCommit at cap 256 and at cap 1, against a plain non-transactional producer.
//!
//! `cargo run --release -p loadbearing-impls-kafka --example group_commit_bench [-- KEYS KIB]`
//!
//! Starts its own Apache Kafka 4.4 broker (see the harness) and stops it at the end.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use loadbearing_impls_kafka::flow::{Member, MemberConfig};
use loadbearing_impls_kafka::group_commit::{
    GroupCommit, GroupCommitConfig, GroupMetadata, InputPartition, SnapshotWrite, TxnError,
    TxnProducer,
};
use loadbearing_impls_kafka::harness::KafkaBroker;
use loadbearing_impls_kafka::kafka::{self, KafkaTxnProducer, LiveGroupMetadata, PlainProducer};
use loadbearing_impls_kafka::trace::no_trace;

fn writes(keys: usize, kib: usize, round: &str) -> Vec<SnapshotWrite> {
    (0..keys)
        .map(|i| {
            let mut v = vec![b'x'; kib * 1024];
            let tag = format!("{round}-{i}");
            v[..tag.len()].copy_from_slice(tag.as_bytes());
            SnapshotWrite {
                key: format!("key{i}"),
                offset: i as i64,
                value: Some(v),
            }
        })
        .collect()
}

/// Where a transaction's time goes: the producer calls, timed.
struct Timed {
    inner: KafkaTxnProducer,
    /// begin, send_offsets, send, commit
    spent: [Duration; 4],
}

impl Timed {
    fn time<R>(&mut self, i: usize, f: impl FnOnce(&mut KafkaTxnProducer) -> R) -> R {
        let t = Instant::now();
        let r = f(&mut self.inner);
        self.spent[i] += t.elapsed();
        r
    }
}

impl TxnProducer for Timed {
    fn begin(&mut self) -> Result<(), TxnError> {
        self.time(0, |p| p.begin())
    }
    fn send_offsets(
        &mut self,
        input: &InputPartition,
        offset: i64,
        meta: &GroupMetadata,
    ) -> Result<(), TxnError> {
        self.time(1, |p| p.send_offsets(input, offset, meta))
    }
    fn send(&mut self, write: &SnapshotWrite) -> Result<(), TxnError> {
        self.time(2, |p| p.send(write))
    }
    fn commit(&mut self) -> Result<(), TxnError> {
        self.time(3, |p| p.commit())
    }
    fn abort(&mut self) -> Result<(), TxnError> {
        self.inner.abort()
    }
}

struct Row {
    name: String,
    elapsed: Duration,
    transactions: u64,
    max_batch: usize,
}

fn group_commit_run(
    bootstrap: &str,
    member: &Member,
    input: &str,
    topic: &str,
    cap: usize,
    keys: usize,
    kib: usize,
) -> Row {
    let producer = Timed {
        inner: KafkaTxnProducer::new(bootstrap, &format!("bench-cap{cap}"), topic, 0)
            .expect("init_transactions"),
        spent: [Duration::ZERO; 4],
    };
    let gc = Arc::new(GroupCommit::new(
        producer,
        GroupCommitConfig::new(InputPartition::new(input, 0), 0).cap(cap),
        Arc::new(LiveGroupMetadata(member.consumer.clone())),
        no_trace(),
    ));
    // Warm up: one transaction.
    gc.write(SnapshotWrite::persist("warmup", 0, b"w"))
        .expect("warm-up write");
    let before = gc.stats();
    let all = writes(keys, kib, &format!("cap{cap}"));
    let barrier = Arc::new(Barrier::new(keys + 1));
    let handles: Vec<_> = all
        .into_iter()
        .map(|w| {
            let gc = gc.clone();
            let barrier = barrier.clone();
            std::thread::Builder::new()
                .stack_size(128 * 1024)
                .spawn(move || {
                    barrier.wait();
                    gc.write(w)
                })
                .expect("spawn")
        })
        .collect();
    barrier.wait();
    let t = Instant::now();
    for h in handles {
        h.join().expect("writer").expect("write committed");
    }
    let elapsed = t.elapsed();
    let after = gc.stats();
    let spent = gc.with_producer(|p| p.spent);
    let n = (after.begins.max(1)) as u32;
    eprintln!(
        "cap {cap}: per transaction: begin {:?}, send_offsets {:?}, send {:?}, commit {:?}",
        spent[0] / n,
        spent[1] / n,
        spent[2] / n,
        spent[3] / n
    );
    assert_eq!(
        after.writes_committed - before.writes_committed,
        keys as u64
    );
    Row {
        name: format!("group commit, cap {cap}"),
        elapsed,
        transactions: after.commits - before.commits,
        max_batch: after.max_batch,
    }
}

fn plain_run(bootstrap: &str, topic: &str, keys: usize, kib: usize) -> Row {
    let p = PlainProducer::new(bootstrap, topic, 0).expect("producer");
    p.write(&SnapshotWrite::persist("warmup", 0, b"w"))
        .expect("warm-up");
    let all = writes(keys, kib, "plain");
    let t = Instant::now();
    for w in &all {
        p.send(w).expect("send");
    }
    p.flush().expect("flush");
    Row {
        name: "plain producer (acks=all, no transaction)".into(),
        elapsed: t.elapsed(),
        transactions: 0,
        max_batch: 0,
    }
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let keys = args.first().copied().unwrap_or(2000);
    let kib = args.get(1).copied().unwrap_or(10);
    let broker = match KafkaBroker::start() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("cannot start the broker: {e}");
            std::process::exit(2);
        }
    };
    println!(
        "Apache Kafka 4.4.0 at {} (started in {:.1?}); {keys} keys x {kib} KiB, {} writer threads",
        broker.bootstrap(),
        broker.started_in,
        keys
    );
    let bootstrap = broker.bootstrap();
    let input = "bench-input";
    kafka::create_topics(
        &bootstrap,
        &[
            (input, 1, false),
            ("bench-cap256", 1, true),
            ("bench-cap1", 1, true),
            ("bench-plain", 1, true),
        ],
    )
    .expect("topics");
    let member = Member::join(
        &bootstrap,
        "bench-group",
        input,
        "bench",
        &MemberConfig::default(),
        no_trace(),
    )
    .expect("join");
    member
        .poll_until_assigned(Duration::from_secs(60))
        .expect("assigned");
    // Keep the membership alive while the writers run.
    let consumer = member.consumer.clone();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    let poller = std::thread::spawn(move || {
        while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
            let _ = consumer.poll(Duration::from_millis(100));
        }
    });

    let rows = vec![
        group_commit_run(&bootstrap, &member, input, "bench-cap256", 256, keys, kib),
        group_commit_run(&bootstrap, &member, input, "bench-cap1", 1, keys, kib),
        plain_run(&bootstrap, "bench-plain", keys, kib),
    ];
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = poller.join();
    let mib = (keys * kib) as f64 / 1024.0;
    println!();
    println!("| variant | time | writes/s | MiB/s | transactions | largest batch |");
    println!("|---|---|---|---|---|---|");
    for r in &rows {
        let s = r.elapsed.as_secs_f64();
        println!(
            "| {} | {:.2} s | {:.0} | {:.1} | {} | {} |",
            r.name,
            s,
            keys as f64 / s,
            mib / s,
            if r.transactions == 0 {
                "-".to_string()
            } else {
                r.transactions.to_string()
            },
            if r.max_batch == 0 {
                "-".to_string()
            } else {
                r.max_batch.to_string()
            },
        );
    }
    broker.stop();
}
