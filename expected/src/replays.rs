//! Which implementation reproduces which must-fail config: `replays.toml` beside this crate,
//! compiled in, validated on load against the suite; the targets are read as the caller's ids.

use std::collections::HashSet;

use serde::de::DeserializeOwned;
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

/// One must-fail config's replay. `T` names a conformance target: the conformance crate reads
/// the data with its own target ids, so a name that is no target's fails the parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplaySpec<T> {
    pub config: String,
    /// The targets whose broken implementation must reproduce it.
    pub reproduced_by: Vec<T>,
    /// Targets as designed that drive it too: their implementation must refuse it.
    pub refused_by: Vec<T>,
    pub shows: Violation,
}

impl<T: PartialEq> ReplaySpec<T> {
    /// Whether `target` drives this counterexample (to reproduce it, or to refuse it).
    pub fn driven_by(&self, target: &T) -> bool {
        self.reproduced_by.contains(target) || self.refused_by.contains(target)
    }

    /// Whether `target` must reproduce the violation (it drives the broken implementation).
    pub fn reproduced_by(&self, target: &T) -> bool {
        self.reproduced_by.contains(target)
    }
}

/// Why the replays could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ReplaysError {
    /// Not TOML of this shape, or a target or violation that is none (the parser's message
    /// names it, with its line).
    #[error("replays.toml: {0}")]
    Parse(#[from] toml::de::Error),
    #[error("replays.toml: `{0}` is not a config of the suite")]
    UnknownConfig(String),
    #[error("replays.toml: `{0}` is not a must-fail config: there is no violation to reproduce")]
    NotMustFail(String),
    #[error("replays.toml: `{0}` is listed twice")]
    Twice(String),
    #[error("replays.toml: `{0}` names no target that reproduces it")]
    NoReproducer(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File<T> {
    replay: Vec<Raw<T>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw<T> {
    config: String,
    reproduced_by: Vec<T>,
    #[serde(default = "Vec::new")]
    refused_by: Vec<T>,
    shows: Violation,
}

/// Parses `text`, its targets read as `T` (a name that is no `T` fails the parse), and checks
/// it against `suite`.
pub fn load<T: DeserializeOwned>(
    text: &str,
    suite: &[Config],
) -> Result<Vec<ReplaySpec<T>>, ReplaysError> {
    let file: File<T> = toml::from_str(text)?;
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

    /// Three targets, read by name as the conformance crate reads its own.
    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    enum Target {
        Replay,
        Flow,
        FlowLww,
    }

    #[test]
    fn a_replay_of_a_config_the_suite_lacks_or_of_an_unknown_target_is_refused() {
        let load = |text: &str| load::<Target>(text, &suite());
        let unknown_config = "[[replay]]\nconfig = \"nope\"\nreproduced_by = [\"replay\"]\nshows = \"stale-overwrite\"\n";
        assert!(matches!(
            load(unknown_config),
            Err(ReplaysError::UnknownConfig(c)) if c == "nope"
        ));
        let unknown_target = "[[replay]]\nconfig = \"cassandra_unguarded\"\nreproduced_by = [\"flow-lww\"]\nrefused_by = [\"flw\"]\nshows = \"stale-overwrite\"\n";
        match load(unknown_target) {
            Err(ReplaysError::Parse(e)) => assert!(e.to_string().contains("flw"), "{e}"),
            other => panic!("an unknown target must fail the parse: {other:?}"),
        }
        let holding = "[[replay]]\nconfig = \"casfw_guarded\"\nreproduced_by = [\"replay\"]\nshows = \"stale-overwrite\"\n";
        assert!(matches!(load(holding), Err(ReplaysError::NotMustFail(_))));
        let twice = "[[replay]]\nconfig = \"casfw_unguarded\"\nreproduced_by = [\"replay\"]\nshows = \"stale-overwrite\"\n".repeat(2);
        assert!(matches!(load(&twice), Err(ReplaysError::Twice(_))));
        let bad_violation = "[[replay]]\nconfig = \"casfw_unguarded\"\nreproduced_by = [\"replay\"]\nshows = \"stale\"\n";
        assert!(matches!(load(bad_violation), Err(ReplaysError::Parse(_))));
        let fine = "[[replay]]\nconfig = \"cassandra_unguarded\"\nreproduced_by = [\"flow-lww\"]\nrefused_by = [\"flow\"]\nshows = \"stale-overwrite\"\n";
        let spec = &load(fine).unwrap()[0];
        assert!(spec.reproduced_by(&Target::FlowLww) && spec.driven_by(&Target::Flow));
        assert!(!spec.driven_by(&Target::Replay));
    }

    #[test]
    fn the_shipped_replays_name_must_fail_configs_of_the_suite() {
        // The targets are conform's (its tests read them as its ids); here any name passes.
        let replays = load::<String>(DEFAULT, &suite()).unwrap();
        assert!(replays.iter().any(|r| r.config == "casfw_unguarded"));
        assert!(replays.iter().all(|r| !r.reproduced_by.is_empty()));
    }
}
