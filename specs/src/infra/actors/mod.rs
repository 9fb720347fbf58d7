//! What the actor models share: the network a config chooses and the swimlane of a step.

pub mod trace;

use std::fmt::Display;

use stateright::actor::{ActorModelAction, Id, Network};

use crate::infra::knobs::{Choice, Choices, Flag};
use crate::infra::vocab::{Offsets, Op, Ops};

/// The network a config chooses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetKind {
    Ordered,
    Unordered,
}

/// A config's `Network` constant: ordered per connection, or messages race each other.
impl Choices for NetKind {
    const NAMES: &'static [&'static str] = &["ordered", "unordered"];
    fn named(name: &str) -> Option<NetKind> {
        match name {
            "ordered" => Some(NetKind::Ordered),
            "unordered" => Some(NetKind::Unordered),
            _ => None,
        }
    }
}

/// Every actor model's `Network` constant.
pub const NETWORK: Choice<NetKind> = Choice::new(
    "Network",
    "ordered",
    "ordered per connection, or messages race each other",
);

/// The `Lossy` constant of the actor models whose network may lose any message.
pub const LOSSY: Flag = Flag::new("Lossy", false, "the network may lose any message");

impl NetKind {
    pub fn empty<M: Clone + Eq + std::hash::Hash + std::fmt::Debug>(self) -> Network<M> {
        match self {
            NetKind::Ordered => Network::new_ordered([]),
            NetKind::Unordered => Network::new_unordered_nonduplicating([]),
        }
    }
}

/// The party a step belongs to: the receiver of a delivery, the owner of a timer or crash,
/// the network for a lost message.
pub fn swimlane<M, T, R>(
    action: &ActorModelAction<M, T, R>,
    name: fn(Id) -> &'static str,
) -> String {
    match action {
        ActorModelAction::Deliver { dst, .. } => name(*dst).into(),
        ActorModelAction::Drop(_) => "network".into(),
        ActorModelAction::Timeout(id, _)
        | ActorModelAction::Crash(id)
        | ActorModelAction::Recover(id) => name(*id).into(),
        ActorModelAction::SelectRandom { actor, .. } => name(*actor).into(),
    }
}

/// A message step as every actor model names it: a delivery `src→dst msg`, a lost message
/// `lost src→dst msg`; `None` for an actor's own steps (a timeout, a crash), which each model
/// names itself.
pub fn message_step<M: Display, T, R>(
    action: &ActorModelAction<M, T, R>,
    name: fn(Id) -> &'static str,
) -> Option<String> {
    match action {
        ActorModelAction::Deliver { src, dst, msg } => {
            Some(format!("{}→{} {msg}", name(*src), name(*dst)))
        }
        ActorModelAction::Drop(env) => Some(format!(
            "lost {}→{} {}",
            name(env.src),
            name(env.dst),
            env.msg
        )),
        _ => None,
    }
}

/// Every message in flight as (source, destination, message). Stateright 0.31's
/// `Network::iter_all` never ends on an ordered network, so the channels are walked here.
pub fn messages<M: Clone + Eq + std::hash::Hash + std::fmt::Debug>(
    network: &Network<M>,
) -> Vec<(Id, Id, &M)> {
    match network {
        Network::Ordered(channels) => channels
            .iter()
            .flat_map(|(&(src, dst), msgs)| msgs.iter().map(move |m| (src, dst, m)))
            .collect(),
        Network::UnorderedNonDuplicating(multiset) => multiset
            .iter()
            .flat_map(|(env, &n)| (0..n).map(move |_| (env.src, env.dst, &env.msg)))
            .collect(),
        Network::UnorderedDuplicating(set, _) => {
            set.iter().map(|e| (e.src, e.dst, &e.msg)).collect()
        }
    }
}

/// The messages in flight, one `src→dst msg` each. An unordered network is shown sorted,
/// since its order means nothing.
pub fn in_flight<M: Display + Clone + Eq + std::hash::Hash + std::fmt::Debug>(
    network: &Network<M>,
    kind: NetKind,
    name: fn(Id) -> &'static str,
) -> Vec<String> {
    let mut shown: Vec<String> = messages(network)
        .into_iter()
        .map(|(src, dst, msg)| format!("{}→{} {msg}", name(src), name(dst)))
        .collect();
    if kind == NetKind::Unordered {
        shown.sort();
    }
    shown
}

/// What an actor owner holds of the key, as its flow state keeps it: events folded (the pending
/// one included), the contents and whether the key is loaded, and the same two before the
/// pending fold, which the refinement images show until the fold is decided.
pub struct OwnerMemory<'a> {
    pub pos: &'a mut u8,
    pub contents: &'a mut Offsets,
    pub loaded: &'a mut bool,
    pub before: &'a mut Offsets,
    pub before_loaded: &'a mut bool,
}

impl OwnerMemory<'_> {
    /// Folds the next event of `op` as the shared-state specs' owner does: a persist adds its
    /// offset, a delete empties the memory and evicts the key. Returns the offset and its op.
    pub fn fold_next(self, op: Ops) -> (u8, Op) {
        let offset = *self.pos + 1;
        *self.before = *self.contents;
        *self.before_loaded = *self.loaded;
        let event = op.at(offset);
        match event {
            Op::Persist => {
                *self.contents = self.contents.with(offset);
                *self.loaded = true;
            }
            Op::Delete => {
                *self.contents = Offsets::EMPTY;
                *self.loaded = false;
            }
        }
        *self.pos = offset;
        (offset, event)
    }
}
