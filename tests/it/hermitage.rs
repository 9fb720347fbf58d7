//! Hermitage's tests as our workload files (`expected/workloads/hermitage/`): each run as
//! written, with its pinned schedule and its steps' expected values, and through its
//! interleavings on the engines; PostgreSQL's three levels against Hermitage's published
//! PostgreSQL rows; a file that expects the wrong thing failing; `--schedule` from the
//! command line.

use crate::common::{fresh_rows_are_committed, loadbearing};
use std::path::{Path, PathBuf};
use std::process::Output;

const HERMITAGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/expected/workloads/hermitage");

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn file(name: &str) -> String {
    format!("{HERMITAGE}/{name}.toml")
}

/// A scratch folder of this test's own.
fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lb-hermitage-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The embedded engines on every Hermitage file, as docs/hermitage.md's command runs them:
/// every engine as its file expects (its `[expect]`, its pinned schedule's values), and every
/// row of the page is the fresh run's.
#[test]
fn the_suite_on_the_embedded_engines_is_as_each_file_expects_and_as_the_page_says() {
    let page = scratch("page").join("hermitage.md");
    let mut args = vec!["isolation", "--matrix", HERMITAGE, "--engine", "sqlite"];
    args.extend(["--engine", "skipdb"]);
    let with_bdb = cfg!(feature = "bdb");
    if with_bdb {
        args.extend(["--engine", "bdb"]);
    }
    let with_badger = cfg!(feature = "badger");
    if with_badger {
        args.extend(["--engine", "badger"]);
    }
    args.extend(["--markdown", page.to_str().unwrap()]);
    let out = loadbearing(&args);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let fresh = std::fs::read_to_string(&page).unwrap();
    let prefixes = [
        "| sqlite",
        "| skipdb",
        "| berkeley",
        "| badger",
        "| **sqlite",
    ];
    let rows = fresh_rows_are_committed(&fresh, "docs/hermitage.md", &prefixes);
    let engines = 2 + usize::from(with_bdb) + usize::from(with_badger);
    // Fourteen files a row each, and SQLite's glance row.
    assert_eq!(rows, 14 * engines + 1, "{fresh}");
    // SQLite, serializable by locking, prevents every anomaly Hermitage tests for.
    let glance = fresh.lines().find(|l| l.starts_with("| **sqlite")).unwrap();
    assert_eq!(glance.matches("| prevented").count(), 14, "{glance}");
}

/// The red variant: a file that expects what SQLite does not do — the lost update committed,
/// and a first read of 11 — is a finding on both counts, each naming its line.
#[test]
fn a_file_expecting_the_wrong_thing_fails_naming_each_line() {
    let text_of = std::fs::read_to_string(file("p4")).unwrap();
    let wrong = text_of
        .replace(
            "sqlite = [\"serializable\"]",
            "sqlite = [\"G-single (lost update)\"]",
        )
        .replace("all = [\"T1.1 = 10\", ", "all = [\"T1.1 = 11\", ");
    assert_ne!(wrong, text_of);
    let dir = scratch("wrong");
    let path = dir.join("p4.toml");
    std::fs::write(&path, &wrong).unwrap();
    let line_of = |needle: &str| wrong.lines().position(|l| l.contains(needle)).unwrap() + 1;
    let out = loadbearing(&[
        "isolation",
        "--workload",
        path.to_str().unwrap(),
        "--engine",
        "sqlite",
    ]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    let expect_line = line_of("sqlite = [");
    assert!(
        stdout.contains(&format!(
            "[expect] at line {expect_line} lists G-single (lost update), which no interleaving showed"
        )),
        "{stdout}"
    );
    let value_line = line_of("T1.1 = 11");
    assert!(
        stdout.contains(&format!(
            "line {value_line}: expected T1.1 = 11, showed read x = 10"
        )),
        "{stdout}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// `--schedule` drives that one interleaving: its steps' results in the JSON, in order; a
/// schedule naming a step the workload lacks is bad input (exit 2) that names it.
#[test]
fn one_schedule_from_the_command_line_is_driven_alone() {
    let p4 = file("p4");
    let schedule = "T1.begin T1.1 T2.begin T2.1 T1.2 T2.2 T1.commit T2.commit";
    let out = loadbearing(&[
        "isolation",
        "--workload",
        &p4,
        "--engine",
        "skipdb",
        "--schedule",
        schedule,
        "--format",
        "json",
    ]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let store = &v["stores"][0];
    assert_eq!(store["driven"]["interleavings"]["pinned"], schedule);
    assert_eq!(store["race"]["attempts"], 1);
    let run = &store["driven"]["runs"][0];
    assert_eq!(run["schedule"], schedule);
    let steps: Vec<(String, String)> = run["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["step"].as_str().unwrap().to_string(),
                s["shows"]["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let names: Vec<&str> = steps.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(names.join(" "), schedule);
    // skipdb is optimistic: both write, the second to commit is refused.
    assert_eq!(steps[3].1, "read");
    assert_eq!(steps[5].1, "wrote");
    assert_eq!(steps[7].1, "aborted");
    assert_eq!(run["steps"][3]["shows"]["value"], 10);
    // The file's own schedule: its values are checked.
    let checks = &store["pinned"]["checks"];
    assert_eq!(checks.as_array().map(Vec::len), Some(2), "{store}");
    assert_eq!(checks[0]["ok"], true);

    let out = loadbearing(&[
        "isolation",
        "--workload",
        &p4,
        "--engine",
        "skipdb",
        "--schedule",
        "T1.begin T1.3",
    ]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("`T1.3`: T1 has 2 statements"), "{stderr}");
}

/// Hermitage's published PostgreSQL rows, test by test: `true` where the level prevents the
/// anomaly the test is for.
#[cfg(feature = "postgres")]
const HERMITAGE_POSTGRES: [(&str, [bool; 14]); 3] = [
    // g0, g1a, g1b, g1c, otv, p4, g_single, g2_item, g2_two_edges, pmp, g_single_predicate,
    // g2_predicate, pmp_write, g_single_write_predicate
    (
        "postgres (READ COMMITTED)",
        [
            true, true, true, true, true, false, false, false, false, false, false, false, false,
            false,
        ],
    ),
    (
        "postgres (REPEATABLE READ)",
        [
            true, true, true, true, true, true, true, false, false, true, true, false, true, true,
        ],
    ),
    ("postgres (SERIALIZABLE)", [true; 14]),
];

#[cfg(any(feature = "postgres", feature = "mariadb"))]
const TESTS: [&str; 14] = [
    "g0",
    "g1a",
    "g1b",
    "g1c",
    "otv",
    "p4",
    "g_single",
    "g2_item",
    "g2_two_edges",
    "pmp",
    "g_single_predicate",
    "g2_predicate",
    "pmp_write",
    "g_single_write_predicate",
];

/// PostgreSQL's three levels reproduce Hermitage's PostgreSQL rows: each test's anomaly
/// prevented or shown (by Hermitage's schedule, or an interleaving) exactly where Hermitage
/// says, every file's expectations met. Hermitage's own schedule shows each anomaly a level
/// admits, so a sample of 10 interleavings a file is enough here (docs/hermitage.md drives 1,000).
#[test]
#[cfg(feature = "postgres")]
fn postgres_reproduces_hermitages_postgres_rows() {
    if let Err(why) = loadbearing_impls::servers::postgres::launcher::find_bin() {
        loadbearing_test_support::skip_or_fail("isolation --matrix hermitage --postgres", &why);
        return;
    }
    holds_hermitages_rows("postgres", "10", &HERMITAGE_POSTGRES);
}

/// The Hermitage matrix on `engine`'s levels (`interleavings` a file at most): every file's
/// expectations met, and each test's anomaly prevented or shown (by Hermitage's schedule, or
/// an interleaving) exactly where `rows` says.
#[cfg(any(feature = "postgres", feature = "mariadb"))]
fn holds_hermitages_rows(engine: &str, interleavings: &str, rows: &[(&str, [bool; 14])]) {
    let out = loadbearing(&[
        "isolation",
        "--matrix",
        HERMITAGE,
        "--engine",
        engine,
        "--interleavings",
        interleavings,
        "--format",
        "json",
    ]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let driven: Vec<serde_json::Value> = serde_json::from_str(&stdout).unwrap();
    for (level, prevented) in rows {
        for (test, prevented) in TESTS.iter().zip(prevented) {
            let row = driven
                .iter()
                .find(|r| r["engine"] == *level && r["workload"] == *test)
                .unwrap_or_else(|| panic!("no row for {level} on {test}"));
            let tested = &row["tested"];
            let shown = tested["pinned"] == true || tested["shown_in"].as_u64() > Some(0);
            assert_eq!(!shown, *prevented, "{level} on {test}: {row}");
        }
    }
}

/// Hermitage's published MySQL/InnoDB rows (for G-single at REPEATABLE READ, its "R/O": a
/// read-only transaction's snapshot prevents it, and this test's reader is read-only).
#[cfg(feature = "mariadb")]
const HERMITAGE_INNODB: [(&str, [bool; 14]); 3] = [
    // g0, g1a, g1b, g1c, otv, p4, g_single, g2_item, g2_two_edges, pmp, g_single_predicate,
    // g2_predicate, pmp_write, g_single_write_predicate (InnoDB's READ COMMITTED deletes by
    // the latest rows and then reads them afresh: no PMP through its write predicate)
    (
        "mariadb (READ COMMITTED)",
        [
            true, true, true, true, true, false, false, false, false, false, false, false, true,
            false,
        ],
    ),
    (
        "mariadb (REPEATABLE READ)",
        [
            true, true, true, true, true, false, true, false, false, true, true, false, false,
            false,
        ],
    ),
    ("mariadb (SERIALIZABLE)", [true; 14]),
];

/// MariaDB's three levels (InnoDB, Debian's 10.11) reproduce Hermitage's MySQL/InnoDB rows,
/// every file's expectations for MariaDB met (its SERIALIZABLE's locking reads show values
/// of their own, which the files say per level). A sample of 5 interleavings a file.
#[test]
#[cfg(feature = "mariadb")]
fn mariadb_reproduces_hermitages_innodb_rows() {
    if let Err(why) = loadbearing_ssi_engine::mariadb::find_bin() {
        loadbearing_test_support::skip_or_fail(
            "isolation --matrix hermitage --engine mariadb",
            &why,
        );
        return;
    }
    holds_hermitages_rows("mariadb", "5", &HERMITAGE_INNODB);
}

/// Every Hermitage file reads as a workload the model explores too, or says why not:
/// `check --workload` holds each item file to its `[expect]` for the model's fix and plain
/// snapshot isolation, and refuses each predicate file (exit 2) as outside the model.
#[test]
fn every_hermitage_file_is_as_its_model_expects_or_outside_it() {
    const OUTSIDE: [&str; 6] = [
        "g2_predicate",
        "g2_two_edges",
        "g_single_predicate",
        "g_single_write_predicate",
        "pmp",
        "pmp_write",
    ];
    let mut files: Vec<PathBuf> = std::fs::read_dir(Path::new(HERMITAGE))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 14);
    for f in files {
        let out = loadbearing(&["check", "--workload", f.to_str().unwrap()]);
        let (stdout, stderr) = text(&out);
        let stem = f.file_stem().unwrap().to_str().unwrap();
        let outside = OUTSIDE.contains(&stem);
        let code = if outside { 2 } else { 0 };
        assert_eq!(out.status.code(), Some(code), "{stem}: {stdout}{stderr}");
        if outside {
            assert!(stderr.contains("outside the model: "), "{stderr}");
        }
    }
}

/// The predicate files outside the model: run with no engine, nothing could run them (exit 2,
/// saying so); a predicate that does not parse is bad input naming its line; and the red
/// variant, a file expecting SQLite to commit the phantom G2, fails naming the line.
#[test]
fn predicate_files_say_what_is_wrong_with_them() {
    let g2 = file("g2_predicate");
    let out = loadbearing(&["isolation", "--workload", &g2]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("outside the model"), "{stderr}");
    assert!(stderr.contains("name engines"), "{stderr}");

    let original = std::fs::read_to_string(&g2).unwrap();
    let dir = scratch("predicates");
    // `edited` written beside the suite's files, run on SQLite: its exit code, its output, and
    // the line of the file holding `needle`.
    let run_edited = |name: &str, edited: &str, needle: &str| {
        assert_ne!(edited, original);
        let path = dir.join(name);
        std::fs::write(&path, edited).unwrap();
        let out = loadbearing(&[
            "isolation",
            "--workload",
            path.to_str().unwrap(),
            "--engine",
            "sqlite",
        ]);
        let (stdout, stderr) = text(&out);
        let line = edited.lines().position(|l| l.contains(needle)).unwrap() + 1;
        (out.status.code(), format!("{stdout}{stderr}"), line)
    };
    let bad = original.replace(
        "read where value % 3 = 0\", \"insert z",
        "read where x % 3 = 0\", \"insert z",
    );
    let (code, said, line) = run_edited("bad.toml", &bad, "read where x");
    assert_eq!(code, Some(2), "{said}");
    assert!(
        said.contains(&format!(
            "bad.toml:{line}: step `read where x % 3 = 0`: a predicate is over `value`"
        )),
        "{said}"
    );
    let wrong = original.replace("sqlite = [\"serializable\"]", "sqlite = [\"G2\"]");
    let (code, said, line) = run_edited("wrong.toml", &wrong, "sqlite = ");
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains(&format!(
            "[expect] at line {line} lists G2, which no interleaving showed"
        )),
        "{said}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
