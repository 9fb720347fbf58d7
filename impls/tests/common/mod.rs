//! The one test list every backend runs, and the plumbing to run it against a backend.
#![allow(dead_code)]

pub mod cases;
pub mod stress;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use loadbearing_impls::store::{SnapshotStore, StoreOptions};
use loadbearing_impls::trace::SharedTracer;

/// A database the test list can open sessions on.
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

/// A key no other test (or earlier run on the same server) uses.
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

/// Run a case against a backend, or skip loudly when its server is unavailable: outside CI the
/// test prints `skipped: <reason>` and passes; in CI (`CI=true`) it fails instead.
pub fn run_or_skip(test: &str, backend: Result<&dyn Backend, String>, case: fn(&dyn Backend)) {
    if let Some(b) = loadbearing_test_support::or_skip(test, backend) {
        case(b)
    }
}

/// Print straight to the process's stderr, past libtest's capture, so CI logs show it.
pub fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Expands to one `#[test]` per case of the list, each running against `$backend` (an
/// expression of type `Result<&dyn Backend, String>`, `Err` = the server is unavailable).
#[macro_export]
macro_rules! backend_tests {
    ($backend:expr) => {
        $crate::backend_tests!(@cases $backend;
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
            c_wiring_the_replay_fence_follows_the_store_mode,
            periodic_flush_and_trace_names,
            stress_concurrent_writers_no_acknowledged_write_lost,
        );
    };
    (@cases $backend:expr; $($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                $crate::common::run_or_skip(stringify!($case), $backend, $crate::common::cases::$case);
            }
        )*
    };
}
