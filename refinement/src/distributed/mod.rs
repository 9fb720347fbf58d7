//! The safety and refinement check spread over timely dataflow workers, in one process or
//! many: states sharded by key, breadth-first level by level, the counterexample walked back
//! across the shards. Every worker ends with the same report, the one the single-process
//! engine gives: the same counts, verdicts and counterexamples (see `search` for how the order
//! that decides them is kept).
//!
//! Temporal properties are refused: their check needs the whole state graph in one place.

mod cluster;
mod net;
mod search;

use std::time::Instant;

use serde::de::DeserializeOwned;
use serde::Serialize;
pub use timely::worker::Worker;

pub use cluster::{read_hostfile, Cluster, ClusterError, FIRST_PORT};

use crate::budget::Limits;
use crate::check::{plan, safety_report, CheckSpec, Declared, Options, Plan, Searched, SpecError};
use crate::explore::Finding;
use crate::report::ReportOf;
use crate::spec::Spec;
use net::Net;

/// Checks `spec` of `model` on this worker's share of the states, with every other worker of
/// the run doing the same at the same time; each returns the whole report.
///
/// Every worker must make the same calls in the same order (timely builds a dataflow per call).
pub fn check_on<M>(
    worker: &mut Worker,
    model: &M,
    spec: &CheckSpec,
    options: &Options,
) -> Result<ReportOf<M>, SpecError>
where
    M: Spec,
    M::State: Serialize + DeserializeOwned + 'static,
{
    let started = Instant::now();
    let declared = Declared::of(model);
    let Plan {
        safety: checks,
        temporal,
    } = plan(model, &declared, spec)?;
    if let Some(property) = temporal.first() {
        return Err(SpecError::DistributedLiveness {
            property: property.name.to_string(),
        });
    }
    let limits = Limits {
        max_states: options.max_states,
        deadline: options.timeout.map(|t| (started + t, t)),
        max_memory: options.max_memory,
    };
    let mut net = Net::new(worker);
    let searched = search::search(
        worker,
        &mut net,
        model,
        &checks,
        &limits,
        options.progress.as_ref(),
    );

    // The paths the report shows: the finding's, or else every witness's.
    let ends: Vec<u64> = match &searched.finding {
        Some(Finding::Invariant { state, .. }) | Some(Finding::Deadlock { state }) => {
            vec![*state]
        }
        Some(Finding::Refinement { from, .. }) => vec![*from],
        Some(Finding::InitialRefinement { .. }) => Vec::new(),
        None if searched.incomplete.is_some() => Vec::new(),
        None => searched.witnesses_found.iter().flatten().copied().collect(),
    };
    let paths = search::paths(worker, &mut net, &searched.visited, &ends);
    let sizes = search::sizes(worker, &mut net, &searched);
    debug_assert_eq!(sizes.states, searched.distinct_states);
    net.close(worker);

    let (mut report, _) = safety_report(
        &checks,
        spec,
        Searched {
            distinct_states: sizes.states,
            generated: sizes.generated,
            depth: searched.depth,
            finding: searched.finding.as_ref(),
            witnesses_found: &searched.witnesses_found,
            incomplete: searched.incomplete.as_ref(),
            visited_bytes: sizes.bytes as usize,
            path_to: &|key| paths[&key].clone(),
        },
    );
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}
