//! Faults on the Kafka broker under group-committed snapshots: the broker killed with `kill -9`
//! and restarted while transactions are in flight and a recovery read runs, the broker's JVM
//! paused longer than a member's session timeout, and the network between clients and broker
//! broken through Toxiproxy. Each run records what every writer sent and was told (committed,
//! known not committed, unknown), and once the broker is back a recovery read must return
//! exactly the committed snapshots. The whole run — every write and every recovery read, with
//! their times — is then judged by the model (`loadbearing_conform::reliability`: each key a
//! guarded register, the history linearizable), so a stale or lost write during the fault is
//! caught even when later writes bury it.
//!
//! This binary starts its own broker (with a second, proxied listener) and runs its tests one
//! at a time, since each one faults the broker the others would use.

mod common;
// The broker scenarios the Kafka implementation's own tests use, shared by path (this binary
// lives here, beside the model's judge, since an implementation crate knows no model).
#[path = "../../impls/kafka/tests/common/mod.rs"]
mod scenarios;

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use loadbearing_impls::harness::toxiproxy::{Proxy, Toxic, Toxiproxy};
use loadbearing_impls::kit::stress::{self, count, Asked, Violation, Wrong};
use loadbearing_impls::store::Read;
use loadbearing_impls_kafka::flow::{KafkaFlow, Member, MemberConfig};
use loadbearing_impls_kafka::group_commit::{CommitError, GroupCommit, SnapshotWrite};
use loadbearing_impls_kafka::harness::{self, BrokerOptions, KafkaBroker};
use loadbearing_impls_kafka::kafka::{self, KafkaTxnProducer, LiveGroupMetadata};
use loadbearing_impls_kafka::recovery::{RecoveryError, StallCause};
use scenarios::*;

/// The proxy in front of the broker's proxied listener.
const PROXY: &str = "kafka";

struct Servers {
    broker: KafkaBroker,
    toxiproxy: Toxiproxy,
}

/// The binary's broker and proxy server, or why there are none.
fn servers() -> Result<&'static Servers, &'static String> {
    static SERVERS: OnceLock<Result<Servers, String>> = OnceLock::new();
    SERVERS
        .get_or_init(|| {
            let toxiproxy = Toxiproxy::start().map_err(|e| format!("Toxiproxy: {e}"))?;
            let advertised = loadbearing_impls::harness::free_port().map_err(|e| e.to_string())?;
            let broker = KafkaBroker::start_with(BrokerOptions {
                proxied: Some(advertised),
            })
            .map_err(|e| format!("Kafka: {e}"))?;
            let proxied = broker.proxied().expect("started with a proxied listener");
            toxiproxy
                .proxy_at(
                    PROXY,
                    proxied.advertised,
                    &format!("127.0.0.1:{}", proxied.listener),
                )
                .map_err(|e| format!("Toxiproxy: {e}"))?;
            eprintln!(
                "Apache Kafka {} broker at {} (pid {}, started in {:.1?})",
                harness::KAFKA_VERSION,
                broker.bootstrap(),
                broker.pid(),
                broker.started_in
            );
            Ok(Servers { broker, toxiproxy })
        })
        .as_ref()
}

/// The servers and the one-at-a-time lock, or `None` after a loud skip.
fn servers_or_skip(test: &str) -> Option<(&'static Servers, MutexGuard<'static, ()>)> {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let servers = loadbearing_test_support::or_skip(test, servers())?;
    Some((
        servers,
        ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner()),
    ))
}

/// What a writer was told of one write.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Told {
    Committed,
    /// Known not committed: refused before the commit, aborted, or fenced.
    NotCommitted(String),
    /// The commit was sent and never answered.
    Unknown(String),
}

impl Told {
    fn of(r: &Result<impl Sized, CommitError>) -> Told {
        match r {
            Ok(_) => Told::Committed,
            Err(e @ CommitError::Indeterminate { .. }) => Told::Unknown(e.to_string()),
            Err(e) => Told::NotCommitted(e.to_string()),
        }
    }
}

#[derive(Clone, Debug)]
struct Attempt {
    write: SnapshotWrite,
    sent: Duration,
    answered: Duration,
    told: Told,
}

/// A recovery read that ran during the run: when, and what it returned.
#[derive(Debug)]
struct ReadAttempt {
    started: Duration,
    ended: Duration,
    result: Result<HashMap<String, Read>, String>,
}

/// The history of one faulted run.
#[derive(Debug)]
struct History {
    attempts: Vec<Attempt>,
    reads: Vec<ReadAttempt>,
    /// When the fault began and ended, since the start of the run.
    fault: (Duration, Duration),
}

/// The run's counts, printed as a row of docs/reliability.md's table.
#[derive(Debug)]
struct Tally {
    committed: usize,
    not_committed: usize,
    unknown: usize,
    reads_ok: usize,
    reads_failed: usize,
    reads_across_fault: usize,
    committed_after_fault: usize,
    /// Writes sent before the fault began and answered after it ended: in flight throughout.
    writes_across_fault: usize,
}

fn tally(h: &History) -> Tally {
    let (fault_start, fault_end) = h.fault;
    let of = |f: &dyn Fn(&Attempt) -> bool| h.attempts.iter().filter(|a| f(a)).count();
    Tally {
        committed: of(&|a| a.told == Told::Committed),
        not_committed: of(&|a| matches!(a.told, Told::NotCommitted(_))),
        unknown: of(&|a| matches!(a.told, Told::Unknown(_))),
        reads_ok: h.reads.iter().filter(|r| r.result.is_ok()).count(),
        reads_failed: h.reads.iter().filter(|r| r.result.is_err()).count(),
        reads_across_fault: h
            .reads
            .iter()
            .filter(|r| r.started < fault_end && r.ended > fault_start)
            .count(),
        committed_after_fault: of(&|a| a.told == Told::Committed && a.sent > fault_end),
        writes_across_fault: of(&|a| a.sent < fault_start && a.answered > fault_end),
    }
}

/// Does `read` hold exactly `write` (its offset, and its value or its tombstone)?
fn holds(read: &Read, write: &SnapshotWrite) -> bool {
    match (read, &write.value) {
        (Read::Live { offset, value }, Some(v)) => *offset as i64 == write.offset && value == v,
        (Read::Tombstone { offset }, None) => *offset as i64 == write.offset,
        _ => false,
    }
}

/// A run's writes by key, built once for all the reads it checks.
fn by_key(attempts: &[Attempt]) -> HashMap<&str, Vec<&Attempt>> {
    let mut by_key: HashMap<&str, Vec<&Attempt>> = HashMap::new();
    for a in attempts {
        by_key.entry(&a.write.key).or_default().push(a);
    }
    by_key
}

/// What a recovery read that started at `started` and ended at `ended` may return for each
/// key, checked against the history: every write committed before it started is there (or a
/// later one of its key), and whatever is there was sent before it ended and was not known to
/// have failed. Returns the violations.
///
/// Each key has one writer, whose offsets rise, so a read that started after every answer
/// (the final one) is held to exactly the committed snapshots: for each key the last committed
/// write, or a later one whose outcome was unknown; nothing for a key whose writes all failed.
fn check_read(
    by_key: &HashMap<&str, Vec<&Attempt>>,
    started: Duration,
    ended: Duration,
    read: &HashMap<String, Read>,
) -> Vec<Violation> {
    let mut violations = Vec::new();
    for (key, writes) in by_key {
        let floor = writes
            .iter()
            .filter(|a| a.told == Told::Committed && a.answered < started)
            .map(|a| a.write.offset)
            .max();
        let Some(got) = read.get(*key) else {
            if let Some(floor) = floor {
                violations.push(Violation::new(
                    Wrong::LostAck,
                    format!(
                        "{key}: nothing recovered, but offset {floor} was committed before the \
                         read"
                    ),
                ));
            }
            continue;
        };
        let Some(stored) = writes
            .iter()
            .find(|a| a.sent < ended && holds(got, &a.write))
        else {
            violations.push(Violation::new(
                Wrong::Stale,
                format!("{key}: recovered {got:?}, which no writer sent"),
            ));
            continue;
        };
        if let Told::NotCommitted(why) = &stored.told {
            violations.push(Violation::new(
                Wrong::Stale,
                format!(
                    "{key}: recovered offset {}, a write its writer was told did not commit \
                     ({why})",
                    stored.write.offset
                ),
            ));
        }
        if let Some(floor) = floor {
            if stored.write.offset < floor {
                violations.push(Violation::new(
                    Wrong::LostAck,
                    format!(
                        "{key}: recovered offset {}, below offset {floor} committed before the \
                         read",
                        stored.write.offset
                    ),
                ));
            }
        }
    }
    for key in read.keys() {
        if !by_key.contains_key(key.as_str()) {
            violations.push(Violation::new(
                Wrong::Stale,
                format!("{key}: recovered, but no writer wrote it"),
            ));
        }
    }
    violations
}

const WRITERS: usize = 4;
const KEYS_PER_WRITER: usize = 2;

/// How long a run goes on after its fault, at most, waiting for a write to commit again.
const RECOVERY_PATIENCE: Duration = Duration::from_secs(90);

/// Writers race snapshot writes through one group commit (each writer its own keys, offsets
/// rising, one in eight a delete) and a reader runs recovery reads back to back, for `before`,
/// then through `fault` (which returns when the broker answers again), then for `after` and
/// until a write sent after the fault committed (the coordinators load their state some time
/// after the broker answers), within [`RECOVERY_PATIENCE`].
fn faulted_run(
    s: &Scenario,
    commit: &GroupCommit<KafkaTxnProducer>,
    before: Duration,
    after: Duration,
    fault: &(dyn Fn() + Sync),
    mutant: Option<Mutant>,
) -> History {
    let t0 = Instant::now();
    let stop = std::sync::atomic::AtomicBool::new(false);
    // Whether the fault began: the planted mutant misbehaves once, then (each writer's write
    // held up by the fault is already sent, so its next one is the first the fault can shape).
    let faulting = std::sync::atomic::AtomicBool::new(false);
    // Nanoseconds since t0 at which the fault ended (MAX while it has not), and the writes
    // sent after it that committed.
    let fault_over = AtomicU64::new(u64::MAX);
    let landed_after = AtomicU64::new(0);
    // Writers that stopped for good (their flow was fenced, or its producer broken).
    let writers_done = AtomicU64::new(0);
    let (attempts, reads, fault) = std::thread::scope(|scope| {
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (stop, fault_over, landed_after) = (&stop, &fault_over, &landed_after);
                let (writers_done, faulting) = (&writers_done, &faulting);
                scope.spawn(move || {
                    let mut rng = fastrand::Rng::with_seed(w as u64 + 1);
                    let mut attempts = Vec::new();
                    let mut offset = 0i64;
                    let mut stale_sent = false;
                    while !stop.load(Relaxed) {
                        offset += 1 + rng.i64(0..3);
                        let key = format!("w{w}-k{}", rng.usize(0..KEYS_PER_WRITER));
                        let stale = mutant == Some(Mutant::StaleWritesLand)
                            && faulting.load(Relaxed)
                            && !std::mem::replace(&mut stale_sent, true);
                        let write = if stale {
                            // Offset 1, below what its key holds by now: Kafka keeps the last
                            // record of a key, so the stale write lands.
                            SnapshotWrite::persist(&key, 1, format!("w{w}@1 (stale)").as_bytes())
                        } else if rng.u8(0..8) == 0 {
                            SnapshotWrite::delete(&key, offset)
                        } else {
                            SnapshotWrite::persist(
                                &key,
                                offset,
                                format!("w{w}@{offset}").as_bytes(),
                            )
                        };
                        let sent = t0.elapsed();
                        let r = commit.write(write.clone());
                        if r.is_ok() && (sent.as_nanos() as u64) > fault_over.load(Relaxed) {
                            landed_after.fetch_add(1, Relaxed);
                        }
                        attempts.push(Attempt {
                            write,
                            sent,
                            answered: t0.elapsed(),
                            told: Told::of(&r),
                        });
                        if matches!(
                            r,
                            Err(CommitError::AlreadyFenced { .. }
                                | CommitError::ProducerBroken { .. })
                        ) {
                            break;
                        }
                    }
                    writers_done.fetch_add(1, Relaxed);
                    attempts
                })
            })
            .collect();
        let reader = {
            let stop = &stop;
            scope.spawn(move || {
                let mut reads = Vec::new();
                while !stop.load(Relaxed) {
                    let started = t0.elapsed();
                    let result = s.recover();
                    reads.push(ReadAttempt {
                        started,
                        ended: t0.elapsed(),
                        result,
                    });
                    std::thread::sleep(Duration::from_millis(50));
                }
                reads
            })
        };
        std::thread::sleep(before);
        let start = t0.elapsed();
        faulting.store(true, Relaxed);
        fault();
        let end = t0.elapsed();
        fault_over.store(end.as_nanos() as u64, Relaxed);
        std::thread::sleep(after);
        while landed_after.load(Relaxed) == 0
            && writers_done.load(Relaxed) < WRITERS as u64
            && t0.elapsed() < end + RECOVERY_PATIENCE
        {
            std::thread::sleep(Duration::from_millis(100));
        }
        stop.store(true, Relaxed);
        let attempts: Vec<Attempt> = writers
            .into_iter()
            .flat_map(|h| h.join().expect("writer"))
            .collect();
        (attempts, reader.join().expect("reader"), (start, end))
    });
    History {
        attempts,
        reads,
        fault,
    }
}

/// A planted mutant that misbehaves only while the fault lasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mutant {
    /// Each writer's first write sent after the fault began carries offset 1, below what its
    /// key holds: a stale write, which lands (Kafka keeps a key's last record) and is buried by
    /// the writer's next, higher write.
    StaleWritesLand,
}

/// The recovery read once the run is over. A read that stalls at a transaction open past
/// every timeout (a hanging transaction: its markers were never written) gets what an operator
/// does about it, `kafka-transactions.sh abort` at that offset, and is read again. Returns the
/// state and the offsets of the hanging transactions aborted.
fn recover_past_hanging(s: &Scenario) -> Result<(HashMap<String, Read>, Vec<i64>), String> {
    let servers = servers().map_err(String::clone)?;
    let mut aborted = Vec::new();
    loop {
        match kafka::recover(&s.bootstrap, &s.snapshots, 0, &harness::recovery_budget()) {
            Ok(state) => return Ok((state, aborted)),
            Err(RecoveryError::Stalled {
                cause: StallCause::OpenTransaction { stable_now },
                ..
            }) if aborted.len() < 3 && !aborted.contains(&stable_now) => {
                let said = servers
                    .broker
                    .abort_transaction(&s.snapshots, 0, stable_now)
                    .map_err(|e| e.to_string())?;
                eprintln!(
                    "a hanging transaction at offset {stable_now}, aborted with \
                     kafka-transactions.sh: {}",
                    said.trim()
                );
                aborted.push(stable_now);
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// What the writers were told, in the order it was first told, with how often: a run of a
/// thousand identical refusals reads as one line.
fn outcomes_in_order(attempts: &[Attempt]) -> String {
    let mut sorted: Vec<&Attempt> = attempts.iter().collect();
    sorted.sort_by_key(|a| a.answered);
    let mut lines: Vec<(String, Duration, usize)> = Vec::new();
    for a in sorted {
        let told = format!("{:?}", a.told);
        match lines.last_mut() {
            Some((last, _, n)) if *last == told => *n += 1,
            _ => lines.push((told, a.answered, 1)),
        }
    }
    lines
        .iter()
        .map(|(told, at, n)| format!("  from {at:.1?}: {n} × {told}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The broker's log, copied where it outlives the run (the broker's folder does not).
fn keep_broker_log() -> String {
    let Ok(servers) = servers() else {
        return "no broker".into();
    };
    let dir = std::env::var_os("LOADBEARING_ARTIFACTS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let to = dir.join(format!("kafka-faults-broker-{}.log", std::process::id()));
    match std::fs::copy(servers.broker.dir().join("broker.log"), &to) {
        Ok(_) => to.display().to_string(),
        Err(e) => format!("not copied: {e}"),
    }
}

/// Check every recovery read of the run and the final one; print the table row.
fn judge<'h>(s: &Scenario, what: &str, h: &'h History) -> Judged<'h> {
    let by_key = by_key(&h.attempts);
    let mut violations = Vec::new();
    for r in &h.reads {
        if let Ok(read) = &r.result {
            violations.extend(
                check_read(&by_key, r.started, r.ended, read)
                    .into_iter()
                    .map(|v| Violation::new(v.wrong, format!("read at {:?}: {v}", r.started))),
            );
        }
    }
    let (last, hanging) = recover_past_hanging(s).unwrap_or_else(|e| {
        panic!(
            "the recovery read after the fault: {e}\nfault {:?}\nwhat the writers were told, \
             in order, with counts:\n{}\nthe broker's log: {}",
            h.fault,
            outcomes_in_order(&h.attempts),
            keep_broker_log(),
        )
    });
    // After every answer: held to exactly the committed snapshots.
    violations.extend(check_read(&by_key, Duration::MAX, Duration::MAX, &last));
    let verdict = common::judge_history(what, &as_history(h, &last));
    let tally = tally(h);
    let (start, end) = h.fault;
    // docs/reliability.md's Kafka table: fault, writes, committed, known not committed,
    // indeterminate, recovery reads (failed; across the fault), hanging transactions aborted,
    // stale, lost, verdict, the whole run judged by the model.
    let row = format!(
        "| {what} ({:.1} s) | {} | {} | {} | {} | {} ({} failed, {} across the fault) | {} | {} | {} | {} | {} ({} operations) |",
        (end - start).as_secs_f64(),
        h.attempts.len(),
        tally.committed,
        tally.not_committed,
        tally.unknown,
        tally.reads_ok + tally.reads_failed,
        tally.reads_failed,
        tally.reads_across_fault,
        hanging.len(),
        count(&violations, Wrong::Stale),
        count(&violations, Wrong::LostAck),
        if violations.is_empty() { "holds" } else { "FAILS" },
        common::outcome(&verdict),
        verdict.operations,
    );
    loadbearing_impls::kit::reliability_row("kafka", &row);
    Judged {
        history: h,
        tally,
        violations,
        hanging,
        verdict,
    }
}

/// The run as the stress kit's history, which the model judges: every write with when it was
/// sent and answered (an unknown one never answered), and every recovery read that returned as
/// a read of each key the run wrote, over its interval; last, the read after the fault, once
/// every write was answered.
fn as_history(h: &History, last: &HashMap<String, Read>) -> stress::History {
    let us = |d: Duration| d.as_micros() as u64;
    let keys: std::collections::BTreeSet<&str> =
        h.attempts.iter().map(|a| a.write.key.as_str()).collect();
    let mut ops = Vec::new();
    for a in &h.attempts {
        let offset = a.write.offset as u64;
        ops.push(stress::Op {
            session: 0,
            key: a.write.key.clone(),
            call_us: us(a.sent),
            ret_us: match a.told {
                Told::Unknown(_) => None,
                _ => Some(us(a.answered)),
            },
            asked: match &a.write.value {
                Some(value) => Asked::Persist {
                    offset,
                    value: value.clone(),
                },
                None => Asked::Delete { offset },
            },
            told: match a.told {
                Told::Committed => stress::Told::Applied,
                Told::NotCommitted(_) => stress::Told::Failed,
                Told::Unknown(_) => stress::Told::Indeterminate,
            },
        });
    }
    let end = ops
        .iter()
        .map(|op| op.ret_us.unwrap_or(op.call_us))
        .chain(h.reads.iter().map(|r| us(r.ended)))
        .max()
        .unwrap_or(0);
    let reads = h
        .reads
        .iter()
        .filter_map(|r| Some((us(r.started), us(r.ended), r.result.as_ref().ok()?)))
        .chain([(end + 1, end + 2, last)]);
    for (call, ret, read) in reads {
        for key in &keys {
            ops.push(stress::Op {
                session: 1,
                key: key.to_string(),
                call_us: call,
                ret_us: Some(ret),
                asked: Asked::Read,
                told: stress::Told::Read(read.get(*key).cloned().unwrap_or(Read::Absent)),
            });
        }
    }
    stress::History { ops }
}

/// A run's counts and what its recovery reads got wrong.
struct Judged<'h> {
    history: &'h History,
    tally: Tally,
    violations: Vec<Violation>,
    /// The offsets of the hanging transactions the final read met and had aborted.
    hanging: Vec<i64>,
    /// The whole run judged by the model.
    verdict: loadbearing_trace::HistoryVerdict,
}

impl Judged<'_> {
    /// Nothing wrong: the counts.
    fn clean(self) -> Tally {
        assert!(
            self.violations.is_empty(),
            "{} violations, the first: {:#?}\nwhat the writers were told, in order, with \
             counts:\n{}\nhanging transactions aborted at {:?}\nthe broker's log: {}",
            self.violations.len(),
            &self.violations[..self.violations.len().min(10)],
            outcomes_in_order(&self.history.attempts),
            self.hanging,
            keep_broker_log(),
        );
        assert!(
            self.verdict.conforming(),
            "the run is no behaviour of the model:\n{}",
            self.verdict.text()
        );
        self.tally
    }
}

/// A member that owns partition 0 and a generation-fenced flow over it, its producer's
/// transactions timing out after `txn_timeout`.
fn owner(
    s: &Scenario,
    config: &MemberConfig,
    txn_timeout: Duration,
) -> (Member, KafkaFlow<KafkaTxnProducer>) {
    let a = s.join("A", config);
    a.poll_until_assigned(Duration::from_secs(30))
        .expect("A assigned");
    let producer = KafkaTxnProducer::with_txn_timeout(
        &s.bootstrap,
        &unique("A-txn"),
        &s.snapshots,
        0,
        txn_timeout,
    )
    .expect("init_transactions");
    let meta = Arc::new(LiveGroupMetadata(a.consumer.clone()));
    let flow = s.flow_over(&a, producer, meta, |c| c);
    (a, flow)
}

/// A member and transactions that outlast a broker restart (15-20 s on a loaded two-core
/// machine): with the defaults (a 6 s session, a 10 s transaction timeout) the restart itself
/// ends the owner's session and times its transaction out, so the owner is fenced and the run
/// says nothing about transactions that span the kill.
fn outlasting_a_restart() -> (MemberConfig, Duration) {
    (
        MemberConfig {
            session_timeout: Duration::from_secs(45),
            max_poll_interval: Duration::from_secs(120),
        },
        Duration::from_secs(60),
    )
}

#[test]
fn broker_killed_mid_group_commit_and_mid_recovery_read() {
    let Some((servers, _one)) =
        servers_or_skip("broker_killed_mid_group_commit_and_mid_recovery_read")
    else {
        return;
    };
    let broker = &servers.broker;
    let s = Scenario::new(broker, "kill");
    let (member, txn_timeout) = outlasting_a_restart();
    let (_a, flow) = owner(&s, &member, txn_timeout);
    let kill = || {
        broker.kill9().expect("kill -9 the broker");
        std::thread::sleep(Duration::from_millis(500));
        let took = broker.restart().expect("restart the broker");
        eprintln!("broker restarted in {took:.1?}");
    };
    let h = faulted_run(
        &s,
        flow.commit(),
        Duration::from_secs(4),
        Duration::from_secs(6),
        &kill,
        None,
    );
    let t = judge(&s, "broker killed (`kill -9`) and restarted", &h).clean();
    assert!(
        t.reads_across_fault > 0,
        "no recovery read ran across the kill: {t:?}"
    );
    assert!(
        t.writes_across_fault > 0,
        "no transaction was in flight across the kill: {t:?}"
    );
    assert!(
        t.committed_after_fault > 0,
        "no write committed after the restart: {t:?}"
    );
}

/// The same kill with the defaults (a 6 s session, a 10 s transaction timeout), which a
/// restart on a loaded machine outlasts: the restart ends the owner's session or times its
/// transaction out, so the owner is fenced (it then refuses every write: it is no longer the
/// owner). Observed on Kafka 4.4 (single node, KRaft): the restarted broker's transaction
/// coordinator loads its state before the partitions have a leader again, finds no leader for
/// the timed-out transaction's markers, and skips them ("these partitions are likely deleted
/// already"), so the transaction hangs open and the snapshot partition's last stable offset
/// stops there. A recovery read then trips its budget with `OpenTransaction` instead of ever
/// returning a partial state; the operator's `kafka-transactions.sh abort` ends it, and the
/// next read returns what is left. Seen once: what was left had lost acknowledged writes (see
/// docs/reliability.md). So this is kept as a demonstration, run with `--ignored`, like
/// Cassandra's `periodic` sync: a single-replica partition promises nothing across an unclean
/// restart.
#[test]
#[ignore = "demonstration: a single-node broker restarted after kill -9 can leave a transaction \
            hanging, and aborting it can lose acknowledged writes"]
fn broker_killed_past_the_timeouts_fences_the_owner_and_can_hang_a_transaction() {
    let Some((servers, _one)) = servers_or_skip(
        "broker_killed_past_the_timeouts_fences_the_owner_and_can_hang_a_transaction",
    ) else {
        return;
    };
    let broker = &servers.broker;
    let s = Scenario::new(broker, "kill-default");
    let (_a, flow) = owner(&s, &MemberConfig::default(), kafka::SNAPSHOT_TXN_TIMEOUT);
    let kill = || {
        broker.kill9().expect("kill -9 the broker");
        // Past the transaction timeout, however fast the restart.
        std::thread::sleep(kafka::SNAPSHOT_TXN_TIMEOUT);
        let took = broker.restart().expect("restart the broker");
        eprintln!("broker restarted in {took:.1?}");
    };
    let h = faulted_run(
        &s,
        flow.commit(),
        Duration::from_secs(3),
        Duration::from_secs(3),
        &kill,
        None,
    );
    let judged = judge(
        &s,
        "broker killed (`kill -9`), restarted after the 10 s transaction timeout",
        &h,
    );
    // What this demonstrates: the only thing that may go wrong is acknowledged writes lost,
    // and only where a hanging transaction had to be aborted by hand.
    assert!(
        judged.violations.iter().all(|v| v.wrong == Wrong::LostAck)
            && (judged.violations.is_empty() || !judged.hanging.is_empty()),
        "beyond acknowledged writes lost to an aborted hanging transaction: {:#?}\n{}",
        judged.violations,
        outcomes_in_order(&h.attempts)
    );
    let fenced = flow.commit().fenced().is_some() || flow.commit().broken().is_some();
    assert!(
        fenced || judged.tally.committed_after_fault > 0,
        "the owner was neither fenced, nor broken, nor writing again: {:?}",
        judged.tally
    );
}

/// A network fault between every client of the run (the member, the producer, the recovery
/// reads) and the broker, through the proxy: `break_` for 1.5 s, then `heal`.
fn proxied_run(test: &str, what: &str, break_: fn(&Proxy<'_>), heal: fn(&Proxy<'_>)) {
    proxied_run_of(test, what, break_, heal, None);
}

fn proxied_run_of(
    test: &str,
    what: &str,
    break_: fn(&Proxy<'_>),
    heal: fn(&Proxy<'_>),
    mutant: Option<Mutant>,
) {
    let Some((servers, _one)) = servers_or_skip(test) else {
        return;
    };
    let proxied = servers.broker.proxied().expect("a proxied listener");
    let proxy = servers.toxiproxy.existing(PROXY, proxied.advertised);
    let mut s = Scenario::new(&servers.broker, test);
    s.bootstrap = servers
        .broker
        .proxied_bootstrap()
        .expect("a proxied listener");
    let (_a, flow) = owner(&s, &MemberConfig::default(), kafka::SNAPSHOT_TXN_TIMEOUT);
    let fault = || {
        break_(&proxy);
        std::thread::sleep(Duration::from_millis(1500));
        heal(&proxy);
    };
    let h = faulted_run(
        &s,
        flow.commit(),
        Duration::from_secs(3),
        Duration::from_secs(6),
        &fault,
        mutant,
    );
    let judged = judge(&s, what, &h);
    if mutant.is_some() {
        // The stale writes were buried by later, higher ones before the final read: the
        // model, judging the whole run, must still catch them.
        assert!(
            !judged.verdict.conforming(),
            "the model let the mutant's stale writes pass: {}",
            judged.verdict.text()
        );
        return;
    }
    let t = judged.clean();
    assert!(
        t.committed_after_fault > 0,
        "no write committed after the network healed: {t:?}"
    );
    assert!(
        t.writes_across_fault + t.not_committed + t.unknown > 0,
        "the fault touched no write: {t:?}"
    );
}

#[test]
fn connections_reset_mid_transaction() {
    proxied_run(
        "connections_reset_mid_transaction",
        "connections reset as data arrives (`reset_peer`)",
        |p| p.add(Toxic::ResetPeer).expect("add reset_peer"),
        |p| p.remove().expect("remove the toxic"),
    );
}

#[test]
fn proxy_cut_with_a_transaction_in_flight() {
    proxied_run(
        "proxy_cut_with_a_transaction_in_flight",
        "proxy cut with transactions in flight, then restored",
        |p| p.set_enabled(false).expect("cut the proxy"),
        |p| p.set_enabled(true).expect("restore the proxy"),
    );
}

/// A planted mutant caught by the model during a fault: once the proxy is cut, each writer's
/// next write carries a stale offset (below what its key holds); Kafka keeps a key's last
/// record, so it lands once the network is back, and the writer's next write buries it before
/// the final read. The whole run, judged by the model, is not linearizable.
#[test]
fn a_stale_write_landing_during_the_cut_is_caught_by_the_model() {
    proxied_run_of(
        "a_stale_write_landing_during_the_cut_is_caught_by_the_model",
        "mutant StaleWritesLand: each writer's first write once the proxy is cut",
        |p| p.set_enabled(false).expect("cut the proxy"),
        |p| p.set_enabled(true).expect("restore the proxy"),
        Some(Mutant::StaleWritesLand),
    );
}

#[test]
fn all_traffic_stalled_then_released() {
    proxied_run(
        "all_traffic_stalled_then_released",
        "all traffic stalled (`timeout` 0), then released",
        |p| p.add(Toxic::Stall).expect("add the stall"),
        |p| p.remove().expect("remove the toxic"),
    );
}

/// A member whose session is short and whose poll interval is long: alive by its heartbeats
/// (librdkafka sends them from its own thread), so only its session's clock can end it.
fn heartbeating() -> MemberConfig {
    MemberConfig {
        session_timeout: Duration::from_millis(1500),
        max_poll_interval: Duration::from_secs(60),
    }
}

/// The broker's JVM paused (`SIGSTOP`) for longer than member A's session timeout: when it
/// thaws, its clock has run past A's session, so the coordinator ends it, though A never
/// stopped heartbeating. A is a zombie made by the clock, not by a rebalance: B, joining
/// after the thaw, is assigned at once instead of waiting out A's poll interval (60 s) as it
/// would for a live member. A's stale flush must not land over B's snapshot.
#[test]
fn broker_paused_past_a_session_makes_a_zombie_that_cannot_write() {
    let Some((servers, _one)) =
        servers_or_skip("broker_paused_past_a_session_makes_a_zombie_that_cannot_write")
    else {
        return;
    };
    let broker = &servers.broker;
    let s = Scenario::new(broker, "pause");
    let a = s.join("A", &heartbeating());
    let mut records = a
        .poll_until_assigned(Duration::from_secs(30))
        .expect("A assigned");
    let mut zombie = s.flow(&a, &unique("A-txn"), |c| c);
    while !records.iter().any(|r| r.offset >= ZOMBIE_UPTO - 1) {
        records.extend(a.poll_records(1, Duration::from_secs(20)).expect("A polls"));
    }
    fold_records(&mut zombie, &records, ZOMBIE_UPTO);
    let before = kafka::group_metadata_of(&a.consumer);
    broker.pause(true).expect("SIGSTOP the broker");
    std::thread::sleep(Duration::from_secs(4));
    broker.pause(false).expect("SIGCONT the broker");
    let b = s.join("B", &MemberConfig::default());
    let t = Instant::now();
    let mut b_records = b
        .poll_until_assigned(Duration::from_secs(50))
        .expect("B assigned");
    let waited = t.elapsed();
    eprintln!(
        "A before the pause: {before:?}; B assigned {waited:.1?} after the thaw; A now: {:?}",
        kafka::group_metadata_of(&a.consumer)
    );
    assert!(
        waited < Duration::from_secs(30),
        "B waited {waited:?}: A's session outlived the pause (a live member is waited for up to \
         its poll interval, 60 s)"
    );
    let mut owner = s.flow(&b, &unique("B-txn"), |c| c);
    while (b_records.len() as i64) < EVENTS {
        b_records.extend(b.poll_records(1, Duration::from_secs(20)).expect("B polls"));
    }
    fold_records(&mut owner, &b_records, EVENTS);
    // The run's clock for the model's history: the owner's write, a read, the zombie's
    // write, a read.
    let clock = Instant::now();
    let owner_sent = clock.elapsed();
    owner.flush().expect("the owner's flush");
    owner.commit_offset().expect("the owner's offset commit");
    let owner_answered = clock.elapsed();
    let owners = Some(((EVENTS - 1) as u64, fold_upto(EVENTS - 1)));
    let read_started = clock.elapsed();
    let after_owner = s.recovered_key();
    let read_ended = clock.elapsed();
    let zombie_sent = clock.elapsed();
    let stale = zombie.flush();
    let zombie_answered = clock.elapsed();
    eprintln!("the zombie's flush: {stale:?}");
    let after_zombie = s.recovered_key();
    let as_read = |got: &Option<(u64, String)>| -> HashMap<String, Read> {
        got.iter()
            .map(|(offset, fold)| {
                let read = Read::Live {
                    offset: *offset,
                    value: fold.clone().into_bytes(),
                };
                (KEY.to_string(), read)
            })
            .collect()
    };
    let write = |upto: i64, sent, answered, told| Attempt {
        write: SnapshotWrite::persist(KEY, upto, fold_upto(upto).as_bytes()),
        sent,
        answered,
        told,
    };
    let run = History {
        attempts: vec![
            write(EVENTS - 1, owner_sent, owner_answered, Told::Committed),
            write(
                ZOMBIE_UPTO - 1,
                zombie_sent,
                zombie_answered,
                Told::of(&stale),
            ),
        ],
        reads: vec![ReadAttempt {
            started: read_started,
            ended: read_ended,
            result: Ok(as_read(&after_owner)),
        }],
        fault: (Duration::ZERO, Duration::ZERO),
    };
    let verdict = common::judge_history("pause", &as_history(&run, &as_read(&after_zombie)));
    // The row of docs/reliability.md's Kafka table, from what this run saw: one write judged
    // (the zombie's flush), whether it committed, the two recovery reads, and what they found.
    let committed = usize::from(stale.is_ok());
    let stale_landed = usize::from(after_zombie != owners);
    let owner_lost = usize::from(after_owner != owners);
    loadbearing_impls::kit::reliability_row(
        "kafka",
        &format!(
            "| broker's JVM paused (`SIGSTOP`) 4 s, past member A's 1.5 s session; B assigned \
             {waited:.1?} after the thaw; A's stale flush | 1 | {committed} | {} | 0 | 2 (0 failed) | 0 | {stale_landed} | {owner_lost} | {} | {} ({} operations) |",
            1 - committed,
            if committed + stale_landed + owner_lost == 0 {
                "holds"
            } else {
                "FAILS"
            },
            common::outcome(&verdict),
            verdict.operations,
        ),
    );
    assert!(verdict.conforming(), "{}", verdict.text());
    assert_eq!(after_owner, owners, "the owner's snapshot is durable");
    assert!(stale.is_err(), "the zombie's stale flush committed");
    assert_eq!(
        after_zombie, owners,
        "the zombie's stale snapshot landed over the owner's"
    );
}

/// The history check is not vacuous: on a hand-made history it flags a write known not to have
/// committed, a committed write missing, and a key nobody wrote, and passes an unknown write.
#[test]
fn the_history_check_catches_stale_and_lost_writes() {
    let at = Duration::from_millis;
    let attempt = |key: &str, offset: i64, told: Told| Attempt {
        write: SnapshotWrite::persist(key, offset, format!("{key}@{offset}").as_bytes()),
        sent: at(offset as u64 * 10),
        answered: at(offset as u64 * 10 + 5),
        told,
    };
    let attempts = vec![
        attempt("a", 1, Told::Committed),
        attempt("a", 2, Told::NotCommitted("aborted".into())),
        attempt("b", 3, Told::Committed),
        attempt("c", 4, Told::Committed),
        attempt("c", 5, Told::Unknown("timed out".into())),
    ];
    let live = |key: &str, offset: u64| Read::Live {
        offset,
        value: format!("{key}@{offset}").into_bytes(),
    };
    let index = by_key(&attempts);
    let right: HashMap<String, Read> = [
        ("a".into(), live("a", 1)),
        ("b".into(), live("b", 3)),
        ("c".into(), live("c", 5)),
    ]
    .into_iter()
    .collect();
    assert_eq!(check_read(&index, Duration::MAX, Duration::MAX, &right), []);
    let wrong: HashMap<String, Read> = [
        ("a".into(), live("a", 2)),
        ("z".into(), live("z", 9)),
        ("c".into(), live("c", 4)),
    ]
    .into_iter()
    .collect();
    let mut kinds: Vec<(Wrong, String)> = check_read(&index, Duration::MAX, Duration::MAX, &wrong)
        .into_iter()
        .map(|v| (v.wrong, v.what.split(':').next().unwrap_or("").to_string()))
        .collect();
    kinds.sort_by(|x, y| x.1.cmp(&y.1));
    assert_eq!(
        kinds,
        [
            (Wrong::Stale, "a".to_string()),
            (Wrong::LostAck, "b".to_string()),
            (Wrong::Stale, "z".to_string()),
        ]
    );
    // The model judges the same histories: the right read is linearizable, and each wrong
    // key alone is not (an aborted write read back; a committed write lost).
    let history = |reads: Vec<ReadAttempt>| History {
        attempts: attempts.clone(),
        reads,
        fault: (at(0), at(0)),
    };
    let read = |pairs: &[(&str, Read)]| ReadAttempt {
        started: at(100),
        ended: at(110),
        result: Ok(pairs
            .iter()
            .map(|(k, r)| (k.to_string(), r.clone()))
            .collect()),
    };
    let judged = |h: &History, last: &HashMap<String, Read>| {
        common::judge_history("hand-made", &as_history(h, last))
    };
    let fine = history(vec![read(&[
        ("a", live("a", 1)),
        ("b", live("b", 3)),
        ("c", live("c", 5)),
    ])]);
    assert!(judged(&fine, &right).conforming());
    let aborted_read_back = history(vec![read(&[
        ("a", live("a", 2)),
        ("b", live("b", 3)),
        ("c", live("c", 5)),
    ])]);
    assert!(!judged(&aborted_read_back, &right).conforming());
    let committed_lost = history(vec![read(&[
        ("a", live("a", 1)),
        ("b", Read::Absent),
        ("c", live("c", 5)),
    ])]);
    assert!(!judged(&committed_lost, &right).conforming());
}
