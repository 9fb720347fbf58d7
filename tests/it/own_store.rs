//! "Check your own store" (docs/trace-format.md), worked through on one of ours: a decorating
//! wrapper that knows nothing of loadbearing records each `persist` as an operation of a history
//! (its call and return times, what the store answered), real threads write through it, and
//! `loadbearing conform --trace FILE --model CasFirstWriteAtomic` judges the file. The guarded
//! store conforms; the same wrapper around the last-write-wins store is caught.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use loadbearing_impls::servers::sqlite::SqliteStore;
use loadbearing_impls::{SnapshotStore, StoreOptions, WriteError};

/// The wrapper: the store it decorates, the writer it records as, and where the lines go.
struct Recorded<S> {
    inner: S,
    writer: String,
    clock: Instant,
    lines: Arc<Mutex<Vec<String>>>,
}

impl<S: SnapshotStore> Recorded<S> {
    fn now(&self) -> u128 {
        self.clock.elapsed().as_nanos()
    }

    /// The store's own persist, recorded: applied, refused with the stored offset, or (a
    /// connection lost after the statement was sent) an unknown outcome, `"ret": null`.
    fn persist(&self, key: &str, offset: u64, value: &[u8]) -> Result<(), WriteError> {
        let call = self.now();
        let answer = self.inner.persist(key, offset, value);
        let ret = self.now();
        let (ret, outcome) = match &answer {
            Ok(()) => (ret.to_string(), r#","outcome":"applied""#.to_string()),
            Err(WriteError::Conflict(c)) => (
                ret.to_string(),
                format!(r#","outcome":"not_applied","stored":{}"#, c.stored),
            ),
            Err(WriteError::Failed { .. }) => (ret.to_string(), r#","outcome":"not_sent""#.into()),
            Err(WriteError::Indeterminate { .. }) => ("null".to_string(), String::new()),
        };
        self.record(format!(
            r#"{{"v":2,"vocabulary":"first_write","call":{call},"ret":{ret},"action":"Persist","writer":"{}","offset":{offset}{outcome}}}"#,
            self.writer
        ));
        answer
    }

    /// A read of the key, recorded: the offset the row holds (a tombstone's too).
    fn read_offset(&self, key: &str) -> Option<u64> {
        let call = self.now();
        let offset = match self.inner.read(key).expect("the read") {
            loadbearing_impls::Read::Live { offset, .. }
            | loadbearing_impls::Read::Tombstone { offset } => Some(offset),
            loadbearing_impls::Read::Absent => None,
        };
        let ret = self.now();
        let stored = offset.map_or(String::new(), |o| format!(r#","stored":{o}"#));
        self.record(format!(
            r#"{{"v":2,"vocabulary":"first_write","call":{call},"ret":{ret},"action":"Read"{stored}}}"#
        ));
        offset
    }

    fn record(&self, line: String) {
        self.lines.lock().unwrap().push(line);
    }
}

/// Four writers, each flushing real offsets (tens of thousands) three times to one key, truly
/// concurrently through the wrapper; then a read. Returns the history as NDJSON.
fn history_of(options: StoreOptions, file: &std::path::Path) -> String {
    let db = file.with_extension("sqlite");
    let _ = std::fs::remove_file(&db);
    let lines = Arc::new(Mutex::new(Vec::new()));
    let clock = Instant::now();
    std::thread::scope(|scope| {
        for w in 0..4u64 {
            let store = Recorded {
                inner: SqliteStore::open(&db, options).expect("the store opens"),
                writer: format!("w{}", w + 1),
                clock,
                lines: lines.clone(),
            };
            scope.spawn(move || {
                for flush in 0..3u64 {
                    let offset = 41_000 + 10 * flush + (w * 7) % 10;
                    let _ = store.persist("user-42", offset, b"snapshot");
                }
            });
        }
    });
    let reader = Recorded {
        inner: SqliteStore::open(&db, options).expect("the store opens"),
        writer: "reader".into(),
        clock,
        lines: lines.clone(),
    };
    reader.read_offset("user-42");
    let text = lines.lock().unwrap().join("\n") + "\n";
    std::fs::write(file, &text).unwrap();
    text
}

/// What `conform --trace` made of the file: its exit code and what it printed.
fn judged(file: &std::path::Path) -> (Option<i32>, String) {
    crate::common::conform_first_write(file, &[])
}

#[test]
fn a_store_recorded_by_a_decorating_wrapper_is_judged_from_its_history() {
    let dir = std::env::temp_dir().join(format!("lb-own-store-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let guarded = dir.join("guarded.ndjson");
    let text = history_of(StoreOptions::guarded(), &guarded);
    assert_eq!(text.lines().count(), 4 * 3 + 1, "{text}");
    let (code, said) = judged(&guarded);
    assert_eq!(code, Some(0), "the guarded store conforms:\n{text}\n{said}");
    // The last-write-wins store, recorded the same way, with its flushes in every order: some
    // stale write lands (or the read shows one that was overwritten) in at least one history.
    let lww = dir.join("lww.ndjson");
    let caught = (0..20).any(|_| {
        history_of(StoreOptions::last_write_wins(), &lww);
        judged(&lww).0 == Some(1)
    });
    assert!(caught, "the last-write-wins store is caught by its history");
    let _ = std::fs::remove_dir_all(&dir);
}
