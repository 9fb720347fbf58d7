//! The engine on tiny hand-made models, where the right answer is known by inspection.

use std::time::Duration;

use std::sync::Arc;

use loadbearing_refinement::{
    check, erase, CheckSpec, EventuallyAlways, MappedRefinement, Options, Outcome, Refinement,
    ShownPath, Spec, StepMatch, Variables,
};
use loadbearing_refinement::{Model, Property, Shown};

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
            Property::eventually("AwayFromOne", |_, s: &u8| *s != 1),
        ]
    }
}

impl Spec for Counter {
    fn variables(&self, s: &u8) -> Variables {
        vec![("n", s.into())]
    }
    fn eventually_always(&self) -> Vec<EventuallyAlways<Self>> {
        vec![EventuallyAlways::new("SettlesAwayFromOne", |_, s: &u8| {
            *s != 1
        })]
    }
    fn fairness_groups(&self) -> Vec<String> {
        vec!["Inc".into()]
    }
    fn fairness_group(&self, a: &CounterAction) -> Option<usize> {
        (*a == CounterAction::Inc).then_some(0)
    }
    /// The count, which Inc and Jump increase and Lose does not: a counter that can lose has
    /// a cycle its liveness checks must still find, the variant notwithstanding
    /// (`weak_fairness_is_not_strong_fairness_on_a_cycle`).
    fn variant(&self, s: &u8) -> Option<u64> {
        Some(*s as u64)
    }
    /// One counter is a set of one interchangeable process: the trivial symmetry, enough to
    /// see what the engine accepts and refuses with a symmetry declared.
    fn symmetries(&self) -> Vec<loadbearing_refinement::Symmetry> {
        vec![loadbearing_refinement::Symmetry {
            name: "Counters",
            size: 1,
        }]
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
        vec![("n", s.0.into()), ("prepared", s.1.into())]
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
        symmetry: Vec::new(),
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
    assert_eq!(*cx.path.last_state(), 3);
    assert_eq!(
        ShownPath::of(&model, &cx).steps.last().unwrap().state,
        vec![("n".to_string(), Shown::from(3u32))]
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
        let cx = r.counterexample.unwrap();
        let actions: Vec<_> = cx.path.actions().copied().collect();
        assert_eq!(actions, [CounterAction::Inc, CounterAction::Jump]);
        let r = check(&model, &spec(&["RefCounter"], true, true), &opts).unwrap();
        assert_eq!(r.outcome, Outcome::Holds);
        assert_eq!(r.distinct_states, 61);
    }
}

/// A wide mesh: `width` states a level, each with three successors on the next level spread
/// pseudo-randomly, so most states have parents in many chunks of their level, which the
/// cores claim at once. Levels end at `depth`, where a state stays.
#[derive(Clone)]
struct Mesh {
    width: u32,
    depth: u8,
    /// The last level's states `NotMarked` refuses: those at x = mark (mod 1000).
    mark: u32,
}

impl Model for Mesh {
    type State = (u8, u32);
    type Action = u8;

    fn init_states(&self) -> Vec<(u8, u32)> {
        (0..self.width).map(|x| (0, x)).collect()
    }

    fn actions(&self, s: &(u8, u32), actions: &mut Vec<u8>) {
        if s.0 < self.depth {
            actions.extend([0, 1, 2]);
        }
    }

    fn next_state(&self, s: &(u8, u32), branch: u8) -> Option<(u8, u32)> {
        let spread = (s.1 as u64 * 2_654_435_761 + branch as u64 * 40_503 + s.0 as u64 * 7)
            % self.width as u64;
        Some((s.0 + 1, spread as u32))
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("NotMarked", |m: &Self, s: &(u8, u32)| {
                !(s.0 == m.depth && s.1 % 1000 == m.mark)
            }),
            Property::eventually("EndsOnSeven", |m: &Self, s: &(u8, u32)| {
                s.0 == m.depth && s.1.is_multiple_of(7)
            }),
        ]
    }
}

impl Spec for Mesh {
    fn variables(&self, s: &(u8, u32)) -> Variables {
        vec![("level", s.0.into()), ("x", s.1.into())]
    }

    fn fairness_groups(&self) -> Vec<String> {
        vec!["Step".into()]
    }

    fn fairness_group(&self, _: &u8) -> Option<usize> {
        Some(0)
    }
}

/// The cores claim a level's new states in one visited set at once, and the first in frontier
/// order keeps each, whichever core gets there first: parents, frontier order, graph ids and so
/// every counterexample (a safety one and a lasso) are those of one thread, on any number.
#[test]
fn wide_levels_give_the_same_counterexamples_on_every_thread_count() {
    let answer = |threads: usize, property: &str, mark: u32| {
        let model = Mesh {
            width: 40_000,
            depth: 10,
            mark,
        };
        let options = Options {
            threads,
            ..Options::default()
        };
        let report = check(&model, &spec(&[property], true, true), &options).unwrap();
        assert_eq!(report.outcome, Outcome::Violates(property.into()));
        let cx = report.counterexample.unwrap();
        let states: Vec<_> = cx.path.states().cloned().collect();
        // A behaviour of the model: every step one of its actions (a graph whose edges led to
        // the wrong ids would still give the same wrong lasso on every thread count).
        assert!(model.init_states().contains(&states[0]), "{states:?}");
        for step in states.windows(2) {
            let mut actions = Vec::new();
            model.actions(&step[0], &mut actions);
            assert!(
                actions
                    .into_iter()
                    .any(|a| model.next_state(&step[0], a).as_ref() == Some(&step[1])),
                "{property} (mark {mark}): no step from {:?} to {:?}",
                step[0],
                step[1]
            );
        }
        (report.distinct_states, states, cx.loop_start)
    };
    // Each mark a path through other states: more of the places where cores meet.
    let cases = (0..6).map(|mark| ("NotMarked", mark));
    for (property, mark) in cases.chain([("EndsOnSeven", 0)]) {
        let one = answer(1, property, mark);
        for threads in [2, 5] {
            let other = answer(threads, property, mark);
            assert_eq!(other, one, "{property} (mark {mark}) on {threads} threads");
        }
    }
}

/// The liveness graph is built in the search's own pass, each chunk's edges to the states the
/// batch found new resolved once every chunk's winners have ids: every state's edges must be
/// its successors, in order, on one thread and on two (a wide model: many chunks a level).
#[test]
fn the_graph_built_in_the_search_has_each_successor_as_an_edge() {
    use loadbearing_refinement::budget::Limits;
    use loadbearing_refinement::explore::{explore, Edges, SafetyChecks};
    use loadbearing_refinement::fingerprint::fingerprint;
    use loadbearing_refinement::graph::Condition;

    let model = Mesh {
        width: 20_000,
        depth: 4,
        mark: 0,
    };
    let by_key: std::collections::HashMap<u64, (u8, u32)> = (0..=model.depth)
        .flat_map(|level| (0..model.width).map(move |x| (level, x)))
        .map(|s| (fingerprint(&s), s))
        .collect();
    let checks = SafetyChecks::none(&model);
    let limits = Limits::default();
    let conditions: Vec<Condition<'_, (u8, u32)>> =
        vec![Box::new(|s: &(u8, u32)| s.1.is_multiple_of(7))];
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let found = pool.install(|| {
            explore(
                &model,
                &checks,
                &limits,
                None,
                Some(&conditions),
                Edges::Kept,
            )
        });
        let graph = found.graph.expect("a graph for the temporal condition");
        assert_eq!(graph.len(), found.visited.len());
        for id in 0..graph.len() as u32 {
            let state = by_key[&graph.fps[id as usize]];
            let mut actions = Vec::new();
            model.actions(&state, &mut actions);
            let successors: Vec<u64> = actions
                .into_iter()
                .filter_map(|a| model.next_state(&state, a))
                .map(|next| fingerprint(&next))
                .collect();
            let edges: Vec<u64> = graph.edges(id).map(|e| graph.fps[e.to as usize]).collect();
            assert_eq!(
                edges, successors,
                "state {state:?} (id {id}), {threads} threads"
            );
        }
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
    let actions: Vec<_> = cx.path.actions().copied().collect();
    assert_eq!(actions, [PhaseAction::Skip]);
    let images = cx.abstract_step.unwrap();
    assert_eq!(&*images.model, "Counter");
    let before = images.before.expect("a step, not an initial state");
    assert_eq!(before.downcast_ref::<u8>(), Some(&0));
    assert_eq!(images.after.downcast_ref::<u8>(), Some(&2));
    assert_eq!(
        before.variables(),
        vec![("n".to_string(), Shown::from(0u8))]
    );
    assert_eq!(
        images.after.variables(),
        vec![("n".to_string(), Shown::from(2u8))]
    );
}

#[test]
fn a_simulated_step_names_the_abstract_action_as_a_value() {
    let model = TwoPhase {
        max: 3,
        skip: false,
    };
    let refinement = model.refinements().remove(0);
    assert_eq!(refinement.abstract_model(), "Counter");
    assert!(matches!(
        refinement.check_step(&(0, false), &(0, true)),
        Ok(StepMatch::Stutter)
    ));
    match refinement.check_step(&(0, true), &(1, false)) {
        Ok(StepMatch::Simulates(action)) => {
            assert_eq!(
                action.downcast_ref::<CounterAction>(),
                Some(&CounterAction::Inc)
            );
            assert_eq!(action.to_string(), "Inc");
        }
        other => panic!("expected a simulated Inc, got {other:?}"),
    }
    assert_eq!(refinement.image(&(2, true)).downcast_ref::<u8>(), Some(&2));
}

#[test]
fn a_shown_path_lists_actors_actions_and_only_the_changed_variables() {
    let model = TwoPhase { max: 3, skip: true };
    let report = check(&model, &spec(&["RefCounter"], true, true), &options()).unwrap();
    let shown = ShownPath::of(&model, &report.counterexample.unwrap());
    assert_eq!(shown.len(), 1);
    assert_eq!(shown.steps[0].action, None);
    assert_eq!(
        shown.steps[0].state.len(),
        2,
        "the initial state shows every variable"
    );
    let skip = &shown.steps[1];
    assert_eq!(skip.action.as_deref(), Some("Skip"));
    assert_eq!(skip.actor.as_deref(), Some("system"));
    assert_eq!(skip.changed, vec![("n".to_string(), Shown::from(2u8))]);
    let images = shown
        .abstract_step
        .expect("a refinement failure shows its images");
    assert_eq!(images.model, "Counter");
    assert_eq!(images.before, vec![("n".to_string(), Shown::from(0u8))]);
}

#[test]
fn the_erased_report_shows_its_paths_and_gives_the_typed_report_back() {
    let model = Counter {
        max: 5,
        jump: true,
        lose: false,
    };
    let report = check(&model, &spec(&["BelowThree"], true, true), &options()).unwrap();
    let erased = erase(Arc::new(model.clone()), report.clone());
    assert_eq!(erased.outcome(), &report.outcome);
    assert_eq!(erased.distinct_states(), report.distinct_states);
    assert_eq!(erased.counterexample().unwrap().actions(), ["Inc", "Jump"]);
    let typed = erased
        .typed::<Counter>()
        .expect("the report is of a Counter");
    assert_eq!(
        typed.counterexample.as_ref().unwrap().path,
        report.counterexample.unwrap().path
    );
    assert!(erased.typed::<TwoPhase>().is_none(), "nor of another model");
    assert_eq!(erased.model::<Counter>().map(|m| m.max), Some(5));
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
    let actions: Vec<_> = cx.path.actions().copied().collect();
    assert_eq!(
        actions,
        [CounterAction::Inc, CounterAction::Lose],
        "no prefix; the loop: Inc, then Lose back to 0"
    );
    assert_eq!(cx.path.state(0), cx.path.state(2));
}

#[test]
fn eventually_always_is_stronger_than_eventually() {
    // 0 -> 1 -> 0 (Lose) is a fair cycle: `<>(n /= 1)` holds at once (n = 0 initially), but
    // `<>[](n /= 1)` fails, as the loop passes n = 1 forever.
    let model = Counter {
        max: 2,
        jump: false,
        lose: true,
    };
    let eventually = check(&model, &spec(&["AwayFromOne"], true, true), &options()).unwrap();
    assert_eq!(eventually.outcome, Outcome::Holds);
    let stable = check(
        &model,
        &spec(&["SettlesAwayFromOne"], true, true),
        &options(),
    )
    .unwrap();
    assert_eq!(
        stable.outcome,
        Outcome::Violates("SettlesAwayFromOne".into())
    );
    let cx = stable.counterexample.unwrap();
    let start = cx.loop_start.expect("a lasso");
    let looped: Vec<u8> = (start..=cx.len()).map(|i| *cx.path.state(i)).collect();
    assert!(looped.contains(&1), "the loop passes n = 1: {looped:?}");
}

#[test]
fn eventually_always_holds_once_the_behaviour_settles() {
    // Without Lose the counter passes n = 1 once and stutters at the maximum for good.
    let model = Counter {
        max: 2,
        jump: false,
        lose: false,
    };
    let report = check(
        &model,
        &spec(&["SettlesAwayFromOne"], true, true),
        &options(),
    )
    .unwrap();
    assert_eq!(report.outcome, Outcome::Holds);
    // Without fairness the counter may stop at n = 1 and stutter there.
    let unfair = check(
        &model,
        &spec(&["SettlesAwayFromOne"], false, true),
        &options(),
    )
    .unwrap();
    assert_eq!(
        unfair.outcome,
        Outcome::Violates("SettlesAwayFromOne".into())
    );
    // The variant held on every step, but a state may stutter forever: the lasso's prefix
    // is read from the graph's edges, which the search keeps on a second pass.
    let cx = unfair.counterexample.unwrap();
    let states: Vec<u8> = (0..=cx.len()).map(|i| *cx.path.state(i)).collect();
    assert_eq!(states, [0, 1], "to n = 1, then stutter there");
    assert_eq!(cx.loop_start, Some(1));
}

#[test]
fn a_variant_that_settles_liveness_spares_the_graph_its_edges() {
    // The count grows on every step and fairness forces Inc wherever the maximum is not
    // reached: no state of `ReachesMax`'s region may stutter forever, so the search keeps
    // no edge, only each state's fingerprint and bits.
    let model = Counter {
        max: 200,
        jump: true,
        lose: false,
    };
    let report = check(&model, &spec(&["ReachesMax"], true, true), &options()).unwrap();
    assert_eq!(report.outcome, Outcome::Holds);
    assert_eq!(report.distinct_states, 201);
    // With its edges the graph has at least 8 bytes a state (fingerprint), 4 (offset) and 5
    // an edge (target and group): 199 states have two edges.
    assert!(
        report.graph_bytes < 12 * 201,
        "{} bytes: the edges were kept",
        report.graph_bytes
    );
    // Where the variant fails (Lose), the same property is judged on the edges.
    let losing = Counter {
        lose: true,
        ..model
    };
    let report = check(&losing, &spec(&["ReachesMax"], true, true), &options()).unwrap();
    assert_eq!(report.outcome, Outcome::Violates("ReachesMax".into()));
    assert!(report.graph_bytes > 12 * 201 + 5 * 2 * 199);
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
    let actions: Vec<_> = report
        .counterexample
        .unwrap()
        .path
        .actions()
        .copied()
        .collect();
    assert_eq!(actions, [CounterAction::Inc, CounterAction::Inc]);
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

#[test]
fn symmetry_is_for_safety_and_refused_with_a_temporal_property() {
    let model = Counter {
        max: 5,
        jump: false,
        lose: false,
    };
    let mut safety = spec(&["BelowThree"], true, true);
    safety.symmetry = vec!["Counters".into()];
    let report = check(&model, &safety, &options()).unwrap();
    assert_eq!(report.outcome, Outcome::Violates("BelowThree".into()));
    assert_eq!(report.counterexample.unwrap().len(), 3);

    let mut live = spec(&["ReachesMax"], true, true);
    live.symmetry = vec!["Counters".into()];
    let refused = check(&model, &live, &options()).err().unwrap().to_string();
    assert!(refused.contains("`ReachesMax` is refused"), "{refused}");

    let mut unknown = spec(&["BelowThree"], true, true);
    unknown.symmetry = vec!["Keys".into()];
    let refused = check(&model, &unknown, &options())
        .err()
        .unwrap()
        .to_string();
    assert!(
        refused.contains("unknown symmetry `Keys`; this model has: Counters"),
        "{refused}"
    );
}

/// With `every_temporal`, one liveness graph judges every temporal property: each violated one
/// is listed with the length of the counterexample it has when checked alone, and the outcome
/// is still the first violated one's. Without it, the list stays empty.
#[test]
fn every_temporal_property_is_judged_on_one_graph() {
    // The fair loop 0 -> 1 -> 0 (Inc, then Lose) never reaches 2 and keeps coming back to 1.
    let model = Counter {
        max: 2,
        jump: false,
        lose: true,
    };
    let both = spec(&["ReachesMax", "SettlesAwayFromOne"], true, true);
    let every = Options {
        every_temporal: true,
        ..options()
    };
    let report = check(&model, &both, &every).unwrap();
    assert_eq!(report.outcome, Outcome::Violates("ReachesMax".into()));
    let alone = |name: &str| {
        check(&model, &spec(&[name], true, true), &options())
            .unwrap()
            .counterexample
            .unwrap()
            .len()
    };
    assert_eq!(
        report.temporal_violations,
        [
            ("ReachesMax".to_string(), alone("ReachesMax")),
            (
                "SettlesAwayFromOne".to_string(),
                alone("SettlesAwayFromOne")
            ),
        ]
    );
    let first_only = check(&model, &both, &options()).unwrap();
    assert_eq!(first_only.outcome, report.outcome);
    assert!(first_only.temporal_violations.is_empty());
}
