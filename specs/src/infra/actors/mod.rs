//! What the actor models share: the network a config chooses, the names of actors and steps,
//! the messages in flight; the systems they run ([`systems`]), the knobs they declare alike
//! ([`knobs`]), the owner and zombie flows over one key ([`owner`]) and the trace vocabulary
//! ([`trace`]).

pub mod knobs;
pub mod owner;
pub mod systems;
pub mod trace;

use std::fmt::Display;

use stateright::actor::{ActorModelAction, Id, LossyNetwork, Network};

use crate::infra::knobs::Choices;

pub use knobs::{LOSSY, NETWORK};
pub use owner::OwnerMemory;

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

impl NetKind {
    pub fn empty<M: Clone + Eq + std::hash::Hash + std::fmt::Debug>(self) -> Network<M> {
        match self {
            NetKind::Ordered => Network::new_ordered([]),
            NetKind::Unordered => Network::new_unordered_nonduplicating([]),
        }
    }
}

/// Stateright's network that loses any message, or none.
pub fn lossy_network(lossy: bool) -> LossyNetwork {
    if lossy {
        LossyNetwork::Yes
    } else {
        LossyNetwork::No
    }
}

/// An actor's name out of a model's list of names by id; the ids past the list's end take its
/// last name.
pub fn named(names: &'static [&'static str], id: Id) -> &'static str {
    names[usize::from(id).min(names.len() - 1)]
}

/// A model's actors, each an id (`pub const`, counted from 0) with its name, and `actor_name`,
/// which names them (an id past the last takes the last name).
#[macro_export]
macro_rules! actor_ids {
    ($($id:ident = $name:literal),+ $(,)?) => {
        $crate::actor_ids!(@count 0usize; $($id)+);

        pub fn actor_name(id: stateright::actor::Id) -> &'static str {
            $crate::infra::actors::named(&[$($name),+], id)
        }
    };
    (@count $n:expr; $id:ident $($rest:ident)*) => {
        pub const $id: usize = $n;
        $crate::actor_ids!(@count $n + 1; $($rest)*);
    };
    (@count $n:expr;) => {};
}

/// An actor's associated types as every actor model has them: its model's `Msg`, `Timer` and
/// `NodeState`, no random choices, and the storage it names (none if it names none).
#[macro_export]
macro_rules! actor_types {
    () => {
        $crate::actor_types!(storage: ());
    };
    (storage: $storage:ty) => {
        type Msg = Msg;
        type Timer = Timer;
        type State = NodeState;
        type Storage = $storage;
        type Random = ();
    };
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
