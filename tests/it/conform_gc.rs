//! Conformance of the group commit to GroupCommit, both ways, and the store targets on a real
//! Cassandra 5 node.

use crate::common;

use loadbearing_conform::{self as conform, group_commit::events_of, targets, Backend, Settings};
use loadbearing_impls_kafka::trace::{KafkaStep, TxnOutcome};
use loadbearing_specs::group_commit::model::GroupCommit;
use loadbearing_specs::group_commit::trace::{GcEvent, Writer};
use loadbearing_trace::{validate, Limits};

fn memory(traces: usize, seed: u64) -> Settings {
    common::servers::settings(Backend::MEMORY, traces, 8, seed)
}

#[test]
fn eight_concurrent_group_commit_writers_conform_and_model_paths_replay() {
    let result = conform::run(&targets::GROUP_COMMIT, &memory(15, 21)).unwrap();
    assert!(
        result.ok,
        "{:?} {:?}",
        result.divergences.first().map(|d| d.text()),
        result.mismatches
    );
    assert_eq!(result.conforming, 15);
    // Each writer's offer, acq, commit and await_, and the flow's schedules.
    assert!(result.events >= 15 * 8 * 4, "{} events", result.events);
    // Every path of the small configs plus the random walks, all compared step by step.
    assert!(result.steps > 10_000, "{} replayed steps", result.steps);
    assert!(result.mismatches.is_empty());
}

#[test]
fn the_ungated_mutant_is_caught_and_its_counterexample_reproduces() {
    let result = conform::run(&targets::GROUP_COMMIT_UNGATED, &memory(10, 21)).unwrap();
    assert!(result.ok, "{:?}", result.mismatches);
    assert!(result.divergent_traces > 0);
    let text = result.divergences[0].text();
    assert!(text.contains(r#""action":"sched""#), "{text}");
    assert!(text.contains("were not durable"), "{text}");
    // The checker's shortest counterexample, and the shortest in which the flow offers first.
    assert_eq!(result.replays.len(), 2);
    let [checker, in_order] = [&result.replays[0], &result.replays[1]];
    assert_eq!(
        checker.steps,
        ["sched(1)", "offer(2)", "acq(2)", "commit(2)"]
    );
    assert!(checker
        .broken
        .contains("input offset 1 committed while only [] are durable"));
    assert!(
        in_order.broken.contains("committed while"),
        "{}",
        in_order.broken
    );
    assert!(
        in_order
            .guarded
            .contains("refused, the write of offset 1 is not durable"),
        "{}",
        in_order.guarded
    );
}

fn commit(writer: u64, writes: usize, offset: i64) -> KafkaStep {
    KafkaStep::Commit {
        partition: 0,
        writer,
        writes,
        offset,
    }
}

fn offer(writer: u64, offset: i64) -> KafkaStep {
    KafkaStep::Offer {
        partition: 0,
        writer,
        key: format!("k{offset}"),
        offset,
    }
}

fn acq(writer: u64) -> KafkaStep {
    KafkaStep::Acq {
        partition: 0,
        writer,
    }
}

#[test]
fn writer_ids_become_the_offsets_they_write() {
    // Implementation writer 7 writes offset 2: the model's writer 2.
    let events = events_of(&[offer(7, 2), acq(7), commit(7, 1, 1)]);
    assert_eq!(
        events[0],
        GcEvent::Offer {
            writer: Writer::Of(2)
        }
    );
    assert_eq!(
        events[2],
        GcEvent::Commit {
            writer: Writer::Of(2),
            writes: Some(1),
            co: Some(0)
        }
    );
}

#[test]
fn a_commit_that_drains_past_the_cap_or_fails_does_not_fit() {
    let model = GroupCommit {
        n: 2,
        cap: 1,
        gated: true,
    };
    let both = events_of(&[offer(1, 1), offer(2, 2), acq(1), commit(1, 2, 1)]);
    let verdict = validate(&model, &both, Limits::default());
    let text = verdict.divergence.expect("two writes past Cap 1").text();
    assert!(
        text.contains("the commit drained 2 writes; the model drains 1"),
        "{text}"
    );
    let failed = events_of(&[
        offer(1, 1),
        acq(1),
        commit(1, 1, 1),
        KafkaStep::Transaction {
            partition: 0,
            writer: 1,
            writes: 1,
            offset: 1,
            outcome: TxnOutcome::Failed("INJECTED".into()),
        },
    ]);
    let verdict = validate(&model, &failed, Limits::default());
    let text = verdict.divergence.expect("a failed transaction").text();
    assert!(
        text.contains("in the model every transaction commits"),
        "{text}"
    );
    // The same trace with a committed transaction fits.
    let mut ok: Vec<GcEvent> = failed.clone();
    let GcEvent::Transaction { outcome, .. } = &mut ok[3] else {
        panic!("the fourth event is the transaction: {:?}", ok[3]);
    };
    *outcome = Some(loadbearing_specs::kafka::trace::TxnOutcome::Committed);
    assert!(validate(&model, &ok, Limits::default()).conforming);
}

/// The group commit on a real Kafka 4.4 broker (CI provides the jars; see .ci/setup.d).
#[test]
#[cfg(feature = "kafka")]
fn concurrent_group_commits_on_kafka_conform() {
    let Some(broker) = common::servers::kafka() else {
        return;
    };
    let settings = common::servers::settings(
        Backend::at(conform::BackendKind::Kafka, broker.bootstrap()),
        3,
        8,
        5,
    );
    let result = conform::run(&targets::GROUP_COMMIT, &settings).unwrap();
    assert!(
        result.ok,
        "{:?} {:?}",
        result.divergences.first().map(|d| d.text()),
        result.mismatches
    );
    assert_eq!(result.backend, "kafka");
    let result = conform::run(&targets::GROUP_COMMIT_UNGATED, &settings).unwrap();
    assert!(result.ok, "{:?}", result.mismatches);
}

/// The store targets on a real Cassandra 5 node: its persist is the three-LWT compound.
#[test]
#[cfg(feature = "cassandra")]
fn the_store_targets_run_on_cassandra() {
    let Some(node) = common::servers::cassandra() else {
        return;
    };
    let settings = common::servers::settings(
        Backend::at(
            conform::BackendKind::Store(conform::StoreBackend::Cassandra),
            node.node(),
        ),
        5,
        8,
        9,
    );
    let store = conform::run(&targets::STORE, &settings).unwrap();
    assert!(
        store.ok,
        "{:?}",
        store.divergences.first().map(|d| d.text())
    );
    assert_eq!(store.model.name(), "CasFirstWrite");
    let lww = conform::run(&targets::STORE_LWW, &settings).unwrap();
    assert!(lww.ok && lww.divergent_traces > 0);
    let compound = conform::run(&targets::COMPOUND, &settings).unwrap();
    assert!(
        compound.ok,
        "{:?}",
        compound.divergences.first().map(|d| d.text())
    );
}
