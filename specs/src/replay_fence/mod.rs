//! The replay-fence family: the replay-window self-fence, a liveness lemma under Cassandra
//! (`model`), and the `replay_fence` trace vocabulary of the owner's flow after a restart
//! (`trace`).

pub mod model;
pub mod trace;
