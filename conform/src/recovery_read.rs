//! Conformance of the recovery read on the real broker (`impls/kafka/src/kafka.rs`, the
//! `KafkaSnapshotLog` under `recovery::read_to_target`) to the RecoveryRead model,
//! both ways.
//!
//! Implementation → model: the harness plays the model's writers on a fresh snapshot
//! partition of a Kafka 4.4 broker: owner A commits a snapshot and leaves a transaction open,
//! a foreign producer may leave one open too, owner B initialises (on A's transactional id when
//! the script shares it, which aborts A's open transaction) and commits its snapshot above
//! them, then leaves a transaction open. Every transaction times out after
//! [`TXN_TIMEOUT`], and the broker aborts it. The read starts at a seeded point of the script;
//! its capture of the target, its completion or trip, each writer step and each abort the
//! broker made (seen as the last stable offset passing an open record) are recorded, with both
//! ends after every step (`Ends`), under one lock, so the trace's order is the order on the
//! broker. Every trace is held to the design's model (`HwTarget`, the tripwire, the script's
//! `StableId` and `Foreign`): `recovery-read` must conform; `recovery-read-own-end`, which takes
//! its target from the reader's own `read_committed` end offset (F-10 as found), must diverge
//! at the capture.
//!
//! Model → implementation: the counterexamples of `recoveryread_lso_unique` and
//! `recoveryread_lso_foreign` become scripts, driven through the planted mutant (its read must
//! leave out a snapshot committed before it began) and through the design (it must return
//! every one, waiting out the open transactions).
//!
//! Not driven: the `Truncation` configs, since one broker never truncates its log (the fact is
//! explained in `expected/facts.toml`; the tripwire they need is `recovery-deadline`'s), and
//! `recoveryread_trunc_recompute`, a control of the refinement mapping with no implementation
//! counterpart.

#[cfg(feature = "kafka")]
use std::time::Duration;

use loadbearing_specs::recovery::log::{EnvAction, Environment, Indexes};
use loadbearing_specs::recovery::read::{ReadAction, RecoveryRead};
use loadbearing_specs::recovery::read_trace::ReadEvent;

use crate::backend::BackendKind;
use crate::error::{Error, HarnessError};
use crate::must_fail::{replay_each, Build, Showed};
use crate::replays::Violation;
use crate::schedule::{Schedule, Seeded};
use crate::target::{Expect, ModelName, Settings, Target, TargetResult};
use crate::target_id::TargetId;

/// Every transaction's `transaction.timeout.ms` in the harness: the broker aborts an open one
/// this long after it began, plus up to one abort scan. Longer than the script takes from any
/// open transaction to the read's capture (a commit takes up to a second on the test broker,
/// a new producer's init as long), so the transactions the script leaves open are open when
/// the read starts.
#[cfg(feature = "kafka")]
pub const TXN_TIMEOUT: Duration = Duration::from_secs(4);

/// Where the read takes its target from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lens {
    /// The design: the high watermark through a `read_uncommitted` probe.
    HighWatermark,
    /// The reader's own `read_committed` end offset, the last stable offset (planted).
    OwnEnd,
}

pub struct RecoveryReadTarget {
    id: TargetId,
    lens: Lens,
}

/// The recovery read as designed.
pub static RECOVERY_READ: RecoveryReadTarget = RecoveryReadTarget {
    id: TargetId::RecoveryRead,
    lens: Lens::HighWatermark,
};

/// The read bounded by its own end offset (planted mutant).
pub static RECOVERY_READ_OWN_END: RecoveryReadTarget = RecoveryReadTarget {
    id: TargetId::RecoveryReadOwnEnd,
    lens: Lens::OwnEnd,
};

const ON_THE_BROKER: &[BackendKind] = &[BackendKind::Kafka];

impl Target for RecoveryReadTarget {
    fn id(&self) -> TargetId {
        self.id
    }

    fn model(&self, _: BackendKind) -> ModelName {
        ModelName::of::<RecoveryRead>()
    }

    fn backends(&self) -> &'static [BackendKind] {
        ON_THE_BROKER
    }

    fn expect(&self) -> Expect {
        match self.lens {
            Lens::HighWatermark => Expect::Conforms,
            Lens::OwnEnd => Expect::Diverges,
        }
    }

    fn run(&self, settings: &Settings, result: &mut TargetResult) -> Result<(), Error> {
        let bootstrap = settings.backend.address()?;
        let mut schedule = Seeded::new(settings.seed);
        // F-10's shape every time (B's snapshot committed above A's open transaction when the
        // read starts), then seeded scripts.
        let mut scripts = vec![Script::F10];
        scripts.extend((1..settings.traces).map(|_| Script::seeded(&mut schedule)));
        for script in scripts {
            let run = drive(bootstrap, script, self.lens, self.id.name())?;
            result.tally(&design(script.env), &run.events);
        }
        replay_counterexamples(bootstrap, self.id, self.lens, result)
    }
}

/// The design's model, in the script's environment (one broker: no truncation).
fn design(env: Environment) -> RecoveryRead {
    RecoveryRead {
        env,
        hw_target: true,
        end_offsets_is_lso: true,
        tripwire: true,
        freeze_observed: true,
    }
}

/// The writers' script and the point at which the read starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Script {
    env: Environment,
    /// How many writer steps precede the read's capture.
    capture_after: usize,
}

impl Script {
    /// Unique ids, no foreign producer; the read starts once B's snapshot is committed above
    /// A's open transaction.
    const F10: Script = Script {
        env: Environment {
            stable_id: false,
            foreign: false,
            truncation: false,
        },
        capture_after: 4,
    };

    fn seeded(schedule: &mut dyn Schedule) -> Script {
        let env = Environment {
            stable_id: schedule.below(2) == 1,
            foreign: schedule.below(2) == 1,
            truncation: false,
        };
        let steps = writer_steps(env).len() as u64;
        Script {
            env,
            capture_after: schedule.below(steps + 1) as usize,
        }
    }

    /// A counterexample's script: its environment, and where its read captured.
    fn of_path(model: &RecoveryRead, path: &[ReadAction]) -> Result<Script, Error> {
        let capture = path
            .iter()
            .position(|a| *a == ReadAction::Capture)
            .ok_or_else(|| HarnessError::CannotTime("it has no capture".into()))?;
        let before = &path[..capture];
        if let Some(a) = before.iter().find(|a| {
            matches!(
                a,
                ReadAction::Env(EnvAction::TimeoutAbort(_) | EnvAction::Truncate(_))
            )
        }) {
            return Err(Error::Harness(HarnessError::CannotTime(format!(
                "its {a:?} comes before the capture"
            ))));
        }
        Ok(Script {
            env: model.env,
            capture_after: before.len(),
        })
    }
}

/// The writer steps of an environment, in script order.
fn writer_steps(env: Environment) -> Vec<EnvAction> {
    let mut steps = vec![EnvAction::AWriteS1, EnvAction::AOpenT1];
    if env.foreign {
        steps.push(EnvAction::ForeignOpen);
    }
    steps.extend([EnvAction::BInit, EnvAction::BWriteS3, EnvAction::BOpenT2]);
    steps
}

/// What one scripted read did.
#[derive(Debug)]
pub struct Run {
    events: Vec<ReadEvent>,
    /// The records the read returned, if it completed.
    result: Option<Indexes>,
    /// The committed records below the log end when the read captured its target.
    committed_at_capture: Indexes,
}

impl Run {
    /// Whether the run showed `violation`: the read returned other than the committed
    /// records when it began.
    fn shows(&self, violation: Violation) -> bool {
        violation == Violation::MissedSnapshot
            && self.result.is_some_and(|r| r != self.committed_at_capture)
    }

    fn describe(&self) -> String {
        match self.result {
            Some(r) => format!(
                "returned {r}; committed when it began: {}",
                self.committed_at_capture
            ),
            None => "the read did not complete".into(),
        }
    }
}

fn replay_counterexamples(
    bootstrap: &str,
    target: TargetId,
    lens: Lens,
    result: &mut TargetResult,
) -> Result<(), Error> {
    replay_each::<RecoveryRead>(target, result, |spec, cx, build, result| {
        let script = Script::of_path(&cx.model, &cx.path)?;
        let run = match build {
            Build::Broken => drive(bootstrap, script, lens, target.name())?,
            Build::Designed => {
                let run = drive(bootstrap, script, Lens::HighWatermark, target.name())?;
                // The design's replay is a trace of its own, held to the design's model.
                result.tally(&design(script.env), &run.events);
                run
            }
        };
        Ok(Showed {
            violation: run.shows(spec.shows),
            did: run.describe(),
        })
    })
}

#[cfg(feature = "kafka")]
fn drive(bootstrap: &str, script: Script, lens: Lens, target: &str) -> Result<Run, Error> {
    on_the_broker::drive(bootstrap, script, lens, target)
}

#[cfg(not(feature = "kafka"))]
fn drive(_: &str, _: Script, _: Lens, _: &str) -> Result<Run, Error> {
    Err(Error::NotCompiled(BackendKind::Kafka))
}

#[cfg(feature = "kafka")]
mod on_the_broker {
    use std::collections::HashMap;
    use std::sync::mpsc;
    use std::sync::{Arc, Mutex, MutexGuard};
    use std::thread;
    use std::time::Instant;

    use loadbearing_impls::store::Read;
    use loadbearing_impls_kafka::group_commit::{SnapshotWrite, TxnProducer};
    use loadbearing_impls_kafka::kafka::{
        self, EndsProbe, KafkaSnapshotLog, KafkaTxnProducer, TargetLens, UncommittedScan,
    };
    use loadbearing_impls_kafka::recovery::{
        read_to_target, Deployment, Ends, LogError, RecoveryBudget, RecoveryError, SnapshotLog,
        SnapshotRecord, WallClock,
    };

    use super::*;

    /// The harness's deployment: its transactions' timeout, the test broker's abort scan, a
    /// member poll interval far above both.
    fn budget() -> Result<RecoveryBudget, Error> {
        let deployment = Deployment {
            txn_timeout: TXN_TIMEOUT,
            abort_scan: loadbearing_impls_kafka::harness::ABORT_SCAN,
            max_poll_interval: Duration::from_secs(60),
        };
        RecoveryBudget::new(Duration::from_secs(8), deployment)
            .map_err(HarnessError::failed("the harness's recovery budget"))
    }

    /// How long the harness waits for the read to end once the script is done: the stall
    /// budget, an abort's wait and the read itself, with room.
    const READ_PATIENCE: Duration = Duration::from_secs(40);

    const WAIT: Duration = Duration::from_secs(10);

    /// The key of the record a writer step writes (none for `BInit`): the step, readable in
    /// the partition.
    fn key_of(step: EnvAction) -> Option<&'static str> {
        match step {
            EnvAction::AWriteS1 => Some("S1"),
            EnvAction::AOpenT1 => Some("T1"),
            EnvAction::ForeignOpen => Some("F"),
            EnvAction::BWriteS3 => Some("S3"),
            EnvAction::BOpenT2 => Some("T2"),
            EnvAction::BInit | EnvAction::TimeoutAbort(_) | EnvAction::Truncate(_) => None,
        }
    }

    /// Whether the step commits its record (else it leaves its transaction open).
    fn commits(step: EnvAction) -> bool {
        matches!(step, EnvAction::AWriteS1 | EnvAction::BWriteS3)
    }

    /// A record the script wrote: by which step, where it sits, and whether its transaction
    /// may still be open.
    struct Written {
        step: EnvAction,
        position: i64,
        open: bool,
    }

    /// What the harness and the reader share, behind one lock: the trace in the order the
    /// broker saw things, and the records written.
    struct Ledger {
        events: Vec<ReadEvent>,
        written: Vec<Written>,
        ends: EndsProbe,
        committed_at_capture: Indexes,
    }

    impl Ledger {
        /// The records below a partition position, counted as the model counts them.
        fn below(&self, end: i64) -> u8 {
            self.written.iter().filter(|w| w.position < end).count() as u8
        }

        fn index_of(&self, key: &str) -> Option<u8> {
            self.written
                .iter()
                .position(|w| key_of(w.step) == Some(key))
                .map(|i| i as u8 + 1)
        }

        fn committed(&self) -> Indexes {
            let mut set = Indexes::EMPTY;
            for (i, w) in self.written.iter().enumerate() {
                if commits(w.step) {
                    set.insert(i + 1);
                }
            }
            set
        }

        /// Wait for the commit marker after the record at `position`: `commit_transaction`
        /// returns before the coordinator has written it (observed on 4.4: the last stable
        /// offset is still at the record right after the call), and the model's commit is one
        /// step. No other marker lands there: the record's transaction is the only one that
        /// ends right after it.
        fn await_marker(&mut self, position: i64) -> Result<(), Error> {
            let deadline = Instant::now() + WAIT;
            while self.ends.read(WAIT).map_err(log_failed)?.high <= position + 1 {
                if Instant::now() > deadline {
                    return Err(HarnessError::timed_out(
                        format!("the commit marker after position {position} landing"),
                        WAIT,
                    ));
                }
                thread::sleep(Duration::from_millis(10));
            }
            Ok(())
        }

        /// Read both ends; record an abort for every open record the last stable offset has
        /// passed (nothing commits them: passed means aborted by the broker), then the ends.
        fn sync(&mut self) -> Result<(), Error> {
            let ends = self.ends.read(WAIT).map_err(log_failed)?;
            for (i, w) in self.written.iter_mut().enumerate() {
                if w.open && w.position < ends.stable {
                    w.open = false;
                    self.events
                        .push(ReadEvent::TimeoutAbort { index: i as u8 + 1 });
                }
            }
            let event = ReadEvent::Ends {
                stable: self.below(ends.stable),
                high: self.below(ends.high),
            };
            self.events.push(event);
            Ok(())
        }
    }

    fn log_failed(e: LogError) -> Error {
        HarnessError::failed(e.what)(e.reason)
    }

    fn lock(ledger: &Mutex<Ledger>) -> MutexGuard<'_, Ledger> {
        ledger.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The read's partition, its capture recorded in the ledger the moment it is taken.
    struct Recorded {
        inner: KafkaSnapshotLog,
        ledger: Arc<Mutex<Ledger>>,
        captured: mpsc::Sender<()>,
    }

    impl SnapshotLog for Recorded {
        fn target(&mut self) -> Result<i64, LogError> {
            let mut ledger = lock(&self.ledger);
            ledger.sync().map_err(|e| LogError {
                what: "the harness's ends",
                reason: e.to_string(),
            })?;
            let target = self.inner.target()?;
            let event = ReadEvent::Capture {
                target: ledger.below(target),
            };
            ledger.events.push(event);
            ledger.committed_at_capture = ledger.committed();
            let _ = self.captured.send(());
            Ok(target)
        }
        fn start(&mut self) -> Result<(), LogError> {
            self.inner.start()
        }
        fn position(&mut self) -> i64 {
            self.inner.position()
        }
        fn poll(&mut self, wait: Duration) -> Result<Option<SnapshotRecord>, LogError> {
            self.inner.poll(wait)
        }
        fn ends_now(&mut self, wait: Duration) -> Result<Ends, LogError> {
            self.inner.ends_now(wait)
        }
    }

    /// The writers: A, then the foreign producer and B as the script reaches them.
    struct Writers<'a> {
        bootstrap: &'a str,
        topic: &'a str,
        run: &'a str,
        env: Environment,
        a: KafkaTxnProducer,
        f: Option<KafkaTxnProducer>,
        b: Option<KafkaTxnProducer>,
    }

    impl Writers<'_> {
        fn producer(&self, who: &str) -> Result<KafkaTxnProducer, Error> {
            let id = format!("{}-{who}", self.run);
            KafkaTxnProducer::with_txn_timeout(self.bootstrap, &id, self.topic, 0, TXN_TIMEOUT)
                .map_err(|e| HarnessError::failed(format!("producer {who}"))(format!("{e:?}")))
        }

        /// Take `step`.
        fn take(&mut self, step: EnvAction) -> Result<(), Error> {
            let failed = |e| HarnessError::failed(format!("{step:?}"))(format!("{e:?}"));
            let key = key_of(step).unwrap_or_default();
            let write = SnapshotWrite::persist(key, 1, key.as_bytes());
            let open = |p: &mut KafkaTxnProducer| -> Result<(), Error> {
                p.begin().map_err(failed)?;
                p.send(&write).map_err(failed)?;
                p.deliver();
                Ok(())
            };
            let commit = |p: &mut KafkaTxnProducer| -> Result<(), Error> {
                p.begin().map_err(failed)?;
                p.send(&write).map_err(failed)?;
                p.commit().map_err(failed)
            };
            fn b(
                b: &mut Option<KafkaTxnProducer>,
                step: EnvAction,
            ) -> Result<&mut KafkaTxnProducer, Error> {
                b.as_mut()
                    .ok_or_else(|| HarnessError::out_of_order(step, "it comes before BInit"))
            }
            match step {
                EnvAction::AWriteS1 => commit(&mut self.a)?,
                EnvAction::AOpenT1 => open(&mut self.a)?,
                EnvAction::ForeignOpen => {
                    let mut f = self.producer("foreign")?;
                    open(&mut f)?;
                    self.f = Some(f);
                }
                EnvAction::BInit => {
                    // A shared id is A's: B's init fences A and aborts its open transaction.
                    let who = if self.env.stable_id { "A" } else { "B" };
                    self.b = Some(self.producer(who)?);
                }
                EnvAction::BWriteS3 => commit(b(&mut self.b, step)?)?,
                EnvAction::BOpenT2 => open(b(&mut self.b, step)?)?,
                EnvAction::TimeoutAbort(_) | EnvAction::Truncate(_) => {
                    return Err(HarnessError::out_of_order(step, "it is the broker's"))
                }
            }
            Ok(())
        }
    }

    /// The record `key`'s position, from the uncommitted scan (which returns the partition in
    /// order, so what it has passed is remembered).
    fn position_of(
        scan: &mut UncommittedScan,
        seen: &mut HashMap<String, i64>,
        key: &str,
    ) -> Result<i64, Error> {
        let deadline = Instant::now() + WAIT;
        while !seen.contains_key(key) {
            if Instant::now() > deadline {
                return Err(HarnessError::timed_out(
                    format!("the record {key} showing in the partition"),
                    WAIT,
                ));
            }
            if let Some((k, position)) =
                scan.next(Duration::from_millis(100)).map_err(log_failed)?
            {
                seen.insert(k, position);
            }
        }
        Ok(seen[key])
    }

    pub fn drive(bootstrap: &str, script: Script, lens: Lens, target: &str) -> Result<Run, Error> {
        static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let run = format!(
            "conform-{target}-{}-{}",
            std::process::id(),
            RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let topic = format!("{run}-snapshots");
        kafka::create_topics(bootstrap, &[(&topic, 1, false)])
            .map_err(Error::open("creating the snapshot topic"))?;
        let ledger = Arc::new(Mutex::new(Ledger {
            events: Vec::new(),
            written: Vec::new(),
            ends: EndsProbe::open(bootstrap, &topic, 0).map_err(log_failed)?,
            committed_at_capture: Indexes::EMPTY,
        }));
        let mut scan = UncommittedScan::open(bootstrap, &topic, 0).map_err(log_failed)?;
        let mut seen = HashMap::new();
        let mut writers = Writers {
            bootstrap,
            topic: &topic,
            run: &run,
            env: script.env,
            a: KafkaTxnProducer::with_txn_timeout(
                bootstrap,
                &format!("{run}-A"),
                &topic,
                0,
                TXN_TIMEOUT,
            )
            .map_err(|e| HarnessError::failed("producer A")(format!("{e:?}")))?,
            f: None,
            b: None,
        };
        let budget = budget()?;
        let steps = writer_steps(script.env);
        let mut reader = None;
        for (i, &step) in steps.iter().enumerate() {
            if i == script.capture_after {
                reader = Some(start_read(bootstrap, &topic, lens, &ledger, &budget)?);
            }
            // The last step's ends were read right after it (or the capture's, just now).
            let mut l = lock(&ledger);
            writers.take(step)?;
            if let Some(key) = key_of(step) {
                let position = position_of(&mut scan, &mut seen, key)?;
                if commits(step) {
                    l.await_marker(position)?;
                }
                l.written.push(Written {
                    step,
                    position,
                    open: !commits(step),
                });
            }
            if step == EnvAction::BInit && script.env.stable_id {
                // The model's BInit aborts A's open transaction; the ends read next check it.
                for w in l
                    .written
                    .iter_mut()
                    .filter(|w| w.step == EnvAction::AOpenT1)
                {
                    w.open = false;
                }
            }
            l.events.push(event_of(step));
            l.sync()?;
        }
        let reader = match reader {
            Some(r) => r,
            None => start_read(bootstrap, &topic, lens, &ledger, &budget)?,
        };
        // The broker's aborts keep landing while the read runs: keep recording them.
        let deadline = Instant::now() + READ_PATIENCE;
        while !reader.is_finished() {
            if Instant::now() > deadline {
                return Err(HarnessError::timed_out(
                    format!("the recovery read of {topic} ending"),
                    READ_PATIENCE,
                ));
            }
            thread::sleep(Duration::from_millis(100));
            lock(&ledger).sync()?;
        }
        let outcome = reader
            .join()
            .map_err(|_| HarnessError::failed("the reader")("it panicked"))?;
        let mut l = lock(&ledger);
        l.sync()?;
        let result = match outcome {
            Ok(read) => {
                let mut set = Indexes::EMPTY;
                for key in read.keys() {
                    let i = l
                        .index_of(key)
                        .ok_or_else(|| HarnessError::outside("a key nobody wrote", key))?;
                    set.insert(usize::from(i));
                }
                let indexes: Vec<u8> = set.iter().map(|i| i as u8).collect();
                l.events.push(ReadEvent::Complete { result: indexes });
                Some(set)
            }
            Err(RecoveryError::Stalled { .. }) => {
                l.events.push(ReadEvent::TripFail);
                None
            }
            Err(e) => return Err(HarnessError::failed("the recovery read")(e)),
        };
        drop(writers);
        Ok(Run {
            events: std::mem::take(&mut l.events),
            result,
            committed_at_capture: l.committed_at_capture,
        })
    }

    fn event_of(step: EnvAction) -> ReadEvent {
        match step {
            EnvAction::AWriteS1 => ReadEvent::AWriteS1,
            EnvAction::AOpenT1 => ReadEvent::AOpenT1,
            EnvAction::ForeignOpen => ReadEvent::ForeignOpen,
            EnvAction::BInit => ReadEvent::BInit,
            EnvAction::BWriteS3 => ReadEvent::BWriteS3,
            EnvAction::BOpenT2 => ReadEvent::BOpenT2,
            EnvAction::TimeoutAbort(i) => ReadEvent::TimeoutAbort { index: i },
            EnvAction::Truncate(k) => ReadEvent::Truncate { keep: k },
        }
    }

    type Reader = thread::JoinHandle<Result<HashMap<String, Read>, RecoveryError>>;

    /// Start the read on its own thread; returns once it has captured its target.
    fn start_read(
        bootstrap: &str,
        topic: &str,
        lens: Lens,
        ledger: &Arc<Mutex<Ledger>>,
        budget: &RecoveryBudget,
    ) -> Result<Reader, Error> {
        let lens = match lens {
            Lens::HighWatermark => TargetLens::HighWatermark,
            Lens::OwnEnd => TargetLens::OwnEnd,
        };
        let inner = KafkaSnapshotLog::open(bootstrap, topic, 0, lens).map_err(log_failed)?;
        let (captured, on_capture) = mpsc::channel();
        let mut log = Recorded {
            inner,
            ledger: ledger.clone(),
            captured,
        };
        let budget = *budget;
        let reader =
            thread::spawn(move || read_to_target(&mut log, &WallClock::default(), &budget));
        on_capture
            .recv_timeout(WAIT)
            .map_err(|_| HarnessError::timed_out("the read capturing its target", WAIT))?;
        Ok(reader)
    }
}
