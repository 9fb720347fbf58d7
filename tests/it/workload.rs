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
        ("unknown_key", "[keys]\nx = 0\n[[txn]]\nsteps = [\n\"read x\",\n\"put y=1\",\n]\n", 6),
        ("four_txns", "[keys]\nx = 0\n[[txn]]\nsteps = [\"read x\"]\n[[txn]]\nsteps = [\"read x\"]\n[[txn]]\nsteps = [\"read x\"]\n[[txn]]\nsteps = [\"read x\"]\n", 10),
        ("variant", "[keys]\nx = 0\n[[txn]]\nsteps = [\"read x\"]\n[expect]\nnosuch = [\"serializable\"]\n", 6),
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
