//! `loadbearing explore` over HTTP, as the browser uses it: each test starts the explorer on a
//! free port of 127.0.0.1, then reads `/.status`, walks `/.states/…` along the counterexample
//! our engine found, and runs Stateright's checker to completion.

use crate::common::{collapse, http, Explorer};
use loadbearing::trace;
use loadbearing_expected::suite::{self, Config, Expected};
use loadbearing_refinement::Options;
use serde_json::Value;

fn config(name: &str) -> Config {
    suite::built_in()
        .unwrap()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no config {name}"))
}

fn json(explorer: &Explorer, path: &str) -> Value {
    let (status, body) = http(explorer.port, "GET", path);
    assert_eq!(status, 200, "GET {path}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {path}: {e}: {body}"))
}

#[test]
fn status_names_the_model_and_the_configs_properties() {
    let explorer = Explorer::start("cassandra_refines");
    let status = json(&explorer, "/.status");
    // The config as a line, not the Rust type Stateright's checker runs (`Explorable<…>`).
    let model = status["model"].as_str().unwrap();
    assert!(
        model.starts_with("cassandra_refines: Cassandra with "),
        "{status}"
    );
    assert!(!model.contains("Explorable"), "{status}");
    let names: Vec<&str> = status["properties"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p[1].as_str().unwrap())
        .collect();
    // The refinement is a property the explorer checks; RefLive (eventually) is ours alone.
    assert_eq!(
        names,
        [
            "RefSafeSpec",
            "RefDurableOK",
            "RefTypeOK",
            "INV_NoStaleOverwrite",
            "INV_NoCorruptDurable",
            "TypeOK",
            "OwnerReachesEnd"
        ]
    );
    assert!(explorer.announced.contains("http://127.0.0.1:"));
}

/// Walks the explorer along our shortest counterexample: each step's action, state and
/// verdict are where the explorer's path says.
fn walk_counterexample(name: &str) {
    let config = config(name);
    let traced = trace::trace(&config, &Options::default()).unwrap();
    let cx = traced.counterexample().unwrap().clone();
    let path = traced.explorer_path.clone().unwrap();
    assert_eq!(path.len(), cx.steps.len(), "{name}");
    let explorer = Explorer::start(name);
    let link = trace::explorer_fragment(&path);
    assert!(
        explorer.announced.contains(&link),
        "{name}: the printed link is not {link}:\n{}",
        explorer.announced
    );
    for (i, step) in cx.steps.iter().enumerate() {
        let prefix: String = path[..i].iter().map(|p| format!("/{p}")).collect();
        let choices = json(&explorer, &format!("/.states{prefix}"));
        let chosen = choices
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["actionIndex"] == path[i])
            .unwrap_or_else(|| panic!("{name}: step {i}: no choice {} in {choices}", path[i]));
        match &step.action {
            Some(action) => assert_eq!(chosen["action"], action.as_str(), "{name} step {i}"),
            // An initial state: labelled `Init` (and what sets it apart from the others).
            None => assert!(
                chosen["action"]
                    .as_str()
                    .is_some_and(|a| a.starts_with("Init")),
                "{name}: {chosen}"
            ),
        }
        let shown = collapse(chosen["state"].as_str().unwrap());
        for (k, v) in &step.state {
            assert!(
                shown.contains(&collapse(&format!("{k} = {v}"))),
                "{name} step {i}: {k} = {v} not in\n{shown}"
            );
        }
        let mark = format!(
            "step {i} of {} of the shortest counterexample to {}",
            cx.len(),
            cx.property
        );
        assert!(shown.contains(&mark), "{name}: `{mark}` not in\n{shown}");
    }
    if cx.abstract_step.is_some() {
        // The offending step says so, with the abstract model's image beside the state.
        let prefix: String = path[..path.len() - 1]
            .iter()
            .map(|p| format!("/{p}"))
            .collect();
        let choices = json(&explorer, &format!("/.states{prefix}"));
        let last = choices
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["actionIndex"] == path[path.len() - 1])
            .unwrap();
        let outcome = last["outcome"].as_str().unwrap();
        assert!(
            outcome.contains(&format!("✗ {} is violated", cx.property)),
            "{outcome}"
        );
        assert!(outcome.contains("maps this state to"), "{outcome}");
    }
}

/// Every expected failure of the suite, whatever its kind (invariant, refinement, lasso) and
/// model, opens in the explorer on exactly our counterexample.
#[test]
fn the_explorer_walks_every_expected_failure() {
    let configs = suite::built_in().unwrap();
    let failing: Vec<&Config> = configs
        .iter()
        .filter(|c| trace::expects_failure(c))
        .collect();
    assert!(failing.len() >= 14);
    for config in failing {
        walk_counterexample(&config.name);
    }
}

#[test]
fn a_bad_path_is_a_404() {
    let explorer = Explorer::start("replay_fix_off");
    for path in [
        "/.states/0/999",
        "/.states/99",
        "/.states/one/two",
        "/nowhere",
    ] {
        let (status, _) = http(explorer.port, "GET", path);
        assert_eq!(status, 404, "GET {path}");
    }
}

/// Stateright's own checker, run to completion on every config of the suite, agrees with ours:
/// the same violated invariant or refinement; for a config that holds, no invariant violated,
/// every witness found and the reference state count.
#[test]
fn run_to_completion_agrees_with_our_verdict_on_every_config() {
    let configs = suite::built_in().unwrap();
    for config in &configs {
        let failing = match &config.expected {
            Expected::Holds => None,
            Expected::Violates(p) => Some(p.as_str()),
            Expected::Deadlock => continue,
        };
        // The label: a bare name means the first suite's config of that name.
        let explorer = Explorer::start(&config.label);
        let name = &config.label;
        let (status, _) = http(explorer.port, "POST", "/.runtocompletion");
        assert_eq!(status, 200);
        let mut report = json(&explorer, "/.status");
        // A guard against a hang, not a timing check: the largest actor config takes tens of
        // seconds in a debug build on a loaded 2-core machine.
        let started = std::time::Instant::now();
        while report["done"] != true && started.elapsed().as_secs() < 600 {
            std::thread::sleep(std::time::Duration::from_millis(20));
            report = json(&explorer, "/.status");
        }
        assert_eq!(report["done"], true, "{name}: {report}");
        let properties = report["properties"].as_array().unwrap();
        if let Some(f) = failing {
            // An `eventually` failure is ours alone: the explorer does not check liveness.
            if let Some(p) = properties.iter().find(|p| p[1] == f) {
                assert!(!p[2].is_null(), "{name}: Stateright found no {f}: {report}");
            }
            continue;
        }
        for p in properties {
            match p[0].as_str().unwrap() {
                "Always" => assert!(p[2].is_null(), "{name}: {p}"),
                "Sometimes" => assert!(!p[2].is_null(), "{name}: {p}"),
                _ => {}
            }
        }
        if let Some(states) = config.states {
            assert_eq!(
                report["unique_state_count"].as_u64(),
                Some(states),
                "{name}"
            );
        }
    }
}

/// `--set` may make a config fail that declares it holds: the link is printed, and the
/// mismatch said.
#[test]
fn set_can_turn_a_guard_off_in_the_explorer() {
    let explorer = Explorer::start_with("cassandra_refines", &["--set", "Guarded=false"]);
    assert!(
        explorer
            .counterexample_url()
            .is_some_and(|u| u.ends_with("#/steps/0/2/0")),
        "{}",
        explorer.announced
    );
    assert!(explorer
        .announced
        .contains("not as the config declares: expected holds, got violates RefSafeSpec"));
    let choices = json(&explorer, "/.states/0/2");
    let fold = &choices[0];
    assert_eq!(fold["action"], "OwnerFold");
    assert!(fold["outcome"]
        .as_str()
        .unwrap()
        .contains("✗ RefSafeSpec is violated"));
}

#[test]
fn a_taken_port_is_a_clear_error_not_a_panic() {
    let taken = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let port = taken.local_addr().unwrap().port();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_loadbearing"))
        .args(["explore", "replay_fix_off", "--port", &port.to_string()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("cannot listen on 127.0.0.1:{port}")),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn an_unknown_config_is_a_clear_error() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_loadbearing"))
        .args(["explore", "cassandra"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("did you mean cassandra_refines"),
        "{stderr}"
    );
}

/// Actor models draw Stateright's sequence diagram: the explorer's wrapper forwards `as_svg`.
#[test]
fn an_actor_model_shows_its_sequence_diagram() {
    for config in [
        "cassandra_actors_unguarded",
        "epoch_actors_sws",
        "gc_actors_ungated",
        "ssi_actors_prefix_write_skew",
    ] {
        let explorer = Explorer::start(config);
        let steps = json(&explorer, "/.states/0/0");
        let svgs: Vec<&str> = steps
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|s| s["svg"].as_str())
            .collect();
        assert!(
            !svgs.is_empty(),
            "{config}: no step carries an svg: {steps}"
        );
        assert!(
            svgs.iter().all(|svg| svg.contains("<svg")),
            "{config}: {svgs:?}"
        );
    }
}

/// The labels the explorer gives a config's initial states.
fn init_labels(config: &str) -> Vec<String> {
    let explorer = Explorer::start(config);
    json(&explorer, "/.states")
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            s["action"]
                .as_str()
                .unwrap_or_else(|| panic!("{config}: an initial state without a label: {s}"))
                .to_string()
        })
        .collect()
}

/// Stateright's page calls initial states `Init 0` … `Init N`: here each is labelled with what
/// sets it apart from the others (the Kafka model's event logs), or `Init` alone.
#[test]
fn initial_states_say_what_sets_them_apart() {
    let labels = init_labels("kafka_refines");
    assert!(labels.len() > 1, "{labels:?}");
    assert!(
        labels.iter().all(|l| l.starts_with("Init: op=")),
        "{labels:?}"
    );
    let distinct: std::collections::HashSet<&String> = labels.iter().collect();
    assert_eq!(distinct.len(), labels.len(), "{labels:?}");

    let labels = init_labels("cassandra_refines");
    assert!(labels.iter().all(|l| l.starts_with("Init")), "{labels:?}");
}
