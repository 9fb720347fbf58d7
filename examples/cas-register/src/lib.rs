//! A compare-and-set register, checked by loadbearing from a crate of its own (the second
//! example of docs/your-own-design.md): the design's model (`model`), its suite
//! (`cas-register.toml`), the trace vocabulary its clients record (`trace`), and the
//! implementation: the register on SQLite (`store`) and concurrent clients recording a
//! history (`run`).

pub mod model;
pub mod run;
pub mod store;
pub mod trace;

/// The design's suite, compiled in: `cargo run -- check` runs it.
pub const SUITE: &str = include_str!("../cas-register.toml");

/// What the CLI is handed: the design's model, its trace reader, its suite.
pub fn design() -> loadbearing::Design {
    loadbearing::Design {
        models: vec![loadbearing::model_entry::<model::CasRegister>()],
        conformance: vec![trace::conformance()],
        suite: Some(("cas-register.toml", SUITE)),
    }
}
