//! The design, `FencingToken`: a lock service with leases and fencing tokens. A client takes
//! the lease and a token one higher than any before; the lease can expire while the client
//! still believes it holds it (a GC pause); storage accepts a write only if its token is at
//! least the highest it has accepted. That token check is the guard: the design holds with it,
//! and without it a client whose lease expired overwrites a newer holder's write.

use loadbearing::knobs::{Flag, Nat};
use loadbearing::{Configured, Guard};
use loadbearing::{MappedRefinement, Refinement, Shown, Spec, Variables};
use loadbearing::{Model, Property};

use crate::token_order::{OrderState, TokenOrder};

/// Clients that take the lease in turn.
pub const CLIENTS: usize = 2;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LockState {
    /// Who holds the lease, as the lock service sees it.
    pub holder: Option<usize>,
    /// The last token issued.
    pub issued: u8,
    /// The token each client holds and believes valid (an expired lease leaves it).
    pub held: [Option<u8>; CLIENTS],
    /// The highest token storage has accepted a write with, and whose write it holds.
    pub stored: u8,
    pub writer: Option<usize>,
    /// A write with a token below one storage had already accepted landed.
    pub stale_landed: bool,
}

#[derive(Clone, PartialEq)]
pub enum LockAction {
    Acquire(usize),
    Expire,
    Write(usize),
}

/// As the counterexamples print it: clients by the names the swimlane's columns give them.
impl std::fmt::Debug for LockAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LockAction::Acquire(c) => write!(f, "Acquire(c{})", c + 1),
            LockAction::Expire => write!(f, "Expire"),
            LockAction::Write(c) => write!(f, "Write(c{})", c + 1),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FencingToken {
    pub token_check: bool,
    /// Leases granted at most (each with the next token): what keeps the state space finite.
    pub max_token: u8,
}

// The knobs, each declared once beside the field it sets.
loadbearing::knobs::params! {
    FencingToken {
        token_check: pub const TOKEN_CHECK: Flag = Flag::new(
            "TokenCheck",
            true,
            "storage refuses a write whose token is below the highest it has accepted",
        );
        max_token: pub const MAX_TOKEN: Nat<u8> = Nat::new(
            "MaxToken",
            1,
            32,
            3,
            "leases the lock service grants at most, each with the next token",
        );
    }
}

impl FencingToken {
    /// The refinement property: storage's token never goes back (`TokenOrder`).
    pub const REFINES: &'static str = "RefTokenOrder";
}

impl Model for FencingToken {
    type State = LockState;
    type Action = LockAction;

    fn init_states(&self) -> Vec<LockState> {
        vec![LockState {
            holder: None,
            issued: 0,
            held: [None; CLIENTS],
            stored: 0,
            writer: None,
            stale_landed: false,
        }]
    }

    fn actions(&self, s: &LockState, actions: &mut Vec<LockAction>) {
        if s.holder.is_none() && s.issued < self.max_token {
            actions.extend((0..CLIENTS).map(LockAction::Acquire));
        }
        if s.holder.is_some() {
            actions.push(LockAction::Expire);
        }
        actions.extend(
            (0..CLIENTS)
                .filter(|&c| s.held[c].is_some())
                .map(LockAction::Write),
        );
    }

    fn next_state(&self, s: &LockState, action: LockAction) -> Option<LockState> {
        let mut next = s.clone();
        match action {
            LockAction::Acquire(c) => {
                next.issued += 1;
                next.holder = Some(c);
                next.held[c] = Some(next.issued);
            }
            // The lease times out; the client does not know yet.
            LockAction::Expire => next.holder = None,
            LockAction::Write(c) => {
                let token = s.held[c]?;
                if self.token_check && token < s.stored {
                    // Refused: the client learns it is fenced and drops its token.
                    next.held[c] = None;
                } else {
                    next.stale_landed |= token < s.stored;
                    next.stored = token;
                    next.writer = Some(c);
                }
            }
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("INV_NoStaleWrite", |_, s: &LockState| !s.stale_landed),
            Property::sometimes("LastLeaseWrote", |m: &FencingToken, s: &LockState| {
                s.stored == m.max_token
            }),
        ]
    }
}

/// The image of a state in the abstract spec: the tokens granted and the one storage holds.
fn token_order(s: &LockState) -> OrderState {
    OrderState {
        granted: s.issued,
        stored: s.stored,
    }
}

impl Spec for FencingToken {
    fn variables(&self, s: &LockState) -> Variables {
        let client =
            |c: Option<usize>| Shown::name(c.map_or("none".to_string(), |c| format!("c{}", c + 1)));
        vec![
            ("holder", client(s.holder)),
            ("issued", s.issued.into()),
            (
                "held",
                Shown::list(
                    s.held
                        .iter()
                        .map(|t| t.map_or(Shown::name("none"), Shown::from)),
                ),
            ),
            ("stored", s.stored.into()),
            ("writer", client(s.writer)),
            ("staleLanded", s.stale_landed.into()),
        ]
    }

    fn actor(&self, action: &LockAction) -> String {
        match action {
            LockAction::Acquire(c) | LockAction::Write(c) => format!("c{}", c + 1),
            LockAction::Expire => "lock service".into(),
        }
    }

    fn refinements(&self) -> Vec<Box<dyn Refinement<LockState>>> {
        vec![Box::new(MappedRefinement::new(
            Self::REFINES,
            TokenOrder {
                max_token: self.max_token,
            },
            token_order,
        ))]
    }
}

impl Configured for FencingToken {
    const NAME: &'static str = "FencingToken";
    const DOC: &'static str = "A lock service with leases and fencing tokens: storage accepts a \
        write only with a token at least the highest it has accepted. Refines `TokenOrder`: \
        storage's token never goes back.";
    type Params = FencingToken;
    const GUARDS: &'static [Guard] = &[Guard::off("storage token check", Self::TOKEN_CHECK)];

    fn build(params: FencingToken) -> Self {
        params
    }
}
