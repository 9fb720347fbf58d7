//! The design's trace vocabulary, `fencing_token`: what the implementation (`lock`, `storage`,
//! `run`) writes, one event a line, and how `conform --trace FILE --model FencingToken` reads it
//! against the model. Clients are numbered from 1 (`c1` in the counterexamples is client 1).
//!
//! ```text
//! {"v":2,"vocabulary":"fencing_token","action":"Acquire","client":1,"token":1}
//! {"v":2,"vocabulary":"fencing_token","action":"Expire"}
//! {"v":2,"vocabulary":"fencing_token","action":"Write","client":1,"token":1,"accepted":true}
//! ```

use std::fmt;

use loadbearing::conformance::ConformEntry;
use loadbearing::conformance::{judge, read_trace};
use loadbearing::conformance::{Beyond, Bound, Conform, TraceEvent};
use serde::{Deserialize, Serialize};

use crate::model::{FencingToken, LockAction, LockState, CLIENTS};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", deny_unknown_fields)]
pub enum FencingEvent {
    /// The lock service granted `client` the lease with `token`.
    Acquire { client: u8, token: u8 },
    /// The lease ran out (the holder does not know yet).
    Expire,
    /// `client` wrote to storage with `token`; `accepted` is storage's answer.
    Write {
        client: u8,
        token: u8,
        accepted: bool,
    },
}

impl TraceEvent for FencingEvent {
    const VOCABULARY: &'static str = "fencing_token";

    fn action(&self) -> &str {
        match self {
            FencingEvent::Acquire { .. } => "Acquire",
            FencingEvent::Expire => "Expire",
            FencingEvent::Write { .. } => "Write",
        }
    }
}

/// Why an event contradicts the model's step, as data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Contradiction {
    /// The token the event names is not the one the model's client holds.
    Token { client: u8, seen: u8, model: u8 },
    /// Storage answered otherwise than the model's storage would.
    Answer {
        token: u8,
        stored: u8,
        seen_accepted: bool,
    },
}

impl fmt::Display for Contradiction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Contradiction::Token {
                client,
                seen,
                model,
            } => write!(f, "c{client} used token {seen}, the model's c{client} holds {model}"),
            Contradiction::Answer {
                token,
                stored,
                seen_accepted: true,
            } => write!(
                f,
                "storage accepted token {token} after accepting {stored}; the model's refuses it"
            ),
            Contradiction::Answer {
                token,
                stored,
                seen_accepted: false,
            } => write!(
                f,
                "storage refused token {token} with {stored} the highest accepted; the model's accepts it"
            ),
        }
    }
}

/// The event's client as the model's index (client 1 is index 0).
fn index(client: u8) -> usize {
    usize::from(client).wrapping_sub(1)
}

impl Conform for FencingToken {
    type Event = FencingEvent;
    type Contradiction = Contradiction;

    fn reports(&self, action: &LockAction, event: &FencingEvent) -> bool {
        match (action, event) {
            (LockAction::Acquire(c), FencingEvent::Acquire { client, .. })
            | (LockAction::Write(c), FencingEvent::Write { client, .. }) => *c == index(*client),
            (LockAction::Expire, FencingEvent::Expire) => true,
            _ => false,
        }
    }

    fn observe(
        &self,
        before: &LockState,
        after: &LockState,
        event: &FencingEvent,
    ) -> Result<(), Contradiction> {
        match *event {
            FencingEvent::Acquire { client, token } => {
                let model = after.held[index(client)].unwrap_or(0);
                if model == token {
                    Ok(())
                } else {
                    Err(Contradiction::Token {
                        client,
                        seen: token,
                        model,
                    })
                }
            }
            FencingEvent::Expire => Ok(()),
            FencingEvent::Write {
                client,
                token,
                accepted,
            } => {
                let c = index(client);
                let model = before.held[c].unwrap_or(0);
                if model != token {
                    return Err(Contradiction::Token {
                        client,
                        seen: token,
                        model,
                    });
                }
                // A refused write leaves the client without its token.
                let model_accepted = after.held[c].is_some();
                if model_accepted == accepted {
                    Ok(())
                } else {
                    Err(Contradiction::Answer {
                        token,
                        stored: before.stored,
                        seen_accepted: accepted,
                    })
                }
            }
        }
    }

    /// Clients other than the model's (`1` to `CLIENTS`): a trace of three clients is not this
    /// model's to judge (`conformance` raises `MaxToken` to the trace's tokens itself).
    fn beyond(&self, events: &[FencingEvent]) -> Option<Beyond> {
        events
            .iter()
            .enumerate()
            .find_map(|(i, event)| match *event {
                FencingEvent::Acquire { client, .. } | FencingEvent::Write { client, .. }
                    if !(1..=CLIENTS).contains(&usize::from(client)) =>
                {
                    Some(Beyond {
                        event: i,
                        what: format!("client {client}"),
                        bound: Bound::Fixed {
                            what: "clients, numbered from 1",
                            most: CLIENTS as u64,
                        },
                    })
                }
                _ => None,
            })
    }

    fn disabled_reason(&self, s: &LockState, event: &FencingEvent) -> Option<String> {
        match *event {
            FencingEvent::Acquire { .. } => Some(match s.holder {
                Some(h) => format!("c{} holds the lease", h + 1),
                None => format!("the model grants {} leases at most", self.max_token),
            }),
            FencingEvent::Expire => Some("no client holds the lease".into()),
            FencingEvent::Write { client, .. } => Some(format!(
                "c{client} holds no token (never granted one, or its last write was refused)"
            )),
        }
    }
}

/// `conform --trace FILE --model FencingToken`: the trace judged against the model built from
/// the constants, with `MaxToken` raised to the highest token the trace was granted (the bound
/// keeps `check` finite; a real run may grant more leases, and the design is the same).
pub fn conformance() -> ConformEntry {
    ConformEntry {
        conform: |knobs, ndjson, options| {
            let trace = read_trace::<FencingEvent>(ndjson, options)?;
            let mut model: FencingToken = loadbearing::knobs::Params::from_resolved(knobs)
                .expect("constants this model resolved build it");
            let granted = trace
                .events()
                .filter_map(|e| match e {
                    FencingEvent::Acquire { token, .. } => Some(*token),
                    _ => None,
                })
                .max()
                .unwrap_or(0);
            model.max_token = model.max_token.max(granted);
            Ok(judge(&model, trace, options)?)
        },
        ..loadbearing::conformance::conformance_entry::<FencingToken>()
    }
}
