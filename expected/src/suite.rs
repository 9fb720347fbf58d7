//! The expected-outcome suite: configs as data, validated on load.

use std::fmt;
use std::path::{Path, PathBuf};

use loadbearing_specs::knobs::{Constants, KnobError, Resolved, Value};
use loadbearing_specs::registry::{self, ModelEntry};
use serde::{Deserialize, Serialize};

/// What a config must do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(into = "String")]
pub enum Expected {
    Holds,
    Violates(String),
    Deadlock,
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expected::Holds => write!(f, "holds"),
            Expected::Violates(p) => write!(f, "violates {p}"),
            Expected::Deadlock => write!(f, "deadlock"),
        }
    }
}

impl From<Expected> for String {
    fn from(e: Expected) -> String {
        e.to_string()
    }
}

impl Expected {
    fn parse(text: &str) -> Option<Expected> {
        match text.split_whitespace().collect::<Vec<_>>().as_slice() {
            ["holds"] => Some(Expected::Holds),
            ["deadlock"] => Some(Expected::Deadlock),
            ["violates", property] => Some(Expected::Violates(property.to_string())),
            _ => None,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    config: Vec<RawConfig>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    name: String,
    model: String,
    #[serde(default)]
    constants: toml::Table,
    properties: Vec<String>,
    #[serde(default = "yes")]
    fair: bool,
    #[serde(default)]
    end_states: bool,
    expected: String,
    states: Option<u64>,
}

fn yes() -> bool {
    true
}

/// One validated config.
#[derive(Clone, Debug)]
pub struct Config {
    pub name: String,
    pub model: &'static str,
    pub constants: Resolved,
    pub properties: Vec<String>,
    pub fair: bool,
    pub end_states: bool,
    pub expected: Expected,
    /// The reference distinct-state count, for a config that holds.
    pub states: Option<u64>,
    /// Constants changed by `--set`: the reference count no longer applies.
    pub overridden: bool,
}

#[derive(Debug)]
pub struct SuiteError {
    pub source: Source,
    pub config: Option<String>,
    /// Boxed: what can be wrong is large, and every `load` result would carry its size.
    pub problem: Box<Problem>,
}

impl fmt::Display for SuiteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.config {
            Some(name) => write!(f, "{}: config `{name}`: {}", self.source, self.problem),
            None => write!(f, "{}: {}", self.source, self.problem),
        }
    }
}

impl std::error::Error for SuiteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.problem.as_ref())
    }
}

/// What is wrong with a suite file, or with one config in it.
#[derive(Debug, thiserror::Error)]
pub enum Problem {
    #[error("cannot read: {0}")]
    Unreadable(#[from] std::io::Error),
    #[error("{0}")]
    Syntax(#[from] toml::de::Error),
    #[error("is defined twice")]
    DefinedTwice,
    #[error(transparent)]
    UnknownModel(#[from] UnknownModel),
    #[error("constant `{name}` = {value} is not a natural number, a boolean or a name")]
    NotAValue { name: String, value: toml::Value },
    #[error(transparent)]
    Constant(#[from] KnobError),
    #[error("checks no property")]
    NoProperty,
    #[error("unknown property `{property}` for {model}; it has: {}", available.join(", "))]
    UnknownProperty {
        property: String,
        model: &'static str,
        available: Vec<String>,
    },
    #[error("expected `{0}` is not `holds`, `deadlock` or `violates <Property>`")]
    NotAnExpectation(String),
    #[error("expects a violation of `{0}`, which it does not check")]
    ViolationUnchecked(String),
    #[error("gives a reference state count, but only a config that holds explores every state")]
    StatesOfAFailure,
}

/// A model name the registry does not know.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown model `{name}`; models are: {}", known.join(", "))]
pub struct UnknownModel {
    pub name: String,
    pub known: Vec<&'static str>,
}

/// What is wrong with a `--set NAME=VALUE`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SetError {
    #[error("--set `{0}` is not NAME=VALUE")]
    NotAnAssignment(String),
    #[error("--set {name}: `{value}` is empty")]
    EmptyValue { name: String, value: String },
    #[error("--set: {0}")]
    Constant(#[from] KnobError),
    #[error(transparent)]
    UnknownModel(#[from] UnknownModel),
}

/// Where a suite's text came from, as its errors name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// The project's suite, compiled into the binary ([`BUILT_IN`]).
    BuiltIn,
    /// A suite file given at run time (`--suite FILE`).
    File(PathBuf),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::BuiltIn => write!(f, "expected/configs.toml (built in)"),
            Source::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// The suite shipped with the project, compiled in so that an installed binary needs no
/// checkout to find it.
pub const BUILT_IN: &str = include_str!("../configs.toml");

/// The project's suite (the one compiled in).
pub fn built_in() -> Result<Vec<Config>, SuiteError> {
    parse(BUILT_IN, Source::BuiltIn)
}

/// A suite file.
pub fn load(path: &Path) -> Result<Vec<Config>, SuiteError> {
    let source = Source::File(path.to_path_buf());
    let text = std::fs::read_to_string(path).map_err(|e| SuiteError {
        source: source.clone(),
        config: None,
        problem: Box::new(e.into()),
    })?;
    parse(&text, source)
}

/// A suite's text, validated; errors name `source`.
pub fn parse(text: &str, source: Source) -> Result<Vec<Config>, SuiteError> {
    let fail = |config: Option<&str>, problem: Problem| SuiteError {
        source: source.clone(),
        config: config.map(str::to_string),
        problem: Box::new(problem),
    };
    let file: File = toml::from_str(text).map_err(|e| fail(None, e.into()))?;
    let mut configs: Vec<Config> = Vec::new();
    for raw in file.config {
        let name = raw.name.clone();
        let config = validate(raw).map_err(|p| fail(Some(&name), p))?;
        if configs.iter().any(|c| c.name == config.name) {
            return Err(fail(Some(&name), Problem::DefinedTwice));
        }
        configs.push(config);
    }
    Ok(configs)
}

fn model_entry(name: &str) -> Result<ModelEntry, UnknownModel> {
    registry::find(name).ok_or_else(|| UnknownModel {
        name: name.to_string(),
        known: registry::models().iter().map(|m| m.name).collect(),
    })
}

fn validate(raw: RawConfig) -> Result<Config, Problem> {
    let entry = model_entry(&raw.model)?;
    let mut given = Constants::new();
    for (key, value) in raw.constants {
        let value = match value {
            toml::Value::Boolean(b) => Value::Bool(b),
            toml::Value::Integer(n) if n >= 0 => Value::Nat(n as u64),
            toml::Value::String(name) => Value::Name(name),
            other => {
                return Err(Problem::NotAValue {
                    name: key,
                    value: other,
                })
            }
        };
        given.insert(key, value);
    }
    let constants = (entry.resolve)(&given)?;
    let available = (entry.properties)(&constants);
    if raw.properties.is_empty() {
        return Err(Problem::NoProperty);
    }
    for property in &raw.properties {
        if !available.contains(property) {
            return Err(Problem::UnknownProperty {
                property: property.clone(),
                model: entry.name,
                available,
            });
        }
    }
    let expected = Expected::parse(&raw.expected).ok_or(Problem::NotAnExpectation(raw.expected))?;
    if let Expected::Violates(property) = &expected {
        if !raw.properties.contains(property) {
            return Err(Problem::ViolationUnchecked(property.clone()));
        }
    }
    if raw.states.is_some() && expected != Expected::Holds {
        return Err(Problem::StatesOfAFailure);
    }
    Ok(Config {
        name: raw.name,
        model: entry.name,
        constants,
        properties: raw.properties,
        fair: raw.fair,
        end_states: raw.end_states,
        expected,
        states: raw.states,
        overridden: false,
    })
}

/// Configs whose name contains any of the filters (all of them for no filter).
pub fn select(configs: Vec<Config>, filters: &[String]) -> Vec<Config> {
    configs
        .into_iter()
        .filter(|c| filters.is_empty() || filters.iter().any(|f| c.name.contains(f.as_str())))
        .collect()
}

/// Applies `--set NAME=VALUE` to one config, revalidating its constants.
pub fn override_constants(config: &mut Config, sets: &[(String, Value)]) -> Result<(), SetError> {
    if sets.is_empty() {
        return Ok(());
    }
    let entry = model_entry(config.model)?;
    let mut given = config.constants.values().clone();
    for (name, value) in sets {
        given.insert(name.clone(), value.clone());
    }
    let constants = (entry.resolve)(&given)?;
    config.overridden = constants != config.constants;
    config.constants = constants;
    Ok(())
}

/// Parses one `--set NAME=VALUE`.
pub fn parse_set(text: &str) -> Result<(String, Value), SetError> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| SetError::NotAnAssignment(text.to_string()))?;
    let value = Value::parse(value.trim()).ok_or_else(|| SetError::EmptyValue {
        name: name.to_string(),
        value: value.to_string(),
    })?;
    Ok((name.trim().to_string(), value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped(name: &str) -> Config {
        built_in()
            .expect("the shipped suite loads")
            .into_iter()
            .find(|c| c.name == name)
            .expect("the config is shipped")
    }

    #[test]
    fn a_bad_set_says_what_is_wrong() {
        assert_eq!(
            parse_set("Cap"),
            Err(SetError::NotAnAssignment("Cap".into()))
        );
        assert_eq!(
            parse_set("Cap=").unwrap_err().to_string(),
            "--set Cap: `` is empty"
        );
        let mut config = shipped("gc_cap1");
        let err = override_constants(&mut config, &[parse_set("Bogus=1").unwrap()]).unwrap_err();
        assert!(
            matches!(err, SetError::Constant(KnobError::Unknown { ref name, .. }) if name == "Bogus"),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "--set: GroupCommit has no constant `Bogus`; its constants are: N, Cap, Gated"
        );
        let err = override_constants(&mut config, &[parse_set("N=99").unwrap()]).unwrap_err();
        assert_eq!(err.to_string(), "--set: constant `N` = 99 is outside 1..=8");
    }

    #[test]
    fn a_set_that_changes_nothing_keeps_the_reference_count() {
        let mut config = shipped("gc_cap1");
        let before = config.constants.clone();
        override_constants(&mut config, &[parse_set("Gated=true").unwrap()]).unwrap();
        assert!(!config.overridden);
        override_constants(&mut config, &[parse_set("Gated=false").unwrap()]).unwrap();
        assert!(config.overridden);
        assert_ne!(config.constants, before);
    }
}
