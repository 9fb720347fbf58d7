//! The test list against SQLite (embedded: runs on every machine).

mod common;

use std::path::PathBuf;
use std::sync::OnceLock;

use common::Backend;
use loadbearing_impls::servers::sqlite::SqliteFile;
use loadbearing_impls::servers::sqlite::SqliteStore;
use loadbearing_impls::store::{SnapshotStore, StoreOptions};

fn sqlite() -> Result<&'static dyn Backend, String> {
    static DB: OnceLock<SqliteFile> = OnceLock::new();
    Ok(DB.get_or_init(|| {
        SqliteFile::fresh(
            PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
                .join(format!("impls-sqlite-{}.db", std::process::id())),
        )
    }))
}

#[test]
fn sqlite_reports_one_atomic_persist_per_write_and_reaps_expired_rows() {
    use loadbearing_impls::trace::{Recorder, StatementOutcome, Step};
    let rec = Recorder::new();
    let s = SqliteStore::open_traced(
        ":memory:",
        // Long enough that a loaded machine cannot expire the row between the two writes.
        StoreOptions::guarded().with_ttl(std::time::Duration::from_millis(500)),
        rec.clone(),
    )
    .unwrap();
    s.persist("k", 2, b"v").unwrap();
    assert!(s.persist("k", 1, b"old").is_err());
    std::thread::sleep(std::time::Duration::from_millis(600));
    assert_eq!(s.reap_expired().unwrap(), 1);
    let steps = rec.steps();
    assert!(matches!(
        &steps[0],
        Step::Persist {
            outcome: StatementOutcome::Applied,
            offset: 2,
            ..
        }
    ));
    assert!(matches!(
        &steps[1],
        Step::Persist {
            outcome: StatementOutcome::NotApplied { stored: 2 },
            offset: 1,
            ..
        }
    ));
    assert!(matches!(&steps[2], Step::ReapRow { offset: 2, .. }));
}

#[test]
fn offsets_above_i64_max_are_refused_before_anything_is_sent() {
    let s = SqliteStore::in_memory(StoreOptions::guarded()).unwrap();
    let e = s.persist("k", u64::MAX, b"v").unwrap_err();
    assert!(
        matches!(e, loadbearing_impls::WriteError::Failed { .. }),
        "{e}"
    );
    assert_eq!(s.read("k").unwrap(), loadbearing_impls::Read::Absent);
}

/// The stress check is not vacuous: the same run with last-write-wins loses acknowledged writes.
#[test]
fn stress_check_catches_last_write_wins() {
    let cfg = common::stress::StressConfig {
        duration: std::time::Duration::from_secs(1),
        mode: loadbearing_impls::Mode::LastWriteWins,
        ..Default::default()
    };
    let report = common::stress::run(sqlite().unwrap(), cfg, None);
    common::say(&format!("stress[sqlite, last-write-wins]: {report}"));
    assert!(
        !report.violations.is_empty(),
        "last-write-wins must lose acknowledged writes: {report}"
    );
}
