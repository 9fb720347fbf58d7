//! Every configurable model by name, behind one object-safe face, so a config file can name a
//! model and the CLI can check it without knowing its types.

use std::sync::Arc;

use loadbearing_refinement::check::property_names;
use loadbearing_refinement::view::{view, View};
use loadbearing_refinement::{check, erase, AnyReport, CheckSpec, Options, SpecError};

use crate::cas_first_write::CasFirstWrite;
use crate::cas_first_write_atomic::CasFirstWriteAtomic;
use crate::cassandra::Cassandra;
use crate::cassandra_actors::CassandraActors;
use crate::epoch::Epoch;
use crate::flows_alive::FlowsAlive;
use crate::flush_cell::FlushCell;
use crate::group_commit::GroupCommit;
use crate::kafka::Kafka;
use crate::kafka_actors::KafkaActors;
use crate::knobs::{Knob, Resolved};
use crate::recovery_deadline::RecoveryDeadline;
use crate::replay_fence::ReplayFence;
use crate::single_writer_store::SingleWriterStore;
use crate::ssi::Ssi;
use crate::{Configured, Guard};
use loadbearing_refinement::conform::{
    parse_ndjson, validate, Conform, Limits, TraceError, Verdict,
};

/// Checks the model a config's constants build, behind the registry's one face.
pub type CheckFn = fn(&Resolved, &CheckSpec, &Options) -> Result<Box<dyn AnyReport>, SpecError>;

pub struct ModelEntry {
    pub name: &'static str,
    /// The model's description (`Configured::DOC`), compiled in.
    pub doc: &'static str,
    pub knobs: &'static [Knob],
    pub guards: &'static [Guard],
    /// Checks the model the constants build; the report hides the model's types (a caller
    /// that knows them takes the typed report back with `typed`).
    pub check: CheckFn,
    pub properties: fn(&Resolved) -> Vec<String>,
    pub fairness: fn(&Resolved) -> Vec<String>,
    /// The model for people: Stateright's explorer, explorer paths, the state graph.
    pub view: fn(&Resolved, &CheckSpec) -> Box<dyn View>,
}

fn entry<M: Configured>() -> ModelEntry {
    ModelEntry {
        name: M::NAME,
        doc: M::DOC,
        knobs: M::KNOBS,
        guards: M::GUARDS,
        check: |knobs, spec, options| {
            let model = Arc::new(M::from_knobs(knobs));
            let report = check(model.as_ref(), spec, options)?;
            Ok(erase(model, report))
        },
        properties: |knobs| property_names(&M::from_knobs(knobs)),
        fairness: |knobs| M::from_knobs(knobs).fairness_groups(),
        view: |knobs, spec| view(M::from_knobs(knobs), spec),
    }
}

/// The models a config may name. CasFirstWriteAtomic is a refinement target only.
pub fn models() -> Vec<ModelEntry> {
    vec![
        entry::<SingleWriterStore>(),
        entry::<Cassandra>(),
        entry::<Kafka>(),
        entry::<Epoch>(),
        entry::<CasFirstWrite>(),
        entry::<ReplayFence>(),
        entry::<GroupCommit>(),
        entry::<Ssi>(),
        entry::<CassandraActors>(),
        entry::<KafkaActors>(),
        // The #835 suite's models with no counterpart in the tower.
        entry::<FlowsAlive>(),
        entry::<FlushCell>(),
        entry::<RecoveryDeadline>(),
    ]
}

/// Reads an NDJSON trace in the model's vocabulary and validates it against the model built
/// from constants, for the models that read implementation events. A malformed line (another
/// vocabulary, an unknown action, a missing field, a wrong version) is an error naming it.
pub type ConformFn = fn(&Resolved, &str, Limits) -> Result<Verdict, TraceError>;

/// A model an implementation trace can be checked against, with its constants.
struct ConformEntry {
    name: &'static str,
    knobs: &'static [Knob],
    conform: ConformFn,
}

fn conform_entry<M: Configured + Conform>() -> ConformEntry {
    ConformEntry {
        name: M::NAME,
        knobs: M::KNOBS,
        conform: |knobs, ndjson, limits| {
            let events = parse_ndjson::<M::Event>(ndjson)?;
            Ok(validate(&M::from_knobs(knobs), &events, limits))
        },
    }
}

/// The one list of models that read implementation traces (in `models()` order, then the
/// refinement-only CasFirstWriteAtomic).
fn conformance_entries() -> [ConformEntry; 8] {
    [
        conform_entry::<Cassandra>(),
        conform_entry::<Kafka>(),
        conform_entry::<Epoch>(),
        conform_entry::<CasFirstWrite>(),
        conform_entry::<ReplayFence>(),
        conform_entry::<GroupCommit>(),
        conform_entry::<Ssi>(),
        conform_entry::<CasFirstWriteAtomic>(),
    ]
}

/// The models an implementation trace can be checked against, with their constants.
pub fn conformance(name: &str) -> Option<(&'static [Knob], ConformFn)> {
    conformance_entries()
        .into_iter()
        .find(|e| e.name == name)
        .map(|e| (e.knobs, e.conform))
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
                "CasFirstWriteAtomic"
            ]
        );
        assert!(names.iter().all(|n| conformance(n).is_some()));
        assert!(conformance("SingleWriterStore").is_none());
    }
}
