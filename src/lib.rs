//! The `loadbearing` CLI's library half: the suite of configs, running and judging them, and
//! rendering results for people and for machines.

pub mod bench;
pub mod render;
pub mod run;
pub mod suite;
