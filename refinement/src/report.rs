//! Typed results: what a check found, and the path that shows it.

use serde::Serialize;

/// The verdict of one check. `Incomplete` is its own result: a budget ran out, so nothing
/// can be said to hold.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Outcome {
    Holds,
    Violates(String),
    Deadlock,
    /// A `sometimes` witness that no reachable state satisfies.
    Missing(String),
    Incomplete(String),
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Holds => write!(f, "holds"),
            Outcome::Violates(p) => write!(f, "violates {p}"),
            Outcome::Deadlock => write!(f, "deadlock"),
            Outcome::Missing(p) => write!(f, "missing {p}"),
            Outcome::Incomplete(why) => write!(f, "incomplete ({why})"),
        }
    }
}

/// One state on a path, with the action that reached it (`None` for the initial state).
#[derive(Clone, Debug, Serialize)]
pub struct Step {
    pub action: Option<String>,
    pub actor: Option<String>,
    pub state: Vec<(String, String)>,
    /// The variables this step changed, with their new values.
    pub changed: Vec<(String, String)>,
}

/// A refinement step that maps to no abstract step.
#[derive(Clone, Debug, Serialize)]
pub struct AbstractStep {
    pub before: Vec<(String, String)>,
    pub after: Vec<(String, String)>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Counterexample {
    pub property: String,
    pub steps: Vec<Step>,
    /// For a liveness violation: the index of the step where the repeating loop starts. When it
    /// is the last step, that state stutters forever; otherwise the last step returns to the
    /// state at `loop_start` and the loop repeats.
    pub loop_start: Option<usize>,
    /// For a refinement violation: the abstract images of the offending step.
    pub abstract_step: Option<AbstractStep>,
    /// For a liveness violation: why the loop is a fair behaviour.
    pub fairness_note: Option<String>,
}

impl Counterexample {
    /// The number of transitions on the path (the initial state is not a transition).
    pub fn len(&self) -> usize {
        self.steps.len().saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn actions(&self) -> Vec<String> {
        self.steps.iter().filter_map(|s| s.action.clone()).collect()
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub outcome: Outcome,
    pub distinct_states: u64,
    pub depth: usize,
    pub seconds: f64,
    pub properties_checked: Vec<String>,
    pub counterexample: Option<Counterexample>,
    /// For each `sometimes` witness found, the shortest path to a state that shows it.
    pub witnesses: Vec<Counterexample>,
    /// Peak bytes held by the visited set (fingerprints and parent links).
    pub visited_bytes: usize,
}
