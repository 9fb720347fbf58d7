//! Conformance of the real libdb (`impls/libdb`, docs/libdb.md) to the SSI model, both ways.
//!
//! libdb → model: the isolation tier's scenarios run on a flavour, one thread per transaction,
//! and every trace (each step recorded under the harness's step lock, so in libdb's order) must
//! be a behaviour of the fix's model with libdb's visibility (`ssi_libdb_fix_*`). `libdb-fix`
//! must conform; `libdb-prefix`, the release, must diverge, at the #136 trigger's T2 write that
//! the fix's model refuses.
//!
//! Model → libdb (on `libdb-fix`): every must-fail counterexample of libdb's variants
//! (`ssi_libdb_*`) driven step by step through the flavour that has the variant, which must
//! commit the non-serializable history, and through the fix, which must refuse it.

use loadbearing_libdb::db::Flavour;
use loadbearing_libdb::replay::must_fail_replays;
use loadbearing_libdb::tier::{attempt, checked_model, libdb_scenarios, schedule};
use loadbearing_ssi_engine::program::script;

use crate::backend::BackendKind;
use crate::error::Error;
use crate::replays::{ReplayOutcome, Violation};
use crate::schedule::{Schedule, Seeded};
use crate::target::{Expect, Replay, Settings, Target, TargetResult};

/// Timing jitter of the tier's threads, in microseconds.
const JITTER_US: u64 = 20;

pub struct LibdbTarget {
    name: &'static str,
    flavour: Flavour,
}

/// libdb with the #151 fix at both sites.
pub static LIBDB_FIX: LibdbTarget = LibdbTarget {
    name: "libdb-fix",
    flavour: Flavour::Fix,
};

/// libdb 5.3.34 as released.
pub static LIBDB_PREFIX: LibdbTarget = LibdbTarget {
    name: "libdb-prefix",
    flavour: Flavour::Prefix,
};

const IN_PROCESS: &[BackendKind] = &[BackendKind::Memory];

impl Target for LibdbTarget {
    fn name(&self) -> &'static str {
        self.name
    }

    fn model(&self, _: BackendKind) -> &'static str {
        "SSI"
    }

    fn backends(&self) -> &'static [BackendKind] {
        IN_PROCESS
    }

    fn expect(&self) -> Expect {
        if self.flavour == Flavour::Fix {
            Expect::Conforms
        } else {
            Expect::Diverges
        }
    }

    fn run(&self, settings: &Settings, result: &mut TargetResult) -> Result<(), Error> {
        // Each scenario with the fix's model its traces are held to (the predicate workload
        // has none; two writers of one page are outside it).
        let checked: Vec<_> = libdb_scenarios()
            .into_iter()
            .filter_map(|s| {
                let program = script(s.scenario.script).expect("scenarios name known scripts");
                checked_model(Flavour::Fix, &program).map(|model| (s, model))
            })
            .collect();
        let mut seeds = Seeded::new(settings.seed);
        for _ in 0..settings.traces {
            for (s, model) in &checked {
                let sched = schedule(&s.scenario, seeds.next_u64(), JITTER_US);
                let run = attempt(&s.scenario, s.shape, self.flavour, &sched)
                    .map_err(|e| Error::Harness(e.to_string()))?;
                result.tally(model, &run.trace);
            }
        }
        if self.flavour == Flavour::Fix {
            replay_counterexamples(result)?;
        }
        Ok(())
    }
}

fn replay_counterexamples(result: &mut TargetResult) -> Result<(), Error> {
    let (replays, _not_replayable) =
        must_fail_replays().map_err(|e| Error::Harness(e.to_string()))?;
    for r in replays {
        result.steps += 2 * r.broken.path.len();
        let broken_outcome = ReplayOutcome::of(Violation::NonSerializableHistory, r.reproduced());
        let guarded_outcome =
            ReplayOutcome::of(Violation::NonSerializableHistory, !r.refused_by_fix());
        if !r.reproduced() {
            result.mismatches.push(format!(
                "{}: {} did not commit the non-serializable history ({})",
                r.config, r.broken.flavour, r.broken
            ));
        }
        if !r.refused_by_fix() {
            result.mismatches.push(format!(
                "{}: libdb-fix committed it ({})",
                r.config, r.fixed
            ));
        }
        result.replays.push(Replay {
            config: r.config.clone(),
            steps: r.broken.path.clone(),
            broken: r.broken.to_string(),
            guarded: r.fixed.to_string(),
            broken_outcome,
            guarded_outcome,
        });
    }
    Ok(())
}
