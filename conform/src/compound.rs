//! The `compound` target: the non-atomic three-statement first write (PostgreSQL, Cassandra),
//! its writers' statements interleaved by a seeded schedule, against CasFirstWrite; on
//! PostgreSQL, the compound's must-fail counterexamples replayed statement by statement
//! (`replay`). The store family's sessions and event reading are `crate::stores`'s.

use loadbearing_impls::{CompoundGuards, Mode};

use loadbearing_specs::first_write::compound::CasFirstWrite;

use crate::backend::{BackendKind, StoreBackend};
use crate::error::Error;
use crate::schedule::{Schedule, Seeded};
use crate::stores::{guarded_compound, scheduled_round, StoreFactory, MAX_OFFSET};
use crate::target::{Expect, ModelName, Settings, Target, TargetResult};
use crate::target_id::TargetId;

#[cfg(feature = "postgres")]
pub mod replay;

/// The backends whose store is the three-statement compound.
const COMPOUND_STORES: &[BackendKind] = &[
    BackendKind::Store(StoreBackend::Postgres),
    BackendKind::Store(StoreBackend::Cassandra),
];

/// PostgreSQL and Cassandra: the non-atomic three-statement first write, its statements of
/// the writers interleaved by the seeded scheduler, against CasFirstWrite.
pub struct Compound;

pub static COMPOUND: Compound = Compound;

impl Target for Compound {
    fn id(&self) -> TargetId {
        TargetId::Compound
    }

    fn model(&self, _: BackendKind) -> ModelName {
        ModelName::of::<CasFirstWrite>()
    }

    fn backends(&self) -> &'static [BackendKind] {
        COMPOUND_STORES
    }

    fn expect(&self) -> Expect {
        Expect::Conforms
    }

    fn run(&self, settings: &Settings, result: &mut TargetResult) -> Result<(), Error> {
        let factory = StoreFactory::compound(
            settings.backend.clone(),
            Mode::Guarded,
            self.name(),
            CompoundGuards::default(),
        )?;
        let model = guarded_compound(settings.writers);
        let mut schedule = Seeded::new(settings.seed);
        for round in 0..settings.traces {
            let offsets: Vec<u64> = (0..settings.writers)
                .map(|_| schedule.below(MAX_OFFSET as u64 + 1))
                .collect();
            let seed = schedule.next_u64();
            let events = scheduled_round(&factory, &format!("key{round}"), &offsets, seed)?;
            result.tally(&model, &events);
        }
        if settings.backend.kind() == BackendKind::Store(StoreBackend::Postgres) {
            #[cfg(feature = "postgres")]
            replay::replay_counterexamples(settings, result)?;
        } else {
            eprintln!(
                "conform: compound: the casfw_* counterexamples replay on PostgreSQL (its store has the mutant switches), not on {}",
                settings.backend.name()
            );
        }
        Ok(())
    }
}
