//! The platform facts the #835 models hold as knobs, as observed on the real servers
//! (`facts.toml` beside this crate), and the check that ties the suites to them: a config whose
//! reading of an observed fact contradicts the observation must say it is counterfactual, and
//! a config that says so must contradict one.

use serde::Deserialize;
use specs::infra::knobs::Value;

use crate::suite::Config;

use loadbearing_specs as specs;

const FACTS: &str = include_str!("../facts.toml");

/// How a knob relates to the platform.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// The knob says how the platform behaves: the other reading is counterfactual.
    Is,
    /// The knob says the platform may do something: observed, `false` is counterfactual.
    May,
    /// Not observed here, with the reason.
    Explained,
}

/// One fact knob.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fact {
    pub knob: String,
    /// The models that hold the knob.
    pub models: Vec<String>,
    pub kind: Kind,
    /// What the observing test saw (kinds `is` and `may`).
    pub observed: Option<bool>,
    pub server: Option<String>,
    /// The test that observes it, and compares what it sees with this file.
    pub test: Option<String>,
    /// Why it is not observed (kind `explained`).
    pub why: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    fact: Vec<Fact>,
}

/// Something wrong between the facts and the suites.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FactProblem {
    #[error("facts.toml does not parse: {0}")]
    Unparsable(String),
    #[error("fact {knob}: {what}")]
    Malformed { knob: String, what: &'static str },
    #[error(
        "{config} sets {knob} = {reading}, against what {server} showed ({observed}); mark it \
         `counterfactual = \"why\"` or change it"
    )]
    Contradicts {
        config: String,
        knob: String,
        reading: bool,
        observed: bool,
        server: String,
    },
    #[error("{config} says it is counterfactual, but no reading of it contradicts a fact")]
    NotCounterfactual { config: String },
}

/// The facts as recorded.
pub fn facts() -> Result<Vec<Fact>, FactProblem> {
    let file: File =
        toml::from_str(FACTS).map_err(|e| FactProblem::Unparsable(e.message().to_string()))?;
    for fact in &file.fact {
        let malformed = |what| {
            Err(FactProblem::Malformed {
                knob: fact.knob.clone(),
                what,
            })
        };
        match fact.kind {
            Kind::Is | Kind::May if fact.observed.is_none() || fact.test.is_none() => {
                return malformed("an observed fact needs `observed` and the `test` that saw it")
            }
            Kind::Explained if fact.why.is_none() => {
                return malformed("an unobserved fact needs `why`")
            }
            _ => {}
        }
    }
    Ok(file.fact)
}

/// The reading of `config` that contradicts `fact`, if any.
fn contradiction(fact: &Fact, config: &Config) -> Option<bool> {
    if !fact.models.iter().any(|m| m == config.model) {
        return None;
    }
    let observed = fact.observed?;
    let Some(Value::Bool(reading)) = config.constants.values().get(&fact.knob) else {
        return None;
    };
    let contradicts = match fact.kind {
        Kind::Is => *reading != observed,
        // Seen to happen, a config where it never does leaves out what the platform does.
        Kind::May => observed && !*reading,
        Kind::Explained => false,
    };
    contradicts.then_some(*reading)
}

/// Every config against every fact.
pub fn check(configs: &[Config]) -> Vec<FactProblem> {
    let facts = match facts() {
        Ok(facts) => facts,
        Err(problem) => return vec![problem],
    };
    let mut problems = Vec::new();
    for config in configs {
        let mut contradicted = false;
        for fact in &facts {
            let Some(reading) = contradiction(fact, config) else {
                continue;
            };
            contradicted = true;
            if config.counterfactual.is_none() {
                problems.push(FactProblem::Contradicts {
                    config: config.label.clone(),
                    knob: fact.knob.clone(),
                    reading,
                    observed: !reading,
                    server: fact.server.clone().unwrap_or_default(),
                });
            }
        }
        if config.counterfactual.is_some() && !contradicted {
            problems.push(FactProblem::NotCounterfactual {
                config: config.label.clone(),
            });
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_config_agrees_with_the_observed_facts_or_says_it_is_counterfactual() {
        let configs = crate::suite::built_in().unwrap();
        let problems = check(&configs);
        assert!(
            problems.is_empty(),
            "{}",
            problems
                .iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        );
    }

    #[test]
    fn a_flipped_observation_names_the_configs_that_relied_on_it() {
        let configs = crate::suite::built_in().unwrap();
        let mut fact = facts()
            .unwrap()
            .into_iter()
            .find(|f| f.knob == "EndOffsetsIsLSO")
            .unwrap();
        fact.observed = Some(false);
        let relying: Vec<&str> = configs
            .iter()
            .filter(|c| contradiction(&fact, c).is_some())
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(relying.len(), 11, "{relying:?}");
        assert!(!relying.contains(&"recoveryread_endoffsets_hw"));
    }

    #[test]
    fn every_fact_knob_is_a_knob_of_its_models() {
        let configs = crate::suite::built_in().unwrap();
        for fact in facts().unwrap() {
            for model in &fact.models {
                let knows = configs
                    .iter()
                    .filter(|c| c.model == model.as_str())
                    .any(|c| c.constants.values().contains_key(&fact.knob));
                assert!(knows, "{model} has no knob {}", fact.knob);
            }
        }
    }
}
