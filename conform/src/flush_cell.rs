//! Conformance of one key's flush compound (S-2) to the FlushCell model, both ways: the
//! snapshot buffer (`impls/src/buffer.rs`) over a guarded store, written and marked as
//! `PartitionFlow::flush` does (`pending` → the store's write → `flushed`).
//!
//! The design closes the race twice: the flow owns its buffer (`&mut self`), so no append can
//! land between a flush's write and its mark; and the mark is conditional, a key that moved
//! since the write stays dirty. `flush-cell` drives seeded appends and flushes as the flow
//! runs them (the write and the mark back to back) and must conform to the serialized model;
//! random walks of that model drive the cell, its state compared after each step.
//! `flush-cell-unserialized` (planted mutant) lets an append land inside the flush and marks
//! without the compare: it must diverge. `serial_race`'s counterexample is driven through the
//! mutant, which must lose the write, and through the design's conditional mark, which must
//! keep the key dirty.

use loadbearing_impls::buffer::{Pending, SnapshotBuffer};
use loadbearing_impls::store::{Mode, Read, SnapshotStore};
use loadbearing_impls::trace::no_trace;
use loadbearing_refinement::Model as _;
use loadbearing_specs::flows::flush_cell::{FlushAction, FlushCell, FlushState};
use loadbearing_specs::flows::flush_cell_trace::FlushEvent;

use crate::backend::BackendKind;
use crate::driver::{self, Applied, Compare, Harness};
use crate::error::{Error, HarnessError};
use crate::must_fail::{replay_each, Build, Showed};
use crate::paths::random_walk;
use crate::replays::Violation;
use crate::schedule::{Schedule, Seeded};
use crate::stores::{StoreFactory, STORES};
use crate::target::{Expect, ModelName, Settings, Target, TargetResult};
use crate::target_id::TargetId;

pub struct FlushCellTarget {
    id: TargetId,
    serialized: bool,
}

pub static FLUSH_CELL: FlushCellTarget = FlushCellTarget {
    id: TargetId::FlushCell,
    serialized: true,
};

pub static FLUSH_CELL_UNSERIALIZED: FlushCellTarget = FlushCellTarget {
    id: TargetId::FlushCellUnserialized,
    serialized: false,
};

/// The serialized model: the design.
const DESIGN: FlushCell = FlushCell { serialized: true };

impl Target for FlushCellTarget {
    fn id(&self) -> TargetId {
        self.id
    }

    fn model(&self, _: BackendKind) -> ModelName {
        ModelName::of::<FlushCell>()
    }

    fn backends(&self) -> &'static [BackendKind] {
        STORES
    }

    fn expect(&self) -> Expect {
        if self.serialized {
            Expect::Conforms
        } else {
            Expect::Diverges
        }
    }

    fn run(&self, settings: &Settings, result: &mut TargetResult) -> Result<(), Error> {
        let factory = StoreFactory::new(settings.backend.clone(), Mode::Guarded, self.id.name())?;
        let mut schedule = Seeded::new(settings.seed);
        let mut round = 0;
        let mut key = || {
            round += 1;
            format!("cell{round}")
        };
        // The mutant's first trace always lands an append inside the flush.
        if !self.serialized {
            let mut cell = Cell::new(&factory, &key())?;
            cell.flush_write()?;
            cell.append(2)?;
            cell.flush_mark(Mark::Unconditional)?;
            result.tally(&DESIGN, &cell.events);
        }
        for _ in 0..settings.traces {
            let mut cell = Cell::new(&factory, &key())?;
            for _ in 0..6 {
                match schedule.below(3) {
                    0 | 1 => cell.append(1 + schedule.below(2) as u8)?,
                    _ if !cell.dirty() => continue,
                    _ if self.serialized => {
                        cell.flush_write()?;
                        cell.flush_mark(Mark::Conditional)?;
                    }
                    _ => {
                        cell.flush_write()?;
                        if schedule.below(2) == 0 {
                            cell.append(1 + schedule.below(2) as u8)?;
                        }
                        cell.flush_mark(Mark::Unconditional)?;
                    }
                }
            }
            result.tally(&DESIGN, &cell.events);
        }
        if self.serialized {
            drive_walks(&factory, settings, &mut schedule, &mut key, result)?;
        }
        replay_counterexamples(self.id, &factory, &mut key, result)
    }
}

/// How the flush marks the key after its write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mark {
    /// `flushed(key, written offset)`: clean only if the key did not move (the design).
    Conditional,
    /// Clean whatever the key holds now (the planted mutant).
    Unconditional,
}

/// One key's cell: the buffer and the store, the model's `Append`/`FlushWrite`/`FlushMark`.
struct Cell {
    key: String,
    buffer: SnapshotBuffer,
    store: Box<dyn SnapshotStore>,
    next_offset: u64,
    /// The offset of the flush's write, between its write and its mark.
    written: Option<u64>,
    events: Vec<FlushEvent>,
}

fn value_of(v: u8) -> Vec<u8> {
    vec![b'0' + v]
}

fn model_value(bytes: &[u8]) -> Result<u8, Error> {
    match bytes {
        [b] if (b'1'..=b'2').contains(b) => Ok(b - b'0'),
        other => Err(HarnessError::outside("the cell's value", other)),
    }
}

impl Cell {
    /// The model's initial state: the buffer holds 1, not yet marked; the store holds 1.
    fn new(factory: &StoreFactory, key: &str) -> Result<Cell, Error> {
        let store = factory.open(no_trace())?;
        store
            .persist(key, 1, &value_of(1))
            .map_err(HarnessError::failed("seeding the store"))?;
        let mut buffer = SnapshotBuffer::new(true);
        buffer.append(key, 1, value_of(1));
        Ok(Cell {
            key: key.to_string(),
            buffer,
            store,
            next_offset: 2,
            written: None,
            events: Vec::new(),
        })
    }

    fn dirty(&self) -> bool {
        self.buffer.is_key_dirty(&self.key)
    }

    fn append(&mut self, v: u8) -> Result<(), Error> {
        let offset = self.next_offset;
        self.next_offset += 1;
        self.buffer.append(&self.key, offset, value_of(v));
        self.events.push(FlushEvent::Append { value: v });
        Ok(())
    }

    /// The key's pending write: its offset and value.
    fn pending(&self) -> Result<(u64, Vec<u8>), Error> {
        self.buffer
            .pending()
            .into_iter()
            .find_map(|p| match p {
                Pending::Persist { key, offset, value } if key == self.key => Some((offset, value)),
                _ => None,
            })
            .ok_or_else(|| {
                HarnessError::out_of_order("FlushWrite", "no pending write of the cell's key")
            })
    }

    fn flush_write(&mut self) -> Result<(), Error> {
        let (offset, value) = self.pending()?;
        self.store
            .persist(&self.key, offset, &value)
            .map_err(HarnessError::failed("the flush's write"))?;
        self.written = Some(offset);
        self.events.push(FlushEvent::FlushWrite {
            wrote: Some(model_value(&value)?),
        });
        Ok(())
    }

    fn flush_mark(&mut self, mark: Mark) -> Result<(), Error> {
        let written = self
            .written
            .take()
            .ok_or_else(|| HarnessError::out_of_order("FlushMark", "no write before it"))?;
        let offset = match mark {
            Mark::Conditional => written,
            // What the key holds now: the compare always passes.
            Mark::Unconditional => self.pending().map_or(written, |(o, _)| o),
        };
        self.buffer.flushed(&self.key, offset);
        self.events.push(FlushEvent::FlushMark {
            persisted: Some(!self.dirty()),
        });
        Ok(())
    }

    /// The store's value as the model's `durable`.
    fn durable(&self) -> Result<u8, Error> {
        match self.store.read(&self.key) {
            Ok(Read::Live { value, .. }) => model_value(&value),
            other => Err(HarnessError::outside("the store's row", other)),
        }
    }

    fn buffered(&self) -> Result<u8, Error> {
        model_value(self.buffer.get(&self.key).unwrap_or_default())
    }

    /// A lost write: the key reads clean while the store holds another value.
    fn lost_write(&self) -> Result<Option<String>, Error> {
        let (buffered, durable) = (self.buffered()?, self.durable()?);
        Ok((!self.dirty() && buffered != durable)
            .then(|| format!("the key reads persisted with {buffered}, the store holds {durable}")))
    }

    fn apply(&mut self, action: FlushAction, mark: Mark) -> Result<(), Error> {
        match action {
            FlushAction::Append(v) => self.append(v),
            FlushAction::FlushWrite => self.flush_write(),
            FlushAction::FlushMark => self.flush_mark(mark),
        }
    }
}

/// The cell as the model sees it: the buffered value, whether the key reads persisted, and
/// the store's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Seen {
    value: u8,
    persisted: bool,
    durable: u8,
}

impl Seen {
    fn of(state: &FlushState) -> Seen {
        Seen {
            value: state.buffer.value,
            persisted: state.buffer.persisted,
            durable: state.durable,
        }
    }
}

impl std::fmt::Display for Seen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "value {}, {}, durable {}",
            self.value,
            if self.persisted { "persisted" } else { "dirty" },
            self.durable
        )
    }
}

/// The design's cell under the model's steps: the flow's conditional mark.
impl Harness for Cell {
    type Step = FlushAction;
    type Observed = Seen;

    fn apply(&mut self, action: &FlushAction) -> Result<Applied, Error> {
        Cell::apply(self, *action, Mark::Conditional)?;
        Ok(Applied::Taken)
    }

    fn observe(&mut self) -> Result<Seen, Error> {
        Ok(Seen {
            value: self.buffered()?,
            persisted: !self.dirty(),
            durable: self.durable()?,
        })
    }
}

/// Random walks of the design driven through the cell, through the one path driver.
fn drive_walks(
    factory: &StoreFactory,
    settings: &Settings,
    schedule: &mut dyn Schedule,
    key: &mut dyn FnMut() -> String,
    result: &mut TargetResult,
) -> Result<(), Error> {
    for walk in 0..settings.traces {
        let init = DESIGN.init_states().remove(0);
        let (path, _) = random_walk(&DESIGN, init.clone(), schedule, 8, |_| false);
        let mut cell = Cell::new(factory, &key())?;
        let driven = driver::drive(&DESIGN, &init, &path, &mut cell, Seen::of, Compare::Always)?;
        result.steps += driven.steps;
        result
            .mismatches
            .extend(driven.records(format!("walk {}", walk + 1)));
    }
    Ok(())
}

fn replay_counterexamples(
    target: TargetId,
    factory: &StoreFactory,
    key: &mut dyn FnMut() -> String,
    result: &mut TargetResult,
) -> Result<(), Error> {
    replay_each::<FlushCell>(target, result, |spec, cx, build, _| {
        let mark = match build {
            Build::Broken => Mark::Unconditional,
            Build::Designed => Mark::Conditional,
        };
        let mut cell = Cell::new(factory, &key())?;
        for action in &cx.path {
            cell.apply(*action, mark)?;
        }
        let lost = cell.lost_write()?;
        Ok(Showed {
            violation: spec.shows == Violation::LostWrite && lost.is_some(),
            did: lost.unwrap_or_else(|| {
                "the key stayed dirty: the next flush writes the new value".into()
            }),
        })
    })
}
