//! The expected-outcome suite: configs as data, validated on load.

use std::fmt;
use std::path::{Path, PathBuf};

use loadbearing_registry::{self as registry, ModelEntry};
use loadbearing_specs::infra::knobs::{Constants, KnobError, Resolved, Value};
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
    /// The suite's name, the first part of each config's address (`suite/config`). A suite
    /// file given with `--suite` may leave it out: its name is then `local`.
    suite: Option<String>,
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
    /// Interchangeable sets to reduce by (TLC's `SYMMETRY Permutations(Writers)`).
    #[serde(default)]
    symmetry: Vec<String>,
    expected: String,
    states: Option<u64>,
    /// TLC's count of states generated, for a config that holds.
    generated: Option<u64>,
    /// Why the config reads a platform fact against what was observed (`facts.toml`).
    counterfactual: Option<String>,
}

fn yes() -> bool {
    true
}

/// One validated config.
#[derive(Clone, Debug)]
pub struct Config {
    /// The suite it belongs to (`kafka-flow-828`, `kafka-flow-835`, `ssi`, `actors`).
    pub suite: String,
    /// Its name, unique within its suite; two suites may share a name.
    pub name: String,
    /// How people are shown it: its name, or its address where an earlier suite has the same
    /// name (what [`find`] takes back to this config).
    pub label: String,
    /// Its model's name (`entry.name`).
    pub model: &'static str,
    /// Its model, as the registry has it: a validated config names a model that exists.
    pub entry: &'static ModelEntry,
    /// The constants as the suite file sets them, before defaults: what `--set` changes, so a
    /// knob that follows another (its default is the other's value) follows the changed value.
    pub given: Constants,
    pub constants: Resolved,
    pub properties: Vec<String>,
    pub fair: bool,
    pub end_states: bool,
    /// Symmetries the check reduces by, by name; `states` then counts orbits, as TLC does
    /// under the same `SYMMETRY`.
    pub symmetry: Vec<String>,
    pub expected: Expected,
    /// The reference distinct-state count, for a config that holds.
    pub states: Option<u64>,
    /// The reference count of states generated (TLC's: every initial state and successor
    /// computed, those already seen included), for a config that holds.
    pub generated: Option<u64>,
    /// Constants changed by `--set`: the reference count no longer applies.
    pub overridden: bool,
    /// Why it reads a platform fact against what our tests observed (see [`crate::facts`]).
    pub counterfactual: Option<String>,
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
    #[error("suite `{0}` is defined twice")]
    SuiteTwice(String),
    #[error("suite name `{0}` is not lower-case letters, digits and `-`")]
    BadSuiteName(String),
    #[error("names no suite (a top-level `suite = \"...\"`)")]
    Unnamed,
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
    #[error("gives a reference state count (`states` or `generated`), but only a config that holds explores every state")]
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
    /// One of the project's suites, compiled into the binary ([`BUILT_IN`]): its file.
    BuiltIn(&'static str),
    /// A suite file given at run time (`--suite FILE`).
    File(PathBuf),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::BuiltIn(file) => write!(f, "{file} (built in)"),
            Source::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// The suites shipped with the project, one file each, compiled in so that an installed binary
/// needs no checkout to find them. `check` runs them in this order.
pub const BUILT_IN: &[(&str, &str)] = &[
    (
        "expected/suites/kafka-flow-828.toml",
        include_str!("../suites/kafka-flow-828.toml"),
    ),
    (
        "expected/suites/kafka-flow-835.toml",
        include_str!("../suites/kafka-flow-835.toml"),
    ),
    (
        "expected/suites/ssi.toml",
        include_str!("../suites/ssi.toml"),
    ),
    // Its models are Stateright actor systems: compiled in with the `actors` feature.
    #[cfg(feature = "actors")]
    (
        "expected/suites/actors.toml",
        include_str!("../suites/actors.toml"),
    ),
];

/// The suite name of a `--suite` file that gives none.
pub const LOCAL: &str = "local";

/// One suite: its name and its configs.
#[derive(Clone, Debug)]
struct Suite {
    name: String,
    configs: Vec<Config>,
}

/// The project's suites (the ones compiled in), their configs in order.
pub fn built_in() -> Result<Vec<Config>, SuiteError> {
    let suites = BUILT_IN
        .iter()
        .map(|(file, text)| parse_suite(text, Source::BuiltIn(file)))
        .collect::<Result<Vec<_>, _>>()?;
    join(suites, Source::BuiltIn(BUILT_IN[0].0))
}

/// The built-in suites, parsed and validated once per process and shared: the text is compiled
/// in, so it cannot change while the process runs. For callers that look configs up again and
/// again (conformance reads a counterexample per replay); a failed load is not kept.
pub fn built_in_shared() -> Result<&'static [Config], SuiteError> {
    static SHARED: std::sync::OnceLock<Vec<Config>> = std::sync::OnceLock::new();
    if let Some(configs) = SHARED.get() {
        return Ok(configs);
    }
    let configs = built_in()?;
    Ok(SHARED.get_or_init(|| configs))
}

/// A suite file (`--suite FILE`): it replaces the built-in suites.
pub fn load(path: &Path) -> Result<Vec<Config>, SuiteError> {
    let source = Source::File(path.to_path_buf());
    let text = std::fs::read_to_string(path).map_err(|e| SuiteError {
        source: source.clone(),
        config: None,
        problem: Box::new(e.into()),
    })?;
    parse(&text, source)
}

/// One suite's text, validated; errors name `source`.
pub fn parse(text: &str, source: Source) -> Result<Vec<Config>, SuiteError> {
    Ok(parse_suite(text, source)?.configs)
}

fn parse_suite(text: &str, source: Source) -> Result<Suite, SuiteError> {
    let fail = |config: Option<&str>, problem: Problem| SuiteError {
        source: source.clone(),
        config: config.map(str::to_string),
        problem: Box::new(problem),
    };
    let file: File = toml::from_str(text).map_err(|e| fail(None, e.into()))?;
    let name = match (file.suite, &source) {
        (Some(name), _) => name,
        // The project's own suites must say which they are.
        (None, Source::BuiltIn(_)) => return Err(fail(None, Problem::Unnamed)),
        (None, Source::File(_)) => LOCAL.to_string(),
    };
    let well_named = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !well_named {
        return Err(fail(None, Problem::BadSuiteName(name)));
    }
    let suite = name;
    let mut configs: Vec<Config> = Vec::new();
    for raw in file.config {
        let config_name = raw.name.clone();
        let config = validate(&suite, raw).map_err(|p| fail(Some(&config_name), p))?;
        if configs.iter().any(|c| c.name == config.name) {
            return Err(fail(Some(&config_name), Problem::DefinedTwice));
        }
        configs.push(config);
    }
    Ok(Suite {
        name: suite,
        configs,
    })
}

/// The suites' configs in one list; a suite name may appear once.
fn join(suites: Vec<Suite>, source: Source) -> Result<Vec<Config>, SuiteError> {
    let mut seen: Vec<String> = Vec::new();
    let mut configs = Vec::new();
    for suite in suites {
        if seen.contains(&suite.name) {
            return Err(SuiteError {
                source,
                config: None,
                problem: Box::new(Problem::SuiteTwice(suite.name)),
            });
        }
        seen.push(suite.name);
        for mut config in suite.configs {
            if configs.iter().any(|c: &Config| c.name == config.name) {
                config.label = config.address();
            }
            configs.push(config);
        }
    }
    Ok(configs)
}

fn model_entry(name: &str) -> Result<&'static ModelEntry, UnknownModel> {
    registry::find(name).ok_or_else(|| UnknownModel {
        name: name.to_string(),
        known: registry::models().iter().map(|m| m.name).collect(),
    })
}

fn validate(suite: &str, raw: RawConfig) -> Result<Config, Problem> {
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
    if (raw.states.is_some() || raw.generated.is_some()) && expected != Expected::Holds {
        return Err(Problem::StatesOfAFailure);
    }
    Ok(Config {
        suite: suite.to_string(),
        label: raw.name.clone(),
        name: raw.name,
        model: entry.name,
        entry,
        given,
        constants,
        properties: raw.properties,
        fair: raw.fair,
        end_states: raw.end_states,
        symmetry: raw.symmetry,
        expected,
        states: raw.states,
        generated: raw.generated,
        overridden: false,
        counterfactual: raw.counterfactual,
    })
}

impl Config {
    /// The config's address, unique over every suite: `suite/name`.
    pub fn address(&self) -> String {
        format!("{}/{}", self.suite, self.name)
    }

    /// Whether a filter selects this config (see [`select`]).
    fn matches(&self, filter: &str) -> bool {
        if filter.contains('/') {
            self.address().contains(filter)
        } else {
            self.name.contains(filter)
        }
    }
}

/// Configs any filter matches (all of them for no filter). A filter with a `/` is matched
/// against the address (`kafka-flow-835/` selects one suite, `835/gc` its group-commit
/// configs); one without, against the bare name (`gc_` selects the group-commit configs of
/// every suite), so that a suite's name does not match all its configs.
pub fn select(configs: Vec<Config>, filters: &[String]) -> Vec<Config> {
    configs
        .into_iter()
        .filter(|c| filters.is_empty() || filters.iter().any(|f| c.matches(f)))
        .collect()
}

/// Why a name finds no config.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LookupError {
    #[error("no config named `{query}`; {}", near_text(.near))]
    NotFound { query: String, near: Vec<String> },
}

fn near_text(near: &[String]) -> String {
    if near.is_empty() {
        "`loadbearing list` shows them".to_string()
    } else {
        format!("did you mean {}?", near.join(", "))
    }
}

/// The config `query` names: its address (`suite/name`), or its label, which is its bare name
/// for the first suite that has that name in the order `list` shows (the 828 suite before the
/// 835 suite, as a command's search path does); a later suite's config with the same name is
/// labelled, and found, by its address.
pub fn find<'a>(configs: &'a [Config], query: &str) -> Result<&'a Config, LookupError> {
    configs
        .iter()
        .find(|c| c.label == query || c.address() == query)
        .ok_or_else(|| LookupError::NotFound {
            query: query.to_string(),
            near: configs
                .iter()
                .filter(|c| c.address().contains(query))
                .map(|c| c.label.clone())
                .collect(),
        })
}

/// Applies `--set NAME=VALUE` to one config, revalidating its constants.
pub fn override_constants(config: &mut Config, sets: &[(String, Value)]) -> Result<(), SetError> {
    if sets.is_empty() {
        return Ok(());
    }
    let entry = model_entry(config.model)?;
    let mut given = config.given.clone();
    for (name, value) in sets {
        given.insert(name.clone(), value.clone());
    }
    let constants = (entry.resolve)(&given)?;
    config.overridden = constants != config.constants;
    config.given = given;
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
        assert_eq!(
            err.to_string(),
            "--set: constant `N` = 99 is outside 1..=8: \
             the state keeps 8 writers' program counters in an array"
        );
    }

    #[test]
    fn a_config_is_found_by_its_address_or_an_unshared_name() {
        let suite = |name: &str, config: &str| {
            format!(
                "suite = \"{name}\"\n[[config]]\nname = \"{config}\"\nmodel = \"GroupCommit\"\nproperties = [\"TypeOK\"]\nexpected = \"holds\"\n"
            )
        };
        let parse_one = |text: String| parse_suite(&text, Source::BuiltIn("test")).unwrap();
        let configs = join(
            vec![
                parse_one(suite("old", "shared")),
                parse_one(suite("new", "shared")),
                parse_one(suite("new-only", "alone")),
            ],
            Source::BuiltIn("test"),
        )
        .unwrap();
        assert_eq!(find(&configs, "new/shared").unwrap().suite, "new");
        assert_eq!(find(&configs, "alone").unwrap().address(), "new-only/alone");
        // A bare name both suites use is the first suite's.
        assert_eq!(find(&configs, "shared").unwrap().address(), "old/shared");
        assert_eq!(configs[0].label, "shared");
        assert_eq!(configs[1].label, "new/shared");
        assert!(matches!(
            find(&configs, "nothing"),
            Err(LookupError::NotFound { .. })
        ));
        assert_eq!(select(configs.clone(), &["new/".into()]).len(), 1);
        assert_eq!(select(configs.clone(), &["new".into()]).len(), 0);
        assert_eq!(select(configs.clone(), &["shared".into()]).len(), 2);
        let twice = join(
            vec![parse_one(suite("old", "a")), parse_one(suite("old", "b"))],
            Source::BuiltIn("test"),
        );
        assert!(matches!(
            *twice.unwrap_err().problem,
            Problem::SuiteTwice(ref name) if name == "old"
        ));
        let nameless = "[[config]]\nname = \"a\"\nmodel = \"GroupCommit\"\nproperties = [\"TypeOK\"]\nexpected = \"holds\"\n";
        let file = parse_suite(nameless, Source::File("mine.toml".into())).unwrap();
        assert_eq!(file.configs[0].address(), "local/a");
        let built_in = parse_suite(nameless, Source::BuiltIn("test"));
        assert!(matches!(*built_in.unwrap_err().problem, Problem::Unnamed));
        let bad = parse_suite(&suite("Old Suite", "a"), Source::BuiltIn("test"));
        assert!(matches!(
            *bad.unwrap_err().problem,
            Problem::BadSuiteName(_)
        ));
    }

    #[test]
    fn a_set_moves_a_following_knob_unless_the_suite_set_it() {
        let all = built_in().unwrap();
        let spec_guarded = |address: &str| {
            let mut config = find(&all, address).unwrap().clone();
            override_constants(&mut config, &[parse_set("Guarded=false").unwrap()]).unwrap();
            config.constants.values()["SpecGuarded"].clone()
        };
        // The 828 suite's compound refines an atomic spec with its own guard...
        assert_eq!(
            spec_guarded("kafka-flow-828/casfw_refines"),
            Value::Bool(false)
        );
        // ...the 835 suite's config pins the spec's guard on, as its TLA+ config does.
        assert_eq!(
            spec_guarded("kafka-flow-835/casfw_refines"),
            Value::Bool(true)
        );
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
