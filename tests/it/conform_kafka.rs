//! Conformance of the Kafka design (docs/models/kafka.md) and the Epoch design (docs/models/epoch.md), both ways, on the
//! in-memory transactional producer.

use loadbearing_conform::kafka::{self, replay_counterexample, Move, Variant};
use loadbearing_conform::{self as conform, targets, Backend, Seeded, Settings, Target};
use loadbearing_specs::infra::vocab::Op;
use loadbearing_specs::kafka::trace::KafkaEvent;
use loadbearing_trace::{parse_ndjson, to_ndjson, validate, Limits};

/// Whether the event is a zombie commit that was accepted (`Some(true)`) or refused.
fn zombie_commit(e: &KafkaEvent) -> Option<bool> {
    match e {
        KafkaEvent::ZombieCommit { outcome, .. } => Some(outcome.as_ref()?.committed()),
        _ => None,
    }
}

use crate::common::loadbearing;
use loadbearing_specs::epoch::model::Epoch;
use loadbearing_specs::kafka::model::Kafka;

fn memory(traces: usize, seed: u64) -> Settings {
    Settings {
        backend: Backend::MEMORY,
        traces,
        writers: 2,
        seed,
        save: None,
    }
}

fn guarded_model(max_offset: u8) -> Kafka {
    Kafka {
        max_offset,
        coupled: true,
        seeded: true,
    }
}

#[test]
fn the_guarded_kafka_design_conforms_and_follows_model_walks() {
    let result = conform::run(&targets::KAFKA, &memory(40, 11)).unwrap();
    assert!(
        result.ok,
        "{:?} {:?}",
        result.divergences.first().map(|d| d.text()),
        result.mismatches
    );
    assert_eq!(result.conforming, 40);
    assert!(
        result.events >= 40 * kafka::MAX_OFFSET as usize,
        "{}",
        result.events
    );
    assert!(
        result.steps > 0,
        "model walks were driven on the implementation"
    );
    assert!(result.mismatches.is_empty(), "{:?}", result.mismatches);
}

#[test]
fn guarded_traces_contain_fenced_zombie_commits_and_teardowns() {
    // The conformance above must not be vacuous: the zombie really commits and is refused,
    // and the coupled poll really tears it down.
    let mut rng = Seeded::new(11);
    let traces: Vec<Vec<KafkaEvent>> = (0..40)
        .map(|_| kafka::trace(Variant::GUARDED, &mut rng).unwrap())
        .collect();
    let all: Vec<&KafkaEvent> = traces.iter().flatten().collect();
    let refused = all
        .iter()
        .filter(|e| zombie_commit(e) == Some(false))
        .count();
    let torn = all
        .iter()
        .filter(|e| {
            matches!(
                e,
                KafkaEvent::Poll {
                    torn_down: Some(true),
                    ..
                }
            )
        })
        .count();
    assert!(refused > 10, "{refused} refused zombie commits");
    assert!(torn > 5, "{torn} coupled polls");
    assert!(all.iter().all(|e| zombie_commit(e) != Some(true)));
}

#[test]
fn a_run_replays_from_its_seed() {
    let run = |seed| {
        let mut rng = Seeded::new(seed);
        (0..5)
            .map(|_| {
                to_ndjson(&kafka::trace(targets::KAFKA_DECOUPLED.variant(), &mut rng).unwrap())
            })
            .collect::<Vec<String>>()
    };
    assert_eq!(run(3), run(3));
    assert_ne!(run(3), run(4));
}

/// Each mutant: caught, and the first divergence names the step that went wrong.
fn caught(target: &dyn Target, step: &str, reason: &str) {
    let result = conform::run(target, &memory(30, 7)).unwrap();
    assert!(result.ok, "{}: {:?}", target.name(), result.mismatches);
    assert!(result.divergent_traces > 0);
    let first = result.divergences.first().expect("a divergence is kept");
    assert_eq!(first.action, step, "{}", first.text());
    let text = first.text();
    assert!(text.contains(&format!("\"action\":\"{step}\"")), "{text}");
    assert!(text.contains(reason), "{text}");
}

#[test]
fn the_decoupled_capture_is_caught_at_the_poll_that_does_not_tear_down() {
    caught(
        &targets::KAFKA_DECOUPLED,
        "Poll",
        "was not torn down: the model couples the capture and the teardown",
    );
}

#[test]
fn the_unseeded_first_commit_is_caught_landing() {
    caught(
        &targets::KAFKA_UNSEEDED,
        "ZombieCommit",
        "a stale write landed",
    );
}

#[test]
fn the_unfenced_commit_is_caught_landing() {
    caught(
        &targets::KAFKA_UNFENCED,
        "ZombieCommit",
        "a stale write landed",
    );
}

#[test]
fn the_epoch_design_is_caught_by_the_kafka_model() {
    caught(&targets::EPOCH, "ZombieCommit", "a stale write landed");
}

#[test]
fn without_its_teardown_flag_a_decoupled_trace_diverges_at_the_zombies_next_commit() {
    // The Poll event's `tornDown` is dropped: the checker searches both, and the guarded
    // model has no zombie left to commit after the capture.
    let mut rng = Seeded::new(7);
    let mut found = false;
    for _ in 0..40 {
        let mut events = kafka::trace(targets::KAFKA_DECOUPLED.variant(), &mut rng).unwrap();
        for e in &mut events {
            if let KafkaEvent::Poll { torn_down, .. } = e {
                *torn_down = None;
            }
        }
        let Some(poll) = events
            .iter()
            .position(|e| matches!(e, KafkaEvent::Poll { .. }))
        else {
            continue;
        };
        let Some(commit) = events[poll..]
            .iter()
            .position(|e| zombie_commit(e).is_some())
        else {
            continue;
        };
        let verdict = validate(
            &guarded_model(kafka::MAX_OFFSET),
            &events,
            Limits::default(),
        );
        let d = verdict
            .divergence
            .expect("a commit after the capture diverges");
        assert_eq!(d.matched, poll + commit, "{}", d.text());
        assert!(
            d.text()
                .contains("no allowed action reports `ZombieCommit`"),
            "{}",
            d.text()
        );
        found = true;
    }
    assert!(found, "no decoupled trace committed after its poll");
}

#[test]
fn counterexamples_reproduce_on_the_broken_variants_and_the_guarded_design_refuses_them() {
    for target in [
        &targets::KAFKA_DECOUPLED,
        &targets::KAFKA_UNSEEDED,
        &targets::KAFKA_UNFENCED,
        &targets::EPOCH,
    ] {
        let cx = replay_counterexample(target).unwrap();
        let name = target.name();
        assert!(
            cx.path.iter().any(|m| matches!(m, Move::ZombieCommit(_))),
            "{name}: {cx:?}"
        );
        // Broken: the stale zombie commit lands and the topic's record regresses, exactly as
        // the model's topic does step by step.
        assert!(cx.broken.zombie_landed, "{name}: {:?}", cx.broken);
        assert!(cx.broken.regressed, "{name}: {:?}", cx.broken);
        assert!(
            cx.broken.mismatches.is_empty(),
            "{name}: {:?}",
            cx.broken.mismatches
        );
        let landed = cx
            .broken
            .events
            .iter()
            .any(|e| zombie_commit(e) == Some(true));
        assert!(landed, "{name}");
        // Guarded: every zombie commit refused, no regression, the guarded model's topic.
        assert!(!cx.guarded.zombie_landed, "{name}: {:?}", cx.guarded);
        assert!(!cx.guarded.regressed, "{name}: {:?}", cx.guarded);
        assert!(
            cx.guarded.mismatches.is_empty(),
            "{name}: {:?}",
            cx.guarded.mismatches
        );
        // The topics part ways: the guard is load-bearing on this schedule.
        assert_ne!(cx.broken.topics, cx.guarded.topics, "{name}");
        println!(
            "{name}: {} {:?} log {}\n  broken  {:?}\n  guarded {:?}",
            cx.spec.config,
            cx.path,
            cx.log,
            cx.broken
                .topics
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>(),
            cx.guarded
                .topics
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
        );
    }
}

#[test]
fn the_epoch_counterexample_is_the_late_init_then_a_stale_commit() {
    let cx = replay_counterexample(&targets::EPOCH).unwrap();
    assert_eq!(cx.spec.config, "epoch_refines");
    assert!(cx.path.contains(&Move::ZombieInit), "{:?}", cx.path);
    let init = cx.path.iter().position(|m| *m == Move::ZombieInit).unwrap();
    let commit = cx
        .path
        .iter()
        .position(|m| matches!(m, Move::ZombieCommit(_)))
        .unwrap();
    assert!(init < commit);
    // The stale snapshot at the higher offset lands, then the live owner's lower one: the
    // topic's record for the key moves back. The guarded design never holds the stale one.
    let shown = |topics: &[loadbearing_specs::infra::vocab::Cell]| -> Vec<String> {
        topics.iter().map(|c| c.to_string()).collect()
    };
    let broken = shown(&cx.broken.topics);
    let stale = broken
        .iter()
        .position(|t| t == "Snap(2, {1,2})")
        .expect("landed");
    assert_eq!(broken[stale + 1], "Snap(1, {1})", "{broken:?}");
    assert!(!shown(&cx.guarded.topics).contains(&"Snap(2, {1,2})".to_string()));
}

#[test]
fn epoch_traces_fit_the_epoch_model_except_where_the_owner_reloaded_a_zombie_snapshot() {
    let model = Epoch {
        max_offset: kafka::MAX_OFFSET,
    };
    let mut rng = Seeded::new(7);
    let mut conforming = 0;
    for _ in 0..200 {
        let events = kafka::trace(targets::EPOCH.variant(), &mut rng).unwrap();
        match validate(&model, &events, Limits::default()).divergence {
            None => conforming += 1,
            Some(d) => {
                // The known gap: the model's owner writes the correct fold, the
                // implementation's owner its in-memory state, reloaded from a snapshot a
                // zombie commit wrote.
                assert_eq!(d.action, "OwnerFold", "{}", d.text());
                assert!(d.text().contains("the topic's last record"), "{}", d.text());
                let before = &events[..d.matched];
                let recover = before
                    .iter()
                    .rposition(|e| matches!(e, KafkaEvent::OwnerRecover { .. }));
                let landed = before.iter().position(|e| zombie_commit(e) == Some(true));
                assert!(
                    matches!((landed, recover), (Some(l), Some(r)) if l < r),
                    "{}",
                    d.text()
                );
            }
        }
    }
    assert!(conforming >= 180, "{conforming} of 200");
}

const VIOLATING: &str = r#"{"v":2,"vocabulary":"kafka","action":"Rebalance","liveGen":2}
{"v":2,"vocabulary":"kafka","action":"ZombieCommit","offset":2,"op":"persist","outcome":{"kind":"committed"},"topic":{"kind":"snap","offset":2,"contents":[1,2]}}
"#;

#[test]
fn a_hand_written_stale_commit_is_rejected_with_a_reason() {
    let events = parse_ndjson::<KafkaEvent>(VIOLATING).unwrap();
    let verdict = validate(&guarded_model(3), &events, Limits::default());
    assert!(!verdict.conforming);
    let d = verdict.divergence.unwrap();
    assert_eq!(d.line, 2);
    let text = d.text();
    assert!(
        text.contains("the first 1 events match the model path: Rebalance"),
        "{text}"
    );
    assert!(
        text.contains("ZombieCommit(2): the zombie's commit at offset 2 was accepted, but the model fences it"),
        "{text}"
    );
    // The same commit refused fits.
    let refused = VIOLATING.replace(
        r#""outcome":{"kind":"committed"},"topic":{"kind":"snap","offset":2,"contents":[1,2]}"#,
        r#""outcome":{"kind":"fenced","reason":"ILLEGAL_GENERATION"},"topic":{"kind":"absent"}"#,
    );
    assert!(
        validate(
            &guarded_model(3),
            &parse_ndjson(&refused).unwrap(),
            Limits::default()
        )
        .conforming
    );
    // The Epoch model accepts the stale commit once the zombie initialised late.
    let epoch = VIOLATING.replace(
        r#"{"v":2,"vocabulary":"kafka","action":"ZombieCommit""#,
        "{\"v\":2,\"vocabulary\":\"kafka\",\"action\":\"ZombieInit\"}\n{\"v\":2,\"vocabulary\":\"kafka\",\"action\":\"ZombieCommit\"",
    );
    assert!(
        validate(
            &Epoch { max_offset: 3 },
            &parse_ndjson(&epoch).unwrap(),
            Limits::default()
        )
        .conforming
    );
}

#[test]
fn a_hand_written_out_of_order_fold_is_rejected() {
    let text = r#"{"v":2,"vocabulary":"kafka","action":"OwnerFold","offset":2,"op":"persist","topic":{"kind":"snap","offset":2,"contents":[1,2]}}"#;
    let d = validate(
        &guarded_model(3),
        &parse_ndjson(text).unwrap(),
        Limits::default(),
    )
    .divergence
    .unwrap();
    assert!(
        d.text()
            .contains("the owner folded offset 2, the model's owner folds offset 1 next"),
        "{}",
        d.text()
    );
}

#[test]
fn the_cli_validates_a_kafka_trace_file() {
    let dir = std::env::temp_dir().join(format!("conform-kafka-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("stale.ndjson");
    std::fs::write(&file, VIOLATING).unwrap();
    let out = loadbearing(&[
        "conform",
        "--trace",
        file.to_str().unwrap(),
        "--model",
        "kafka_refines",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("does not conform to Kafka"), "{stdout}");
    assert!(stdout.contains("a stale write landed"), "{stdout}");
    let out = loadbearing(&[
        "conform",
        "--trace",
        file.to_str().unwrap(),
        "--model",
        "Epoch",
    ]);
    // Without a ZombieInit, the Epoch model has no zombie either.
    assert_eq!(out.status.code(), Some(1));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_cli_runs_the_kafka_targets() {
    let out = loadbearing(&[
        "conform",
        "kafka",
        "kafka-decoupled",
        "kafka-unseeded",
        "kafka-unfenced",
        "epoch",
        "--traces",
        "10",
        "--seed",
        "7",
        "--format",
        "json",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let text = json.to_string();
    for target in [
        "kafka",
        "kafka-decoupled",
        "kafka-unseeded",
        "kafka-unfenced",
        "epoch",
    ] {
        assert!(text.contains(&format!("\"target\":\"{target}\"")), "{text}");
    }
}

#[test]
fn initial_states_are_built_from_the_ops_the_trace_reveals() {
    use loadbearing_trace::Conform;
    let model = guarded_model(4);
    let fold = |o: u64, op: Op| KafkaEvent::OwnerFold {
        offset: o,
        op,
        outcome: None,
        topic: None,
    };
    // Offsets 1 and 3 revealed, 2 and 4 open: four logs, not sixteen.
    let events = [fold(1, Op::Persist), fold(3, Op::Delete)];
    let logs: Vec<String> = model
        .initial_candidates(&events)
        .iter()
        .map(|s| s.op.render(4))
        .collect();
    let mut expected = Vec::new();
    for two in ["persist", "delete"] {
        for four in ["persist", "delete"] {
            expected.push(format!("<persist, {two}, delete, {four}>"));
        }
    }
    let (mut got, mut want) = (logs.clone(), expected);
    got.sort();
    want.sort();
    assert_eq!(got, want);
    // Contradicting events leave no log.
    assert!(model
        .initial_candidates(&[fold(1, Op::Persist), fold(1, Op::Delete)])
        .is_empty());
}

/// The same both ways on a real Kafka 4.4 broker: the broker's group coordinator fences the
/// stale generation, the transaction coordinator the producer epochs, and the topic is read
/// back read_committed. Slow (every world joins a real group and rebalances it), so one trace
/// and the counterexamples.
#[test]
#[cfg(feature = "kafka")]
fn on_a_real_broker_the_design_conforms_and_the_counterexamples_land_only_on_the_mutants() {
    let Some(broker) = loadbearing_test_support::or_skip(
        "on_a_real_broker_the_design_conforms_and_the_counterexamples_land_only_on_the_mutants",
        loadbearing_impls_kafka::harness::shared(),
    ) else {
        return;
    };
    let backend = Backend::at(conform::BackendKind::Kafka, broker.bootstrap());
    let mut rng = Seeded::new(7);
    let events = kafka::trace_on(&backend, Variant::GUARDED, &mut rng).unwrap();
    let verdict = validate(
        &guarded_model(kafka::MAX_OFFSET),
        &events,
        Limits::default(),
    );
    assert!(
        verdict.conforming,
        "{}",
        verdict.divergence.map(|d| d.text()).unwrap_or_default()
    );
    assert!(events
        .iter()
        .any(|e| matches!(e, KafkaEvent::OwnerFold { .. })));
    for target in [
        &targets::KAFKA_DECOUPLED,
        &targets::KAFKA_UNSEEDED,
        &targets::EPOCH,
    ] {
        let cx = kafka::replay_counterexample_on(&backend, target).unwrap();
        let name = target.name();
        assert!(cx.broken.zombie_landed, "{name}: {:?}", cx.broken);
        assert!(cx.broken.regressed, "{name}: {:?}", cx.broken);
        assert!(
            cx.broken.mismatches.is_empty(),
            "{name}: {:?}",
            cx.broken.mismatches
        );
        assert!(!cx.guarded.zombie_landed, "{name}: {:?}", cx.guarded);
        assert!(!cx.guarded.regressed, "{name}: {:?}", cx.guarded);
        assert!(
            cx.guarded.mismatches.is_empty(),
            "{name}: {:?}",
            cx.guarded.mismatches
        );
        // How the guarded design refused: the teardown, or the broker's fence.
        let refusal = cx
            .guarded
            .events
            .iter()
            .find_map(|e| match e {
                KafkaEvent::ZombieCommit {
                    outcome: Some(outcome),
                    ..
                } => Some(outcome.to_string()),
                _ => None,
            })
            .unwrap_or_default();
        println!("{name} on the guarded design: {refusal}");
    }
}
