//! The `loadbearing` CLI's library half: the suite of configs, running and judging them, and
//! rendering results for people and for machines.

pub mod bench;
pub mod conform;
pub mod docs;
pub mod explore;
pub mod isolation;
pub mod mutate;
pub mod render;
pub mod run;
pub mod suite;
pub mod trace;
