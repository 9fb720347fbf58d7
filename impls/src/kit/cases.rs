//! The test list. Each case takes a backend and proves one property of the store, the buffer or
//! the flow on that backend's real database.

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use crate::flow::{
    append_fold, FlowConfig, FlowError, FoldFn, FoldOutcome, Ownership, PartitionFlow, Record,
};
use crate::store::{Conflict, Read, SnapshotStore, StoreOptions, WriteError};
use crate::trace::{no_trace, FlowPhase, Recorder, Step};

use super::{unique_key, Backend};

fn guarded(b: &dyn Backend) -> Box<dyn SnapshotStore> {
    b.open(StoreOptions::guarded(), no_trace())
}

fn lww(b: &dyn Backend) -> Box<dyn SnapshotStore> {
    b.open(StoreOptions::last_write_wins(), no_trace())
}

fn live(offset: u64, value: &[u8]) -> Read {
    Read::Live {
        offset,
        value: value.to_vec(),
    }
}

fn conflict(key: &str, attempted: u64, stored: u64) -> Result<(), WriteError> {
    Err(WriteError::Conflict(Conflict {
        key: key.to_string(),
        attempted,
        stored,
    }))
}

pub fn monotonic_writes_and_same_offset_replace(b: &dyn Backend) {
    let s = guarded(b);
    let k = unique_key("monotonic");
    assert_eq!(s.read(&k).unwrap(), Read::Absent);
    s.persist(&k, 1, b"a").unwrap();
    assert_eq!(s.read(&k).unwrap(), live(1, b"a"));
    s.persist(&k, 3, b"b").unwrap();
    assert_eq!(s.read(&k).unwrap(), live(3, b"b"));
    // The same offset replaces (the gate is `stored <= new`): a re-flush of the same fold.
    s.persist(&k, 3, b"c").unwrap();
    assert_eq!(s.read(&k).unwrap(), live(3, b"c"));
    // Offset 0 is a real offset, distinct from absent.
    let k0 = unique_key("zero");
    s.persist(&k0, 0, b"").unwrap();
    assert_eq!(s.read(&k0).unwrap(), live(0, b""));
}

pub fn stale_write_rejected_with_key_attempted_and_stored(b: &dyn Backend) {
    let s = guarded(b);
    let k = unique_key("stale");
    s.persist(&k, 5, b"five").unwrap();
    assert_eq!(s.persist(&k, 3, b"three"), conflict(&k, 3, 5));
    assert_eq!(s.read(&k).unwrap(), live(5, b"five"));
}

/// 8 sessions race the first write of one new key. Every outcome is applied or a conflict that
/// names a higher stored offset (never indeterminate, never a spurious conflict), the highest
/// offset is what stays, and a second wave of the 7 lower offsets is refused every time.
pub fn eight_concurrent_first_writers_highest_wins(b: &dyn Backend) {
    let k = unique_key("first-writers");
    let offsets: Vec<u64> = vec![13, 4, 21, 8, 17, 2, 11, 6];
    let max = *offsets.iter().max().unwrap();
    let race = |offsets: &[u64]| -> Vec<(u64, Result<(), WriteError>)> {
        let barrier = Arc::new(Barrier::new(offsets.len()));
        let sessions: Vec<_> = offsets.iter().map(|_| guarded(b)).collect();
        thread::scope(|scope| {
            let handles: Vec<_> = offsets
                .iter()
                .zip(sessions)
                .map(|(&o, s)| {
                    let barrier = barrier.clone();
                    let k = k.clone();
                    scope.spawn(move || {
                        barrier.wait();
                        (o, s.persist(&k, o, format!("writer-{o}").as_bytes()))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        })
    };
    for (o, r) in race(&offsets) {
        match r {
            Ok(()) => {}
            Err(WriteError::Conflict(c)) => {
                assert_eq!((c.key.as_str(), c.attempted), (k.as_str(), o));
                assert!(
                    c.stored > o,
                    "conflict must name a higher stored offset: {c:?}"
                );
            }
            Err(e) => panic!("writer at {o}: neither applied nor a conflict: {e}"),
        }
    }
    assert_eq!(s_read(b, &k), live(max, format!("writer-{max}").as_bytes()));
    let lower: Vec<u64> = offsets.iter().copied().filter(|&o| o != max).collect();
    for (o, r) in race(&lower) {
        assert_eq!(r, conflict(&k, o, max), "late writer at {o}");
    }
    assert_eq!(s_read(b, &k), live(max, format!("writer-{max}").as_bytes()));
}

fn s_read(b: &dyn Backend, k: &str) -> Read {
    guarded(b).read(k).unwrap()
}

pub fn recreate_after_delete_at_higher_offset(b: &dyn Backend) {
    let s = guarded(b);
    let k = unique_key("recreate");
    s.persist(&k, 2, b"two").unwrap();
    s.delete(&k, 4).unwrap();
    assert_eq!(s.read(&k).unwrap(), Read::Tombstone { offset: 4 });
    s.persist(&k, 6, b"six").unwrap();
    assert_eq!(s.read(&k).unwrap(), live(6, b"six"));
    // A delete of a key never written leaves a tombstone that guards the key too.
    let fresh = unique_key("delete-absent");
    s.delete(&fresh, 3).unwrap();
    assert_eq!(s.read(&fresh).unwrap(), Read::Tombstone { offset: 3 });
    assert_eq!(s.persist(&fresh, 1, b"old"), conflict(&fresh, 1, 3));
}

pub fn stale_delete_rejected(b: &dyn Backend) {
    let s = guarded(b);
    let k = unique_key("stale-delete");
    s.persist(&k, 5, b"five").unwrap();
    assert_eq!(s.delete(&k, 3), conflict(&k, 3, 5));
    assert_eq!(s.read(&k).unwrap(), live(5, b"five"));
}

pub fn equal_offset_delete_applies(b: &dyn Backend) {
    let s = guarded(b);
    let k = unique_key("equal-delete");
    s.persist(&k, 5, b"five").unwrap();
    s.delete(&k, 5).unwrap();
    assert_eq!(s.read(&k).unwrap(), Read::Tombstone { offset: 5 });
}

pub fn idempotent_redelete(b: &dyn Backend) {
    let s = guarded(b);
    let k = unique_key("redelete");
    s.persist(&k, 2, b"two").unwrap();
    s.delete(&k, 5).unwrap();
    s.delete(&k, 5).unwrap();
    assert_eq!(s.read(&k).unwrap(), Read::Tombstone { offset: 5 });
}

pub fn no_resurrection_by_lower_write_after_delete(b: &dyn Backend) {
    let s = guarded(b);
    let k = unique_key("resurrection");
    s.persist(&k, 2, b"two").unwrap();
    s.delete(&k, 5).unwrap();
    assert_eq!(s.persist(&k, 3, b"three"), conflict(&k, 3, 5));
    assert_eq!(s.read(&k).unwrap(), Read::Tombstone { offset: 5 });
}

pub fn replayed_old_delete_cannot_remove_newer_snapshot(b: &dyn Backend) {
    let s = guarded(b);
    let k = unique_key("replayed-delete");
    s.persist(&k, 1, b"one").unwrap();
    s.delete(&k, 2).unwrap();
    s.persist(&k, 7, b"seven").unwrap();
    assert_eq!(s.delete(&k, 2), conflict(&k, 2, 7));
    assert_eq!(s.read(&k).unwrap(), live(7, b"seven"));
}

/// A row written with a TTL expires whether it was created by the insert path or last written
/// by the update path; the update refreshes the TTL; an expired row counts as absent (a lower
/// offset may write it again); a tombstone expires too.
pub fn ttl_on_insert_and_update_paths(b: &dyn Backend) {
    let ttl = b.ttl();
    let s = b.open(StoreOptions::guarded().with_ttl(ttl), no_trace());
    let k = unique_key("ttl");
    let tomb = unique_key("ttl-tomb");
    let t0 = Instant::now();
    s.persist(&k, 1, b"one").unwrap(); // insert path
    s.delete(&tomb, 9).unwrap(); // a tombstone with a TTL
    assert_eq!(s.read(&k).unwrap(), live(1, b"one"));
    sleep_until(t0 + ttl.mul_f64(0.6));
    s.persist(&k, 2, b"two").unwrap(); // update path: refreshes the TTL
    let t1 = Instant::now();
    sleep_until(t0 + ttl.mul_f64(1.3));
    assert_eq!(
        s.read(&k).unwrap(),
        live(2, b"two"),
        "the update path's TTL must be the one in force"
    );
    sleep_until(t1 + ttl + Duration::from_millis(700));
    assert_eq!(
        s.read(&k).unwrap(),
        Read::Absent,
        "expired after the update path's TTL"
    );
    assert_eq!(
        s.read(&tomb).unwrap(),
        Read::Absent,
        "the tombstone expired"
    );
    // An expired row is absent: a lower offset starts it again.
    s.persist(&k, 1, b"again").unwrap();
    assert_eq!(s.read(&k).unwrap(), live(1, b"again"));
    s.persist(&tomb, 1, b"after-tomb").unwrap();
    assert_eq!(s.read(&tomb).unwrap(), live(1, b"after-tomb"));
}

fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        thread::sleep(t - now);
    }
}

/// The broken design, on the same database: a stale write and a stale delete land.
pub fn lww_lets_a_stale_write_and_delete_land(b: &dyn Backend) {
    let s = lww(b);
    let k = unique_key("lww");
    s.persist(&k, 5, b"five").unwrap();
    s.persist(&k, 3, b"three").unwrap();
    assert_eq!(s.read(&k).unwrap(), live(3, b"three"));
    s.persist(&k, 7, b"seven").unwrap();
    s.delete(&k, 2).unwrap();
    assert_eq!(s.read(&k).unwrap(), Read::Tombstone { offset: 2 });
}

/// The #732 scenario on real flows. Owner A (generation 1) folds 1..=4 of key k, flushes at 2,
/// then the partition moves to B without A noticing. B resumes at the committed offset 2,
/// recovers k at 2, folds 3..=6 and flushes at 6. A is finally revoked and flushes its stale
/// state (offset 4). Returns the flow error of A's flush-on-revoke, the store and the key.
fn stale_flush_on_revoke(
    b: &dyn Backend,
    options: StoreOptions,
    tracer: Arc<Recorder>,
) -> (Result<usize, FlowError>, Box<dyn SnapshotStore>, String) {
    let k = unique_key("issue-732");
    let ownership = Ownership::new();
    let config = FlowConfig::default();
    let ev = |o: u64| Record::new(&k, o, format!("e{o}").as_bytes());
    let mut a = PartitionFlow::assign_traced(
        0,
        &ownership,
        b.open(options, tracer.clone()),
        append_fold(),
        config,
        tracer.clone(),
    );
    for o in 1..=2 {
        a.handle(&ev(o)).unwrap();
    }
    a.flush().unwrap();
    for o in 3..=4 {
        a.handle(&ev(o)).unwrap();
    }
    // Rebalance: B owns the partition now; A has not noticed.
    let mut bflow = PartitionFlow::assign_traced(
        0,
        &ownership,
        b.open(options, tracer.clone()),
        append_fold(),
        FlowConfig {
            resume_at: 2,
            ..config
        },
        tracer.clone(),
    );
    bflow.recover(&[&k]).unwrap();
    assert_eq!(bflow.state(&k), Some(&b"e1\ne2"[..]));
    for o in 3..=6 {
        bflow.handle(&ev(o)).unwrap();
    }
    bflow.flush().unwrap();
    let revoked = a.revoke();
    (revoked, b.open(options, no_trace()), k)
}

pub fn issue_732_lww_stale_flush_on_revoke_loses_events(b: &dyn Backend) {
    let rec = Recorder::new();
    let (revoked, store, k) =
        stale_flush_on_revoke(b, StoreOptions::last_write_wins(), rec.clone());
    assert_eq!(revoked, Ok(1), "with last-write-wins the stale flush lands");
    assert_eq!(
        store.read(&k).unwrap(),
        live(4, b"e1\ne2\ne3\ne4"),
        "the newer snapshot (6) was overwritten"
    );
    assert!(rec.steps().iter().any(|s| matches!(
        s,
        Step::ZombieWrite {
            offset: 4,
            outcome: Ok(()),
            ..
        }
    )));
    // The next owner resumes after the committed offset 6: events 5 and 6 never come back.
    let ownership = Ownership::new();
    let mut c = PartitionFlow::assign(
        0,
        &ownership,
        store,
        append_fold(),
        FlowConfig {
            resume_at: 6,
            ..Default::default()
        },
    );
    c.handle(&Record::new(&k, 7, b"e7")).unwrap();
    c.flush().unwrap();
    assert_eq!(
        c.store().read(&k).unwrap(),
        live(7, b"e1\ne2\ne3\ne4\ne7"),
        "events 5 and 6 are lost for good"
    );
}

pub fn issue_732_cas_stale_flush_on_revoke_is_fenced(b: &dyn Backend) {
    let rec = Recorder::new();
    let (revoked, store, k) = stale_flush_on_revoke(b, StoreOptions::guarded(), rec.clone());
    assert_eq!(
        revoked,
        Err(FlowError::Fenced(Conflict {
            key: k.clone(),
            attempted: 4,
            stored: 6
        }))
    );
    assert_eq!(
        store.read(&k).unwrap(),
        live(6, b"e1\ne2\ne3\ne4\ne5\ne6"),
        "the newer snapshot stays"
    );
    let steps = rec.steps();
    assert!(steps.iter().any(|s| matches!(
        s,
        Step::ZombieWrite {
            offset: 4,
            outcome: Err(WriteError::Conflict(_)),
            ..
        }
    )));
    assert!(steps.iter().any(|s| matches!(
        s,
        Step::Phase {
            generation: 1,
            phase: FlowPhase::Fenced,
            ..
        }
    )));
    assert!(!steps.iter().any(|s| matches!(
        s,
        Step::Phase {
            phase: FlowPhase::SelfFenced,
            ..
        }
    )));
}

/// A fold with a tick: payload `del` deletes the key.
fn fold_with_delete() -> FoldFn {
    let inner = append_fold();
    Arc::new(move |state: Option<&[u8]>, r: &Record| {
        if r.payload == b"del" {
            FoldOutcome::Delete
        } else {
            inner(state, r)
        }
    })
}

/// Recovered at 5, resumed at 0: a tick-delete (at position 0) and a replayed record at 2 both
/// go through without a self-fence. The delete is presented at max(0, 5) = 5 and lands as a
/// tombstone at 5; the replayed record is dropped by the fence (its effect is in the snapshot);
/// a new record at 6 then lands.
pub fn replay_window_fence_on_no_self_fence(b: &dyn Backend) {
    let (k, store) = recovered_at_5(b);
    let rec = Recorder::new();
    let ownership = Ownership::new();
    let mut flow = PartitionFlow::assign_traced(
        0,
        &ownership,
        store,
        fold_with_delete(),
        FlowConfig {
            replay_fence: true,
            resume_at: 0,
            ..FlowConfig::default()
        },
        rec.clone(),
    );
    flow.recover(&[&k]).unwrap();
    flow.tick_delete(&k).unwrap();
    flow.handle(&Record::new(&k, 2, b"e2")).unwrap();
    assert_eq!(flow.flush(), Ok(1));
    assert_eq!(
        flow.store().read(&k).unwrap(),
        Read::Tombstone { offset: 5 }
    );
    flow.handle(&Record::new(&k, 6, b"e6")).unwrap();
    assert_eq!(flow.flush(), Ok(1));
    assert_eq!(flow.store().read(&k).unwrap(), live(6, b"e6"));
    let steps = rec.steps();
    assert!(steps.iter().any(|s| matches!(
        s,
        Step::Write {
            presented: 5,
            outcome: Ok(()),
            ..
        }
    )));
    assert!(!steps.iter().any(|s| matches!(
        s,
        Step::Phase {
            phase: FlowPhase::SelfFenced,
            ..
        }
    )));
}

/// The same replay with the fence off (ReplayFence `Fix = false`): the owner presents its own
/// lagging offset and its compare-and-set loses against its own recovered snapshot.
pub fn replay_window_fence_off_owner_self_fences(b: &dyn Backend) {
    for tick_first in [true, false] {
        let (k, store) = recovered_at_5(b);
        let ownership = Ownership::new();
        let mut flow = PartitionFlow::assign(
            0,
            &ownership,
            store,
            fold_with_delete(),
            FlowConfig {
                replay_fence: false,
                resume_at: 0,
                ..FlowConfig::default()
            },
        );
        flow.recover(&[&k]).unwrap();
        let attempted = if tick_first {
            flow.tick_delete(&k).unwrap();
            0
        } else {
            flow.handle(&Record::new(&k, 2, b"e2")).unwrap();
            2
        };
        assert_eq!(
            flow.flush(),
            Err(FlowError::SelfFenced(Conflict {
                key: k.clone(),
                attempted,
                stored: 5
            }))
        );
        assert_eq!(
            flow.flush(),
            Err(FlowError::Stopped),
            "a self-fenced owner is dead"
        );
        assert_eq!(guarded(b).read(&k).unwrap(), live(5, b"e1\ne2\ne3\ne4\ne5"));
    }
}

/// C-4 (and S-1): recovered at 5, resumed at 0, the records 1..=6 replayed. Each is folded
/// once: the replay at 5 (the recovered offset itself) is dropped like those below it, and the
/// value stored at 6 is the exact fold, every line once (`cassandra_replay_fixoff`).
pub fn c4_a_replay_up_to_the_recovered_offset_is_folded_once(b: &dyn Backend) {
    let (k, store) = recovered_at_5(b);
    let ownership = Ownership::new();
    let mut flow = PartitionFlow::assign(
        0,
        &ownership,
        store,
        append_fold(),
        FlowConfig::for_store(&*guarded(b)),
    );
    flow.recover(&[&k]).unwrap();
    for o in 1..=6 {
        flow.handle(&Record::new(&k, o, format!("e{o}").as_bytes()))
            .unwrap();
    }
    assert_eq!(flow.flush(), Ok(1));
    assert_eq!(
        flow.store().read(&k).unwrap(),
        live(6, b"e1\ne2\ne3\ne4\ne5\ne6")
    );
}

/// C-4 (D-11): an earlier owner folded 1..=5, deleting the key at 3, and flushed at 5 (the
/// records 4 and 5 re-created it). A new owner resumed at 0 replays 1..=6. The replayed delete
/// at 3 lies below the recovered snapshot and is dropped like the replayed appends: presented
/// at the recovered offset it would tombstone the snapshot of 4 and 5, and 6 would fold onto
/// nothing (the Cassandra model's fold filter; `cassandra_replay_fixoff`'s path, guarded).
pub fn c4_a_replayed_delete_below_the_recovered_snapshot_is_dropped(b: &dyn Backend) {
    let k = unique_key("replay_delete");
    let ownership = Ownership::new();
    let payload = |o: u64| {
        if o == 3 {
            b"del".to_vec()
        } else {
            format!("e{o}").into_bytes()
        }
    };
    let mut first = PartitionFlow::assign(
        0,
        &ownership,
        guarded(b),
        fold_with_delete(),
        FlowConfig::default(),
    );
    for o in 1..=5 {
        first.handle(&Record::new(&k, o, &payload(o))).unwrap();
    }
    first.revoke().unwrap();
    assert_eq!(guarded(b).read(&k).unwrap(), live(5, b"e4\ne5"));
    let mut flow = PartitionFlow::assign(
        0,
        &ownership,
        guarded(b),
        fold_with_delete(),
        FlowConfig::for_store(&*guarded(b)),
    );
    flow.recover(&[&k]).unwrap();
    for o in 1..=5 {
        flow.handle(&Record::new(&k, o, &payload(o))).unwrap();
        assert_eq!(flow.flush(), Ok(0), "the replay of {o} writes nothing");
        assert_eq!(flow.store().read(&k).unwrap(), live(5, b"e4\ne5"));
    }
    flow.handle(&Record::new(&k, 6, b"e6")).unwrap();
    assert_eq!(flow.flush(), Ok(1));
    assert_eq!(flow.store().read(&k).unwrap(), live(6, b"e4\ne5\ne6"));
}

/// C-wiring: the replay fence is wired for a store that fences by offset, not for a
/// last-write-wins one.
pub fn c_wiring_the_replay_fence_follows_the_store_mode(b: &dyn Backend) {
    assert!(FlowConfig::for_store(&*guarded(b)).replay_fence);
    assert!(!FlowConfig::for_store(&*lww(b)).replay_fence);
}

/// An earlier owner folded 1..=5 and flushed: the key is stored at 5.
fn recovered_at_5(b: &dyn Backend) -> (String, Box<dyn SnapshotStore>) {
    let k = unique_key("replay");
    let ownership = Ownership::new();
    let mut first = PartitionFlow::assign(
        0,
        &ownership,
        guarded(b),
        append_fold(),
        FlowConfig::default(),
    );
    for o in 1..=5 {
        first
            .handle(&Record::new(&k, o, format!("e{o}").as_bytes()))
            .unwrap();
    }
    first.revoke().unwrap();
    assert_eq!(guarded(b).read(&k).unwrap(), live(5, b"e1\ne2\ne3\ne4\ne5"));
    (k, guarded(b))
}

/// The periodic flush writes without a revoke, and every component reports its steps under the
/// model's action names.
pub fn periodic_flush_and_trace_names(b: &dyn Backend) {
    let rec = Recorder::new();
    let k = unique_key("periodic");
    let ownership = Ownership::new();
    let store = b.open(StoreOptions::guarded(), rec.clone());
    let mut flow = PartitionFlow::assign_traced(
        0,
        &ownership,
        store,
        append_fold(),
        FlowConfig {
            flush_interval: Some(Duration::ZERO),
            ..Default::default()
        },
        rec.clone(),
    );
    flow.handle(&Record::new(&k, 1, b"e1")).unwrap();
    assert_eq!(
        guarded(b).read(&k).unwrap(),
        live(1, b"e1"),
        "flushed by the periodic flush"
    );
    let actions = rec.actions();
    for name in ["Phase", "OwnerRecover", "OwnerFold", "Fold", "Write"] {
        assert!(actions.contains(&name), "missing {name} in {actions:?}");
    }
    let statement = actions.contains(&"Persist") || actions.contains(&"Update1");
    assert!(statement, "the store reports its statements: {actions:?}");
}

pub fn stress_concurrent_writers_no_acknowledged_write_lost(b: &dyn Backend) {
    let report = super::stress::run(b, super::stress::StressConfig::default(), None);
    super::say(&format!("stress[{}]: {report}", b.name()));
    report.assert_clean();
}

/// Every write takes a path of the CasFirstWrite model: Update1, then (row absent) Insert, then
/// (insert race lost) RetryUpdate — checked per writer on 8 racing first writers, on fresh keys.
/// For the backends that run the three-statement compound (Cassandra, PostgreSQL compound).
pub fn first_write_compound_follows_the_model_paths(b: &dyn Backend) {
    use crate::trace::{Recorder, StatementOutcome as S, Step};
    let mut retries = 0;
    for round in 0..5 {
        let k = unique_key(&format!("compound-{round}"));
        let recorders: Vec<_> = (0..8).map(|_| Recorder::new()).collect();
        let stores: Vec<_> = recorders
            .iter()
            .map(|r| b.open(StoreOptions::guarded(), r.clone()))
            .collect();
        let barrier = std::sync::Barrier::new(8);
        std::thread::scope(|s| {
            for (i, store) in stores.iter().enumerate() {
                let (barrier, k) = (&barrier, &k);
                s.spawn(move || {
                    barrier.wait();
                    let _ = store.persist(k, 10 + i as u64, b"v");
                });
            }
        });
        for r in &recorders {
            let steps = r.steps();
            let path: Vec<(&str, &S)> = steps
                .iter()
                .map(|s| match s {
                    Step::Update1 { outcome, .. } => ("Update1", outcome),
                    Step::Insert { outcome, .. } => ("Insert", outcome),
                    Step::RetryUpdate { outcome, .. } => ("RetryUpdate", outcome),
                    other => panic!("unexpected step {other:?}"),
                })
                .collect();
            let ok = match path.as_slice() {
                [("Update1", S::Applied | S::NotApplied { .. })] => true,
                [("Update1", S::RowAbsent), ("Insert", S::Applied)] => true,
                [("Update1", S::RowAbsent), ("Insert", S::NotApplied { .. }), ("RetryUpdate", S::Applied | S::NotApplied { .. })] =>
                {
                    retries += 1;
                    true
                }
                _ => false,
            };
            assert!(ok, "not a CasFirstWrite path: {path:?}");
        }
        assert_eq!(
            b.open(StoreOptions::guarded(), no_trace())
                .read(&k)
                .unwrap()
                .offset(),
            Some(17)
        );
    }
    super::say(&format!("first-write compound[{}]: {retries} RetryUpdate paths (lost insert races) in 5 rounds of 8 writers", b.name()));
}

/// A tracer that stops its writer right after the named statements, until the test says go:
/// the step events double as a scheduler, so an interleaving of the model can be forced.
struct PauseAfter {
    actions: &'static [&'static str],
    reached: std::sync::Mutex<std::sync::mpsc::Sender<&'static str>>,
    go: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
}

impl crate::trace::Tracer for PauseAfter {
    fn step(&self, step: &Step) {
        let action = step.action();
        if let Some(a) = self.actions.iter().find(|a| **a == action) {
            self.reached.lock().unwrap().send(a).unwrap();
            self.go.lock().unwrap().recv().unwrap();
        }
    }
}

/// The CasFirstWrite interleavings, forced on the real database. Writer A (offset 5) finds no
/// row (Update1); writer B (offset 3) inserts; A's Insert loses the race; then either A's
/// RetryUpdate applies over B (the lost-race path), or — with the row reaped in between (the
/// model's ReapRow, as a TTL would) — A's retry finds no row: the model's spurious conflict,
/// reported as `Failed` with nothing written, never as success.
pub fn forced_interleavings_lost_insert_race_and_spurious_conflict(b: &dyn Backend) {
    for reap in [false, true] {
        let k = unique_key(if reap { "spurious" } else { "lost-race" });
        let (reached_tx, reached) = std::sync::mpsc::channel();
        let (go, go_rx) = std::sync::mpsc::channel();
        let pause = Arc::new(PauseAfter {
            actions: &["Update1", "Insert"],
            reached: std::sync::Mutex::new(reached_tx),
            go: std::sync::Mutex::new(go_rx),
        });
        let a = b.open(StoreOptions::guarded(), pause);
        let result = thread::scope(|s| {
            let a_thread = s.spawn(|| a.persist(&k, 5, b"A"));
            assert_eq!(reached.recv().unwrap(), "Update1");
            guarded(b).persist(&k, 3, b"B").unwrap(); // B wins the insert
            go.send(()).unwrap();
            assert_eq!(reached.recv().unwrap(), "Insert");
            if reap {
                b.reap_row(&k).unwrap();
            }
            go.send(()).unwrap();
            a_thread.join().unwrap()
        });
        let read = guarded(b).read(&k).unwrap();
        if reap {
            assert!(
                matches!(result, Err(WriteError::Failed { .. })),
                "spurious conflict must not be success: {result:?}"
            );
            assert_eq!(read, Read::Absent, "nothing was written");
        } else {
            assert_eq!(result, Ok(()));
            assert_eq!(read, live(5, b"A"));
        }
    }
}
