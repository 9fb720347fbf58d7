//! The table of every conformance target, in the order `conform --list` prints them. Target
//! names, backend checks and the run loop read this table; nothing else lists the targets.

use crate::error::Error;
use crate::target::Target;

pub use crate::cassandra_835::{
    CASSANDRA_835, CASSANDRA_835_FIX_OFF, CASSANDRA_835_HARD_DELETE, CASSANDRA_835_LWW,
    CASSANDRA_835_NO_TOMB_FLOOR, CASSANDRA_835_SKIP_TOMB,
};
pub use crate::compound::COMPOUND;
pub use crate::flow::{FENCE, FENCE_OFF, FLOW, FLOW_HARD_DELETE, FLOW_LWW};
pub use crate::flows_alive::{FLOWS_ALIVE, FLOWS_ALIVE_DEFERRED};
pub use crate::flush_cell::{FLUSH_CELL, FLUSH_CELL_UNSERIALIZED};
pub use crate::group_commit::{GROUP_COMMIT, GROUP_COMMIT_UNGATED};
pub use crate::group_commit_lanes::{
    GROUP_COMMIT_LANES, GROUP_COMMIT_LANES_EAGER, GROUP_COMMIT_LANES_SHARED,
    GROUP_COMMIT_LANES_STARVE,
};
pub use crate::kafka::{EPOCH, KAFKA, KAFKA_DECOUPLED, KAFKA_UNFENCED, KAFKA_UNSEEDED};
pub use crate::recovery_deadline::{
    RECOVERY_DEADLINE, RECOVERY_DEADLINE_NOTRIP, RECOVERY_DEADLINE_TOTAL,
    RECOVERY_DEADLINE_UNCHECKED,
};
pub use crate::recovery_read::{RECOVERY_READ, RECOVERY_READ_OWN_END};
pub use crate::ssi::{SSI, SSI_PREFIX};
pub use crate::store::{REPLAY, STORE, STORE_LWW};
pub use crate::store_faults::{STORE_FAULTS, STORE_FAULTS_LWW};
pub use crate::token_sync::{TOKEN_SYNC, TOKEN_SYNC_CAPTURED, TOKEN_SYNC_FROZEN};

/// Every target.
pub static ALL: &[&dyn Target] = &[
    &STORE,
    &STORE_LWW,
    &REPLAY,
    &COMPOUND,
    &STORE_FAULTS,
    &STORE_FAULTS_LWW,
    &FLOW,
    &FLOW_LWW,
    &FLOW_HARD_DELETE,
    &FENCE,
    &FENCE_OFF,
    &CASSANDRA_835,
    &CASSANDRA_835_LWW,
    &CASSANDRA_835_HARD_DELETE,
    &CASSANDRA_835_FIX_OFF,
    &CASSANDRA_835_NO_TOMB_FLOOR,
    &CASSANDRA_835_SKIP_TOMB,
    &FLUSH_CELL,
    &FLUSH_CELL_UNSERIALIZED,
    &GROUP_COMMIT,
    &GROUP_COMMIT_UNGATED,
    &GROUP_COMMIT_LANES,
    &GROUP_COMMIT_LANES_SHARED,
    &GROUP_COMMIT_LANES_STARVE,
    &GROUP_COMMIT_LANES_EAGER,
    &KAFKA,
    &KAFKA_DECOUPLED,
    &KAFKA_UNSEEDED,
    &KAFKA_UNFENCED,
    &EPOCH,
    &FLOWS_ALIVE,
    &FLOWS_ALIVE_DEFERRED,
    &TOKEN_SYNC,
    &TOKEN_SYNC_CAPTURED,
    &TOKEN_SYNC_FROZEN,
    &RECOVERY_DEADLINE,
    &RECOVERY_DEADLINE_TOTAL,
    &RECOVERY_DEADLINE_NOTRIP,
    &RECOVERY_DEADLINE_UNCHECKED,
    &RECOVERY_READ,
    &RECOVERY_READ_OWN_END,
    &SSI,
    &SSI_PREFIX,
];

/// The target of this name.
pub fn find(name: &str) -> Result<&'static dyn Target, Error> {
    ALL.iter()
        .copied()
        .find(|t| t.name() == name)
        .ok_or_else(|| Error::UnknownTarget {
            name: name.to_string(),
            known: names(),
        })
}

pub fn names() -> Vec<&'static str> {
    ALL.iter().map(|t| t.name()).collect()
}

/// The shipped replays, every target they name checked against this table.
pub fn replays() -> Result<&'static [loadbearing_expected::replays::ReplaySpec], Error> {
    let specs = crate::replays::all()?;
    loadbearing_expected::replays::check_targets(specs, &names())?;
    Ok(specs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found() {
        let mut seen = std::collections::HashSet::new();
        for &t in ALL {
            assert!(seen.insert(t.name()), "{} twice", t.name());
            assert_eq!(find(t.name()).unwrap().name(), t.name());
            assert!(!t.backends().is_empty(), "{} runs nowhere", t.name());
        }
        assert!(matches!(find("nope"), Err(Error::UnknownTarget { .. })));
    }

    #[test]
    fn every_replay_names_targets_of_this_table() {
        let specs = replays().expect("the shipped replays name known targets");
        assert!(!specs.is_empty());
    }
}
