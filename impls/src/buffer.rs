//! The in-memory snapshot buffer with the replay fence (docs/models/replayfence.md, ReplayFence).
//!
//! After a restart the partition resumes at its committed offset, which can lie below a key's
//! recovered snapshot. With the fence on (`Fix = true`):
//! - an append below the key's buffered offset is dropped (its effect is already inside the
//!   recovered snapshot), so the buffer stays monotonic in offset;
//! - a record's delete at or below the buffered offset is dropped too: the recovered snapshot
//!   already lies past it, and presenting it at the buffered offset would tombstone that
//!   snapshot (the Cassandra model's fold filter; D-11 in `docs/register.md`);
//! - a timer's delete (an expiry, not a record) is presented at `max(its offset, buffered
//!   offset)`, so the owner's own tombstone is never refused by the owner's own recovered high
//!   water.
//!
//! With the fence off (`Fix = false`) every append is buffered at its own offset and a delete is
//! presented at its own offset: replaying below a recovered snapshot makes the owner's write
//! lose the compare-and-set against itself (a self-fence).

use std::collections::BTreeMap;

use crate::store::{Offset, Read};
use crate::trace::{no_trace, FoldDecision, SharedTracer, Step, WriteKind};

#[derive(Clone, Debug, PartialEq, Eq)]
enum Content {
    Value(Vec<u8>),
    Deleted,
}

#[derive(Clone, Debug)]
struct Entry {
    /// The buffered offset: what a write of this entry presents.
    offset: Offset,
    content: Content,
    dirty: bool,
}

/// A write the buffer wants flushed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pending {
    Persist {
        key: String,
        offset: Offset,
        value: Vec<u8>,
    },
    Delete {
        key: String,
        offset: Offset,
    },
}

impl Pending {
    pub fn key(&self) -> &str {
        match self {
            Pending::Persist { key, .. } | Pending::Delete { key, .. } => key,
        }
    }
    pub fn offset(&self) -> Offset {
        match self {
            Pending::Persist { offset, .. } | Pending::Delete { offset, .. } => *offset,
        }
    }
    pub fn kind(&self) -> WriteKind {
        match self {
            Pending::Persist { .. } => WriteKind::Persist,
            Pending::Delete { .. } => WriteKind::Delete,
        }
    }
}

/// Per-key snapshots waiting to be flushed, with the replay fence.
pub struct SnapshotBuffer {
    fence: bool,
    entries: BTreeMap<String, Entry>,
    tracer: SharedTracer,
}

impl SnapshotBuffer {
    /// `fence = true` is the fixed design; `false` is ReplayFence's `Fix = false`.
    pub fn new(fence: bool) -> Self {
        Self::traced(fence, no_trace())
    }

    pub fn traced(fence: bool, tracer: SharedTracer) -> Self {
        SnapshotBuffer {
            fence,
            entries: BTreeMap::new(),
            tracer,
        }
    }

    /// Seed the key from the store (recovery): the recovered offset becomes the high water.
    pub fn recovered(&mut self, key: &str, read: &Read) {
        match read {
            Read::Live { offset, value } => {
                self.entries.insert(
                    key.to_string(),
                    Entry {
                        offset: *offset,
                        content: Content::Value(value.clone()),
                        dirty: false,
                    },
                );
            }
            Read::Tombstone { offset } => {
                self.entries.insert(
                    key.to_string(),
                    Entry {
                        offset: *offset,
                        content: Content::Deleted,
                        dirty: false,
                    },
                );
            }
            Read::Absent => {
                self.entries.remove(key);
            }
        }
    }

    /// The buffered value (None when absent or deleted).
    pub fn get(&self, key: &str) -> Option<&[u8]> {
        match self.entries.get(key) {
            Some(Entry {
                content: Content::Value(v),
                ..
            }) => Some(v),
            _ => None,
        }
    }

    /// Buffer a snapshot of `key` folded up to `offset`.
    pub fn append(&mut self, key: &str, offset: Offset, value: Vec<u8>) -> FoldDecision {
        let decision = match self.entries.get_mut(key) {
            // At the buffered offset too: that record is already in the value (a replay of the
            // record the snapshot was recovered at would be folded twice).
            Some(e) if self.fence && offset <= e.offset => {
                FoldDecision::DroppedBelowFence { buffered: e.offset }
            }
            Some(e) => {
                e.offset = offset;
                e.content = Content::Value(value);
                e.dirty = true;
                FoldDecision::Buffered { buffered: offset }
            }
            None => {
                self.entries.insert(
                    key.to_string(),
                    Entry {
                        offset,
                        content: Content::Value(value),
                        dirty: true,
                    },
                );
                FoldDecision::Buffered { buffered: offset }
            }
        };
        self.trace_fold(key, offset, WriteKind::Persist, decision);
        decision
    }

    /// Buffer the delete of `key` by the record at `offset`. With the fence on, a delete at or
    /// below the buffered offset is a replay of a record the buffered state already lies past:
    /// it is dropped, as a replayed append is.
    pub fn delete(&mut self, key: &str, offset: Offset) -> FoldDecision {
        match self.entries.get(key) {
            Some(e) if self.fence && offset <= e.offset => {
                let decision = FoldDecision::DroppedBelowFence { buffered: e.offset };
                self.trace_fold(key, offset, WriteKind::Delete, decision);
                decision
            }
            _ => self.buffer_delete(key, offset),
        }
    }

    /// Buffer a timer's delete of `key` at `offset` (an expiry, not a record: it is never a
    /// replay); gated on max(offset, buffered) with the fence on.
    pub fn expire(&mut self, key: &str, offset: Offset) -> FoldDecision {
        self.buffer_delete(key, offset)
    }

    fn buffer_delete(&mut self, key: &str, offset: Offset) -> FoldDecision {
        let presented = match self.entries.get(key) {
            Some(e) if self.fence => offset.max(e.offset),
            _ => offset,
        };
        self.entries.insert(
            key.to_string(),
            Entry {
                offset: presented,
                content: Content::Deleted,
                dirty: true,
            },
        );
        let decision = FoldDecision::DeleteGated { presented };
        self.trace_fold(key, offset, WriteKind::Delete, decision);
        decision
    }

    fn trace_fold(&self, key: &str, offset: Offset, kind: WriteKind, decision: FoldDecision) {
        self.tracer.step(&Step::Fold {
            key: key.to_string(),
            offset,
            kind,
            decision,
        });
    }

    /// Every write waiting to be flushed, in key order.
    pub fn pending(&self) -> Vec<Pending> {
        self.entries
            .iter()
            .filter(|(_, e)| e.dirty)
            .map(|(k, e)| match &e.content {
                Content::Value(v) => Pending::Persist {
                    key: k.clone(),
                    offset: e.offset,
                    value: v.clone(),
                },
                Content::Deleted => Pending::Delete {
                    key: k.clone(),
                    offset: e.offset,
                },
            })
            .collect()
    }

    /// The write of `key` at `offset` landed: clean unless a newer change was buffered since.
    pub fn flushed(&mut self, key: &str, offset: Offset) {
        if let Some(e) = self.entries.get_mut(key) {
            if e.offset == offset {
                e.dirty = false;
            }
        }
    }

    pub fn is_dirty(&self) -> bool {
        self.entries.values().any(|e| e.dirty)
    }

    /// Does a change of `key` wait to be flushed?
    pub fn is_key_dirty(&self, key: &str) -> bool {
        self.entries.get(key).is_some_and(|e| e.dirty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fence_drops_appends_below_the_buffered_offset_and_gates_deletes() {
        let mut b = SnapshotBuffer::new(true);
        b.recovered(
            "k",
            &Read::Live {
                offset: 5,
                value: b"v5".to_vec(),
            },
        );
        assert_eq!(
            b.append("k", 2, b"v2".to_vec()),
            FoldDecision::DroppedBelowFence { buffered: 5 }
        );
        assert_eq!(
            b.append("k", 5, b"v5 again".to_vec()),
            FoldDecision::DroppedBelowFence { buffered: 5 },
            "C-4: a replay at the recovered offset is dropped, not folded twice"
        );
        assert_eq!(b.get("k"), Some(&b"v5"[..]));
        assert!(!b.is_dirty());
        assert_eq!(
            b.delete("k", 3),
            FoldDecision::DroppedBelowFence { buffered: 5 },
            "C-4: a replayed delete below the recovered snapshot does not tombstone it"
        );
        assert_eq!(b.get("k"), Some(&b"v5"[..]));
        assert!(!b.is_dirty());
        assert_eq!(b.expire("k", 0), FoldDecision::DeleteGated { presented: 5 });
        assert_eq!(
            b.pending(),
            vec![Pending::Delete {
                key: "k".into(),
                offset: 5
            }]
        );
        assert_eq!(
            b.append("k", 6, b"v6".to_vec()),
            FoldDecision::Buffered { buffered: 6 }
        );
    }

    #[test]
    fn without_the_fence_the_buffer_goes_back_in_offset() {
        let mut b = SnapshotBuffer::new(false);
        b.recovered(
            "k",
            &Read::Live {
                offset: 5,
                value: b"v5".to_vec(),
            },
        );
        assert_eq!(
            b.append("k", 2, b"v2".to_vec()),
            FoldDecision::Buffered { buffered: 2 }
        );
        assert_eq!(b.delete("k", 0), FoldDecision::DeleteGated { presented: 0 });
        assert_eq!(b.expire("k", 1), FoldDecision::DeleteGated { presented: 1 });
    }
}
