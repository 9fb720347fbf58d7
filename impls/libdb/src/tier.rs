//! The isolation tier on real libdb: the tier's scenarios (`loadbearing_ssi_engine::tier`) on
//! each flavour, one thread per transaction with the timing each scenario names, plus the
//! write-skew scenarios again in the one-btree shape (`write_skew_samebtree_*`). Every history
//! is judged by the serializability oracle, and every trace of a model workload is replayed in
//! the SSI model of the flavour's variant.

use std::time::Duration;

use loadbearing_specs::ssi::workload::{Stmt, Workload};
use loadbearing_specs::ssi::Ssi;
use loadbearing_ssi_engine::conform;
use loadbearing_ssi_engine::engine::Variant;
use loadbearing_ssi_engine::program::{script, Outcome, Script};
use loadbearing_ssi_engine::race::{self, Race};
use loadbearing_ssi_engine::tier::{
    attempt_seed, history_text, run_all, scenarios, Scenario, Schedule, Tally,
};
use loadbearing_ssi_engine::trace::SsiEvent;

use crate::db::Flavour;
use crate::store::{SetupError, Shape, Store};

/// The write-skew timings that also run in the one-btree shape.
const SAME_BTREE: [&str; 3] = [
    "write_skew_control",
    "write_skew_trigger",
    "write_skew_late",
];

/// A scenario of the libdb tier: one of the tier's, in a shape.
#[derive(Clone, Debug)]
pub struct LibdbScenario {
    pub scenario: Scenario,
    pub shape: Shape,
}

impl LibdbScenario {
    /// As the report names it: the tier's name, `write_skew` read `write_skew_samebtree` in the
    /// one-btree shape.
    pub fn name(&self) -> String {
        match self.shape {
            Shape::Databases => self.scenario.name.to_string(),
            Shape::OneBtree => self
                .scenario
                .name
                .replacen("write_skew", "write_skew_samebtree", 1),
        }
    }
}

/// Every scenario of the libdb tier, in report order: the tier's, then the same-btree ones.
pub fn libdb_scenarios() -> Vec<LibdbScenario> {
    let all = scenarios();
    let mut out: Vec<LibdbScenario> = all
        .iter()
        .map(|s| LibdbScenario {
            scenario: s.clone(),
            shape: Shape::Databases,
        })
        .collect();
    out.extend(
        all.iter()
            .filter(|s| SAME_BTREE.contains(&s.name))
            .map(|s| LibdbScenario {
                scenario: s.clone(),
                shape: Shape::OneBtree,
            }),
    );
    out
}

/// One attempt on libdb.
pub struct LibdbAttempt {
    pub outcome: Outcome,
    pub trace: Vec<SsiEvent>,
    /// Waits that timed out (the named timing was not realized).
    pub timeouts: usize,
}

/// The SSI model of a flavour's variant on `script`'s workload (None for the predicate one),
/// with versions published at the commit record, as libdb publishes them (`VisibleAtRecord`).
pub fn model_of(flavour: Flavour, script: &Script) -> Option<Ssi> {
    let variant = Variant::named(flavour.variant()).expect("each flavour is an engine variant");
    match script {
        Script::Model(w) => Some(Ssi {
            visible_at_record: true,
            ..variant.model(w.clone())
        }),
        Script::Predicate(_) => None,
    }
}

/// Two different keys written on one model page: libdb write-locks and versions the whole
/// page, so the second writer fails `DB_LOCK_NOTGRANTED` (or, once the first committed after
/// its snapshot, `DB_LOCK_DEADLOCK`) where the model's first-updater-wins, per key, lets it
/// write. Such a workload's traces are outside the model on libdb and are not validated (the
/// tier reports them as such; tests/tier.rs observes the page lock).
pub fn writes_share_a_page(script: &Script) -> bool {
    let Script::Model(w) = script else {
        return false;
    };
    let mut written = std::collections::BTreeMap::new();
    w.programs.iter().flatten().any(|stmt| match stmt {
        Stmt::Write { key, .. } => {
            // A second written key on a page already holding one.
            *written.entry(w.pages[*key]).or_insert(*key) != *key
        }
        Stmt::Read(_) => false,
    })
}

/// The model a trace of `script` on `flavour` is validated against: the flavour's, unless the
/// workload has none (the predicate one) or is outside the model on libdb
/// ([`writes_share_a_page`]).
pub fn checked_model(flavour: Flavour, script: &Script) -> Option<Ssi> {
    if writes_share_a_page(script) {
        return None;
    }
    model_of(flavour, script)
}

/// The schedule of one attempt of `scenario`: its waits, seeded jitter around them.
pub fn schedule(scenario: &Scenario, seed: u64, jitter_us: u64) -> Schedule {
    Schedule::new(
        scenario.waits.clone(),
        Duration::from_secs(10),
        jitter_us,
        seed,
    )
}

/// Runs `scenario` once on a fresh environment of `flavour`, its keys in `shape`, each
/// transaction on its own thread under `sched`.
pub fn attempt(
    scenario: &Scenario,
    shape: Shape,
    flavour: Flavour,
    sched: &Schedule,
) -> Result<LibdbAttempt, SetupError> {
    let script = script(scenario.script).expect("scenarios name known scripts");
    let store = Store::new(flavour, &script, shape)?;
    let conns = (0..script.txn_count()).map(|t| store.conn(t)).collect();
    let (results, observed) = run_all(&script, scenario, sched, conns);
    let state = store.state(&script)?;
    Ok(LibdbAttempt {
        outcome: Outcome::judge(&script, results, observed, state),
        trace: store.events(),
        timeouts: sched.timeouts(),
    })
}

/// `attempts` attempts of `scenario` on `flavour`, tallied under the flavour's name.
pub fn run(
    scenario: &LibdbScenario,
    flavour: Flavour,
    attempts: usize,
    jitter_us: u64,
) -> Result<Tally, SetupError> {
    let mut tally = Tally::new(&scenario.name(), flavour.name());
    let script = script(scenario.scenario.script).expect("scenarios name known scripts");
    let model = checked_model(flavour, &script);
    for i in 0..attempts {
        let sched = schedule(&scenario.scenario, attempt_seed(i), jitter_us);
        let a = attempt(&scenario.scenario, scenario.shape, flavour, &sched)?;
        tally.add(&a.outcome, || history_text(&a.trace, &a.outcome));
        tally.timeouts += a.timeouts;
        if tally.first_trace.is_none() {
            tally.first_trace = Some(a.trace.clone());
        }
        if let Some(model) = &model {
            tally.add_conformance(&conform::validate(model, &a.trace).map(|_| ()));
        }
    }
    Ok(tally)
}

/// `attempts` free races of a workload file's transactions on `flavour`, each page its own
/// btree, each history classified from libdb's own records (the writer packed in each record,
/// the version order the trace's END order); every trace replayed in the flavour's model unless
/// the workload is outside it ([`writes_share_a_page`]).
pub fn race(
    workload: &Workload,
    flavour: Flavour,
    attempts: usize,
    jitter_us: u64,
) -> Result<Race, SetupError> {
    let script = Script::Model(workload.clone());
    let model = checked_model(flavour, &script);
    let scenario = race::free_race();
    let keys: Vec<String> = workload.keys.iter().map(|k| k.to_string()).collect();
    let mut out = Race::new(flavour.name());
    for i in 0..attempts {
        let sched = race::schedule(i, jitter_us);
        let store = Store::new(flavour, &script, Shape::Databases)?;
        let conns = (0..script.txn_count()).map(|t| store.conn(t)).collect();
        let (results, observed) = run_all(&script, &scenario, &sched, conns);
        let state = store.state(&script)?;
        let trace = store.events();
        let history = race::logged_history(
            &script,
            workload,
            &results,
            &observed,
            &store.reads(),
            race::by_end_order(&trace, &keys),
        );
        let outcome = Outcome::judge(&script, results, observed, state);
        out.add(&outcome, history, || history_text(&trace, &outcome));
        if let Some(model) = &model {
            out.add_conformance(&conform::validate(model, &trace).map(|_| ()));
        }
    }
    Ok(out)
}

/// What every attempt of a scenario must end with, on a flavour: the outcome summary the
/// tier prints (`T1 DB_SNAPSHOT_CONFLICT`, `all commit`).
fn every(
    tallies: &[Tally],
    store: &str,
    scenario: &str,
    outcome: &str,
    failures: &mut Vec<String>,
) {
    let Some(t) = tallies
        .iter()
        .find(|t| t.store == store && t.scenario == scenario)
    else {
        return;
    };
    let n = t.outcomes.get(outcome).copied().unwrap_or(0);
    if n != t.attempts {
        failures.push(format!(
            "{store}: {scenario} ended `{outcome}` in {n} of {} attempts ({})",
            t.attempts,
            t.typical()
        ));
    }
}

/// What each libdb flavour must show for the tier to pass; `Err` lists what it did not.
///
/// - `libdb-prefix` commits the #136 write skew on every trigger attempt, in both shapes;
/// - `libdb-fix` never commits a non-serializable history, and refuses T2's write with
///   `DB_SNAPSHOT_UNSAFE` on every trigger attempt, in both shapes;
/// - on every flavour, control timing fails T1's commit `DB_SNAPSHOT_CONFLICT` and late timing
///   fails T2's write `DB_SNAPSHOT_UNSAFE`, in both shapes;
/// - every trace of a model workload fits the flavour's model.
///
/// `libdb-readerunfixed` has no verdict of its own beyond the shared ones: what it does at the
/// reader site is what the tier reports.
pub fn musts(tallies: &[Tally]) -> Vec<String> {
    let mut failures = Vec::new();
    let shapes = ["write_skew", "write_skew_samebtree"];
    for shape in shapes {
        let trigger = format!("{shape}_trigger");
        if let Some(t) = tallies
            .iter()
            .find(|t| t.store == Flavour::Prefix.name() && t.scenario == trigger)
        {
            if t.violations != t.attempts {
                failures.push(format!(
                    "libdb-prefix: {trigger} committed the write skew in {} of {} attempts",
                    t.violations, t.attempts
                ));
            }
        }
        every(
            tallies,
            Flavour::Fix.name(),
            &trigger,
            "T2 DB_SNAPSHOT_UNSAFE",
            &mut failures,
        );
        for flavour in Flavour::ALL {
            let control = format!("{shape}_control");
            every(
                tallies,
                flavour.name(),
                &control,
                "T1 DB_SNAPSHOT_CONFLICT",
                &mut failures,
            );
            let late = format!("{shape}_late");
            every(
                tallies,
                flavour.name(),
                &late,
                "T2 DB_SNAPSHOT_UNSAFE",
                &mut failures,
            );
        }
    }
    for t in tallies
        .iter()
        .filter(|t| t.store == Flavour::Fix.name() && t.violations > 0)
    {
        failures.push(format!(
            "libdb-fix: {} non-serializable histories in {}",
            t.violations, t.scenario
        ));
    }
    for t in tallies.iter().filter(|t| t.store.starts_with("libdb-")) {
        if let Some((ok, n)) = t.conforming {
            if ok != n {
                failures.push(format!(
                    "{} {}: {} of {n} traces do not fit the model ({})",
                    t.store,
                    t.scenario,
                    n - ok,
                    t.example_divergence.as_deref().unwrap_or("")
                ));
            }
        }
    }
    failures
}
