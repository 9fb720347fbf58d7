//! The replay of must-fail configs, in one place: each config a target drives (the replay data,
//! `expected/replays.toml`), its shortest counterexample run through the implementation built
//! the config's broken way (where the target must reproduce it) and through the design (which
//! must refuse it), and each run judged and kept in the target's result
//! ([`TargetResult::replayed`]). A family says only how to run one counterexample on one build
//! and what that run showed.

use std::fmt::Debug;

use loadbearing_specs::Configured;

use crate::error::Error;
use crate::replays::{self, ReplaySpec};
use crate::suite::{counterexample, Cx};
use crate::target::TargetResult;
use crate::target_id::TargetId;

/// Which build of the implementation a counterexample runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Build {
    /// The target's own, built the config's broken way: it must show the violation.
    Broken,
    /// The design: it must refuse the schedule.
    Designed,
}

/// What one run of a counterexample showed: whether the config's violation showed, and what
/// the implementation did, for people.
#[derive(Clone, Debug)]
pub struct Showed {
    pub violation: bool,
    pub did: String,
}

/// Replays every must-fail config `target` drives, its counterexample a path of model `M`:
/// `run` runs one counterexample on one build (the broken one only where `target` must
/// reproduce it) and may record more in the result (a trace it validates).
pub fn replay_each<M>(
    target: TargetId,
    result: &mut TargetResult,
    mut run: impl FnMut(&ReplaySpec, &Cx<M>, Build, &mut TargetResult) -> Result<Showed, Error>,
) -> Result<(), Error>
where
    M: Configured,
    M::Action: Debug,
{
    for spec in replays::driven_by(target)? {
        let cx = counterexample::<M>(&spec.config)?;
        let reproduces = replays::reproduces(&spec, target);
        let broken = if reproduces {
            Some(run(&spec, &cx, Build::Broken, result)?)
        } else {
            None
        };
        let designed = run(&spec, &cx, Build::Designed, result)?;
        result.steps += cx.path.len() * if reproduces { 2 } else { 1 };
        result.replayed(
            &spec,
            cx.path.iter().map(|a| format!("{a:?}")).collect(),
            broken.map(|s| (s.violation, s.did)),
            (designed.violation, designed.did),
        );
    }
    Ok(())
}
