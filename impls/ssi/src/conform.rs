//! Engine → model: an engine trace replayed in the SSI model, event by event.
//!
//! The checking is the project's generic conformance checker with the SSI model's reading of
//! engine events; this module only gives the tier its verdict in the engine's terms (the model
//! path and final state of a trace that fits; the prefix, the event, and what the model allowed
//! for one that does not).

use std::fmt;

use loadbearing_refinement::conform;
use loadbearing_specs::ssi::{Ssi, SsiState};
use stateright::Model;

use crate::trace::SsiEvent;

/// Why a trace is not a behaviour of the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// Events matched before this one.
    pub matched: usize,
    pub event: String,
    pub why: String,
    /// The model actions enabled where the event could not be matched.
    pub allowed: Vec<String>,
    /// The model path of the matched prefix.
    pub prefix: Vec<String>,
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "event {} `{}` does not fit the model: {}",
            self.matched + 1,
            self.event,
            self.why
        )?;
        writeln!(f, "  the model allowed: {}", self.allowed.join(", "))?;
        write!(f, "  matched prefix: {}", self.prefix.join(", "))
    }
}

/// A trace that fits: the model path and the model state it ends in.
#[derive(Clone, Debug)]
pub struct Conforms {
    pub path: Vec<String>,
    pub state: SsiState,
}

/// Checks `events` against `model` with the project's generic trace checker
/// (`loadbearing_refinement::conform`, reading events through the SSI model's adapter in
/// `loadbearing_specs::ssi::conform`); the final model state is the end of the typed witness.
pub fn validate(model: &Ssi, events: &[SsiEvent]) -> Result<Conforms, Divergence> {
    let conform::Validated { verdict, path } =
        conform::validate_path(model, events, conform::Limits::default());
    if let Some(d) = verdict.divergence {
        let tried = d.tried.first();
        let why: Vec<String> = tried
            .map(|t| {
                t.allowed
                    .iter()
                    .filter(|a| a.why_not != "the event reports another action")
                    .map(|a| format!("{}: {}", a.action, a.why_not))
                    .collect()
            })
            .unwrap_or_default();
        return Err(Divergence {
            matched: d.matched,
            event: d.as_written,
            why: if why.is_empty() {
                format!("no action the model enables reports `{}`", d.action)
            } else {
                why.join("; ")
            },
            allowed: tried
                .map(|t| t.allowed.iter().map(|a| a.action.clone()).collect())
                .unwrap_or_default(),
            prefix: d.prefix,
        });
    }
    // A trace that fits has a witness: the typed path ends in the model state it leaves.
    let state = match &path {
        Some(path) => path.last_state().clone(),
        None => model
            .init_states()
            .into_iter()
            .next()
            .expect("the SSI model has one initial state"),
    };
    let path = verdict.witness.unwrap_or_default();
    Ok(Conforms { path, state })
}

/// The model's committed value of every key, by name.
pub fn committed(model: &Ssi, s: &SsiState) -> Vec<(String, i64)> {
    model
        .workload
        .keys
        .iter()
        .zip(model.committed_state(s))
        .map(|(k, v)| (k.to_string(), i64::from(v)))
        .collect()
}
