//! Every model types its own variables (`Shown`: the text people read, the value machines read),
//! and nothing parses the text back. Held here to an oracle, the parse the CLI once applied to
//! every value (`typed_oracle`): on every state of every suite config small enough to walk, the
//! model's typed value is what the oracle reads from its text, so the JSON kept its shape.

use std::collections::BTreeMap;

use loadbearing::trace::view_of;
use loadbearing::Shown;
use loadbearing_expected::suite::{self, Config};
use loadbearing_refinement::view::{ShownGraph, ViewError};
use loadbearing_specs::infra::knobs::Value;

use crate::typed_oracle::typed;

/// The most states a config's graph is walked to; larger configs are left to their smaller
/// siblings (every model has one).
const MAX_STATES: usize = 20_000;

/// Where a model's typed value and the oracle's reading of its text differ.
fn disagreement(name: &str, value: &Shown) -> Option<String> {
    let oracle = typed(value.text());
    (oracle != *value.typed()).then(|| {
        format!(
            "{name} = {}: the model types it {}, its text reads {oracle}",
            value.text(),
            value.typed()
        )
    })
}

/// The config's whole state graph, or with a shorter log (`MaxOffset` 2, then 1) when the
/// config's is past `MAX_STATES`; `None` when that is too large as well.
fn walk(config: &Config) -> Option<ShownGraph> {
    match view_of(config).graph(None, MAX_STATES) {
        Ok(graph) => return Some(graph),
        Err(ViewError::TooManyStates(_)) => {}
        Err(e) => panic!("{}: {e}", config.name),
    }
    [2, 1].into_iter().find_map(|max_offset| {
        let mut shorter = config.clone();
        let set = [("MaxOffset".to_string(), Value::Nat(max_offset))];
        suite::override_constants(&mut shorter, &set).ok()?;
        match view_of(&shorter).graph(None, MAX_STATES) {
            Ok(graph) => Some(graph),
            Err(ViewError::TooManyStates(_)) => None,
            Err(e) => panic!("{} with MaxOffset={max_offset}: {e}", config.name),
        }
    })
}

#[test]
fn every_models_typed_values_are_what_their_text_reads() {
    let configs = suite::built_in_shared().expect("the shipped suites load");
    let mut states_by_model: BTreeMap<&str, usize> = BTreeMap::new();
    let mut disagreements = Vec::new();
    for config in configs {
        let graph = match walk(config) {
            Some(graph) => graph,
            None => continue,
        };
        *states_by_model.entry(config.model).or_default() += graph.states.len();
        for state in &graph.states {
            for (name, value) in state {
                if let Some(d) = disagreement(name, value) {
                    disagreements.push(format!("{} ({}): {d}", config.name, config.model));
                }
            }
        }
    }
    disagreements.dedup();
    assert!(
        disagreements.is_empty(),
        "{} disagreements, the first:\n{}",
        disagreements.len(),
        disagreements[..disagreements.len().min(20)].join("\n")
    );
    // Every model of the suites was walked (a check that walks nothing agrees with everything).
    let models: std::collections::BTreeSet<&str> = configs.iter().map(|c| c.model).collect();
    let unwalked: Vec<&&str> = models
        .iter()
        .filter(|m| !states_by_model.contains_key(*m))
        .collect();
    assert!(unwalked.is_empty(), "no config small enough: {unwalked:?}");
}

/// The oracle has teeth: a value typed as a phrase whose text reads as a set, or a number
/// shown as a name, is a disagreement.
#[test]
fn a_value_typed_other_than_its_text_reads_is_caught() {
    assert!(disagreement("ownerState", &Shown::name("{1,2}")).is_some());
    assert!(disagreement("ownerPos", &Shown::name("7")).is_some());
    assert!(disagreement("ownerState", &Shown::set([1u8, 2])).is_none());
    assert!(disagreement("op", &Shown::sequence([Shown::name("persist")])).is_none());
}
