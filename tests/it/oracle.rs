//! The history judge against the oracle of our own (`loadbearing::oracle`): on generated
//! histories of every model that reads them, the verdict of `conform --trace` equals the naive
//! checker's, as a history and as the same events in sequence. A few hundred a model here;
//! `loadbearing bench --histories --oracle N` runs more.

use loadbearing::oracle::compare::{run, Case};

fn agrees(case: Case, n: usize) {
    let tally = run(case, n, 1);
    for d in tally.disagreements.iter().take(3) {
        eprintln!(
            "{case}: judge {} oracle {} (as a sequence: {})\n{}",
            d.judge, d.oracle, d.as_sequence, d.history
        );
    }
    assert!(
        tally.all_agree(),
        "{case}: {} of {} judgements disagree with the oracle ({} undecided)",
        tally.disagreements.len(),
        tally.agreed + tally.disagreements.len(),
        tally.undecided
    );
    // A wrong answer may plant a value past the model's bounds, which is refused, not judged:
    // a few, never most.
    assert!(
        tally.refused * 10 < tally.agreed,
        "{case}: {} refused",
        tally.refused
    );
    // Both verdicts are exercised, often (a reap explains many a wrong read).
    let (yes, no) = (tally.linearizable, tally.histories - tally.linearizable);
    assert!(
        yes * 10 > n && no * 10 > n,
        "{case}: {yes} linearizable, {no} not"
    );
}

#[test]
fn the_atomic_row_agrees_with_the_oracle() {
    agrees(Case::AtomicGuarded, 300);
}

#[test]
fn last_write_wins_agrees_with_the_oracle() {
    agrees(Case::AtomicLastWriteWins, 300);
}

#[test]
fn the_atomic_row_with_a_reap_agrees_with_the_oracle() {
    agrees(Case::AtomicReap, 300);
}

#[test]
fn the_compound_agrees_with_the_oracle() {
    agrees(Case::Compound, 300);
}

#[test]
fn the_compound_with_a_reap_agrees_with_the_oracle() {
    agrees(Case::CompoundReap, 300);
}

#[test]
fn cassandra_agrees_with_the_oracle() {
    agrees(Case::Cassandra, 300);
}

#[test]
fn cassandra_835_agrees_with_the_oracle() {
    agrees(Case::Cassandra835, 300);
}

// The oracle has teeth: a judge with a planted bug disagrees with it.

use loadbearing_specs::first_write::register::AtomicRow;
use loadbearing_specs::first_write::trace::{FirstWriteEvent, StoreRow};
use loadbearing_trace::history::ModelSteps;
use loadbearing_trace::{check_history, Budget, Conform, Sequential, TraceEvent};

/// The model face with its enabledness check skipped: an unanswered statement's step is
/// placed wherever the model's `next_state` takes it, enabled there or not (the bug the issue
/// found in the first judge).
struct SkipsEnabledness<'a, M: Conform>(ModelSteps<'a, M>);

impl<M: Conform> Sequential for SkipsEnabledness<'_, M>
where
    M::State: std::hash::Hash + Eq,
{
    type Op = M::Event;
    type State = M::State;
    type Key = ();
    type Why = String;

    fn key(&self, _: &M::Event) {}

    fn init(&self, key: &(), ops: &[&M::Event]) -> Vec<M::State> {
        self.0.init(key, ops)
    }

    fn step(&self, s: &M::State, e: &M::Event, after: &mut Vec<M::State>) -> Result<(), String> {
        self.0.step(s, e, after)
    }

    fn step_unknown(&self, s: &M::State, e: &M::Event, after: &mut Vec<M::State>) {
        let model = self.0.model;
        for action in model.unresolved(std::slice::from_ref(e)) {
            after.extend(model.next_state(s, action));
        }
    }

    fn silent(&self, s: &M::State, after: &mut Vec<M::State>) {
        self.0.silent(s, after)
    }

    fn describe(&self, e: &M::Event) -> String {
        e.to_line()
    }
}

#[test]
fn the_oracle_catches_a_judge_that_skips_the_enabledness_check() {
    let sound = loadbearing::oracle::compare::compound_with(1000, 1, false, |model, h| {
        check_history(&ModelSteps { model }, h, Budget::default())
    });
    assert!(sound.all_agree(), "{:?}", sound.disagreements.first());
    let mutant = loadbearing::oracle::compare::compound_with(1000, 1, false, |model, h| {
        check_history(
            &SkipsEnabledness(ModelSteps { model }),
            h,
            Budget::default(),
        )
    });
    assert!(
        !mutant.disagreements.is_empty(),
        "the oracle missed a judge that places unknown steps where the model does not enable them"
    );
}

/// The row face with a hint that is not a fact: `doomed` claims the row only grows even under a
/// reap (which can empty it).
struct DoomsUnderReap<'a>(AtomicRow<'a>);

impl Sequential for DoomsUnderReap<'_> {
    type Op = FirstWriteEvent;
    type State = StoreRow;
    type Key = ();
    type Why = <AtomicRow<'static> as Sequential>::Why;

    fn key(&self, _: &FirstWriteEvent) {}

    fn init(&self, key: &(), ops: &[&FirstWriteEvent]) -> Vec<StoreRow> {
        self.0.init(key, ops)
    }

    fn step(
        &self,
        s: &StoreRow,
        op: &FirstWriteEvent,
        after: &mut Vec<StoreRow>,
    ) -> Result<(), Self::Why> {
        self.0.step(s, op, after)
    }

    fn step_unknown(&self, s: &StoreRow, op: &FirstWriteEvent, after: &mut Vec<StoreRow>) {
        self.0.step_unknown(s, op, after)
    }

    fn doomed(&self, row: &StoreRow, op: &FirstWriteEvent) -> bool {
        match (row.offset(), op) {
            (Some(r), FirstWriteEvent::Read(read)) => read.offset().is_none_or(|o| o < r),
            _ => self.0.doomed(row, op),
        }
    }

    fn silent(&self, s: &StoreRow, after: &mut Vec<StoreRow>) {
        self.0.silent(s, after)
    }

    fn describe(&self, op: &FirstWriteEvent) -> String {
        op.to_line()
    }
}

#[test]
fn the_oracle_catches_a_search_hint_that_is_not_a_fact() {
    let mutant = loadbearing::oracle::compare::atomic_with(1000, 1, true, true, |model, h| {
        check_history(&DoomsUnderReap(AtomicRow { model }), h, Budget::default())
    });
    assert!(
        !mutant.disagreements.is_empty(),
        "the oracle missed a `doomed` that ignores the reap"
    );
}
