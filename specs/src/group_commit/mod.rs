//! The group-commit family: the Kafka write orchestration under one transaction lock
//! (`model`, with its `group_commit` trace vocabulary in `trace`), its two-lane sibling with
//! the abort path (`lanes`, vocabulary `lanes_trace`), and the group commit as actors
//! (`actors`).

#[cfg(feature = "actors")]
pub mod actors;
pub mod lanes;
pub mod lanes_trace;
pub mod model;
pub mod trace;
