//! Which must-fail configs a target drives, read from the suite's replay data
//! (`expected/replays.toml`), and the typed outcome of each replay.

use loadbearing_expected::replays;
pub use loadbearing_expected::replays::Violation;
use serde::Serialize;

use crate::error::Error;
use crate::target_id::TargetId;

/// A must-fail config's replay, its targets named by id.
pub type ReplaySpec = replays::ReplaySpec<TargetId>;

/// The shipped replays, checked against the suite; a target name that is no [`TargetId`] fails
/// the parse.
pub fn all() -> Result<&'static [ReplaySpec], Error> {
    // Each target reads the replays it drives: parse them (and the suite) once per process.
    static ALL: std::sync::OnceLock<Vec<ReplaySpec>> = std::sync::OnceLock::new();
    if let Some(all) = ALL.get() {
        return Ok(all);
    }
    let suite = loadbearing_expected::suite::built_in_shared()?;
    let all = replays::load::<TargetId>(replays::DEFAULT, suite)?;
    Ok(ALL.get_or_init(|| all))
}

/// The counterexamples `target` drives, in the data's order.
pub fn driven_by(target: TargetId) -> Result<Vec<ReplaySpec>, Error> {
    Ok(all()?
        .iter()
        .filter(|r| r.driven_by(&target))
        .cloned()
        .collect())
}

/// Whether `target` must reproduce `spec`'s violation (it drives the broken implementation).
pub fn reproduces(spec: &ReplaySpec, target: TargetId) -> bool {
    spec.reproduced_by(&target)
}

/// What one implementation did with a must-fail config's counterexample.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReplayOutcome {
    /// The violation showed: what the implementation built the same broken way must do.
    Reproduced(Violation),
    /// No violation showed: what the implementation as designed must do.
    Refused,
    /// Not driven on this implementation.
    NotDriven,
}

impl ReplayOutcome {
    /// The outcome of a run in which `violation` showed or not.
    pub fn of(violation: Violation, showed: bool) -> ReplayOutcome {
        if showed {
            ReplayOutcome::Reproduced(violation)
        } else {
            ReplayOutcome::Refused
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_replays_load_with_target_ids() {
        assert!(!all().unwrap().is_empty());
        assert!(driven_by(TargetId::Flow)
            .unwrap()
            .iter()
            .any(|r| r.config == "cassandra_unguarded"));
    }
}
