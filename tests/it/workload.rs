//! `loadbearing check --workload`: the classic anomalies in expected/workloads as their files
//! expect under plain SI and the fix, and bad files refused naming the line.

use std::path::Path;
use std::process::Command;

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_loadbearing"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn every_classic_anomaly_file_is_as_expected() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("expected/workloads");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "{files:?}");
    for f in files {
        let (code, out, err) = run(&["check", "--workload", f.to_str().unwrap()]);
        assert_eq!(code, 0, "{}:\n{out}\n{err}", f.display());
        assert!(out.contains("as expected"), "{out}");
    }
}

#[test]
fn write_skew_prints_its_cycle() {
    let (code, out, _) = run(&[
        "check",
        "--workload",
        "expected/workloads/write_skew.toml",
        "--variant",
        "plainsi",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("G2-item (write skew): T1 -rw(bob)-> T2 -rw(alice)-> T1"),
        "{out}"
    );
}

#[test]
fn a_wrong_expectation_exits_one() {
    let dir = std::env::temp_dir().join(format!("lb-wl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("expected/workloads/write_skew.toml"),
    )
    .unwrap()
    .replace(
        "plainsi = [\"G2-item (write skew)\"]",
        "plainsi = [\"serializable\"]",
    );
    let f = dir.join("wrong.toml");
    std::fs::write(&f, text).unwrap();
    let (code, out, _) = run(&["check", "--workload", f.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("DIFFERS"), "{out}");
}

#[test]
fn bad_files_exit_two_naming_the_line() {
    let dir = std::env::temp_dir().join(format!("lb-wl-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = [
        ("syntax", "[keys]\nx = = 1\n", 2),
        (
            "unknown_key",
            "[keys]\nx = 0\n[[txn]]\nsteps = [\n\"read x\",\n\"put y=1\",\n]\n",
            6,
        ),
        (
            "past_64_bits",
            "[keys]\nx = 0\n[[txn]]\nsteps = [\n\"read x\",\n\"put x=99999999999999999999\",\n]\n",
            6,
        ),
        (
            "variant",
            "[keys]\nx = 0\n[[txn]]\nsteps = [\"read x\"]\n[expect]\nnosuch = [\"serializable\"]\n",
            6,
        ),
    ];
    for (name, text, line) in cases {
        let f = dir.join(format!("{name}.toml"));
        std::fs::write(&f, text).unwrap();
        let (code, _, err) = run(&["check", "--workload", f.to_str().unwrap()]);
        assert_eq!(code, 2, "{name}: {err}");
        let want = format!("{}:{line}: ", f.display());
        assert!(err.contains(&want), "{name}: wanted {want} in {err}");
    }
}

/// Four transactions, five statements in one, and values past the model's `i8`: such a
/// workload is outside the model (`check --workload` says why, exit 2; the first reason is its
/// predicate read, and without the other statements its fourth transaction) and runs on
/// engines as written, with 64-bit values (a predicate over values in the thousands, which an
/// `i8` would read as negatives). A wrong expected value fails it (exit 1), naming the step.
#[test]
fn a_workload_beyond_the_models_bounds_runs_on_engines_with_its_own_values() {
    const FILE: &str = r#"name = "beyond"

[keys]
a = 1000
b = 2000

[[txn]]
steps = ["read where value > 1500", "commit"]

[[txn]]
steps = ["update a = a + 1000", "commit"]

[[txn]]
steps = ["read a", "read b", "put b=b+300", "commit"]

[[txn]]
steps = ["read where value >= 2000", "read a", "read b", "read a", "read b", "commit"]

[schedule]
steps = "T2.begin T2.1 T2.commit T1.begin T1.1 T1.commit T3.begin T3.1 T3.2 T3.3 T3.commit T4.begin T4.1 T4.2 T4.3 T4.4 T4.5 T4.commit"

[schedule.expect]
all = ["T2.1 = {a=2000}", "T1.1 = {a=2000, b=2000}", "T3.3 = 2300", "T4.1 = {a=2000, b=2300}", "T4.5 = 2300"]

[expect]
sqlite = ["serializable"]
skipdb = ["serializable"]
"#;
    let dir = std::env::temp_dir().join(format!("lb-beyond-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("beyond.toml");
    std::fs::write(&path, FILE).unwrap();
    let file = path.to_str().unwrap();

    let (code, out, err) = run(&["check", "--workload", file]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("outside the model: a predicate read"), "{err}");
    let items = dir.join("items.toml");
    let item_reads = FILE
        .replace("read where value > 1500", "read b")
        .replace("read where value >= 2000", "read a")
        .replace("update a = a + 1000", "read a");
    std::fs::write(&items, item_reads.split("[schedule]").next().unwrap()).unwrap();
    let (code, out, err) = run(&["check", "--workload", items.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("outside the model: 4 transactions > 3: the model has room for 3"),
        "{err}"
    );

    let engines = [
        "isolation",
        "--workload",
        file,
        "--engine",
        "sqlite",
        "--engine",
        "skipdb",
        "--interleavings",
        "30",
    ];
    let (code, out, err) = run(&engines);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("outside the model (a predicate read"), "{out}");
    assert!(
        out.contains("T4.1       read where value >= 2000: {a=2000, b=2300}"),
        "{out}"
    );

    let red = dir.join("red.toml");
    std::fs::write(&red, FILE.replace("\"T3.3 = 2300\"", "\"T3.3 = 2301\"")).unwrap();
    let mut args = engines;
    args[2] = red.to_str().unwrap();
    let (code, out, err) = run(&args);
    assert_eq!(code, 1, "{out}{err}");
    assert!(format!("{out}{err}").contains("T3.3"), "{out}{err}");
}

/// A row deleted and inserted again: the key-value engines refuse an insert of a present row
/// as the SQL engines do (their insert reads the key first), and the insert's version follows
/// the deletion in the version log, so every history is established and judged.
#[test]
fn a_row_deleted_and_inserted_again_is_a_history_like_any_other() {
    const FILE: &str = r#"name = "reinsert"

[keys]
x = 10
y = 20

[[txn]]
steps = ["delete x", "commit"]

[[txn]]
steps = ["insert x=30", "read y", "commit"]

[[txn]]
steps = ["read x", "read y", "commit"]

[expect]
sqlite = ["serializable"]
skipdb = ["serializable"]
"#;
    let dir = std::env::temp_dir().join(format!("lb-reinsert-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("reinsert.toml");
    std::fs::write(&path, FILE).unwrap();
    let (code, out, err) = run(&[
        "isolation",
        "--workload",
        path.to_str().unwrap(),
        "--engine",
        "sqlite",
        "--engine",
        "skipdb",
        "--interleavings",
        "150",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!out.contains("could not be established"), "{out}");
    assert!(out.contains("duplicate key `x` (insert)"), "{out}");
    // Some interleavings commit the insert after the deletion.
    assert!(out.contains("all commit"), "{out}");
}
