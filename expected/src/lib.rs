//! The expected-outcome suites: the configs as data (`configs.toml` beside this crate, compiled
//! into the binary), validated on load, and the judge that runs a config and compares its report
//! with what it declares.

pub mod replays;
pub mod run;
pub mod suite;
