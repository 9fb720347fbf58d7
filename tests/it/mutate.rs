//! Guard-mutation coverage: every declared guard is caught by some property (or explained), the
//! docs table is current, and an uncaught guard fails the run.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::OnceLock;

use loadbearing::mutate::{self, Coverage};
use loadbearing_expected::suite::{self, Config};
use loadbearing_refinement::Options;

fn suite() -> Vec<Config> {
    suite::built_in().unwrap()
}

/// The whole suite's mutation run, made once for the tests that read it (it checks every
/// holding config once per guard and property).
fn coverage() -> &'static Coverage {
    static COVERAGE: OnceLock<Coverage> = OnceLock::new();
    COVERAGE.get_or_init(|| {
        let configs = suite();
        let explanations = mutate::built_in_explanations().unwrap();
        mutate::mutate(&configs, &configs, &explanations, &Options::default()).unwrap()
    })
}

#[test]
fn every_declared_guard_is_load_bearing_or_explained() {
    let coverage = coverage();
    let unexplained: Vec<String> = coverage
        .unexplained()
        .iter()
        .map(|g| format!("{} / {}", g.model, g.guard))
        .collect();
    assert!(
        unexplained.is_empty(),
        "not load-bearing and unexplained: {unexplained:?}"
    );
    assert!(
        coverage.guards.len() >= 14,
        "every model's guards are declared"
    );
}

#[test]
fn every_guard_has_a_must_fail_pair_in_the_suite() {
    for g in &coverage().guards {
        assert!(
            g.must_fail_pair.is_some(),
            "{} / {} has no must-fail config",
            g.model,
            g.guard
        );
    }
}

#[test]
fn mutation_names_the_properties_that_catch_each_guard() {
    let coverage = coverage();
    let caught = |model: &str, guard: &str| {
        coverage
            .guards
            .iter()
            .find(|g| g.model == model && g.guard == guard)
            .unwrap()
            .caught_by
            .clone()
    };
    assert!(caught("Cassandra", "tombstone").contains(&"INV_NoCorruptDurable".to_string()));
    assert!(caught("Kafka", "capture coupling").contains(&"INV_CaptureCoupled".to_string()));
    assert_eq!(
        caught("CasFirstWrite", "retry"),
        vec!["INV_NoUnjustifiedConflict"]
    );
    assert_eq!(caught("SSI", "reader site"), vec!["Serializable"]);
    let never: Vec<&str> = coverage
        .properties
        .iter()
        .filter(|p| p.catches.is_empty())
        .map(|p| p.property.as_str())
        .collect();
    assert!(
        never.contains(&"TypeOK"),
        "range checks catch no guard: {never:?}"
    );
}

#[test]
fn docs_mutation_md_is_generated_and_current() {
    let generated = mutate::markdown(coverage());
    // The page in the checkout, regenerated on request: a dev-only path.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/mutation.md");
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/mutation.md is out of date: run `UPDATE_DOCS=1 cargo test --test it mutate::` \
         or `cargo run --release -- mutate --format markdown > docs/mutation.md`"
    );
}

#[test]
fn an_uncaught_guard_is_reported_and_fails_unless_explained() {
    // casfw_guarded checking only TypeOK: no property can catch any guard.
    let mut weak = suite()
        .into_iter()
        .find(|c| c.name == "casfw_guarded")
        .unwrap();
    weak.properties = vec!["TypeOK".into()];
    let configs = vec![weak];
    let coverage =
        mutate::mutate(&configs, &configs, &BTreeMap::new(), &Options::default()).unwrap();
    let unexplained: Vec<&str> = coverage
        .unexplained()
        .iter()
        .map(|g| g.guard.as_str())
        .collect();
    assert_eq!(
        unexplained,
        ["offset condition", "insert-if-not-exists", "retry"]
    );
    assert!(coverage.mutants.iter().all(|m| m.caught_by.is_empty()));

    let reasons: BTreeMap<(String, String), String> =
        ["offset condition", "insert-if-not-exists", "retry"]
            .iter()
            .map(|g| {
                (
                    ("CasFirstWrite".to_string(), g.to_string()),
                    "a test".to_string(),
                )
            })
            .collect();
    let coverage = mutate::mutate(&configs, &configs, &reasons, &Options::default()).unwrap();
    assert!(coverage.unexplained().is_empty());
}

#[test]
fn the_cli_exits_one_on_an_unexplained_guard() {
    let dir = std::env::temp_dir().join(format!("loadbearing-mutate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("weak.toml");
    std::fs::write(
        &path,
        "[[config]]\nname = \"weak\"\nmodel = \"ReplayFence\"\nproperties = [\"WriteAdvancesStore\"]\nexpected = \"holds\"\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_loadbearing"))
        .args(["--suite", path.to_str().unwrap(), "mutate"])
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("`replay fence` is not load-bearing"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("NOT LOAD-BEARING"), "{stdout}");
}

#[test]
fn an_explanation_for_an_undeclared_guard_is_an_error() {
    let dir = std::env::temp_dir().join(format!("loadbearing-guards-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("guards.toml");
    std::fs::write(
        &path,
        "[[not_load_bearing]]\nmodel = \"Kafka\"\nguard = \"luck\"\nreason = \"none\"\n",
    )
    .unwrap();
    let err = mutate::load_explanations(&path).unwrap_err();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        matches!(
            &err,
            mutate::MutateError::Explanations {
                problem: mutate::ExplanationProblem::NoSuchGuard { model, guard },
                ..
            } if model == "Kafka" && guard == "luck"
        ),
        "{err}"
    );
    assert!(
        err.to_string().contains("declares no guard `luck`"),
        "{err}"
    );
}
