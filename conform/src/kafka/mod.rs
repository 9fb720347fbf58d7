//! Conformance of the Kafka targets (docs/models/kafka.md, docs/models/epoch.md): an owner and a revoked (zombie) flow
//! on the generation-fenced design, its planted mutants and the rejected Epoch design.
//!
//! Implementation → model: a seeded schedule drives the flows ([`KafkaFlow`] over
//! [`GroupCommit`]) one step at a time: the owner folds the next record and flushes it (the
//! model's `OwnerFold` writes the topic at each fold, so fold + transaction are one step, its
//! event emitted once the outcome is known), recovers after a delete evicted its key, the
//! coordinator rebalances, the zombie's consumer polls (capturing the new generation, and in
//! the coupled design tearing the flow down in the same callback), the zombie commits its
//! fold at some offset `m`. Each step's recorded [`KafkaStep`]s become one NDJSON [`KafkaEvent`]
//! carrying what it observed (the transaction's outcome, the topic's last record for the key).
//!
//! Model → implementation: the must-fail configs' counterexamples drive the broken variant
//! (the stale write must land and the topic must regress) and the guarded design (it must
//! refuse where the guarded model refuses), comparing the topic with the model's after every
//! step; random walks of the guarded model drive the guarded design the same way.
//!
//! Backends. `memory`: the in-memory transactional producer ([`MemProducer`]), whose shared
//! log checks the offset commit's generation like the group coordinator. `kafka`: a real
//! broker; each world has its own topics and group, member A's generation is what the flows
//! carry (the owner its live one, the zombie the one captured before member B's join moved the
//! group on), the producers are real transactional producers (the Epoch design's share one
//! stable `transactional.id`), and the topic is read back read_committed after every step.
//! On both, the harness plays the zombie's rebalance callback: it captures the live generation
//! and (coupled) tears the flow down in one step, as `MemberContext::pre_rebalance` does; the
//! fences themselves are the implementation's and the coordinator's.
//!
//! By job: `txn` the transactional producer and the recorder; `log` the records and the
//! topic, and the harness's moves; `world` one key's flows stepped as the model's actions;
//! `replay` model paths driven through a world; here, the targets.

mod log;
mod replay;
mod txn;
mod world;

pub use log::Move;
use log::*;
use replay::*;
pub use replay::{drive, replay_counterexample, replay_counterexample_on, CxReplay, Replayed};
use txn::*;
pub use world::World;

use std::collections::HashMap;
#[cfg(feature = "kafka")]
use std::sync::atomic::AtomicU64;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
#[cfg(feature = "kafka")]
use std::time::{Duration, Instant};

use loadbearing_impls::store::Read;
use loadbearing_impls::trace::{Step, Tracer};
use loadbearing_impls_kafka::flow::{FlowRegistry, KafkaFlow, TeardownMode};
#[cfg(feature = "kafka")]
use loadbearing_impls_kafka::flow::{Member, MemberConfig};
use loadbearing_impls_kafka::group_commit::{
    CommitError, ErrorClass, Fence, GroupCommit, GroupCommitConfig, GroupMetadata,
    GroupMetadataSource, InputPartition, MemProducer, SnapshotWrite, TxnError, TxnProducer,
};
#[cfg(feature = "kafka")]
use loadbearing_impls_kafka::harness::recovery_budget;
#[cfg(feature = "kafka")]
use loadbearing_impls_kafka::kafka::{
    create_topics, group_metadata_of, recover, KafkaTxnProducer, LiveGroupMetadata,
};
#[cfg(feature = "kafka")]
use loadbearing_impls_kafka::trace::no_trace;
use loadbearing_impls_kafka::trace::{KafkaRecorder, KafkaStep, KafkaTracer};
use loadbearing_specs::kafka::trace::KafkaEvent;
use loadbearing_trace::{validate, Limits};

use crate::mismatch::Mismatch;
use crate::producer::{outcome_of, PRODUCERS};
use loadbearing_refinement::Model;
use loadbearing_specs::epoch::model::{Epoch, EpochAction};
use loadbearing_specs::infra::vocab::{Cell, Offsets, Op, Ops};
use loadbearing_specs::kafka::model::{Kafka, KafkaAction, KafkaState};
use loadbearing_specs::one_key::OneKey;
use loadbearing_specs::Configured;

use crate::backend::{Backend, BackendKind};
use crate::driver::{drive_expecting, refusing_states, Applied, Compare, Harness};
use crate::error::{Error, HarnessError};
use crate::observe::{cell_as_set, contents_as_set};
use crate::paths::random_walk;
use crate::replays::ReplaySpec;
use crate::replays::{self, ReplayOutcome, Violation};
use crate::schedule::{Schedule, Seeded};
use crate::target::{Expect, ModelName, Replay, Settings, Target, TargetResult};
use crate::target_id::TargetId;
use crate::{counterexample, Cx};

/// Events at offsets `1..=MAX_OFFSET`: small, so that zombie commits collide with the owner.
pub const MAX_OFFSET: u8 = 4;
const KEY: &str = "k";
const GROUP: &str = "loadbearing-conform";
const INPUT: &str = "input";
/// Steps per trace at most (the owner needs `MAX_OFFSET` folds plus recoveries).
const MAX_STEPS: usize = 4 * MAX_OFFSET as usize;

/// Which fence the transactions rely on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Design {
    /// KIP-447: the offset commit carries the consumer's generation.
    Generation,
    /// No generation check (`Fence::Unfenced`).
    Unfenced,
    /// The rejected Epoch design: a stable transactional id, producer epochs only.
    ProducerEpoch,
}

/// One build of the implementation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variant {
    /// Capturing the new generation tears the revoked flow down in the same step.
    pub coupled: bool,
    /// Every transaction carries an input offset, from the assignment's seed on.
    pub seeded: bool,
    pub design: Design,
}

impl Variant {
    /// How this build's rebalance callback tears a revoked flow down.
    pub fn teardown(self) -> TeardownMode {
        if self.coupled {
            TeardownMode::Awaited
        } else {
            TeardownMode::Detached
        }
    }

    pub const GUARDED: Variant = Variant {
        coupled: true,
        seeded: true,
        design: Design::Generation,
    };
}

/// One seeded trace: a random log, then random steps among those the implementation can take.
pub fn trace(variant: Variant, schedule: &mut dyn Schedule) -> Result<Vec<KafkaEvent>, Error> {
    trace_on(&Backend::MEMORY, variant, schedule)
}

/// One seeded trace on `backend`.
pub fn trace_on(
    backend: &Backend,
    variant: Variant,
    schedule: &mut dyn Schedule,
) -> Result<Vec<KafkaEvent>, Error> {
    let ops = Ops((schedule.below(1 << MAX_OFFSET) as u32) << 1);
    let mut world = World::new(variant, ops, MAX_OFFSET, backend)?;
    let mut events = Vec::new();
    for _ in 0..MAX_STEPS {
        let moves = world.moves();
        if moves.is_empty() || (world.owner_done() && schedule.below(3) == 0) {
            break;
        }
        let Some(chosen) = schedule.pick(moves.len()) else {
            break;
        };
        events.push(world.apply(moves[chosen])?);
    }
    Ok(events)
}

/// An owner and a revoked flow on one build of the Kafka design, against the guarded Kafka
/// model; then random walks of the guarded model (the design as built) or the must-fail
/// config's counterexample (a mutant).
pub struct KafkaTarget {
    id: TargetId,
    variant: Variant,
}

impl KafkaTarget {
    /// The build of the implementation it runs.
    pub fn variant(&self) -> Variant {
        self.variant
    }
}

/// Owner and revoked flows on the generation-fenced Kafka design.
pub static KAFKA: KafkaTarget = KafkaTarget {
    id: TargetId::Kafka,
    variant: Variant::GUARDED,
};

/// The capture decoupled from the teardown (planted mutant).
pub static KAFKA_DECOUPLED: KafkaTarget = KafkaTarget {
    id: TargetId::KafkaDecoupled,
    variant: Variant {
        coupled: false,
        ..Variant::GUARDED
    },
};

/// Transactions carrying no offset until the first schedule (planted mutant).
pub static KAFKA_UNSEEDED: KafkaTarget = KafkaTarget {
    id: TargetId::KafkaUnseeded,
    variant: Variant {
        seeded: false,
        ..Variant::GUARDED
    },
};

/// The generation not checked (planted mutant). It checks no generation, so nothing gates its
/// zombie: `Seeded = false` is the model of that too.
pub static KAFKA_UNFENCED: KafkaTarget = KafkaTarget {
    id: TargetId::KafkaUnfenced,
    variant: Variant {
        design: Design::Unfenced,
        ..Variant::GUARDED
    },
};

/// The rejected producer-epoch design, against the Kafka model (its counterexample must land on
/// the implementation); also validated against its own Epoch model, reported, not judged.
pub static EPOCH: KafkaTarget = KafkaTarget {
    id: TargetId::Epoch,
    variant: Variant {
        design: Design::ProducerEpoch,
        ..Variant::GUARDED
    },
};

impl Target for KafkaTarget {
    fn id(&self) -> TargetId {
        self.id
    }

    fn model(&self, _: BackendKind) -> ModelName {
        ModelName::of::<Kafka>()
    }

    fn backends(&self) -> &'static [BackendKind] {
        PRODUCERS
    }

    fn expect(&self) -> Expect {
        if self.variant == Variant::GUARDED {
            Expect::Conforms
        } else {
            Expect::Diverges
        }
    }

    fn run(&self, settings: &Settings, result: &mut TargetResult) -> Result<(), Error> {
        let guarded = Kafka {
            max_offset: MAX_OFFSET,
            coupled: true,
            seeded: true,
        };
        let epoch = Epoch {
            max_offset: MAX_OFFSET,
        };
        let own_model = self.variant.design == Design::ProducerEpoch;
        let mut schedule = Seeded::new(settings.seed);
        let (mut epoch_conforming, mut epoch_first) = (0, None);
        for n in 0..settings.traces {
            let events = trace_on(&settings.backend, self.variant, &mut schedule)?;
            result.tally(&guarded, &events);
            if own_model {
                // Against its own model. Not part of `ok`: the Epoch model's owner writes the
                // correct fold, while the implementation's owner writes its in-memory state,
                // which is wrong once it recovered a snapshot the zombie wrote at another
                // offset (the model under-approximates that corruption). Reported, not hidden.
                match validate(&epoch, &events, Limits::default()).divergence {
                    None => epoch_conforming += 1,
                    Some(d) => {
                        epoch_first.get_or_insert_with(|| format!("trace {}: {}", n + 1, d.text()));
                    }
                }
            }
        }
        if own_model {
            eprintln!(
                "epoch: {epoch_conforming} of {} traces conform to the Epoch model{}",
                settings.traces,
                epoch_first.map_or(String::new(), |d| format!(
                    "; the first that does not:\n{d}"
                ))
            );
        }
        if self.variant == Variant::GUARDED {
            guarded_walks(settings, result)?;
        }
        for spec in replays::driven_by(self.id)? {
            let cx = replay_config_on(&settings.backend, self, spec)?;
            judge_cx(&cx, result);
        }
        Ok(())
    }
}
