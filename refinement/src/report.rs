//! Typed results: what a check found, and the path that shows it, in the model's own types.

use crate::model::Model;
use serde::Serialize;

use crate::budget::Exhausted;
use crate::image::AbstractStep;
use crate::path::Path;

/// The verdict of one check. `Incomplete` is its own result: a budget ran out, so nothing
/// can be said to hold.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Outcome {
    Holds,
    Violates(String),
    Deadlock,
    /// A `sometimes` witness that no reachable state satisfies.
    Missing(String),
    Incomplete(Exhausted),
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

/// A path that shows a property: a counterexample to it, or a witness of a `sometimes`.
#[derive(Clone, Debug)]
pub struct Counterexample<S, A> {
    pub property: String,
    pub path: Path<S, A>,
    /// For a liveness violation: the index of the state where the repeating loop starts. When
    /// it is the last state, that state stutters forever; otherwise the last step returns to the
    /// state at `loop_start` and the loop repeats.
    pub loop_start: Option<usize>,
    /// For a refinement violation: the abstract images of the offending step.
    pub abstract_step: Option<AbstractStep>,
    /// For a liveness violation: why the loop is a fair behaviour.
    pub fairness_note: Option<String>,
}

impl<S, A> Counterexample<S, A> {
    /// A path with nothing more to say than the property it shows (a witness).
    pub fn plain(property: &str, path: Path<S, A>) -> Self {
        Counterexample {
            property: property.to_string(),
            path,
            loop_start: None,
            abstract_step: None,
            fairness_note: None,
        }
    }

    /// The number of transitions on the path (the initial state is not a transition).
    pub fn len(&self) -> usize {
        self.path.len()
    }

    pub fn is_empty(&self) -> bool {
        self.path.is_empty()
    }
}

#[derive(Clone, Debug)]
pub struct Report<S, A> {
    pub outcome: Outcome,
    pub distinct_states: u64,
    /// States generated (TLC's count): every initial state and every successor computed,
    /// those already seen included.
    pub generated: u64,
    pub depth: usize,
    pub seconds: f64,
    pub properties_checked: Vec<String>,
    pub counterexample: Option<Counterexample<S, A>>,
    /// For each `sometimes` witness found, the shortest path to a state that shows it.
    pub witnesses: Vec<Counterexample<S, A>>,
    /// Peak bytes held by the visited set (fingerprints and parent links).
    pub visited_bytes: usize,
    /// Bytes held by the liveness graph, when one was built (0 otherwise).
    pub graph_bytes: usize,
    /// With `Options::every_temporal`, each temporal property the liveness graph violates, with
    /// its counterexample's length (the first of them is the outcome).
    pub temporal_violations: Vec<(String, usize)>,
    /// For a search by orbits (`Options::by_orbits`): the orbits searched, one state each,
    /// which stand for the `distinct_states` counted.
    pub orbits: Option<u64>,
}

/// The report of a check of model `M`.
pub type ReportOf<M> = Report<<M as Model>::State, <M as Model>::Action>;

/// A counterexample (or witness) of model `M`.
pub type CounterexampleOf<M> = Counterexample<<M as Model>::State, <M as Model>::Action>;
