//! Scale: a liveness check keeps its graph in a few bytes a state, at TLC's counts.

use loadbearing_expected::run::run;
use loadbearing_expected::suite::{self, override_constants, parse_set};
use loadbearing_refinement::{Options, Outcome};

/// Cassandra at MaxOffset=10 with every property, `RefLive` and `OwnerReachesEnd` included: the
/// liveness graph (fingerprints, flat successor ids, fair-group bits, property bits) must stay
/// within the 64 bytes a state a run with liveness may cost in all, at TLC's count.
#[test]
fn the_liveness_graph_costs_few_bytes_a_state_at_tlcs_count() {
    let configs = suite::built_in().expect("the shipped suite loads");
    let mut config = suite::find(&configs, "kafka-flow-828/cassandra_refines")
        .unwrap()
        .clone();
    override_constants(&mut config, &[parse_set("MaxOffset=10").unwrap()]).unwrap();
    let judged = run(&config, &Options::default()).unwrap();
    let report = &judged.report;
    assert_eq!(*report.outcome(), Outcome::Holds);
    // TLC 2.15 on Cassandra.tla at MaxOffset=10, every property.
    assert_eq!(report.distinct_states(), 161_281);
    let per_state = report.graph_bytes() as f64 / report.distinct_states() as f64;
    assert!(
        per_state <= 48.0,
        "{per_state:.1} graph bytes a state (targets, groups, offsets, fingerprints)"
    );
    assert!(report.graph_bytes() > 0, "the check built a liveness graph");
}

/// Symmetry: the orbits counted equal TLC's under `SYMMETRY Permutations(Writers)` (TLC 2.15,
/// the reference cfg with a wrapper module declaring the permutations), verdicts unchanged.
#[test]
fn symmetry_counts_the_orbits_tlc_counts() {
    let tlc = [
        ("kafka-flow-828/casfw_3w", &[][..], 294),
        ("kafka-flow-828/casfw_reap", &[][..], 105),
        ("kafka-flow-828/casfw_refines", &[][..], 105),
        (
            "kafka-flow-828/casfw_3w",
            &["Writers=5", "MaxOffset=3"][..],
            17_832,
        ),
    ];
    let configs = suite::built_in().expect("the shipped suite loads");
    for (name, sets, orbits) in tlc {
        let mut config = suite::find(&configs, name).unwrap().clone();
        let sets: Vec<_> = sets.iter().map(|s| parse_set(s).unwrap()).collect();
        override_constants(&mut config, &sets).unwrap();
        config.symmetry = vec!["Writers".into()];
        let judged = run(&config, &Options::default()).unwrap();
        assert_eq!(*judged.report.outcome(), Outcome::Holds, "{name} {sets:?}");
        assert_eq!(judged.report.distinct_states(), orbits, "{name} {sets:?}");
    }
}

/// A counterexample found on orbits is shown as a concrete behaviour: the same length and
/// property as without symmetry, every step a step of the model.
#[test]
fn a_counterexample_under_symmetry_is_a_concrete_path() {
    let configs = suite::built_in().expect("the shipped suite loads");
    let plain = suite::find(&configs, "kafka-flow-828/casfw_unguarded")
        .unwrap()
        .clone();
    let mut reduced = plain.clone();
    reduced.symmetry = vec!["Writers".into()];
    let with = run(&reduced, &Options::default()).unwrap();
    let without = run(&plain, &Options::default()).unwrap();
    assert_eq!(with.report.outcome(), without.report.outcome());
    assert!(with.report.distinct_states() < without.report.distinct_states());
    let shown = with.report.counterexample().expect("a counterexample");
    let unreduced = without.report.counterexample().unwrap();
    assert_eq!(shown.steps.len(), unreduced.steps.len());
    let model = with
        .report
        .model::<loadbearing_specs::first_write::compound::CasFirstWrite>()
        .unwrap();
    let path = &with
        .report
        .typed::<loadbearing_specs::first_write::compound::CasFirstWrite>()
        .unwrap()
        .counterexample
        .as_ref()
        .unwrap()
        .path;
    use loadbearing_refinement::Model;
    assert!(model.init_states().contains(path.init()));
    let mut before = path.init();
    for (action, after) in path.steps() {
        assert_eq!(model.next_state(before, *action).as_ref(), Some(after));
        before = after;
    }
}

/// The models' representatives and orbit sizes agree with their permutations on every
/// reachable state, for the compound protocol and the atomic spec it refines.
#[test]
fn each_model_names_one_representative_per_orbit() {
    use loadbearing_refinement::symmetry::check_canonical;
    use loadbearing_specs::first_write::atomic::CasFirstWriteAtomic;
    use loadbearing_specs::first_write::compound::CasFirstWrite;
    let configs = suite::built_in().expect("the shipped suite loads");
    let config = suite::find(&configs, "kafka-flow-828/casfw_3w").unwrap();
    let model: CasFirstWrite =
        loadbearing_specs::Configured::from_knobs(&config.constants).unwrap();
    let states = reachable(&model);
    assert_eq!(states.len(), 1431);
    check_canonical(&model, 0, &states).unwrap();
    let atomic = CasFirstWriteAtomic {
        writers: 4,
        max_offset: 3,
        guarded: true,
        reap: true,
    };
    let states = reachable(&atomic);
    assert!(states.len() > 1000, "{} atomic states", states.len());
    check_canonical(&atomic, 0, &states).unwrap();
}

/// Every state `model` reaches, breadth first.
fn reachable<M: loadbearing_refinement::Model>(model: &M) -> Vec<M::State>
where
    M::State: Clone + std::hash::Hash + Eq,
{
    let mut states = model.init_states();
    let mut seen: std::collections::HashSet<_> = states.iter().cloned().collect();
    let mut i = 0;
    while i < states.len() {
        let mut actions = Vec::new();
        model.actions(&states[i], &mut actions);
        for a in actions {
            if let Some(next) = model.next_state(&states[i], a) {
                if seen.insert(next.clone()) {
                    states.push(next);
                }
            }
        }
        i += 1;
    }
    states
}

/// A config that asks for no symmetry, of a model that declares one, is searched one state an
/// orbit, each orbit counted as its states: every first-write config of both suites, at the
/// suite's constants and at four writers, gives the counts, depth, verdict, counterexample,
/// witnesses and budget stop of the search of every state (`by_orbits: false`), while
/// searching fewer.
#[test]
fn a_search_by_orbits_counts_every_state() {
    let configs = suite::built_in().expect("the shipped suite loads");
    let first_write: Vec<_> = configs
        .iter()
        .filter(|c| c.model == "CasFirstWrite")
        .collect();
    assert!(first_write.len() >= 15, "{} configs", first_write.len());
    let mut searched_by_orbits = 0;
    for config in first_write {
        for (sets, max_states) in [
            (&[][..], None),
            (&["Writers=4", "MaxOffset=3"][..], None),
            (&["Writers=4", "MaxOffset=3"][..], Some(20_000)),
        ] {
            let mut config = config.clone();
            let sets: Vec<_> = sets.iter().map(|s| parse_set(s).unwrap()).collect();
            override_constants(&mut config, &sets).unwrap();
            let answer = |by_orbits: bool| {
                let options = Options {
                    by_orbits,
                    max_states,
                    ..Options::default()
                };
                let report = run(&config, &options).unwrap().report;
                let answer = (
                    report.outcome().clone(),
                    report.distinct_states(),
                    report.generated(),
                    report.depth(),
                    format!("{:?}", report.counterexample()),
                    format!("{:?}", report.witnesses()),
                );
                (answer, report.orbits())
            };
            let (every, none) = answer(false);
            assert_eq!(none, None, "{} {sets:?}: no orbits asked", config.label);
            let (by_orbits, orbits) = answer(true);
            assert_eq!(by_orbits, every, "{} {sets:?}", config.label);
            if let Some(orbits) = orbits {
                assert!(
                    orbits < every.1,
                    "{} {sets:?}: {orbits} orbits",
                    config.label
                );
                searched_by_orbits += 1;
            }
        }
    }
    // Those with a refinement are searched state by state.
    assert!(searched_by_orbits >= 30, "{searched_by_orbits} by orbits");
}

/// A symmetry the model does not declare is named as unknown, with those it has.
#[test]
fn an_unknown_symmetry_is_a_clear_error() {
    let configs = suite::built_in().expect("the shipped suite loads");
    let mut casfw = suite::find(&configs, "kafka-flow-828/casfw_3w")
        .unwrap()
        .clone();
    casfw.symmetry = vec!["Keys".into()];
    let unknown = run(&casfw, &Options::default())
        .err()
        .expect("refused")
        .to_string();
    assert!(
        unknown.contains("unknown symmetry `Keys`") && unknown.contains("Writers"),
        "{unknown}"
    );
}

/// Every core claims new states in the one visited set at once; the first in frontier order
/// keeps each, whichever core is first. So a check gives the same counts, the same
/// counterexample and the same witnesses on every thread count, liveness lassos (whose graph
/// ids follow those claims) included. The configs are widened until their levels span many
/// chunks, where the cores' claims meet on the same states; more threads than cores interleave
/// them further.
#[test]
fn every_thread_count_gives_the_same_answer() {
    let cases: &[(&str, &[&str], Outcome)] = &[
        // A fair lasso on a graph of 257,066 states.
        (
            "kafka-flow-835/kafka_genlag",
            &[],
            Outcome::Violates("RefLive".into()),
        ),
        // An invariant broken at depth 4 of a wide search.
        (
            "kafka-flow-828/gc_ungated",
            &["N=6", "Cap=3"],
            Outcome::Violates("INV_OffsetWithinDurable".into()),
        ),
        // Termination violated under no fairness, 15 steps deep at the suite's constants.
        (
            "kafka-flow-828/gc_nofair",
            &["N=5", "Cap=3"],
            Outcome::Violates("Termination".into()),
        ),
        // Holds: every state and every witness.
        (
            "kafka-flow-828/sws_holds",
            &["Keys=2", "MaxOffset=4"],
            Outcome::Holds,
        ),
    ];
    let configs = suite::built_in().expect("the shipped suite loads");
    for (name, sets, outcome) in cases {
        let mut config = suite::find(&configs, name).unwrap().clone();
        let sets: Vec<_> = sets.iter().map(|s| parse_set(s).unwrap()).collect();
        override_constants(&mut config, &sets).unwrap();
        let answers: Vec<_> = [1, 2, 5]
            .into_iter()
            .map(|threads| {
                let options = Options {
                    threads,
                    ..Options::default()
                };
                let report = run(&config, &options).unwrap().report;
                assert_eq!(report.outcome(), outcome, "{name} on {threads} threads");
                (
                    report.distinct_states(),
                    report.generated(),
                    report.depth(),
                    format!("{:?}", report.counterexample()),
                    format!("{:?}", report.witnesses()),
                )
            })
            .collect();
        assert_eq!(answers[0], answers[1], "{name}: 1 and 2 threads");
        assert_eq!(answers[0], answers[2], "{name}: 1 and 5 threads");
    }
}

/// The bench's row without the orbits visits every state of the search it would otherwise
/// search by orbits, and is held against the floor of as many fingerprint inserts.
#[test]
fn the_bench_measures_every_state_against_the_floor() {
    let out = crate::common::loadbearing(&[
        "bench",
        "--threads",
        "1",
        "--timely",
        "--repeat",
        "1",
        "every-state",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("casfw_reap"))
        .collect();
    assert_eq!(rows.len(), 2, "one row and its floor: {stdout}");
    let row = crate::common::collapse(rows[0]);
    assert!(
        row.starts_with("casfw_reap every-state Writers=4 MaxOffset=5 local 1 holds 1239666 "),
        "{stdout}"
    );
    assert!(
        !stdout.contains("searched by orbits"),
        "every state visited, none by orbits: {stdout}"
    );
    assert!(
        rows[1].starts_with("casfw_reap every-state Writers=4 MaxOffset=5: floor ")
            && rows[1].ends_with(" 1,239,666 inserts into a hash set grown from empty"),
        "{stdout}"
    );
}
