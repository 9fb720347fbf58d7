//! Every interleaving of a script's transactions, each driven step by step on a store: the
//! transactions still run on their own threads and connections (a step that blocks in the
//! store blocks only its own), and a [`Schedule`] of waits holds each step until the one
//! before it in the interleaving is done. A step the store blocks is waited for a bounded time
//! ([`BLOCKED_AFTER`]); then the next step goes ahead, as the other transactions would, and
//! the blocked one finishes when the store lets it.
//!
//! A transaction's steps are `Begin` (which takes the snapshot where the store takes it at
//! the first statement), each statement, and `End` (the commit). The interleavings of
//! transactions with `n₁, n₂, …` steps are the multinomial `(n₁+n₂+…)! / (n₁!·n₂!·…)`;
//! beyond a bound they are sampled with a seed (uniformly: the next transaction is drawn in
//! proportion to the steps it has left), and the result says so.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use loadbearing_workload::schedule::{self, At, Shown};
use loadbearing_workload::workload::Workload;
use serde::Serialize;

use crate::program::{Observed, Outcome, Script, StmtKind, TxnResult};
use crate::race::{self, Race, Run, VersionRow};
use crate::tier::{Point, Scenario, Schedule, Wait};

/// How long a step is waited for before the next one of the interleaving goes ahead: the
/// store is then taken to have blocked it.
pub const BLOCKED_AFTER: Duration = Duration::from_millis(200);

/// Which interleavings a run drives, and of how many.
#[derive(Clone, Debug, Serialize)]
pub struct Interleavings {
    /// Each interleaving: the transaction of each step, in order.
    #[serde(skip)]
    pub orders: Vec<Vec<usize>>,
    /// How many interleavings the script has.
    pub total: u128,
    /// The seed of the sample, when there are more than the bound (absent: every one).
    pub sampled_with: Option<u64>,
    /// The one interleaving driven, when it was pinned by name (`--schedule`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pinned: Option<String>,
}

impl Interleavings {
    /// Only `order`, pinned by name as `schedule`, of the script's `total`.
    pub fn pinned(order: Vec<usize>, total: u128, schedule: String) -> Interleavings {
        Interleavings {
            orders: vec![order],
            total,
            sampled_with: None,
            pinned: Some(schedule),
        }
    }

    /// Whether every interleaving is driven.
    pub fn every(&self) -> bool {
        self.sampled_with.is_none() && self.pinned.is_none()
    }

    /// For people: `every interleaving (70)`, `300 of 34650 interleavings, sampled with
    /// seed 7`, or `one of 70 interleavings, pinned: T1.begin …`.
    pub fn text(&self) -> String {
        if let Some(schedule) = &self.pinned {
            return format!(
                "one of {} interleavings, pinned: {schedule}",
                total_text(self.total)
            );
        }
        match self.sampled_with {
            None => format!("every interleaving ({})", self.total),
            Some(seed) => format!(
                "{} of {} interleavings, sampled with seed {seed}",
                self.orders.len(),
                total_text(self.total)
            ),
        }
    }
}

/// A store a workload's interleavings are driven on: each run on freshly loaded data, one
/// connection a transaction, and the store's own record of who wrote what (a writer column
/// returned with every read, and a log of versions written inside each writing transaction).
pub trait Drivable {
    type Error;

    /// One run of `script` under `sched`'s waits on freshly loaded data: how each transaction
    /// ended, what each observed, and every read with its version's writer.
    fn run_once(
        &mut self,
        script: &Script,
        scenario: &Scenario,
        sched: &Schedule,
    ) -> Result<Run, Self::Error>;

    /// Each key's final value.
    fn state(&mut self, script: &Script) -> Result<BTreeMap<String, Option<i64>>, Self::Error>;

    /// The committed rows of the version log: (key, writer, previous writer).
    fn versions(&mut self) -> Result<Vec<VersionRow>, Self::Error>;
}

/// A workload's interleavings driven on one store.
pub struct EveryInterleaving {
    pub race: Race,
    pub interleavings: Interleavings,
    /// Steps the store blocked (waited for [`BLOCKED_AFTER`] before the next step went ahead),
    /// over all interleavings.
    pub blocked: usize,
    /// Each interleaving as it ran, in the order driven.
    pub runs: Vec<DrivenRun>,
}

/// One interleaving as it ran on a store: each step and what it showed, how the transactions
/// ended, and the anomalies of its history.
#[derive(Clone, Debug, Serialize)]
pub struct DrivenRun {
    /// `T1.begin T2.begin T1.1 …`, as `--schedule` takes it.
    pub schedule: String,
    pub steps: Vec<StepShown>,
    /// `all commit`, `T2 40001 …`.
    pub outcome: String,
    /// Each key's committed value at the end (absent: `null`).
    pub state: BTreeMap<String, Option<i64>>,
    /// The anomaly labels of the run's history (empty: none; also when the history could not
    /// be established, which the store's race counts apart).
    pub anomalies: Vec<String>,
}

impl DrivenRun {
    /// What statement `stmt` of transaction `txn` showed: a read's value (`None`: absent) or a
    /// write's; `None` when it read or wrote nothing (skipped, not run).
    pub fn value(&self, txn: usize, stmt: usize) -> Option<Shown> {
        self.steps
            .iter()
            .find(|s| s.txn == txn && s.at == StepAt::Stmt(stmt))
            .and_then(|s| s.shows.value())
    }

    /// What statement `stmt` of transaction `txn` showed, for people.
    pub fn shown(&self, txn: usize, stmt: usize) -> String {
        self.steps
            .iter()
            .find(|s| s.txn == txn && s.at == StepAt::Stmt(stmt))
            .map_or("nothing".to_string(), |s| s.shows.text())
    }
}

/// Where a step is in its transaction (the JSON form of a schedule's step).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepAt {
    Begin,
    /// 0-based.
    Stmt(usize),
    End,
}

/// One step of a driven interleaving.
#[derive(Clone, Debug, Serialize)]
pub struct StepShown {
    /// `T2.1`.
    pub step: String,
    /// 0-based transaction index.
    pub txn: usize,
    pub at: StepAt,
    pub shows: Shows,
    /// The store blocked it: the next step went ahead before it finished.
    pub blocked: bool,
}

/// What a step showed (in JSON, `{"kind": "read", "key": "x", "value": 10}`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Shows {
    Began,
    Read {
        key: String,
        value: Option<i64>,
    },
    Wrote {
        key: String,
        value: i64,
    },
    /// A conditional write whose condition was false.
    Skipped {
        key: String,
    },
    Scanned {
        rows: Vec<String>,
    },
    /// A predicate read's rows, by key in key order.
    Matched {
        predicate: String,
        rows: Vec<(String, i64)>,
    },
    /// An update's or delete's rows, by key in key order, each with its new value (`None`:
    /// deleted).
    Changed {
        target: String,
        rows: Vec<(String, Option<i64>)>,
    },
    /// The store refused it, and so ended its transaction (the error).
    Refused {
        why: String,
    },
    /// Its transaction had ended before it (the store refused an earlier step).
    NotRun,
    Committed,
    /// Its own abort, or the store's refusal (the error).
    Aborted {
        why: String,
    },
    /// The transaction never finished.
    Unfinished,
}

impl Shows {
    fn value(&self) -> Option<Shown> {
        match self {
            Shows::Read { value, .. } => Some(Shown::Value(*value)),
            Shows::Wrote { value, .. } => Some(Shown::Value(Some(*value))),
            Shows::Matched { rows, .. } => Some(Shown::Rows(
                rows.iter().map(|(k, v)| (k.clone(), Some(*v))).collect(),
            )),
            Shows::Changed { rows, .. } => Some(Shown::Rows(rows.clone())),
            _ => None,
        }
    }

    /// `read x = 10`, `wrote x = 11`, `aborted: 40001 …`.
    pub fn text(&self) -> String {
        let value = |v: &Option<i64>| v.map_or("absent".to_string(), |v| v.to_string());
        match self {
            Shows::Began => "began".into(),
            Shows::Read { key, value: v } => format!("read {key} = {}", value(v)),
            Shows::Wrote { key, value } => format!("wrote {key} = {value}"),
            Shows::Skipped { key } => format!("skipped the write of {key}"),
            Shows::Scanned { rows } => format!("scanned {}", rows.join(" ")),
            Shows::Matched { predicate, rows } => format!(
                "read {predicate}: {}",
                Shown::Rows(rows.iter().map(|(k, v)| (k.clone(), Some(*v))).collect())
            ),
            Shows::Changed { target, rows } => {
                format!("changed {target}: {}", Shown::Rows(rows.clone()))
            }
            Shows::Refused { why } => format!("refused: {why}"),
            Shows::NotRun => "not run".into(),
            Shows::Committed => "committed".into(),
            Shows::Aborted { why } => format!("aborted: {why}"),
            Shows::Unfinished => "unfinished".into(),
        }
    }
}

/// The steps of `order` with what each showed.
fn shown_steps(
    order: &[usize],
    steps: &[Vec<Point>],
    script: &Script,
    w: &Workload,
    outcome: &Outcome,
    blocked: &[(usize, Point)],
) -> Vec<StepShown> {
    // The statement a store refused is the first one of its transaction that showed nothing
    // (a refused commit leaves none).
    let refused_at = |t: usize| match &outcome.results[t] {
        TxnResult::Aborted(why) if !script.aborts(t) => outcome.observed[t]
            .iter()
            .position(|o| *o == Observed::Nothing)
            .map(|i| (i, why.clone())),
        _ => None,
    };
    placed(order, steps)
        .into_iter()
        .map(|(t, point)| {
            let (at, shows) = match point {
                Point::Stmt(i) if refused_at(t).is_some_and(|(at, _)| at == i) => {
                    let why = refused_at(t).map(|(_, why)| why).unwrap_or_default();
                    (StepAt::Stmt(i), Shows::Refused { why })
                }
                Point::Stmt(i) => {
                    let key = || match script.stmt_kind(t, i) {
                        StmtKind::Read(k) | StmtKind::Write(k) => k,
                        StmtKind::Scan(p) => format!("page {p}"),
                        StmtKind::Select(p) => p.to_string(),
                        StmtKind::Change { target, .. } => target,
                    };
                    let shows = match &outcome.observed[t][i] {
                        Observed::Nothing => Shows::NotRun,
                        Observed::Value(v) => Shows::Read {
                            key: key(),
                            value: *v,
                        },
                        Observed::Wrote(v) => Shows::Wrote {
                            key: key(),
                            value: *v,
                        },
                        Observed::Skipped => Shows::Skipped { key: key() },
                        Observed::Rows(rows) => Shows::Scanned { rows: rows.clone() },
                        Observed::Matched(rows) => Shows::Matched {
                            predicate: key(),
                            rows: rows.iter().map(|r| (r.key.clone(), r.value)).collect(),
                        },
                        Observed::Changed(rows) => Shows::Changed {
                            target: key(),
                            rows: rows.iter().map(|r| (r.key.clone(), r.value)).collect(),
                        },
                    };
                    (StepAt::Stmt(i), shows)
                }
                Point::End => {
                    let shows = match &outcome.results[t] {
                        TxnResult::Committed => Shows::Committed,
                        TxnResult::Aborted(why) => Shows::Aborted { why: why.clone() },
                        TxnResult::Unfinished => Shows::Unfinished,
                    };
                    (StepAt::End, shows)
                }
                _ => (StepAt::Begin, Shows::Began),
            };
            let name_at = match at {
                StepAt::Begin => At::Begin,
                StepAt::Stmt(i) => At::Stmt(i),
                StepAt::End => At::End,
            };
            StepShown {
                step: schedule::step_name(w, t, name_at),
                txn: t,
                at,
                shows,
                blocked: blocked.contains(&(t, point)),
            }
        })
        .collect()
}

/// How many steps each of `workload`'s transactions has: `Begin`, its statements, `End`.
pub fn step_counts(workload: &Workload) -> Vec<usize> {
    workload.programs.iter().map(|p| p.len() + 2).collect()
}

/// Only the interleaving `schedule` pins, driven step by step on `store` under the name
/// `name` (its [`Interleavings`] say it was pinned, and of how many).
pub fn pinned<S: Drivable>(
    store: &mut S,
    name: &str,
    workload: &Workload,
    schedule: &schedule::Schedule,
) -> Result<EveryInterleaving, S::Error> {
    let order = schedule.order();
    let (race, blocked, runs) = drive(store, name, workload, std::slice::from_ref(&order))?;
    Ok(EveryInterleaving {
        race,
        interleavings: Interleavings::pinned(
            order,
            count(&step_counts(workload)),
            schedule.text(workload),
        ),
        blocked,
        runs,
    })
}

/// Every interleaving of `workload`'s transactions (at most `bound`, else that many drawn with
/// `seed`) driven step by step on `store`, each history classified under the name `name`,
/// each anomaly with the schedule that shows it.
pub fn every<S: Drivable>(
    store: &mut S,
    name: &str,
    workload: &Workload,
    bound: usize,
    seed: u64,
) -> Result<EveryInterleaving, S::Error> {
    let interleavings = interleavings(&step_counts(workload), bound, seed);
    let (race, blocked, runs) = drive(store, name, workload, &interleavings.orders)?;
    Ok(EveryInterleaving {
        race,
        interleavings,
        blocked,
        runs,
    })
}

/// Drives `workload` on `store` once in each of `orders` (each the transaction of every step
/// in turn, as [`interleavings`] gives them): the classified runs under the name `name`, how
/// many steps the store blocked, and each run.
pub fn drive<S: Drivable>(
    store: &mut S,
    name: &str,
    workload: &Workload,
    orders: &[Vec<usize>],
) -> Result<(Race, usize, Vec<DrivenRun>), S::Error> {
    let script = Script::Model(workload.clone());
    let scenario = race::free_race();
    let steps = steps(&script);
    let mut out = Race::new(name);
    let mut blocked = 0;
    let mut runs = Vec::with_capacity(orders.len());
    for order in orders {
        let sched = schedule(order, &steps);
        let (results, observed, reads) = store.run_once(&script, &scenario, &sched)?;
        blocked += sched.timeouts();
        let state = store.state(&script)?;
        let versions = store.versions()?;
        let history = race::logged_history(
            &script,
            workload,
            &results,
            &observed,
            &reads,
            race::chained(&versions),
        );
        let outcome = Outcome::judge(&script, results, observed, state);
        let held = sched.blocked();
        let anomalies = out.add(&outcome, history, || {
            format!(
                "{}; final {}; schedule: {}",
                outcome.summary(),
                outcome.state_text(),
                describe_blocked(order, &steps, &script, &held)
            )
        });
        runs.push(DrivenRun {
            schedule: schedule::Schedule::of_order(order, workload).text(workload),
            steps: shown_steps(order, &steps, &script, workload, &outcome, &held),
            outcome: outcome.summary(),
            state: outcome.state.clone(),
            anomalies,
        });
    }
    Ok((out, blocked, runs))
}

/// Each transaction's steps, in its own order: `Begin`, its statements, `End`.
pub fn steps(script: &Script) -> Vec<Vec<Point>> {
    (0..script.txn_count())
        .map(|t| {
            std::iter::once(Point::Begin)
                .chain((0..script.stmt_count(t)).map(Point::Stmt))
                .chain(std::iter::once(Point::End))
                .collect()
        })
        .collect()
}

/// [`count`]'s answer when the number passes `u128`: [`total_text`] reads it as such.
pub const BEYOND_COUNTING: u128 = u128::MAX;

/// The number of interleavings of sequences of these lengths, or [`BEYOND_COUNTING`] when it
/// passes `u128` (never a wrapped or clamped count passed off as exact).
pub fn count(lens: &[usize]) -> u128 {
    // Built up one transaction at a time: C(placed + n, n) ways to place n more steps, each
    // partial product a whole number.
    let mut total: u128 = 1;
    let mut placed: u128 = 0;
    for &n in lens {
        for i in 1..=n as u128 {
            placed += 1;
            match total.checked_mul(placed) {
                Some(product) => total = product / i,
                None => return BEYOND_COUNTING,
            }
        }
    }
    total
}

/// A count of interleavings for people: the number, or `more than 2^128`.
pub fn total_text(total: u128) -> String {
    if total == BEYOND_COUNTING {
        "more than 2^128".to_string()
    } else {
        total.to_string()
    }
}

/// Every interleaving of sequences of these lengths when there are at most `bound`, else
/// `bound` distinct ones drawn with `seed`.
pub fn interleavings(lens: &[usize], bound: usize, seed: u64) -> Interleavings {
    let total = count(lens);
    if total <= bound as u128 {
        let mut orders = Vec::new();
        let mut left = lens.to_vec();
        let mut order = Vec::with_capacity(lens.iter().sum());
        merges(&mut left, &mut order, &mut orders);
        return Interleavings {
            orders,
            total,
            sampled_with: None,
            pinned: None,
        };
    }
    let mut rng = SplitMix(seed);
    let mut seen = HashSet::new();
    let mut orders = Vec::new();
    // Distinct draws until the bound (a generous cap on tries: duplicates are rare here).
    for _ in 0..bound.saturating_mul(20) {
        if orders.len() == bound {
            break;
        }
        let order = draw(lens, &mut rng);
        if seen.insert(order.clone()) {
            orders.push(order);
        }
    }
    Interleavings {
        orders,
        total,
        sampled_with: Some(seed),
        pinned: None,
    }
}

fn merges(left: &mut [usize], order: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    if left.iter().all(|&n| n == 0) {
        out.push(order.clone());
        return;
    }
    for t in 0..left.len() {
        if left[t] > 0 {
            left[t] -= 1;
            order.push(t);
            merges(left, order, out);
            order.pop();
            left[t] += 1;
        }
    }
}

/// One interleaving drawn uniformly: each next step is a transaction's with probability in
/// proportion to the steps it has left.
fn draw(lens: &[usize], rng: &mut SplitMix) -> Vec<usize> {
    let mut left = lens.to_vec();
    let mut order = Vec::with_capacity(lens.iter().sum());
    let mut remaining: usize = lens.iter().sum();
    while remaining > 0 {
        let mut pick = (rng.next() % remaining as u64) as usize;
        let t = left
            .iter()
            .position(|&n| {
                if pick < n {
                    true
                } else {
                    pick -= n;
                    false
                }
            })
            .expect("a pick below the steps left lands on a transaction");
        left[t] -= 1;
        remaining -= 1;
        order.push(t);
    }
    order
}

/// The waits that make the transactions' threads take their steps in `order` (each step of
/// it after the one before, when that one is another transaction's).
pub fn schedule(order: &[usize], steps: &[Vec<Point>]) -> Schedule {
    let waits = placed(order, steps)
        .windows(2)
        .filter(|pair| pair[0].0 != pair[1].0)
        .map(|pair| Wait {
            t: pair[1].0,
            at: pair[1].1,
            u: pair[0].0,
            after: pair[0].1,
        })
        .collect();
    Schedule::new(waits, BLOCKED_AFTER, 0, 1)
}

/// Each step of `order` as (transaction, its step): a transaction's n-th appearance is its
/// n-th step.
fn placed(order: &[usize], steps: &[Vec<Point>]) -> Vec<(usize, Point)> {
    let mut next = vec![0; steps.len()];
    order
        .iter()
        .map(|&t| {
            let at = steps[t][next[t]];
            next[t] += 1;
            (t, at)
        })
        .collect()
}

/// An interleaving for people: `T1 begin, T2 begin, T1 read bob, T2 read alice, …`.
pub fn describe(order: &[usize], steps: &[Vec<Point>], script: &Script) -> String {
    describe_blocked(order, steps, script, &[])
}

/// [`describe`], each step the store blocked marked `(blocked)`: the next step went ahead
/// after [`BLOCKED_AFTER`], and the blocked one finished when the store let it.
pub fn describe_blocked(
    order: &[usize],
    steps: &[Vec<Point>],
    script: &Script,
    blocked: &[(usize, Point)],
) -> String {
    placed(order, steps)
        .into_iter()
        .map(|(t, at)| {
            let mark = if blocked.contains(&(t, at)) {
                " (blocked)"
            } else {
                ""
            };
            let what = match at {
                Point::Begin => "begin".to_string(),
                Point::End if script.aborts(t) => "abort".to_string(),
                Point::End => "commit".to_string(),
                Point::Stmt(i) => match script.stmt_kind(t, i) {
                    StmtKind::Read(k) => format!("read {k}"),
                    StmtKind::Write(k) => format!("write {k}"),
                    StmtKind::Scan(p) => format!("scan page {p}"),
                    StmtKind::Select(p) => format!("read {p}"),
                    StmtKind::Change { target, .. } => format!("change {target}"),
                },
                other => format!("{other:?}"),
            };
            format!("T{} {what}{mark}", t + 1)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A small seeded generator (SplitMix64): the sample is the same for the same seed everywhere.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A step the store blocked is marked where it stands in the schedule; the others are not.
    #[test]
    fn a_blocked_step_is_marked_in_the_schedule() {
        let w = loadbearing_workload::workload::named("lost_update").unwrap();
        let script = Script::Model(w);
        let steps = steps(&script);
        let order = [0, 0, 1, 1, 0, 1, 0, 1];
        let plain = describe(&order, &steps, &script);
        assert!(!plain.contains("blocked"), "{plain}");
        let marked = describe_blocked(&order, &steps, &script, &[(1, Point::Stmt(1))]);
        let blocked: Vec<&str> = marked
            .split(", ")
            .filter(|s| s.contains("(blocked)"))
            .collect();
        assert_eq!(blocked.len(), 1, "{marked}");
        assert!(blocked[0].starts_with("T2 write"), "{marked}");
    }

    #[test]
    fn every_interleaving_is_enumerated_once() {
        let all = interleavings(&[4, 4], 1000, 1);
        assert!(all.every());
        assert_eq!(all.total, 70);
        // Exact while it fits (30 steps of 3 transactions: 30! / 10!^3), and said to pass
        // counting beyond, never clamped to a smaller number.
        assert_eq!(count(&[10, 10, 10]), 5_550_996_791_340);
        assert_eq!(count(&[40; 10]), BEYOND_COUNTING);
        assert_eq!(total_text(count(&[40; 10])), "more than 2^128");
        assert_eq!(all.orders.len(), 70);
        let distinct: HashSet<&Vec<usize>> = all.orders.iter().collect();
        assert_eq!(distinct.len(), 70);
        assert!(all
            .orders
            .iter()
            .all(|o| o.iter().filter(|&&t| t == 0).count() == 4));
        assert_eq!(count(&[4, 4, 4]), 34_650);
        assert_eq!(count(&[3]), 1);
    }

    #[test]
    fn beyond_the_bound_a_seeded_sample_says_so() {
        let some = interleavings(&[4, 4, 4], 300, 7);
        assert_eq!(some.orders.len(), 300);
        assert_eq!(some.sampled_with, Some(7));
        assert_eq!(
            some.text(),
            "300 of 34650 interleavings, sampled with seed 7"
        );
        let again = interleavings(&[4, 4, 4], 300, 7);
        assert_eq!(some.orders, again.orders);
    }

    #[test]
    fn a_schedule_waits_only_across_transactions() {
        let steps = vec![
            vec![Point::Begin, Point::Stmt(0), Point::End],
            vec![Point::Begin, Point::End],
        ];
        let order = [0, 1, 0, 0, 1];
        let waits = schedule(&order, &steps).waits().to_vec();
        assert_eq!(
            waits,
            [
                Wait {
                    t: 1,
                    at: Point::Begin,
                    u: 0,
                    after: Point::Begin
                },
                Wait {
                    t: 0,
                    at: Point::Stmt(0),
                    u: 1,
                    after: Point::Begin
                },
                Wait {
                    t: 1,
                    at: Point::End,
                    u: 0,
                    after: Point::End
                },
            ]
        );
    }
}
