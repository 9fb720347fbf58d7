//! A conformance run: the targets to run and the backend of each, every check made before
//! anything runs; then each target in turn. A target that cannot run (its server does not
//! start, its harness fails) is recorded as its result, with its error, and the run goes on:
//! one broken target does not hide what the others show.

use std::time::Instant;

use crate::backend::{BackendKind, Servers};
use crate::error::Error;
use crate::target::{self, check_backend, Settings, Target, TargetResult};
use crate::targets;

/// One target and the backend it runs on.
#[derive(Clone, Copy)]
struct Planned {
    target: &'static dyn Target,
    backend: BackendKind,
}

/// The targets of a run, in order, each on a backend it runs on in this build.
#[derive(Default)]
pub struct Plan {
    planned: Vec<Planned>,
}

impl Plan {
    /// The targets `names` names, or, when none, every target that runs on `backend` (on its
    /// embedded default when no backend is given), each on `backend` or its default. A target
    /// on a backend it does not run on, or a server backend left out of this build, is an
    /// error, so that nothing is silently skipped.
    pub fn select(names: &[String], backend: Option<BackendKind>) -> Result<Plan, Error> {
        let chosen: Vec<&'static dyn Target> = if names.is_empty() {
            targets::ALL
                .iter()
                .copied()
                .filter(|t| match backend {
                    Some(kind) => t.backends().contains(&kind),
                    // The embedded defaults: a target whose default is a server (the
                    // compound) runs only when its backend is asked for.
                    None => t.backends()[0].embedded(),
                })
                .collect()
        } else {
            names
                .iter()
                .map(|name| targets::find(name))
                .collect::<Result<_, _>>()?
        };
        let mut plan = Plan::default();
        for target in chosen {
            plan.push(target, backend.unwrap_or(target.backends()[0]))?;
        }
        // The replay data is parsed (its targets read as ids) before anything runs.
        crate::replays::all()?;
        Ok(plan)
    }

    /// Adds `target` on `backend`, which must be one it runs on in this build.
    pub fn push(&mut self, target: &'static dyn Target, backend: BackendKind) -> Result<(), Error> {
        check_backend(target, backend)?;
        self.planned.push(Planned { target, backend });
        Ok(())
    }

    /// Runs every target in turn, starting each server the first time a target needs it
    /// (unless `servers` has one attached). A target that could not run is reported on stderr
    /// and kept as an errored result; the others still run.
    pub fn run(
        &self,
        servers: &mut Servers,
        traces: usize,
        writers: usize,
        seed: u64,
        save: Option<&std::path::Path>,
    ) -> Vec<TargetResult> {
        let mut results = Vec::new();
        for &Planned { target, backend } in &self.planned {
            let started = Instant::now();
            let ran = servers.backend(backend).and_then(|backend| {
                eprintln!(
                    "conform: {} on {} (seed {seed})",
                    target.name(),
                    backend.name()
                );
                let settings = Settings {
                    backend,
                    traces,
                    writers,
                    seed,
                    save: save.map(std::path::Path::to_path_buf),
                };
                target::run(target, &settings)
            });
            results.push(ran.unwrap_or_else(|error| {
                eprintln!("error: {}: {error}", target.name());
                TargetResult::errored(target, backend, seed, error, started.elapsed())
            }));
        }
        results
    }
}
