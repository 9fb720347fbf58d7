//! The CLI crate's integration tests, as one test binary (one link of the whole stack instead
//! of one per file): one module per area. Run one area with a filter, e.g.
//! `cargo test --test it conform::`; the server-backed tests are compiled only with their
//! feature (`--features full` or `--all-features`, as CI runs them, where nothing may skip).

mod common;

mod actors;
mod architecture;
mod browser;
mod cli;
mod conform;
mod conform_flow;
mod conform_gc;
mod conform_history;
mod conform_kafka;
mod conform_payloads;
mod conform_servers;
mod distributed;
mod docs;
mod explorer;
mod fuzz;
mod hermitage;
mod history_bench;
mod history_cases;
mod isolation;
mod junit;
mod lists;
mod mutate;
mod oracle;
mod own_store;
mod registry;
mod report;
mod scale;
mod shown_values;
mod snapshots;
mod ssi;
mod suite;
mod suite_835;
mod trace;
mod typed_oracle;
mod workload;
