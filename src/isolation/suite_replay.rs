//! `loadbearing isolation --replay-suite`: the model's counterexamples driven on real engines.
//! Every config of the `ssi` suite that must violate `Serializable` has a shortest
//! counterexample: a schedule of its workload's transactions under which the engine variant it
//! describes commits an anomaly. That schedule, as the steps an engine's API has (begin, each
//! statement, commit: `ssi_engine::engine_order`), is driven on each engine asked for. An
//! engine that promises serializable transactions must refuse it (no anomaly among what it
//! commits); snapshot isolation (PostgreSQL's REPEATABLE READ) must commit the anomaly, as
//! the variants whose schedules these are did.

use loadbearing_conform::ssi_engine::engine_order;
use loadbearing_conform::suite::counterexample;
use loadbearing_expected::suite::Expected;
use loadbearing_specs::ssi::Ssi;
use loadbearing_ssi_engine::interleave::{self, Drivable};
use loadbearing_ssi_engine::program::Script;
use serde::Serialize;

pub use super::engines::Claim;
use super::engines::{Column, OnColumn};
use super::IsolationError;

/// One engine's run of one schedule.
#[derive(Clone, Debug, Serialize)]
pub struct EngineRun {
    pub store: String,
    pub claim: Claim,
    /// How the run ended (`all commit`, `T2 40001 rw-dependencies`).
    pub outcome: String,
    /// The anomalies among what it committed (empty: serializable).
    pub anomalies: Vec<String>,
    /// The run's history could not be established from the store's records.
    pub unknown: bool,
    /// Whether it did what its claim says.
    pub ok: bool,
}

/// One must-fail config's schedule, driven on each engine.
#[derive(Clone, Debug, Serialize)]
pub struct ConfigReplay {
    pub config: String,
    pub workload: String,
    /// The schedule as engine steps (`T1 begin, T2 begin, T1 read bob, …`).
    pub schedule: String,
    pub engines: Vec<EngineRun>,
}

/// A must-fail config's counterexample as an engine schedule.
pub struct Schedule {
    pub config: String,
    pub workload: loadbearing_specs::ssi::workload::Workload,
    /// The transaction of each step in turn.
    pub order: Vec<usize>,
    /// For people: `T1 begin, T2 begin, T1 read bob, …`.
    pub text: String,
}

/// The configs of the `ssi` suite that must violate `Serializable`, each counterexample
/// checked afresh and turned into an engine schedule.
pub fn schedules() -> Result<Vec<Schedule>, IsolationError> {
    let suite = loadbearing_expected::suite::built_in_shared()
        .map_err(|e| IsolationError::Workload(e.to_string()))?;
    let configs = suite
        .iter()
        .filter(|c| c.model == <Ssi as loadbearing_specs::Configured>::NAME)
        .filter(|c| c.expected == Expected::Violates("Serializable".into()));
    let mut out = Vec::new();
    for config in configs {
        let cx = counterexample::<Ssi>(&config.name)
            .map_err(|e| IsolationError::Workload(e.to_string()))?;
        let workload = cx.model.workload.clone();
        let order = engine_order(&cx.path, &workload, cx.model.visible_at_record)
            .map_err(|why| IsolationError::Workload(format!("{}: {why}", config.name)))?;
        let script = Script::Model(workload.clone());
        let text = interleave::describe(&order, &interleave::steps(&script), &script);
        out.push(Schedule {
            config: config.name.clone(),
            workload,
            order,
            text,
        });
    }
    Ok(out)
}

/// Each schedule driven once on `store` (named `name`), judged by its claim.
pub fn run_on<S: Drivable>(
    store: &mut S,
    name: &str,
    claim: Claim,
    schedules: &[Schedule],
) -> Result<Vec<EngineRun>, IsolationError>
where
    IsolationError: From<S::Error>,
{
    let mut runs = Vec::new();
    for s in schedules {
        let (race, _, _) =
            interleave::drive(store, name, &s.workload, std::slice::from_ref(&s.order))?;
        let anomalies = race.labels();
        let unknown = race.unknown > 0;
        let ok = !unknown
            && match claim {
                Claim::Serializable => anomalies.is_empty(),
                Claim::SnapshotIsolation => !anomalies.is_empty(),
                Claim::ReadCommitted => {
                    let allowed = Claim::read_committed_allows();
                    anomalies.iter().all(|a| allowed.contains(a))
                }
            };
        runs.push(EngineRun {
            store: name.to_string(),
            claim,
            outcome: race.outcomes.keys().cloned().collect::<Vec<_>>().join(", "),
            anomalies,
            unknown,
            ok,
        });
    }
    Ok(runs)
}

/// Every schedule driven on a column's engine, held to its claim.
pub struct ReplayOn<'a>(pub &'a [Schedule]);

impl OnColumn for ReplayOn<'_> {
    type Out = Vec<EngineRun>;

    /// The suite's counterexamples tell serializable from snapshot isolation; a weaker level
    /// has nothing to show on them.
    fn takes(&self, claim: Claim) -> bool {
        claim != Claim::ReadCommitted
    }

    fn run<D: Drivable>(
        &mut self,
        column: Column,
        tier: &mut D,
    ) -> Result<Vec<EngineRun>, IsolationError>
    where
        IsolationError: From<D::Error>,
    {
        run_on(tier, column.store, column.claim, self.0)
    }
}

/// The runs of every engine (one list an engine, in schedule order) as a replay per config.
pub fn by_config(schedules: &[Schedule], engines: Vec<Vec<EngineRun>>) -> Vec<ConfigReplay> {
    schedules
        .iter()
        .enumerate()
        .map(|(i, s)| ConfigReplay {
            config: s.config.clone(),
            workload: s.workload.name.clone(),
            schedule: s.text.clone(),
            engines: engines.iter().map(|runs| runs[i].clone()).collect(),
        })
        .collect()
}

/// Whether every engine did what it promises with every schedule.
pub fn ok(replays: &[ConfigReplay]) -> bool {
    replays.iter().all(|r| r.engines.iter().all(|e| e.ok))
}

/// For people: a block per config (its schedule, then each engine's run), then the verdict.
pub fn render(replays: &[ConfigReplay]) -> String {
    let mut out = String::new();
    for r in replays {
        out.push_str(&format!("{} ({}): {}\n", r.config, r.workload, r.schedule));
        for e in &r.engines {
            let shown = if e.unknown {
                "history unknown".to_string()
            } else if e.anomalies.is_empty() {
                "serializable".to_string()
            } else {
                e.anomalies.join(", ")
            };
            out.push_str(&format!(
                "  {:<30} {:<8} {shown} ({})\n",
                e.store,
                if e.ok { "ok" } else { "FINDING" },
                e.outcome
            ));
        }
    }
    let findings: Vec<String> = replays
        .iter()
        .flat_map(|r| {
            r.engines.iter().filter(|e| !e.ok).map(move |e| {
                let must = match e.claim {
                    Claim::Serializable => "promises serializable transactions, yet committed",
                    Claim::SnapshotIsolation => "is snapshot isolation, yet refused",
                    Claim::ReadCommitted => "is READ COMMITTED, yet committed a dirty anomaly in",
                };
                format!("{} {must} the schedule of {}", e.store, r.config)
            })
        })
        .collect();
    if findings.is_empty() {
        out.push_str("\nok: every engine did with every counterexample what it promises\n");
    }
    for f in findings {
        out.push_str(&format!("FINDING: {f}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadbearing_ssi_engine::skipdb::SkipTier;

    /// skipdb refuses every counterexample, so held to snapshot isolation's promise (commit
    /// the anomaly) every run is a finding, and the verdict says so: the judge can fail.
    #[test]
    fn an_engine_held_to_the_wrong_claim_is_a_finding_on_every_schedule() {
        let schedules = schedules().unwrap();
        assert!(schedules.len() >= 10, "{}", schedules.len());
        let mut skipdb = SkipTier::new();
        let right = run_on(&mut skipdb, "skipdb", Claim::Serializable, &schedules).unwrap();
        assert!(right.iter().all(|r| r.ok), "{right:?}");
        let wrong = run_on(&mut skipdb, "skipdb", Claim::SnapshotIsolation, &schedules).unwrap();
        assert!(wrong.iter().all(|r| !r.ok), "{wrong:?}");
        let replays = by_config(&schedules, vec![wrong]);
        assert!(!ok(&replays));
        let text = render(&replays);
        assert!(
            text.contains(
                "FINDING: skipdb is snapshot isolation, yet refused the schedule of ssi_"
            ),
            "{text}"
        );
    }
}
