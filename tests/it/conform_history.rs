//! `conform --trace FILE --model M` on what a real store writes: real offsets, many writes a
//! writer, concurrent operations with call and return times, answers that never came.

use std::path::Path;

use crate::common::{loadbearing, trace_file};

fn persist(writer: &str, offset: u64, outcome: &str) -> String {
    format!(
        r#"{{"v":2,"vocabulary":"first_write","action":"Persist","writer":"{writer}","offset":{offset},"outcome":"{outcome}"}}"#
    )
}

fn refused(writer: &str, offset: u64, stored: u64) -> String {
    format!(
        r#"{{"v":2,"vocabulary":"first_write","action":"Persist","writer":"{writer}","offset":{offset},"outcome":"not_applied","stored":{stored}}}"#
    )
}

fn read(stored: u64) -> String {
    format!(r#"{{"v":2,"vocabulary":"first_write","action":"Read","stored":{stored}}}"#)
}

/// An event of a history: the event's line with its call and return times.
fn timed(line: &str, call: u64, ret: Option<u64>) -> String {
    let ret = ret.map_or("null".to_string(), |r| r.to_string());
    format!(
        "{},\"call\":{call},\"ret\":{ret}}}",
        line.strip_suffix('}').unwrap()
    )
}

/// Runs `conform --trace` against the atomic upsert model; the exit code and stdout + stderr.
fn conform(path: &Path, extra: &[&str]) -> (Option<i32>, String) {
    crate::common::conform_first_write(path, extra)
}

/// Real offsets (tens of thousands) from five writers, one of them flushing three times: a
/// guarded store's trace conforms, judged on the row with the store's own offsets (a sequence
/// is the history of its events). Once, offsets were clamped at 255 and the writers cut to
/// the default 2, and this trace diverged.
#[test]
fn real_offsets_and_many_writes_a_writer_conform() {
    let lines = [
        persist("w1", 41_000, "applied"),
        persist("w1", 41_003, "applied"),
        refused("w2", 40_998, 41_003),
        persist("w3", 41_010, "applied"),
        refused("w4", 41_004, 41_010),
        persist("w1", 41_020, "applied"),
        refused("w5", 300, 41_020),
        read(41_020),
    ];
    let path = trace_file("real", &lines);
    let (code, text) = conform(&path, &[]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("sequence against CasFirstWriteAtomic, as the history of its events")
            && text.contains("linearizable: 8 operations"),
        "{text}"
    );
    // The order, one operation a line, on the store's own offsets.
    assert!(text.contains("→ stored=Present(41020)"), "{text}");
    // The compound, fitted to the trace (offsets by rank, a model writer a write), says how.
    let statements = [
        r#"{"v":2,"vocabulary":"first_write","action":"Update1","writer":"w1","offset":41000,"outcome":"row_absent"}"#.to_string(),
        r#"{"v":2,"vocabulary":"first_write","action":"Insert","writer":"w1","offset":41000,"outcome":"applied"}"#.to_string(),
        r#"{"v":2,"vocabulary":"first_write","action":"Update1","writer":"w1","offset":41020,"outcome":"applied"}"#.to_string(),
        r#"{"v":2,"vocabulary":"first_write","action":"Update1","writer":"w2","offset":300,"outcome":"not_applied","stored":41020}"#.to_string(),
        read(41_020),
    ];
    let (code, text) = crate::common::conform_trace(
        &trace_file("real-compound", &statements),
        "CasFirstWrite",
        &[],
    );
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("0=300") && text.contains("2=41020"), "{text}");
    assert!(text.contains("w2=w1 write 2"), "{text}");
}

/// A stale write at 300 landing over 400: a last-write-wins store's trace diverges at once,
/// with no read needed (before, offsets above 255 all read as 255 and it conformed).
#[test]
fn a_stale_write_over_real_offsets_diverges_without_a_read() {
    let lines = [persist("w1", 400, "applied"), persist("w2", 300, "applied")];
    let path = trace_file("stale", &lines);
    let (code, text) = conform(&path, &[]);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("not linearizable") && text.contains("a stale write landed"),
        "{text}"
    );
    assert!(
        text.contains("line     2") && text.contains("offset 300 over Present(400)"),
        "{text}"
    );
}

/// Two concurrent writes logged in reply order: the lower one's refusal came back first. As
/// a sequence the refusal names a row no write made yet; as a history (their times overlap)
/// the order that explains it is found.
#[test]
fn concurrent_writes_in_reply_order_conform_as_a_history_only() {
    let sequence = [refused("w2", 300, 400), persist("w1", 400, "applied")];
    let (code, text) = conform(&trace_file("reply-order-seq", &sequence), &[]);
    assert_eq!(code, Some(1), "as a sequence: {text}");

    let history = [
        timed(&sequence[0], 2, Some(5)),
        timed(&sequence[1], 0, Some(10)),
    ];
    let (code, text) = conform(&trace_file("reply-order", &history), &[]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("linearizable: 2 operations"), "{text}");

    // Not overlapping (the refusal returned before the write was called): no order explains it.
    let apart = [
        timed(&sequence[0], 0, Some(1)),
        timed(&sequence[1], 2, Some(3)),
    ];
    let (code, text) = conform(&trace_file("apart", &apart), &[]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("not linearizable"), "{text}");
    assert!(
        text.contains("line     1"),
        "the refused operation named by its line: {text}"
    );
}

/// An unanswered write takes effect after its call or never, not before: a refusal that saw
/// offset 5 before the write of 5 was even sent is no behaviour of the model.
#[test]
fn an_unanswered_write_cannot_take_effect_before_its_call() {
    let unanswered =
        r#"{"v":2,"vocabulary":"first_write","action":"Persist","writer":"w2","offset":5}"#;
    let history = [
        timed(&refused("w1", 2, 5), 0, Some(1)),
        timed(unanswered, 2, None),
        timed(&read(5), 3, Some(4)),
    ];
    let (code, text) = conform(&trace_file("early", &history), &[]);
    assert_eq!(code, Some(1), "{text}");
    // Called before the refusal returned, it may have landed first: then it conforms.
    let overlapping = [
        timed(&refused("w1", 2, 5), 1, Some(3)),
        timed(unanswered, 0, None),
        timed(&read(5), 4, Some(5)),
    ];
    let (code, text) = conform(&trace_file("overlap", &overlapping), &[]);
    assert_eq!(code, Some(0), "{text}");
}

/// A history the search cannot decide within its budget is unknown (exit 2), never conforms.
#[test]
fn an_undecided_history_is_unknown_not_conforming() {
    let history: Vec<String> = (0..6)
        .map(|i| {
            timed(
                &persist(&format!("w{}", i + 1), 10 + i, "applied"),
                0,
                Some(100),
            )
        })
        .collect();
    let path = trace_file("budget", &history);
    let (code, text) = conform(&path, &["--max-configurations", "1"]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("unknown"), "{text}");
    let (code, text) = conform(&path, &[]);
    assert_eq!(code, Some(0), "with the default budget: {text}");
}

/// What the model cannot hold, or a time that makes no sense: an error naming the line or the
/// bound (exit 2), never a verdict.
#[test]
fn bad_times_and_values_beyond_the_model_are_errors() {
    // The compound, fitted, holds 8 writes: a ninth is an error naming the bound.
    let nine_writes: Vec<String> = (0..9)
        .map(|i| {
            format!(
                r#"{{"v":2,"vocabulary":"first_write","action":"Update1","writer":"w1","offset":{i},"outcome":"row_absent"}}"#
            )
        })
        .collect();
    let (code, text) =
        crate::common::conform_trace(&trace_file("nine", &nine_writes), "CasFirstWrite", &[]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("9 writes") && text.contains("Writers ≤ 8"),
        "{text}"
    );
    // The atomic upsert is judged on the row, which holds any number of writes.
    let nine_persists: Vec<String> = (0..9).map(|i| persist("w1", i, "applied")).collect();
    let (code, text) = conform(&trace_file("nine-persists", &nine_persists), &[]);
    assert_eq!(code, Some(0), "{text}");

    let backwards = [timed(&persist("w1", 1, "applied"), 5, Some(3))];
    let (code, text) = conform(&trace_file("backwards", &backwards), &[]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("line 1") && text.contains("before `call`"),
        "{text}"
    );

    let answered_unknown = [timed(
        r#"{"v":2,"vocabulary":"first_write","action":"Persist","writer":"w1","offset":1}"#,
        0,
        Some(1),
    )];
    let (code, text) = conform(&trace_file("ret-no-outcome", &answered_unknown), &[]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("no outcome"), "{text}");
}

/// An empty trace file (or one of blank lines) judges nothing: an error, never "conforms".
#[test]
fn an_empty_trace_is_an_error_not_a_conforming_trace() {
    for (name, text) in [("empty", ""), ("blank", "\n  \n")] {
        let dir = std::env::temp_dir().join(format!("lb-history-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("trace.ndjson");
        std::fs::write(&path, text).unwrap();
        let (code, out) = conform(&path, &[]);
        assert_eq!(code, Some(2), "{name}: {out}");
        assert!(out.contains("holds no event"), "{name}: {out}");
    }
}

/// `conform --save DIR` writes the traces a target validates, one file each, and each reads
/// back through `conform --trace`: the store race's histories (8 writers really racing, then a
/// read) conform to the model the target names; one with its read altered does not.
#[test]
fn conform_saves_the_store_races_histories_and_they_read_back() {
    let dir = std::env::temp_dir().join(format!("lb-save-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = loadbearing(&[
        "conform",
        "store",
        "--traces",
        "3",
        "--seed",
        "1",
        "--save",
        dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let saved = dir.join("store");
    let mut files: Vec<_> = std::fs::read_dir(&saved)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 3, "{files:?}");
    let first = files[0].to_str().unwrap();
    let text = std::fs::read_to_string(first).unwrap();
    assert!(
        text.contains("\"call\"") && text.contains("\"Read\""),
        "{text}"
    );
    let back = loadbearing(&[
        "conform",
        "--trace",
        first,
        "--model",
        "CasFirstWriteAtomic",
    ]);
    assert_eq!(
        back.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&back.stdout),
        String::from_utf8_lossy(&back.stderr)
    );
    // The read made to show nothing: no order of the writes explains an empty row.
    let lines: Vec<String> = text
        .lines()
        .map(|l| {
            if l.contains("\"Read\"") {
                let call = l.split("\"call\":").nth(1).unwrap();
                let call: String = call.chars().take_while(char::is_ascii_digit).collect();
                format!(
                    r#"{{"v":2,"vocabulary":"first_write","action":"Read","call":{call},"ret":{call}}}"#
                )
            } else {
                l.to_string()
            }
        })
        .collect();
    let altered = saved.join("altered.ndjson");
    std::fs::write(&altered, lines.join("\n") + "\n").unwrap();
    let back = loadbearing(&[
        "conform",
        "--trace",
        altered.to_str().unwrap(),
        "--model",
        "CasFirstWriteAtomic",
    ]);
    assert_eq!(
        back.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&back.stdout)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
