//! `conform --trace` on what real stores write beyond offsets: values, deletes (the guarded
//! tombstone write and its first write, last-write-wins' plain delete), the compound's
//! `IF offset = null` repair; each judged against the model that has it, each with the
//! variant that must fail beside it.

use crate::common::{conform_trace, trace_file};

/// A first-write line: `action` and the rest of its fields.
fn line(action: &str, fields: &str) -> String {
    let sep = if fields.is_empty() { "" } else { "," };
    format!(r#"{{"v":2,"vocabulary":"first_write","action":"{action}"{sep}{fields}}}"#)
}

/// `conform --trace` of `lines` against `model` (and `extra`): the exit code and what it said.
fn conform(test: &str, model: &str, lines: &[String], extra: &[&str]) -> (Option<i32>, String) {
    conform_trace(&trace_file(test, lines), model, extra)
}

const ATOMIC: &str = "CasFirstWriteAtomic";
const COMPOUND: &str = "CasFirstWrite";

/// A guarded store: a value, a delete that writes an offset-carrying tombstone (which refuses
/// an older write as a row does), then a later write over the tombstone; every read compared
/// whole. Landing the older write over the tombstone is the stale write the guard exists for.
#[test]
fn the_guarded_tombstone_write_fences_older_writes_and_reads_are_compared_whole() {
    let guarded = |stale_outcome: &str| {
        vec![
            line(
                "Persist",
                r#""writer":"w1","offset":41007,"value":"a","outcome":"applied""#,
            ),
            line("Read", r#""stored":41007,"value":"a""#),
            line(
                "Delete",
                r#""writer":"w2","offset":41010,"outcome":"applied""#,
            ),
            line(
                "Persist",
                &format!(r#""writer":"w3","offset":41008,"value":"old",{stale_outcome}"#),
            ),
            line("Read", r#""stored":41010,"tombstone":true"#),
        ]
    };
    let (code, said) = conform(
        "tomb-ok",
        ATOMIC,
        &guarded(r#""outcome":"not_applied","stored":41010"#),
        &[],
    );
    assert_eq!(code, Some(0), "{said}");
    let (code, said) = conform(
        "tomb-stale",
        ATOMIC,
        &guarded(r#""outcome":"applied""#),
        &[],
    );
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("applied offset 41008 over Tombstone(41010): a stale write landed"),
        "{said}"
    );
}

/// The tombstone's first write: a delete of a key with no row writes the tombstone (its
/// `INSERT … IF NOT EXISTS` with a null value), which then fences an older write. A store that
/// skipped it (no row after the delete) lets the older write in, and the read shows it.
#[test]
fn the_tombstones_first_write_leaves_a_fence() {
    let lines = |read: &str| {
        vec![
            line("Delete", r#""writer":"w1","offset":9,"outcome":"applied""#),
            line(
                "Persist",
                r#""writer":"w2","offset":4,"value":"x","outcome":"not_applied","stored":9"#,
            ),
            line("Read", read),
        ]
    };
    let (code, said) = conform(
        "first-tomb",
        ATOMIC,
        &lines(r#""stored":9,"tombstone":true"#),
        &[],
    );
    assert_eq!(code, Some(0), "{said}");
    let (code, said) = conform("first-tomb-missing", ATOMIC, &lines(""), &[]);
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("the read found no row, the model's row holds Tombstone(9)"),
        "{said}"
    );
}

/// A read that finds another value than the write that holds the row wrote is a divergence,
/// though its offset is right (before values, it conformed).
#[test]
fn a_read_of_another_value_at_the_right_offset_diverges() {
    let lines = [
        line(
            "Persist",
            r#""writer":"w1","offset":5,"value":"mine","outcome":"applied""#,
        ),
        line("Read", r#""stored":5,"value":"someone else's""#),
    ];
    let (code, said) = conform("value", ATOMIC, &lines, &[]);
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains(r#"the read found Present(5, "someone else's"), the model's row holds Present(5, "mine")"#),
        "{said}"
    );
}

/// Last-write-wins (`Guarded = false`): an older upsert lands, a plain delete removes the row.
/// The same trace against the guarded model is a stale write.
#[test]
fn last_write_wins_upserts_and_deletes_against_the_unguarded_model() {
    let lines = [
        line(
            "Persist",
            r#""writer":"w1","offset":5,"value":"a","outcome":"applied""#,
        ),
        line(
            "Persist",
            r#""writer":"w2","offset":3,"value":"b","outcome":"applied""#,
        ),
        line("Read", r#""stored":3,"value":"b""#),
        line("Delete", r#""writer":"w1","offset":2,"outcome":"applied""#),
        line("Read", ""),
    ];
    let (code, said) = conform("lww", ATOMIC, &lines, &["--set", "Guarded=false"]);
    assert_eq!(code, Some(0), "{said}");
    let (code, said) = conform("lww-guarded", ATOMIC, &lines, &[]);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("a stale write landed"), "{said}");
}

/// The compound's repair of a row whose guard expired: the insert loses to the visible row
/// (`guard_expired`), and `UPDATE … IF offset = null` claims it; to the model the row is absent
/// and the repair is its insert. A repair that lands on a row with a live guard is refused.
#[test]
fn the_repair_of_an_expired_guard_is_the_compounds_insert() {
    let lines = |repair: &str| {
        vec![
            line(
                "Update1",
                r#""writer":"w1","offset":7,"outcome":"row_absent""#,
            ),
            line(
                "Insert",
                r#""writer":"w1","offset":7,"outcome":"guard_expired""#,
            ),
            line("Repair", &format!(r#""writer":"w1","offset":7,{repair}"#)),
            line(
                "Update1",
                r#""writer":"w2","offset":6,"tombstone":true,"outcome":"not_applied","stored":7"#,
            ),
            line("Read", r#""stored":7"#),
        ]
    };
    let (code, said) = conform("repair", COMPOUND, &lines(r#""outcome":"applied""#), &[]);
    assert_eq!(code, Some(0), "{said}");
    let (code, said) = conform(
        "repair-refused",
        COMPOUND,
        &lines(r#""outcome":"not_applied","stored":3"#),
        &[],
    );
    assert_eq!(code, Some(1), "{said}");
    // An insert that reports an expired guard where the model's row is present is wrong too.
    let present = [
        line(
            "Update1",
            r#""writer":"w1","offset":2,"outcome":"row_absent""#,
        ),
        line(
            "Update1",
            r#""writer":"w2","offset":1,"outcome":"row_absent""#,
        ),
        line("Insert", r#""writer":"w1","offset":2,"outcome":"applied""#),
        line(
            "Insert",
            r#""writer":"w2","offset":1,"outcome":"guard_expired""#,
        ),
    ];
    let (code, said) = conform("expired-on-present", COMPOUND, &present, &[]);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("guard_expired"), "{said}");
}

/// The compound model holds offsets only: a read naming a value is refused as bad input
/// (exit 2, naming the event), never compared by its offset alone.
#[test]
fn the_compound_refuses_to_judge_a_value_it_does_not_hold() {
    let lines = [
        line(
            "Update1",
            r#""writer":"w1","offset":2,"outcome":"row_absent""#,
        ),
        line(
            "Insert",
            r#""writer":"w1","offset":2,"value":"a","outcome":"applied""#,
        ),
        line("Read", r#""stored":2,"value":"b""#),
    ];
    let (code, said) = conform("compound-value", COMPOUND, &lines, &[]);
    assert_eq!(code, Some(2), "{said}");
    assert!(
        said.contains("event 3 reads a value or a tombstone"),
        "{said}"
    );
}

/// Bad payloads are errors naming the line.
#[test]
fn a_delete_with_a_value_is_refused_naming_its_line() {
    let lines = [
        line("Persist", r#""writer":"w1","offset":5,"outcome":"applied""#),
        line(
            "Delete",
            r#""writer":"w1","offset":6,"value":"x","outcome":"applied""#,
        ),
    ];
    let (code, said) = conform("bad-delete", ATOMIC, &lines, &[]);
    assert_eq!(code, Some(2), "{said}");
    assert!(
        said.contains("line 2") && said.contains("takes no `value`"),
        "{said}"
    );
}
