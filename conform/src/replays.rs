//! Which must-fail configs a target drives, read from the suite's replay data
//! (`expected/replays.toml`), and the typed outcome of each replay.

pub use loadbearing_expected::replays::Violation;
use loadbearing_expected::replays::{self, ReplaySpec};
use serde::Serialize;

use crate::error::Error;

/// The shipped replays, checked against the suite. Their target names are checked against the
/// target table by the table's module (`replays` there, and its test): the table sits above
/// the targets, which read this module, so that check cannot live here.
pub fn all() -> Result<&'static [ReplaySpec], Error> {
    // Each target reads the replays it drives: parse them (and the suite) once per process.
    static ALL: std::sync::OnceLock<Vec<ReplaySpec>> = std::sync::OnceLock::new();
    if let Some(all) = ALL.get() {
        return Ok(all);
    }
    let suite = loadbearing_expected::suite::built_in_shared()?;
    let all = replays::load_for(replays::DEFAULT, suite)?;
    Ok(ALL.get_or_init(|| all))
}

/// The counterexamples `target` drives, in the data's order.
pub fn driven_by(target: &str) -> Result<Vec<ReplaySpec>, Error> {
    Ok(all()?
        .iter()
        .filter(|r| r.driven_by(target))
        .cloned()
        .collect())
}

/// Whether `target` must reproduce `spec`'s violation (it drives the broken implementation).
pub fn reproduces(spec: &ReplaySpec, target: &str) -> bool {
    spec.reproduced_by.iter().any(|t| t == target)
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

/// The judge of one replay: the broken implementation (when the target drives it) must have
/// reproduced the config's violation, and the guarded one (when it is asked to) must have
/// refused it. Each failure is
/// a mismatch, named by the config and what was expected.
pub fn judge(spec: &ReplaySpec, broken: ReplayOutcome, guarded: ReplayOutcome) -> Vec<String> {
    let mut mismatches = Vec::new();
    if broken != ReplayOutcome::NotDriven && broken != ReplayOutcome::Reproduced(spec.shows) {
        mismatches.push(format!(
            "{}: the broken implementation did not reproduce the violation ({:?} expected, {broken:?})",
            spec.config, spec.shows
        ));
    }
    // NotDriven: the schedule is not one the designed implementation is asked to refuse (a
    // design limit such as a TTL reap, or a schedule the real flow never takes).
    if let ReplayOutcome::Reproduced(_) = guarded {
        mismatches.push(format!(
            "{}: the implementation as designed did not refuse it ({guarded:?})",
            spec.config
        ));
    }
    mismatches
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_replays_load_against_the_target_table() {
        let all = all().unwrap();
        for r in all {
            for t in r.reproduced_by.iter().chain(&r.refused_by) {
                assert!(crate::targets::find(t).is_ok(), "{}: {t}", r.config);
            }
        }
        assert!(driven_by("flow")
            .unwrap()
            .iter()
            .any(|r| r.config == "cassandra_unguarded"));
    }

    #[test]
    fn a_replay_is_judged_by_its_typed_outcomes() {
        let spec = ReplaySpec {
            config: "c".into(),
            reproduced_by: vec!["t".into()],
            refused_by: vec![],
            shows: Violation::StaleOverwrite,
        };
        let reproduced = ReplayOutcome::Reproduced(Violation::StaleOverwrite);
        assert!(judge(&spec, reproduced, ReplayOutcome::Refused).is_empty());
        assert_eq!(
            judge(&spec, ReplayOutcome::Refused, ReplayOutcome::Refused).len(),
            1
        );
        assert_eq!(
            judge(
                &spec,
                ReplayOutcome::Reproduced(Violation::RowVanished),
                reproduced
            )
            .len(),
            2
        );
        assert!(judge(&spec, ReplayOutcome::NotDriven, ReplayOutcome::Refused).is_empty());
        assert!(judge(&spec, reproduced, ReplayOutcome::NotDriven).is_empty());
    }
}
