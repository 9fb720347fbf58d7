//! The workspace's layers, read from the Cargo manifests: the implementations (`impls/*`) know
//! nothing of the models. No implementation crate depends — directly, in any dependency table
//! (dev and build included), or through another crate of the workspace — on a model, suite or
//! engine crate. `conform/` is the one bridge: its adapters map implementation events to the
//! models' vocabularies.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The model, suite and engine crates.
pub const MODEL_CRATES: &[&str] = &[
    "loadbearing-specs",
    "loadbearing-refinement",
    "loadbearing-trace",
    "loadbearing-expected",
    "loadbearing-registry",
];

/// A crate of the workspace: its name, and the crates it names in each dependency table.
pub struct Manifest {
    pub name: String,
    /// Every dependency, with the table it is in (`dependencies`, `dev-dependencies`, …).
    pub deps: Vec<(String, String)>,
}

impl Manifest {
    pub fn parse(text: &str) -> Manifest {
        let table: toml::Table = text.parse().expect("a manifest is TOML");
        let name = table["package"]["name"]
            .as_str()
            .expect("[package] name")
            .to_string();
        let mut deps = Vec::new();
        let mut tables: Vec<(String, &toml::Table)> = Vec::new();
        for kind in ["dependencies", "dev-dependencies", "build-dependencies"] {
            if let Some(t) = table.get(kind).and_then(|t| t.as_table()) {
                tables.push((kind.to_string(), t));
            }
        }
        // `[target.'cfg(…)'.dependencies]` and the like.
        if let Some(targets) = table.get("target").and_then(|t| t.as_table()) {
            for (cfg, target) in targets {
                for kind in ["dependencies", "dev-dependencies", "build-dependencies"] {
                    if let Some(t) = target.get(kind).and_then(|t| t.as_table()) {
                        tables.push((format!("target.{cfg}.{kind}"), t));
                    }
                }
            }
        }
        for (kind, t) in tables {
            for (key, spec) in t {
                // A renamed dependency names its crate in `package`.
                let package = spec.get("package").and_then(|p| p.as_str()).unwrap_or(key);
                deps.push((kind.clone(), package.to_string()));
            }
        }
        Manifest { name, deps }
    }
}

/// Every way an implementation crate reaches a model crate: `impls` are the implementation
/// crates' names, `all` every crate of the workspace. A dependency of any kind counts for the
/// implementation itself; through another workspace crate, that crate's non-dev dependencies
/// do (what it links).
pub fn model_dependencies(impls: &[&str], all: &[Manifest]) -> Vec<String> {
    let by_name: BTreeMap<&str, &Manifest> = all.iter().map(|m| (m.name.as_str(), m)).collect();
    let mut found = Vec::new();
    for &start in impls {
        let manifest = by_name[start];
        for (kind, dep) in &manifest.deps {
            // Depth-first through the workspace: the chain from `start` to a model crate.
            let mut stack = vec![vec![dep.as_str()]];
            let mut seen = BTreeSet::new();
            while let Some(chain) = stack.pop() {
                let last = *chain.last().expect("a chain is never empty");
                if MODEL_CRATES.contains(&last) {
                    found.push(format!("{start} -> {} ({kind})", chain.join(" -> ")));
                    continue;
                }
                if !seen.insert(last) {
                    continue;
                }
                if let Some(m) = by_name.get(last) {
                    for (k, d) in &m.deps {
                        if k != "dev-dependencies" && !k.ends_with(".dev-dependencies") {
                            let mut next = chain.clone();
                            next.push(d);
                            stack.push(next);
                        }
                    }
                }
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

/// Every member of the workspace (the root package included), as (directory, manifest).
fn workspace() -> Vec<(String, Manifest)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml");
    let table: toml::Table = text.parse().expect("Cargo.toml is TOML");
    let members = table["workspace"]["members"]
        .as_array()
        .expect("[workspace] members");
    std::iter::once(".")
        .chain(members.iter().filter_map(|m| m.as_str()))
        .map(|dir| {
            let text = std::fs::read_to_string(root.join(dir).join("Cargo.toml"))
                .unwrap_or_else(|e| panic!("{dir}/Cargo.toml: {e}"));
            (dir.to_string(), Manifest::parse(&text))
        })
        .collect()
}

#[test]
fn no_implementation_crate_depends_on_a_model_suite_or_engine_crate() {
    let members = workspace();
    let impls: Vec<String> = members
        .iter()
        .filter(|(dir, _)| dir == "impls" || dir.starts_with("impls/"))
        .map(|(_, m)| m.name.clone())
        .collect();
    let all: Vec<Manifest> = members.into_iter().map(|(_, m)| m).collect();
    let impls: Vec<&str> = impls.iter().map(String::as_str).collect();
    // The check reads the implementations it guards (one that reads none passes vacuously).
    for expected in [
        "loadbearing-impls",
        "loadbearing-impls-kafka",
        "loadbearing-ssi-engine",
    ] {
        assert!(impls.contains(&expected), "{expected} in {impls:?}");
    }
    // And the model crates are what it looks for: the bridge reaches them.
    assert!(
        !model_dependencies(&["loadbearing-conform"], &all).is_empty(),
        "conform, the bridge, depends on the models"
    );
    let found = model_dependencies(&impls, &all);
    assert!(
        found.is_empty(),
        "implementations that know a model (adapters belong in conform/):\n{}",
        found.join("\n")
    );
}

/// The check fails for each way in: a direct dependency, a dev-dependency, a renamed one, a
/// target-specific one, and one through another crate of the workspace.
#[test]
fn a_model_dependency_of_an_implementation_is_found_however_it_is_declared() {
    let manifest = |text: &str| Manifest::parse(text);
    let all = vec![
        manifest(
            r#"[package]
name = "engine"
[dependencies]
loadbearing-specs = { path = "../../specs" }
serde = "1"
"#,
        ),
        manifest(
            r#"[package]
name = "tested"
[dev-dependencies]
loadbearing-refinement = { path = "../../refinement" }
"#,
        ),
        manifest(
            r#"[package]
name = "renamed"
[dependencies]
suite = { package = "loadbearing-expected", path = "../../expected" }
"#,
        ),
        manifest(
            r#"[package]
name = "unix-only"
[target.'cfg(unix)'.dependencies]
loadbearing-registry = { path = "../../registry" }
"#,
        ),
        manifest(
            r#"[package]
name = "through"
[dependencies]
shared = { path = "../../shared" }
"#,
        ),
        manifest(
            r#"[package]
name = "shared"
[dependencies]
loadbearing-specs = { path = "../specs" }
[dev-dependencies]
loadbearing-expected = { path = "../expected" }
"#,
        ),
        manifest(
            r#"[package]
name = "clean"
[dependencies]
shared-input = { path = "../../workload" }
[dev-dependencies]
loadbearing-test-support = { path = "../../test-support" }
"#,
        ),
        manifest(
            r#"[package]
name = "shared-input"
[dev-dependencies]
loadbearing-specs = { path = "../specs" }
"#,
        ),
    ];
    assert_eq!(
        model_dependencies(
            &[
                "engine",
                "tested",
                "renamed",
                "unix-only",
                "through",
                "clean"
            ],
            &all
        ),
        [
            "engine -> loadbearing-specs (dependencies)",
            "renamed -> loadbearing-expected (dependencies)",
            "tested -> loadbearing-refinement (dev-dependencies)",
            "through -> shared -> loadbearing-specs (dependencies)",
            "unix-only -> loadbearing-registry (target.cfg(unix).dependencies)",
        ]
    );
}
