//! The models of loadbearing, one module per spec of `SPECS.md`.
//!
//! The single-writer tower: `SingleWriterStore` at the top; `Cassandra`, `Kafka` and the rejected
//! `Epoch` refine it (or must fail to); `CasFirstWrite` refines `CasFirstWriteAtomic`;
//! `ReplayFence` and `GroupCommit` are lemmas under Cassandra and Kafka.

pub mod cas_first_write;
pub mod cas_first_write_atomic;
pub mod cassandra;
pub mod epoch;
pub mod group_commit;
pub mod kafka;
pub mod knobs;
pub mod one_key;
pub mod registry;
pub mod replay_fence;
pub mod single_writer_store;
pub mod ssi;
pub mod vocab;

use loadbearing_refinement::Spec;

use knobs::{Knob, Resolved};

/// A model that a config can build: its name in `expected/`, its constants, and how the
/// constants make an instance.
pub trait Configured: Spec + 'static {
    const NAME: &'static str;
    const KNOBS: &'static [Knob];
    fn from_knobs(knobs: &Resolved) -> Self;
}
