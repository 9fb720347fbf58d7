//! What the targets take from the shipped suite: a config by name, the model its constants
//! build, its shortest counterexample checked afresh, and the compound's counterexample mapped
//! onto the atomic store. Its own module, apart from the crate root that re-exports it, so the
//! targets that read it and the root that lists them do not import each other.

use loadbearing_refinement::refinement::StepMatch;
use loadbearing_refinement::Model;
use loadbearing_refinement::{Options, Spec};
use loadbearing_specs::first_write::atomic::{AtomicAction, AtomicState, CasFirstWriteAtomic};
use loadbearing_specs::first_write::compound::CasFirstWrite;

use crate::error::{ConfigProblem, Error};
use crate::paths::ModelPath;

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
