//! A design of your own, checked by the whole loadbearing CLI: a lock service with leases and
//! fencing tokens. A client takes the lease and a token one higher than any before; the lease
//! can expire while the client still believes it holds it (a GC pause); storage accepts a
//! write only if its token is at least the highest it has seen. That token check is the guard:
//! the design holds with it, and without it a client whose lease expired overwrites a newer
//! holder's write.
//!
//! ```sh
//! cargo run --example fencing_token -- check              # the suite below, as declared
//! cargo run --example fencing_token -- trace fencing_unchecked   # the stale write, step by step
//! cargo run --example fencing_token -- mutate             # the token check is load-bearing
//! ```
//!
//! What makes it yours: the model (a Stateright `Model` with loadbearing's `Spec` and
//! `Configured`), its knob and guard, and a suite file; `loadbearing::cli::main_with` hands them
//! to the CLI.

use std::process::ExitCode;

use loadbearing_refinement::{Spec, Variables};
use loadbearing_specs::infra::knobs::{Flag, Knob, KnobError, Params, Resolved};
use loadbearing_specs::{Configured, Guard};
use stateright::{Model, Property};

/// Clients that take the lease in turn.
const CLIENTS: usize = 2;
/// Leases granted at most (each with the next token), to keep the state space finite.
const MAX_TOKEN: u8 = 3;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct LockState {
    /// Who holds the lease, as the lock service sees it.
    holder: Option<usize>,
    /// The last token issued.
    issued: u8,
    /// The token each client holds and believes valid (an expired lease leaves it).
    held: [Option<u8>; CLIENTS],
    /// The highest token storage has accepted a write with, and whose write it holds.
    stored: u8,
    writer: Option<usize>,
    /// A write with a token below one storage had already accepted landed.
    stale_landed: bool,
}

#[derive(Clone, PartialEq)]
enum LockAction {
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
struct FencingToken {
    token_check: bool,
}

impl FencingToken {
    const TOKEN_CHECK: Flag = Flag::new(
        "TokenCheck",
        true,
        "storage refuses a write whose token is below the highest it has accepted",
    );
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
        if s.holder.is_none() && s.issued < MAX_TOKEN {
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
            Property::sometimes("ThirdLeaseWrote", |_, s: &LockState| s.stored == MAX_TOKEN),
        ]
    }
}

impl Spec for FencingToken {
    fn variables(&self, s: &LockState) -> Variables {
        let client = |c: Option<usize>| c.map_or("none".to_string(), |c| format!("c{}", c + 1));
        vec![
            ("holder", client(s.holder)),
            ("issued", s.issued.to_string()),
            (
                "held",
                format!(
                    "[{}]",
                    s.held
                        .iter()
                        .map(|t| t.map_or("none".to_string(), |t| t.to_string()))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
            ("stored", s.stored.to_string()),
            ("writer", client(s.writer)),
            ("staleLanded", s.stale_landed.to_string()),
        ]
    }

    fn actor(&self, action: &LockAction) -> String {
        match action {
            LockAction::Acquire(c) | LockAction::Write(c) => format!("c{}", c + 1),
            LockAction::Expire => "lock service".into(),
        }
    }
}

impl Params for FencingToken {
    const KNOBS: &'static [Knob] = &[Self::TOKEN_CHECK.knob()];

    fn from_resolved(k: &Resolved) -> Result<Self, KnobError> {
        Ok(FencingToken {
            token_check: k.get(Self::TOKEN_CHECK)?,
        })
    }
}

impl Configured for FencingToken {
    const NAME: &'static str = "FencingToken";
    const DOC: &'static str = "A lock service with leases and fencing tokens: storage accepts a \
        write only with a token at least the highest it has accepted.";
    type Params = FencingToken;
    const GUARDS: &'static [Guard] = &[Guard::off("storage token check", Self::TOKEN_CHECK)];

    fn build(params: FencingToken) -> Self {
        params
    }
}

/// The suite: the design holds with the token check; without it, the stale write lands.
const SUITE: &str = r#"suite = "fencing-token"

[[config]]
name = "fencing_holds"
model = "FencingToken"
properties = ["INV_NoStaleWrite", "ThirdLeaseWrote"]
expected = "holds"

[[config]]
name = "fencing_unchecked"
model = "FencingToken"
constants = { TokenCheck = false }
properties = ["INV_NoStaleWrite"]
expected = "violates INV_NoStaleWrite"
"#;

fn main() -> ExitCode {
    loadbearing::cli::main_with(loadbearing::cli::Design {
        models: vec![loadbearing_registry::model_entry::<FencingToken>()],
        conformance: Vec::new(),
        suite: Some(("fencing-token.toml", SUITE)),
    })
}
