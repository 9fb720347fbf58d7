//! The design, `CasRegister`: one register that clients increment by reading it and then
//! compare-and-setting the value they read to one more, and that they may also overwrite. The
//! register's compare is the guard: with it a cas from a stale read fails and the client reads
//! again; without it (a cas that only sets) a client that read before another's increment
//! writes over it, and that increment is lost.

use loadbearing::knobs::{Flag, Nat};
use loadbearing::{Configured, Guard, Model, Property, Shown, Spec, Variables};

/// The clients of the model; a history of more is past what it holds.
pub const CLIENTS: usize = 3;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RegisterState {
    /// What the register holds.
    pub value: u8,
    /// The value each client last read and has not yet tried to increment.
    pub held: [Option<u8>; CLIENTS],
    /// A cas set the register though it did not hold the value the client read: an
    /// increment made since that read is lost.
    pub lost_update: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum RegisterAction {
    /// Client `c` reads the register.
    Read(usize),
    /// Client `c` overwrites the register with a value.
    Write(usize, u8),
    /// Client `c` compares-and-sets the value it read (`from`) to one more.
    Cas(usize, u8),
}

/// As the counterexamples print it: clients as the swimlane names their columns.
impl std::fmt::Debug for RegisterAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RegisterAction::Read(c) => write!(f, "Read(c{})", c + 1),
            RegisterAction::Write(c, v) => write!(f, "Write(c{}, {v})", c + 1),
            RegisterAction::Cas(c, from) => write!(f, "Cas(c{}, {from}->{})", c + 1, from + 1),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CasRegister {
    /// The register's guard: a cas sets only where the register holds the value compared.
    pub compare: bool,
    /// The largest value the register holds: what keeps the state space finite.
    pub max_value: u8,
}

// The knobs, each declared once beside the field it sets.
loadbearing::knobs::params! {
    CasRegister {
        compare: pub const COMPARE: Flag = Flag::new(
            "Compare",
            true,
            "a cas sets the register only if it holds the value the cas compares with",
        );
        max_value: pub const MAX_VALUE: Nat<u8> = Nat::new(
            "MaxValue",
            1,
            255,
            3,
            "the largest value the register holds: increments stop there, writes go up to it",
        );
    }
}

impl Model for CasRegister {
    type State = RegisterState;
    type Action = RegisterAction;

    fn init_states(&self) -> Vec<RegisterState> {
        vec![RegisterState {
            value: 0,
            held: [None; CLIENTS],
            lost_update: false,
        }]
    }

    fn actions(&self, s: &RegisterState, actions: &mut Vec<RegisterAction>) {
        for c in 0..CLIENTS {
            actions.push(RegisterAction::Read(c));
            actions.extend((0..=self.max_value).map(|v| RegisterAction::Write(c, v)));
            if let Some(from) = s.held[c].filter(|&from| from < self.max_value) {
                actions.push(RegisterAction::Cas(c, from));
            }
        }
    }

    fn next_state(&self, s: &RegisterState, action: RegisterAction) -> Option<RegisterState> {
        let mut next = s.clone();
        match action {
            RegisterAction::Read(c) => next.held[c] = Some(s.value),
            RegisterAction::Write(_, v) => next.value = v,
            RegisterAction::Cas(c, from) => {
                if s.held[c] != Some(from) {
                    return None;
                }
                // Swapped or not, the client reads again before its next cas.
                next.held[c] = None;
                if !self.compare || s.value == from {
                    next.lost_update |= s.value != from;
                    next.value = from + 1;
                }
            }
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("INV_NoLostUpdate", |_, s: &RegisterState| !s.lost_update),
            Property::sometimes("ReachesMax", |m: &CasRegister, s: &RegisterState| {
                s.value == m.max_value
            }),
        ]
    }
}

impl Spec for CasRegister {
    fn variables(&self, s: &RegisterState) -> Variables {
        // What each client holds: a value (a number to machines) or `none`.
        let held = s
            .held
            .iter()
            .map(|h| h.map_or(Shown::name("none"), Shown::from));
        vec![
            ("value", s.value.into()),
            ("held", Shown::list(held)),
            ("lostUpdate", s.lost_update.into()),
        ]
    }

    fn actor(&self, action: &RegisterAction) -> String {
        match action {
            RegisterAction::Read(c) | RegisterAction::Write(c, _) | RegisterAction::Cas(c, _) => {
                format!("c{}", c + 1)
            }
        }
    }
}

impl Configured for CasRegister {
    const NAME: &'static str = "CasRegister";
    const DOC: &'static str = "A compare-and-set register that clients increment by read-then-cas \
        and overwrite: with the compare no increment is lost.";
    type Params = CasRegister;
    const GUARDS: &'static [Guard] = &[Guard::off("the cas compares", Self::COMPARE)];

    fn build(params: CasRegister) -> Self {
        params
    }
}
