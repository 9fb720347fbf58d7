//! Conformance: the SSI engine's step events (`trace::SsiEvent`, the `ssi` vocabulary) read
//! as model steps. A failed step carries `failed` (the error it aborted with); a write whose
//! condition was false is `skipped`. Begin, Check, Record, End, AppAbort and Cleanup carry no
//! values; `Scan` reports no model action.

use loadbearing_trace::Conform;

use super::trace::SsiEvent;
use super::workload::Stmt;
use super::{Failure, Ssi, SsiAction, SsiState, Status};

/// Why an engine step contradicts an Ssi step: the error it failed with, or the value it read
/// or wrote.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SsiContradiction {
    #[error("the engine failed with {}, the model with {}", .got.name(), .want.name())]
    FailedOtherwise { got: Failure, want: Failure },
    #[error("the engine failed with {}, the model's step succeeds", .0.name())]
    EngineFailed(Failure),
    #[error("the engine's step succeeded, the model fails it with {}", .0.name())]
    ModelFails(Failure),
    #[error("the engine read {engine}, the model reads {}", value_or_nothing(*.model))]
    Read { engine: i64, model: Option<i8> },
    /// The key is not one of the workload's.
    #[error("the event writes an unknown key")]
    UnknownKey(String),
    #[error("the engine skipped the write, the model's condition holds")]
    SkippedButHolds,
    #[error("the engine wrote, the model's condition is false")]
    WroteButFalse,
    #[error("the engine wrote {engine}, the model writes {}", value_or_nothing(*.model))]
    Wrote { engine: i64, model: Option<i8> },
}

/// A model value as a report shows it: the number, or `nothing`.
fn value_or_nothing(value: Option<i8>) -> String {
    value.map_or("nothing".into(), |v| v.to_string())
}

impl Conform for Ssi {
    type Event = SsiEvent;
    type Contradiction = SsiContradiction;

    /// Transactions and keys the workload lacks, values past the model's 8 bits.
    fn beyond(&self, events: &[SsiEvent]) -> Option<loadbearing_trace::Beyond> {
        use loadbearing_trace::{Beyond, Bound};
        let fixed = |event: usize, what: String, bound: &'static str, most: usize| Beyond {
            event,
            what,
            bound: Bound::Fixed {
                what: bound,
                most: most as u64,
            },
        };
        events.iter().enumerate().find_map(|(i, event)| {
            let txns = self.workload.programs.len();
            if event.txn().index() >= txns {
                return Some(fixed(
                    i,
                    format!("transaction {}", event.txn()),
                    "transactions in this workload",
                    txns,
                ));
            }
            let (key, value) = match event {
                SsiEvent::Read { key, value, .. } | SsiEvent::Write { key, value, .. } => {
                    (Some(key), *value)
                }
                _ => (None, None),
            };
            if let Some(key) = key.filter(|k| !self.workload.keys.contains(k)) {
                return Some(fixed(
                    i,
                    format!("key {key:?}"),
                    "keys in this workload",
                    self.workload.keys.len(),
                ));
            }
            value.filter(|v| i8::try_from(*v).is_err()).map(|v| {
                fixed(
                    i,
                    format!("value {v}"),
                    "as the largest value (values are -128 to 127)",
                    i8::MAX as usize,
                )
            })
        })
    }

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
                    Stmt::Select(_)
                    | Stmt::Insert { .. }
                    | Stmt::Update { .. }
                    | Stmt::Delete(_) => {
                        unreachable!("{}", super::OUTSIDE_THE_MODEL)
                    }
                };
                let same_kind = read == matches!(event, SsiEvent::Read { .. });
                same_kind && *key == self.workload.keys[k] && by(t)
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

    fn observe(
        &self,
        before: &SsiState,
        after: &SsiState,
        event: &SsiEvent,
    ) -> Result<(), SsiContradiction> {
        let t = event.txn().index();
        let (was, now) = (&before.txns[t], &after.txns[t]);
        let model_failed = (was.status != Status::Aborted && now.status == Status::Aborted)
            .then_some(now.failure)
            .flatten()
            .filter(|f| *f != Failure::AppAbort);
        match (event.failed(), model_failed) {
            (Some(got), Some(want)) if got != want => {
                return Err(SsiContradiction::FailedOtherwise { got, want })
            }
            (Some(got), None) => return Err(SsiContradiction::EngineFailed(got)),
            (None, Some(want)) => return Err(SsiContradiction::ModelFails(want)),
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
                    // Compared as the engine's numbers: a value past the model's i8 never
                    // wraps into one the model holds.
                    Some(v) if Some(*v) != model.map(i64::from) => {
                        Err(SsiContradiction::Read { engine: *v, model })
                    }
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
                    .ok_or_else(|| SsiContradiction::UnknownKey(key.clone()))?;
                let mine = |s: &SsiState| {
                    s.versions[key]
                        .iter()
                        .find(|v| v.writer as usize == t + 1)
                        .map(|v| v.value)
                };
                let wrote = mine(after) != mine(before);
                if *skipped && wrote {
                    return Err(SsiContradiction::SkippedButHolds);
                }
                if !skipped && !wrote && mine(after).is_none() {
                    return Err(SsiContradiction::WroteButFalse);
                }
                match value {
                    Some(v) if mine(after).map(i64::from) != Some(*v) => {
                        Err(SsiContradiction::Wrote {
                            engine: *v,
                            model: mine(after),
                        })
                    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_the_model_lacks_reads_as_nothing() {
        let read = |model| SsiContradiction::Read { engine: 2, model }.to_string();
        assert_eq!(read(None), "the engine read 2, the model reads nothing");
        assert_eq!(read(Some(1)), "the engine read 2, the model reads 1");
        assert_eq!(
            SsiContradiction::ModelFails(Failure::SnapshotUnsafe).to_string(),
            "the engine's step succeeded, the model fails it with SnapshotUnsafe"
        );
    }
}
