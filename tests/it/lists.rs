//! Lists kept by hand in the docs and the code, each against what it lists: a conformance
//! target, a suite, a model family or an actor system added, renamed or removed fails here
//! until the list follows.

use std::collections::BTreeSet;
use std::path::Path;

use loadbearing::run_actors::SYSTEMS;
use loadbearing_conform::targets;
use loadbearing_expected::suite::BUILT_IN;

fn read(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// What stands between backticks in `text`.
fn backticked(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// The text of `doc` from `start` to the end of its paragraph.
fn paragraph<'a>(doc: &'a str, start: &str) -> &'a str {
    let from = doc
        .find(start)
        .unwrap_or_else(|| panic!("no paragraph starting {start:?}"));
    let rest = &doc[from..];
    &rest[..rest.find("\n\n").unwrap_or(rest.len())]
}

/// docs/conformance.md's table of targets: every target `conform --list` has, in its order,
/// with what it must show and its backends.
#[test]
fn the_conformance_doc_tables_every_target_as_conform_runs_it() {
    let doc = read("docs/conformance.md");
    let header = "| target | implementation | model | must | backends |";
    let table = &doc[doc
        .find(header)
        .expect("docs/conformance.md has its target table")..];
    let documented: Vec<(String, String, String)> = table
        .lines()
        .skip(2)
        .take_while(|line| line.starts_with('|'))
        .map(|line| {
            let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
            // The table says `conform` or `diverge`; the targets `conforms` or `diverges`.
            let must = format!("{}s", cells[3]);
            (
                cells[0].trim_matches('`').to_string(),
                must,
                cells[4].into(),
            )
        })
        .collect();
    let targets: Vec<(String, String, String)> = targets::ALL
        .iter()
        .map(|t| {
            let backends: Vec<&str> = t.backends().iter().map(|b| b.name()).collect();
            let must = t.expect().name().to_string();
            (t.name().to_string(), must, backends.join(", "))
        })
        .collect();
    assert_eq!(
        documented, targets,
        "docs/conformance.md's target table differs from conform's targets"
    );
}

/// Every file under expected/suites/ is compiled in (`BUILT_IN`), and the README names each
/// suite where it introduces them.
#[test]
fn every_suite_file_is_built_in_and_named_in_the_readme() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("expected/suites");
    let files: BTreeSet<String> = std::fs::read_dir(&dir)
        .expect("expected/suites/ reads")
        .map(|entry| entry.expect("a directory entry").file_name())
        .map(|name| format!("expected/suites/{}", name.to_string_lossy()))
        .filter(|path| path.ends_with(".toml"))
        .collect();
    let built_in: BTreeSet<String> = BUILT_IN.iter().map(|(p, _)| p.to_string()).collect();
    assert_eq!(
        built_in, files,
        "expected/src/suite.rs's BUILT_IN differs from expected/suites/"
    );
    let readme = read("README.md");
    let named = backticked(paragraph(&readme, "The configs come in suites"));
    for path in &files {
        let suite = path["expected/suites/".len()..].trim_end_matches(".toml");
        assert!(
            named.contains(&suite),
            "the README's paragraph on the suites does not name `{suite}`"
        );
    }
}

/// docs/architecture.md lists the model families twice (the crate table, where a new model
/// goes): each time every folder of specs/src/ but what the families share.
#[test]
fn the_architecture_doc_names_every_model_family() {
    let shared = ["infra", "one_key"];
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("specs/src");
    let families: BTreeSet<String> = std::fs::read_dir(&dir)
        .expect("specs/src/ reads")
        .map(|entry| entry.expect("a directory entry"))
        .filter(|entry| entry.path().is_dir())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| !shared.contains(&name.as_str()))
        .collect();
    let doc = read("docs/architecture.md");
    let marker = "`specs/src/<family>/`:";
    let lists: Vec<BTreeSet<String>> = doc
        .match_indices(marker)
        .map(|(at, _)| {
            let rest = &doc[at + marker.len()..];
            let end = rest.find([')', ';']).expect("the list of families ends");
            backticked(&rest[..end])
                .into_iter()
                .map(String::from)
                .collect()
        })
        .collect();
    assert_eq!(
        lists.len(),
        2,
        "docs/architecture.md lists the families twice"
    );
    for listed in lists {
        assert_eq!(
            listed, families,
            "docs/architecture.md's families differ from specs/src/"
        );
    }
}

/// The README's `run-actors` line names every system `run-actors` runs, in its order.
#[test]
fn the_readme_names_every_actor_system() {
    let readme = read("README.md");
    let line = readme
        .lines()
        .find(|l| l.contains("-- run-actors "))
        .expect("the README shows run-actors");
    let first = line
        .split("-- run-actors ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("run-actors names a system");
    let also = line
        .split("(also ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .expect("the line names the other systems: (also …)");
    let named: Vec<&str> = std::iter::once(first)
        .chain(also.split(", ").flat_map(|s| s.split(" and ")))
        .map(str::trim)
        .collect();
    assert_eq!(named, SYSTEMS, "the README's run-actors line");
}
