//! Stress and faults: concurrent sessions race on a handful of keys with offsets that mostly
//! rise but lag at random (so both applied writes and stale ones happen all the time), and read
//! keys now and then, for a bounded time, optionally killing and restarting the server mid-run.
//!
//! Every operation is recorded with when it was called and when it returned (never, when its
//! outcome is unknown) and what its session was told: the run's whole [`History`], which the
//! conformance layer judges against the model (`loadbearing-conform`'s `reliability`). This
//! crate knows no model; it also checks the end state on its own, in the store's terms:
//! afterwards every key must hold the highest acknowledged offset (or a higher write whose
//! outcome was unknown), and the write that is stored must be one that was acknowledged or
//! indeterminate — never one that was reported as a conflict or as failed. A stale write or a
//! lost acknowledgement *during* the run, overwritten by later writes, is for the history's
//! judge to see.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use crate::store::{Mode, Read, StoreOptions, WriteError};
use crate::trace::no_trace;

use super::{unique_key, Backend};

#[derive(Clone, Copy, Debug)]
pub struct StressConfig {
    pub writers: usize,
    pub keys: usize,
    pub duration: Duration,
    /// How far behind the global clock a writer's offset may lag.
    pub lag: u64,
    /// Per mille of operations that are deletes.
    pub delete_per_mille: u64,
    /// Per mille of operations that are reads of a key (recorded in the history).
    pub read_per_mille: u64,
    /// Guarded, or last-write-wins to show the check is not vacuous.
    pub mode: Mode,
}

impl Default for StressConfig {
    fn default() -> Self {
        StressConfig {
            writers: 8,
            keys: 4,
            duration: Duration::from_secs(3),
            lag: 48,
            delete_per_mille: 150,
            read_per_mille: 100,
            mode: Mode::Guarded,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    Applied,
    Conflict,
    Indeterminate,
    Failed,
}

#[derive(Clone, Debug)]
struct Attempt {
    key: usize,
    offset: u64,
    /// None for a delete.
    value: Option<Vec<u8>>,
    outcome: Outcome,
    /// When the outcome came back, since the start of the run.
    at: Duration,
}

/// What one operation of a run asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Asked {
    Persist { offset: u64, value: Vec<u8> },
    Delete { offset: u64 },
    Read,
}

/// What the session was told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Told {
    Applied,
    /// The guard refused the write: this offset is stored.
    Conflict {
        stored: u64,
    },
    /// Known not applied: nothing was sent, or the database refused the statement before it ran.
    Failed,
    /// Never answered: the write may or may not have landed. Its operation has no return.
    Indeterminate,
    /// What a read found.
    Read(Read),
    /// A read that failed: it observed nothing.
    ReadFailed,
}

/// One operation of a run: which session, on which key, when it was called and returned
/// (microseconds since the run began; `None`: it never returned), what it asked and was told.
#[derive(Clone, Debug)]
pub struct Op {
    pub session: usize,
    pub key: String,
    pub call_us: u64,
    pub ret_us: Option<u64>,
    pub asked: Asked,
    pub told: Told,
}

/// Every operation of a run, the final reads included, in no particular order: the order
/// that matters is the one their times give.
#[derive(Clone, Debug, Default)]
pub struct History {
    pub ops: Vec<Op>,
}

impl History {
    /// The reads of the run (during it and the final ones).
    pub fn reads(&self) -> usize {
        self.ops.iter().filter(|o| o.asked == Asked::Read).count()
    }
}

/// What a run did and what it found.
#[derive(Debug, Default)]
pub struct StressReport {
    pub attempts: usize,
    pub applied: usize,
    pub conflicts: usize,
    pub indeterminate: usize,
    pub failed: usize,
    /// Indeterminate writes that turned out to be the stored one.
    pub indeterminate_landed: usize,
    pub fault_lasted: Option<Duration>,
    /// What was done to the server or the network mid-run (`server killed (-9) and restarted`,
    /// `connections reset for 1 s`); `fault_lasted` is how long it took.
    pub fault: Option<String>,
    /// Writes acknowledged after the fault was over (the server back, the network healed).
    pub applied_after_fault: usize,
    pub violations: Vec<Violation>,
    /// The whole run, for the model to judge.
    pub history: History,
}

/// What a faulted run's final state got wrong, by kind (the fault tests of other designs,
/// such as Kafka's, judge their histories in the same terms).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wrong {
    /// A stored write that must not be there: refused, failed, unknown to the history, or
    /// above every acknowledged one without being indeterminate.
    Stale,
    /// An acknowledged write the final state lost.
    LostAck,
    /// The final state could not be read.
    Unreadable,
}

/// One thing a run got wrong: its kind, and what it was in words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub wrong: Wrong,
    pub what: String,
}

impl Violation {
    pub fn new(wrong: Wrong, what: String) -> Self {
        Violation { wrong, what }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what)
    }
}

/// How many of `violations` are of kind `wrong`.
pub fn count(violations: &[Violation], wrong: Wrong) -> usize {
    violations.iter().filter(|v| v.wrong == wrong).count()
}

impl fmt::Display for StressReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} attempts: {} applied, {} conflicts, {} indeterminate ({} of them stored), {} failed; {} violations",
            self.attempts,
            self.applied,
            self.conflicts,
            self.indeterminate,
            self.indeterminate_landed,
            self.failed,
            self.violations.len()
        )?;
        if let Some(d) = self.fault_lasted {
            write!(
                f,
                "; {} in {:.1}s, {} writes applied after it",
                self.fault.as_deref().unwrap_or("fault"),
                d.as_secs_f64(),
                self.applied_after_fault
            )?;
        }
        Ok(())
    }
}

impl StressReport {
    /// This run as a row of docs/reliability.md's table of the stores: fault, backend,
    /// operations, applied, refused, failed (nothing sent), indeterminate, stale writes, lost
    /// acks, verdict.
    pub fn row(&self, backend: &str) -> String {
        let fault = match (&self.fault, self.fault_lasted) {
            (Some(what), Some(d)) => format!("{what} ({:.1} s)", d.as_secs_f64()),
            (Some(what), None) => what.clone(),
            (None, _) => "none".into(),
        };
        format!(
            "| {fault} | {backend} | {} | {} | {} | {} | {} | {} | {} | {} |",
            self.attempts,
            self.applied,
            self.conflicts,
            self.failed,
            self.indeterminate,
            count(&self.violations, Wrong::Stale),
            count(&self.violations, Wrong::LostAck),
            if self.violations.is_empty() {
                "holds"
            } else {
                "FAILS"
            }
        )
    }

    pub fn assert_clean(&self) {
        assert!(
            self.violations.is_empty(),
            "stress violations:\n{}",
            self.violations
                .iter()
                .map(Violation::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        );
        assert!(
            self.applied > 0 && self.conflicts > 0,
            "the run must exercise both applied and refused writes: {self}"
        );
    }
}

/// Run the stress; `kill` (if any) is called once, a third into the run, and must kill the
/// server with -9 and restart it before returning.
pub fn run(b: &dyn Backend, cfg: StressConfig, kill: Option<&(dyn Fn() + Sync)>) -> StressReport {
    run_faulted(
        b,
        cfg,
        kill.map(|k| ("server killed (-9) and restarted", k)),
    )
}

/// Run the stress with `fault` (what it does, in words, and the call that does it) called once,
/// a third into the run; the call returns once the fault is over (the server restarted, the
/// network restored), and the run then writes on until writes land again.
pub fn run_faulted(
    b: &dyn Backend,
    cfg: StressConfig,
    fault: Option<(&str, &(dyn Fn() + Sync))>,
) -> StressReport {
    let inject = fault.map(|(_, f)| f);
    let keys: Vec<String> = (0..cfg.keys)
        .map(|i| unique_key(&format!("stress-{i}")))
        .collect();
    let clock = AtomicU64::new(cfg.lag);
    let stop = AtomicBool::new(false);
    // Set once the fault is over; counts the writes applied from then on.
    let back = AtomicBool::new(false);
    let applied_back = AtomicU64::new(0);
    let log: Mutex<Vec<Attempt>> = Mutex::new(Vec::new());
    let history: Mutex<Vec<Op>> = Mutex::new(Vec::new());
    let fault_time: Mutex<Option<Duration>> = Mutex::new(None);
    let fault_at: Mutex<Option<Duration>> = Mutex::new(None);
    let options = StoreOptions {
        mode: cfg.mode,
        ttl: None,
    };
    let sessions: Vec<_> = (0..cfg.writers)
        .map(|_| b.open(options, no_trace()))
        .collect();
    let start = Instant::now();
    thread::scope(|scope| {
        for (w, store) in sessions.into_iter().enumerate() {
            let (clock, stop, log, keys, history) = (&clock, &stop, &log, &keys, &history);
            let (back, applied_back) = (&back, &applied_back);
            scope.spawn(move || {
                // The workspace's one seeded generator (fastrand), one stream per writer.
                let mut rng = fastrand::Rng::with_seed(
                    0x9E37_79B9_7F4A_7C15 ^ ((w as u64 + 1) * 0x1234_5678_9ABC_DEF1),
                );
                let mut mine = Vec::new();
                let mut ops = Vec::new();
                let mut seq = 0u64;
                let micros = |d: Duration| d.as_micros() as u64;
                while !stop.load(Ordering::Relaxed) {
                    let key = rng.usize(..keys.len());
                    if rng.u64(..1000) < cfg.read_per_mille {
                        let call_us = micros(start.elapsed());
                        let read = store.read(&keys[key]);
                        let ret_us = micros(start.elapsed());
                        ops.push(Op {
                            session: w,
                            key: keys[key].clone(),
                            call_us,
                            ret_us: Some(ret_us),
                            asked: Asked::Read,
                            told: read.map_or(Told::ReadFailed, Told::Read),
                        });
                        continue;
                    }
                    let now = clock.fetch_add(1, Ordering::Relaxed);
                    let offset = now - rng.u64(..cfg.lag);
                    seq += 1;
                    let value = if rng.u64(..1000) < cfg.delete_per_mille {
                        None
                    } else {
                        Some(format!("w{w}-s{seq}-o{offset}").into_bytes())
                    };
                    let call_us = micros(start.elapsed());
                    let result = match &value {
                        Some(v) => store.persist(&keys[key], offset, v),
                        None => store.delete(&keys[key], offset),
                    };
                    let answered_us = micros(start.elapsed());
                    let (ret_us, told) = match &result {
                        Ok(()) => (Some(answered_us), Told::Applied),
                        Err(WriteError::Conflict(c)) => {
                            (Some(answered_us), Told::Conflict { stored: c.stored })
                        }
                        Err(WriteError::Failed { .. }) => (Some(answered_us), Told::Failed),
                        Err(WriteError::Indeterminate { .. }) => (None, Told::Indeterminate),
                    };
                    ops.push(Op {
                        session: w,
                        key: keys[key].clone(),
                        call_us,
                        ret_us,
                        asked: match &value {
                            Some(v) => Asked::Persist {
                                offset,
                                value: v.clone(),
                            },
                            None => Asked::Delete { offset },
                        },
                        told,
                    });
                    let outcome = match result {
                        Ok(()) => {
                            if back.load(Ordering::Relaxed) {
                                applied_back.fetch_add(1, Ordering::Relaxed);
                            }
                            Outcome::Applied
                        }
                        Err(WriteError::Conflict(c)) => {
                            if c.stored <= offset || c.attempted != offset || c.key != keys[key] {
                                panic!("malformed conflict {c:?} for a write at {offset}");
                            }
                            Outcome::Conflict
                        }
                        Err(WriteError::Indeterminate { .. }) => Outcome::Indeterminate,
                        Err(WriteError::Failed { .. }) => Outcome::Failed,
                    };
                    if matches!(outcome, Outcome::Indeterminate | Outcome::Failed) {
                        thread::sleep(Duration::from_millis(20));
                    }
                    mine.push(Attempt {
                        key,
                        offset,
                        value,
                        outcome,
                        at: start.elapsed(),
                    });
                }
                log.lock().unwrap().extend(mine);
                history.lock().unwrap().extend(ops);
            });
        }
        scope.spawn(|| {
            // Stop the writers however this thread ends (a failed restart panics here).
            struct StopOnDrop<'a>(&'a AtomicBool);
            impl Drop for StopOnDrop<'_> {
                fn drop(&mut self) {
                    self.0.store(true, Ordering::Relaxed);
                }
            }
            let _stop = StopOnDrop(&stop);
            if let Some(inject) = inject {
                thread::sleep(cfg.duration / 3);
                let t = Instant::now();
                *fault_at.lock().unwrap() = Some(start.elapsed());
                inject();
                *fault_time.lock().unwrap() = Some(t.elapsed());
                back.store(true, Ordering::Relaxed);
                // Keep writing once the fault is over until 50 writes landed (the
                // clients reconnect first), 1 s more, or 30 s at most.
                let until = Instant::now() + Duration::from_secs(30);
                while applied_back.load(Ordering::Relaxed) < 50 && Instant::now() < until {
                    thread::sleep(Duration::from_millis(50));
                }
                thread::sleep(Duration::from_secs(1));
            }
            let end = start + cfg.duration;
            let now = Instant::now();
            if end > now {
                thread::sleep(end - now);
            }
        });
    });
    let attempts = log.into_inner().unwrap();
    let mut ops = history.into_inner().unwrap();
    let fault_at = fault_at.into_inner().unwrap();
    let mut report = StressReport {
        attempts: attempts.len(),
        fault_lasted: fault_time.into_inner().unwrap(),
        fault: fault.map(|(what, _)| what.to_string()),
        ..Default::default()
    };
    let back_at = fault_at
        .zip(report.fault_lasted)
        .map(|(at, took)| at + took);
    for a in &attempts {
        match a.outcome {
            Outcome::Applied => {
                report.applied += 1;
                if back_at.is_some_and(|t| a.at > t) {
                    report.applied_after_fault += 1;
                }
            }
            Outcome::Conflict => report.conflicts += 1,
            Outcome::Indeterminate => report.indeterminate += 1,
            Outcome::Failed => report.failed += 1,
        }
    }
    let reader = b.open(StoreOptions::guarded(), no_trace());
    let final_reads: Vec<Result<Read, String>> = keys
        .iter()
        .map(|key| {
            let call_us = start.elapsed().as_micros() as u64;
            let read = read_with_retry(&*reader, key);
            if let Ok(found) = &read {
                // The final read is part of the history too: it happened after every write.
                ops.push(Op {
                    session: cfg.writers,
                    key: key.clone(),
                    call_us,
                    ret_us: Some(start.elapsed().as_micros() as u64),
                    asked: Asked::Read,
                    told: Told::Read(found.clone()),
                });
            }
            read
        })
        .collect();
    report.history = History { ops };
    for (i, (key, read)) in keys.iter().zip(final_reads).enumerate() {
        let mine: Vec<&Attempt> = attempts.iter().filter(|a| a.key == i).collect();
        let acked_max = mine
            .iter()
            .filter(|a| a.outcome == Outcome::Applied)
            .map(|a| a.offset)
            .max();
        let acked_at = |o: u64| {
            let at = mine
                .iter()
                .find(|a| a.outcome == Outcome::Applied && a.offset == o)
                .map(|a| a.at);
            format!("acknowledged at {at:?} into the run, the fault at {fault_at:?}")
        };
        let read = match read {
            Ok(r) => r,
            Err(e) => {
                report.violations.push(Violation::new(
                    Wrong::Unreadable,
                    format!("key {key}: final read failed: {e}"),
                ));
                continue;
            }
        };
        let stored = read.offset();
        if let Some(acked) = acked_max {
            if stored.is_none_or(|s| s < acked) {
                report.violations.push(Violation::new(
                    Wrong::LostAck,
                    format!(
                        "key {key}: acknowledged offset {acked} lost ({}), stored {read:?}",
                        acked_at(acked)
                    ),
                ));
            }
        }
        // Which write is stored? A live value names its write; a tombstone names the deletes at
        // its offset.
        let candidates: Vec<&&Attempt> = match &read {
            Read::Live { offset, value } => mine
                .iter()
                .filter(|a| a.offset == *offset && a.value.as_deref() == Some(value))
                .collect(),
            Read::Tombstone { offset } => mine
                .iter()
                .filter(|a| a.offset == *offset && a.value.is_none())
                .collect(),
            Read::Absent => Vec::new(),
        };
        if read != Read::Absent && candidates.is_empty() {
            report.violations.push(Violation::new(
                Wrong::Stale,
                format!("key {key}: stored {read:?} matches no attempted write"),
            ));
        }
        let ok = candidates
            .iter()
            .any(|a| matches!(a.outcome, Outcome::Applied | Outcome::Indeterminate));
        if !candidates.is_empty() && !ok {
            report.violations.push(Violation::new(
                Wrong::Stale,
                format!(
                    "key {key}: stored {read:?} was written by a write reported as {:?}",
                    candidates.iter().map(|a| &a.outcome).collect::<Vec<_>>()
                ),
            ));
        }
        if candidates
            .iter()
            .all(|a| a.outcome == Outcome::Indeterminate)
            && !candidates.is_empty()
        {
            report.indeterminate_landed += 1;
        }
        if let (Some(s), Some(acked)) = (stored, acked_max) {
            if s > acked
                && !candidates
                    .iter()
                    .any(|a| a.outcome == Outcome::Indeterminate)
            {
                report.violations.push(Violation::new(
                    Wrong::Stale,
                    format!(
                        "key {key}: stored offset {s} above every acknowledged offset ({acked}) \
                         but not from an indeterminate write"
                    ),
                ));
            }
        }
    }
    report
}

fn read_with_retry(store: &dyn crate::store::SnapshotStore, key: &str) -> Result<Read, String> {
    let mut last = String::new();
    for _ in 0..50 {
        match store.read(key) {
            Ok(r) => return Ok(r),
            Err(e) => last = e.to_string(),
        }
        thread::sleep(Duration::from_millis(200));
    }
    Err(last)
}
