//! The distributed engine as a user runs it: two `loadbearing check --distributed` processes
//! on loopback must give what the single-process engine gives, config for config.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Output, Stdio};

use serde_json::Value;

use crate::common::loadbearing_command;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A host file naming two loopback ports free a moment ago.
fn hostfile(name: &str) -> PathBuf {
    let ports: Vec<u16> = (0..2)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect::<Vec<_>>()
        .iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect();
    let dir = std::env::temp_dir().join(format!("lb-distributed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(name);
    let lines: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    file
}

/// Each config's JSON report by name, without what differs between runs of one engine
/// (time, and bytes, which the workers' shares of the visited set add up differently).
fn by_config(stdout: &[u8]) -> BTreeMap<String, Value> {
    let results: Value = serde_json::from_slice(stdout).expect("the report is JSON");
    results
        .as_array()
        .expect("one entry a config")
        .iter()
        .map(|r| {
            let mut r = r.clone();
            let object = r.as_object_mut().unwrap();
            // How the search went, not what it found: the local engine searches the
            // first-write models by orbits, the distributed one every state.
            for varying in ["seconds", "visited_bytes", "graph_bytes", "orbits_searched"] {
                object.remove(varying);
            }
            (object["config"].as_str().unwrap().to_string(), r)
        })
        .collect()
}

/// Runs `filter` on two processes of one worker each, and returns process 0's output.
fn two_processes(filter: &str, hosts: &std::path::Path) -> (Output, Output) {
    let hosts = hosts.to_str().unwrap();
    let common = [
        "check",
        filter,
        "--format",
        "json",
        "--distributed",
        "-n",
        "2",
        "--hostfile",
        hosts,
    ];
    let second = loadbearing_command(&common)
        .args(["-p", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("process 1 starts");
    let first = loadbearing_command(&common)
        .args(["-p", "0"])
        .output()
        .expect("process 0 runs");
    (first, second.wait_with_output().expect("process 1 ends"))
}

fn agrees_with_the_local_engine(suite: &str) {
    let configs: Vec<_> = loadbearing_expected::suite::built_in()
        .unwrap()
        .into_iter()
        .filter(|c| c.suite == suite)
        .collect();
    let refused: Vec<&str> = configs
        .iter()
        .filter(|c| loadbearing_expected::run::distributable(c).is_err())
        .map(|c| c.name.as_str())
        .collect();
    // Refused are exactly the configs with a temporal property: every safety and refinement
    // config of the suite is checked distributed.
    for config in &configs {
        let temporal = (config.entry.temporal)(&config.constants);
        let asks_temporal = config.properties.iter().any(|p| temporal.contains(p));
        assert_eq!(
            refused.contains(&config.name.as_str()),
            asks_temporal,
            "{}",
            config.name
        );
    }

    let filter = format!("{suite}/");
    let local = loadbearing_command(&["check", &filter, "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(local.status.code(), Some(0), "{}", stderr(&local));
    let local = by_config(&local.stdout);

    let hosts = hostfile(suite);
    let (first, second) = two_processes(&filter, &hosts);
    // Refusals are bad input (exit 2), named on process 0's standard error; process 1
    // reaches the same verdict.
    let expected_code = if refused.is_empty() { 0 } else { 2 };
    assert_eq!(
        first.status.code(),
        Some(expected_code),
        "{}",
        stderr(&first)
    );
    assert_eq!(
        second.status.code(),
        Some(expected_code),
        "{}",
        stderr(&second)
    );
    for name in &refused {
        assert!(
            stderr(&first).contains(&format!("error: {name}: ")),
            "{name} refused by name: {}",
            stderr(&first)
        );
    }
    let distributed = by_config(&first.stdout);
    assert_eq!(distributed.len(), configs.len() - refused.len());
    assert!(!distributed.is_empty());
    for (name, report) in &distributed {
        assert_eq!(
            Some(report),
            local.get(name),
            "{name}: the distributed report differs from the local one"
        );
    }
    // The suite has violations: the counterexamples compared above are real ones.
    assert!(distributed
        .values()
        .any(|r| r.get("counterexample").is_some()));
}

#[test]
fn two_processes_agree_with_the_local_engine_on_the_828_suite() {
    agrees_with_the_local_engine("kafka-flow-828");
}

#[test]
fn two_processes_agree_with_the_local_engine_on_the_835_suite() {
    agrees_with_the_local_engine("kafka-flow-835");
}

#[test]
fn two_processes_agree_with_the_local_engine_on_the_ssi_suite() {
    agrees_with_the_local_engine("ssi");
}

#[test]
fn a_temporal_property_is_refused_by_name() {
    let out = loadbearing_command(&[
        "check",
        "kafka-flow-828/gc_cap1",
        "--distributed",
        "-w",
        "2",
    ])
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let text = stderr(&out);
    assert!(
        text.contains("`Termination` is a temporal property"),
        "{text}"
    );
    assert!(text.contains("without --distributed"), "{text}");
}

#[test]
fn an_actor_model_is_refused_by_name() {
    let out = loadbearing_command(&["check", "actors/", "--distributed"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cannot be checked distributed"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_malformed_host_file_is_bad_input() {
    let dir = std::env::temp_dir().join(format!("lb-distributed-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("hosts");
    std::fs::write(&file, "127.0.0.1:2101\nnot an address\n").unwrap();
    let out = loadbearing_command(&[
        "check",
        "epoch",
        "--distributed",
        "-n",
        "2",
        "--hostfile",
        file.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("line 2"), "{}", stderr(&out));
}

#[test]
fn a_process_number_outside_the_run_is_bad_input() {
    let out = loadbearing_command(&["check", "epoch", "--distributed", "-n", "2", "-p", "2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("process 2"), "{}", stderr(&out));
}

#[test]
fn workers_in_one_process_agree_with_the_local_engine() {
    // Threads of one process pass states without serializing them: the order and the walk
    // back are the same code, checked here without a network.
    let filter = "kafka-flow-835/";
    let local = loadbearing_command(&["check", filter, "--format", "json"])
        .output()
        .unwrap();
    let threads = loadbearing_command(&[
        "check",
        filter,
        "--format",
        "json",
        "--distributed",
        "-w",
        "3",
    ])
    .output()
    .unwrap();
    assert_eq!(threads.status.code(), Some(2), "{}", stderr(&threads));
    let local = by_config(&local.stdout);
    for (name, report) in by_config(&threads.stdout) {
        assert_eq!(Some(&report), local.get(&name), "{name}");
    }
}
