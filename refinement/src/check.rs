//! One check of one model: resolve the property names, explore, judge, and explain.

use std::time::{Duration, Instant};

use crate::model::Expectation;

use crate::budget::{Exhausted, Limits};
use crate::explore::{explore, Edges, Exploration, Finding, SafetyChecks};
use crate::graph::{Condition, StateGraph};
use crate::liveness::{find_violation, settled_by_variant, Form, Lasso};
use crate::path::Path;
use crate::report::{Counterexample, CounterexampleOf, Outcome, Report, ReportOf};
use crate::spec::Spec;
use crate::symmetry::Keys;

/// Which properties to check, and under which spec formula.
#[derive(Clone, Debug)]
pub struct CheckSpec {
    pub properties: Vec<String>,
    /// `Spec` (the model's weak fairness) when true, `SafeSpec` (none) when false.
    pub fair: bool,
    /// A state with no successor is the end of a run, not a deadlock (TLC's `-deadlock`).
    pub allow_end_states: bool,
    /// Symmetries to reduce by, by name (`Writers`): TLC's `SYMMETRY`. Safety and refinement
    /// only; with a temporal property it is refused.
    pub symmetry: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct Options {
    /// Worker threads; 0 uses every core.
    pub threads: usize,
    pub max_states: Option<u64>,
    pub timeout: Option<Duration>,
    /// Stop (incomplete) once the process holds this many bytes; `None`: no budget.
    pub max_memory: Option<u64>,
    /// Whom the check tells how it goes, once it has run for a while; `None`: no one.
    pub progress: Option<crate::progress::Reporting>,
    /// Judge every temporal property on the liveness graph, not only up to the first violated
    /// one: the report's `temporal_violations` lists each (guard mutation learns every
    /// property's verdict from one graph).
    pub every_temporal: bool,
    /// Search one state an orbit where the model declares a symmetry and the check asked for
    /// none, counting each orbit's states (`Keys::counting`): the counts, the verdict and the
    /// counterexample of the search of every state, sooner. Safety only: not with a temporal
    /// property or a refinement.
    pub by_orbits: bool,
}

impl Default for Options {
    /// Every core, no state or time budget, and most of the machine's memory.
    fn default() -> Self {
        Options {
            threads: 0,
            max_states: None,
            timeout: None,
            max_memory: crate::budget::default_max_memory(),
            progress: None,
            every_temporal: false,
            by_orbits: true,
        }
    }
}

/// A check asked of a model that it cannot answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("unknown property `{name}`; this model has: {}", available.join(", "))]
    UnknownProperty {
        name: String,
        available: Vec<String>,
    },
    #[error("unknown symmetry `{name}`; this model has: {}", if available.is_empty() { "none".to_string() } else { available.join(", ") })]
    UnknownSymmetry {
        name: String,
        available: Vec<String>,
    },
    /// Symmetry with `<>P` or `<>[]P` is refused: weak fairness is per process, and a lasso
    /// on orbits need not lift to a fair lasso of the model, so no verdict could be trusted.
    #[error("symmetry {symmetry} with the temporal property `{property}` is refused: fairness is per process, and a loop over orbits need not be a fair behaviour of the model; check the temporal properties without --symmetry")]
    SymmetryWithLiveness { symmetry: String, property: String },
    /// The distributed engine checks safety and refinement: a temporal property needs the
    /// whole state graph in one place.
    #[error("the distributed engine checks invariants, witnesses and refinements only; `{property}` is a temporal property: check it without --distributed")]
    DistributedLiveness { property: String },
}

/// A temporal property, judged on the state graph once the safety checks pass.
pub(crate) struct Temporal<M: Spec> {
    pub name: &'static str,
    condition: fn(&M, &M::State) -> bool,
    form: Form,
}

/// Every property name a model answers to, in its own order.
pub fn property_names<M: Spec>(model: &M) -> Vec<String> {
    let mut names: Vec<String> = model
        .properties()
        .iter()
        .map(|p| p.name.to_string())
        .collect();
    names.extend(model.eventually_always().iter().map(|p| p.name.to_string()));
    names.extend(model.refinements().iter().map(|r| r.name().to_string()));
    names
}

/// The checks a spec asks of a model, resolved against the model's names: the safety checks
/// one breadth-first search makes, and the temporal properties judged on the state graph.
pub(crate) struct Plan<'a, M: Spec> {
    pub safety: SafetyChecks<'a, M>,
    pub temporal: Vec<Temporal<M>>,
}

/// The model's properties and refinements, which a [`Plan`] borrows.
pub(crate) struct Declared<M: Spec> {
    properties: Vec<crate::model::Property<M>>,
    refinements: Vec<Box<dyn crate::refinement::Refinement<M::State>>>,
}

impl<M: Spec> Declared<M> {
    pub fn of(model: &M) -> Self {
        Declared {
            properties: model.properties(),
            refinements: model.refinements(),
        }
    }
}

/// Resolves `spec`'s property and symmetry names against `model`; an unknown name, or a
/// symmetry with a temporal property, is refused.
pub(crate) fn plan<'a, M: Spec>(
    model: &'a M,
    declared: &'a Declared<M>,
    spec: &CheckSpec,
) -> Result<Plan<'a, M>, SpecError> {
    let symmetries = model.symmetries();
    let mut reduced = Vec::new();
    for name in &spec.symmetry {
        match symmetries.iter().position(|s| s.name == name) {
            Some(i) => reduced.push(i),
            None => {
                return Err(SpecError::UnknownSymmetry {
                    name: name.clone(),
                    available: symmetries.iter().map(|s| s.name.to_string()).collect(),
                })
            }
        }
    }
    let keys = if reduced.is_empty() {
        Keys::plain(model)
    } else {
        Keys::reduced(model, &reduced)
    };
    let mut checks = SafetyChecks {
        invariants: Vec::new(),
        witnesses: Vec::new(),
        refinements: Vec::new(),
        allow_end_states: spec.allow_end_states,
        keys,
    };
    let stable = model.eventually_always();
    let mut liveness: Vec<Temporal<M>> = Vec::new();
    for name in &spec.properties {
        if let Some(p) = declared.properties.iter().find(|p| p.name == name) {
            match p.expectation {
                Expectation::Always => checks.invariants.push(p.clone()),
                Expectation::Sometimes => checks.witnesses.push(p.clone()),
                Expectation::Eventually => liveness.push(Temporal {
                    name: p.name,
                    condition: p.condition,
                    form: Form::Eventually,
                }),
            }
        } else if let Some(p) = stable.iter().find(|p| p.name == name) {
            liveness.push(Temporal {
                name: p.name,
                condition: p.condition,
                form: Form::EventuallyAlways,
            });
        } else if let Some(r) = declared.refinements.iter().find(|r| r.name() == name) {
            checks.refinements.push(r.as_ref());
        } else {
            return Err(SpecError::UnknownProperty {
                name: name.clone(),
                available: property_names(model),
            });
        }
    }

    if let (Some(symmetry), Some(property)) = (spec.symmetry.first(), liveness.first()) {
        return Err(SpecError::SymmetryWithLiveness {
            symmetry: symmetry.clone(),
            property: property.name.to_string(),
        });
    }
    Ok(Plan {
        safety: checks,
        temporal: liveness,
    })
}

/// The names of the model's temporal properties (`<>P` and `<>[]P`), which only the
/// single-process engine checks.
pub fn temporal_property_names<M: Spec>(model: &M) -> Vec<String> {
    let mut names: Vec<String> = model
        .properties()
        .iter()
        .filter(|p| matches!(p.expectation, Expectation::Eventually))
        .map(|p| p.name.to_string())
        .collect();
    names.extend(model.eventually_always().iter().map(|p| p.name.to_string()));
    names
}

pub fn check<M: Spec>(
    model: &M,
    spec: &CheckSpec,
    options: &Options,
) -> Result<ReportOf<M>, SpecError> {
    let started = Instant::now();
    let declared = Declared::of(model);
    let Plan {
        safety: mut checks,
        temporal: liveness,
    } = plan(model, &declared, spec)?;
    let by_orbits = options.by_orbits
        && spec.symmetry.is_empty()
        && liveness.is_empty()
        && checks.refinements.is_empty();
    if by_orbits {
        if let Some(keys) = Keys::counting(model) {
            checks.keys = keys;
        }
    }
    let limits = Limits {
        max_states: options.max_states,
        deadline: options.timeout.map(|t| (started + t, t)),
        max_memory: options.max_memory,
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.threads)
        .build()
        .expect("a thread pool of the requested size");
    let progress = options.progress.as_ref();
    // With temporal properties the search builds the liveness graph in the same pass.
    let conditions: Vec<Condition<'_, M::State>> = liveness
        .iter()
        .map(|p| {
            let condition = p.condition;
            Box::new(move |s: &M::State| condition(model, s)) as Condition<'_, M::State>
        })
        .collect();
    let graphed = (!liveness.is_empty()).then_some(&conditions[..]);
    let search =
        |edges| pool.install(|| explore(model, &checks, &limits, progress, graphed, edges));
    // A model that declares a variant is searched without the graph's edges first: where the
    // variant settles every temporal property, nothing reads them.
    let variant_declared = model
        .init_states()
        .first()
        .is_some_and(|s| model.variant(s).is_some());
    let mut exploration = search(if variant_declared {
        Edges::Dropped
    } else {
        Edges::Kept
    });

    let finish = |mut report: ReportOf<M>| {
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    };
    let (mut report, settled) = search_report(&checks, spec, &exploration);
    if settled {
        return finish(report);
    }
    let Some(mut graph) = exploration.graph.take() else {
        return finish(report);
    };
    // The graph is all the lasso search reads; the visited set is no longer needed.
    drop(exploration);
    let groups = if spec.fair {
        model.fairness_groups().len()
    } else {
        0
    };
    if !graph.edges_kept {
        let by_variant = liveness.iter().enumerate().all(|(i, property)| {
            pool.install(|| settled_by_variant(&graph, i, property.form, groups))
        });
        if by_variant {
            report.graph_bytes = graph.allocation_size();
            return finish(report);
        }
        // The variant failed on a step, or a state of a region may stutter forever: the same
        // search again, keeping the edges the lasso search reads. (Its report is the first's,
        // unless a budget runs out on the way.)
        drop(graph);
        let mut again = search(Edges::Kept);
        let settled;
        (report, settled) = search_report(&checks, spec, &again);
        if settled {
            return finish(report);
        }
        graph = again
            .graph
            .take()
            .expect("a search given temporal conditions builds the graph");
    }
    report.graph_bytes = graph.allocation_size();
    // The components' search has its line too: on a large graph it takes seconds.
    let mut components =
        progress.map(|reporting| crate::progress::Ticker::new(reporting, "liveness components"));
    for (i, property) in liveness.iter().enumerate() {
        // In the pool: the walk for cycles uses as many threads as the search.
        let lasso =
            pool.install(|| find_violation(&graph, i, property.form, groups, &mut components));
        if let Some(lasso) = lasso {
            let cx = explain_lasso(model, &graph, &lasso, property.name, spec.fair);
            if options.every_temporal {
                report
                    .temporal_violations
                    .push((property.name.to_string(), cx.len()));
            }
            // The first violated property is the outcome, as without `every_temporal`.
            if report.counterexample.is_none() {
                report.outcome = Outcome::Violates(property.name.to_string());
                report.counterexample = Some(cx);
            }
            if !options.every_temporal {
                return finish(report);
            }
        }
    }
    finish(report)
}

/// The report of the single-process search `exploration`, and whether its verdict is settled
/// (`safety_report`).
fn search_report<M: Spec>(
    checks: &SafetyChecks<'_, M>,
    spec: &CheckSpec,
    exploration: &Exploration,
) -> (ReportOf<M>, bool) {
    let (mut report, settled) = safety_report(
        checks,
        spec,
        Searched {
            distinct_states: exploration.distinct,
            generated: exploration.generated,
            depth: exploration.depth,
            finding: exploration.finding.as_ref(),
            witnesses_found: &exploration.witnesses_found,
            incomplete: exploration.incomplete.as_ref(),
            visited_bytes: exploration.visited_bytes(),
            path_to: &|fp| exploration.path_to(fp),
        },
    );
    report.orbits = checks
        .keys
        .counts_orbits()
        .then_some(exploration.visited.len() as u64);
    (report, settled)
}

/// What a breadth-first safety search found, whichever engine ran it.
pub(crate) struct Searched<'a> {
    pub distinct_states: u64,
    pub generated: u64,
    pub depth: usize,
    pub finding: Option<&'a Finding>,
    pub witnesses_found: &'a [Option<u64>],
    pub incomplete: Option<&'a Exhausted>,
    pub visited_bytes: usize,
    /// The keys from an initial state to a state the search reached.
    pub path_to: &'a dyn Fn(u64) -> Vec<u64>,
}

/// The report of a safety search, and whether its verdict is settled (a finding, a budget
/// spent or a witness missing) or the temporal properties are still to be judged.
pub(crate) fn safety_report<M: Spec>(
    checks: &SafetyChecks<'_, M>,
    spec: &CheckSpec,
    searched: Searched<'_>,
) -> (ReportOf<M>, bool) {
    let mut report = Report {
        outcome: Outcome::Holds,
        distinct_states: searched.distinct_states,
        generated: searched.generated,
        depth: searched.depth,
        seconds: 0.0,
        properties_checked: spec.properties.clone(),
        counterexample: None,
        witnesses: Vec::new(),
        visited_bytes: searched.visited_bytes,
        graph_bytes: 0,
        temporal_violations: Vec::new(),
        orbits: None,
    };
    if let Some(finding) = searched.finding {
        report.outcome = match finding {
            Finding::Deadlock { .. } => Outcome::Deadlock,
            _ => Outcome::Violates(finding.property().to_string()),
        };
        report.counterexample = Some(explain_finding(checks, searched.path_to, finding));
        return (report, true);
    }
    if let Some(why) = searched.incomplete {
        report.outcome = Outcome::Incomplete(why.clone());
        return (report, true);
    }
    for (witness, found) in checks.witnesses.iter().zip(searched.witnesses_found) {
        match found {
            Some(fp) => report.witnesses.push(Counterexample::plain(
                witness.name,
                replay_keyed(&checks.keys, &(searched.path_to)(*fp)),
            )),
            None => {
                report.outcome = Outcome::Missing(witness.name.to_string());
                return (report, true);
            }
        }
    }
    (report, false)
}

/// The counterexample of `finding`, replayed along the keys `path_to` gives from an initial
/// state to the state the finding was made at.
pub(crate) fn explain_finding<M: Spec>(
    checks: &SafetyChecks<'_, M>,
    path_to: &dyn Fn(u64) -> Vec<u64>,
    finding: &Finding,
) -> CounterexampleOf<M> {
    let keys = &checks.keys;
    let (path, abstract_step) = match finding {
        Finding::Invariant { state, .. } | Finding::Deadlock { state } => {
            (replay_keyed(keys, &path_to(*state)), None)
        }
        Finding::InitialRefinement { state, images, .. } => {
            (replay_keyed(keys, &[*state]), Some(images.clone()))
        }
        Finding::Refinement { from, property } => {
            let mut path = replay_keyed(keys, &path_to(*from));
            let refinement = checks
                .refinements
                .iter()
                .find(|r| r.name() == *property)
                .expect("a refinement finding names a checked refinement");
            // Found again from the replayed state rather than by the successor's key: under a
            // symmetry the replay may reach another state of the orbit, whose offending step is
            // the image of the one found, not a step into the same orbit.
            let (action, next, images) =
                offending_step(keys.model(), *refinement, path.last_state()).expect(
                    "the state the finding was made at has a step that maps to no abstract step",
                );
            path.push(action, next);
            (path, Some(images))
        }
    };
    Counterexample {
        property: finding.property().to_string(),
        path,
        loop_start: None,
        abstract_step,
        fairness_note: None,
    }
}

/// The first step out of `state`, in the model's action order, that `refinement` refuses.
fn offending_step<M: Spec>(
    model: &M,
    refinement: &dyn crate::refinement::Refinement<M::State>,
    state: &M::State,
) -> Option<(M::Action, M::State, crate::image::AbstractStep)> {
    let mut actions = Vec::new();
    model.actions(state, &mut actions);
    let steps: Vec<(M::Action, M::State)> = actions
        .into_iter()
        .filter_map(|a| model.next_state(state, a.clone()).map(|next| (a, next)))
        .collect();
    let successors: Vec<M::State> = steps.iter().map(|(_, next)| next.clone()).collect();
    let (i, images) = refinement
        .check_steps(state, &successors)
        .into_iter()
        .min_by_key(|(i, _)| *i)?;
    let (action, next) = steps.into_iter().nth(i)?;
    Some((action, next, images))
}

fn explain_lasso<M: Spec>(
    model: &M,
    graph: &StateGraph,
    lasso: &Lasso,
    property: &str,
    fair: bool,
) -> CounterexampleOf<M> {
    let groups = model.fairness_groups();
    let fairness_note = if !fair || groups.is_empty() {
        "no fairness is assumed (SafeSpec), so the system may stop taking steps".to_string()
    } else if lasso.cycle.is_empty() {
        format!(
            "every weakly-fair action ({}) is disabled there",
            groups.join(", ")
        )
    } else {
        format!(
            "each weakly-fair action ({}) is taken or disabled on the loop",
            groups.join(", ")
        )
    };
    // The prefix ends where the cycle starts; a cycle is shown closed, back at its first state.
    let mut ids: Vec<u32> = lasso.prefix.clone();
    if let Some((&entry, rest)) = lasso.cycle.split_first() {
        ids.extend(rest);
        ids.push(entry);
    }
    let fps: Vec<u64> = ids.iter().map(|&i| graph.fps[i as usize]).collect();
    Counterexample {
        property: property.to_string(),
        path: replay(model, &fps),
        loop_start: Some(lasso.prefix.len() - 1),
        abstract_step: None,
        fairness_note: Some(fairness_note),
    }
}

/// Turns a path of fingerprints back into states and actions, taking the first action (in the
/// model's order) that reaches each next state.
///
/// The fingerprints came from exploring this model, so each one is reached again; a model
/// whose `init_states`, `actions` or `next_state` vary between calls breaks that, and is told so.
pub fn replay<M: Spec>(model: &M, fps: &[u64]) -> Path<M::State, M::Action> {
    replay_keyed(&Keys::plain(model), fps)
}

/// `replay` for a path of keys: under a symmetry, each step goes to the concrete successor in
/// the next key's orbit, so the path shown is a behaviour of the model, not of its orbits.
pub fn replay_keyed<M: Spec>(keys: &Keys<'_, M>, fps: &[u64]) -> Path<M::State, M::Action> {
    let model = keys.model();
    let init = model
        .init_states()
        .into_iter()
        .find(|s| keys.key(s) == fps[0])
        .expect("the path starts at an initial state: the model's init_states vary between calls");
    let mut path = Path::new(init);
    let mut actions = Vec::new();
    for &target in &fps[1..] {
        let state = path.last_state();
        actions.clear();
        model.actions(state, &mut actions);
        let (action, next) = actions
            .drain(..)
            .find_map(|action| {
                model
                    .next_state(state, action.clone())
                    .filter(|next| keys.key(next) == target)
                    .map(|next| (action, next))
            })
            .expect("each step of the path is a step of the model: its actions vary between calls");
        path.push(action, next);
    }
    path
}
