//! The isolation tier: each scenario runs its transactions on real threads, with the timing it
//! names enforced by waits between steps ("T2 writes while T1 is inside commit": T2's write
//! waits for T1's CHECK, T1's END waits for T2's write), random jitter everywhere else, many
//! attempts. Every finished history is judged by the serializability oracle (a serial order of
//! the committed transactions reproducing every read and the final state), every SSI abort by
//! the key-level dependency graph (`analysis`), and, for the model's workloads, every engine
//! trace is judged by the caller's [`Judge`] (the CLI's: replayed in the model, by the
//! conformance adapter).
//!
//! The same scenarios run against PostgreSQL at SERIALIZABLE (the `postgres` module, with its
//! feature), through the same [`Conn`] interface: CHECK and the commit record are no-ops there
//! and END is `COMMIT`.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::analysis::{self, Need};
use crate::engine::{CommitStep, Engine, Error, Variant};
use crate::judge::{Divergence, Judge};
use crate::program::{engine_outcome, script, Observed, Outcome, Plan, Script, TxnResult};
use crate::trace::{EngineEvent, Recorder};

/// A point in a transaction's life, where waits are placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Point {
    Begin,
    Stmt(usize),
    Check,
    Record,
    End,
    AppAbort,
    Cleanup,
}

/// `(t, at)` does not start before `(u, after)` is done (or u finished some other way).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wait {
    pub t: usize,
    pub at: Point,
    pub u: usize,
    pub after: Point,
}

const fn w(t: usize, at: Point, u: usize, after: Point) -> Wait {
    Wait { t, at, u, after }
}

/// One scenario of the tier.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub name: &'static str,
    pub script: &'static str,
    /// The timing, in words.
    pub timing: &'static str,
    pub waits: Vec<Wait>,
    /// A transaction that gives up (AppAbort) after its statements instead of committing.
    pub app_abort: Option<usize>,
}

use Point::{AppAbort, Begin, Check, Cleanup, End, Record, Stmt};

/// Every scenario, in report order. T1 is transaction 0.
pub fn scenarios() -> Vec<Scenario> {
    let skew = |name, script, timing, waits| Scenario {
        name,
        script,
        timing,
        waits,
        app_abort: None,
    };
    let control = vec![w(1, Stmt(1), 0, Stmt(1)), w(0, Check, 1, Stmt(1))];
    // T1 is held after CHECK until T2 has written: before its commit record, where the #136
    // reproducer pauses it (libdb publishes a transaction's versions at that record, so a T2
    // begun after it would simply read T1's writes).
    let trigger = vec![w(1, Begin, 0, Check), w(0, Record, 1, Stmt(1))];
    // T2 reads before T1's commit record (after it, libdb would show T2 T1's writes).
    let late = vec![w(0, Record, 1, Stmt(0)), w(1, Stmt(1), 0, End)];
    vec![
        skew(
            "write_skew_serial",
            "write_skew",
            "T2 begins after T1 ends (no overlap)",
            vec![w(1, Begin, 0, End)],
        ),
        skew(
            "write_skew_control",
            "write_skew",
            "both write before either commits",
            control.clone(),
        ),
        skew(
            "write_skew_trigger",
            "write_skew",
            "T2 begins, reads and writes while T1 is between CHECK and its commit record (#136)",
            trigger.clone(),
        ),
        skew(
            "write_skew_late",
            "write_skew",
            "T2 reads before T1's commit record and writes after its END",
            late.clone(),
        ),
        skew(
            "write_skew_onepage_control",
            "write_skew_onepage",
            "control, both keys on one page",
            control,
        ),
        skew(
            "write_skew_onepage_trigger",
            "write_skew_onepage",
            "trigger, both keys on one page",
            trigger,
        ),
        skew(
            "write_skew_onepage_late",
            "write_skew_onepage",
            "late, both keys on one page",
            late,
        ),
        skew(
            "write_skew_race",
            "write_skew",
            "no waits: both race freely (jitter only)",
            vec![],
        ),
        skew(
            "read_only",
            "read_only",
            "withdrawal T2 reads; deposit T1 commits; report T3 reads and commits; T2 writes (Fekete et al.)",
            vec![
                w(0, End, 1, Stmt(1)),
                w(2, Begin, 0, End),
                w(1, Stmt(2), 2, End),
            ],
        ),
        skew(
            "read_only_window",
            "read_only",
            "the report T3 reads x while the withdrawal T2 is between CHECK and END",
            vec![
                w(1, Begin, 0, Record),
                w(0, End, 1, Begin),
                w(1, Stmt(0), 0, End),
                w(2, Begin, 1, Record),
                w(1, End, 2, Stmt(0)),
                w(2, Stmt(1), 1, End),
            ],
        ),
        skew(
            "read_only_race",
            "read_only",
            "no waits: the three race freely (jitter only)",
            vec![],
        ),
        skew(
            "lost_update",
            "lost_update",
            "both read x, then both write x+1",
            vec![w(0, Stmt(1), 1, Stmt(0)), w(1, Stmt(1), 0, Stmt(1))],
        ),
        skew(
            "read_your_writes",
            "read_your_writes",
            "T2 reads x under T1's uncommitted write, then writes after T1 read its own",
            vec![
                w(1, Stmt(0), 0, Stmt(0)),
                w(1, Stmt(1), 0, Stmt(1)),
                w(0, Check, 1, Begin),
            ],
        ),
        skew(
            "insert_if_absent",
            "insert_if_absent",
            "both scan the empty page, then both insert their own key, then both commit",
            vec![
                w(1, Stmt(1), 0, Stmt(0)),
                w(0, Stmt(1), 1, Stmt(0)),
                w(0, Check, 1, Stmt(1)),
                w(1, Check, 0, Stmt(1)),
            ],
        ),
        Scenario {
            name: "aborted_peer",
            script: "write_skew",
            timing: "T2 reads alice under T1's write; T1 gives up; T2 writes bob before T1's cleanup",
            waits: vec![
                w(1, Stmt(0), 0, Stmt(1)),
                w(0, AppAbort, 1, Stmt(0)),
                w(1, Stmt(1), 0, AppAbort),
                w(0, Cleanup, 1, Stmt(1)),
            ],
            app_abort: Some(0),
        },
        skew(
            "pivot_commits_first",
            "reader_window",
            "T2 reads b and a; T1 reads b, writes a; T3 writes b; T1 commits first, then T3, then T2 (T2 → T1 → T3, no cycle)",
            vec![
                w(0, Stmt(1), 1, Stmt(1)),
                w(2, Stmt(0), 0, Stmt(1)),
                w(0, Check, 2, Stmt(0)),
                w(2, Check, 0, End),
                w(1, Check, 2, End),
            ],
        ),
    ]
}

pub fn scenario(name: &str) -> Option<Scenario> {
    scenarios().into_iter().find(|s| s.name == name)
}

/// The store-side half of one transaction: the engine, or a PostgreSQL connection.
pub trait Conn {
    /// Why the store refused a step (the transaction is aborted). Its text is the abort's kind
    /// as the tier tallies it (`SnapshotUnsafe`, `40001 rw-dependencies`).
    type Error: std::error::Error;

    fn begin(&mut self) -> Result<(), Self::Error>;
    fn exec(&mut self, plan: &Plan) -> Result<Observed, Self::Error>;
    /// CHECK, the commit record, END (or COMMIT), calling `hook` after CHECK and after the
    /// record, where the scenario's waits inside the commit window are placed.
    fn commit(&mut self, hook: &mut dyn FnMut(CommitStep)) -> Result<(), Self::Error>;
    fn app_abort(&mut self) -> Result<(), Self::Error>;
    /// After an error, before cleanup: what `plan` would have observed at the snapshot (the
    /// engine records it for judging the abort; a store that cannot says None).
    fn ghost(&mut self, _plan: &Plan) -> Option<Observed> {
        None
    }
    /// After an abort (an error, or the application's): the cleanup step.
    fn cleanup(&mut self) -> Result<(), Self::Error>;
}

impl Conn for crate::engine::Txn<'_> {
    type Error = Error;

    fn begin(&mut self) -> Result<(), Error> {
        crate::engine::Txn::begin(self)
    }
    fn exec(&mut self, plan: &Plan) -> Result<Observed, Error> {
        Ok(match plan {
            Plan::Read(k) => Observed::Value(self.read(k)?),
            Plan::Scan(p) => Observed::Rows(self.scan(*p)?.into_keys().collect()),
            Plan::Write(k, v) => {
                self.write(k, *v)?;
                Observed::Wrote(*v)
            }
            Plan::Skip(k) => {
                self.skip_write(k)?;
                Observed::Skipped
            }
            Plan::Select(_) | Plan::Insert(..) | Plan::Update { .. } | Plan::Delete(_) => {
                return Err(crate::program::outside_the_engine())
            }
        })
    }
    fn commit(&mut self, hook: &mut dyn FnMut(CommitStep)) -> Result<(), Error> {
        self.commit_with(hook)
    }
    fn app_abort(&mut self) -> Result<(), Error> {
        self.abort()
    }
    fn cleanup(&mut self) -> Result<(), Error> {
        crate::engine::Txn::cleanup(self)
    }
    fn ghost(&mut self, plan: &Plan) -> Option<Observed> {
        match plan {
            Plan::Read(k) => self.ghost_read(k).ok().map(Observed::Value),
            Plan::Scan(p) => self
                .ghost_scan(*p)
                .ok()
                .map(|rows| Observed::Rows(rows.into_keys().collect())),
            Plan::Write(k, v) => self.ghost_write(k).ok().map(|_| Observed::Wrote(*v)),
            Plan::Skip(_) => Some(Observed::Skipped),
            Plan::Select(_) | Plan::Insert(..) | Plan::Update { .. } | Plan::Delete(_) => None,
        }
    }
}

/// A store that can say which of its transactions is waiting for another's lock right now
/// (PostgreSQL's `pg_blocking_pids`): a schedule asks it instead of sleeping out its timeout.
pub trait Waiting: Send + Sync {
    /// Whether transaction `t`'s connection is waiting, in the store, for a lock.
    fn is_waiting(&self, t: usize) -> bool;
}

/// How often a schedule that can ask the store looks again at a step it waits for.
const ASK_EVERY: Duration = Duration::from_millis(2);

/// How long a schedule that can ask the store waits for a step the store says is not blocked
/// before taking it as blocked all the same (a store that stopped answering).
const ASKED_FALLBACK: Duration = Duration::from_secs(20);

/// The waits of one attempt, shared by its threads.
pub struct Schedule {
    waits: Vec<Wait>,
    state: Mutex<SchedState>,
    cv: Condvar,
    timeout: Duration,
    jitter_us: u64,
    /// The store's own answer to who waits for a lock, when it has one.
    waiting: std::sync::OnceLock<Arc<dyn Waiting>>,
}

#[derive(Default)]
struct SchedState {
    done: HashSet<(usize, Point)>,
    /// Transactions that will reach no more points (except Cleanup).
    gone: HashSet<usize>,
    /// The steps waited for past the timeout, in the order the waits gave up (their number is
    /// the schedule's timeouts).
    blocked: Vec<(usize, Point)>,
    seed: u64,
}

impl Schedule {
    pub fn new(waits: Vec<Wait>, timeout: Duration, jitter_us: u64, seed: u64) -> Schedule {
        Schedule {
            waits,
            state: Mutex::new(SchedState {
                seed: seed | 1,
                ..SchedState::default()
            }),
            cv: Condvar::new(),
            timeout,
            jitter_us,
            waiting: std::sync::OnceLock::new(),
        }
    }

    /// From now on a step waited for is taken as blocked when `store` says its transaction
    /// waits for a lock, not when the timeout has passed: a run takes the time its statements
    /// take.
    pub fn ask(&self, store: Arc<dyn Waiting>) {
        let _ = self.waiting.set(store);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SchedState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Blocks until every wait of `(t, at)` is satisfied, or the step waited for is blocked in
    /// the store (the store says so, or the timeout passed), then jitters.
    pub fn wait(&self, t: usize, at: Point) {
        let asked = self.waiting.get().cloned();
        let patience = match asked {
            Some(_) => self.timeout.max(ASKED_FALLBACK),
            None => self.timeout,
        };
        let deadline = Instant::now() + patience;
        let reached = |s: &SchedState, wt: &Wait| {
            s.done.contains(&(wt.u, wt.after)) || (s.gone.contains(&wt.u) && wt.after != Cleanup)
        };
        let mut s = self.lock();
        for wt in self.waits.iter().filter(|x| x.t == t && x.at == at) {
            while !reached(&s, wt) {
                let now = Instant::now();
                if now >= deadline {
                    // The step waited for did not finish in time: the store blocked it.
                    s.blocked.push((wt.u, wt.after));
                    break;
                }
                let slice = match asked {
                    Some(_) => ASK_EVERY.min(deadline - now),
                    None => deadline - now,
                };
                s = self
                    .cv
                    .wait_timeout(s, slice)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
                if let Some(store) = asked.as_ref().filter(|_| !reached(&s, wt)) {
                    // Ask without holding the lock: the other threads go on meanwhile.
                    drop(s);
                    let waiting = store.is_waiting(wt.u);
                    s = self.lock();
                    if waiting && !reached(&s, wt) {
                        s.blocked.push((wt.u, wt.after));
                        break;
                    }
                }
            }
        }
        let pause = if self.jitter_us == 0 {
            0
        } else {
            s.seed ^= s.seed << 13;
            s.seed ^= s.seed >> 7;
            s.seed ^= s.seed << 17;
            s.seed % (self.jitter_us + 1)
        };
        drop(s);
        if pause > 0 {
            std::thread::sleep(Duration::from_micros(pause));
        }
    }

    pub fn done(&self, t: usize, at: Point) {
        self.lock().done.insert((t, at));
        self.cv.notify_all();
    }

    /// t reaches no further point (it aborted, or finished).
    pub fn gone(&self, t: usize) {
        self.lock().gone.insert(t);
        self.cv.notify_all();
    }

    pub fn timeouts(&self) -> usize {
        self.lock().blocked.len()
    }

    /// The steps (transaction, point) the store blocked: waited for past the timeout.
    pub fn blocked(&self) -> Vec<(usize, Point)> {
        self.lock().blocked.clone()
    }

    /// The waits it holds the threads to.
    pub fn waits(&self) -> &[Wait] {
        &self.waits
    }
}

/// Runs transaction t of `script` on `conn` under `sched`: what it observed, how it ended.
pub fn run_txn<C: Conn>(
    t: usize,
    script: &Script,
    scenario: &Scenario,
    conn: &mut C,
    sched: &Schedule,
) -> (TxnResult, Vec<Observed>) {
    let n = script.stmt_count(t);
    let mut seen = vec![Observed::Nothing; n];
    let aborted = |why: String, conn: &mut C, seen: &[Observed]| {
        sched.gone(t);
        // The rest of the program, as if: for judging whether the abort was needed.
        if why != "AppAbort" {
            let mut ghost = seen.to_vec();
            let from = ghost
                .iter()
                .position(|o| *o == Observed::Nothing)
                .unwrap_or(n);
            for i in from..n {
                match conn.ghost(&script.plan(t, i, &ghost)) {
                    Some(o) => ghost[i] = o,
                    None => break,
                }
            }
        }
        sched.wait(t, Cleanup);
        let _ = conn.cleanup();
        sched.done(t, Cleanup);
        TxnResult::Aborted(why)
    };
    sched.wait(t, Begin);
    if let Err(e) = conn.begin() {
        sched.done(t, Begin);
        return (aborted(e.to_string(), conn, &seen), seen);
    }
    sched.done(t, Begin);
    for i in 0..n {
        sched.wait(t, Stmt(i));
        let plan = script.plan(t, i, &seen);
        let result = conn.exec(&plan);
        sched.done(t, Stmt(i));
        match result {
            Ok(o) => seen[i] = o,
            Err(e) => return (aborted(e.to_string(), conn, &seen), seen),
        }
    }
    // A program that ends in `abort` rolls back where it would commit (its End step in an
    // interleaving); a scenario's application abort has a point of its own.
    let abort_at = if script.aborts(t) {
        Some(End)
    } else if scenario.app_abort == Some(t) {
        Some(AppAbort)
    } else {
        None
    };
    if let Some(at) = abort_at {
        sched.wait(t, at);
        let r = conn.app_abort();
        sched.done(t, at);
        return match r {
            Ok(()) => (aborted("AppAbort".into(), conn, &seen), seen),
            Err(e) => (aborted(e.to_string(), conn, &seen), seen),
        };
    }
    sched.wait(t, Check);
    let mut hook = |step: CommitStep| match step {
        CommitStep::Checked => {
            sched.done(t, Check);
            sched.wait(t, Record);
        }
        CommitStep::Recorded => {
            sched.done(t, Record);
            sched.wait(t, End);
        }
    };
    let result = conn.commit(&mut hook);
    match result {
        Ok(()) => {
            sched.done(t, End);
            sched.gone(t);
            (TxnResult::Committed, seen)
        }
        Err(e) => (aborted(e.to_string(), conn, &seen), seen),
    }
}

/// Runs transaction t of `script` on `conns[t]`, each on its own thread, under `sched`: how
/// each ended, and what each observed.
pub fn run_all<C: Conn + Send>(
    script: &Script,
    scenario: &Scenario,
    sched: &Schedule,
    conns: Vec<C>,
) -> (Vec<TxnResult>, Vec<Vec<Observed>>) {
    std::thread::scope(|s| {
        let handles: Vec<_> = conns
            .into_iter()
            .enumerate()
            .map(|(t, mut conn)| s.spawn(move || run_txn(t, script, scenario, &mut conn, sched)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a transaction thread panicked"))
            .unzip()
    })
}

/// One attempt on the engine: the outcome, the trace, and the engine's transactions.
pub struct EngineAttempt {
    pub outcome: Outcome,
    pub trace: Vec<EngineEvent>,
    pub needs: Vec<(usize, Need)>,
    pub timeouts: usize,
    /// For the model's workloads, given a judge: its verdict on the trace (Err: the divergence).
    pub conformance: Option<Result<(), Divergence>>,
}

/// Runs `scenario` once on a fresh engine of `variant`, one thread per transaction; `judge`
/// (if any) judges the trace of a model workload.
pub fn attempt_engine(
    scenario: &Scenario,
    variant: Variant,
    seed: u64,
    jitter_us: u64,
    judge: Option<&dyn Judge>,
) -> EngineAttempt {
    let script = script(scenario.script).expect("scenarios name known scripts");
    let recorder = Recorder::new();
    let engine = Engine::new(variant, script.layout()).with_tracer(recorder.clone() as Arc<_>);
    script.load(&engine);
    let txns: Vec<_> = (0..script.txn_count())
        .map(|t| engine.register(&format!("T{}", t + 1)))
        .collect();
    let sched = Schedule::new(
        scenario.waits.clone(),
        Duration::from_secs(10),
        jitter_us,
        seed,
    );
    let (_, observed) = run_all(&script, scenario, &sched, txns);
    let outcome = engine_outcome(&script, &engine, observed);
    let trace = recorder.events();
    let views = engine.txns();
    let needs = analysis::judge(&views, engine.layout());
    let conformance = match (&script, judge) {
        (Script::Model(w), Some(judge)) => Some(judge.judge(variant, w, &trace)),
        _ => None,
    };
    EngineAttempt {
        outcome,
        trace,
        needs,
        timeouts: sched.timeouts(),
        conformance,
    }
}

/// The tally of one scenario on one store.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Tally {
    pub scenario: String,
    /// `fix`, `prefix`, … or `postgres`.
    pub store: String,
    pub attempts: usize,
    /// Committed transactions, over all attempts.
    pub commits: usize,
    /// Aborted transactions by error kind, over all attempts.
    pub aborts: BTreeMap<String, usize>,
    /// Attempts whose history has no serial order.
    pub violations: usize,
    /// SSI aborts with no dangerous structure through the victim (engine only).
    pub over_aborts: usize,
    /// SSI aborts with a dangerous structure but no cycle through the victim (engine only).
    pub unneeded: usize,
    /// Attempts by outcome (`T2 SnapshotUnsafe`, `all commit`).
    pub outcomes: BTreeMap<String, usize>,
    /// Waits that timed out (the named timing was not realized).
    pub timeouts: usize,
    /// Engine traces the judge accepted (replayed in the model, for the CLI): (conforming,
    /// checked).
    pub conforming: Option<(usize, usize)>,
    pub example_violation: Option<String>,
    pub example_over_abort: Option<String>,
    pub example_unneeded: Option<String>,
    pub example_divergence: Option<String>,
    /// The engine's trace of the first attempt (NDJSON material for `loadbearing conform`).
    #[serde(skip)]
    pub first_trace: Option<Vec<EngineEvent>>,
}

impl Tally {
    pub fn new(scenario: &str, store: &str) -> Tally {
        Tally {
            scenario: scenario.into(),
            store: store.into(),
            ..Tally::default()
        }
    }

    /// Adds one attempt's outcome.
    pub fn add(&mut self, outcome: &Outcome, example: impl Fn() -> String) {
        self.attempts += 1;
        for r in &outcome.results {
            match r {
                TxnResult::Committed => self.commits += 1,
                TxnResult::Aborted(why) => *self.aborts.entry(why.clone()).or_default() += 1,
                TxnResult::Unfinished => *self.aborts.entry("unfinished".into()).or_default() += 1,
            }
        }
        *self.outcomes.entry(outcome.summary()).or_default() += 1;
        if !outcome.serializable {
            self.violations += 1;
            if self.example_violation.is_none() {
                self.example_violation = Some(example());
            }
        }
    }

    /// Adds one trace's verdict in the model (the first divergence is kept as the example).
    pub fn add_conformance(&mut self, verdict: &Result<(), Divergence>) {
        count_conformance(&mut self.conforming, &mut self.example_divergence, verdict);
    }

    /// The most frequent outcome, with its share: `T2 SnapshotUnsafe (40/40)`.
    pub fn typical(&self) -> String {
        match self.outcomes.iter().max_by_key(|(_, n)| **n) {
            Some((what, n)) if *n == self.attempts => what.clone(),
            Some((what, n)) => format!("{what} ({n}/{})", self.attempts),
            None => "-".into(),
        }
    }
}

/// Counts one trace's verdict into `(conforming, checked)`, keeping the first divergence.
pub fn count_conformance(
    conforming: &mut Option<(usize, usize)>,
    example: &mut Option<String>,
    verdict: &Result<(), Divergence>,
) {
    let (ok, n) = conforming.get_or_insert((0, 0));
    *n += 1;
    match verdict {
        Ok(()) => *ok += 1,
        Err(d) => {
            example.get_or_insert_with(|| d.to_string());
        }
    }
}

/// A history in a few words: the engine's events in order, then the final state.
pub fn history_text(trace: &[EngineEvent], outcome: &Outcome) -> String {
    let steps: Vec<String> = trace.iter().map(EngineEvent::brief).collect();
    format!("{}; final {}", steps.join("; "), outcome.state_text())
}

/// The jitter seed of attempt `i`, the same for every store, so a rerun repeats its timing.
pub fn attempt_seed(i: usize) -> u64 {
    0x5eed_0000 + i as u64 * 7919
}

/// Runs `scenario` `attempts` times on the engine variant named `variant`.
pub fn run_engine(
    scenario: &Scenario,
    variant: &str,
    attempts: usize,
    jitter_us: u64,
    judge: Option<&dyn Judge>,
) -> Tally {
    let v = Variant::named(variant).expect("a known variant");
    let mut tally = Tally::new(scenario.name, variant);
    for i in 0..attempts {
        let a = attempt_engine(scenario, v, attempt_seed(i), jitter_us, judge);
        tally.add(&a.outcome, || history_text(&a.trace, &a.outcome));
        tally.timeouts += a.timeouts;
        if tally.first_trace.is_none() {
            tally.first_trace = Some(a.trace.clone());
        }
        for (victim, need) in &a.needs {
            let text = || {
                format!(
                    "T{} aborted: {}",
                    victim + 1,
                    history_text(&a.trace, &a.outcome)
                )
            };
            match need {
                Need::OverAbort => {
                    tally.over_aborts += 1;
                    tally.example_over_abort.get_or_insert_with(text);
                }
                Need::Unneeded => {
                    tally.unneeded += 1;
                    tally.example_unneeded.get_or_insert_with(text);
                }
                Need::Needed => {}
            }
        }
        if let Some(c) = &a.conformance {
            tally.add_conformance(c);
        }
    }
    tally
}

/// What each variant must show for the tier to pass; `Err` lists what it did not.
pub fn musts(tallies: &[Tally]) -> Result<(), Vec<String>> {
    let mut failures = Vec::new();
    let find = |store: &str, scenario: &str| {
        tallies
            .iter()
            .find(|t| t.store == store && t.scenario == scenario)
    };
    let stores: HashSet<&str> = tallies.iter().map(|t| t.store.as_str()).collect();
    if stores.contains("prefix") {
        match find("prefix", "write_skew_trigger") {
            Some(t) if t.violations > 0 => {}
            Some(_) => failures.push("prefix: write_skew_trigger did not reproduce #136".into()),
            None => {}
        }
    }
    for store in ["fix", "postgres"] {
        for t in tallies
            .iter()
            .filter(|t| t.store == store && t.violations > 0)
        {
            failures.push(format!(
                "{store}: {} non-serializable histories in {}",
                t.violations, t.scenario
            ));
        }
    }
    if stores.contains("plainsi")
        && !tallies.iter().any(|t| {
            t.store == "plainsi" && t.scenario.starts_with("write_skew") && t.violations > 0
        })
    {
        failures.push("plainsi: no write skew".into());
    }
    for t in tallies {
        if let Some((ok, n)) = t.conforming {
            if ok != n {
                failures.push(format!(
                    "{} {}: {} of {n} engine traces do not fit the model",
                    t.store,
                    t.scenario,
                    n - ok
                ));
            }
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store that says transaction 1 waits for a lock (or that nobody does).
    struct Says(bool);
    impl Waiting for Says {
        fn is_waiting(&self, t: usize) -> bool {
            self.0 && t == 1
        }
    }

    /// T0's first statement waits for T1's, which never finishes.
    fn stuck_schedule(store: bool) -> Arc<Schedule> {
        let waits = vec![w(0, Stmt(0), 1, Stmt(0))];
        let sched = Arc::new(Schedule::new(waits, Duration::from_secs(3600), 0, 1));
        sched.ask(Arc::new(Says(store)));
        sched
    }

    /// A step the store says is blocked is taken as blocked at once: with an hour's timeout,
    /// the wait returns (a schedule that ignored the store would hang here) and names it.
    #[test]
    fn a_step_the_store_says_waits_for_a_lock_is_blocked_without_the_timeout() {
        let sched = stuck_schedule(true);
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = Arc::clone(&sched);
        std::thread::spawn(move || {
            waiter.wait(0, Stmt(0));
            let _ = tx.send(());
        });
        rx.recv_timeout(Duration::from_secs(60))
            .expect("the wait returned once the store said the step was blocked");
        assert_eq!(sched.blocked(), vec![(1, Stmt(0))]);
    }

    /// A step the store does not call blocked is waited for until it is done, and is not
    /// counted as blocked.
    #[test]
    fn a_step_the_store_does_not_call_blocked_is_waited_for() {
        let sched = stuck_schedule(false);
        let finisher = Arc::clone(&sched);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            finisher.done(1, Stmt(0));
        });
        sched.wait(0, Stmt(0));
        assert!(sched.blocked().is_empty());
        assert_eq!(sched.timeouts(), 0);
    }

    #[test]
    fn every_scenario_names_a_script_and_points_its_transactions_have() {
        for s in scenarios() {
            let script = script(s.script).unwrap();
            for w in &s.waits {
                for (t, p) in [(w.t, w.at), (w.u, w.after)] {
                    assert!(t < script.txn_count(), "{}", s.name);
                    if let Point::Stmt(i) = p {
                        assert!(i < script.stmt_count(t), "{}", s.name);
                    }
                }
            }
        }
    }

    #[test]
    fn musts_fail_when_a_variant_does_not_show_what_it_must() {
        let mut prefix = Tally::new("write_skew_trigger", "prefix");
        prefix.attempts = 3;
        let mut fix = Tally::new("read_only", "fix");
        fix.violations = 1;
        let mut plain = Tally::new("write_skew_control", "plainsi");
        plain.attempts = 3;
        let mut pg = Tally::new("lost_update", "postgres");
        pg.violations = 2;
        let mut diverged = Tally::new("lost_update", "noopt");
        diverged.conforming = Some((4, 5));
        let failures = musts(&[prefix, fix, plain, pg, diverged]).unwrap_err();
        assert_eq!(
            failures,
            [
                "prefix: write_skew_trigger did not reproduce #136",
                "fix: 1 non-serializable histories in read_only",
                "postgres: 2 non-serializable histories in lost_update",
                "plainsi: no write skew",
                "noopt lost_update: 1 of 5 engine traces do not fit the model",
            ]
        );
    }

    #[test]
    fn the_trigger_reproduces_on_the_prefix_engine_and_the_fix_fails_t2_unsafe() {
        let trigger = scenario("write_skew_trigger").unwrap();
        let prefix = run_engine(&trigger, "prefix", 5, 20, None);
        assert_eq!(prefix.violations, 5, "{prefix:?}");
        let fix = run_engine(&trigger, "fix", 5, 20, None);
        assert_eq!(fix.violations, 0);
        assert_eq!(fix.typical(), "T2 SnapshotUnsafe");
        assert_eq!(fix.conforming, None, "no judge, no verdicts");
        assert_eq!(fix.timeouts, 0);
    }
}
