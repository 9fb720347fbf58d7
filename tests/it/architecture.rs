//! The workspace's module structure: inside each crate, no module imports a module that
//! imports it back, directly or through others. Such a knot cannot be read, tested or moved
//! one module at a time.
//!
//! The graph is read from the sources (`source`: code without comments and literals; `graph`:
//! declarations, `use` items and paths, each resolved to the module that defines what it names;
//! `cycles`: the knots, each named by one cycle through it).
//!
//! And the workspace's layers (`layers`, from the Cargo manifests): no implementation crate
//! (`impls/*`) depends on a model, suite or engine crate; and no conformance family of
//! `conform/` imports another.

mod cycles;
mod graph;
mod layers;
mod source;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use graph::module_graph;

/// Every crate root of the workspace: each member's `src/lib.rs` and `src/main.rs`.
fn crate_roots() -> Vec<PathBuf> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(workspace.join("Cargo.toml")).expect("Cargo.toml");
    let manifest: toml::Table = manifest.parse().expect("Cargo.toml is TOML");
    let members = manifest["workspace"]["members"]
        .as_array()
        .expect("[workspace] members");
    let packages = std::iter::once(".").chain(members.iter().filter_map(|m| m.as_str()));
    packages
        .flat_map(|p| ["lib.rs", "main.rs"].map(|root| workspace.join(p).join("src").join(root)))
        .filter(|root| root.exists())
        .collect()
}

fn read_file(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

#[test]
fn no_crate_of_the_workspace_has_an_import_cycle() {
    let roots = crate_roots();
    assert!(roots.len() >= 10, "the workspace's crates: {roots:?}");
    let mut cycles = Vec::new();
    let mut modules = 0;
    for root in &roots {
        let graph = module_graph(root, &read_file);
        modules += graph.files.len();
        for cycle in cycles::cycles(&graph) {
            cycles.push(format!("{}: {cycle}", root.display()));
        }
    }
    // The reader found the workspace's modules, not just its roots (a check that reads
    // nothing finds no cycle).
    assert!(modules > 100, "{modules} modules read");
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

/// The cycles of a crate made of `files` (paths relative to a made-up `src/`).
fn cycles_of(files: &[(&str, &str)]) -> Vec<String> {
    let files: HashMap<PathBuf, String> = files
        .iter()
        .map(|(path, text)| (Path::new("src").join(path), text.to_string()))
        .collect();
    let read = |path: &Path| files.get(path).cloned();
    cycles::cycles(&module_graph(Path::new("src/lib.rs"), &read))
}

#[test]
fn a_cycle_between_siblings_is_named_with_its_imports() {
    let found = cycles_of(&[
        ("lib.rs", "pub mod spec;\npub mod symmetry;"),
        (
            "spec.rs",
            "use crate::symmetry::Symmetry;\npub struct Spec;",
        ),
        (
            "symmetry.rs",
            "pub struct Symmetry;\nfn f() { crate::spec::Spec; }",
        ),
    ]);
    assert_eq!(
        found,
        ["spec → symmetry (via crate::symmetry::Symmetry) → spec (via crate::spec::Spec)"]
    );
}

#[test]
fn the_crate_root_importing_a_module_that_imports_it_is_a_cycle() {
    let found = cycles_of(&[
        (
            "lib.rs",
            "pub mod store;\npub use store::race;\npub fn atomic() {}",
        ),
        ("store.rs", "use crate::atomic;\npub fn race() {}"),
    ]);
    assert_eq!(
        found,
        ["crate root → store (via store::race) → crate root (via crate::atomic)"]
    );
}

/// A file of a directory module reading its parent, a name passed on by a `use`, a path in a
/// comment or a string, and a test's imports: none of them closes a cycle.
#[test]
fn what_is_not_a_cycle() {
    let found = cycles_of(&[
        (
            "lib.rs",
            "pub mod family;\npub mod infra;\npub use infra::Knob;",
        ),
        (
            "family/mod.rs",
            "pub mod model;\npub mod trace;\npub use model::Model;\nuse crate::Knob;",
        ),
        ("family/model.rs", "use super::trace::Event;\npub struct Model;"),
        (
            "family/trace.rs",
            "use super::Shared; // crate::family::model::Model\nconst S: &str = \"crate::family::model\";",
        ),
        (
            "infra.rs",
            "pub struct Knob;\n#[cfg(test)]\nmod tests {\n    use crate::family::Model;\n}",
        ),
    ]);
    assert!(found.is_empty(), "{found:?}");
}

/// The conformance families of `conform/`: each a target family of its own. What two of them
/// share lives in a module no family owns (`stores`, `producer`, `partition_flow`, the
/// harness, schedule and target modules, and `ssi_engine`, the SSI engine's adapter), so a
/// family can be read, changed or removed without reading another.
const CONFORM_FAMILIES: &[&str] = &[
    "cassandra_835",
    "compound",
    "fence",
    "flow",
    "flows_alive",
    "flush_cell",
    "group_commit",
    "group_commit_lanes",
    "kafka",
    "recovery_deadline",
    "recovery_read",
    "reliability",
    "ssi",
    "store",
    "store_faults",
    "token_sync",
];

/// Each import from a module of family `from` (the family's module and those inside it) into
/// another family's, named with the path that makes it.
fn family_imports(graph: &graph::ModuleGraph, families: &[&str]) -> Vec<String> {
    let family_of = |module: &[String]| {
        module
            .first()
            .filter(|first| families.contains(&first.as_str()))
            .cloned()
    };
    let mut found = Vec::new();
    for (from, targets) in &graph.imports {
        let Some(from_family) = family_of(from) else {
            continue;
        };
        for (to, path) in targets {
            if let Some(to_family) = family_of(to).filter(|to| *to != from_family) {
                found.push(format!("{from_family} imports {to_family} ({path})"));
            }
        }
    }
    found
}

#[test]
fn no_conformance_family_imports_another() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("conform/src/lib.rs");
    let graph = module_graph(&root, &read_file);
    for family in CONFORM_FAMILIES {
        assert!(
            graph.files.contains_key(&vec![family.to_string()]),
            "conform/src has no module {family}: the list is stale"
        );
    }
    let found = family_imports(&graph, CONFORM_FAMILIES);
    assert!(
        found.is_empty(),
        "a family reaches into another (move what they share to a module of its own):\n{}",
        found.join("\n")
    );
}

#[test]
fn a_family_importing_a_sibling_is_named() {
    let files: HashMap<PathBuf, String> = [
        ("lib.rs", "pub mod shared;\npub mod red;\npub mod blue;\n"),
        ("shared.rs", "pub const N: u8 = 1;\n"),
        (
            "red.rs",
            "use crate::shared::N;\npub fn red() -> u8 { N }\n",
        ),
        (
            "blue.rs",
            "use crate::red::red;\npub fn blue() -> u8 { red() }\n",
        ),
    ]
    .iter()
    .map(|(path, text)| (Path::new("src").join(path), text.to_string()))
    .collect();
    let read = |path: &Path| files.get(path).cloned();
    let graph = module_graph(Path::new("src/lib.rs"), &read);
    let found = family_imports(&graph, &["red", "blue"]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("blue imports red"), "{found:?}");
}
