//! Every configurable model by name, behind one object-safe face, so a config file can name a
//! model and the CLI can check it without knowing its types.

use std::sync::Arc;

use loadbearing_refinement::check::{property_names, temporal_property_names};
use loadbearing_refinement::distributed::{self, Worker};
use loadbearing_refinement::view::{view, View};
use loadbearing_refinement::{check, erase, AnyReport, CheckSpec, Options, SpecError};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::cas_first_write::CasFirstWrite;
use crate::cas_first_write_atomic::CasFirstWriteAtomic;
use crate::cassandra::Cassandra;
use crate::cassandra_835::Cassandra835;
use crate::cassandra_actors::CassandraActors;
use crate::epoch::Epoch;
use crate::epoch_actors::EpochActors;
use crate::flows_alive::FlowsAlive;
use crate::flush_cell::FlushCell;
use crate::group_commit::GroupCommit;
use crate::group_commit_actors::GroupCommitActors;
use crate::group_commit_lanes::GroupCommitLanes;
use crate::guard::check_guards;
use crate::kafka::Kafka;
use crate::kafka_835::Kafka835;
use crate::kafka_actors::KafkaActors;
use crate::knobs::{Constants, Knob, KnobError, Params, Resolved};
use crate::recovery_deadline::RecoveryDeadline;
use crate::recovery_read::RecoveryRead;
use crate::recovery_read_atomic::RecoveryReadAtomic;
use crate::replay_fence::ReplayFence;
use crate::single_writer_store::SingleWriterStore;
use crate::ssi::Ssi;
use crate::ssi_actors::SsiActors;
use crate::token_sync::TokenSync;
use crate::{Configured, Guard, Under};
use loadbearing_refinement::conform::{
    parse_ndjson, validate, Conform, Limits, TraceError, Verdict,
};

/// Checks constants against a model's knobs and builds its parameters from them: the one place
/// a bad `--set` or suite value becomes an error.
pub type Resolve = fn(&Constants) -> Result<Resolved, KnobError>;

/// Checks the model a config's constants build, behind the registry's one face.
pub type CheckFn = fn(&Resolved, &CheckSpec, &Options) -> Result<Box<dyn AnyReport>, SpecError>;

/// Checks the model a config's constants build on one worker of a distributed run (every
/// worker of the run makes the same call), for models whose states can travel between
/// processes.
pub type DistributedFn =
    fn(&mut Worker, &Resolved, &CheckSpec, &Options) -> Result<Box<dyn AnyReport>, SpecError>;

pub struct ModelEntry {
    pub name: &'static str,
    /// The model's description (`Configured::DOC`), compiled in.
    pub doc: &'static str,
    pub knobs: &'static [Knob],
    pub guards: &'static [Guard],
    /// The backends whose atomic step this model spells out (`Configured::UNDER`).
    pub under: &'static [Under],
    pub resolve: Resolve,
    /// Checks the model the constants build; the report hides the model's types (a caller
    /// that knows them takes the typed report back with `typed`).
    pub check: CheckFn,
    /// The distributed check, when the model's states can be sent between processes (not the
    /// actor models: Stateright's actor states cannot be read back).
    pub distributed: Option<DistributedFn>,
    pub properties: fn(&Resolved) -> Vec<String>,
    /// The temporal ones among them, which the distributed engine refuses.
    pub temporal: fn(&Resolved) -> Vec<String>,
    pub fairness: fn(&Resolved) -> Vec<String>,
    /// The model for people: Stateright's explorer, explorer paths, the state graph.
    pub view: fn(&Resolved, &CheckSpec) -> Box<dyn View>,
}

/// The model that constants made by its own [`ModelEntry::resolve`] describe. That already built
/// its parameters from them once, so building it again cannot fail.
fn model<M: Configured>(knobs: &Resolved) -> M {
    M::from_knobs(knobs).expect("constants this model resolved build it")
}

fn resolve<M: Configured>(given: &Constants) -> Result<Resolved, KnobError> {
    Resolved::resolve::<M::Params>(M::NAME, given)
}

fn entry<M: Configured>() -> ModelEntry {
    // Every guard names a knob the model declares, with its kind: a compile-time error otherwise.
    const { check_guards(<M::Params as Params>::KNOBS, M::GUARDS) };
    ModelEntry {
        name: M::NAME,
        doc: M::DOC,
        knobs: <M::Params as Params>::KNOBS,
        guards: M::GUARDS,
        under: M::UNDER,
        resolve: resolve::<M>,
        check: |knobs, spec, options| {
            let model = Arc::new(model::<M>(knobs));
            let report = check(model.as_ref(), spec, options)?;
            Ok(erase(model, report))
        },
        distributed: None,
        properties: |knobs| property_names(&model::<M>(knobs)),
        temporal: |knobs| temporal_property_names(&model::<M>(knobs)),
        fairness: |knobs| model::<M>(knobs).fairness_groups(),
        view: |knobs, spec| view(model::<M>(knobs), spec),
    }
}

/// `entry`, for a model whose states serialize: it can also be checked distributed.
fn shardable<M>() -> ModelEntry
where
    M: Configured,
    M::State: Serialize + DeserializeOwned,
{
    ModelEntry {
        distributed: Some(|worker, knobs, spec, options| {
            let model = Arc::new(model::<M>(knobs));
            let report = distributed::check_on(worker, model.as_ref(), spec, options)?;
            Ok(erase(model, report))
        }),
        ..entry::<M>()
    }
}

/// The models a config may name. CasFirstWriteAtomic is a refinement target only.
pub fn models() -> Vec<ModelEntry> {
    vec![
        shardable::<SingleWriterStore>(),
        shardable::<Cassandra>(),
        shardable::<Kafka>(),
        shardable::<Epoch>(),
        shardable::<CasFirstWrite>(),
        shardable::<ReplayFence>(),
        shardable::<GroupCommit>(),
        shardable::<Ssi>(),
        entry::<CassandraActors>(),
        entry::<KafkaActors>(),
        entry::<EpochActors>(),
        entry::<GroupCommitActors>(),
        entry::<SsiActors>(),
        // The #835 suite's models with no counterpart in the tower.
        shardable::<FlowsAlive>(),
        shardable::<FlushCell>(),
        shardable::<RecoveryDeadline>(),
        shardable::<TokenSync>(),
        shardable::<GroupCommitLanes>(),
        shardable::<RecoveryReadAtomic>(),
        shardable::<RecoveryRead>(),
        shardable::<Cassandra835>(),
        shardable::<Kafka835>(),
    ]
}

/// Reads an NDJSON trace in the model's vocabulary and validates it against the model built
/// from constants, for the models that read implementation events. A malformed line (another
/// vocabulary, an unknown action, a missing field, a wrong version) is an error naming it.
pub type ConformFn = fn(&Resolved, &str, Limits) -> Result<Verdict, TraceError>;

/// A model an implementation trace can be checked against, with its constants.
struct ConformEntry {
    name: &'static str,
    resolve: Resolve,
    conform: ConformFn,
}

fn conform_entry<M: Configured + Conform>() -> ConformEntry {
    ConformEntry {
        name: M::NAME,
        resolve: resolve::<M>,
        conform: |knobs, ndjson, limits| {
            let events = parse_ndjson::<M::Event>(ndjson)?;
            Ok(validate(&model::<M>(knobs), &events, limits))
        },
    }
}

/// The one list of models that read implementation traces (in `models()` order, then the
/// refinement-only CasFirstWriteAtomic).
fn conformance_entries() -> [ConformEntry; 20] {
    [
        conform_entry::<Cassandra>(),
        conform_entry::<Kafka>(),
        conform_entry::<Epoch>(),
        conform_entry::<CasFirstWrite>(),
        conform_entry::<ReplayFence>(),
        conform_entry::<GroupCommit>(),
        conform_entry::<Ssi>(),
        conform_entry::<FlowsAlive>(),
        conform_entry::<FlushCell>(),
        conform_entry::<RecoveryDeadline>(),
        conform_entry::<TokenSync>(),
        conform_entry::<GroupCommitLanes>(),
        conform_entry::<RecoveryRead>(),
        conform_entry::<Cassandra835>(),
        conform_entry::<CassandraActors>(),
        conform_entry::<KafkaActors>(),
        conform_entry::<EpochActors>(),
        conform_entry::<GroupCommitActors>(),
        conform_entry::<SsiActors>(),
        conform_entry::<CasFirstWriteAtomic>(),
    ]
}

/// The models an implementation trace can be checked against: how to resolve their constants,
/// and the validator.
pub fn conformance(name: &str) -> Option<(Resolve, ConformFn)> {
    conformance_entries()
        .into_iter()
        .find(|e| e.name == name)
        .map(|e| (e.resolve, e.conform))
}

/// The models that read implementation traces.
pub fn conformance_models() -> Vec<&'static str> {
    conformance_entries().into_iter().map(|e| e.name).collect()
}

pub fn find(name: &str) -> Option<ModelEntry> {
    models().into_iter().find(|m| m.name == name)
}

/// The description of a model no config names, which is only the abstract side of a
/// refinement (CasFirstWriteAtomic): it has no page of its own, so the page of the model that
/// refines it carries it.
pub fn refinement_target_doc(name: &str) -> Option<&'static str> {
    [(CasFirstWriteAtomic::NAME, CasFirstWriteAtomic::DOC)]
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, doc)| doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knobs::{Kind, Value};

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
                    let resolved = (entry.resolve)(&given).unwrap_or_else(|e| {
                        panic!("{} with {}={value}: {e}", entry.name, knob.name)
                    });
                    assert_eq!(resolved.values().get(knob.name), Some(&value));
                    built += 1;
                }
            }
        }
        for name in conformance_models() {
            let (resolve, _) = conformance(name).unwrap();
            resolve(&Constants::new()).unwrap_or_else(|e| panic!("{name}: defaults: {e}"));
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
}
