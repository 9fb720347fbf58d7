//! Step events: the engine reports each step it takes from inside its critical section, so the
//! order of the events is a linearization of the run.
//!
//! The events are the engine's own ([`EngineEvent`]), in the engine's terms (its [`Failure`]s,
//! its transaction indices); the engine knows nothing of any model. Reading them as the SSI
//! model's trace vocabulary (the `ssi` vocabulary of `docs/trace-format.md`) and writing that
//! as NDJSON is the conformance adapter's work (`loadbearing_conform::ssi_engine`).
//!
//! `Scan` (a predicate read of a whole page) is a step the model's statements cannot express.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

/// Why a transaction aborted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Failure {
    SnapshotUnsafe,
    SnapshotConflict,
    WriteConflict,
    RecheckConflict,
    AppAbort,
}

impl Failure {
    pub fn name(self) -> &'static str {
        match self {
            Failure::SnapshotUnsafe => "SnapshotUnsafe",
            Failure::SnapshotConflict => "SnapshotConflict",
            Failure::WriteConflict => "WriteConflict",
            Failure::RecheckConflict => "RecheckConflict",
            Failure::AppAbort => "AppAbort",
        }
    }

    /// An abort decided by the serializability machinery (not first-updater-wins, not the app).
    pub fn is_ssi(self) -> bool {
        matches!(
            self,
            Failure::SnapshotUnsafe | Failure::SnapshotConflict | Failure::RecheckConflict
        )
    }
}

/// A transaction by index (`T1` is transaction 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Txn(pub u8);

impl Txn {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for Txn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "T{}", self.0 as u16 + 1)
    }
}

/// One engine step. `failed` names the error a failed step aborted its transaction with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EngineEvent {
    Begin {
        txn: Txn,
    },
    /// A read of `key`; `value` is what it saw (None: nothing).
    Read {
        txn: Txn,
        key: String,
        value: Option<i64>,
        failed: Option<Failure>,
    },
    /// A write of `value` to `key`, or, `skipped`, a conditional write whose condition was
    /// false.
    Write {
        txn: Txn,
        key: String,
        value: Option<i64>,
        skipped: bool,
        failed: Option<Failure>,
    },
    /// A predicate read of a whole page.
    Scan {
        txn: Txn,
        page: u64,
        rows: Option<BTreeMap<String, i64>>,
        failed: Option<Failure>,
    },
    /// CHECK: the commit-time pivot check (fails `SnapshotConflict`).
    Check {
        txn: Txn,
        failed: Option<Failure>,
    },
    /// The durable commit record.
    Record {
        txn: Txn,
    },
    /// END: status := COMMITTED (option 2's re-check fails `RecheckConflict`).
    End {
        txn: Txn,
        failed: Option<Failure>,
    },
    AppAbort {
        txn: Txn,
    },
    Cleanup {
        txn: Txn,
    },
}

impl EngineEvent {
    pub fn txn(&self) -> Txn {
        match *self {
            EngineEvent::Begin { txn }
            | EngineEvent::Read { txn, .. }
            | EngineEvent::Write { txn, .. }
            | EngineEvent::Scan { txn, .. }
            | EngineEvent::Check { txn, .. }
            | EngineEvent::Record { txn }
            | EngineEvent::End { txn, .. }
            | EngineEvent::AppAbort { txn }
            | EngineEvent::Cleanup { txn } => txn,
        }
    }

    /// The step's name.
    pub fn action(&self) -> &'static str {
        match self {
            EngineEvent::Begin { .. } => "Begin",
            EngineEvent::Read { .. } => "Read",
            EngineEvent::Write { .. } => "Write",
            EngineEvent::Scan { .. } => "Scan",
            EngineEvent::Check { .. } => "Check",
            EngineEvent::Record { .. } => "Record",
            EngineEvent::End { .. } => "End",
            EngineEvent::AppAbort { .. } => "AppAbort",
            EngineEvent::Cleanup { .. } => "Cleanup",
        }
    }

    /// The error a failed step aborted with.
    pub fn failed(&self) -> Option<Failure> {
        match *self {
            EngineEvent::Read { failed, .. }
            | EngineEvent::Write { failed, .. }
            | EngineEvent::Scan { failed, .. }
            | EngineEvent::Check { failed, .. }
            | EngineEvent::End { failed, .. } => failed,
            EngineEvent::Begin { .. }
            | EngineEvent::Record { .. }
            | EngineEvent::AppAbort { .. }
            | EngineEvent::Cleanup { .. } => None,
        }
    }

    /// A short human form: `T2 Write(bob=0) failed SnapshotUnsafe`.
    pub fn brief(&self) -> String {
        let mut s = format!("{} {}", self.txn(), self.action());
        match self {
            EngineEvent::Read {
                key, value, failed, ..
            } => {
                s += &format!("({key})");
                // A read that succeeded saw a value or nothing; a failed one saw neither.
                if failed.is_none() {
                    s += &format!(" -> {}", value.map_or("null".into(), |v| v.to_string()));
                }
            }
            EngineEvent::Write {
                key, skipped: true, ..
            } => s += &format!("({key}, skipped)"),
            EngineEvent::Write {
                key,
                value: Some(v),
                ..
            } => s += &format!("({key}={v})"),
            EngineEvent::Write { key, .. } => s += &format!("({key})"),
            EngineEvent::Scan { page, rows, .. } => {
                s += &format!("(page {page})");
                if let Some(rows) = rows {
                    let shown: Vec<String> =
                        rows.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
                    s += &format!(" -> {{{}}}", shown.join(","));
                }
            }
            EngineEvent::Begin { .. }
            | EngineEvent::Check { .. }
            | EngineEvent::Record { .. }
            | EngineEvent::End { .. }
            | EngineEvent::AppAbort { .. }
            | EngineEvent::Cleanup { .. } => {}
        }
        if let Some(f) = self.failed() {
            s += &format!(" failed {}", f.name());
        }
        s
    }
}

/// Receives step events (called with the engine's conflict mutex held). The default does
/// nothing, so tracing costs nothing unless asked.
pub trait Tracer: Send + Sync {
    fn step(&self, _event: &EngineEvent) {}
}

/// Drops every event.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoTrace;

impl Tracer for NoTrace {}

/// Keeps every event, in order.
#[derive(Debug, Default)]
pub struct Recorder {
    events: Mutex<Vec<EngineEvent>>,
}

impl Recorder {
    pub fn new() -> Arc<Self> {
        Arc::new(Recorder::default())
    }

    pub fn events(&self) -> Vec<EngineEvent> {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Tracer for Recorder {
    fn step(&self, event: &EngineEvent) {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(event.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brief_names_the_transaction_the_step_and_what_it_saw() {
        let read = EngineEvent::Read {
            txn: Txn(0),
            key: "bob".into(),
            value: Some(1),
            failed: None,
        };
        assert_eq!(read.brief(), "T1 Read(bob) -> 1");
        let write = EngineEvent::Write {
            txn: Txn(1),
            key: "bob".into(),
            value: Some(0),
            skipped: false,
            failed: Some(Failure::SnapshotUnsafe),
        };
        assert_eq!(write.brief(), "T2 Write(bob=0) failed SnapshotUnsafe");
        assert_eq!(EngineEvent::Begin { txn: Txn(2) }.brief(), "T3 Begin");
    }
}
