//! Conformance of the SSI engine (`impls/ssi`) to the SSI model (docs/models/ssi.md), both ways.
//!
//! Implementation → model: the isolation tier's scenarios run on the engine, one thread per
//! transaction with seeded timing, and every trace must be a behaviour of the engine variant's
//! model. `ssi` runs the fixed engine against the fix; `ssi-prefix` runs the pre-fix engine
//! (the #136 bug, kept as a variant) against the fix, which must catch it.
//!
//! Model → implementation: seeded random model paths drive the engine step by step (the
//! engine's trace must be that path, its committed values and serializability the model's),
//! and every must-fail `ssi_*` config's counterexample is driven through the engine variant it
//! describes (the engine must follow the violating path step for step; a `Serializable`
//! violation must really commit a non-serializable history) and through the fixed engine
//! (which must stay serializable).

use loadbearing_refinement::Model;
use loadbearing_specs::ssi::{workload, Ssi};
use loadbearing_ssi_engine::engine::Variant;
use loadbearing_ssi_engine::program::script;
use loadbearing_ssi_engine::tier::{attempt_engine, scenarios};
use loadbearing_trace::{validate, Limits};

use crate::backend::BackendKind;
use crate::counterexample_path;
use crate::error::{ConfigProblem, Error};
use crate::mismatch::Mismatch;
use crate::paths::random_walk;
use crate::replays::{self, ReplayOutcome, Violation};
use crate::schedule::{Schedule, Seeded};
use crate::ssi_engine::{committed, events, model_of, replay_path};
use crate::target::{Expect, ModelName, Replay, Settings, Target, TargetResult};
use crate::target_id::TargetId;
use loadbearing_expected::suite::Expected;

/// Timing jitter of the tier's threads, in microseconds.
const JITTER_US: u64 = 20;

/// The isolation tier's scenarios on one engine variant, against the fix's model; on the fixed
/// engine, seeded model paths and every must-fail `ssi_*` counterexample driven through it too.
pub struct SsiTarget {
    id: TargetId,
    /// The engine variant's name (`Variant::named`).
    engine: &'static str,
}

/// The SSI engine with the #136 fix.
pub static SSI: SsiTarget = SsiTarget {
    id: TargetId::Ssi,
    engine: "fix",
};

/// The pre-fix SSI engine (the #136 bug, kept as a variant).
pub static SSI_PREFIX: SsiTarget = SsiTarget {
    id: TargetId::SsiPrefix,
    engine: "prefix",
};

const IN_PROCESS: &[BackendKind] = &[BackendKind::Memory];

impl SsiTarget {
    fn variant(&self) -> Variant {
        Variant::named(self.engine).expect("the targets name known engine variants")
    }

    fn fixed(&self) -> bool {
        self.variant() == Variant::FIX
    }
}

impl Target for SsiTarget {
    fn id(&self) -> TargetId {
        self.id
    }

    fn model(&self, _: BackendKind) -> ModelName {
        ModelName::of::<Ssi>()
    }

    fn backends(&self) -> &'static [BackendKind] {
        IN_PROCESS
    }

    fn expect(&self) -> Expect {
        if self.fixed() {
            Expect::Conforms
        } else {
            Expect::Diverges
        }
    }

    fn run(&self, settings: &Settings, result: &mut TargetResult) -> Result<(), Error> {
        let engine = self.variant();
        let mut schedule = Seeded::new(settings.seed);
        for _ in 0..settings.traces {
            for scenario in scenarios() {
                // The predicate scenario has no model workload.
                let Some(w) = workload::named(scenario.script) else {
                    continue;
                };
                let run = attempt_engine(&scenario, engine, schedule.next_u64(), JITTER_US, None);
                result.tally(&model_of(Variant::FIX, w), &events(&run.trace));
            }
        }
        if self.fixed() {
            replay_random_paths(settings, &mut schedule, result)?;
            replay_counterexamples(self.id, result)?;
        }
        Ok(())
    }
}

/// Seeded random complete paths of the fix's model, on every workload, driven through the
/// fixed engine.
fn replay_random_paths(
    settings: &Settings,
    schedule: &mut dyn Schedule,
    result: &mut TargetResult,
) -> Result<(), Error> {
    for &name in workload::NAMES {
        let model = model_of(Variant::FIX, workload::named(name).expect("named workload"));
        let program = script(name)
            .ok_or_else(|| Error::config(name, ConfigProblem::NoScript(name.to_string())))?;
        for _ in 0..settings.traces {
            let init = model.init_states().remove(0);
            let (actions, states) = random_walk(&model, init, schedule, usize::MAX, |_| false);
            let state = states.last().expect("starts with init");
            let path: Vec<String> = actions.iter().map(|a| model.format_action(a)).collect();
            result.steps += path.len();
            let run = replay_path(&program, Variant::FIX, &model, &actions).map_err(|e| {
                Error::config(
                    name,
                    ConfigProblem::Engine(format!("the fixed engine: {e}")),
                )
            })?;
            let verdict = validate(&model, &events(&run.trace), Limits::default());
            if verdict.witness.as_ref() != Some(&path) {
                result.mismatches.push(Mismatch::NotFollowed {
                    on: format!("{name} {path:?}"),
                    divergence: verdict.divergence.map(|d| d.text()),
                });
            }
            let engine_state: Vec<(String, i64)> = run
                .outcome
                .state
                .iter()
                .map(|(k, v)| (k.clone(), v.unwrap_or_default()))
                .collect();
            let mut model_state = committed(&model, state);
            model_state.sort();
            if engine_state != model_state {
                result.mismatches.push(Mismatch::Differs {
                    on: format!("{name} {path:?}"),
                    what: "committed",
                    implementation: format!("{engine_state:?}"),
                    model: format!("{model_state:?}"),
                });
            }
            if run.outcome.serializable != model.serializable(state) {
                result.mismatches.push(Mismatch::Differs {
                    on: format!("{name} {path:?}"),
                    what: "serializable",
                    implementation: run.outcome.serializable.to_string(),
                    model: model.serializable(state).to_string(),
                });
            }
        }
    }
    Ok(())
}

/// The engine variant whose model a config checks.
fn variant_of(model: &Ssi) -> Option<Variant> {
    Variant::NAMES
        .iter()
        .filter_map(|n| Variant::named(n))
        .find(|v| model_of(*v, model.workload.clone()) == *model)
}

/// Every must-fail `ssi_*` config: its counterexample on its own engine variant, and on the
/// fixed engine.
fn replay_counterexamples(target: TargetId, result: &mut TargetResult) -> Result<(), Error> {
    for spec in replays::driven_by(target)? {
        let config = crate::suite_config(&spec.config)?;
        let Expected::Violates(property) = &config.expected else {
            continue; // replays.toml names must-fail configs only (checked on load)
        };
        let model = <Ssi as loadbearing_specs::Configured>::from_knobs(&config.constants)
            .map_err(|e| Error::config(&config.name, ConfigProblem::Constants(e)))?;
        let variant = variant_of(&model).ok_or_else(|| {
            Error::config(
                &config.name,
                ConfigProblem::Engine("no engine variant has this model".into()),
            )
        })?;
        let (path, _) = counterexample_path(&model, &config.name)?;
        let shown: Vec<String> = path.iter().map(|a| model.format_action(a)).collect();
        let program = script(&model.workload.name).ok_or_else(|| {
            Error::config(
                &config.name,
                ConfigProblem::NoScript(model.workload.name.clone()),
            )
        })?;
        result.steps += 2 * shown.len();
        let broken = replay_path(&program, variant, &model, &path)
            .map_err(|e| Error::config(&config.name, ConfigProblem::Engine(e.to_string())))?;
        let followed = validate(&model, &events(&broken.trace), Limits::default())
            .witness
            .as_ref()
            == Some(&shown);
        // What the engine variant showed: it followed the path to the violating state, and
        // (for a serializability counterexample) committed a non-serializable history.
        let showed = match spec.shows {
            Violation::ViolatingPath => followed,
            Violation::NonSerializableHistory => followed && !broken.outcome.serializable,
            _ => false,
        };
        let broken_outcome = ReplayOutcome::of(spec.shows, showed);
        let broken_did = if !followed {
            "did not follow the counterexample".to_string()
        } else if spec.shows == Violation::NonSerializableHistory {
            let state: Vec<String> = broken
                .outcome
                .state
                .iter()
                .map(|(key, value)| match value {
                    Some(v) => format!("{key}={v}"),
                    None => format!("{key} absent"),
                })
                .collect();
            format!(
                "committed {}: {}",
                state.join(" "),
                if broken.outcome.serializable {
                    "serializable"
                } else {
                    "not serializable"
                }
            )
        } else {
            format!(
                "followed the counterexample to the state violating {property} ({} steps)",
                shown.len()
            )
        };
        let fixed = replay_path(&program, Variant::FIX, &model, &path).map_err(|e| {
            Error::config(
                &config.name,
                ConfigProblem::Engine(format!("the fixed engine: {e}")),
            )
        })?;
        // The fixed engine must stay serializable on every counterexample's schedule.
        let guarded_outcome = ReplayOutcome::of(
            Violation::NonSerializableHistory,
            !fixed.outcome.serializable,
        );
        result.mismatches.extend(crate::mismatch::judge_replay(
            &spec,
            broken_outcome,
            guarded_outcome,
        ));
        let refusals: Vec<String> = fixed
            .steps
            .iter()
            .filter_map(|s| Some(format!("{} failed {}", s.action, s.error.as_ref()?)))
            .collect();
        result.replays.push(Replay {
            config: config.name.clone(),
            steps: shown,
            broken: broken_did,
            guarded: format!(
                "serializable: {}{}",
                fixed.outcome.serializable,
                if refusals.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", refusals.join(", "))
                }
            ),
            broken_outcome,
            guarded_outcome,
        });
    }
    Ok(())
}
