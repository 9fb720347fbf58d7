//! The snapshot store family: racing writers on one store against CasFirstWriteAtomic (on
//! Cassandra, whose persist is the three-LWT compound, against CasFirstWrite), and model paths
//! driven through the store. What the store families share (the sessions, the races, the
//! events they report) is `crate::stores`.

use loadbearing_impls::{Mode, SnapshotStore, WriteError};
use loadbearing_refinement::Model;
use loadbearing_specs::first_write::atomic::{AtomicAction, AtomicState, CasFirstWriteAtomic};
use loadbearing_specs::first_write::compound::{CasFirstWrite, Row};

use crate::backend::{BackendKind, StoreBackend};
use crate::driver::{self, Applied, Compare, Harness};
use crate::error::Error;
use crate::mismatch::Mismatch;
use crate::paths::{all_paths, random_walk};
use crate::replays::{self, ReplayOutcome, Violation};
use crate::schedule::{Schedule, Seeded};
use crate::target::{Expect, ModelName, Replay, Settings, Target, TargetResult};
use crate::target_id::TargetId;
use crate::{atomic_schedule, AtomicSchedule};

use crate::stores::{
    guarded_atomic, guarded_compound, race, row_of, StoreFactory, MAX_OFFSET, STORES,
};

// ----------------------------------------------------------------------------------------------
// The targets

/// Writers racing on one store, built `mode`.
pub struct StoreRace {
    id: TargetId,
    mode: Mode,
    expect: Expect,
}

/// The guarded store: every trace must be a behaviour of the guarded model.
pub static STORE: StoreRace = StoreRace {
    id: TargetId::Store,
    mode: Mode::Guarded,
    expect: Expect::Conforms,
};

/// The planted mutant, last-write-wins: conformance must catch it.
pub static STORE_LWW: StoreRace = StoreRace {
    id: TargetId::StoreLww,
    mode: Mode::LastWriteWins,
    expect: Expect::Diverges,
};

impl Target for StoreRace {
    fn id(&self) -> TargetId {
        self.id
    }

    fn model(&self, backend: BackendKind) -> ModelName {
        // Cassandra's persist is the three-LWT compound: its events are CasFirstWrite's.
        match backend {
            BackendKind::Store(StoreBackend::Cassandra) => ModelName::of::<CasFirstWrite>(),
            _ => ModelName::of::<CasFirstWriteAtomic>(),
        }
    }

    fn backends(&self) -> &'static [BackendKind] {
        STORES
    }

    fn expect(&self) -> Expect {
        self.expect
    }

    fn run(&self, settings: &Settings, result: &mut TargetResult) -> Result<(), Error> {
        let factory = StoreFactory::new(settings.backend.clone(), self.mode, self.id.name())?;
        let compound = settings.backend.kind() == BackendKind::Store(StoreBackend::Cassandra);
        let atomic = guarded_atomic(settings.writers);
        let three_statements = guarded_compound(settings.writers);
        let mut schedule = Seeded::new(settings.seed);
        for round in 0..settings.traces {
            let offsets: Vec<u64> = (0..settings.writers)
                .map(|_| schedule.below(MAX_OFFSET as u64 + 1))
                .collect();
            let jitter: Vec<u64> = (0..settings.writers).map(|_| schedule.below(200)).collect();
            let history = race(
                &factory,
                &format!("key{round}"),
                &offsets,
                &jitter,
                !compound,
            )?;
            if compound {
                result.tally_history(&three_statements, &history);
            } else {
                result.tally_rows(&atomic, &history);
            }
        }
        Ok(())
    }
}

/// Model paths driven through the guarded and the last-write-wins store.
pub struct ModelPaths;

pub static REPLAY: ModelPaths = ModelPaths;

impl Target for ModelPaths {
    fn id(&self) -> TargetId {
        TargetId::Replay
    }

    fn model(&self, _: BackendKind) -> ModelName {
        ModelName::of::<CasFirstWriteAtomic>()
    }

    fn backends(&self) -> &'static [BackendKind] {
        STORES
    }

    fn expect(&self) -> Expect {
        Expect::Conforms
    }

    fn run(&self, settings: &Settings, result: &mut TargetResult) -> Result<(), Error> {
        replay_all(settings, result)
    }
}

// ----------------------------------------------------------------------------------------------
// Model → implementation

/// The store driven as the atomic model's writers: `Persist(w)` persists writer w's offset,
/// every other action (a give-up, a stutter) leaves the store alone.
struct StoreHarness {
    store: Box<dyn SnapshotStore>,
    key: String,
    /// Each writer's offset (the model's `off`, fixed by the initial state).
    off: Vec<u8>,
}

impl Harness for StoreHarness {
    type Step = AtomicAction;
    type Observed = Row;

    fn apply(&mut self, action: &AtomicAction) -> Result<Applied, Error> {
        if let AtomicAction::Persist(w) = action {
            let offset = self.off[*w as usize] as u64;
            return match self.store.persist(&self.key, offset, b"replayed") {
                Ok(()) => Ok(Applied::Taken),
                Err(WriteError::Conflict(_)) => Ok(Applied::Refused),
                Err(other) => Err(other.into()),
            };
        }
        Ok(Applied::Taken)
    }

    fn observe(&mut self) -> Result<Row, Error> {
        Ok(row_of(&self.store.read(&self.key)?)?)
    }
}

/// Drives the store through `path` from `init`, comparing rows after every step. Returns the
/// mismatches, and whether the store ever let a lower offset overwrite a higher one.
pub fn replay(
    factory: &StoreFactory,
    key: &str,
    model: &CasFirstWriteAtomic,
    init: &AtomicState,
    path: &[AtomicAction],
) -> Result<(Vec<Mismatch>, bool), Error> {
    let mut harness = StoreHarness {
        store: factory.open(loadbearing_impls::trace::no_trace())?,
        key: key.to_string(),
        off: init.off.to_vec(),
    };
    let driven = driver::drive(
        model,
        init,
        path,
        &mut harness,
        |s| s.stored,
        Compare::Always,
    )?;
    let regressed = driven
        .transitions()
        .any(|(before, after)| before.present && after.present && after.offset < before.offset);
    Ok((driven.records(key), regressed))
}

fn replay_all(settings: &Settings, result: &mut TargetResult) -> Result<(), Error> {
    let guarded = StoreFactory::new(settings.backend.clone(), Mode::Guarded, "replay")?;
    let lww = StoreFactory::new(settings.backend.clone(), Mode::LastWriteWins, "replay_lww")?;
    let small = |guarded: bool| CasFirstWriteAtomic {
        writers: 2,
        max_offset: 2,
        guarded,
        reap: false,
    };
    // All short paths, on the guarded store against the guarded model and on the LWW store
    // against the unguarded model: the store must do exactly what the model does.
    let mut key = 0;
    for (factory, model) in [(&guarded, small(true)), (&lww, small(false))] {
        let paths = model.init_states().into_iter().flat_map(|init| {
            all_paths(&model, init.clone(), 4, true, |_| false)
                .into_iter()
                .map(move |path| (init.clone(), path))
        });
        for (init, path) in paths {
            key += 1;
            let (mismatches, _) = replay(factory, &format!("path{key}"), &model, &init, &path)?;
            result.traces += 1;
            result.steps += path.len();
            result.mismatches.extend(mismatches);
        }
    }
    // Random walks with more writers.
    let mut schedule = Seeded::new(settings.seed);
    let wide = CasFirstWriteAtomic {
        writers: settings.writers as u8,
        max_offset: MAX_OFFSET,
        guarded: true,
        reap: false,
    };
    for _ in 0..settings.traces {
        let off: Vec<u8> = (0..settings.writers)
            .map(|_| schedule.below(MAX_OFFSET as u64 + 1) as u8)
            .collect();
        let init = wide.init_states_for(&off);
        let (path, _) = random_walk(&wide, init.clone(), &mut schedule, usize::MAX, |_| false);
        key += 1;
        let (mismatches, _) = replay(&guarded, &format!("walk{key}"), &wide, &init, &path)?;
        result.traces += 1;
        result.steps += path.len();
        result.mismatches.extend(mismatches);
    }
    // The must-fail configs (the replay data's for this target), mapped onto the store: each
    // must reproduce on the broken store and be refused on the guarded one.
    for spec in replays::driven_by(TargetId::Replay)? {
        let AtomicSchedule {
            model,
            init,
            schedule,
        } = atomic_schedule(&spec.config)?;
        let guarded_model = CasFirstWriteAtomic {
            guarded: true,
            ..model.clone()
        };
        key += 1;
        let (_, regressed_lww) = replay(&lww, &format!("cx{key}"), &model, &init, &schedule)?;
        let (_, regressed_guarded) = replay(
            &guarded,
            &format!("cx{key}"),
            &guarded_model,
            &init,
            &schedule,
        )?;
        result.traces += 2;
        result.steps += 2 * schedule.len();
        // What this store can show of a must-fail config: a lower offset over a higher one.
        let seen = |regressed: bool| ReplayOutcome::of(Violation::StaleOverwrite, regressed);
        let (broken_outcome, guarded_outcome) = (seen(regressed_lww), seen(regressed_guarded));
        result.mismatches.extend(crate::mismatch::judge_replay(
            &spec,
            broken_outcome,
            guarded_outcome,
        ));
        result.replays.push(Replay {
            config: spec.config.clone(),
            steps: schedule.iter().map(|a| format!("{a:?}")).collect(),
            broken: if regressed_lww {
                "the last-write-wins store let the lower offset overwrite the higher one".into()
            } else {
                "did not reproduce".into()
            },
            guarded: if regressed_guarded {
                "regressed the row".into()
            } else {
                "refused the stale write (typed conflict); the row kept the higher offset".into()
            },
            broken_outcome,
            guarded_outcome,
        });
    }
    result.conforming = result.traces - result.mismatches.len().min(result.traces);
    Ok(())
}
