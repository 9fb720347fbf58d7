//! The flow targets of `loadbearing conform`: owner and zombie partition flows against the
//! Cassandra model, the restarted owner against ReplayFence, both ways.

use crate::common;

use crate::common::loadbearing;
use loadbearing_conform::fence::replay_fence_cx;
use loadbearing_conform::flow::{self, replay_cassandra_cx};
use loadbearing_conform::partition_flow::FLOW_MAX_OFFSET;
use loadbearing_conform::{
    self as conform, targets, Backend, Schedule, Seeded, Settings, StoreFactory, TargetResult,
};
use loadbearing_impls::Mode;
use loadbearing_specs::cassandra::model::Cassandra;
use loadbearing_specs::cassandra::trace::FlowEvent;
use loadbearing_specs::infra::vocab::{Cell, Offsets, Op};
use loadbearing_specs::replay_fence::model::ReplayFence;
use loadbearing_specs::replay_fence::trace::ReplayEvent;
use loadbearing_trace::{validate, Limits};

fn sqlite(traces: usize, seed: u64) -> Settings {
    common::servers::settings(Backend::SQLITE, traces, 2, seed)
}

fn guarded() -> Cassandra {
    Cassandra {
        max_offset: FLOW_MAX_OFFSET,
        guarded: true,
        tombstone: true,
    }
}

fn first_divergence(result: &TargetResult) -> String {
    result
        .divergences
        .first()
        .map(|d| d.text())
        .unwrap_or_default()
}

fn assert_conforms(result: &TargetResult, traces: usize) {
    assert!(
        result.ok,
        "{}\nmismatches: {:?}",
        first_divergence(result),
        result.mismatches
    );
    assert_eq!(result.conforming, traces);
    assert!(result.divergences.is_empty());
}

#[test]
fn overlapping_owner_and_zombie_flows_on_the_guarded_store_conform() {
    let result = conform::run(&targets::FLOW, &sqlite(30, 7)).unwrap();
    // 30 seeded schedules, then 30 runs with the flows racing on threads.
    assert_conforms(&result, 60);
    assert_eq!(result.model.name(), "Cassandra");
    assert!(result.events > 60 * 5, "every owner fold is an event");
    assert!(result.steps > 0, "the counterexamples were replayed");
}

/// The flows really overlap: the guard refuses stale zombie writes in the traces that conform.
#[test]
fn the_flow_traces_exercise_the_guard() {
    let factory = StoreFactory::new(Backend::SQLITE, Mode::Guarded, "exercise").unwrap();
    let mut rng = Seeded::new(3);
    let traces = guarded_traces(20, |round| {
        let log = loadbearing_specs::infra::vocab::Ops((rng.below(32) as u32) << 1);
        flow::flow_trace(&factory, &format!("k{round}"), log, &mut rng).unwrap()
    });
    let zombie_writes = traces
        .iter()
        .flatten()
        .filter(|e| matches!(e, FlowEvent::ZombieWrite { .. }))
        .count();
    let refused = refused_writes(&traces);
    assert!(
        zombie_writes > 0 && refused > 0,
        "{zombie_writes} zombie writes, {refused} refused"
    );
}

/// `rounds` traces, each of which must fit the guarded model.
fn guarded_traces(
    rounds: usize,
    mut trace: impl FnMut(usize) -> Vec<FlowEvent>,
) -> Vec<Vec<FlowEvent>> {
    (0..rounds)
        .map(|round| {
            let events = trace(round);
            let verdict = validate(&guarded(), &events, Limits::default());
            assert!(
                verdict.conforming,
                "{:?}",
                verdict.divergence.map(|d| d.text())
            );
            events
        })
        .collect()
}

/// Writes the guard refused, in all the traces.
fn refused_writes(traces: &[Vec<FlowEvent>]) -> usize {
    traces
        .iter()
        .flatten()
        .filter(|e| e.write().and_then(|w| w.applied) == Some(false))
        .count()
}

/// The flows on real threads: the OS interleaves them, the guard still refuses the stale
/// zombie writes, and every trace fits the model.
#[test]
fn racing_flows_overlap_and_conform() {
    let factory = StoreFactory::new(Backend::SQLITE, Mode::Guarded, "racing").unwrap();
    let mut rng = Seeded::new(5);
    let traces = guarded_traces(40, |round| {
        let log = loadbearing_specs::infra::vocab::Ops((rng.below(32) as u32) << 1);
        flow::racing_flow_trace(&factory, &format!("r{round}"), log, rng.next_u64()).unwrap()
    });
    // A zombie's write between two of the owner's folds: the flows overlapped.
    let interleaved: usize = traces
        .iter()
        .map(|events| {
            let owner: Vec<bool> = events
                .iter()
                .map(|e| !matches!(e, FlowEvent::ZombieWrite { .. }))
                .collect();
            owner.windows(3).filter(|w| w[0] && !w[1] && w[2]).count()
        })
        .sum();
    let refused = refused_writes(&traces);
    assert!(
        refused > 0 && interleaved > 0,
        "{refused} refused, {interleaved} interleavings"
    );
}

#[test]
fn the_last_write_wins_flows_are_caught_at_a_stale_write() {
    let result = conform::run(&targets::FLOW_LWW, &sqlite(20, 7)).unwrap();
    assert!(result.ok, "{:?}", result.mismatches);
    assert!(result.divergent_traces > 0 && !result.divergences.is_empty());
    let text = first_divergence(&result);
    assert!(text.contains("a stale write landed"), "{text}");
    assert!(
        text.contains("\"action\":\"ZombieWrite\"") || text.contains("\"action\":\"OwnerFold\""),
        "the report names the offending step: {text}"
    );
}

#[test]
fn the_hard_delete_flows_are_caught_at_the_delete() {
    let result = conform::run(&targets::FLOW_HARD_DELETE, &sqlite(20, 7)).unwrap();
    assert!(result.ok, "{:?}", result.mismatches);
    assert!(result.divergent_traces > 0 && !result.divergences.is_empty());
    let text = first_divergence(&result);
    assert!(text.contains("\"op\":\"delete\""), "{text}");
    assert!(
        text.contains("row is now Absent, the model's is Tomb("),
        "the report says the tombstone is missing: {text}"
    );
}

#[test]
fn the_restarted_owner_with_the_fence_conforms() {
    let result = conform::run(&targets::FENCE, &sqlite(30, 7)).unwrap();
    assert_conforms(&result, 30);
    assert_eq!(result.model.name(), "ReplayFence");
}

#[test]
fn the_restarted_owner_without_the_fence_is_caught_presenting_cur() {
    let result = conform::run(&targets::FENCE_OFF, &sqlite(30, 7)).unwrap();
    assert!(result.ok, "{:?}", result.mismatches);
    assert!(result.divergent_traces > 0 && !result.divergences.is_empty());
    let text = first_divergence(&result);
    assert!(text.contains("\"action\":\"Write\""), "{text}");
    assert!(text.contains("the model presents max(cur, hw)"), "{text}");
}

#[test]
fn the_unguarded_counterexample_overwrites_on_lww_and_is_refused_when_guarded() {
    let r = replay_cassandra_cx(&sqlite(1, 1), "cassandra_unguarded", Mode::LastWriteWins).unwrap();
    assert!(r.broken.mismatches.is_empty(), "{:?}", r.broken.mismatches);
    assert!(
        r.broken.regressed,
        "the stale write landed: {:?}",
        r.broken.rows
    );
    assert!(!r.broken.refused);
    // The guarded store refuses the same schedule and its row never goes back.
    assert!(
        r.guarded.refused && !r.guarded.regressed,
        "{:?}",
        r.guarded.rows
    );
    assert!(
        r.guarded_mismatches.is_empty(),
        "{:?}",
        r.guarded_mismatches
    );
    let last = |rows: &[Cell]| *rows.last().unwrap();
    assert!(last(&r.broken.rows).offset < last(&r.guarded.rows).offset);
}

#[test]
fn the_notomb_counterexample_corrupts_the_hard_delete_store_only() {
    let r = replay_cassandra_cx(&sqlite(1, 1), "cassandra_notomb", Mode::HardDelete).unwrap();
    assert!(r.broken.mismatches.is_empty(), "{:?}", r.broken.mismatches);
    assert!(r.broken.corrupted, "rows: {:?}", r.broken.rows);
    assert!(
        r.broken.rows.iter().any(|c| !c.present),
        "the hard delete removed the row: {:?}",
        r.broken.rows
    );
    assert!(!r.guarded.corrupted, "rows: {:?}", r.guarded.rows);
    assert!(
        r.guarded.rows.iter().any(|c| c.present && c.deleted),
        "the guarded store kept a tombstone: {:?}",
        r.guarded.rows
    );
    assert!(
        r.guarded_mismatches.is_empty(),
        "{:?}",
        r.guarded_mismatches
    );
}

#[test]
fn the_replay_fix_off_counterexample_self_fences_only_without_the_fence() {
    let cx = replay_fence_cx(&sqlite(1, 1), "replay_fix_off").unwrap();
    assert!(
        cx.broken.self_fenced,
        "FlowError::SelfFenced without the fence"
    );
    assert!(!cx.broken.completed);
    assert!(
        cx.broken.mismatches.is_empty(),
        "{:?}",
        cx.broken.mismatches
    );
    assert!(!cx.fixed.self_fenced && cx.fixed.completed);
    assert!(cx.fixed.mismatches.is_empty(), "{:?}", cx.fixed.mismatches);
}

/// The owner's fold at `offset` (a persist) that applied, with the row read back.
fn fold(offset: u64, stored: Cell) -> FlowEvent {
    FlowEvent::OwnerFold {
        offset,
        op: Op::Persist,
        applied: Some(true),
        presented: None,
        stored: Some(stored),
    }
}

/// Revoked flow `zombie`'s write of its fold at `offset` (a persist) that applied.
fn zombie_write(zombie: u8, offset: u64, stored: Cell) -> FlowEvent {
    FlowEvent::ZombieWrite {
        zombie,
        offset,
        op: Op::Persist,
        applied: Some(true),
        presented: None,
        stored: Some(stored),
    }
}

#[test]
fn a_hand_written_stale_zombie_write_is_rejected_with_a_reason() {
    let row = |o: u8, c: &[u8]| Cell::snap(o, c.iter().fold(Offsets::EMPTY, |s, &x| s.with(x)));
    let fits = vec![fold(1, row(1, &[1])), fold(2, row(2, &[1, 2]))];
    assert!(validate(&guarded(), &fits, Limits::default()).conforming);
    let mut stale = fits.clone();
    stale.push(zombie_write(1, 1, row(1, &[1])));
    let verdict = validate(&guarded(), &stale, Limits::default());
    assert!(!verdict.conforming);
    let text = verdict.divergence.unwrap().text();
    assert!(text.contains("diverged at event 3"), "{text}");
    assert!(text.contains("ZombieWrite(1): the implementation applied offset 1 over Snap(2, {1,2}): a stale write landed"), "{text}");
    // An owner that skips an offset is no behaviour either.
    let skipped = vec![fold(2, row(2, &[2]))];
    let text = validate(&guarded(), &skipped, Limits::default())
        .divergence
        .unwrap()
        .text();
    assert!(
        text.contains("the owner folded offset 2, but its next offset is 1"),
        "{text}"
    );
}

#[test]
fn a_hand_written_self_fence_is_rejected_by_the_fixed_model() {
    let write = ReplayEvent::Write {
        presented: Some(0),
        stored: Some(3),
        self_fenced: Some(true),
        hw: Some(3),
    };
    let fixed = ReplayFence {
        max_offset: 3,
        fix: true,
    };
    let text = validate(&fixed, std::slice::from_ref(&write), Limits::default())
        .divergence
        .unwrap()
        .text();
    assert!(
        text.contains("the model presents max(cur, hw) = 3"),
        "{text}"
    );
    let broken = ReplayFence {
        max_offset: 3,
        fix: false,
    };
    assert!(validate(&broken, &[write], Limits::default()).conforming);
}

/// PostgreSQL: the same flows; CI provides a server (see .ci/setup.d).
#[test]
#[cfg(feature = "postgres")]
fn flows_on_postgres_conform_and_the_hard_delete_is_caught() {
    let Some(server) = common::servers::postgres() else {
        return;
    };
    let settings = common::servers::settings(
        Backend::at(
            conform::BackendKind::Store(conform::StoreBackend::Postgres),
            server.conn_str(),
        ),
        8,
        2,
        17,
    );
    let result = conform::run(&targets::FLOW, &settings).unwrap();
    assert_conforms(&result, 16);
    let result = conform::run(&targets::FLOW_HARD_DELETE, &settings).unwrap();
    assert!(
        result.ok && result.divergent_traces > 0,
        "{:?}",
        result.mismatches
    );
    assert!(first_divergence(&result).contains("the model's is Tomb("));
}

/// Cassandra 5: the persist is the three-LWT compound, but the flow-level events read the same.
#[test]
#[cfg(feature = "cassandra")]
fn flows_on_cassandra_conform_and_the_mutants_are_caught() {
    let Some(node) = common::servers::cassandra() else {
        return;
    };
    let settings = common::servers::settings(
        Backend::at(
            conform::BackendKind::Store(conform::StoreBackend::Cassandra),
            node.node(),
        ),
        4,
        2,
        23,
    );
    let result = conform::run(&targets::FLOW, &settings).unwrap();
    assert_conforms(&result, 8);
    let mutants: [&dyn conform::Target; 3] = [
        &targets::FLOW_LWW,
        &targets::FLOW_HARD_DELETE,
        &targets::FENCE_OFF,
    ];
    for target in mutants {
        let result = conform::run(target, &settings).unwrap();
        assert!(
            result.ok && result.divergent_traces > 0,
            "{}: {:?}",
            target.name(),
            result.mismatches
        );
    }
    let result = conform::run(&targets::FENCE, &settings).unwrap();
    assert_conforms(&result, 4);
}

/// The planted hard-delete mutant: writes are still guarded, but a delete removes the row, and
/// with it the guard, so a stale write lands afterwards. The guarded store keeps a tombstone.
#[test]
fn the_hard_delete_mutant_loses_the_guard_with_the_row() {
    use loadbearing_impls::{Read, WriteError};
    let broken = StoreFactory::new(Backend::SQLITE, Mode::HardDelete, "hd").unwrap();
    let guarded = StoreFactory::new(Backend::SQLITE, Mode::Guarded, "hd_guarded").unwrap();
    for (factory, tombstone) in [(&broken, false), (&guarded, true)] {
        let store = factory.open(loadbearing_impls::trace::no_trace()).unwrap();
        store.persist("k", 3, b"3").unwrap();
        assert!(matches!(
            store.persist("k", 2, b"2"),
            Err(WriteError::Conflict(_))
        ));
        assert!(matches!(store.delete("k", 1), Err(WriteError::Conflict(_))));
        store.delete("k", 4).unwrap();
        let after_delete = store.read("k").unwrap();
        let stale = store.persist("k", 1, b"1");
        if tombstone {
            assert_eq!(after_delete, Read::Tombstone { offset: 4 });
            assert!(matches!(stale, Err(WriteError::Conflict(_))));
        } else {
            assert_eq!(after_delete, Read::Absent);
            assert!(stale.is_ok(), "nothing guards the removed row: {stale:?}");
        }
    }
}

/// A run replays from its seed: the same seed gives the same traces.
#[test]
fn a_flow_run_replays_from_its_seed() {
    let factory = StoreFactory::new(Backend::SQLITE, Mode::Guarded, "seeded").unwrap();
    let trace = |seed: u64, key: &str| {
        let mut rng = Seeded::new(seed);
        let log = loadbearing_specs::infra::vocab::Ops((rng.below(32) as u32) << 1);
        flow::flow_trace(&factory, key, log, &mut rng).unwrap()
    };
    assert_eq!(trace(41, "a"), trace(41, "b"));
    assert_ne!(trace(41, "c"), trace(42, "d"));
}

/// A recorded flow trace, saved as NDJSON, checks from the command line against the Cassandra
/// config; the same trace with a stale zombie write appended is refused, naming the step.
#[test]
fn conform_checks_a_flow_trace_file_against_cassandra() {
    let dir = std::env::temp_dir().join(format!("loadbearing-flow-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let factory = StoreFactory::new(Backend::SQLITE, Mode::Guarded, "file").unwrap();
    let mut rng = Seeded::new(5);
    // persist, persist, persist: the owner reaches Snap(3, {1,2,3}) unless fenced.
    let log = loadbearing_specs::infra::vocab::Ops(0);
    let mut events = flow::flow_trace(&factory, "k", log, &mut rng).unwrap();
    let fits = dir.join("flow.ndjson");
    std::fs::write(&fits, loadbearing_trace::to_ndjson(&events)).unwrap();
    let check = |file: &std::path::Path| {
        loadbearing(&[
            "conform",
            "--trace",
            file.to_str().unwrap(),
            "--model",
            "cassandra_refines",
            "--set",
            "MaxOffset=5",
        ])
    };
    let out = check(&fits);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("conform to Cassandra"), "{stdout}");
    // After the owner's last write the row is at offset 5: a zombie landing offset 1 is stale.
    let last_row = events.last().unwrap().stored().unwrap();
    assert!(last_row.present && last_row.offset == 5, "{last_row}");
    events.push(zombie_write(9, 1, Cell::snap(1, Offsets::EMPTY.with(1))));
    let stale = dir.join("stale.ndjson");
    std::fs::write(&stale, loadbearing_trace::to_ndjson(&events)).unwrap();
    let out = check(&stale);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(&format!("diverged at event {}", events.len()))
            && stdout.contains("ZombieWrite(1): the implementation applied offset 1")
            && stdout.contains("a stale write landed"),
        "{stdout}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
