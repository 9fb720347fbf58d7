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

use loadbearing_workload::workload::Workload;
use serde::Serialize;

use crate::program::{Outcome, Script, StmtKind};
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
}

impl Interleavings {
    /// Whether every interleaving is driven.
    pub fn every(&self) -> bool {
        self.sampled_with.is_none()
    }

    /// For people: `every interleaving (70)`, or `300 of 34650 interleavings, sampled with
    /// seed 7`.
    pub fn text(&self) -> String {
        match self.sampled_with {
            None => format!("every interleaving ({})", self.total),
            Some(seed) => format!(
                "{} of {} interleavings, sampled with seed {seed}",
                self.orders.len(),
                self.total
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
    let script = Script::Model(workload.clone());
    let lens: Vec<usize> = steps(&script).iter().map(Vec::len).collect();
    let interleavings = interleavings(&lens, bound, seed);
    let (race, blocked) = drive(store, name, workload, &interleavings.orders)?;
    Ok(EveryInterleaving {
        race,
        interleavings,
        blocked,
    })
}

/// Drives `workload` on `store` once in each of `orders` (each the transaction of every step
/// in turn, as [`interleavings`] gives them): the classified runs under the name `name`, and
/// how many steps the store blocked.
pub fn drive<S: Drivable>(
    store: &mut S,
    name: &str,
    workload: &Workload,
    orders: &[Vec<usize>],
) -> Result<(Race, usize), S::Error> {
    let script = Script::Model(workload.clone());
    let scenario = race::free_race();
    let steps = steps(&script);
    let mut out = Race::new(name);
    let mut blocked = 0;
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
        out.add(&outcome, history, || {
            format!(
                "{}; final {}; schedule: {}",
                outcome.summary(),
                outcome.state_text(),
                describe_blocked(order, &steps, &script, &held)
            )
        });
    }
    Ok((out, blocked))
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

/// The number of interleavings of sequences of these lengths (saturating: never wraps).
pub fn count(lens: &[usize]) -> u128 {
    // Built up one transaction at a time: C(placed + n, n) ways to place n more steps.
    let mut total: u128 = 1;
    let mut placed: u128 = 0;
    for &n in lens {
        for i in 1..=n as u128 {
            placed += 1;
            total = total.saturating_mul(placed) / i;
        }
    }
    total
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
                Point::End => "commit".to_string(),
                Point::Stmt(i) => match script.stmt_kind(t, i) {
                    StmtKind::Read(k) => format!("read {k}"),
                    StmtKind::Write(k) => format!("write {k}"),
                    StmtKind::Scan(p) => format!("scan page {p}"),
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
