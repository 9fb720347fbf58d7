//! Engine → model: an engine trace replayed in the SSI model, event by event.
//!
//! The model is deterministic once the action is known, and every engine event names its model
//! action (`Read`/`Write` are the transaction's next `Exec`), so conformance is exact: each
//! event must be an action the model enables in the state reached so far, and what the engine
//! observed — the value read, the error kind, a skipped write, the value written — must be what
//! the model's step produced. A trace that fits yields the model path it follows; one that does
//! not yields the longest matched prefix, the event, and what the model allowed instead.

use std::fmt;

use loadbearing_specs::ssi::serial;
use loadbearing_specs::ssi::workload::{eval, Stmt};
use loadbearing_specs::ssi::{Failure, Ssi, SsiAction, SsiState, Status};
use stateright::Model;

use crate::trace::Event;

/// Why a trace is not a behaviour of the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// Events matched before this one.
    pub matched: usize,
    pub event: String,
    pub why: String,
    /// The model actions enabled where the event could not be matched.
    pub allowed: Vec<String>,
    /// The model path of the matched prefix.
    pub prefix: Vec<String>,
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "event {} `{}` does not fit the model: {}",
            self.matched + 1,
            self.event,
            self.why
        )?;
        writeln!(f, "  the model allowed: {}", self.allowed.join(", "))?;
        write!(f, "  matched prefix: {}", self.prefix.join(", "))
    }
}

/// A trace that fits: the model path and the model state it ends in.
#[derive(Clone, Debug)]
pub struct Conforms {
    pub path: Vec<String>,
    pub state: SsiState,
}

fn failure_name(f: Failure) -> &'static str {
    match f {
        Failure::SnapshotConflict => "SnapshotConflict",
        Failure::SnapshotUnsafe => "SnapshotUnsafe",
        Failure::WriteConflict => "WriteConflict",
        Failure::AppAbort => "AppAbort",
        Failure::RecheckConflict => "RecheckConflict",
    }
}

/// Replays `events` in `model` from its initial state.
pub fn validate(model: &Ssi, events: &[Event]) -> Result<Conforms, Divergence> {
    let mut state = model
        .init_states()
        .into_iter()
        .next()
        .expect("the SSI model has one initial state");
    let mut path: Vec<String> = Vec::new();
    for (i, event) in events.iter().enumerate() {
        let mut enabled = Vec::new();
        model.actions(&state, &mut enabled);
        let diverge = |why: String| Divergence {
            matched: i,
            event: event.to_line(),
            why,
            allowed: enabled.iter().map(|a| model.format_action(a)).collect(),
            prefix: path.clone(),
        };
        let action = to_action(model, &state, event).map_err(diverge)?;
        if !enabled.contains(&action) {
            return Err(diverge(format!(
                "{} is not enabled here",
                model.format_action(&action)
            )));
        }
        let next = model
            .next_state(&state, action)
            .expect("every SSI action has a successor");
        observe(model, &state, &next, action, event).map_err(diverge)?;
        path.push(model.format_action(&action));
        state = next;
    }
    Ok(Conforms { path, state })
}

fn to_action(model: &Ssi, s: &SsiState, event: &Event) -> Result<SsiAction, String> {
    let t = event
        .actor
        .strip_prefix('T')
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|n| (1..=model.workload.programs.len()).contains(n))
        .ok_or_else(|| format!("no transaction `{}` in the workload", event.actor))?
        - 1;
    let id = t as u8;
    Ok(match event.action.as_str() {
        "Begin" => SsiAction::Begin(id),
        "Read" | "Write" => {
            let pc = s.txns[t].pc as usize;
            let program = &model.workload.programs[t];
            let Some(stmt) = program.get(pc) else {
                return Err(format!("T{} has no statement left", t + 1));
            };
            let (kind, key) = match stmt {
                Stmt::Read(k) => ("Read", *k),
                Stmt::Write { key, .. } => ("Write", *key),
            };
            let name = model.workload.keys[key];
            if kind != event.action || event.key() != Some(name) {
                return Err(format!(
                    "T{}'s statement {pc} is {kind}({name}), the event is {}({})",
                    t + 1,
                    event.action,
                    event.key().unwrap_or("?")
                ));
            }
            SsiAction::Exec(id, pc as u8)
        }
        "Check" => SsiAction::Check(id),
        "Record" => SsiAction::Record(id),
        "End" => SsiAction::End(id),
        "AppAbort" => SsiAction::AppAbort(id),
        "Cleanup" => SsiAction::Cleanup(id),
        other => return Err(format!("`{other}` is no action of the SSI model")),
    })
}

fn observe(
    model: &Ssi,
    before: &SsiState,
    after: &SsiState,
    action: SsiAction,
    event: &Event,
) -> Result<(), String> {
    let t = match action {
        SsiAction::Begin(t)
        | SsiAction::Exec(t, _)
        | SsiAction::Check(t)
        | SsiAction::Record(t)
        | SsiAction::End(t)
        | SsiAction::AppAbort(t)
        | SsiAction::Cleanup(t) => t as usize,
    };
    let (was, now) = (&before.txns[t], &after.txns[t]);
    // An error: the model must have aborted the transaction in this step, for the same reason.
    let model_failed = was.status == Status::Running
        && now.status == Status::Aborted
        && !matches!(action, SsiAction::AppAbort(_));
    let model_error = model_failed.then(|| now.failure.map(failure_name).unwrap_or("?"));
    if model_error != event.failed() {
        return Err(format!(
            "the engine {}, the model {}",
            event
                .failed()
                .map_or("succeeded".to_string(), |f| format!("failed {f}")),
            model_error.map_or("succeeded".to_string(), |f| format!("failed {f}"))
        ));
    }
    if model_failed {
        return Ok(());
    }
    if let SsiAction::Exec(_, pc) = action {
        let pc = pc as usize;
        match &model.workload.programs[t][pc] {
            Stmt::Read(_) => {
                let model_value = now.reads[pc].map(i64::from);
                let engine_value = event.vars.get("value").and_then(serde_json::Value::as_i64);
                if model_value != engine_value {
                    return Err(format!(
                        "read {engine_value:?}, the model read {model_value:?}"
                    ));
                }
            }
            Stmt::Write { value, only_if, .. } => {
                let program = &model.workload.programs[t];
                let last = |k: usize| serial::last_read(program, &was.reads, pc, k);
                let writes = only_if.is_none_or(|(k, v)| last(k) == v);
                if event.skipped() == writes {
                    return Err(format!(
                        "the engine {} the write, the model {}",
                        if event.skipped() { "skipped" } else { "made" },
                        if writes { "made it" } else { "skipped it" }
                    ));
                }
                if writes {
                    let model_value = i64::from(eval(value, &last));
                    let engine_value = event.args.get("value").and_then(serde_json::Value::as_i64);
                    if engine_value != Some(model_value) {
                        return Err(format!(
                            "wrote {engine_value:?}, the model wrote {model_value}"
                        ));
                    }
                }
            }
        }
    }
    Ok(())
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
