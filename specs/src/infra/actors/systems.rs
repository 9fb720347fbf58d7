//! The Stateright actor systems an actor model runs, and the `Model` steps every actor model
//! takes from them.
//!
//! A model over a fixed event log builds one system per log (its actors read the log as
//! configuration) and keeps the log in the history, which picks a state's system back; a model
//! without one builds a single system. Either way the model's states, actions and diagrams are
//! its systems', so [`actor_model_steps!`](crate::actor_model_steps) writes them once; and its
//! steps, swimlanes and network are named by its actors' names.

use loadbearing_refinement::Shown;
use std::fmt::Debug;
use std::hash::Hash;

use stateright::actor::{Actor, ActorModel, ActorModelAction, ActorModelState, Id};
use stateright::{Model as _, Path};

use super::owner::OwnerHistory;
use super::{in_flight, message_step, swimlane, NetKind};
use crate::infra::vocab::Ops;

/// A state of an actor model whose actors are `N` and whose history is `H`.
pub type State<N, H> = ActorModelState<N, H>;
/// A step of an actor model whose actors are `N`.
pub type Action<N> = ActorModelAction<<N as Actor>::Msg, <N as Actor>::Timer, <N as Actor>::Random>;

/// An actor model: its parameters, and the systems they build. Each model is this type at
/// its own parameters (`pub type KafkaActors = Actors<KafkaActorsParams, Node, History>`), with
/// its own `new`, `Model` and `Spec`.
#[derive(Clone)]
pub struct Actors<P, N, H>
where
    N: Actor,
    N::Msg: Ord,
    N::Timer: Ord,
    H: Clone + Debug + Hash,
{
    pub params: P,
    pub systems: Systems<N, H>,
}

/// The actor systems of a model, how a state names the one it belongs to, the network the
/// config chose and the actors' names.
#[derive(Clone)]
pub struct Systems<N, H>
where
    N: Actor,
    N::Msg: Ord,
    N::Timer: Ord,
    H: Clone + Debug + Hash,
{
    systems: Vec<ActorModel<N, (), H>>,
    /// The log a history keeps, for a model with one system per log.
    log: Option<fn(&H) -> Ops>,
    network: NetKind,
    /// Each actor's name, by id, as swimlanes, steps and traces show it.
    name: fn(Id) -> &'static str,
}

/// Where a log's system stands among those `Ops::all` builds: the log's bits above offset 0.
fn log_index(op: Ops) -> usize {
    (op.0 >> 1) as usize
}

impl<N, H> Systems<N, H>
where
    N: Actor + Clone,
    N::Msg: Ord + std::fmt::Display,
    N::Timer: Ord,
    H: Clone + Debug + Hash + Eq + Send + Sync + 'static,
{
    /// A single system, on `network`, its actors named by `name`.
    pub fn one(
        system: ActorModel<N, (), H>,
        network: NetKind,
        name: fn(Id) -> &'static str,
    ) -> Self {
        Systems {
            systems: vec![system.init_network(network.empty())],
            log: None,
            network,
            name,
        }
    }

    /// One system per event log of `Ops::all(max_offset)`, each built by `build`, on `network`,
    /// its actors named by `name`; `log` reads the log back out of a history.
    pub fn per_log(
        max_offset: u8,
        build: impl Fn(Ops) -> ActorModel<N, (), H>,
        log: fn(&H) -> Ops,
        network: NetKind,
        name: fn(Id) -> &'static str,
    ) -> Self {
        Systems {
            systems: Ops::all(max_offset)
                .map(|op| build(op).init_network(network.empty()))
                .collect(),
            log: Some(log),
            network,
            name,
        }
    }

    /// One system per event log of `Ops::all(max_offset)` for a model over one key, whose
    /// history keeps the log ([`OwnerHistory`]): each built by `build`, on `network`, its actors
    /// named by `name`.
    pub fn per_owner_log(
        max_offset: u8,
        network: NetKind,
        name: fn(Id) -> &'static str,
        build: impl Fn(Ops) -> ActorModel<N, (), H>,
    ) -> Self
    where
        H: OwnerHistory,
    {
        Self::per_log(max_offset, build, H::log, network, name)
    }

    /// The actors of the single system, as the model runs them (what `run-actors` runs for
    /// real).
    pub fn actors(&self) -> Vec<N> {
        self.systems[0].actors.clone()
    }

    /// The actors of the system over the log `op`, as the model runs them.
    pub fn actors_for_log(&self, op: Ops) -> Vec<N> {
        self.systems[log_index(op)].actors.clone()
    }

    fn index(&self, history: &H) -> usize {
        self.log.map_or(0, |log| log_index(log(history)))
    }

    /// The system `s` belongs to.
    pub fn of(&self, s: &State<N, H>) -> &ActorModel<N, (), H> {
        &self.systems[self.index(&s.history)]
    }

    pub fn init_states(&self) -> Vec<State<N, H>> {
        self.systems.iter().flat_map(|m| m.init_states()).collect()
    }

    pub fn actions(&self, s: &State<N, H>, actions: &mut Vec<Action<N>>) {
        self.of(s).actions(s, actions);
    }

    pub fn next_state(&self, s: &State<N, H>, action: Action<N>) -> Option<State<N, H>> {
        self.of(s).next_state(s, action)
    }

    /// Stateright's sequence diagram of the actors along the path from `init` through
    /// `actions`.
    pub fn as_svg(&self, init: &State<N, H>, actions: &[Action<N>]) -> Option<String> {
        let system = self.of(init);
        let path = Path::from_actions(system, init.clone(), actions.iter())?;
        let index = self.index(&path.last_state().history);
        self.systems[index].as_svg(path)
    }

    /// A step as the model names it: a message by its actors, the model's own steps (a
    /// timeout, a crash) as `own_step` says, the rest as Stateright shows them.
    pub fn step_name(
        &self,
        action: &Action<N>,
        own_step: impl FnOnce(&Action<N>) -> Option<String>,
    ) -> String {
        message_step(action, self.name)
            .or_else(|| own_step(action))
            .unwrap_or_else(|| format!("{action:?}"))
    }

    /// The party a step belongs to.
    pub fn swimlane(&self, action: &Action<N>) -> String {
        swimlane(action, self.name)
    }

    /// The `network` variable: the messages in flight, `[src→dst msg; …]`; to machines a list
    /// holding them as one phrase (none: an empty list).
    pub fn network_variable(&self, s: &State<N, H>) -> (&'static str, Shown) {
        let shown = in_flight(&s.network, self.network, self.name);
        let messages = (!shown.is_empty()).then(|| Shown::name(shown.join("; ")));
        ("network", Shown::list(messages))
    }
}

/// The `Model` items an actor model takes from its [`Systems`] (the field named first): its
/// state and action types (`ActorState`, `ActorAction`), initial states, actions (those
/// `allowed` keeps, if it says), steps, diagrams, and step names (its own ones as `own_step`
/// says).
#[macro_export]
macro_rules! actor_model_steps {
    (@rest $systems:ident, $own_step:expr) => {
        type State = ActorState;
        type Action = ActorAction;

        fn init_states(&self) -> Vec<ActorState> {
            self.$systems.init_states()
        }

        fn next_state(&self, s: &ActorState, action: ActorAction) -> Option<ActorState> {
            self.$systems.next_state(s, action)
        }

        fn as_svg(&self, init: &ActorState, actions: &[ActorAction]) -> Option<String> {
            self.$systems.as_svg(init, actions)
        }

        fn format_action(&self, action: &ActorAction) -> String {
            self.$systems.step_name(action, $own_step)
        }
    };
    ($systems:ident, own_step: $own_step:expr) => {
        fn actions(&self, s: &ActorState, actions: &mut Vec<ActorAction>) {
            self.$systems.actions(s, actions);
        }

        $crate::actor_model_steps!(@rest $systems, $own_step);
    };
    ($systems:ident, own_step: $own_step:expr, allowed: $allowed:expr) => {
        fn actions(&self, s: &ActorState, actions: &mut Vec<ActorAction>) {
            self.$systems.actions(s, actions);
            actions.retain(|a| $allowed(self, s, a));
        }

        $crate::actor_model_steps!(@rest $systems, $own_step);
    };
}

/// `Spec::actor` of an actor model: the party a step belongs to, as its [`Systems`] (the field
/// named) say.
#[macro_export]
macro_rules! actor_swimlanes {
    ($systems:ident) => {
        fn actor(&self, action: &ActorAction) -> String {
            self.$systems.swimlane(action)
        }
    };
}
