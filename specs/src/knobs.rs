//! A model's constants (TLA+ CONSTANTS, our "knobs"): declared with their ranges, validated on
//! load, so a typo or an out-of-range value is an error rather than a silently different model.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Value {
    Bool(bool),
    Nat(u64),
    /// One of a knob's named choices (a workload, a predicate).
    Name(String),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Bool(b) => write!(f, "{b}"),
            Value::Nat(n) => write!(f, "{n}"),
            Value::Name(name) => write!(f, "{name}"),
        }
    }
}

impl Value {
    /// Reads a value as written on the command line (`--set Guarded=false`, `--set N=6`,
    /// `--set Workload=write_skew`).
    pub fn parse(text: &str) -> Option<Value> {
        match text {
            "" => None,
            "true" | "TRUE" => Some(Value::Bool(true)),
            "false" | "FALSE" => Some(Value::Bool(false)),
            _ => Some(
                text.parse()
                    .map(Value::Nat)
                    .unwrap_or_else(|_| Value::Name(text.to_string())),
            ),
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Nat {
        min: u64,
        max: u64,
        default: u64,
    },
    Bool {
        default: bool,
    },
    Choice {
        choices: &'static [&'static str],
        default: &'static str,
    },
}

/// One constant of a model: its name as the spec writes it, its range, and its default.
#[derive(Clone, Copy, Debug)]
pub struct Knob {
    pub name: &'static str,
    pub kind: Kind,
    pub meaning: &'static str,
}

impl Knob {
    pub const fn nat(
        name: &'static str,
        min: u64,
        max: u64,
        default: u64,
        meaning: &'static str,
    ) -> Knob {
        Knob {
            name,
            kind: Kind::Nat { min, max, default },
            meaning,
        }
    }

    pub const fn flag(name: &'static str, default: bool, meaning: &'static str) -> Knob {
        Knob {
            name,
            kind: Kind::Bool { default },
            meaning,
        }
    }

    pub const fn choice(
        name: &'static str,
        choices: &'static [&'static str],
        default: &'static str,
        meaning: &'static str,
    ) -> Knob {
        Knob {
            name,
            kind: Kind::Choice { choices, default },
            meaning,
        }
    }

    pub fn default_value(&self) -> Value {
        match self.kind {
            Kind::Nat { default, .. } => Value::Nat(default),
            Kind::Bool { default } => Value::Bool(default),
            Kind::Choice { default, .. } => Value::Name(default.to_string()),
        }
    }
}

pub type Constants = BTreeMap<String, Value>;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KnobError {
    Unknown {
        model: String,
        name: String,
        known: Vec<String>,
    },
    WrongType {
        name: String,
        expected: String,
        got: String,
    },
    OutOfRange {
        name: String,
        value: u64,
        min: u64,
        max: u64,
    },
}

impl fmt::Display for KnobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KnobError::Unknown { model, name, known } => write!(
                f,
                "{model} has no constant `{name}`; its constants are: {}",
                known.join(", ")
            ),
            KnobError::WrongType {
                name,
                expected,
                got,
            } => {
                write!(f, "constant `{name}` takes {expected}, not `{got}`")
            }
            KnobError::OutOfRange {
                name,
                value,
                min,
                max,
            } => {
                write!(f, "constant `{name}` = {value} is outside {min}..={max}")
            }
        }
    }
}

impl std::error::Error for KnobError {}

/// Constants checked against a model's knobs, defaults filled in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved(Constants);

impl Resolved {
    pub fn new(model: &str, knobs: &[Knob], given: &Constants) -> Result<Resolved, KnobError> {
        for name in given.keys() {
            if !knobs.iter().any(|k| k.name == name) {
                return Err(KnobError::Unknown {
                    model: model.to_string(),
                    name: name.clone(),
                    known: knobs.iter().map(|k| k.name.to_string()).collect(),
                });
            }
        }
        let mut values = Constants::new();
        for knob in knobs {
            let value = given
                .get(knob.name)
                .cloned()
                .unwrap_or_else(|| knob.default_value());
            match (knob.kind, &value) {
                (Kind::Bool { .. }, Value::Bool(_)) => {}
                (Kind::Choice { choices, .. }, Value::Name(name))
                    if choices.contains(&name.as_str()) => {}
                (Kind::Nat { min, max, .. }, &Value::Nat(n)) => {
                    if n < min || n > max {
                        return Err(KnobError::OutOfRange {
                            name: knob.name.to_string(),
                            value: n,
                            min,
                            max,
                        });
                    }
                }
                (kind, got) => {
                    return Err(KnobError::WrongType {
                        name: knob.name.to_string(),
                        expected: match kind {
                            Kind::Bool { .. } => "true or false".to_string(),
                            Kind::Nat { min, max, .. } => format!("a number in {min}..={max}"),
                            Kind::Choice { choices, .. } => {
                                format!("one of {}", choices.join(", "))
                            }
                        },
                        got: got.to_string(),
                    })
                }
            }
            values.insert(knob.name.to_string(), value);
        }
        Ok(Resolved(values))
    }

    pub fn nat(&self, name: &str) -> u64 {
        match self.0.get(name) {
            Some(Value::Nat(n)) => *n,
            other => panic!("knob `{name}` is not a declared number: {other:?}"),
        }
    }

    pub fn small(&self, name: &str) -> u8 {
        u8::try_from(self.nat(name)).expect("knob ranges keep numbers small")
    }

    pub fn flag(&self, name: &str) -> bool {
        match self.0.get(name) {
            Some(Value::Bool(b)) => *b,
            other => panic!("knob `{name}` is not a declared flag: {other:?}"),
        }
    }

    pub fn choice(&self, name: &str) -> &str {
        match self.0.get(name) {
            Some(Value::Name(choice)) => choice,
            other => panic!("knob `{name}` is not a declared choice: {other:?}"),
        }
    }

    pub fn values(&self) -> &Constants {
        &self.0
    }
}
