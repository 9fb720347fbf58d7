//! The knobs the actor models declare alike: the network's faults, the log's length, the
//! zombie's budget.

use crate::infra::knobs::{Choice, Constants, Flag, Nat, Params, Resolved};
use crate::infra::vocab::{LAST_OFFSET, OFFSETS_LIMIT};

use super::NetKind;

/// Every actor model's `Network` constant.
pub const NETWORK: Choice<NetKind> = Choice::new(
    "Network",
    "ordered",
    "ordered per connection, or messages race each other",
);

/// The `Lossy` constant of the actor models whose network may lose any message.
pub const LOSSY: Flag = Flag::new("Lossy", false, "the network may lose any message");

/// The `MaxOffset` of the actor models over one key's event log: smaller by default than the
/// shared-state specs', since every message of the actors is a state of its own.
pub const MAX_OFFSET: Nat = Nat::new(
    "MaxOffset",
    1,
    LAST_OFFSET as u64,
    2,
    "events at offsets 1..MaxOffset",
)
.max_because(OFFSETS_LIMIT);

/// The `ZombieCommits` of the actor models whose zombie flow starts transactions.
pub const ZOMBIE_COMMITS: Nat = Nat::new(
    "ZombieCommits",
    0,
    u8::MAX as u64,
    2,
    "transactions the zombie flow starts",
)
.max_because("the zombie counts its transactions in a u8");

/// A model's parameters at its knobs' defaults: the spec's own constants, declared once, in the
/// knobs.
pub fn knob_defaults<P: Params>() -> P {
    let defaults = Resolved::resolve::<P>("an actor model", &Constants::new())
        .expect("a model's knobs resolve to their defaults");
    P::from_resolved(&defaults).expect("a model reads its knobs' defaults")
}

/// A model's parameters, one field a knob (an associated const of the params declared beside
/// them, `Self::COUPLED`, or one the actor models share, `knobs::MAX_OFFSET`): the struct, and
/// its `Params` with `KNOBS` in the fields' order and `from_resolved` reading each, and
/// `Default` at the knobs' defaults. One list, so a knob cannot be declared and not read.
#[macro_export]
macro_rules! knob_params {
    (
        $(#[$meta:meta])*
        pub struct $params:ident { $($field:ident: $ty:ty = $knob:path),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub struct $params {
            $(pub $field: $ty,)+
        }

        impl $crate::infra::knobs::Params for $params {
            const KNOBS: &'static [$crate::infra::knobs::Knob] = &[$($knob.knob()),+];

            fn from_resolved(
                k: &$crate::infra::knobs::Resolved,
            ) -> Result<Self, $crate::infra::knobs::KnobError> {
                Ok($params {
                    $($field: k.get($knob)?,)+
                })
            }
        }

        /// The spec's own constants: the knobs' defaults.
        impl Default for $params {
            fn default() -> Self {
                $crate::infra::actors::knobs::knob_defaults()
            }
        }
    };
}
