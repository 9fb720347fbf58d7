//! The configs a command works on: where they come from (`--suite`), which ones its filters or
//! its config argument pick, and `--set` applied to them.

use std::path::PathBuf;

use loadbearing_expected::suite::{self, Config, SetError};
use loadbearing_specs::infra::knobs::Value;

use super::BadInput;

/// Where the configs come from: a suite file (`--suite FILE`), or the project's suites
/// (expected/suites/*.toml, compiled in).
pub struct Suite {
    pub file: Option<PathBuf>,
    /// A design's own suite, compiled into its binary: its name and text.
    pub text: Option<(&'static str, &'static str)>,
}

impl Suite {
    pub fn load(&self) -> Result<Vec<Config>, suite::SuiteError> {
        match (&self.file, self.text) {
            (Some(path), _) => suite::load(path),
            (None, Some((name, text))) => suite::parse(text, suite::Source::BuiltIn(name)),
            (None, None) => suite::built_in(),
        }
    }

    /// One config by its exact name, with `--set` overrides applied.
    pub fn one(&self, name: &str, sets: &[String]) -> Result<Config, BadInput> {
        let configs = self.load()?;
        let mut config = suite::find(&configs, name)?.clone();
        override_constants(&mut config, &parse_sets(sets)?)?;
        Ok(config)
    }
}

/// The configs `filters` pick; none is bad input, pointing at `loadbearing list`.
pub fn select(configs: Vec<Config>, filters: &[String]) -> Result<Vec<Config>, BadInput> {
    let selected = suite::select(configs, filters);
    if selected.is_empty() {
        return Err(BadInput::NoConfigMatches {
            filters: filters.to_vec(),
        });
    }
    Ok(selected)
}

/// Every `--set NAME=VALUE`, parsed.
pub fn parse_sets(sets: &[String]) -> Result<Vec<(String, Value)>, SetError> {
    sets.iter().map(|s| suite::parse_set(s)).collect()
}

/// Applies parsed `--set`s to `config`; one that does not apply is bad input naming it.
pub fn override_constants(config: &mut Config, sets: &[(String, Value)]) -> Result<(), BadInput> {
    suite::override_constants(config, sets).map_err(|source| BadInput::Override {
        config: config.name.clone(),
        source,
    })
}
