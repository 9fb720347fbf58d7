//! A design of your own, checked by the whole loadbearing CLI from a crate of its own: a lock
//! service with leases and fencing tokens (`model`), the abstract spec it refines
//! (`token_order`), its suite (`SUITE`), and a small implementation over SQLite (`lock`,
//! `storage`, `run`) whose runs write traces in the design's own vocabulary (`trace`) for
//! `conform --trace` to judge.
//!
//! ```sh
//! cargo run -- check                                    # the suite, as declared
//! cargo run -- trace fencing_unchecked                  # the stale write, step by step
//! cargo run -- mutate                                   # the token check is load-bearing
//! cargo run --bin fencing-store -- --out run.ndjson     # a run of the implementation
//! cargo run -- conform --trace run.ndjson --model FencingToken
//! ```

pub mod lock;
pub mod model;
pub mod run;
pub mod storage;
pub mod token_order;
pub mod trace;

pub use model::FencingToken;

/// The suite: the design holds with the token check (its invariant, its refinement of
/// `TokenOrder` and a witness that the last lease's write lands); without the check the stale
/// write lands and storage's token goes back.
pub const SUITE: &str = include_str!("../fencing-token.toml");

/// What the CLI is handed: the design's model, its trace reader, its suite.
pub fn design() -> loadbearing::Design {
    loadbearing::Design {
        models: vec![loadbearing::model_entry::<FencingToken>()],
        conformance: vec![trace::conformance()],
        suite: Some(("fencing-token.toml", SUITE)),
    }
}
