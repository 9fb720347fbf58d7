//! The history checker on generated first-write histories (`loadbearing::histories`, what
//! `bench --histories` measures), and the row face of CasFirstWriteAtomic it judges them by
//! (`specs/src/first_write/register.rs`) against the fitted model's own steps. Small sizes:
//! these assert verdicts, never timings.

use loadbearing::histories::{generate, plant_stale_write, Shape};
use loadbearing_registry::trace::{judge_atomic, judge_fitted, TraceProblem};
use loadbearing_specs::first_write::atomic::CasFirstWriteAtomic;
use loadbearing_specs::first_write::compound::CasFirstWrite;
use loadbearing_specs::first_write::real::Unrepresentable;
use loadbearing_specs::first_write::trace::{FirstWriteEvent, Outcome, ReadRow, Statement, Writer};
use loadbearing_trace::{to_history_ndjson, Timed, Trace};
use loadbearing_trace::{Decision, TraceOptions, TraceReport};

fn model(guarded: bool, reap: bool) -> CasFirstWriteAtomic {
    CasFirstWriteAtomic {
        writers: 2,
        max_offset: 2,
        guarded,
        reap,
    }
}

/// A small random history on one key: writes with every outcome (or none), reads.
fn random_history(rng: &mut fastrand::Rng) -> Vec<Timed<FirstWriteEvent>> {
    let n = rng.usize(1..=6);
    let offset = |rng: &mut fastrand::Rng| 100 * rng.u64(0..3);
    (0..n)
        .map(|i| {
            let call = rng.u64(0..10);
            let ret = call + rng.u64(0..6);
            let (event, ret) = if rng.u8(0..4) == 0 {
                let stored = rng.bool().then(|| offset(rng));
                (FirstWriteEvent::Read(ReadRow::at(stored)), Some(ret))
            } else {
                let outcome = match rng.u8(0..8) {
                    0..=2 => Some(Outcome::Applied),
                    3..=4 => Some(Outcome::NotApplied),
                    5 => Some(Outcome::NotSent),
                    _ => None,
                };
                let stored =
                    (outcome == Some(Outcome::NotApplied) && rng.bool()).then(|| offset(rng));
                let event = FirstWriteEvent::Persist(Statement::new(
                    Writer::model(i),
                    offset(rng),
                    outcome,
                    stored,
                ));
                (event, outcome.map(|_| ret))
            };
            Timed {
                call,
                ret,
                key: None,
                event,
                line: i + 1,
            }
        })
        .collect()
}

fn conforms(report: &TraceReport) -> bool {
    report.decision() == Decision::Conforms
}

/// The row face (real offsets, no writer bound, repeatable and settled unanswered writes)
/// and the fitted model's own steps agree on every small history, guarded or not, with a
/// reap or without.
#[test]
fn the_row_face_agrees_with_the_fitted_model() {
    let mut rng = fastrand::Rng::with_seed(11);
    let options = TraceOptions::default();
    let mut seen = [0; 2];
    for round in 0..2000 {
        let (guarded, reap) = (round % 2 == 0, round % 4 == 1);
        let ops = random_history(&mut rng);
        let row = judge_atomic(model(guarded, reap), Trace::History(ops.clone()), &options)
            .expect("the row face holds any history");
        let fitted = judge_fitted(model(guarded, reap), Trace::History(ops.clone()), &options)
            .expect("at most 6 writes");
        assert_eq!(
            conforms(&row),
            conforms(&fitted),
            "guarded {guarded}, reap {reap}: {ops:#?}\nrow: {}\nfitted: {}",
            row.text("row"),
            fitted.text("fitted")
        );
        seen[conforms(&row) as usize] += 1;
    }
    assert!(seen[0] > 200 && seen[1] > 200, "{seen:?}");
}

/// A history over many keys: each key's row apart for the atomic model; the fitted
/// compound refuses it, naming why.
#[test]
fn keys_are_judged_apart_and_the_fitted_model_refuses_many() {
    let persist = |key: &str, offset, call| Timed {
        call,
        ret: Some(call + 1),
        key: Some(key.into()),
        event: FirstWriteEvent::Persist(Statement::new(
            Writer::model(0),
            offset,
            Some(Outcome::Applied),
            None,
        )),
        line: 1,
    };
    // Offset 5 after 9 applies on another key, not on the same one.
    let apart = vec![persist("a", 9, 0), persist("b", 5, 2)];
    let options = TraceOptions::default();
    let report = judge_atomic(model(true, false), Trace::History(apart), &options).unwrap();
    assert!(conforms(&report), "{}", report.text("m"));
    let same = vec![persist("a", 9, 0), persist("a", 5, 2)];
    let report = judge_atomic(model(true, false), Trace::History(same), &options).unwrap();
    assert_eq!(report.decision(), Decision::Diverges);
    assert!(
        report.text("m").contains("key \"a\""),
        "{}",
        report.text("m")
    );

    let two = vec![persist("a", 9, 0), persist("b", 5, 2)];
    let compound = CasFirstWrite {
        writers: 2,
        max_offset: 2,
        guarded: true,
        reap: false,
        insert_if_not_exists: true,
        retry: true,
        spec_guarded: true,
    };
    let err = judge_fitted(compound, Trace::History(two), &options).unwrap_err();
    assert!(
        matches!(
            err,
            TraceProblem::Unrepresentable(Unrepresentable::Keys { keys: 2 })
        ),
        "{err}"
    );
}

fn small(keys: usize, seed: u64) -> Shape {
    Shape {
        operations: 400,
        keys,
        writers: 8,
        unknown_percent: 5,
        read_percent: 10,
        seed,
    }
}

/// `conform --trace FILE --model CasFirstWriteAtomic` on `text`: exit code and output.
fn conform_text(name: &str, text: &str, extra: &[&str]) -> (Option<i32>, String) {
    let dir = std::env::temp_dir().join(format!("lb-histbench-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("trace.ndjson");
    std::fs::write(&path, text).unwrap();
    crate::common::conform_first_write(&path, extra)
}

/// The generator's histories (one key with more writes than the fitted model's 8 writers and
/// more offsets than its 256; many keys) and its sequence are linearizable, through the CLI.
#[test]
fn generated_histories_conform() {
    for (name, keys, seed) in [("one-key", 1, 3), ("many-keys", 20, 4)] {
        let g = generate(small(keys, seed));
        let (code, text) = conform_text(name, &g.history_ndjson(), &[]);
        assert_eq!(code, Some(0), "{name}: {text}");
        assert!(
            text.contains(&format!("linearizable: 400 operations in {keys} part(s)")),
            "{name}: {text}"
        );
    }
    let g = generate(small(1, 5));
    let (code, text) = conform_text("sequence", &g.sequence_ndjson(), &["--as-history"]);
    assert_eq!(code, Some(0), "{text}");
    // Without --as-history the sequence is judged the same way, on the row (one judge for a
    // sequence and its history): the same verdict.
    let (code, text) = conform_text("sequence-as-is", &g.sequence_ndjson(), &[]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("sequence against CasFirstWriteAtomic"),
        "{text}"
    );
}

/// A stale write acknowledged (a refused write that now says it applied, below a row that
/// was stored before it was called) is found, on its key, with its line.
#[test]
fn a_planted_stale_write_is_found() {
    for (name, keys, seed) in [("plant-one", 1, 6), ("plant-many", 20, 7)] {
        let mut g = generate(small(keys, seed));
        let line = plant_stale_write(&mut g.history).expect("a refused write to flip");
        let (code, text) = conform_text(name, &to_history_ndjson(&g.history), &[]);
        assert_eq!(code, Some(1), "{name}: {text}");
        assert!(text.contains("not linearizable"), "{name}: {text}");
        assert!(
            text.contains(&format!("line {line:>5}")) && text.contains("a stale write landed"),
            "{name}: the planted write named: {text}"
        );
    }
}
