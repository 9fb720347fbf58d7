//! The SSI model's trace vocabulary: the steps of the MVCC engine (`impls/ssi`), emitted by
//! the engine itself from inside its critical section, so the order of the events is a
//! linearization of the run.
//!
//! ```text
//! {"v":2,"vocabulary":"ssi","action":"Begin","txn":"T1"}
//! {"v":2,"vocabulary":"ssi","action":"Read","txn":"T1","key":"bob","value":1}
//! {"v":2,"vocabulary":"ssi","action":"Write","txn":"T2","key":"bob","value":0,"failed":"SnapshotUnsafe"}
//! {"v":2,"vocabulary":"ssi","action":"Write","txn":"T2","key":"bob","skipped":true}
//! {"v":2,"vocabulary":"ssi","action":"Check","txn":"T1"}
//! ```

use std::collections::BTreeMap;
use std::fmt;

use loadbearing_trace::TraceEvent;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Failure;

/// A transaction by index; on the wire `T1` is transaction 0 (the model's names).
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

impl Serialize for Txn {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Txn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Txn, D::Error> {
        let name = String::deserialize(d)?;
        name.strip_prefix('T')
            .and_then(|n| n.parse::<u8>().ok())
            .and_then(|n| n.checked_sub(1))
            .map(Txn)
            .ok_or_else(|| {
                serde::de::Error::custom(format!("`{name}` is not a transaction (T1, T2, …)"))
            })
    }
}

/// One engine step. `failed` names the error a failed step aborted its transaction with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", deny_unknown_fields)]
pub enum SsiEvent {
    Begin {
        txn: Txn,
    },
    /// A read of `key`; `value` is what it saw (absent or null: nothing).
    Read {
        txn: Txn,
        key: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<i64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failed: Option<Failure>,
    },
    /// A write of `value` to `key`, or, `skipped`, a conditional write whose condition was
    /// false.
    Write {
        txn: Txn,
        key: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<i64>,
        #[serde(default, skip_serializing_if = "is_false")]
        skipped: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failed: Option<Failure>,
    },
    /// A predicate read of a whole page: no model action (the model's statements cannot
    /// express it), so a trace with one does not fit.
    Scan {
        txn: Txn,
        page: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rows: Option<BTreeMap<String, i64>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failed: Option<Failure>,
    },
    /// CHECK: the commit-time pivot check (fails `SnapshotConflict`).
    Check {
        txn: Txn,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failed: Option<Failure>,
    },
    /// The durable commit record.
    Record {
        txn: Txn,
    },
    /// END: status := COMMITTED (option 2's re-check fails `RecheckConflict`).
    End {
        txn: Txn,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failed: Option<Failure>,
    },
    AppAbort {
        txn: Txn,
    },
    Cleanup {
        txn: Txn,
    },
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl SsiEvent {
    pub fn txn(&self) -> Txn {
        match *self {
            SsiEvent::Begin { txn }
            | SsiEvent::Read { txn, .. }
            | SsiEvent::Write { txn, .. }
            | SsiEvent::Scan { txn, .. }
            | SsiEvent::Check { txn, .. }
            | SsiEvent::Record { txn }
            | SsiEvent::End { txn, .. }
            | SsiEvent::AppAbort { txn }
            | SsiEvent::Cleanup { txn } => txn,
        }
    }

    /// The error a failed step aborted with.
    pub fn failed(&self) -> Option<Failure> {
        match *self {
            SsiEvent::Read { failed, .. }
            | SsiEvent::Write { failed, .. }
            | SsiEvent::Scan { failed, .. }
            | SsiEvent::Check { failed, .. }
            | SsiEvent::End { failed, .. } => failed,
            SsiEvent::Begin { .. }
            | SsiEvent::Record { .. }
            | SsiEvent::AppAbort { .. }
            | SsiEvent::Cleanup { .. } => None,
        }
    }

    /// The key a read or a write touches.
    pub fn key(&self) -> Option<&str> {
        match self {
            SsiEvent::Read { key, .. } | SsiEvent::Write { key, .. } => Some(key),
            SsiEvent::Begin { .. }
            | SsiEvent::Scan { .. }
            | SsiEvent::Check { .. }
            | SsiEvent::Record { .. }
            | SsiEvent::End { .. }
            | SsiEvent::AppAbort { .. }
            | SsiEvent::Cleanup { .. } => None,
        }
    }
}

impl TraceEvent for SsiEvent {
    const VOCABULARY: &'static str = "ssi";

    fn action(&self) -> &str {
        match self {
            SsiEvent::Begin { .. } => "Begin",
            SsiEvent::Read { .. } => "Read",
            SsiEvent::Write { .. } => "Write",
            SsiEvent::Scan { .. } => "Scan",
            SsiEvent::Check { .. } => "Check",
            SsiEvent::Record { .. } => "Record",
            SsiEvent::End { .. } => "End",
            SsiEvent::AppAbort { .. } => "AppAbort",
            SsiEvent::Cleanup { .. } => "Cleanup",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadbearing_trace::{parse_ndjson, to_ndjson};

    #[test]
    fn the_documented_lines_read_and_write_back() {
        let text = concat!(
            r#"{"v":2,"vocabulary":"ssi","action":"Begin","txn":"T1"}"#,
            "\n",
            r#"{"v":2,"vocabulary":"ssi","action":"Read","txn":"T1","key":"bob","value":1}"#,
            "\n",
            r#"{"v":2,"vocabulary":"ssi","action":"Write","txn":"T2","key":"bob","value":0,"failed":"SnapshotUnsafe"}"#,
            "\n",
            r#"{"v":2,"vocabulary":"ssi","action":"Write","txn":"T2","key":"bob","skipped":true}"#,
            "\n",
            r#"{"v":2,"vocabulary":"ssi","action":"Check","txn":"T1"}"#,
            "\n",
        );
        let events = parse_ndjson::<SsiEvent>(text).unwrap();
        assert_eq!(events[2].failed(), Some(Failure::SnapshotUnsafe));
        assert_eq!(to_ndjson(&events), text);
    }
}
