//! The snapshot-store contract as a kit (the #835 register's X-1 to X-3): the cases our own
//! stores pass on SQLite, PostgreSQL and Cassandra, for a store of your own. A store that
//! passes them rejects a write below what it holds with a typed conflict, keeps a delete as a
//! tombstone that carries its offset, lets the flow's buffer hand it its offsets so the owner
//! is not fenced by itself, and loses no acknowledged write under concurrent sessions.
//!
//! Implement [`Backend`] (how to open a new session on your database, in a mode) and run
//! [`run_all`], or one case of [`CASES`] per test:
//!
//! ```no_run
//! use loadbearing_impls::kit::{memory::MemoryBackend, run_all};
//!
//! // The kit's own in-memory example store passes every case.
//! assert_eq!(run_all(&MemoryBackend::default()), Vec::<(&str, String)>::new());
//! ```
//!
//! The last-write-wins mode and the hard-delete mutant are part of the contract: some cases
//! open the store in them to show that the guarded mode is what makes them pass.

pub mod cases;
pub mod memory;
pub mod stress;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use crate::store::{SnapshotStore, StoreOptions};
use crate::trace::SharedTracer;

/// A database the cases can open sessions on.
pub trait Backend: Send + Sync {
    fn name(&self) -> &'static str;
    /// A NEW session on the shared database (so concurrent writers are concurrent sessions).
    fn open(&self, options: StoreOptions, tracer: SharedTracer) -> Box<dyn SnapshotStore>;
    /// A TTL long enough to observe the row before it expires (whole seconds for CQL).
    fn ttl(&self) -> Duration {
        Duration::from_secs(2)
    }
    /// Remove the key's row outright, as a TTL reap would (the model's `ReapRow`). Only the
    /// compound backends need it.
    fn reap_row(&self, _key: &str) -> Result<(), String> {
        Err(format!("{} cannot reap a row on demand", self.name()))
    }
}

/// Every database our stores run on is a backend the cases can open sessions on.
impl<D: crate::servers::Database> Backend for D {
    fn name(&self) -> &'static str {
        self.backend().name()
    }
    fn open(&self, options: StoreOptions, tracer: SharedTracer) -> Box<dyn SnapshotStore> {
        self.session(options, tracer)
            .unwrap_or_else(|e| panic!("open a {} session: {e}", Backend::name(self)))
    }
}

/// A key no other case (or earlier run on the same server) uses.
pub fn unique_key(name: &str) -> String {
    static RUN: OnceLock<u64> = OnceLock::new();
    static N: AtomicU64 = AtomicU64::new(0);
    let run = *RUN.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos() as u64)
            .unwrap_or(0);
        (std::process::id() as u64) << 32 | nanos
    });
    format!("{name}-{run:x}-{}", N.fetch_add(1, Ordering::Relaxed))
}

/// Print straight to the process's stderr, past libtest's capture, so CI logs show it.
pub fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Print one row of a table of docs/reliability.md (`table`: `stores` or `kafka`), past the
/// test harness's capture, where `scripts/reliability-table.sh` collects it into the page.
pub fn reliability_row(table: &str, row: &str) {
    say(&format!("reliability[{table}] {row}"));
}

/// Calls `$then!(<its arguments>; <every case of the contract>)`: the one list of the cases,
/// from which [`CASES`] and the test binaries' per-case tests are both made.
#[macro_export]
macro_rules! store_contract_cases {
    ($then:ident ! ($($args:tt)*)) => {
        $then!($($args)*;
            monotonic_writes_and_same_offset_replace,
            stale_write_rejected_with_key_attempted_and_stored,
            eight_concurrent_first_writers_highest_wins,
            recreate_after_delete_at_higher_offset,
            stale_delete_rejected,
            equal_offset_delete_applies,
            idempotent_redelete,
            no_resurrection_by_lower_write_after_delete,
            replayed_old_delete_cannot_remove_newer_snapshot,
            ttl_on_insert_and_update_paths,
            lww_lets_a_stale_write_and_delete_land,
            issue_732_lww_stale_flush_on_revoke_loses_events,
            issue_732_cas_stale_flush_on_revoke_is_fenced,
            replay_window_fence_on_no_self_fence,
            replay_window_fence_off_owner_self_fences,
            c4_a_replay_up_to_the_recovered_offset_is_folded_once,
            c4_a_replayed_delete_below_the_recovered_snapshot_is_dropped,
            c_wiring_the_replay_fence_follows_the_store_mode,
            periodic_flush_and_trace_names,
            stress_concurrent_writers_no_acknowledged_write_lost,
        );
    };
}

macro_rules! case_table {
    ($(;)? $($case:ident),* $(,)?) => {
        /// Every case of the contract, by name.
        pub const CASES: &[(&str, fn(&dyn Backend))] = &[$((stringify!($case), cases::$case)),*];
    };
}

store_contract_cases!(case_table!());

/// Runs every case against `backend`; returns the ones that failed, each with its panic.
pub fn run_all(backend: &dyn Backend) -> Vec<(&'static str, String)> {
    let mut failed = Vec::new();
    for &(name, case) in CASES {
        if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| case(backend)))
        {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic without a message".into());
            failed.push((name, message));
        }
    }
    failed
}
