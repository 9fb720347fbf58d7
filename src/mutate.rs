//! Guard-mutation coverage: remove each declared guard of each holding config in turn and see
//! which properties catch it. A guard nothing catches is not load-bearing; a property no
//! mutant violates is decoration (or redundant).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::Path;

use loadbearing_refinement::{Options, Outcome};
use loadbearing_registry as registry;
use loadbearing_specs::Guard;
use serde::{Deserialize, Serialize};

use loadbearing_expected::run::run;
use loadbearing_expected::suite::{override_constants, Config, Expected};

/// Why guard mutation could not run (every other finding is data in [`Coverage`]).
#[derive(Debug, thiserror::Error)]
pub enum MutateError {
    /// The written reasons for guards allowed not to be caught do not load.
    #[error("{origin}: {problem}")]
    Explanations {
        /// The file, or `expected/guards.toml (built in)`.
        origin: String,
        problem: ExplanationProblem,
    },
    /// The guard's knob could not be set to its removed value.
    #[error("{config}: {reason}")]
    Removal { config: String, reason: String },
    /// Checking a mutant failed before it gave an outcome.
    #[error("{config}: {reason}")]
    Check { config: String, reason: String },
    /// A mutant hit a budget: no verdict on the guard may be drawn from it.
    #[error("{config} without {knob}: {property} incomplete ({why})")]
    Incomplete {
        config: String,
        knob: String,
        property: String,
        why: String,
    },
}

/// What is wrong with a file of written reasons.
#[derive(Debug, thiserror::Error)]
pub enum ExplanationProblem {
    #[error("{0}")]
    Read(std::io::Error),
    #[error("{0}")]
    Toml(toml::de::Error),
    #[error("unknown model `{0}`")]
    UnknownModel(String),
    #[error("{model} declares no guard `{guard}`")]
    NoSuchGuard { model: String, guard: String },
    #[error("{model} / {guard}: the reason is empty")]
    EmptyReason { model: String, guard: String },
}

/// One property's verdict on one mutant, checked on its own.
#[derive(Clone, Debug, Serialize)]
pub struct Catch {
    pub property: String,
    /// Transitions on the shortest counterexample (none for a missing witness).
    pub steps: Option<usize>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Mutant {
    pub config: String,
    pub model: String,
    pub guard: String,
    /// `Knob=value`, the setting that removes the guard.
    pub removal: String,
    /// The properties that fail without the guard; empty: NOT LOAD-BEARING here.
    pub caught_by: Vec<Catch>,
    /// The config already runs without this guard, so there is nothing to remove.
    pub not_applicable: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct GuardVerdict {
    pub model: String,
    pub guard: String,
    pub caught_by: Vec<String>,
    /// A must-fail config of the suite that runs the model without this guard.
    pub must_fail_pair: Option<String>,
    /// Why it is fine that nothing catches it (from expected/guards.toml).
    pub explained: Option<String>,
}

impl GuardVerdict {
    pub fn load_bearing(&self) -> bool {
        !self.caught_by.is_empty()
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct PropertyVerdict {
    pub model: String,
    pub property: String,
    /// Empty: never violated by any mutant.
    pub catches: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Coverage {
    pub mutants: Vec<Mutant>,
    pub guards: Vec<GuardVerdict>,
    pub properties: Vec<PropertyVerdict>,
}

impl Coverage {
    /// Guards that nothing catches and nobody explained: CI fails on these.
    /// One line: how many mutants were caught, how many guards are load-bearing.
    pub fn summary(&self) -> String {
        let applicable: Vec<&Mutant> = self.mutants.iter().filter(|m| !m.not_applicable).collect();
        let caught = applicable
            .iter()
            .filter(|m| !m.caught_by.is_empty())
            .count();
        let load_bearing = self.guards.iter().filter(|g| g.load_bearing()).count();
        let explained = self
            .guards
            .iter()
            .filter(|g| !g.load_bearing() && g.explained.is_some())
            .count();
        format!(
            "{} mutants ({} not applicable): {caught} of {} caught; {} guards: {load_bearing} load-bearing, {explained} not but explained, {} unexplained",
            self.mutants.len(),
            self.mutants.len() - applicable.len(),
            applicable.len(),
            self.guards.len(),
            self.unexplained().len()
        )
    }

    pub fn unexplained(&self) -> Vec<&GuardVerdict> {
        self.guards
            .iter()
            .filter(|g| !g.load_bearing() && g.explained.is_none())
            .collect()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExplanationFile {
    #[serde(default)]
    not_load_bearing: Vec<Explanation>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Explanation {
    model: String,
    guard: String,
    reason: String,
}

/// The written reasons shipped with the project (`expected/guards.toml`), compiled in so that an
/// installed binary needs no checkout to find them.
pub const BUILT_IN_EXPLANATIONS: &str = include_str!("../expected/guards.toml");

/// The project's reasons for guards that are allowed not to be caught (the ones compiled in).
pub fn built_in_explanations() -> Result<BTreeMap<(String, String), String>, MutateError> {
    parse_explanations(BUILT_IN_EXPLANATIONS, "expected/guards.toml (built in)")
}

/// Reads the written reasons for guards that are allowed not to be caught; a missing file
/// gives none.
pub fn load_explanations(path: &Path) -> Result<BTreeMap<(String, String), String>, MutateError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => {
            return Err(MutateError::Explanations {
                origin: path.display().to_string(),
                problem: ExplanationProblem::Read(e),
            })
        }
    };
    parse_explanations(&text, &path.display().to_string())
}

/// The reasons in `text`; errors name `source`.
fn parse_explanations(
    text: &str,
    origin: &str,
) -> Result<BTreeMap<(String, String), String>, MutateError> {
    let fail = |problem| MutateError::Explanations {
        origin: origin.to_string(),
        problem,
    };
    let file: ExplanationFile =
        toml::from_str(text).map_err(|e| fail(ExplanationProblem::Toml(e)))?;
    let mut reasons = BTreeMap::new();
    for e in file.not_load_bearing {
        let Some(entry) = registry::find(&e.model) else {
            return Err(fail(ExplanationProblem::UnknownModel(e.model)));
        };
        if !entry.guards.iter().any(|g| g.name() == e.guard) {
            return Err(fail(ExplanationProblem::NoSuchGuard {
                model: e.model,
                guard: e.guard,
            }));
        }
        if e.reason.trim().is_empty() {
            return Err(fail(ExplanationProblem::EmptyReason {
                model: e.model,
                guard: e.guard,
            }));
        }
        reasons.insert((e.model, e.guard), e.reason);
    }
    Ok(reasons)
}

/// Mutates every holding config among `configs`; `suite` (all configs) supplies the must-fail
/// pairs.
pub fn mutate(
    configs: &[Config],
    suite: &[Config],
    explanations: &BTreeMap<(String, String), String>,
    options: &Options,
) -> Result<Coverage, MutateError> {
    mutate_with_progress(configs, suite, explanations, options, &mut |_| {})
}

/// One mutant checked, for a progress line: which, how far along, how long it took.
pub struct Progress<'a> {
    pub done: usize,
    pub total: usize,
    pub mutant: &'a Mutant,
    pub seconds: f64,
}

/// [`mutate`], telling `on_mutant` after each mutant is checked. The mutants are checked side
/// by side, by as many workers as `options.threads` (every core by default), each check with
/// its own threads too; the configs with the most states go first, so the few large mutants
/// that dominate a run start at once rather than last. The mutants come back in the configs'
/// and guards' order, whichever finished first.
pub fn mutate_with_progress(
    configs: &[Config],
    suite: &[Config],
    explanations: &BTreeMap<(String, String), String>,
    options: &Options,
    on_mutant: &mut (dyn FnMut(Progress<'_>) + Send),
) -> Result<Coverage, MutateError> {
    let mut checked: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut jobs: Vec<(&Config, &Guard)> = Vec::new();
    for config in configs.iter().filter(|c| c.expected == Expected::Holds) {
        checked
            .entry(config.model.to_string())
            .or_default()
            .extend(config.properties.iter().cloned());
        jobs.extend(config.entry.guards.iter().map(|guard| (config, guard)));
    }
    let total = jobs.len();
    // Largest first: the reference's state count, where the config pins one.
    let mut order: Vec<usize> = (0..total).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(jobs[i].0.states.unwrap_or(0)));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let on_mutant = std::sync::Mutex::new((on_mutant, 0usize));
    let results: std::sync::Mutex<Vec<Option<Result<Mutant, MutateError>>>> =
        std::sync::Mutex::new((0..total).map(|_| None).collect());
    let workers = match options.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    // Plain threads, not a rayon pool: each check runs its own pool, and a rayon worker
    // waiting on another pool would take up further mutants inside that wait.
    std::thread::scope(|scope| {
        for _ in 0..workers.min(total) {
            scope.spawn(|| loop {
                let taken = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&i) = order.get(taken) else {
                    break;
                };
                let (config, guard) = jobs[i];
                let started = std::time::Instant::now();
                let result = mutant_of(config, guard, options);
                if let Ok(mutant) = &result {
                    let mut told = on_mutant.lock().unwrap_or_else(|e| e.into_inner());
                    told.1 += 1;
                    let done = told.1;
                    (told.0)(Progress {
                        done,
                        total,
                        mutant,
                        seconds: started.elapsed().as_secs_f64(),
                    });
                }
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(result);
            });
        }
    });
    let mutants = results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.expect("every mutant was checked"))
        .collect::<Result<Vec<Mutant>, MutateError>>()?;

    let mut guards = Vec::new();
    let mut properties = Vec::new();
    for (model, props) in &checked {
        let entry = registry::find(model).expect("every model here was found for its config");
        for guard in entry.guards {
            let of_guard = mutants
                .iter()
                .filter(|m| &m.model == model && m.guard == guard.name());
            let caught_by: BTreeSet<String> = of_guard
                .flat_map(|m| m.caught_by.iter().map(|c| c.property.clone()))
                .collect();
            let must_fail_pair = suite
                .iter()
                .find(|c| {
                    c.model == model
                        && c.expected != Expected::Holds
                        && guard.is_removed_in(&c.constants)
                })
                .map(|c| c.label.clone());
            guards.push(GuardVerdict {
                model: model.clone(),
                guard: guard.name().to_string(),
                caught_by: caught_by.into_iter().collect(),
                must_fail_pair,
                explained: explanations
                    .get(&(model.clone(), guard.name().to_string()))
                    .cloned(),
            });
        }
        for property in props {
            let catches: BTreeSet<String> = mutants
                .iter()
                .filter(|m| {
                    &m.model == model && m.caught_by.iter().any(|c| &c.property == property)
                })
                .map(|m| m.guard.clone())
                .collect();
            properties.push(PropertyVerdict {
                model: model.clone(),
                property: property.clone(),
                catches: catches.into_iter().collect(),
            });
        }
    }
    Ok(Coverage {
        mutants,
        guards,
        properties,
    })
}

/// `config` without `guard`, checked (not when the config already runs without it).
fn mutant_of(config: &Config, guard: &Guard, options: &Options) -> Result<Mutant, MutateError> {
    let already_off = guard.is_removed_in(&config.constants);
    Ok(Mutant {
        config: config.label.clone(),
        model: config.model.to_string(),
        guard: guard.name().to_string(),
        removal: guard.removal(),
        caught_by: if already_off {
            Vec::new()
        } else {
            catches(config, guard, options)?
        },
        not_applicable: already_off,
    })
}

/// Every property of the config that catches the missing guard, each with its shortest
/// counterexample's length. One check of all the properties stops at the first (shortest)
/// violation; that property is set aside and the rest are checked again, until a check holds.
/// So the properties that hold share one complete search (not one each), and each violated
/// one is found at its own shortest depth, as if checked alone; a round whose safety search
/// completes judges every temporal property on one liveness graph. A deadlock is noted once,
/// and the later rounds let runs end there to look past it.
fn catches(config: &Config, guard: &Guard, options: &Options) -> Result<Vec<Catch>, MutateError> {
    let mut mutant = config.clone();
    override_constants(&mut mutant, &[guard.removing_set()]).map_err(|e| MutateError::Removal {
        config: config.label.clone(),
        reason: e.to_string(),
    })?;
    // A round that reaches the liveness graph has held every safety property: the graph then
    // judges every temporal one, and no further round is needed.
    let options = Options {
        every_temporal: true,
        ..options.clone()
    };
    let mut found = Vec::new();
    while !mutant.properties.is_empty() {
        let judged = run(&mutant, &options).map_err(|e| MutateError::Check {
            config: config.label.clone(),
            reason: e.to_string(),
        })?;
        let temporal = judged.report.temporal_violations();
        if !temporal.is_empty() {
            found.extend(temporal.iter().map(|(property, steps)| Catch {
                property: property.clone(),
                steps: Some(*steps),
            }));
            break;
        }
        let steps = judged.report.counterexample().map(|cx| cx.len());
        let caught = match judged.report.outcome().clone() {
            Outcome::Holds => break,
            Outcome::Violates(p) => Catch { property: p, steps },
            Outcome::Missing(p) => Catch {
                property: p,
                steps: None,
            },
            Outcome::Deadlock => {
                mutant.end_states = true;
                found.push(Catch {
                    property: "deadlock".into(),
                    steps,
                });
                continue;
            }
            Outcome::Incomplete(why) => {
                return Err(MutateError::Incomplete {
                    config: config.label.clone(),
                    knob: guard.knob().to_string(),
                    property: mutant.properties.join(", "),
                    why: why.to_string(),
                })
            }
        };
        let before = mutant.properties.len();
        mutant.properties.retain(|p| *p != caught.property);
        if mutant.properties.len() == before {
            // A verdict on a property the config does not check: the next round would be this one.
            return Err(MutateError::Check {
                config: config.label.clone(),
                reason: format!("violates {}, which it does not check", caught.property),
            });
        }
        found.push(caught);
    }
    // In the config's order of properties, whatever order the rounds found them in.
    found.sort_by_key(|c| {
        config
            .properties
            .iter()
            .position(|p| *p == c.property)
            .unwrap_or(usize::MAX)
    });
    Ok(found)
}

fn catch_text(c: &Catch) -> String {
    match c.steps {
        Some(n) => format!("{} ({n} steps)", c.property),
        None => format!("{} (witness missing)", c.property),
    }
}

/// What one mutant came to, for its row.
pub fn result_text(m: &Mutant) -> String {
    if m.not_applicable {
        "not applicable: the config already runs without it".to_string()
    } else if m.caught_by.is_empty() {
        "NOT LOAD-BEARING here".to_string()
    } else {
        m.caught_by
            .iter()
            .map(catch_text)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

pub fn table(coverage: &Coverage) -> String {
    let mut out = String::new();
    // Each column as wide as its widest cell, so long suite addresses keep the rows aligned.
    let width = |cell: fn(&Mutant) -> &str, header: &str| {
        coverage
            .mutants
            .iter()
            .map(|m| cell(m).len())
            .chain([header.len()])
            .max()
            .unwrap_or(0)
    };
    let cw = width(|m| &m.config, "config");
    let gw = width(|m| &m.guard, "guard");
    let rw = width(|m| &m.removal, "removed by");
    let _ = writeln!(
        out,
        "{:<cw$} {:<gw$} {:<rw$} result",
        "config", "guard", "removed by"
    );
    for m in &coverage.mutants {
        let _ = writeln!(
            out,
            "{:<cw$} {:<gw$} {:<rw$} {}",
            m.config,
            m.guard,
            m.removal,
            result_text(m)
        );
    }
    let _ = writeln!(out, "\nguards:");
    for g in &coverage.guards {
        let verdict = if g.load_bearing() {
            format!("load-bearing, caught by {}", g.caught_by.join(", "))
        } else if let Some(reason) = &g.explained {
            format!("NOT LOAD-BEARING (explained: {reason})")
        } else {
            "NOT LOAD-BEARING (unexplained)".to_string()
        };
        let pair = g
            .must_fail_pair
            .as_deref()
            .map(|p| format!("; must-fail pair: {p}"))
            .unwrap_or_else(|| "; no must-fail pair in the suite".into());
        let _ = writeln!(out, "  {:<18} {:<24} {verdict}{pair}", g.model, g.guard);
    }
    let _ = writeln!(out, "\nproperties:");
    for p in &coverage.properties {
        let verdict = if p.catches.is_empty() {
            "never violated".to_string()
        } else {
            format!("catches {}", p.catches.join(", "))
        };
        let _ = writeln!(out, "  {:<18} {:<28} {verdict}", p.model, p.property);
    }
    let _ = writeln!(out, "\n{}", coverage.summary());
    out
}

/// The guard × property table per model, as the generated docs/mutation.md.
pub fn markdown(coverage: &Coverage) -> String {
    let mut out = String::from(
        "# Guard-mutation coverage\n\n\
         Generated by `cargo run --release -- mutate --format markdown > docs/mutation.md`; \
         `cargo test` fails when it is out of date.\n\n\
         For every config that holds, each guard of its model is removed in turn and every \
         property of the config is checked on its own. A cell names the shortest counterexample \
         length of the property that catches the missing guard (`✗ n`), a missing witness \
         (`✗ missing`), or `·` when the property still holds. A guard no property catches is \
         not load-bearing; a property no mutant violates is listed as never violated.\n",
    );
    let models: BTreeSet<&str> = coverage.mutants.iter().map(|m| m.model.as_str()).collect();
    for model in models {
        let _ = writeln!(out, "\n## {model}\n");
        let props: Vec<&PropertyVerdict> = coverage
            .properties
            .iter()
            .filter(|p| p.model == model)
            .collect();
        let _ = write!(out, "| config | guard removed |");
        for p in &props {
            let _ = write!(out, " {} |", p.property);
        }
        let _ = write!(out, "\n|---|---|");
        for _ in &props {
            let _ = write!(out, "---|");
        }
        out.push('\n');
        for m in coverage.mutants.iter().filter(|m| m.model == model) {
            let _ = write!(out, "| {} | {} (`{}`) |", m.config, m.guard, m.removal);
            for p in &props {
                let cell = if m.not_applicable {
                    "n/a".to_string()
                } else {
                    match m.caught_by.iter().find(|c| c.property == p.property) {
                        Some(Catch { steps: Some(n), .. }) => format!("✗ {n}"),
                        Some(Catch { steps: None, .. }) => "✗ missing".to_string(),
                        None => "·".to_string(),
                    }
                };
                let _ = write!(out, " {cell} |");
            }
            out.push('\n');
        }
        out.push('\n');
        for g in coverage.guards.iter().filter(|g| g.model == model) {
            let verdict = if g.load_bearing() {
                "load-bearing".to_string()
            } else if let Some(reason) = &g.explained {
                format!("**not load-bearing**, explained: {reason}")
            } else {
                "**NOT LOAD-BEARING**".to_string()
            };
            let pair = g
                .must_fail_pair
                .as_deref()
                .map(|p| format!(" (must-fail pair: `{p}`)"))
                .unwrap_or_default();
            let _ = writeln!(out, "- guard **{}**: {verdict}{pair}", g.guard);
        }
        let never: Vec<&str> = props
            .iter()
            .filter(|p| p.catches.is_empty())
            .map(|p| p.property.as_str())
            .collect();
        if !never.is_empty() {
            let _ = writeln!(out, "- never violated by any mutant: {}", never.join(", "));
        }
    }
    out
}
