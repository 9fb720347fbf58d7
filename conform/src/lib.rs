//! `loadbearing conform`: the implementations checked against their models, both ways.
//!
//! Implementation → model: real threads drive an implementation, every step event is
//! recorded, and the trace is validated against the model (refinement/src/conform.rs). Model →
//! implementation: model paths (every shortest counterexample that maps onto the
//! implementation, random walks, and all short paths) drive it step by step through a
//! [`driver::Harness`], comparing its state with the model's after every step.
//!
//! - [`target`]: the [`Target`] trait, a target's result and its one judge; [`targets`]: the
//!   table of every target (what `conform --list` prints).
//! - [`backend`]: where an implementation runs, and the servers a run starts; [`backend_kind`]:
//!   what a backend is (the name targets, the CLI and errors share).
//! - [`schedule`]: every source of nondeterminism (seeded, scripted, a model path, real
//!   threads racing) and the crate's one generator.
//! - [`driver`]: the harness trait and the one path driver.
//! - The families: [`store`], [`compound`] (its counterexample replays: PostgreSQL), [`flow`], [`group_commit`], [`kafka`],
//!   [`ssi`]; the #835 models' [`flows_alive`], [`flush_cell`], [`recovery_deadline`].
//!
//! The server backends are Cargo features (`postgres`, `cassandra`, `kafka`; `full` for all):
//! the default build runs every target on its embedded backend (SQLite, the in-memory
//! producer, the SSI engine itself) without compiling a server client. [`BackendKind`] names
//! every backend, so the target table and `conform --list` are the same in every build; a
//! backend this build has no client for is [`Error::NotCompiled`], naming the feature.

pub mod backend;
pub mod backend_kind;
pub mod cassandra_835;
pub mod compound;
pub mod driver;
pub mod error;
pub mod flow;
pub mod flows_alive;
pub mod flush_cell;
pub mod group_commit;
pub mod group_commit_lanes;
pub mod kafka;
pub mod observe;
pub mod paths;
pub mod recovery_deadline;
pub mod recovery_read;
pub mod replays;
pub mod schedule;
pub mod ssi;
pub mod store;
pub mod store_faults;
pub mod target;
pub mod targets;
pub mod token_sync;

use loadbearing_refinement::refinement::StepMatch;
use loadbearing_refinement::{Options, Spec};
use loadbearing_specs::cas_first_write::CasFirstWrite;
use loadbearing_specs::cas_first_write_atomic::{AtomicAction, AtomicState, CasFirstWriteAtomic};
use stateright::Model;

pub use backend::{Backend, BackendKind, Servers};
pub use error::{ConfigProblem, Error, ServerError};
pub use observe::{cell_of, contents_of};
pub use paths::{all_paths, random_walk, ModelPath};
pub use schedule::{Rng, Schedule, Scripted, Seeded};
pub use store::{event_of, race, replay, scheduled_round, StoreFactory};
pub use target::{run, Expect, Replay, Settings, Target, TargetResult};

/// A must-fail config's counterexample: the model built from its constants, the states along
/// the path and the actions between them.
pub struct Cx<M: Model> {
    pub model: M,
    pub states: Vec<M::State>,
    pub path: Vec<M::Action>,
}

/// Checks `config_name` afresh and returns its shortest counterexample as model steps.
pub fn counterexample<M: loadbearing_specs::Configured>(config_name: &str) -> Result<Cx<M>, Error> {
    let (model, _) = suite_model::<M>(config_name)?;
    let (path, states) = counterexample_path(&model, config_name)?;
    Ok(Cx {
        model,
        states,
        path,
    })
}

/// A must-fail config of the suite: the model its constants build, and the config.
pub fn suite_model<M: loadbearing_specs::Configured>(
    config_name: &str,
) -> Result<(M, loadbearing_expected::suite::Config), Error> {
    let config = suite_config(config_name)?;
    if config.model != M::NAME {
        return Err(Error::config(
            config_name,
            ConfigProblem::WrongModel {
                found: config.model,
                wanted: M::NAME,
            },
        ));
    }
    let model = M::from_knobs(&config.constants)
        .map_err(|e| Error::config(config_name, ConfigProblem::Constants(e)))?;
    Ok((model, config))
}

/// A config's shortest counterexample, checked afresh on `model`, as the model's own actions
/// and states (the engine's typed path, not its rendering).
pub fn counterexample_path<M: Spec>(model: &M, config_name: &str) -> Result<ModelPath<M>, Error> {
    let problem = |p| Error::config(config_name, p);
    let config = suite_config(config_name)?;
    let report = loadbearing_expected::run::check_model(model, &config, &Options::default())
        .map_err(|e| problem(ConfigProblem::Check(e.to_string())))?;
    let cx = report
        .counterexample
        .ok_or_else(|| problem(ConfigProblem::NoCounterexample))?;
    Ok(cx.path.into_parts())
}

/// A counterexample of the compound, mapped onto the atomic store through the refinement: the
/// in-flight statements are stutters, a landing write is a Persist, a conflict a GiveUp.
pub fn atomic_schedule(config_name: &str) -> Result<AtomicSchedule, Error> {
    let Cx {
        model: compound,
        states,
        ..
    } = counterexample::<CasFirstWrite>(config_name)?;
    let not_atomic = |what: &str| {
        Error::config(
            config_name,
            ConfigProblem::NoAbstractStep(format!("{what} of CasFirstWriteAtomic")),
        )
    };
    let refinement = compound
        .refinements()
        .into_iter()
        .next()
        .ok_or_else(|| not_atomic("a refinement"))?;
    // The model the refinement maps onto (the config's constants), the image of the initial
    // state, and the atomic action of each simulated step, as the refinement reports them.
    let atomic = CasFirstWriteAtomic {
        writers: compound.writers,
        max_offset: compound.max_offset,
        guarded: compound.guarded,
        reap: compound.reap,
    };
    let atomic_init = refinement
        .image(&states[0])
        .downcast_ref::<AtomicState>()
        .cloned()
        .ok_or_else(|| not_atomic("the initial state"))?;
    let mut schedule = Vec::new();
    for pair in states.windows(2) {
        match refinement.check_step(&pair[0], &pair[1]) {
            Ok(StepMatch::Stutter) => {}
            Ok(StepMatch::Simulates(action)) => {
                let action = action
                    .downcast_ref::<AtomicAction>()
                    .ok_or_else(|| not_atomic("an action"))?;
                schedule.push(*action);
            }
            Err(_) => return Err(not_atomic("a step")),
        }
    }
    Ok(AtomicSchedule {
        model: atomic,
        init: atomic_init,
        schedule,
    })
}

/// A compound counterexample as atomic steps: the atomic model it maps onto (the config's
/// constants), its initial state and the steps.
pub struct AtomicSchedule {
    pub model: CasFirstWriteAtomic,
    pub init: AtomicState,
    pub schedule: Vec<AtomicAction>,
}

/// A config of the shipped suite, by name.
pub fn suite_config(config_name: &str) -> Result<loadbearing_expected::suite::Config, Error> {
    let suite = loadbearing_expected::suite::built_in_shared()?;
    loadbearing_expected::suite::find(suite, config_name)
        .cloned()
        .map_err(|_| Error::config(config_name, ConfigProblem::Unknown))
}
