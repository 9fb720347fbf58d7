//! The expected-outcome suites: the configs as data (`suites/*.toml` beside this crate, one
//! file per suite, compiled into the binary), validated on load, and the judge that runs a config and compares its report
//! with what it declares.

pub mod facts;
pub mod progress;
pub mod replays;
pub mod run;
pub mod suite;
