//! The expected-outcome suite: configs as data, validated on load.

use std::fmt;
use std::path::{Path, PathBuf};

use loadbearing_specs::knobs::{Constants, Resolved, Value};
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
    pub source: PathBuf,
    pub config: Option<String>,
    pub message: String,
}

impl fmt::Display for SuiteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.config {
            Some(name) => write!(
                f,
                "{}: config `{name}`: {}",
                self.source.display(),
                self.message
            ),
            None => write!(f, "{}: {}", self.source.display(), self.message),
        }
    }
}

impl std::error::Error for SuiteError {}

/// The suite shipped with the project.
pub fn default_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("configs.toml")
}

pub fn load(path: &Path) -> Result<Vec<Config>, SuiteError> {
    let fail = |config: Option<&str>, message: String| SuiteError {
        source: path.to_path_buf(),
        config: config.map(str::to_string),
        message,
    };
    let text =
        std::fs::read_to_string(path).map_err(|e| fail(None, format!("cannot read: {e}")))?;
    let file: File = toml::from_str(&text).map_err(|e| fail(None, e.to_string()))?;
    let mut configs: Vec<Config> = Vec::new();
    for raw in file.config {
        let name = raw.name.clone();
        let config = validate(raw).map_err(|m| fail(Some(&name), m))?;
        if configs.iter().any(|c| c.name == config.name) {
            return Err(fail(Some(&name), "is defined twice".into()));
        }
        configs.push(config);
    }
    Ok(configs)
}

fn model_entry(name: &str) -> Result<ModelEntry, String> {
    registry::find(name).ok_or_else(|| {
        let known: Vec<&str> = registry::models().iter().map(|m| m.name).collect();
        format!("unknown model `{name}`; models are: {}", known.join(", "))
    })
}

fn validate(raw: RawConfig) -> Result<Config, String> {
    let entry = model_entry(&raw.model)?;
    let mut given = Constants::new();
    for (key, value) in raw.constants {
        let value = match value {
            toml::Value::Boolean(b) => Value::Bool(b),
            toml::Value::Integer(n) if n >= 0 => Value::Nat(n as u64),
            toml::Value::String(name) => Value::Name(name),
            other => {
                return Err(format!(
                    "constant `{key}` = {other} is not a natural number, a boolean or a name"
                ))
            }
        };
        given.insert(key, value);
    }
    let constants = (entry.resolve)(&given).map_err(|e| e.to_string())?;
    let available = (entry.properties)(&constants);
    if raw.properties.is_empty() {
        return Err("checks no property".into());
    }
    for property in &raw.properties {
        if !available.contains(property) {
            return Err(format!(
                "unknown property `{property}` for {}; it has: {}",
                entry.name,
                available.join(", ")
            ));
        }
    }
    let expected = Expected::parse(&raw.expected).ok_or_else(|| {
        format!(
            "expected `{}` is not `holds`, `deadlock` or `violates <Property>`",
            raw.expected
        )
    })?;
    if let Expected::Violates(property) = &expected {
        if !raw.properties.contains(property) {
            return Err(format!(
                "expects a violation of `{property}`, which it does not check"
            ));
        }
    }
    if raw.states.is_some() && expected != Expected::Holds {
        return Err(
            "gives a reference state count, but only a config that holds explores every state"
                .into(),
        );
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
pub fn override_constants(config: &mut Config, sets: &[(String, Value)]) -> Result<(), String> {
    if sets.is_empty() {
        return Ok(());
    }
    let entry = model_entry(config.model)?;
    let mut given = config.constants.values().clone();
    for (name, value) in sets {
        given.insert(name.clone(), value.clone());
    }
    let constants = (entry.resolve)(&given).map_err(|e| format!("--set: {e}"))?;
    config.overridden = constants != config.constants;
    config.constants = constants;
    Ok(())
}

/// Parses one `--set NAME=VALUE`.
pub fn parse_set(text: &str) -> Result<(String, Value), String> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| format!("--set `{text}` is not NAME=VALUE"))?;
    let value =
        Value::parse(value.trim()).ok_or_else(|| format!("--set {name}: `{value}` is empty"))?;
    Ok((name.trim().to_string(), value))
}
