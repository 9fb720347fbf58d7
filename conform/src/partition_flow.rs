//! What the partition-flow families share (the Cassandra flow, [`crate::flow`], and the #835
//! one, `crate::cassandra_835`; the owner's restart, [`crate::fence`]): the flows' offsets and
//! zombies, the harness's fold, the implementation's flow-level steps rendered as the models'
//! vocabulary (`Traced`, `write_event`), and a revoked flow that folds in memory (`Zombie`).

use std::sync::Arc;

use loadbearing_impls::flow::{
    FlowConfig, FlowError, FoldFn, FoldOutcome, Ownership, PartitionFlow, Record,
};
use loadbearing_impls::trace::{Recorder, Step};
use loadbearing_impls::{SnapshotStore, WriteError};
use loadbearing_specs::cassandra::trace::FlowEvent;
use loadbearing_specs::infra::vocab::{Cell, Op, Ops};

use crate::error::Error;
use crate::observe::cell_of;
use crate::stores::StoreFactory;

/// Offsets of a flow trace: the Cassandra model's MaxOffset (small: the checker enumerates
/// nothing per offset, but the owner and zombies should collide often).
pub const FLOW_MAX_OFFSET: u8 = 5;
/// Revoked flows overlapping the owner in each trace.
pub const ZOMBIES: usize = 2;
pub(crate) const PARTITION: u32 = 0;
/// The payload of a delete record (the harness fold turns it into a delete).
const DELETE: &[u8] = b"delete";

pub(crate) type Flow = PartitionFlow<Box<dyn SnapshotStore>>;

// ----------------------------------------------------------------------------------------------
// The implementation's vocabulary, rendered as the models'

/// The fold of the harness: a `delete` record deletes the key, any other appends its payload
/// (the record's offset) as a line, so a row's value is the model's set of offsets.
pub(crate) fn harness_fold() -> FoldFn {
    let append = loadbearing_impls::flow::append_fold();
    Arc::new(move |state: Option<&[u8]>, record: &Record| {
        if record.payload == DELETE {
            FoldOutcome::Delete
        } else {
            append(state, record)
        }
    })
}

pub(crate) fn record(key: &str, log: Ops, offset: u8) -> Record {
    match log.at(offset) {
        Op::Persist => Record::new(key, offset as u64, offset.to_string().as_bytes()),
        Op::Delete => Record::new(key, offset as u64, DELETE),
    }
}

pub(crate) fn read_cell(store: &dyn SnapshotStore, key: &str) -> Result<Cell, Error> {
    Ok(cell_of(&store.read(key)?)?)
}

/// The write a flush made (the flow's `Write` or `ZombieWrite` step), if it made one.
pub(crate) struct Written {
    pub(crate) offset: u64,
    pub(crate) applied: Option<bool>,
}

pub(crate) fn written(steps: &[Step]) -> Option<Written> {
    steps.iter().rev().find_map(|step| {
        let (offset, outcome) = match step {
            Step::Write {
                presented, outcome, ..
            } => (*presented, outcome),
            Step::ZombieWrite {
                offset, outcome, ..
            } => (*offset, outcome),
            Step::Update1 { .. }
            | Step::Insert { .. }
            | Step::RetryUpdate { .. }
            | Step::Repair { .. }
            | Step::Persist { .. }
            | Step::ReapRow { .. }
            | Step::Fold { .. }
            | Step::OwnerRecover { .. }
            | Step::OwnerFold { .. }
            | Step::Phase { .. } => return None,
        };
        let applied = match outcome {
            Ok(()) => Some(true),
            Err(WriteError::Conflict(_)) => Some(false),
            // Unknown or not sent: the row read back decides.
            Err(_) => None,
        };
        Some(Written { offset, applied })
    })
}

/// A flow and the steps it reported, read incrementally.
pub(crate) struct Traced {
    pub(crate) flow: Flow,
    steps: Arc<Recorder>,
    seen: usize,
    pub(crate) alive: bool,
}

impl Traced {
    pub(crate) fn new(
        ownership: &Arc<Ownership>,
        factory: &StoreFactory,
        config: FlowConfig,
    ) -> Result<Traced, Error> {
        let steps = Recorder::new();
        let store = factory.open(loadbearing_impls::trace::no_trace())?;
        let flow = PartitionFlow::assign_traced(
            PARTITION,
            ownership,
            store,
            harness_fold(),
            config,
            steps.clone(),
        );
        Ok(Traced {
            flow,
            steps,
            seen: 0,
            alive: true,
        })
    }

    /// A flow that has recovered `key` already: its initial load is the model's initial
    /// state (loaded, or recovered where a restart begins), not a step, so its steps are dropped.
    pub(crate) fn recovered(
        ownership: &Arc<Ownership>,
        factory: &StoreFactory,
        config: FlowConfig,
        key: &str,
    ) -> Result<Traced, Error> {
        let mut traced = Traced::new(ownership, factory, config)?;
        traced
            .flow
            .recover(&[key])
            .map_err(Error::flow("recover"))?;
        traced.fresh();
        Ok(traced)
    }

    /// Evicts `key` and loads it again from the store (the model's `OwnerRecover`).
    pub(crate) fn reload(&mut self, key: &str) -> Result<(), Error> {
        self.flow.evict(key);
        self.flow.recover(&[key]).map_err(Error::flow("recover"))?;
        self.fresh();
        Ok(())
    }

    /// The steps reported since the last call.
    pub(crate) fn fresh(&mut self) -> Vec<Step> {
        let all = self.steps.steps();
        let fresh = all[self.seen..].to_vec();
        self.seen = all.len();
        fresh
    }

    /// Flushes; a refused write stops the flow (its error is returned), any other failure is
    /// the harness's.
    pub(crate) fn flush(&mut self) -> Result<Option<FlowError>, Error> {
        match self.flow.flush() {
            Ok(_) => Ok(None),
            Err(e @ (FlowError::SelfFenced(_) | FlowError::Fenced(_))) => {
                self.alive = false;
                Ok(Some(e))
            }
            Err(e) => Err(Error::flow("flush")(e)),
        }
    }

    pub(crate) fn handle(&mut self, record: &Record) -> Result<(), Error> {
        self.flow.handle(record).map_err(Error::flow("handle"))
    }
}

/// Who flushed: the owner (`OwnerFold`) or revoked flow `z` (`ZombieWrite`, 0-based here).
#[derive(Clone, Copy)]
pub(crate) enum Writer {
    Owner,
    Zombie(usize),
}

/// The event of a flush that wrote: its offset and op, the outcome and the row read back
/// (`None`: not readable as a model row).
pub(crate) fn write_event(by: Writer, log: Ops, w: &Written, stored: Option<Cell>) -> FlowEvent {
    let (offset, op) = (w.offset, log.at(w.offset as u8));
    let (applied, presented) = (w.applied, Some(w.offset));
    match by {
        Writer::Owner => FlowEvent::OwnerFold {
            offset,
            op,
            applied,
            presented,
            stored,
        },
        Writer::Zombie(z) => FlowEvent::ZombieWrite {
            zombie: z as u8 + 1,
            offset,
            op,
            applied,
            presented,
            stored,
        },
    }
}

pub(crate) struct Zombie {
    pub(crate) traced: Traced,
    /// The next offset it folds.
    pub(crate) next: u8,
    /// Folded since its last flush.
    pub(crate) dirty: bool,
}

impl Zombie {
    /// A revoked flow, assigned before the owner (an older generation), that has recovered the
    /// still-absent row: the model's zombie writes the correct fold from there.
    pub(crate) fn recovered(
        ownership: &Arc<Ownership>,
        factory: &StoreFactory,
        key: &str,
    ) -> Result<Zombie, Error> {
        Ok(Zombie {
            traced: Traced::recovered(ownership, factory, FlowConfig::default(), key)?,
            next: 1,
            dirty: false,
        })
    }
}

/// A zombie folds its next record (no model step: the model's zombie writes a correct fold).
pub(crate) fn zombie_fold(zombie: &mut Zombie, key: &str, log: Ops) -> Result<(), Error> {
    zombie.traced.handle(&record(key, log, zombie.next))?;
    zombie.next += 1;
    zombie.dirty = true;
    zombie.traced.fresh();
    Ok(())
}
