//! The registry of models (`loadbearing-registry`): every model a config may name builds from
//! every edge of its knobs, every guard removes a knob of the shipped design, and the table of
//! models that read traces names each once.

use loadbearing_registry::{conformance, conformance_models, models};
use loadbearing_specs::infra::guard::check_guards;
use loadbearing_specs::infra::knobs::{Constants, Kind, Knob, Value};

#[test]
fn the_conformance_table_names_every_trace_model_once() {
    let names = conformance_models();
    assert_eq!(
        names,
        [
            "Cassandra",
            "Kafka",
            "Epoch",
            "CasFirstWrite",
            "ReplayFence",
            "GroupCommit",
            "SSI",
            "FlowsAlive",
            "FlushCell",
            "RecoveryDeadline",
            "TokenSync",
            "GroupCommitLanes",
            "RecoveryRead",
            "Cassandra835",
            "CassandraActors",
            "KafkaActors",
            "EpochActors",
            "GroupCommitActors",
            "SSIActors",
            "CasFirstWriteAtomic"
        ]
    );
    assert!(names.iter().all(|n| conformance(n).is_some()));
    assert!(conformance("SingleWriterStore").is_none());
}

/// Every value a knob's declaration allows at its edges: both ends of a range, both
/// settings of a flag, every choice.
fn edge_values(knob: &Knob) -> Vec<Value> {
    match knob.kind {
        Kind::Nat { min, max, .. } => vec![Value::Nat(min), Value::Nat(max)],
        Kind::Bool { .. } | Kind::Follows { .. } => {
            vec![Value::Bool(false), Value::Bool(true)]
        }
        Kind::Choice { choices, .. } => {
            choices.iter().map(|c| Value::Name(c.to_string())).collect()
        }
    }
}

/// A model that reads a knob it does not list, or lists a choice it cannot read, fails here
/// (the typed reads return an error), for every model and every edge value of every knob.
#[test]
fn every_model_builds_from_every_edge_of_every_knob() {
    let mut built = 0;
    for entry in models() {
        let defaults = (entry.resolve)(&Constants::new())
            .unwrap_or_else(|e| panic!("{}: defaults: {e}", entry.name));
        assert_eq!(defaults.values().len(), entry.knobs.len(), "{}", entry.name);
        for knob in entry.knobs {
            for value in edge_values(knob) {
                let given = Constants::from([(knob.name.to_string(), value.clone())]);
                // Resolving builds the model's parameters from every knob.
                let resolved = (entry.resolve)(&given)
                    .unwrap_or_else(|e| panic!("{} with {}={value}: {e}", entry.name, knob.name));
                assert_eq!(resolved.values().get(knob.name), Some(&value));
                built += 1;
            }
        }
    }
    for name in conformance_models() {
        let entry = conformance(name).unwrap();
        (entry.resolve)(&Constants::new()).unwrap_or_else(|e| panic!("{name}: defaults: {e}"));
    }
    assert!(built >= 90, "only {built} builds");
}

#[test]
fn knob_names_are_distinct_within_a_model() {
    for entry in models() {
        let mut names: Vec<&str> = entry.knobs.iter().map(|k| k.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), entry.knobs.len(), "{}", entry.name);
    }
}

/// The guards name declared knobs with their kind (also a compile-time check in `entry`),
/// the defaults are the shipped design with every guard in place, and removing any one guard
/// still makes a model.
#[test]
fn every_guard_removes_a_declared_knob_from_the_shipped_design() {
    let mut guards = 0;
    for entry in models() {
        check_guards(entry.knobs, entry.guards);
        let defaults = (entry.resolve)(&Constants::new()).unwrap();
        for guard in entry.guards {
            assert!(
                !guard.is_removed_in(&defaults),
                "{}: the defaults already remove {}",
                entry.name,
                guard.name()
            );
            let (knob, value) = guard.removing_set();
            let removed = (entry.resolve)(&Constants::from([(knob, value)]))
                .unwrap_or_else(|e| panic!("{} without {}: {e}", entry.name, guard.name()));
            assert!(guard.is_removed_in(&removed), "{}", guard.name());
            guards += 1;
        }
    }
    assert!(guards >= 19, "only {guards} guards checked");
}
