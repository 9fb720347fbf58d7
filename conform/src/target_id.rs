//! Every conformance target's id: what `conform` takes on its command line, what
//! `expected/replays.toml` names, and what a result reports. An enum, so that a target named in
//! the replay data is checked when the data is parsed, and a table entry cannot name a target
//! twice or leave one out (`targets::ALL` holds exactly these, in this order: its test says so).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Declares the ids and their names together (one line a target, in `conform --list` order).
macro_rules! target_ids {
    ($($variant:ident => $name:literal,)*) => {
        /// A conformance target.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum TargetId {
            $($variant,)*
        }

        impl TargetId {
            /// Every target, in the order `conform --list` prints them.
            pub const ALL: &'static [TargetId] = &[$(TargetId::$variant,)*];

            /// The name `conform` takes and reports.
            pub fn name(self) -> &'static str {
                match self {
                    $(TargetId::$variant => $name,)*
                }
            }
        }
    };
}

target_ids! {
    Store => "store",
    StoreLww => "store-lww",
    Replay => "replay",
    Compound => "compound",
    StoreFaults => "store-faults",
    StoreFaultsLww => "store-faults-lww",
    Flow => "flow",
    FlowLww => "flow-lww",
    FlowHardDelete => "flow-hard-delete",
    Fence => "fence",
    FenceOff => "fence-off",
    Cassandra835 => "cassandra-835",
    Cassandra835Lww => "cassandra-835-lww",
    Cassandra835HardDelete => "cassandra-835-hard-delete",
    Cassandra835FixOff => "cassandra-835-fix-off",
    Cassandra835NoTombFloor => "cassandra-835-no-tomb-floor",
    Cassandra835SkipTomb => "cassandra-835-skip-tomb",
    FlushCell => "flush-cell",
    FlushCellUnserialized => "flush-cell-unserialized",
    GroupCommit => "group-commit",
    GroupCommitUngated => "group-commit-ungated",
    GroupCommitLanes => "group-commit-lanes",
    GroupCommitLanesShared => "group-commit-lanes-shared",
    GroupCommitLanesStarve => "group-commit-lanes-starve",
    GroupCommitLanesEager => "group-commit-lanes-eager",
    Kafka => "kafka",
    KafkaDecoupled => "kafka-decoupled",
    KafkaUnseeded => "kafka-unseeded",
    KafkaUnfenced => "kafka-unfenced",
    Epoch => "epoch",
    FlowsAlive => "flows-alive",
    FlowsAliveDeferred => "flows-alive-deferred",
    TokenSync => "token-sync",
    TokenSyncCaptured => "token-sync-captured",
    TokenSyncFrozen => "token-sync-frozen",
    RecoveryDeadline => "recovery-deadline",
    RecoveryDeadlineTotal => "recovery-deadline-total",
    RecoveryDeadlineNotrip => "recovery-deadline-notrip",
    RecoveryDeadlineUnchecked => "recovery-deadline-unchecked",
    RecoveryRead => "recovery-read",
    RecoveryReadOwnEnd => "recovery-read-own-end",
    Ssi => "ssi",
    SsiPrefix => "ssi-prefix",
}

/// A name that is no target's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown target `{0}`; targets are: {known}", known = names().join(", "))]
pub struct UnknownTarget(pub String);

/// Every target's name, in table order.
pub fn names() -> Vec<&'static str> {
    TargetId::ALL.iter().map(|t| t.name()).collect()
}

impl FromStr for TargetId {
    type Err = UnknownTarget;

    fn from_str(name: &str) -> Result<TargetId, UnknownTarget> {
        TargetId::ALL
            .iter()
            .copied()
            .find(|t| t.name() == name)
            .ok_or_else(|| UnknownTarget(name.to_string()))
    }
}

impl fmt::Display for TargetId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for TargetId {
    fn serialize<S: Serializer>(&self, out: S) -> Result<S::Ok, S::Error> {
        out.serialize_str(self.name())
    }
}

/// By name: a name that is no target's fails the parse (with the known names).
impl<'de> Deserialize<'de> for TargetId {
    fn deserialize<D: Deserializer<'de>>(input: D) -> Result<TargetId, D::Error> {
        let name = String::deserialize(input)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_parses_back_from_its_name_and_names_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for &id in TargetId::ALL {
            assert!(seen.insert(id.name()), "{id} twice");
            assert_eq!(id.name().parse::<TargetId>(), Ok(id));
        }
        let unknown = "nope".parse::<TargetId>().unwrap_err();
        assert!(unknown
            .to_string()
            .contains("targets are: store, store-lww"));
    }
}
