//! Whole stress runs on SQLite (embedded: every machine runs them), each judged by the model
//! operation by operation, not only by its end state; and the planted mutants that misbehave
//! for a while mid-run, caught by the judged history although later writes bury what they did.

mod common;

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use common::mutants::{run_misbehaving, Misbehaviour};
use common::stress::{run, StressConfig};
use loadbearing_impls::servers::sqlite::SqliteFile;
use loadbearing_impls::store::Mode;

/// The binary's database file (each run writes keys of its own).
fn sqlite() -> &'static SqliteFile {
    static DB: OnceLock<SqliteFile> = OnceLock::new();
    DB.get_or_init(|| {
        SqliteFile::fresh(
            PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
                .join(format!("whole-runs-{}.db", std::process::id())),
        )
    })
}

#[test]
fn a_guarded_run_is_a_behaviour_of_the_model() {
    let report = run(sqlite(), StressConfig::default(), None);
    common::say(&format!("stress[sqlite]: {report}"));
    let verdict = common::assert_judged_clean("sqlite", &report);
    assert!(
        report.history.reads() > 0,
        "reads during the run are judged too: {report}"
    );
    assert!(
        verdict.operations > 1_000,
        "{} operations",
        verdict.operations
    );
}

/// Last-write-wins throughout: the end state may or may not show it; the history does.
#[test]
fn last_write_wins_is_caught_by_the_history() {
    let cfg = StressConfig {
        duration: Duration::from_secs(1),
        mode: Mode::LastWriteWins,
        ..Default::default()
    };
    let report = run(sqlite(), cfg, None);
    common::say(&format!("stress[sqlite, last-write-wins]: {report}"));
    common::assert_caught("sqlite, last-write-wins", &report);
}

/// A run whose sessions misbehave for a while a third into it (the "fault"), then behave: the
/// writes after it bury the damage in the end state; the history still shows it.
fn misbehaving_for_a_while(misbehaviour: Misbehaviour) {
    let pause = || std::thread::sleep(Duration::from_secs(1));
    let report = run_misbehaving(sqlite(), misbehaviour, "1 s passes", &pause);
    common::assert_caught(&format!("sqlite, mutant {misbehaviour:?}"), &report);
}

#[test]
fn stale_writes_landing_mid_run_are_caught() {
    misbehaving_for_a_while(Misbehaviour::StaleWritesLand);
}

#[test]
fn acknowledged_writes_lost_mid_run_are_caught() {
    misbehaving_for_a_while(Misbehaviour::AcknowledgedWritesLost);
}
