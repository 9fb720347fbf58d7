#![doc = include_str!("model.md")]

use std::fmt;

use loadbearing_refinement::Shown;
use loadbearing_refinement::{Model, Property};
use loadbearing_refinement::{Spec, Variables};

use crate::infra::knobs::Nat;
use crate::infra::vocab::{Offsets, Op};
use crate::Configured;

/// At most this many keys (the state keeps fixed arrays, so hashing never allocates, and an
/// event's key takes two bits of [`Input::keys`]).
pub const MAX_KEYS: usize = 4;

#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct Durable {
    pub present: bool,
    pub offset: u8,
    pub value: Offsets,
}

impl Durable {
    pub const ABSENT: Durable = Durable {
        present: false,
        offset: 0,
        value: Offsets::EMPTY,
    };
}

impl From<Durable> for Shown {
    fn from(d: Durable) -> Shown {
        if d == Durable::ABSENT {
            Shown::name("absent")
        } else {
            Shown::record([
                ("present", d.present.into()),
                ("offset", d.offset.into()),
                ("value", d.value.into()),
            ])
        }
    }
}

impl fmt::Display for Durable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Durable::ABSENT {
            write!(f, "absent")
        } else {
            write!(
                f,
                "{{present: {}, offset: {}, value: {}}}",
                self.present, self.offset, self.value
            )
        }
    }
}

/// `input[o]` for `o` in `1..=MaxOffset`: key in bits `2o..2o+2` of `keys`, delete in bit `o`.
/// Two bits a key fit every offset a set of offsets holds ([`LAST_OFFSET`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Input {
    pub keys: u64,
    pub deletes: u32,
}

impl Input {
    pub fn key(self, offset: u8) -> usize {
        ((self.keys >> (2 * offset)) & 0b11) as usize
    }

    pub fn op(self, offset: u8) -> Op {
        if self.deletes & (1 << offset) != 0 {
            Op::Delete
        } else {
            Op::Persist
        }
    }

    /// One key's log as a single-key input, the way a one-key backend sees it.
    pub fn single_key(deletes: u32) -> Input {
        Input { keys: 0, deletes }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct SwsState {
    pub input: Input,
    pub durable: [Durable; MAX_KEYS],
    pub hwm: [u8; MAX_KEYS],
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum SwsAction {
    /// Commit(k), choosing the offset `o` it folds up to.
    Commit { key: u8, offset: u8 },
}

impl fmt::Debug for SwsAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SwsAction::Commit { key, offset } => write!(f, "Commit(k{}, {offset})", key + 1),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SingleWriterStore {
    pub keys: u8,
    pub max_offset: u8,
}

impl SingleWriterStore {
    /// CorrectFor(k, c): absent when k has no events in 1..c or its latest is a delete.
    pub fn correct_for(&self, input: Input, key: usize, upto: u8) -> Durable {
        let mut latest = 0;
        let mut active = Offsets::EMPTY;
        for o in 1..=upto {
            if input.key(o) != key {
                continue;
            }
            latest = o;
            active = match input.op(o) {
                Op::Persist => active.with(o),
                Op::Delete => Offsets::EMPTY,
            };
        }
        if latest == 0 || input.op(latest) == Op::Delete {
            Durable::ABSENT
        } else {
            Durable {
                present: true,
                offset: latest,
                value: active,
            }
        }
    }

    pub(crate) fn durable_correct(&self, s: &SwsState) -> bool {
        (0..self.keys as usize).all(|k| s.durable[k] == self.correct_for(s.input, k, s.hwm[k]))
    }

    pub(crate) fn type_ok(&self, s: &SwsState) -> bool {
        let m = self.max_offset;
        (1..=m).all(|o| s.input.key(o) < self.keys as usize)
            && (0..self.keys as usize).all(|k| {
                s.hwm[k] <= m && s.durable[k].offset <= m && s.durable[k].value.within(1, m)
            })
    }

    fn progressed(&self, s: &SwsState) -> bool {
        (0..self.keys as usize).all(|k| s.hwm[k] == self.max_offset)
    }
}

impl Model for SingleWriterStore {
    type State = SwsState;
    type Action = SwsAction;

    fn init_states(&self) -> Vec<SwsState> {
        let m = self.max_offset;
        let keys = self.keys as u64;
        let mut states = Vec::new();
        // Wrapping would silently check fewer logs; this many could never be enumerated anyway.
        let combos = (2 * keys)
            .checked_pow(m as u32)
            .expect("fewer than 2^64 initial logs");
        for mut code in 0..combos {
            let mut input = Input {
                keys: 0,
                deletes: 0,
            };
            for o in 1..=m {
                let choice = code % (2 * keys);
                code /= 2 * keys;
                input.keys |= (choice / 2) << (2 * o);
                if choice % 2 == 1 {
                    input.deletes |= 1 << o;
                }
            }
            states.push(SwsState {
                input,
                durable: [Durable::ABSENT; MAX_KEYS],
                hwm: [0; MAX_KEYS],
            });
        }
        states
    }

    fn actions(&self, s: &SwsState, actions: &mut Vec<SwsAction>) {
        for key in 0..self.keys {
            for offset in s.hwm[key as usize] + 1..=self.max_offset {
                actions.push(SwsAction::Commit { key, offset });
            }
        }
    }

    fn next_state(&self, s: &SwsState, action: SwsAction) -> Option<SwsState> {
        match action {
            SwsAction::Commit { key, offset } => {
                let k = key as usize;
                let mut next = s.clone();
                next.hwm[k] = offset;
                next.durable[k] = self.correct_for(s.input, k, offset);
                Some(next)
            }
        }
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("INV_DurableCorrect", |m: &Self, s: &SwsState| {
                m.durable_correct(s)
            }),
            Property::always("TypeOK", |m: &Self, s: &SwsState| m.type_ok(s)),
            Property::eventually("LIVE_Progress", |m: &Self, s: &SwsState| m.progressed(s)),
            Property::sometimes("SomeKeyDurable", |m: &Self, s: &SwsState| {
                (0..m.keys as usize).any(|k| s.durable[k].present)
            }),
        ]
    }
}

impl Spec for SingleWriterStore {
    fn variables(&self, s: &SwsState) -> Variables {
        let keys = 0..self.keys as usize;
        let input = (1..=self.max_offset).map(|o| {
            let op = s.input.op(o).name();
            Shown::name(format!("{o}:k{}/{op}", s.input.key(o) + 1))
        });
        let durable = keys.clone().map(|k| s.durable[k]);
        let hwm = keys.map(|k| s.hwm[k]);
        vec![
            ("input", Shown::sequence(input)),
            ("durable", Shown::list(durable)),
            ("hwm", Shown::list(hwm)),
        ]
    }

    fn fairness_groups(&self) -> Vec<String> {
        (1..=self.keys).map(|k| format!("Commit(k{k})")).collect()
    }

    fn fairness_group(&self, action: &SwsAction) -> Option<usize> {
        match action {
            SwsAction::Commit { key, .. } => Some(*key as usize),
        }
    }

    fn actor(&self, _action: &SwsAction) -> String {
        "store".into()
    }
}

crate::params! {
    SingleWriterStore {
        keys: pub const KEYS: Nat = Nat::new(
            "Keys",
            1,
            MAX_KEYS as u64,
            1,
            "how many keys (the set {k1..kN})",
        )
        .max_because("the state keeps 4 keys in fixed arrays, an event's key in 2 bits");
        max_offset: pub const MAX_OFFSET: Nat = crate::infra::vocab::MAX_OFFSET;
    }
}

impl Configured for SingleWriterStore {
    const NAME: &'static str = "SingleWriterStore";
    const DOC: &'static str = include_str!("model.md");
    type Params = SingleWriterStore;

    fn build(params: SingleWriterStore) -> Self {
        params
    }
}

/// The image of a one-key backend's row in the abstract spec: the refinement mapping shared by
/// Cassandra, Kafka and Epoch. A tombstone keeps its offset, so the mapped hwm does not move back
/// on delete; a row-removing delete maps it back to 0.
pub fn single_key_image(deletes: u32, cell: crate::infra::vocab::Cell) -> SwsState {
    let mut durable = [Durable::ABSENT; MAX_KEYS];
    if cell.present && !cell.deleted {
        durable[0] = Durable {
            present: true,
            offset: cell.offset,
            value: cell.contents,
        };
    }
    let mut hwm = [0; MAX_KEYS];
    hwm[0] = cell.offset;
    SwsState {
        input: Input::single_key(deletes),
        durable,
        hwm,
    }
}
