//! The table of every conformance target, in the order `conform --list` prints them. Target
//! names, backend checks and the run loop read this table; nothing else lists the targets.

use crate::error::Error;
use crate::target::Target;
use crate::target_id::TargetId;

pub use crate::cassandra_835::{
    CASSANDRA_835, CASSANDRA_835_FIX_OFF, CASSANDRA_835_HARD_DELETE, CASSANDRA_835_LWW,
    CASSANDRA_835_NO_TOMB_FLOOR, CASSANDRA_835_SKIP_TOMB,
};
pub use crate::compound::COMPOUND;
pub use crate::fence::{FENCE, FENCE_OFF};
pub use crate::flow::{FLOW, FLOW_HARD_DELETE, FLOW_LWW};
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
    let id: TargetId = name.parse()?;
    Ok(get(id))
}

/// The target of this id: the table holds every id (its test says so).
pub fn get(id: TargetId) -> &'static dyn Target {
    ALL.iter()
        .copied()
        .find(|t| t.id() == id)
        .expect("the table holds every target id")
}

pub fn names() -> Vec<&'static str> {
    crate::target_id::names()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_holds_every_id_once_in_order_and_names_are_found() {
        let ids: Vec<TargetId> = ALL.iter().map(|t| t.id()).collect();
        assert_eq!(ids, TargetId::ALL, "the table and the ids differ");
        for &t in ALL {
            assert_eq!(find(t.name()).unwrap().id(), t.id());
            assert!(!t.backends().is_empty(), "{} runs nowhere", t.name());
        }
        assert!(matches!(find("nope"), Err(Error::UnknownTarget(_))));
    }
}
