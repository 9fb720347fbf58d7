//! What a long check tells while it runs, through a [`Reporter`] the caller supplies: the
//! engine reads the clock and its own figures and calls the reporter no more often than it
//! asks; it writes nothing and reads no environment (where a line goes, and how it is drawn,
//! is the caller's business: the CLI draws one on stderr).

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::budget::resident_bytes;

/// A phase's figures at one moment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tick<'a> {
    /// What is running: `safety`, `safety and liveness graph`, `liveness components`, or the
    /// distributed search's `3 workers`.
    pub phase: &'a str,
    /// States found so far (in the liveness phases: states visited by the walks).
    pub states: u64,
    /// States found and not yet expanded (in the liveness phases: the walk's depth).
    pub queue: u64,
    /// The search's depth.
    pub depth: usize,
    /// Time since the phase began.
    pub elapsed: Duration,
    /// The bytes the process holds, where the platform tells.
    pub held: Option<u64>,
}

/// Told how a long check goes. Implement it to show progress your own way; the engine calls
/// [`Reporter::progress`] at most once an [`interval`](Reporter::interval) per phase, from the
/// thread that runs the phase, and [`Reporter::done`] when a phase that reported ends.
pub trait Reporter: Send + Sync {
    /// The least time between two reports of a phase; the first comes after one interval, so a
    /// short check reports nothing.
    fn interval(&self) -> Duration;
    /// A phase's figures.
    fn progress(&self, tick: &Tick<'_>);
    /// The phase `phase` ended after reporting at least once (a line drawn in place can go).
    fn done(&self, phase: &str) {
        let _ = phase;
    }
}

/// The reporter a check is given ([`crate::check::Options::progress`]): shared, so the threads
/// and workers of one check can hold it.
#[derive(Clone)]
pub struct Reporting(pub Arc<dyn Reporter>);

impl Reporting {
    /// Reports to `reporter`.
    pub fn to(reporter: impl Reporter + 'static) -> Reporting {
        Reporting(Arc::new(reporter))
    }
}

impl fmt::Debug for Reporting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Reporting")
    }
}

/// One phase's reports: the clock the engine reads between them.
pub(crate) struct Ticker {
    reporter: Arc<dyn Reporter>,
    phase: String,
    interval: Duration,
    started: Instant,
    last: Instant,
    reported: bool,
}

impl Ticker {
    pub(crate) fn new(reporting: &Reporting, phase: impl Into<String>) -> Ticker {
        let now = Instant::now();
        Ticker {
            reporter: Arc::clone(&reporting.0),
            phase: phase.into(),
            interval: reporting.0.interval(),
            started: now,
            last: now,
            reported: false,
        }
    }

    /// Reports the figures if an interval has passed since the last report (cheap otherwise:
    /// one clock read).
    pub(crate) fn tick(&mut self, states: u64, queue: u64, depth: usize) {
        if self.last.elapsed() < self.interval {
            return;
        }
        self.last = Instant::now();
        self.reporter.progress(&Tick {
            phase: &self.phase,
            states,
            queue,
            depth,
            elapsed: self.started.elapsed(),
            held: resident_bytes(),
        });
        self.reported = true;
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        if self.reported {
            self.reporter.done(&self.phase);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Keeps what it is told.
    #[derive(Default)]
    struct Kept {
        interval: Duration,
        ticks: Mutex<Vec<(String, u64)>>,
        done: Mutex<Vec<String>>,
    }

    impl Reporter for Arc<Kept> {
        fn interval(&self) -> Duration {
            self.interval
        }
        fn progress(&self, tick: &Tick<'_>) {
            self.ticks
                .lock()
                .unwrap()
                .push((tick.phase.to_string(), tick.states));
        }
        fn done(&self, phase: &str) {
            self.done.lock().unwrap().push(phase.to_string());
        }
    }

    #[test]
    fn nothing_is_reported_before_the_first_interval() {
        let kept = Arc::new(Kept {
            interval: Duration::from_secs(3600),
            ..Kept::default()
        });
        let mut ticker = Ticker::new(&Reporting::to(Arc::clone(&kept)), "safety");
        ticker.tick(10, 0, 1);
        drop(ticker);
        assert!(kept.ticks.lock().unwrap().is_empty());
        assert!(kept.done.lock().unwrap().is_empty());
    }

    #[test]
    fn a_phase_reports_its_figures_and_its_end() {
        let kept = Arc::new(Kept::default());
        let mut ticker = Ticker::new(&Reporting::to(Arc::clone(&kept)), "safety");
        ticker.tick(10, 2, 1);
        ticker.tick(20, 0, 2);
        drop(ticker);
        assert_eq!(
            *kept.ticks.lock().unwrap(),
            [("safety".to_string(), 10), ("safety".to_string(), 20)]
        );
        assert_eq!(*kept.done.lock().unwrap(), ["safety"]);
    }

    #[test]
    fn a_check_reports_through_the_callers_reporter() {
        use crate::check::{check, CheckSpec, Options};
        use crate::model::{Model, Property};
        use crate::spec::{Spec, Variables};

        /// A counter: long enough to report with no interval.
        struct Count;
        impl Model for Count {
            type State = u32;
            type Action = ();
            fn init_states(&self) -> Vec<u32> {
                vec![0]
            }
            fn actions(&self, s: &u32, actions: &mut Vec<()>) {
                if *s < 100_000 {
                    actions.push(());
                }
            }
            fn next_state(&self, s: &u32, _: ()) -> Option<u32> {
                Some(s + 1)
            }
            fn properties(&self) -> Vec<Property<Self>> {
                vec![Property::always("Bounded", |_, s: &u32| *s <= 100_000)]
            }
        }
        impl Spec for Count {
            fn variables(&self, s: &u32) -> Variables {
                vec![("n", s.into())]
            }
        }

        let kept = Arc::new(Kept::default());
        let options = Options {
            progress: Some(Reporting::to(Arc::clone(&kept))),
            threads: 1,
            ..Options::default()
        };
        let spec = CheckSpec {
            properties: vec!["Bounded".to_string()],
            fair: false,
            allow_end_states: true,
            symmetry: Vec::new(),
        };
        let report = check(&Count, &spec, &options).expect("a check");
        assert_eq!(report.distinct_states, 100_001);
        let ticks = kept.ticks.lock().unwrap();
        assert!(!ticks.is_empty());
        assert!(
            ticks.iter().all(|(phase, _)| phase == "safety"),
            "{ticks:?}"
        );
        assert_eq!(*kept.done.lock().unwrap(), ["safety"]);
    }
}
