//! The workspace's module structure: inside each crate, no module imports a module that
//! imports it back, directly or through others. Such a knot cannot be read, tested or moved
//! one module at a time.
//!
//! The graph is read from the sources (`source`: code without comments and literals; `graph`:
//! declarations, `use` items and paths, each resolved to the module that defines what it names;
//! `cycles`: the knots, each named by one cycle through it).
//!
//! And the workspace's layers (`layers`, from the Cargo manifests): no implementation crate
//! (`impls/*`) depends on a model, suite or engine crate.

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
