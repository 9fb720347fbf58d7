//! The generated docs under `docs/` are those the configs and snapshots make today: a changed
//! config, model doc comment or counterexample fails here until `cargo run -- docs` is run.

use loadbearing::docs;
use loadbearing::suite::{self, Config};
use loadbearing::trace::expects_failure;

fn configs() -> Vec<Config> {
    suite::load(&suite::default_path()).expect("the shipped suite loads")
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
        let snapshot = docs::snapshot(&config.name).unwrap();
        assert!(
            page.contains(&snapshot),
            "{}: its counterexample is not on {}",
            config.name,
            docs::model_page(config.model)
        );
        assert!(page.contains(&format!("### `{}`", config.name)));
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
