//! Conformance: the SSI engine's step events read as model steps.
//!
//! `{"v":1,"actor":"T1","action":"Read","args":{"key":"bob"},"vars":{"value":1}}`; a failed step
//! carries `"vars":{"failed":"SnapshotUnsafe"}`; a write whose condition was false carries
//! `"args":{"skipped":true}`. Begin, Check, Record, End, AppAbort and Cleanup carry no values.

use loadbearing_refinement::conform::{Conform, Event};

use super::workload::Stmt;
use super::{Failure, Ssi, SsiAction, SsiState, Status};

fn txn_of(event: &Event) -> Option<usize> {
    event
        .actor
        .as_deref()?
        .strip_prefix('T')?
        .parse::<usize>()
        .ok()?
        .checked_sub(1)
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

impl Conform for Ssi {
    type Event = Event;

    fn reports(&self, action: &SsiAction, event: &Event) -> bool {
        let (name, t) = match *action {
            SsiAction::Begin(t) => ("Begin", t),
            SsiAction::Check(t) => ("Check", t),
            SsiAction::Record(t) => ("Record", t),
            SsiAction::End(t) => ("End", t),
            SsiAction::AppAbort(t) => ("AppAbort", t),
            SsiAction::Cleanup(t) => ("Cleanup", t),
            SsiAction::Exec(t, stmt) => {
                let (name, key) = match &self.workload.programs[t as usize][stmt as usize] {
                    Stmt::Read(k) => ("Read", *k),
                    Stmt::Write { key, .. } => ("Write", *key),
                };
                let same_key = event.arg_str("key") == Some(self.workload.keys[key]);
                return event.action == name && same_key && txn_of(event) == Some(t as usize);
            }
        };
        event.action == name && txn_of(event) == Some(t as usize)
    }

    fn observe(&self, before: &SsiState, after: &SsiState, event: &Event) -> Result<(), String> {
        let t = txn_of(event).ok_or("the event names no transaction")?;
        let (was, now) = (&before.txns[t], &after.txns[t]);
        let model_failed = (was.status != Status::Aborted && now.status == Status::Aborted)
            .then(|| now.failure.map(failure_name))
            .flatten()
            .filter(|f| *f != "AppAbort");
        match (event.var_str("failed"), model_failed) {
            (Some(got), Some(want)) if got != want => {
                return Err(format!(
                    "the engine failed with {got}, the model with {want}"
                ))
            }
            (Some(got), None) => {
                return Err(format!(
                    "the engine failed with {got}, the model's step succeeds"
                ))
            }
            (None, Some(want)) => {
                return Err(format!(
                    "the engine's step succeeded, the model fails it with {want}"
                ))
            }
            _ => {}
        }
        if model_failed.is_some() {
            return Ok(());
        }
        match event.action.as_str() {
            "Read" => {
                let stmt = was.pc as usize;
                let model = now.reads[stmt];
                match event.vars.get("value").and_then(serde_json::Value::as_i64) {
                    Some(v) if Some(v as i8) != model => Err(format!(
                        "the engine read {v}, the model reads {}",
                        model.map_or("nothing".into(), |m| m.to_string())
                    )),
                    _ => Ok(()),
                }
            }
            "Write" => {
                let key = self
                    .workload
                    .keys
                    .iter()
                    .position(|k| Some(*k) == event.arg_str("key"))
                    .ok_or("the event writes an unknown key")?;
                let mine = |s: &SsiState| {
                    s.versions[key]
                        .iter()
                        .find(|v| v.writer as usize == t + 1)
                        .map(|v| v.value)
                };
                let skipped = event
                    .args
                    .get("skipped")
                    .and_then(serde_json::Value::as_bool)
                    == Some(true);
                let wrote = mine(after) != mine(before);
                if skipped && wrote {
                    return Err("the engine skipped the write, the model's condition holds".into());
                }
                if !skipped && !wrote && mine(after).is_none() {
                    return Err("the engine wrote, the model's condition is false".into());
                }
                match event.args.get("value").and_then(serde_json::Value::as_i64) {
                    Some(v) if mine(after) != Some(v as i8) => Err(format!(
                        "the engine wrote {v}, the model writes {}",
                        mine(after).map_or("nothing".into(), |m| m.to_string())
                    )),
                    _ => Ok(()),
                }
            }
            _ => Ok(()),
        }
    }
}
