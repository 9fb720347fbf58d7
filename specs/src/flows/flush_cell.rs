#![doc = include_str!("flush_cell.md")]

use std::fmt;

use loadbearing_refinement::Shown;
use loadbearing_refinement::{Model, Property};
use loadbearing_refinement::{Spec, Variables};
use loadbearing_trace::Conform;

use crate::infra::knobs::Flag;
use crate::{Configured, Guard};

/// The buffer values a producer may append: two are enough for one value to overwrite another.
pub const VALUES: [u8; 2] = [1, 2];

/// The in-memory cell: the value the key holds and whether `markPersisted` has run for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Buffer {
    pub value: u8,
    pub persisted: bool,
}

/// Where the flush is inside its three-op compound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum FlushPc {
    /// Not flushing.
    Idle,
    /// `database.write` is done, `markPersisted` is still to come.
    Wrote,
}

impl fmt::Display for FlushPc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FlushPc::Idle => "idle",
            FlushPc::Wrote => "wrote",
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct FlushState {
    pub buffer: Buffer,
    /// What `database.write` last wrote to the durable store.
    pub durable: u8,
    pub fpc: FlushPc,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum FlushAction {
    FlushWrite,
    FlushMark,
    Append(u8),
}

impl fmt::Debug for FlushAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlushAction::FlushWrite => write!(f, "FlushWrite"),
            FlushAction::FlushMark => write!(f, "FlushMark"),
            FlushAction::Append(v) => write!(f, "Append({v})"),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlushCell {
    /// The poll thread serializes a key's callbacks: no Append lands inside a flush.
    pub serialized: bool,
}

impl FlushCell {
    fn no_lost_write(s: &FlushState) -> bool {
        !s.buffer.persisted || s.durable == s.buffer.value
    }

    fn type_ok(s: &FlushState) -> bool {
        VALUES.contains(&s.buffer.value) && VALUES.contains(&s.durable)
    }
}

impl Model for FlushCell {
    type State = FlushState;
    type Action = FlushAction;

    fn init_states(&self) -> Vec<FlushState> {
        vec![FlushState {
            buffer: Buffer {
                value: 1,
                persisted: false,
            },
            durable: 1,
            fpc: FlushPc::Idle,
        }]
    }

    fn actions(&self, s: &FlushState, actions: &mut Vec<FlushAction>) {
        if s.fpc == FlushPc::Idle && !s.buffer.persisted {
            actions.push(FlushAction::FlushWrite);
        }
        if s.fpc == FlushPc::Wrote {
            actions.push(FlushAction::FlushMark);
        }
        if !self.serialized || s.fpc == FlushPc::Idle {
            actions.extend(VALUES.iter().map(|&v| FlushAction::Append(v)));
        }
    }

    fn next_state(&self, s: &FlushState, action: FlushAction) -> Option<FlushState> {
        let mut next = s.clone();
        match action {
            FlushAction::FlushWrite => {
                next.durable = s.buffer.value;
                next.fpc = FlushPc::Wrote;
            }
            FlushAction::FlushMark => {
                next.buffer.persisted = true;
                next.fpc = FlushPc::Idle;
            }
            FlushAction::Append(value) => {
                next.buffer = Buffer {
                    value,
                    persisted: false,
                };
            }
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("INV_NoLostWrite", |_, s: &FlushState| {
                FlushCell::no_lost_write(s)
            }),
            Property::always("TypeOK", |_, s: &FlushState| FlushCell::type_ok(s)),
            // The initial value is already durable, so only an appended value that a whole
            // flush carried to the store shows the compound running end to end.
            Property::sometimes("AppendedValuePersisted", |_, s: &FlushState| {
                s.buffer.persisted && s.buffer.value == 2 && s.durable == 2
            }),
        ]
    }
}

impl Spec for FlushCell {
    fn variables(&self, s: &FlushState) -> Variables {
        vec![
            (
                "buffer",
                // A TLA+ record as TLC prints it: a phrase to machines.
                Shown::name(format!(
                    "[value |-> {}, persisted |-> {}]",
                    s.buffer.value, s.buffer.persisted
                )),
            ),
            ("durable", s.durable.into()),
            ("fpc", Shown::name(s.fpc)),
        ]
    }

    fn actor(&self, action: &FlushAction) -> String {
        match action {
            FlushAction::FlushWrite | FlushAction::FlushMark => "flush".into(),
            FlushAction::Append(_) => "producer".into(),
        }
    }
}

use crate::flows::flush_cell_trace::FlushEvent;

/// Why a cell's event contradicts a FlushCell step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FlushContradiction {
    #[error("the flush wrote {seen}, the buffer held {model}")]
    Wrote { seen: u8, model: u8 },
    #[error("after the mark the cell reads {}, the model's is {}", clean(*.seen), clean(*.model))]
    Persisted { seen: bool, model: bool },
}

fn clean(persisted: bool) -> &'static str {
    if persisted {
        "persisted"
    } else {
        "not persisted"
    }
}

impl Conform for FlushCell {
    type Event = FlushEvent;
    type Contradiction = FlushContradiction;

    fn reports(&self, action: &FlushAction, event: &FlushEvent) -> bool {
        match (action, event) {
            (FlushAction::Append(v), FlushEvent::Append { value }) => v == value,
            (FlushAction::FlushWrite, FlushEvent::FlushWrite { .. })
            | (FlushAction::FlushMark, FlushEvent::FlushMark { .. }) => true,
            _ => false,
        }
    }

    fn observe(
        &self,
        _before: &FlushState,
        after: &FlushState,
        event: &FlushEvent,
    ) -> Result<(), FlushContradiction> {
        match *event {
            FlushEvent::FlushWrite { wrote: Some(seen) } if seen != after.durable => {
                Err(FlushContradiction::Wrote {
                    seen,
                    model: after.durable,
                })
            }
            FlushEvent::FlushMark {
                persisted: Some(seen),
            } if seen != after.buffer.persisted => Err(FlushContradiction::Persisted {
                seen,
                model: after.buffer.persisted,
            }),
            _ => Ok(()),
        }
    }

    /// Values other than the model's two.
    fn beyond(&self, events: &[FlushEvent]) -> Option<loadbearing_trace::Beyond> {
        events.iter().enumerate().find_map(|(i, event)| {
            let value = match *event {
                FlushEvent::Append { value } | FlushEvent::FlushWrite { wrote: Some(value) } => {
                    value
                }
                FlushEvent::FlushWrite { wrote: None } | FlushEvent::FlushMark { .. } => {
                    return None
                }
            };
            (!VALUES.contains(&value)).then(|| loadbearing_trace::Beyond {
                event: i,
                what: format!("value {value}"),
                bound: loadbearing_trace::Bound::Fixed {
                    what: "values, 1 and 2",
                    most: VALUES.len() as u64,
                },
            })
        })
    }

    fn disabled_reason(&self, s: &FlushState, event: &FlushEvent) -> Option<String> {
        Some(match event {
            FlushEvent::Append { .. } => {
                "a flush is between its write and its mark, and the poll thread serializes the key"
                    .into()
            }
            FlushEvent::FlushWrite { .. } if s.fpc == FlushPc::Wrote => {
                "the flush has written and not yet marked".into()
            }
            FlushEvent::FlushWrite { .. } => "the buffered value is already persisted".into(),
            FlushEvent::FlushMark { .. } => "no flush has written".into(),
        })
    }
}

crate::params! {
    FlushCell {
        serialized: pub const SERIALIZED: Flag = Flag::new(
            "Serialized",
            true,
            "an Append cannot land between a flush's database.write and its markPersisted",
        );
    }
}

impl Configured for FlushCell {
    const NAME: &'static str = "FlushCell";
    const DOC: &'static str = include_str!("flush_cell.md");
    type Params = FlushCell;
    const GUARDS: &'static [Guard] = &[Guard::off("poll-thread serialization", Self::SERIALIZED)];

    fn build(params: FlushCell) -> Self {
        params
    }
}
