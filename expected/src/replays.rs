//! Which implementation reproduces which must-fail config: `replays.toml` beside this crate,
//! compiled in, validated on load against the suite and the conformance targets' names.

use std::collections::HashSet;

use serde::Deserialize;

use crate::suite::{Config, Expected};

/// The replays shipped with the project.
pub const DEFAULT: &str = include_str!("../replays.toml");

/// What a must-fail config's counterexample must show on the implementation built the same
/// broken way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Violation {
    /// A lower offset overwrote a higher one that was stored or acknowledged.
    StaleOverwrite,
    /// A present row disappeared: the high water it guarded fell back to 0.
    RowVanished,
    /// A live row holds contents other than the correct fold at its offset.
    CorruptFold,
    /// A deleted key came back: a live row at or below a delete the input offset committed.
    ResurrectedKey,
    /// A writer got a conflict although nothing higher was stored.
    UnjustifiedConflict,
    /// The row vanished between the lost insert and the retry: a conflict for nothing.
    SpuriousConflict,
    /// The restarted owner fenced itself.
    SelfFence,
    /// The restarted owner never completes the log.
    NeverCompletes,
    /// The committed input offset led the durable writes.
    OffsetAheadOfDurable,
    /// The revoked flow's commit landed and the topic moved back.
    ZombieCommitLanded,
    /// The engine followed the counterexample to the violating state.
    ViolatingPath,
    /// The engine followed the counterexample and committed a non-serializable history.
    NonSerializableHistory,
    /// A revoked partition's flow was still live in the new generation.
    FlowAliveUnowned,
    /// The recovery read was failed while it was still making progress.
    ProgressingReadFailed,
    /// The member was evicted at the poll deadline with the recovery read still running.
    SilentEviction,
    /// A key read as persisted while the store held an older value.
    LostWrite,
    /// The recovery read left out a snapshot committed before it began.
    MissedSnapshot,
    /// A transaction drained fewer writes than its cap allowed while more were queued.
    SlotSteal,
    /// The flow's last scheduled offset was never committed, with nothing more to come.
    MarkerStranded,
    /// The owner's commit carried a generation the coordinator left behind, with nothing to
    /// come that resyncs it.
    StaleToken,
}

/// One must-fail config's replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplaySpec {
    pub config: String,
    /// The targets whose broken implementation must reproduce it.
    pub reproduced_by: Vec<String>,
    /// Targets as designed that drive it too: their implementation must refuse it.
    pub refused_by: Vec<String>,
    pub shows: Violation,
}

impl ReplaySpec {
    /// Whether `target` drives this counterexample (to reproduce it, or to refuse it).
    pub fn driven_by(&self, target: &str) -> bool {
        self.reproduced_by
            .iter()
            .chain(&self.refused_by)
            .any(|t| t == target)
    }
}

/// Why the replays could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ReplaysError {
    #[error("replays.toml: {0}")]
    Parse(#[from] toml::de::Error),
    #[error("replays.toml: `{0}` is not a config of the suite")]
    UnknownConfig(String),
    #[error("replays.toml: `{0}` is not a must-fail config: there is no violation to reproduce")]
    NotMustFail(String),
    #[error("replays.toml: `{config}` names `{target}`, which is not a conformance target")]
    UnknownTarget { config: String, target: String },
    #[error("replays.toml: `{0}` is listed twice")]
    Twice(String),
    #[error("replays.toml: `{0}` names no target that reproduces it")]
    NoReproducer(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    replay: Vec<Raw>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    config: String,
    reproduced_by: Vec<String>,
    #[serde(default)]
    refused_by: Vec<String>,
    shows: Violation,
}

/// Parses `text` and checks it against `suite` and the names of the conformance `targets`.
pub fn load(
    text: &str,
    suite: &[Config],
    targets: &[&str],
) -> Result<Vec<ReplaySpec>, ReplaysError> {
    let specs = load_for(text, suite)?;
    check_targets(&specs, targets)?;
    Ok(specs)
}

/// Every target a replay names is one of `targets`.
pub fn check_targets(specs: &[ReplaySpec], targets: &[&str]) -> Result<(), ReplaysError> {
    for spec in specs {
        if let Some(unknown) = spec
            .reproduced_by
            .iter()
            .chain(&spec.refused_by)
            .find(|t| !targets.contains(&t.as_str()))
        {
            return Err(ReplaysError::UnknownTarget {
                config: spec.config.clone(),
                target: unknown.clone(),
            });
        }
    }
    Ok(())
}

/// Parses `text` and checks it against `suite`; the target names are left to
/// [`check_targets`], for a caller that cannot name the targets where it loads the data.
pub fn load_for(text: &str, suite: &[Config]) -> Result<Vec<ReplaySpec>, ReplaysError> {
    let file: File = toml::from_str(text)?;
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for raw in file.replay {
        let config = crate::suite::find(suite, &raw.config)
            .map_err(|_| ReplaysError::UnknownConfig(raw.config.clone()))?;
        if !matches!(config.expected, Expected::Violates(_)) {
            return Err(ReplaysError::NotMustFail(raw.config));
        }
        if !seen.insert(raw.config.clone()) {
            return Err(ReplaysError::Twice(raw.config));
        }
        if raw.reproduced_by.is_empty() {
            return Err(ReplaysError::NoReproducer(raw.config));
        }
        out.push(ReplaySpec {
            config: raw.config,
            reproduced_by: raw.reproduced_by,
            refused_by: raw.refused_by,
            shows: raw.shows,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suite() -> Vec<Config> {
        crate::suite::built_in().unwrap()
    }

    const TARGETS: &[&str] = &["replay", "flow", "flow-lww"];

    #[test]
    fn a_replay_of_a_config_the_suite_lacks_or_of_an_unknown_target_is_refused() {
        let unknown_config = "[[replay]]\nconfig = \"nope\"\nreproduced_by = [\"replay\"]\nshows = \"stale-overwrite\"\n";
        assert!(matches!(
            load(unknown_config, &suite(), TARGETS),
            Err(ReplaysError::UnknownConfig(c)) if c == "nope"
        ));
        let unknown_target = "[[replay]]\nconfig = \"cassandra_unguarded\"\nreproduced_by = [\"flow-lww\"]\nrefused_by = [\"flw\"]\nshows = \"stale-overwrite\"\n";
        assert!(matches!(
            load(unknown_target, &suite(), TARGETS),
            Err(ReplaysError::UnknownTarget { target, .. }) if target == "flw"
        ));
        let holding = "[[replay]]\nconfig = \"casfw_guarded\"\nreproduced_by = [\"replay\"]\nshows = \"stale-overwrite\"\n";
        assert!(matches!(
            load(holding, &suite(), TARGETS),
            Err(ReplaysError::NotMustFail(_))
        ));
        let twice = "[[replay]]\nconfig = \"casfw_unguarded\"\nreproduced_by = [\"replay\"]\nshows = \"stale-overwrite\"\n".repeat(2);
        assert!(matches!(
            load(&twice, &suite(), TARGETS),
            Err(ReplaysError::Twice(_))
        ));
        let bad_violation = "[[replay]]\nconfig = \"casfw_unguarded\"\nreproduced_by = [\"replay\"]\nshows = \"stale\"\n";
        assert!(matches!(
            load(bad_violation, &suite(), TARGETS),
            Err(ReplaysError::Parse(_))
        ));
    }

    #[test]
    fn the_shipped_replays_name_must_fail_configs_of_the_suite() {
        // The targets are conform's; here any name passes, conform checks them against its table.
        let all: Vec<String> = load_names(DEFAULT);
        let names: Vec<&str> = all.iter().map(String::as_str).collect();
        let replays = load(DEFAULT, &suite(), &names).unwrap();
        assert!(replays.iter().any(|r| r.config == "casfw_unguarded"));
        assert!(replays.iter().all(|r| !r.reproduced_by.is_empty()));
    }

    fn load_names(text: &str) -> Vec<String> {
        let file: File = toml::from_str(text).unwrap();
        file.replay
            .into_iter()
            .flat_map(|r| r.reproduced_by.into_iter().chain(r.refused_by))
            .collect()
    }
}
