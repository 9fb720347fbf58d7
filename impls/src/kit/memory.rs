//! An in-memory snapshot store, the kit's example of a store of your own: it implements the
//! contract the way the SQL stores do (a write lands when the stored offset is not higher or the
//! row expired; a delete is a tombstone at its offset), and passes every case.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::Backend;
use crate::store::{
    check_offset, Conflict, Mode, Offset, Read, ReadError, SnapshotStore, StoreOptions, WriteError,
};
use crate::trace::{no_trace, SharedTracer, StatementOutcome, Step, WriteKind};

const BACKEND: &str = "memory";

#[derive(Clone, Debug)]
struct Row {
    offset: Offset,
    /// `None`: a tombstone.
    value: Option<Vec<u8>>,
    expires_at: Option<Instant>,
}

impl Row {
    fn live(&self) -> bool {
        self.expires_at.is_none_or(|at| at > Instant::now())
    }
}

type Rows = Arc<Mutex<HashMap<String, Row>>>;

/// One session on a shared in-memory table.
pub struct MemoryStore {
    rows: Rows,
    options: StoreOptions,
    tracer: SharedTracer,
}

impl MemoryStore {
    /// A store on a table of its own.
    pub fn new(options: StoreOptions) -> Self {
        MemoryStore {
            rows: Rows::default(),
            options,
            tracer: no_trace(),
        }
    }

    fn write(&self, key: &str, offset: Offset, value: Option<&[u8]>) -> Result<(), WriteError> {
        check_offset(key, offset)?;
        let mut rows = self.rows.lock().unwrap_or_else(|e| e.into_inner());
        let stored = rows.get(key).filter(|r| r.live()).map(|r| r.offset);
        let outcome = match (self.options.mode, stored) {
            (Mode::Guarded | Mode::HardDelete, Some(stored)) if stored > offset => {
                Err(WriteError::Conflict(Conflict {
                    key: key.to_string(),
                    attempted: offset,
                    stored,
                }))
            }
            (Mode::HardDelete, _) if value.is_none() => {
                rows.remove(key);
                Ok(())
            }
            _ => {
                let expires_at = self.options.ttl.map(|ttl| Instant::now() + ttl);
                rows.insert(
                    key.to_string(),
                    Row {
                        offset,
                        value: value.map(<[u8]>::to_vec),
                        expires_at,
                    },
                );
                Ok(())
            }
        };
        drop(rows);
        self.tracer.step(&Step::Persist {
            backend: BACKEND,
            key: key.to_string(),
            offset,
            kind: if value.is_some() {
                WriteKind::Persist
            } else {
                WriteKind::Delete
            },
            outcome: StatementOutcome::from(&outcome),
        });
        outcome
    }
}

impl SnapshotStore for MemoryStore {
    fn read(&self, key: &str) -> Result<Read, ReadError> {
        let rows = self.rows.lock().unwrap_or_else(|e| e.into_inner());
        Ok(match rows.get(key).filter(|r| r.live()) {
            None => Read::Absent,
            Some(Row {
                offset,
                value: Some(value),
                ..
            }) => Read::Live {
                offset: *offset,
                value: value.clone(),
            },
            Some(Row { offset, .. }) => Read::Tombstone { offset: *offset },
        })
    }

    fn persist(&self, key: &str, offset: Offset, value: &[u8]) -> Result<(), WriteError> {
        self.write(key, offset, Some(value))
    }

    fn delete(&self, key: &str, offset: Offset) -> Result<(), WriteError> {
        self.write(key, offset, None)
    }

    fn options(&self) -> StoreOptions {
        self.options
    }

    fn backend(&self) -> &'static str {
        BACKEND
    }
}

/// The in-memory table the kit's cases open sessions on.
#[derive(Default)]
pub struct MemoryBackend {
    rows: Rows,
}

impl Backend for MemoryBackend {
    fn name(&self) -> &'static str {
        BACKEND
    }

    fn open(&self, options: StoreOptions, tracer: SharedTracer) -> Box<dyn SnapshotStore> {
        Box::new(MemoryStore {
            rows: self.rows.clone(),
            options,
            tracer,
        })
    }
}
