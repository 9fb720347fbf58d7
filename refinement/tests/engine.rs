//! The engine on tiny hand-made models, where the right answer is known by inspection.

use std::time::Duration;

use loadbearing_refinement::{
    check, CheckSpec, MappedRefinement, Options, Outcome, Refinement, Spec, Variables,
};
use stateright::{Model, Property};

/// A counter that counts to `max`; `jump` adds a step of +2, `lose` a step back to zero.
#[derive(Clone)]
struct Counter {
    max: u8,
    jump: bool,
    lose: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum CounterAction {
    Inc,
    Jump,
    Lose,
}

impl Model for Counter {
    type State = u8;
    type Action = CounterAction;
    fn init_states(&self) -> Vec<u8> {
        vec![0]
    }
    fn actions(&self, s: &u8, actions: &mut Vec<CounterAction>) {
        if *s < self.max {
            actions.push(CounterAction::Inc);
        }
        if self.jump && *s + 2 <= self.max {
            actions.push(CounterAction::Jump);
        }
        if self.lose && *s > 0 {
            actions.push(CounterAction::Lose);
        }
    }
    fn next_state(&self, s: &u8, a: CounterAction) -> Option<u8> {
        Some(match a {
            CounterAction::Inc => s + 1,
            CounterAction::Jump => s + 2,
            CounterAction::Lose => 0,
        })
    }
    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("BelowThree", |_, s: &u8| *s < 3),
            Property::eventually("ReachesMax", |m: &Self, s: &u8| *s == m.max),
            Property::sometimes("ReachesTwo", |_, s: &u8| *s == 2),
            Property::sometimes("ReachesNine", |_, s: &u8| *s == 9),
        ]
    }
}

impl Spec for Counter {
    fn variables(&self, s: &u8) -> Variables {
        vec![("n", s.to_string())]
    }
    fn fairness_groups(&self) -> Vec<String> {
        vec!["Inc".into()]
    }
    fn fairness_group(&self, a: &CounterAction) -> Option<usize> {
        (*a == CounterAction::Inc).then_some(0)
    }
}

/// A counter with a hidden phase bit: each increment takes two steps, the first a stutter of the
/// visible count. It refines `Counter`, unless `skip` lets it add two at once.
#[derive(Clone)]
struct TwoPhase {
    max: u8,
    skip: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum PhaseAction {
    Prepare,
    Finish,
    Skip,
}

impl Model for TwoPhase {
    type State = (u8, bool);
    type Action = PhaseAction;
    fn init_states(&self) -> Vec<(u8, bool)> {
        vec![(0, false)]
    }
    fn actions(&self, s: &(u8, bool), actions: &mut Vec<PhaseAction>) {
        if s.0 < self.max && !s.1 {
            actions.push(PhaseAction::Prepare);
        }
        if s.1 {
            actions.push(PhaseAction::Finish);
        }
        if self.skip && s.0 + 2 <= self.max {
            actions.push(PhaseAction::Skip);
        }
    }
    fn next_state(&self, s: &(u8, bool), a: PhaseAction) -> Option<(u8, bool)> {
        Some(match a {
            PhaseAction::Prepare => (s.0, true),
            PhaseAction::Finish => (s.0 + 1, false),
            PhaseAction::Skip => (s.0 + 2, s.1),
        })
    }
}

impl Spec for TwoPhase {
    fn variables(&self, s: &(u8, bool)) -> Variables {
        vec![("n", s.0.to_string()), ("prepared", s.1.to_string())]
    }
    fn refinements(&self) -> Vec<Box<dyn Refinement<(u8, bool)>>> {
        let counter = Counter {
            max: self.max,
            jump: false,
            lose: false,
        };
        vec![Box::new(MappedRefinement::new(
            "RefCounter",
            counter,
            |s: &(u8, bool)| s.0,
        ))]
    }
}

fn spec(properties: &[&str], fair: bool, end_states: bool) -> CheckSpec {
    CheckSpec {
        properties: properties.iter().map(|p| p.to_string()).collect(),
        fair,
        allow_end_states: end_states,
    }
}

fn options() -> Options {
    Options::default()
}

#[test]
fn invariant_violation_is_the_shortest_path() {
    let model = Counter {
        max: 5,
        jump: true,
        lose: false,
    };
    let report = check(&model, &spec(&["BelowThree"], true, true), &options()).unwrap();
    assert_eq!(report.outcome, Outcome::Violates("BelowThree".into()));
    let cx = report.counterexample.unwrap();
    // Inc, Inc, Inc also reaches 3, but Jump makes it two steps.
    assert_eq!(cx.len(), 2);
    assert_eq!(
        cx.steps.last().unwrap().state,
        vec![("n".to_string(), "3".to_string())]
    );
}

#[test]
fn counterexamples_do_not_depend_on_the_thread_count() {
    let model = TwoPhase {
        max: 30,
        skip: false,
    };
    let bad = Counter {
        max: 30,
        jump: true,
        lose: true,
    };
    for threads in [1, 2, 4] {
        let opts = Options {
            threads,
            ..Options::default()
        };
        let r = check(&bad, &spec(&["BelowThree"], true, true), &opts).unwrap();
        assert_eq!(r.counterexample.unwrap().actions(), vec!["Inc", "Jump"]);
        let r = check(&model, &spec(&["RefCounter"], true, true), &opts).unwrap();
        assert_eq!(r.outcome, Outcome::Holds);
        assert_eq!(r.distinct_states, 61);
    }
}

#[test]
fn refinement_with_stutter_steps_holds() {
    let model = TwoPhase {
        max: 3,
        skip: false,
    };
    let report = check(&model, &spec(&["RefCounter"], true, true), &options()).unwrap();
    assert_eq!(report.outcome, Outcome::Holds);
    assert_eq!(report.distinct_states, 7);
}

#[test]
fn refinement_violation_names_the_step_and_its_images() {
    let model = TwoPhase { max: 3, skip: true };
    let report = check(&model, &spec(&["RefCounter"], true, true), &options()).unwrap();
    assert_eq!(report.outcome, Outcome::Violates("RefCounter".into()));
    let cx = report.counterexample.unwrap();
    assert_eq!(cx.actions(), vec!["Skip"]);
    let images = cx.abstract_step.unwrap();
    assert_eq!(images.before, vec![("n".to_string(), "0".to_string())]);
    assert_eq!(images.after, vec![("n".to_string(), "2".to_string())]);
}

#[test]
fn liveness_without_fairness_fails_in_the_initial_state() {
    let model = Counter {
        max: 2,
        jump: false,
        lose: false,
    };
    let report = check(&model, &spec(&["ReachesMax"], false, true), &options()).unwrap();
    assert_eq!(report.outcome, Outcome::Violates("ReachesMax".into()));
    let cx = report.counterexample.unwrap();
    assert_eq!(cx.len(), 0, "the initial state may stutter forever");
    assert_eq!(cx.loop_start, Some(0));
}

#[test]
fn liveness_with_weak_fairness_holds_on_a_chain() {
    let model = Counter {
        max: 4,
        jump: true,
        lose: false,
    };
    let report = check(&model, &spec(&["ReachesMax"], true, true), &options()).unwrap();
    assert_eq!(report.outcome, Outcome::Holds);
}

#[test]
fn weak_fairness_is_not_strong_fairness_on_a_cycle() {
    // 0 -> 1 -> 0 (Lose) forever: Inc is enabled at 0 and 1, so WF on Inc forces it on that
    // cycle; but the cycle 0 -> 1 -> 0 takes Inc, so it is fair and never reaches 2.
    let model = Counter {
        max: 2,
        jump: false,
        lose: true,
    };
    let report = check(&model, &spec(&["ReachesMax"], true, true), &options()).unwrap();
    assert_eq!(report.outcome, Outcome::Violates("ReachesMax".into()));
    let cx = report.counterexample.unwrap();
    assert_eq!(cx.loop_start, Some(0));
    assert_eq!(
        cx.actions(),
        vec!["Inc", "Lose"],
        "no prefix; the loop: Inc, then Lose back to 0"
    );
    assert_eq!(cx.steps[0].state, cx.steps[2].state);
}

#[test]
fn a_stuck_state_is_a_deadlock_unless_end_states_are_allowed() {
    let model = Counter {
        max: 2,
        jump: false,
        lose: false,
    };
    let report = check(&model, &spec(&["BelowThree"], true, false), &options()).unwrap();
    assert_eq!(report.outcome, Outcome::Deadlock);
    assert_eq!(report.counterexample.unwrap().actions(), vec!["Inc", "Inc"]);
    let report = check(&model, &spec(&["BelowThree"], true, true), &options()).unwrap();
    assert_eq!(report.outcome, Outcome::Holds);
}

#[test]
fn a_witness_must_be_found() {
    let model = Counter {
        max: 5,
        jump: false,
        lose: false,
    };
    let found = check(&model, &spec(&["ReachesTwo"], true, true), &options()).unwrap();
    assert_eq!(found.outcome, Outcome::Holds);
    let missing = check(&model, &spec(&["ReachesNine"], true, true), &options()).unwrap();
    assert_eq!(missing.outcome, Outcome::Missing("ReachesNine".into()));
}

#[test]
fn a_budget_hit_is_incomplete_never_holds() {
    let model = Counter {
        max: 200,
        jump: false,
        lose: false,
    };
    let opts = Options {
        max_states: Some(10),
        ..Options::default()
    };
    let report = check(&model, &spec(&["ReachesTwo"], true, true), &opts).unwrap();
    assert!(
        matches!(report.outcome, Outcome::Incomplete(_)),
        "{:?}",
        report.outcome
    );
    let opts = Options {
        max_states: Some(10),
        ..Options::default()
    };
    let report = check(&model, &spec(&["ReachesMax"], true, true), &opts).unwrap();
    assert!(
        matches!(report.outcome, Outcome::Incomplete(_)),
        "{:?}",
        report.outcome
    );
    let opts = Options {
        timeout: Some(Duration::ZERO),
        ..Options::default()
    };
    let report = check(&model, &spec(&["ReachesTwo"], true, true), &opts).unwrap();
    assert!(
        matches!(report.outcome, Outcome::Incomplete(_)),
        "{:?}",
        report.outcome
    );
}

#[test]
fn an_unknown_property_lists_the_known_ones() {
    let model = TwoPhase {
        max: 1,
        skip: false,
    };
    let err = check(&model, &spec(&["Nope"], true, true), &options()).unwrap_err();
    assert!(err.to_string().contains("RefCounter"), "{err}");
}
