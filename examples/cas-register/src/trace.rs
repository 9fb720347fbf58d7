//! The register's trace vocabulary, `cas_register`: what the implementation's clients record,
//! one operation a line with its call and return times, and how
//! `conform --trace FILE --model CasRegister` reads it. Clients are numbered from 1.
//!
//! ```text
//! {"v":2,"vocabulary":"cas_register","call":0,"ret":3,"action":"Read","client":1,"value":0}
//! {"v":2,"vocabulary":"cas_register","call":1,"ret":2,"action":"Write","client":2,"value":2,"ok":true}
//! {"v":2,"vocabulary":"cas_register","call":4,"ret":5,"action":"Cas","client":1,"expected":0,"new":1,"swapped":false}
//! {"v":2,"vocabulary":"cas_register","call":6,"ret":null,"action":"Cas","client":2,"expected":2,"new":3}
//! ```
//!
//! The last line's reply never came (`"ret": null`, no `swapped`): the cas may have set the
//! register at any time after its call, or never.

use std::fmt;

use loadbearing::conformance::{judge, read_trace, ConformEntry};
use loadbearing::conformance::{Beyond, Bound, Conform, TraceEvent};
use serde::{Deserialize, Serialize};

use crate::model::{CasRegister, RegisterAction, RegisterState, CLIENTS};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action")]
pub enum CasEvent {
    /// `client` read `value`.
    Read { client: u8, value: u64 },
    /// `client` wrote `value`; `ok` when the register acknowledged it, absent when the reply
    /// never came.
    Write {
        client: u8,
        value: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ok: Option<bool>,
    },
    /// `client` compared-and-set `expected` to `new`; `swapped` is the register's answer,
    /// absent when the reply never came.
    Cas {
        client: u8,
        expected: u64,
        new: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        swapped: Option<bool>,
    },
}

impl CasEvent {
    pub fn client(&self) -> u8 {
        match *self {
            CasEvent::Read { client, .. }
            | CasEvent::Write { client, .. }
            | CasEvent::Cas { client, .. } => client,
        }
    }

    /// The register values the event names.
    pub fn values(&self) -> impl Iterator<Item = u64> {
        let (a, b) = match *self {
            CasEvent::Read { value, .. } | CasEvent::Write { value, .. } => (value, value),
            CasEvent::Cas { expected, new, .. } => (expected, new),
        };
        [a, b].into_iter()
    }
}

impl TraceEvent for CasEvent {
    const VOCABULARY: &'static str = "cas_register";

    fn action(&self) -> &str {
        match self {
            CasEvent::Read { .. } => "Read",
            CasEvent::Write { .. } => "Write",
            CasEvent::Cas { .. } => "Cas",
        }
    }

    /// A write or a cas whose reply never came knows nothing of what it did.
    fn has_outcome(&self) -> bool {
        match self {
            CasEvent::Read { .. } => true,
            CasEvent::Write { ok, .. } => ok.is_some(),
            CasEvent::Cas { swapped, .. } => swapped.is_some(),
        }
    }
}

/// Why an event contradicts the model's step, as data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Contradiction {
    /// A read saw another value than the model's register holds.
    Read { seen: u64, model: u8 },
    /// A cas's new value is not one more than the value it compares.
    NotAnIncrement { expected: u64, new: u64 },
    /// The register answered a cas otherwise than the model's would.
    Cas {
        expected: u64,
        held: u8,
        seen_swapped: bool,
    },
    /// A write the register refused: the model's always takes it.
    WriteRefused { value: u64 },
}

impl fmt::Display for Contradiction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Contradiction::Read { seen, model } => {
                write!(f, "read {seen}, the model's register holds {model}")
            }
            Contradiction::NotAnIncrement { expected, new } => {
                write!(f, "cas {expected}->{new} is not an increment")
            }
            Contradiction::Cas {
                expected,
                held,
                seen_swapped: true,
            } => write!(
                f,
                "the cas from {expected} set the register while it held {held}; the model's refuses it"
            ),
            Contradiction::Cas {
                expected,
                held,
                seen_swapped: false,
            } => write!(
                f,
                "the cas from {expected} failed while the register held {held}; the model's sets it"
            ),
            Contradiction::WriteRefused { value } => {
                write!(f, "the write of {value} was refused; the model's takes every write")
            }
        }
    }
}

/// The event's client as the model's index (client 1 is index 0).
fn index(client: u8) -> usize {
    usize::from(client).wrapping_sub(1)
}

impl Conform for CasRegister {
    type Event = CasEvent;
    type Contradiction = Contradiction;

    fn reports(&self, action: &RegisterAction, event: &CasEvent) -> bool {
        match (*action, *event) {
            (RegisterAction::Read(c), CasEvent::Read { client, .. }) => c == index(client),
            (RegisterAction::Write(c, v), CasEvent::Write { client, value, ok }) => {
                ok.is_some() && c == index(client) && u64::from(v) == value
            }
            (
                RegisterAction::Cas(c, from),
                CasEvent::Cas {
                    client,
                    expected,
                    swapped,
                    ..
                },
            ) => swapped.is_some() && c == index(client) && u64::from(from) == expected,
            _ => false,
        }
    }

    fn observe(
        &self,
        before: &RegisterState,
        _after: &RegisterState,
        event: &CasEvent,
    ) -> Result<(), Contradiction> {
        match *event {
            CasEvent::Read { value, .. } if value != u64::from(before.value) => {
                Err(Contradiction::Read {
                    seen: value,
                    model: before.value,
                })
            }
            CasEvent::Write {
                value,
                ok: Some(false),
                ..
            } => Err(Contradiction::WriteRefused { value }),
            CasEvent::Cas { expected, new, .. } if new != expected + 1 => {
                Err(Contradiction::NotAnIncrement { expected, new })
            }
            CasEvent::Cas {
                expected,
                swapped: Some(seen_swapped),
                ..
            } => {
                let model_swapped = !self.compare || u64::from(before.value) == expected;
                if model_swapped == seen_swapped {
                    Ok(())
                } else {
                    Err(Contradiction::Cas {
                        expected,
                        held: before.value,
                        seen_swapped,
                    })
                }
            }
            _ => Ok(()),
        }
    }

    /// A write or cas whose reply never came is a note that it was sent; what it did is
    /// the unresolved step below, placed where the model allows it, or never.
    fn is_stutter(&self, event: &CasEvent) -> bool {
        !event.has_outcome()
    }

    fn unresolved(&self, events: &[CasEvent]) -> Vec<RegisterAction> {
        events
            .iter()
            .filter(|e| !e.has_outcome())
            .filter_map(|e| match *e {
                CasEvent::Write { client, value, .. } => Some(RegisterAction::Write(
                    index(client),
                    u8::try_from(value).ok()?,
                )),
                CasEvent::Cas {
                    client, expected, ..
                } => Some(RegisterAction::Cas(
                    index(client),
                    u8::try_from(expected).ok()?,
                )),
                CasEvent::Read { .. } => None,
            })
            .collect()
    }

    /// Clients past the model's three, and values past `MaxValue`.
    fn beyond(&self, events: &[CasEvent]) -> Option<Beyond> {
        events.iter().enumerate().find_map(|(i, event)| {
            let client = event.client();
            if !(1..=CLIENTS).contains(&usize::from(client)) {
                return Some(Beyond {
                    event: i,
                    what: format!("client {client}"),
                    bound: Bound::Fixed {
                        what: "clients, numbered from 1",
                        most: CLIENTS as u64,
                    },
                });
            }
            event.values().find_map(|value| {
                CasRegister::MAX_VALUE.passed_by(u64::from(self.max_value), value, i, || {
                    format!("value {value}")
                })
            })
        })
    }

    fn disabled_reason(&self, s: &RegisterState, event: &CasEvent) -> Option<String> {
        match *event {
            CasEvent::Cas {
                client, expected, ..
            } => Some(match s.held[index(client)] {
                Some(held) => format!("c{client} last read {held}, not {expected}"),
                None => format!("c{client} has read nothing since its last cas"),
            }),
            _ => None,
        }
    }
}

/// `conform --trace FILE --model CasRegister`: the trace judged against the model built from
/// the constants, `MaxValue` raised to the largest value the trace names (the bound keeps
/// `check` finite; a real run counts higher, and the design is the same). A value past what
/// `MaxValue` can be is refused, naming the bound.
pub fn conformance() -> ConformEntry {
    ConformEntry {
        conform: |knobs, ndjson, options| {
            let trace = read_trace::<CasEvent>(ndjson, options)?;
            let mut model: CasRegister = loadbearing::knobs::Params::from_resolved(knobs)
                .expect("constants this model resolved build it");
            let largest = trace.events().flat_map(CasEvent::values).max().unwrap_or(0);
            // Up to the knob's own maximum, 255: `beyond` names a larger value.
            let reachable = u8::try_from(largest).unwrap_or(u8::MAX);
            model.max_value = model.max_value.max(reachable);
            Ok(judge(&model, trace, options)?)
        },
        ..loadbearing::conformance::conformance_entry::<CasRegister>()
    }
}
