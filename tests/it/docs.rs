//! The generated docs under `docs/` are those the configs and snapshots make today: a changed
//! config, model doc comment or counterexample fails here until `cargo run -- docs` is run.

use loadbearing::docs;
use loadbearing::trace::expects_failure;
use loadbearing_expected::suite::{self, Config};
use loadbearing_registry as registry;

fn configs() -> Vec<Config> {
    suite::built_in().expect("the shipped suite loads")
}

#[test]
fn the_generated_docs_are_up_to_date() {
    let stale = docs::stale(&configs()).unwrap();
    assert!(
        stale.is_empty(),
        "out of date: {stale:?}\nregenerate with `cargo run -- docs` (the tower SVG needs \
         Graphviz's `dot`) and commit docs/"
    );
}

#[test]
fn every_must_fail_config_shows_its_counterexample_on_its_model_page() {
    let configs = configs();
    let files = docs::generate(&configs).unwrap();
    for config in configs.iter().filter(|c| expects_failure(c)) {
        let page = &files[&docs::model_page(config.model)];
        let snapshot = docs::snapshot(config).unwrap();
        assert!(
            page.contains(&snapshot),
            "{}: its counterexample is not on {}",
            config.name,
            docs::model_page(config.model)
        );
        // A name two suites share is headed by its label, the suite's address.
        assert!(page.contains(&format!("### `{}`", config.label)));
    }
}

#[test]
fn the_tower_draws_every_refinement_the_suite_checks() {
    let configs = configs();
    let dot = docs::tower_dot(&configs).unwrap();
    for (from, to) in [
        ("Cassandra", "SingleWriterStore"),
        ("Kafka", "SingleWriterStore"),
        ("Epoch", "SingleWriterStore"),
        ("CasFirstWrite", "CasFirstWriteAtomic"),
    ] {
        assert!(
            dot.contains(&format!("\"{from}\" -> \"{to}\"")),
            "{from} -> {to} missing:\n{dot}"
        );
    }
    assert!(dot.contains("✗ epoch_refines"), "{dot}");
    assert!(
        dot.contains("✗ cassandra_unguarded (Guarded=false)"),
        "{dot}"
    );
    let svg = std::fs::read_to_string(docs::root().join("docs/tower.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains(&docs::source_stamp(&dot)));
}

#[test]
fn every_model_page_carries_the_description_compiled_into_the_binary() {
    let files = docs::generate(&configs()).unwrap();
    for entry in registry::models() {
        let page = &files[&docs::model_page(entry.name)];
        let (model, configs) = docs::split_description(entry.doc);
        assert!(
            !model.is_empty() && page.contains(model) && configs.is_none_or(|c| page.contains(c)),
            "{}: its page does not carry its description",
            entry.name
        );
    }
}

/// A model's description is the one place a newcomer reads the model: it has the sections the
/// Rust is read against and names every property any config of the model can check.
#[test]
fn every_model_description_covers_its_variables_actions_fairness_and_properties() {
    let configs = configs();
    for entry in registry::models() {
        let doc = entry.doc;
        for section in ["## Variables", "## Actions", "## Fairness", "## Properties"] {
            assert!(
                doc.contains(section),
                "{}: its description has no `{section}` section",
                entry.name
            );
        }
        for config in configs.iter().filter(|c| c.model == entry.name) {
            for property in (entry.properties)(&config.constants) {
                assert!(
                    doc.contains(&format!("`{property}`")),
                    "{}: its description does not say what `{property}` (checkable by {}) means",
                    entry.name,
                    config.name
                );
            }
        }
    }
}

/// The configs a description talks about are configs of the suite: a renamed or removed config
/// fails here instead of leaving the page describing something that is not checked.
#[test]
fn every_config_a_model_description_names_is_in_the_suite() {
    let configs = configs();
    for entry in registry::models() {
        let prefixes: Vec<String> = configs
            .iter()
            .filter(|c| c.model == entry.name)
            .filter_map(|c| c.name.split_once('_').map(|(head, _)| format!("{head}_")))
            .collect();
        for quoted in entry.doc.split('`').skip(1).step_by(2) {
            let looks_like_config = prefixes.iter().any(|p| quoted.starts_with(p.as_str()))
                && quoted
                    .chars()
                    .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '_');
            if looks_like_config && !quoted.ends_with('_') {
                assert!(
                    configs.iter().any(|c| c.name == quoted),
                    "{}: its description names `{quoted}`, which is no config of the suite",
                    entry.name
                );
            }
        }
    }
}
