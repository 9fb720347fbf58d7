//! The output formats several commands share, and JSON as every command prints it.

use clap::ValueEnum;

/// For people or for machines.
#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    Table,
    Json,
}

/// The formats of the commands that judge (check, conform): JUnit XML for CI besides.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ResultFormat {
    Table,
    Json,
    Junit,
}

pub fn pretty(value: &serde_json::Value) -> String {
    serde_json::to_string_pretty(value).expect("JSON values serialize")
}
