//! The store contract kit (`loadbearing_impls::kit`) against its own in-memory example store: a
//! store of your own runs the same list this way.

mod common;

use std::sync::OnceLock;

use common::Backend;
use loadbearing_impls::kit::{memory::MemoryBackend, run_all, CASES};
use loadbearing_impls::store::{Mode, StoreOptions};

fn memory() -> Result<&'static dyn Backend, String> {
    static BACKEND: OnceLock<MemoryBackend> = OnceLock::new();
    Ok(BACKEND.get_or_init(MemoryBackend::default))
}

backend_tests!(memory());

/// the kit's one call passes on a store that keeps the contract, and names the cases a
/// store that breaks it fails.
#[test]
fn x1_the_kit_passes_a_store_that_keeps_the_contract_and_fails_one_that_does_not() {
    assert!(CASES.len() >= 19);
    assert_eq!(run_all(&MemoryBackend::default()), Vec::new());
    let failed: Vec<&str> = run_all(&Unguarded::default())
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    assert!(
        failed.contains(&"stale_write_rejected_with_key_attempted_and_stored"),
        "{failed:?}"
    );
    assert!(failed.contains(&"issue_732_cas_stale_flush_on_revoke_is_fenced"));
}

/// A store that ignores the guarded mode it is asked for: every write wins (X-1's "to be
/// fenced, a custom store rejects a write when it holds a newer offset", broken).
#[derive(Default)]
struct Unguarded(MemoryBackend);

impl Backend for Unguarded {
    fn name(&self) -> &'static str {
        "unguarded"
    }
    fn open(
        &self,
        options: StoreOptions,
        tracer: loadbearing_impls::trace::SharedTracer,
    ) -> Box<dyn loadbearing_impls::store::SnapshotStore> {
        self.0.open(
            StoreOptions {
                mode: Mode::LastWriteWins,
                ..options
            },
            tracer,
        )
    }
}
