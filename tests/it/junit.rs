//! `--format junit` of check, mutate and conform, validated by xmllint against the JUnit 10
//! schema (Jenkins' xUnit plugin's, as pytest ships it): `.ci/setup.d/21-junit-schema.sh`
//! installs xmllint, fetches the schema and exports `LOADBEARING_JUNIT_XSD`. Without them the
//! tests say `skipped:` and pass, except under CI=true, where they fail.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::loadbearing;
use loadbearing_test_support::skip_or_fail;

/// The schema, when this machine can validate against it.
fn schema(test: &str) -> Option<PathBuf> {
    let Some(xsd) = std::env::var_os("LOADBEARING_JUNIT_XSD").map(PathBuf::from) else {
        skip_or_fail(
            test,
            &"LOADBEARING_JUNIT_XSD is not set (source .ci/setup.d/21-junit-schema.sh)",
        );
        return None;
    };
    if !xsd.is_file() {
        skip_or_fail(test, &format!("no JUnit schema at {}", xsd.display()));
        return None;
    }
    if Command::new("xmllint").arg("--version").output().is_err() {
        skip_or_fail(test, &"no xmllint (Debian: apt-get install libxml2-utils)");
        return None;
    }
    Some(xsd)
}

/// Validates `xml` against the schema; panics with xmllint's words when it does not.
fn validate(xsd: &Path, name: &str, xml: &[u8]) {
    let file = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("junit-{name}.xml"));
    std::fs::write(&file, xml).unwrap();
    let out = Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(xsd)
        .arg(&file)
        .output()
        .expect("xmllint runs");
    assert!(
        out.status.success(),
        "{} does not validate against {}:\n{}\n{}",
        file.display(),
        xsd.display(),
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(xml)
    );
}

fn count(xml: &str, needle: &str) -> usize {
    xml.matches(needle).count()
}

#[test]
fn check_junit_has_a_case_per_config_and_validates() {
    let Some(xsd) = schema("check_junit_has_a_case_per_config_and_validates") else {
        return;
    };
    let out = loadbearing(&[
        "check",
        "kafka-flow-828/cassandra_refines",
        "kafka-flow-828/cassandra_unguarded",
        "kafka-flow-835/",
        "--format",
        "junit",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    validate(&xsd, "check", &out.stdout);
    let xml = String::from_utf8(out.stdout).unwrap();
    let configs = loadbearing_expected::suite::built_in().unwrap();
    let in_835 = configs
        .iter()
        .filter(|c| c.suite == "kafka-flow-835")
        .count();
    assert_eq!(count(&xml, "<testcase "), in_835 + 2, "{xml}");
    assert_eq!(count(&xml, "<testsuite "), 2, "{xml}");
    assert!(xml.contains("<testcase classname=\"kafka-flow-828\" name=\"cassandra_unguarded\""));
    assert!(!xml.contains("<failure"), "{xml}");
}

#[test]
fn a_mismatch_is_a_failure_carrying_the_counterexample_and_an_incomplete_run_an_error() {
    let test = "a_mismatch_is_a_failure_carrying_the_counterexample_and_an_incomplete_run_an_error";
    let Some(xsd) = schema(test) else {
        return;
    };
    // A suite that declares the unguarded Cassandra design holds: the check must disagree.
    let suite = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("junit-wrong-suite.toml");
    std::fs::write(
        &suite,
        r#"suite = "wrong"

[[config]]
name = "unguarded_said_to_hold"
model = "Cassandra"
constants = { MaxOffset = 3, Guarded = false, Tombstone = true }
properties = ["RefSafeSpec", "TypeOK"]
end_states = true
expected = "holds"
"#,
    )
    .unwrap();
    let suite = suite.display().to_string();
    let out = loadbearing(&["--suite", &suite, "check", "--format", "junit"]);
    assert_eq!(out.status.code(), Some(1));
    validate(&xsd, "mismatch", &out.stdout);
    let xml = String::from_utf8(out.stdout).unwrap();
    assert!(
        xml.contains("failures=\"1\"") && xml.contains("<failure type=\"failure\" message=\""),
        "{xml}"
    );
    // The failure names the property and carries the swimlane, one step per line.
    assert!(xml.contains("RefSafeSpec"), "{xml}");
    assert!(xml.contains("violated: RefSafeSpec"), "{xml}");

    let out = loadbearing(&[
        "check",
        "kafka-flow-828/cassandra_refines",
        "--max-states",
        "10",
        "--format",
        "junit",
    ]);
    assert_eq!(out.status.code(), Some(2));
    validate(&xsd, "incomplete", &out.stdout);
    let xml = String::from_utf8(out.stdout).unwrap();
    assert!(
        xml.contains("errors=\"1\"") && xml.contains("<error type=\"error\" message=\"incomplete"),
        "{xml}"
    );
}

#[test]
fn mutate_and_conform_junit_validate() {
    let Some(xsd) = schema("mutate_and_conform_junit_validate") else {
        return;
    };
    let out = loadbearing(&[
        "mutate",
        "kafka-flow-828/cassandra_refines",
        "--format",
        "junit",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    validate(&xsd, "mutate", &out.stdout);
    let xml = String::from_utf8(out.stdout).unwrap();
    // A case per guard of the Cassandra model, named by the guard.
    assert!(
        xml.contains("<testcase classname=\"Cassandra\" name=\""),
        "{xml}"
    );
    assert!(!xml.contains("<failure"), "{xml}");

    // The planted last-writer-wins store must diverge, and does: as expected, so it passes.
    let out = loadbearing(&[
        "conform",
        "store",
        "store-lww",
        "--traces",
        "3",
        "--seed",
        "1",
        "--format",
        "junit",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    validate(&xsd, "conform", &out.stdout);
    let xml = String::from_utf8(out.stdout).unwrap();
    assert_eq!(count(&xml, "<testcase "), 2, "{xml}");
    assert!(xml.contains("name=\"store-lww\""), "{xml}");
}

#[test]
fn check_workload_junit_has_a_case_per_variant_and_a_wrong_expectation_fails() {
    let test = "check_workload_junit_has_a_case_per_variant_and_a_wrong_expectation_fails";
    let Some(xsd) = schema(test) else {
        return;
    };
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/expected/workloads/write_skew.toml"
    );
    let out = loadbearing(&["check", "--workload", file, "--format", "junit"]);
    assert_eq!(out.status.code(), Some(0));
    validate(&xsd, "workload", &out.stdout);
    let xml = String::from_utf8(out.stdout).unwrap();
    assert_eq!(count(&xml, "<testcase "), 2, "{xml}");
    assert!(
        xml.contains("<testcase classname=\"workload write_skew\" name=\"plainsi\""),
        "{xml}"
    );
    assert!(!xml.contains("<failure"), "{xml}");
    // The same transactions, expecting plain SI to be serializable: a failure naming both.
    let wrong = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("junit-wrong-workload.toml");
    let text = std::fs::read_to_string(file).unwrap().replace(
        "plainsi = [\"G2-item (write skew)\"]",
        "plainsi = [\"serializable\"]",
    );
    std::fs::write(&wrong, text).unwrap();
    let out = loadbearing(&[
        "check",
        "--workload",
        wrong.to_str().unwrap(),
        "--format",
        "junit",
    ]);
    assert_eq!(out.status.code(), Some(1));
    validate(&xsd, "workload-wrong", &out.stdout);
    let xml = String::from_utf8(out.stdout).unwrap();
    assert_eq!(count(&xml, "<failure "), 1, "{xml}");
    assert!(
        xml.contains("expected serializable, reached G2-item (write skew)"),
        "{xml}"
    );
    assert!(xml.contains("T1 -rw(bob)-&gt; T2"), "{xml}");
}
