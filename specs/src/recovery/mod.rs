//! The recovery family (#835): the snapshot-topic recovery read as the tower assumes it
//! (`read_atomic`) and as implemented (`read`, vocabulary `read_trace`), both over the same log
//! and environment (`log`), and the recovery read's deadline (`deadline`, vocabulary
//! `deadline_trace`).

pub mod deadline;
pub mod deadline_trace;
pub mod log;
pub mod read;
pub mod read_atomic;
pub mod read_trace;
