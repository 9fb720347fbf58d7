//! The SSI engine's adapter (`impls/ssi`, which knows nothing of the model): its knobs as the
//! model's parameters, its events and failures as the model's trace vocabulary (`ssi`,
//! `docs/trace-format.md`, written as NDJSON), its traces replayed in the model, and the model's
//! actions as the engine steps a replay takes.

use loadbearing_refinement::Model;
use loadbearing_specs::ssi::trace::{SsiEvent, Txn};
use loadbearing_specs::ssi::workload::{Stmt, Workload};
use loadbearing_specs::ssi::{self as model, Ssi, SsiAction, SsiState};
use loadbearing_ssi_engine::engine::{Failure, PastCheck, Variant};
use loadbearing_ssi_engine::judge::{Divergence, Judge};
use loadbearing_ssi_engine::program::Script;
use loadbearing_ssi_engine::replay::{replay_actions, Action, ReplayError, Replayed};
use loadbearing_ssi_engine::trace::{self as engine, EngineEvent};

/// The model's past-check predicate for the engine's.
pub fn past_check(p: PastCheck) -> model::PastCheck {
    match p {
        PastCheck::Status => model::PastCheck::Status,
        PastCheck::Published => model::PastCheck::Published,
        PastCheck::NotRunning => model::PastCheck::NotRunning,
    }
}

/// The engine variant as the model, on `workload`: the knobs one to one.
pub fn model_of(variant: Variant, workload: Workload) -> Ssi {
    Ssi {
        workload,
        past_check: past_check(variant.past_check),
        reader_site_fixed: variant.reader_site_fixed,
        optimization: variant.optimization,
        commit_check: variant.commit_check,
        drop_markers_at_commit: variant.drop_markers_at_commit,
        recheck_after_record: variant.recheck_after_record,
        plain_si: variant.plain_si,
        // The engine publishes versions at END, as the model does by default.
        visible_at_record: false,
    }
}

/// The model's name for an engine failure, as traces carry it.
pub fn failure(f: Failure) -> model::Failure {
    match f {
        Failure::SnapshotUnsafe => model::Failure::SnapshotUnsafe,
        Failure::SnapshotConflict => model::Failure::SnapshotConflict,
        Failure::WriteConflict => model::Failure::WriteConflict,
        Failure::RecheckConflict => model::Failure::RecheckConflict,
        Failure::AppAbort => model::Failure::AppAbort,
    }
}

fn txn(t: engine::Txn) -> Txn {
    Txn(t.0)
}

/// An engine event in the model's vocabulary.
pub fn event(e: &EngineEvent) -> SsiEvent {
    let failed = |f: &Option<Failure>| f.map(failure);
    match e {
        EngineEvent::Begin { txn: t } => SsiEvent::Begin { txn: txn(*t) },
        EngineEvent::Read {
            txn: t,
            key,
            value,
            failed: f,
        } => SsiEvent::Read {
            txn: txn(*t),
            key: key.clone(),
            value: *value,
            failed: failed(f),
        },
        EngineEvent::Write {
            txn: t,
            key,
            value,
            skipped,
            failed: f,
        } => SsiEvent::Write {
            txn: txn(*t),
            key: key.clone(),
            value: *value,
            skipped: *skipped,
            failed: failed(f),
        },
        EngineEvent::Scan {
            txn: t,
            page,
            rows,
            failed: f,
        } => SsiEvent::Scan {
            txn: txn(*t),
            page: *page,
            rows: rows.clone(),
            failed: failed(f),
        },
        EngineEvent::Check { txn: t, failed: f } => SsiEvent::Check {
            txn: txn(*t),
            failed: failed(f),
        },
        EngineEvent::Record { txn: t } => SsiEvent::Record { txn: txn(*t) },
        EngineEvent::End { txn: t, failed: f } => SsiEvent::End {
            txn: txn(*t),
            failed: failed(f),
        },
        EngineEvent::AppAbort { txn: t } => SsiEvent::AppAbort { txn: txn(*t) },
        EngineEvent::Cleanup { txn: t } => SsiEvent::Cleanup { txn: txn(*t) },
    }
}

/// An engine trace in the model's vocabulary.
pub fn events(trace: &[EngineEvent]) -> Vec<SsiEvent> {
    trace.iter().map(event).collect()
}

/// An engine trace as the `ssi` vocabulary's NDJSON, one event a line (the trace files of
/// `loadbearing isolation --traces`, read by `loadbearing conform --trace`).
pub fn to_ndjson(trace: &[EngineEvent]) -> String {
    loadbearing_trace::to_ndjson(&events(trace))
}

/// A trace that fits: the model path and the model state it ends in.
#[derive(Clone, Debug)]
pub struct Conforms {
    pub path: Vec<String>,
    pub state: SsiState,
}

/// Checks `events` against `model` with the project's generic trace checker
/// (`loadbearing_trace`, reading events through the SSI model's adapter in
/// `loadbearing_specs::ssi::conform`); the final model state is the end of the typed witness.
pub fn validate(model: &Ssi, events: &[SsiEvent]) -> Result<Conforms, Divergence> {
    let loadbearing_trace::Validated { verdict, path } =
        loadbearing_trace::validate_path(model, events, loadbearing_trace::Limits::default());
    if let Some(d) = verdict.divergence {
        let tried = d.tried.first();
        let why: Vec<String> = tried
            .map(|t| {
                t.allowed
                    .iter()
                    .filter(|a| a.why_not != "the event reports another action")
                    .map(|a| format!("{}: {}", a.action, a.why_not))
                    .collect()
            })
            .unwrap_or_default();
        return Err(Divergence {
            matched: d.matched,
            event: d.as_written,
            why: if why.is_empty() {
                format!("no action the model enables reports `{}`", d.action)
            } else {
                why.join("; ")
            },
            allowed: tried
                .map(|t| t.allowed.iter().map(|a| a.action.clone()).collect())
                .unwrap_or_default(),
            prefix: d.prefix,
        });
    }
    // A trace that fits has a witness: the typed path ends in the model state it leaves.
    let state = match &path {
        Some(path) => path.last_state().clone(),
        None => model
            .init_states()
            .into_iter()
            .next()
            .expect("the SSI model has one initial state"),
    };
    let path = verdict.witness.unwrap_or_default();
    Ok(Conforms { path, state })
}

/// An engine trace checked against `model` (see [`validate`]).
pub fn validate_engine(model: &Ssi, trace: &[EngineEvent]) -> Result<Conforms, Divergence> {
    validate(model, &events(trace))
}

/// The model's committed value of every key, by name.
pub fn committed(model: &Ssi, s: &SsiState) -> Vec<(String, i64)> {
    model
        .workload
        .keys
        .iter()
        .zip(model.committed_state(s))
        .map(|(k, v)| (k.to_string(), i64::from(v)))
        .collect()
}

/// The engine step a model action takes: for a statement, the read or write of the key the
/// model's workload names there.
pub fn action(model: &Ssi, action: &SsiAction) -> Action {
    let txn = |t: u8| t as usize;
    match *action {
        SsiAction::Begin(t) => Action::Begin(txn(t)),
        SsiAction::Exec(t, stmt) => {
            let key = |k: usize| model.workload.keys[k].to_string();
            match &model.workload.programs[txn(t)][stmt as usize] {
                Stmt::Read(k) => Action::Read(txn(t), key(*k)),
                Stmt::Write { key: k, .. } => Action::Write(txn(t), key(*k)),
                Stmt::Select(_) | Stmt::Insert { .. } | Stmt::Update { .. } | Stmt::Delete(_) => {
                    unreachable!("{}", loadbearing_specs::ssi::OUTSIDE_THE_MODEL)
                }
            }
        }
        SsiAction::Check(t) => Action::Check(txn(t)),
        SsiAction::Record(t) => Action::Record(txn(t)),
        SsiAction::End(t) => Action::End(txn(t)),
        SsiAction::AppAbort(t) => Action::AppAbort(txn(t)),
        SsiAction::Cleanup(t) => Action::Cleanup(txn(t)),
    }
}

/// Drives the model's own `actions` (a path of `model`) through a fresh engine of `variant`
/// running `script`, as `replay::replay` drives their names.
pub fn replay_path(
    script: &Script,
    variant: Variant,
    model: &Ssi,
    actions: &[SsiAction],
) -> Result<Replayed, ReplayError> {
    let steps: Vec<Action> = actions.iter().map(|a| action(model, a)).collect();
    replay_actions(script, variant, &steps)
}

/// The tier's and the race's judge: every engine trace replayed in the model of the engine's
/// variant on the workload it ran.
#[derive(Clone, Copy, Debug, Default)]
pub struct ModelJudge;

impl Judge for ModelJudge {
    fn judge(
        &self,
        variant: Variant,
        workload: &Workload,
        trace: &[EngineEvent],
    ) -> Result<(), Divergence> {
        validate_engine(&model_of(variant, workload.clone()), trace).map(|_| ())
    }
}

/// A model path's schedule as the steps an engine's API has: each transaction's `Begin`, its
/// statements and its commit, in the order the path takes them, as the transaction of each
/// step in turn (`impls/ssi`'s `interleave::schedule`). The model's check, commit record and
/// `End` are one commit on an engine, placed where the model makes the transaction's versions
/// visible: at `End`, or at the commit record where the model publishes there
/// (`visible_at_record`, libdb's order). A transaction the path leaves unfinished finishes
/// after it, in transaction order. A path that aborts a transaction on the application's word
/// has no such schedule.
pub fn engine_order(
    path: &[SsiAction],
    workload: &Workload,
    visible_at_record: bool,
) -> Result<Vec<usize>, String> {
    let txns = workload.programs.len();
    // Steps each transaction has taken: Begin, then its statements, then its commit.
    let mut taken = vec![0usize; txns];
    let total = |t: usize| workload.programs[t].len() + 2;
    let mut order = Vec::new();
    for action in path {
        let (t, step) = match *action {
            SsiAction::Begin(t) => (t as usize, 0),
            SsiAction::Exec(t, i) => (t as usize, i as usize + 1),
            SsiAction::End(t) if !visible_at_record => (t as usize, total(t as usize) - 1),
            SsiAction::Record(t) if visible_at_record => (t as usize, total(t as usize) - 1),
            SsiAction::Check(_) | SsiAction::Record(_) | SsiAction::End(_) => continue,
            SsiAction::AppAbort(t) | SsiAction::Cleanup(t) => {
                return Err(format!(
                    "T{} aborts on the application's word, which no engine step expresses",
                    t + 1
                ))
            }
        };
        if taken[t] != step {
            return Err(format!("{action:?} out of T{}'s order", t + 1));
        }
        taken[t] += 1;
        order.push(t);
    }
    for (t, &done) in taken.iter().enumerate() {
        order.extend(std::iter::repeat_n(t, total(t) - done));
    }
    Ok(order)
}

#[cfg(test)]
mod tests {

    /// The model's check, record and end are one engine commit, placed where the model
    /// publishes the versions; an application abort has no engine schedule.
    #[test]
    fn a_model_path_becomes_engine_steps_with_the_commit_where_versions_show() {
        use loadbearing_specs::ssi::SsiAction::*;
        let w = loadbearing_specs::ssi::workload::named("write_skew").unwrap();
        let path = [
            Begin(0),
            Exec(0, 0),
            Exec(0, 1),
            Check(0),
            Record(0),
            Begin(1),
            End(0),
        ];
        assert_eq!(
            super::engine_order(&path, &w, false).unwrap(),
            [0, 0, 0, 1, 0, 1, 1, 1]
        );
        assert_eq!(
            super::engine_order(&path, &w, true).unwrap(),
            [0, 0, 0, 0, 1, 1, 1, 1]
        );
        let aborted = [Begin(0), AppAbort(0)];
        assert!(super::engine_order(&aborted, &w, false)
            .unwrap_err()
            .contains("application"));
    }
    use super::*;
    use loadbearing_trace::{parse_ndjson, TraceEvent};

    #[test]
    fn engine_events_serialize_in_the_agreed_shape_and_read_back() {
        let read = EngineEvent::Read {
            txn: engine::Txn(0),
            key: "bob".into(),
            value: Some(1),
            failed: None,
        };
        assert_eq!(
            event(&read).to_line(),
            r#"{"v":2,"vocabulary":"ssi","action":"Read","txn":"T1","key":"bob","value":1}"#
        );
        let begin = EngineEvent::Begin {
            txn: engine::Txn(0),
        };
        assert_eq!(
            event(&begin).to_line(),
            r#"{"v":2,"vocabulary":"ssi","action":"Begin","txn":"T1"}"#
        );
        let text = to_ndjson(&[begin.clone(), read.clone()]);
        assert_eq!(
            parse_ndjson::<SsiEvent>(&text).unwrap(),
            vec![event(&begin), event(&read)]
        );
        assert!(parse_ndjson::<SsiEvent>("{")
            .unwrap_err()
            .to_string()
            .starts_with("line 1"));
    }

    #[test]
    fn every_engine_step_is_traced_in_the_model_vocabulary_and_misuse_emits_nothing() {
        use loadbearing_ssi_engine::engine::{Engine, Error, Layout};
        use loadbearing_ssi_engine::trace::Recorder;
        let rec = Recorder::new();
        let e = Engine::new(Variant::FIX, Layout::new()).with_tracer(rec.clone());
        e.load("x", 0);
        let t = e.begin("T1");
        t.read("x").unwrap();
        t.skip_write("x").unwrap();
        assert!(matches!(t.record(), Err(Error::NotAllowed(_))));
        t.abort().unwrap();
        assert!(matches!(t.check(), Err(Error::NotAllowed(_))));
        t.cleanup().unwrap();
        let lines: Vec<String> = events(&rec.events())
            .iter()
            .map(TraceEvent::to_line)
            .collect();
        assert_eq!(
            lines,
            [
                r#"{"v":2,"vocabulary":"ssi","action":"Begin","txn":"T1"}"#,
                r#"{"v":2,"vocabulary":"ssi","action":"Read","txn":"T1","key":"x","value":0}"#,
                r#"{"v":2,"vocabulary":"ssi","action":"Write","txn":"T1","key":"x","skipped":true}"#,
                r#"{"v":2,"vocabulary":"ssi","action":"AppAbort","txn":"T1"}"#,
                r#"{"v":2,"vocabulary":"ssi","action":"Cleanup","txn":"T1"}"#,
            ]
        );
    }

    #[test]
    fn the_trigger_on_the_fixed_engine_fits_its_model_every_time() {
        use loadbearing_ssi_engine::tier::{run_engine, scenario};
        let trigger = scenario("write_skew_trigger").unwrap();
        let fix = run_engine(&trigger, "fix", 5, 20, Some(&ModelJudge));
        assert_eq!(fix.violations, 0);
        assert_eq!(fix.conforming, Some((5, 5)), "{fix:?}");
    }

    #[test]
    fn racing_the_lost_update_on_the_fix_every_trace_fits() {
        use loadbearing_ssi_engine::race::race_engine;
        let w = loadbearing_specs::ssi::workload::named("lost_update").unwrap();
        let race = race_engine(&w, "fix", 20, 50, Some(&ModelJudge));
        assert!(race.problems(&[]).is_empty(), "{race:?}");
        assert_eq!(race.conforming, Some((20, 20)));
    }
}
