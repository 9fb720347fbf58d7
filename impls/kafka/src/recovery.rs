//! The recovery read of a snapshot partition, apart from any client: read with
//! `read_committed` from the beginning up to a target captured once at the start, and fail only
//! when the read stops making progress.
//!
//! Two rules from the #835 register shape it (docs/register.md):
//!
//! - **R-850 option A.** The target is the log end seen through a `read_uncommitted` lens (the
//!   high watermark), never the reader's own `read_committed` end offset: that one is the last
//!   stable offset, which an open transaction holds below a snapshot committed after it, so a
//!   read bounded by it misses that snapshot (`recoveryread_lso_unique`). Reading up to the high
//!   watermark means parking at an open transaction until it ends, which the broker guarantees
//!   within `transaction.timeout.ms` plus one abort scan.
//! - **R-849.** The read fails on **no progress** for `stall`, not on total time: a read of a
//!   large partition that keeps moving must complete (`recoverydeadline_total` violates
//!   `INV_OnlyStalledFails`). The stall must outlast the longest healthy park (the transaction
//!   timeout plus one abort scan) and, with the diagnosis, fit inside `max.poll.interval.ms`
//!   (else the member is dropped from the group before the tripwire speaks:
//!   `recoverydeadline_late`). [`RecoveryBudget::new`] refuses a stall outside that window.
//!
//! The loop runs over a [`SnapshotLog`] and a [`Clock`], so the rules are tested here against a
//! scripted log; `kafka::recover` gives it the real consumer.

use std::collections::HashMap;
use std::time::Duration;

use loadbearing_impls::store::Read;

/// The deployment's timings that bound a healthy park at an open transaction and the time a
/// member may spend away from `poll`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deployment {
    /// `transaction.timeout.ms` of the snapshot producers.
    pub txn_timeout: Duration,
    /// The broker's `transaction.abort.timed.out.transaction.cleanup.interval.ms`: a timed-out
    /// transaction is aborted at the first scan after its timeout.
    pub abort_scan: Duration,
    /// The member's `max.poll.interval.ms`: recovery runs inside the assignment callback.
    pub max_poll_interval: Duration,
}

impl Deployment {
    /// The longest a healthy read parks at one open transaction.
    pub fn longest_park(&self) -> Duration {
        self.txn_timeout + self.abort_scan
    }
}

/// What the diagnosis after a trip may take: two watermark reads.
pub const DIAGNOSIS: Duration = Duration::from_secs(4);

/// How long each of the diagnosis's watermark reads may take.
pub const DIAGNOSIS_READ: Duration = Duration::from_secs(2);

/// The no-progress budget of a recovery read, checked against its deployment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecoveryBudget {
    stall: Duration,
    deployment: Deployment,
    rule: TripRule,
}

/// What the tripwire measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TripRule {
    /// Time since the position last moved: the design.
    NoProgress,
    /// TEST-ONLY PLANTED MUTANT (RecoveryDeadline `NoProgressTrip = false`): time since the
    /// read began, the total timeout this module replaced.
    Total,
    /// TEST-ONLY PLANTED MUTANT (RecoveryDeadline `Tripwire = false`): no tripwire, the read
    /// as #849 found it.
    Never,
}

/// A stall that cannot be right for the deployment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BudgetError {
    /// A healthy park at an open transaction (timeout + abort scan) would trip it.
    BelowLongestPark { stall: Duration, park: Duration },
    /// With the diagnosis it outlasts `max.poll.interval.ms`: the member is dropped first.
    BeyondPollInterval {
        stall: Duration,
        diagnosis: Duration,
        max_poll_interval: Duration,
    },
}

impl std::fmt::Display for BudgetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BudgetError::BelowLongestPark { stall, park } => write!(
                f,
                "recovery stall budget {stall:?} is not above the longest healthy wait at an \
                 open transaction ({park:?}: transaction.timeout.ms + one abort scan)"
            ),
            BudgetError::BeyondPollInterval {
                stall,
                diagnosis,
                max_poll_interval,
            } => write!(
                f,
                "recovery stall budget {stall:?} + diagnosis {diagnosis:?} is not below \
                 max.poll.interval.ms ({max_poll_interval:?}): the member would be dropped first"
            ),
        }
    }
}

impl std::error::Error for BudgetError {}

impl RecoveryBudget {
    /// `longest_park < stall` and `stall + DIAGNOSIS < max_poll_interval`, or why not.
    pub fn new(stall: Duration, deployment: Deployment) -> Result<Self, BudgetError> {
        let park = deployment.longest_park();
        if stall <= park {
            return Err(BudgetError::BelowLongestPark { stall, park });
        }
        if stall + DIAGNOSIS >= deployment.max_poll_interval {
            return Err(BudgetError::BeyondPollInterval {
                stall,
                diagnosis: DIAGNOSIS,
                max_poll_interval: deployment.max_poll_interval,
            });
        }
        Ok(RecoveryBudget {
            stall,
            deployment,
            rule: TripRule::NoProgress,
        })
    }

    /// TEST-ONLY PLANTED MUTANTS, for conformance: a budget that skips the check
    /// (RecoveryDeadline `TripAt >= Deadline`) and trips by `rule`.
    pub fn planted(stall: Duration, deployment: Deployment, rule: TripRule) -> Self {
        RecoveryBudget {
            stall,
            deployment,
            rule,
        }
    }

    /// The middle of the window: as far from a healthy park as from the poll deadline.
    pub fn centred(deployment: Deployment) -> Result<Self, BudgetError> {
        let park = deployment.longest_park();
        let room = deployment.max_poll_interval.saturating_sub(DIAGNOSIS);
        RecoveryBudget::new((park + room) / 2, deployment)
    }

    pub fn stall(&self) -> Duration {
        self.stall
    }

    pub fn deployment(&self) -> Deployment {
        self.deployment
    }
}

/// One record of the snapshot partition as the reader returns it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotRecord {
    /// Where it sits in the partition.
    pub position: i64,
    pub key: String,
    /// The `offset` header: the input offset the snapshot folds up to.
    pub offset: Option<u64>,
    /// `None` for a delete (a compaction tombstone).
    pub value: Option<Vec<u8>>,
}

/// Both ends of the partition, as read at one moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ends {
    /// The high watermark (the `read_uncommitted` end).
    pub high: i64,
    /// The last stable offset (the `read_committed` end).
    pub stable: i64,
}

/// A failed client call, by what was being done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogError {
    pub what: &'static str,
    pub reason: String,
}

/// The partition as the recovery read sees it.
pub trait SnapshotLog {
    /// The high watermark, read once at the start (R-850.0, A1).
    fn target(&mut self) -> Result<i64, LogError>;
    /// Start reading from the beginning.
    fn start(&mut self) -> Result<(), LogError>;
    /// The position of the next record the reader will return.
    fn position(&mut self) -> i64;
    /// The next committed record, waiting up to `wait`.
    fn poll(&mut self, wait: Duration) -> Result<Option<SnapshotRecord>, LogError>;
    /// Both ends now, for the diagnosis of a stall.
    fn ends_now(&mut self, wait: Duration) -> Result<Ends, LogError>;
}

/// Time since some fixed start.
pub trait Clock {
    fn now(&self) -> Duration;
}

/// The wall clock.
pub struct WallClock(std::time::Instant);

impl Default for WallClock {
    fn default() -> Self {
        WallClock(std::time::Instant::now())
    }
}

impl Clock for WallClock {
    fn now(&self) -> Duration {
        self.0.elapsed()
    }
}

/// Why a stalled read made no progress, from the ends read after the trip.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StallCause {
    /// The high watermark fell below the target: the log was truncated (an unclean leader
    /// election), and the target will never be reached.
    Truncated { high_now: i64 },
    /// The last stable offset is below the target: a transaction is open there for longer than
    /// the deployment allows (a hanging transaction).
    OpenTransaction { stable_now: i64 },
    /// Everything up to the target is stable and the client returns none of it.
    ClientStuck { ends: Ends },
    /// The ends could not be read either.
    Unreadable,
}

impl std::fmt::Display for StallCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StallCause::Truncated { high_now } => {
                write!(f, "the log was truncated (high watermark now {high_now})")
            }
            StallCause::OpenTransaction { stable_now } => write!(
                f,
                "a transaction is open past its timeout (last stable offset {stable_now})"
            ),
            StallCause::ClientStuck { ends } => write!(
                f,
                "the client returns nothing up to the target below the last stable offset {} \
                 (high watermark {})",
                ends.stable, ends.high
            ),
            StallCause::Unreadable => write!(f, "the partition's ends could not be read"),
        }
    }
}

/// Why a recovery read returned nothing. No partial map is ever returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecoveryError {
    Client(LogError),
    /// No progress for the whole stall budget.
    Stalled {
        position: i64,
        target: i64,
        stall: Duration,
        cause: StallCause,
    },
    /// A snapshot record without its `offset` header: recovering it at any offset would be a
    /// guess.
    MissingOffset {
        key: String,
        position: i64,
    },
}

impl std::fmt::Display for RecoveryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecoveryError::Client(e) => write!(f, "recovery failed: {}: {}", e.what, e.reason),
            RecoveryError::Stalled {
                position,
                target,
                stall,
                cause,
            } => write!(
                f,
                "recovery stalled: no progress for {stall:?} at position {position} of \
                 target {target}: {cause}"
            ),
            RecoveryError::MissingOffset { key, position } => write!(
                f,
                "recovery failed: the snapshot of {key:?} at position {position} has no offset \
                 header"
            ),
        }
    }
}

impl std::error::Error for RecoveryError {}

impl From<LogError> for RecoveryError {
    fn from(e: LogError) -> Self {
        RecoveryError::Client(e)
    }
}

/// How long one poll waits: short against the stall, so a trip is on time.
const POLL: Duration = Duration::from_millis(200);

/// Read the partition up to the target captured at the start; the last snapshot of each key
/// wins. Fails when the position does not move for the budget's stall.
pub fn read_to_target<L: SnapshotLog, C: Clock>(
    log: &mut L,
    clock: &C,
    budget: &RecoveryBudget,
) -> Result<HashMap<String, Read>, RecoveryError> {
    let target = log.target()?;
    let mut out = HashMap::new();
    if target <= 0 {
        return Ok(out);
    }
    log.start()?;
    let mut last = log.position();
    let started = clock.now();
    let mut moved_at = started;
    loop {
        let position = log.position();
        if position >= target {
            return Ok(out);
        }
        if position != last {
            last = position;
            moved_at = clock.now();
        }
        let measured_from = match budget.rule {
            TripRule::NoProgress => Some(moved_at),
            TripRule::Total => Some(started),
            TripRule::Never => None,
        };
        if measured_from.is_some_and(|from| clock.now().saturating_sub(from) >= budget.stall) {
            let cause = diagnose(log, target);
            return Err(RecoveryError::Stalled {
                position,
                target,
                stall: budget.stall,
                cause,
            });
        }
        if let Some(record) = log.poll(POLL)? {
            // A record at or past the target was committed after the read began (the client
            // fetches past the target whenever the positions just below it are markers or
            // aborted records): the read is the committed prefix the target captured, so it
            // ends here without it.
            if record.position >= target {
                continue;
            }
            let offset = record.offset.ok_or_else(|| RecoveryError::MissingOffset {
                key: record.key.clone(),
                position: record.position,
            })?;
            let read = match record.value {
                Some(value) => Read::Live { offset, value },
                None => Read::Tombstone { offset },
            };
            out.insert(record.key, read);
        }
    }
}

fn diagnose<L: SnapshotLog>(log: &mut L, target: i64) -> StallCause {
    match log.ends_now(DIAGNOSIS_READ) {
        Err(_) => StallCause::Unreadable,
        Ok(ends) if ends.high < target => StallCause::Truncated {
            high_now: ends.high,
        },
        Ok(ends) if ends.stable < target => StallCause::OpenTransaction {
            stable_now: ends.stable,
        },
        Ok(ends) => StallCause::ClientStuck { ends },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    const SECOND: Duration = Duration::from_secs(1);

    fn deployment() -> Deployment {
        Deployment {
            txn_timeout: 10 * SECOND,
            abort_scan: 10 * SECOND,
            max_poll_interval: 60 * SECOND,
        }
    }

    fn budget(stall: u32) -> RecoveryBudget {
        RecoveryBudget::new(stall * SECOND, deployment()).unwrap()
    }

    struct FakeClock(Rc<Cell<Duration>>);

    impl Clock for FakeClock {
        fn now(&self) -> Duration {
            self.0.get()
        }
    }

    /// A partition of `records` that returns the next one every `every` of fake time, and
    /// nothing once `stuck_at` is reached; `ends` is what the diagnosis reads.
    struct ScriptedLog {
        time: Rc<Cell<Duration>>,
        records: Vec<SnapshotRecord>,
        next: usize,
        every: Duration,
        waited: Duration,
        stuck_at: Option<usize>,
        ends: Ends,
    }

    impl ScriptedLog {
        fn new(count: usize, every: Duration) -> (Self, FakeClock) {
            let time = Rc::new(Cell::new(Duration::ZERO));
            let records = (0..count)
                .map(|i| SnapshotRecord {
                    position: i as i64,
                    key: format!("k{}", i % 3),
                    offset: Some(i as u64),
                    value: Some(vec![i as u8]),
                })
                .collect();
            let log = ScriptedLog {
                time: time.clone(),
                records,
                next: 0,
                every,
                waited: Duration::ZERO,
                stuck_at: None,
                ends: Ends {
                    high: count as i64,
                    stable: count as i64,
                },
            };
            (log, FakeClock(time))
        }
    }

    impl SnapshotLog for ScriptedLog {
        fn target(&mut self) -> Result<i64, LogError> {
            Ok(self.records.len() as i64)
        }
        fn start(&mut self) -> Result<(), LogError> {
            Ok(())
        }
        fn position(&mut self) -> i64 {
            self.next as i64
        }
        fn poll(&mut self, wait: Duration) -> Result<Option<SnapshotRecord>, LogError> {
            self.time.set(self.time.get() + wait);
            self.waited += wait;
            if self.stuck_at == Some(self.next) || self.waited < self.every {
                return Ok(None);
            }
            self.waited = Duration::ZERO;
            self.next += 1;
            Ok(Some(self.records[self.next - 1].clone()))
        }
        fn ends_now(&mut self, _: Duration) -> Result<Ends, LogError> {
            Ok(self.ends)
        }
    }

    #[test]
    fn r849_2_the_budget_sits_between_the_longest_park_and_the_poll_interval() {
        assert_eq!(
            RecoveryBudget::new(20 * SECOND, deployment()),
            Err(BudgetError::BelowLongestPark {
                stall: 20 * SECOND,
                park: 20 * SECOND
            })
        );
        assert!(matches!(
            RecoveryBudget::new(56 * SECOND, deployment()),
            Err(BudgetError::BeyondPollInterval { .. })
        ));
        assert!(RecoveryBudget::new(21 * SECOND, deployment()).is_ok());
        let centred = RecoveryBudget::centred(deployment()).unwrap();
        assert_eq!(centred.stall(), 38 * SECOND);
        // A poll interval within the diagnosis of the longest park leaves no room at all.
        let cramped = Deployment {
            max_poll_interval: 24 * SECOND,
            ..deployment()
        };
        assert!(RecoveryBudget::centred(cramped).is_err());
    }

    #[test]
    fn r849_1_a_slow_read_that_keeps_moving_completes_past_any_total_deadline() {
        // One record every 20 s of a 25 s stall: 60 records take 20 minutes.
        let (mut log, clock) = ScriptedLog::new(60, 20 * SECOND);
        let read = read_to_target(&mut log, &clock, &budget(25)).expect("it kept moving");
        assert!(clock.now() >= 48 * budget(25).stall());
        assert_eq!(read.len(), 3);
        assert_eq!(
            read["k2"],
            Read::Live {
                offset: 59,
                value: vec![59]
            }
        );
    }

    #[test]
    fn r849_1_no_progress_trips_after_the_stall_and_names_an_open_transaction() {
        let (mut log, clock) = ScriptedLog::new(10, SECOND);
        log.stuck_at = Some(4);
        log.ends = Ends {
            high: 10,
            stable: 4,
        };
        let err = read_to_target(&mut log, &clock, &budget(25)).unwrap_err();
        assert_eq!(
            err,
            RecoveryError::Stalled {
                position: 4,
                target: 10,
                stall: 25 * SECOND,
                cause: StallCause::OpenTransaction { stable_now: 4 },
            }
        );
        // Tripped on the stall after the last move (at 4 s), not earlier and not much later.
        let after = clock.now();
        assert!(after >= 29 * SECOND && after < 30 * SECOND, "{after:?}");
    }

    #[test]
    fn r849_3_a_shrunk_high_watermark_is_named_truncation() {
        let (mut log, clock) = ScriptedLog::new(10, SECOND);
        log.stuck_at = Some(7);
        log.ends = Ends { high: 7, stable: 7 };
        let err = read_to_target(&mut log, &clock, &budget(25)).unwrap_err();
        assert!(
            matches!(
                err,
                RecoveryError::Stalled {
                    cause: StallCause::Truncated { high_now: 7 },
                    ..
                }
            ),
            "{err}"
        );
    }

    /// A partition whose positions between records are markers and aborted records, as
    /// `read_committed` skips them: the position jumps past each returned record.
    struct SparseLog {
        records: Vec<SnapshotRecord>,
        next: usize,
        target: i64,
    }

    impl SnapshotLog for SparseLog {
        fn target(&mut self) -> Result<i64, LogError> {
            Ok(self.target)
        }
        fn start(&mut self) -> Result<(), LogError> {
            Ok(())
        }
        fn position(&mut self) -> i64 {
            self.next
                .checked_sub(1)
                .map_or(0, |last| self.records[last].position + 1)
        }
        fn poll(&mut self, _: Duration) -> Result<Option<SnapshotRecord>, LogError> {
            let record = self.records.get(self.next).cloned();
            self.next += usize::from(record.is_some());
            Ok(record)
        }
        fn ends_now(&mut self, _: Duration) -> Result<Ends, LogError> {
            Ok(Ends {
                high: self.target,
                stable: self.target,
            })
        }
    }

    #[test]
    fn r850_a_record_committed_past_the_target_is_not_part_of_the_read() {
        let record = |position, offset| SnapshotRecord {
            position,
            key: "k".into(),
            offset: Some(offset),
            value: Some(vec![offset as u8]),
        };
        // The target was captured at 5; an aborted transaction sits at 3..=4, and a snapshot
        // committed after the capture at 7 comes back from the same fetch.
        let mut log = SparseLog {
            records: vec![record(0, 1), record(2, 2), record(7, 9)],
            next: 0,
            target: 5,
        };
        let clock = FakeClock(Rc::new(Cell::new(Duration::ZERO)));
        let read = read_to_target(&mut log, &clock, &budget(25)).unwrap();
        assert_eq!(
            read["k"],
            Read::Live {
                offset: 2,
                value: vec![2]
            }
        );
    }

    #[test]
    fn a_record_without_its_offset_fails_the_read_instead_of_recovering_at_zero() {
        let (mut log, clock) = ScriptedLog::new(5, SECOND);
        log.records[2].offset = None;
        let err = read_to_target(&mut log, &clock, &budget(25)).unwrap_err();
        assert_eq!(
            err,
            RecoveryError::MissingOffset {
                key: "k2".into(),
                position: 2
            }
        );
    }
}
