//! The models of loadbearing, one module per TLA+ spec of the single-writer suite (kafka-flow PR #828) and the SSI model.
//!
//! The single-writer tower: `SingleWriterStore` at the top; `Cassandra`, `Kafka` and the rejected
//! `Epoch` refine it (or must fail to); `CasFirstWrite` refines `CasFirstWriteAtomic`;
//! `ReplayFence` and `GroupCommit` are lemmas under Cassandra and Kafka.

pub mod actor_common;
pub mod cas_first_write;
pub mod cas_first_write_atomic;
pub mod cassandra;
pub mod cassandra_actors;
pub mod conform_common;
pub mod epoch;
pub mod first_write;
pub mod flows_alive;
pub mod flush_cell;
pub mod group_commit;
pub mod kafka;
pub mod kafka_actors;
pub mod knobs;
pub mod one_key;
pub mod recovery_deadline;
pub mod registry;
pub mod replay_fence;
pub mod single_writer_store;
pub mod ssi;
pub mod vocab;

use loadbearing_refinement::Spec;

use knobs::{Knob, Resolved, Value};

/// A model that a config can build: its name in `expected/`, its constants, and how the
/// constants make an instance.
pub trait Configured: Spec + 'static {
    const NAME: &'static str;
    /// The model described for people: its variables, actions with their guards and effects,
    /// fairness, properties and refinement mapping. The same markdown is the module's rustdoc
    /// and, through the registry, the prose of the model's page that `loadbearing docs` writes,
    /// so the installed binary carries it and the two cannot drift.
    const DOC: &'static str;
    const KNOBS: &'static [Knob];
    /// The design's guards, each a switch the model already reads.
    const GUARDS: &'static [Guard] = &[];
    fn from_knobs(knobs: &Resolved) -> Self;
}

/// A guard of a design, named as its write-up names it: the knob that switches it and the
/// setting that removes it. Guard-mutation coverage flips each one in turn.
#[derive(Clone, Copy, Debug)]
pub struct Guard {
    pub name: &'static str,
    pub knob: &'static str,
    pub removed: Setting,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting {
    Flag(bool),
    Choice(&'static str),
}

impl Setting {
    pub fn value(self) -> Value {
        match self {
            Setting::Flag(b) => Value::Bool(b),
            Setting::Choice(name) => Value::Name(name.to_string()),
        }
    }
}

impl Guard {
    pub const fn off(name: &'static str, knob: &'static str) -> Guard {
        Guard {
            name,
            knob,
            removed: Setting::Flag(false),
        }
    }

    pub const fn set(name: &'static str, knob: &'static str, removed: Setting) -> Guard {
        Guard {
            name,
            knob,
            removed,
        }
    }
}
