//! What the actor models share: the network a config chooses and the swimlane of a step.

use std::fmt::Display;

use stateright::actor::{ActorModelAction, Id, Network};

use crate::knobs::Choices;

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
