//! Conformance: the SSI engine's step events (`trace::SsiEvent`, the `ssi` vocabulary) read
//! as model steps. A failed step carries `failed` (the error it aborted with); a write whose
//! condition was false is `skipped`. Begin, Check, Record, End, AppAbort and Cleanup carry no
//! values; `Scan` reports no model action.

use loadbearing_refinement::conform::Conform;

use super::trace::SsiEvent;
use super::workload::Stmt;
use super::{Failure, Ssi, SsiAction, SsiState, Status};

impl Conform for Ssi {
    type Event = SsiEvent;

    fn reports(&self, action: &SsiAction, event: &SsiEvent) -> bool {
        let by = |t: u8| event.txn().index() == t as usize;
        match (*action, event) {
            (SsiAction::Begin(t), SsiEvent::Begin { .. })
            | (SsiAction::Check(t), SsiEvent::Check { .. })
            | (SsiAction::Record(t), SsiEvent::Record { .. })
            | (SsiAction::End(t), SsiEvent::End { .. })
            | (SsiAction::AppAbort(t), SsiEvent::AppAbort { .. })
            | (SsiAction::Cleanup(t), SsiEvent::Cleanup { .. }) => by(t),
            (
                SsiAction::Exec(t, stmt),
                SsiEvent::Read { key, .. } | SsiEvent::Write { key, .. },
            ) => {
                let (read, k) = match &self.workload.programs[t as usize][stmt as usize] {
                    Stmt::Read(k) => (true, *k),
                    Stmt::Write { key, .. } => (false, *key),
                };
                let same_kind = read == matches!(event, SsiEvent::Read { .. });
                same_kind && key == self.workload.keys[k] && by(t)
            }
            (
                SsiAction::Begin(_)
                | SsiAction::Check(_)
                | SsiAction::Record(_)
                | SsiAction::End(_)
                | SsiAction::AppAbort(_)
                | SsiAction::Cleanup(_)
                | SsiAction::Exec(..),
                SsiEvent::Begin { .. }
                | SsiEvent::Read { .. }
                | SsiEvent::Write { .. }
                | SsiEvent::Scan { .. }
                | SsiEvent::Check { .. }
                | SsiEvent::Record { .. }
                | SsiEvent::End { .. }
                | SsiEvent::AppAbort { .. }
                | SsiEvent::Cleanup { .. },
            ) => false,
        }
    }

    fn observe(&self, before: &SsiState, after: &SsiState, event: &SsiEvent) -> Result<(), String> {
        let t = event.txn().index();
        let (was, now) = (&before.txns[t], &after.txns[t]);
        let model_failed = (was.status != Status::Aborted && now.status == Status::Aborted)
            .then_some(now.failure)
            .flatten()
            .filter(|f| *f != Failure::AppAbort);
        match (event.failed(), model_failed) {
            (Some(got), Some(want)) if got != want => {
                return Err(format!(
                    "the engine failed with {}, the model with {}",
                    got.name(),
                    want.name()
                ))
            }
            (Some(got), None) => {
                return Err(format!(
                    "the engine failed with {}, the model's step succeeds",
                    got.name()
                ))
            }
            (None, Some(want)) => {
                return Err(format!(
                    "the engine's step succeeded, the model fails it with {}",
                    want.name()
                ))
            }
            _ => {}
        }
        if model_failed.is_some() {
            return Ok(());
        }
        match event {
            SsiEvent::Read { value, .. } => {
                let stmt = was.pc as usize;
                let model = now.reads[stmt];
                match value {
                    Some(v) if Some(*v as i8) != model => Err(format!(
                        "the engine read {v}, the model reads {}",
                        model.map_or("nothing".into(), |m| m.to_string())
                    )),
                    _ => Ok(()),
                }
            }
            SsiEvent::Write {
                key,
                value,
                skipped,
                ..
            } => {
                let key = self
                    .workload
                    .keys
                    .iter()
                    .position(|k| k == key)
                    .ok_or("the event writes an unknown key")?;
                let mine = |s: &SsiState| {
                    s.versions[key]
                        .iter()
                        .find(|v| v.writer as usize == t + 1)
                        .map(|v| v.value)
                };
                let wrote = mine(after) != mine(before);
                if *skipped && wrote {
                    return Err("the engine skipped the write, the model's condition holds".into());
                }
                if !skipped && !wrote && mine(after).is_none() {
                    return Err("the engine wrote, the model's condition is false".into());
                }
                match value {
                    Some(v) if mine(after) != Some(*v as i8) => Err(format!(
                        "the engine wrote {v}, the model writes {}",
                        mine(after).map_or("nothing".into(), |m| m.to_string())
                    )),
                    _ => Ok(()),
                }
            }
            SsiEvent::Begin { .. }
            | SsiEvent::Scan { .. }
            | SsiEvent::Check { .. }
            | SsiEvent::Record { .. }
            | SsiEvent::End { .. }
            | SsiEvent::AppAbort { .. }
            | SsiEvent::Cleanup { .. } => Ok(()),
        }
    }
}
