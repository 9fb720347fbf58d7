//! The owner and zombie flows of the actor models over one key: what the owner holds of the
//! key, and its next move.

use stateright::actor::{model_timeout, Actor, ActorModel, ActorModelState, Out};

use loadbearing_refinement::{MappedRefinement, Refinement, Spec, Variables};

use crate::infra::vocab::{Cell, Offsets, Op, Ops};
use crate::one_key::{self, OneKey};

/// An owner or a zombie flow of an actor model over one key, as its `Node::Flow` holds it:
/// which of the two it is, the event log it folds, and the config's parameters, which it reads
/// as its switches.
#[derive(Clone, Debug)]
pub struct Flow<P> {
    pub zombie: bool,
    pub op: Ops,
    pub params: P,
}

impl<P> Flow<P> {
    /// The flow's actor name: `owner` or `zombie`.
    pub fn name(&self) -> &'static str {
        if self.zombie {
            "zombie"
        } else {
            "owner"
        }
    }
}

/// The system over the log `op`: the `servers` (every node but the flows, in id order), then
/// the owner flow and the zombie flow over `op` with `params`, each a `flow` node; its history
/// that of the log, before the first step.
pub fn owner_system<N, H, P>(
    op: Ops,
    params: &P,
    servers: impl IntoIterator<Item = N>,
    flow: fn(Flow<P>) -> N,
) -> ActorModel<N, (), H>
where
    N: Actor,
    N::Msg: Ord,
    N::Timer: Ord,
    H: OwnerHistory + Clone + std::fmt::Debug + std::hash::Hash,
    P: Clone,
{
    let flow_of = |zombie| {
        flow(Flow {
            zombie,
            op,
            params: params.clone(),
        })
    };
    ActorModel::new((), H::of_log(op))
        .actors(servers)
        .actor(flow_of(false))
        .actor(flow_of(true))
}

/// The history an actor model over one key keeps (see [`owner_history!`](crate::owner_history)),
/// as the core reads it.
pub trait OwnerHistory {
    /// The history of a run over the log `op`, before its first step.
    fn of_log(op: Ops) -> Self;
    /// The log of the run.
    fn log(&self) -> Ops;
    /// The highest offset of an owner write the server decided.
    fn decided(&self) -> u8;
}

/// The refinements of an actor model over one key: onto its shared-state spec `spec` by
/// `image` (named `name`), and onto SingleWriterStore (`RefSafeSpec`).
pub fn owner_refinements<M, A>(
    model: &M,
    name: &'static str,
    spec: A,
    image: impl Fn(&M::State) -> A::State + Send + Sync + 'static,
) -> Vec<Box<dyn Refinement<M::State>>>
where
    M: OneKey,
    A: Spec + 'static,
{
    vec![
        Box::new(MappedRefinement::new(name, spec, image)),
        one_key::ref_safe_spec(model),
    ]
}

/// `OwnerReachesEnd`: the server decided the owner's write of the log's last event.
pub fn owner_reaches_end<M, N, H>(model: &M, s: &ActorModelState<N, H>) -> bool
where
    M: OneKey,
    N: Actor,
    H: OwnerHistory,
{
    s.history.decided() == model.max_offset()
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

/// The owner's next move when it has nothing outstanding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnerNext {
    /// The key was evicted: read the row back before folding on.
    Reload,
    /// The event at this offset, of this op, is folded: write it.
    Write(u8, Op),
    /// The log is done.
    Done,
}

impl OwnerMemory<'_> {
    /// The owner's next move over the log `op` of `max_offset` events, folding the next event
    /// if that is the move.
    pub fn next(self, op: Ops, max_offset: u8) -> OwnerNext {
        if !*self.loaded {
            OwnerNext::Reload
        } else if *self.pos >= max_offset {
            OwnerNext::Done
        } else {
            let (offset, event) = self.fold_next(op);
            OwnerNext::Write(offset, event)
        }
    }
}

/// How the shared-state spec sees an owner, `(ownerPos, ownerLoaded, ownerState)`: while the
/// write of the fold at `pending` is undecided (above `decided`), its memory before the fold;
/// while it reloads, the contents the store served it (`read`), once served; else its memory.
pub struct OwnerView {
    pub pending: Option<u8>,
    pub reloading: bool,
    pub decided: u8,
    pub read: Option<Offsets>,
}

/// The fields of a flow state that the owner keeps its memory in, its phase (the model's
/// `Phase`, which starts `Idle`), the model's own fields with their values at the start, and
/// the owner's view of them. A macro, not a generic struct: each model's flow state stays one
/// flat struct of its own, the fields in the same order, so its states hash as before.
#[macro_export]
macro_rules! owner_flow_state {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $($(#[$field_meta:meta])* pub $field:ident: $ty:ty = $init:expr,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub struct $name {
            /// Owner: events folded, the pending one included. Zombie: its writes started.
            pub pos: u8,
            pub contents: $crate::infra::vocab::Offsets,
            pub loaded: bool,
            /// The owner's memory before its pending fold: what the mapping shows until the
            /// write is decided.
            pub before: $crate::infra::vocab::Offsets,
            pub before_loaded: bool,
            pub phase: Phase,
            $($(#[$field_meta])* pub $field: $ty,)*
        }

        impl $name {
            /// A flow's state at its start: nothing folded, the key loaded (and empty), idle,
            /// and the model's own fields at the values declared beside them.
            pub fn start() -> Self {
                $name {
                    pos: 0,
                    contents: $crate::infra::vocab::Offsets::EMPTY,
                    loaded: true,
                    before: $crate::infra::vocab::Offsets::EMPTY,
                    before_loaded: true,
                    phase: Phase::Idle,
                    $($field: $init,)*
                }
            }

            /// The server served the reload `row`: the owner holds its live contents, the
            /// key loaded.
            pub fn reloaded(&mut self, row: $crate::infra::vocab::Cell) {
                self.contents = row.live_contents();
                self.loaded = true;
            }

            /// The owner's memory is within the log of `max` events (a part of `TypeOK`).
            pub fn memory_in_range(&self, max: u8) -> bool {
                self.pos <= max && self.contents.within(1, max)
            }

            /// The owner's memory, to fold into.
            pub fn memory(&mut self) -> $crate::infra::actors::owner::OwnerMemory<'_> {
                $crate::infra::actors::owner::OwnerMemory {
                    pos: &mut self.pos,
                    contents: &mut self.contents,
                    loaded: &mut self.loaded,
                    before: &mut self.before,
                    before_loaded: &mut self.before_loaded,
                }
            }

            /// The owner's memory as the variables show it: `pos 2, {1,2}`, and ` evicted`
            /// while the key is not loaded.
            pub fn memory_text(&self) -> String {
                let evicted = if self.loaded { "" } else { " evicted" };
                format!("pos {}, {}{evicted}", self.pos, self.contents)
            }

            /// `(ownerPos, ownerLoaded, ownerState)` as the shared-state spec sees the owner.
            pub fn owner_image(
                &self,
                view: $crate::infra::actors::owner::OwnerView,
            ) -> (u8, bool, $crate::infra::vocab::Offsets) {
                match (view.pending, view.reloading, view.read) {
                    (Some(offset), _, _) if view.decided < offset => {
                        (offset - 1, self.before_loaded, self.before)
                    }
                    (_, true, Some(contents)) => (self.pos, true, contents),
                    (_, true, None) => (self.pos, false, $crate::infra::vocab::Offsets::EMPTY),
                    _ => (self.pos, self.loaded, self.contents),
                }
            }
        }
    };
}

/// Arms one timer per offset `1..=last`, each `timer(offset)`: a choice among them is the
/// model's nondeterminism (which offset the zombie writes, which the flow schedules).
pub fn set_timers<A: Actor>(o: &mut Out<A>, last: u8, timer: fn(u8) -> A::Timer) {
    for m in 1..=last {
        o.set_timer(timer(m), model_timeout());
    }
}

/// Cancels the timers [`set_timers`] armed: the choice was made.
pub fn cancel_timers<A: Actor>(o: &mut Out<A>, last: u8, timer: fn(u8) -> A::Timer) {
    for m in 1..=last {
        o.cancel_timer(timer(m));
    }
}

/// `OneKey` for an actor model over one key's event log: its `MaxOffset` param, the log its
/// history keeps, and the cell `row` reads off a state.
#[macro_export]
macro_rules! one_key_actors {
    ($model:ty, row: $row:expr) => {
        impl $crate::one_key::OneKey for $model {
            fn max_offset(&self) -> u8 {
                self.params.max_offset
            }
            fn log(s: &Self::State) -> $crate::infra::vocab::Ops {
                s.history.op
            }
            fn row(s: &Self::State) -> $crate::infra::vocab::Cell {
                $row(s)
            }
        }
    };
}

/// The history an actor model over one key keeps for its refinement mapping: the log, the
/// highest offset of an owner write the server decided (its final reply sent: the step a
/// shared-state write is linearized at), and the contents the server served the owner's
/// current reload, once served; then the model's own flags for its witnesses, each false at
/// first. A macro, as [`owner_flow_state!`](crate::owner_flow_state), so each model's history
/// stays one flat struct and hashes as before.
#[macro_export]
macro_rules! owner_history {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $($(#[$field_meta:meta])* pub $flag:ident: bool,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub struct $name {
            pub op: $crate::infra::vocab::Ops,
            /// The highest offset of an owner write the server decided.
            pub decided: u8,
            /// The contents the server served the owner's current reload, once served.
            pub read: Option<$crate::infra::vocab::Offsets>,
            $($(#[$field_meta])* pub $flag: bool,)*
        }

        impl $crate::infra::actors::owner::OwnerHistory for $name {
            fn of_log(op: $crate::infra::vocab::Ops) -> Self {
                $name {
                    op,
                    decided: 0,
                    read: None,
                    $($flag: false,)*
                }
            }

            fn log(&self) -> $crate::infra::vocab::Ops {
                self.op
            }

            fn decided(&self) -> u8 {
                self.decided
            }
        }

        impl $name {

            /// The server decided the owner's write at `offset`: the history with it, if it is
            /// news.
            pub fn decide(&self, offset: u8) -> Option<Self> {
                (offset > self.decided).then(|| $name {
                    decided: offset,
                    ..self.clone()
                })
            }

            /// The server served the owner's reload `row`.
            pub fn serve(&self, row: $crate::infra::vocab::Cell) -> Self {
                $name {
                    read: Some(row.live_contents()),
                    ..self.clone()
                }
            }

            /// The owner asked to reload: nothing served yet.
            pub fn ask(&self) -> Self {
                $name {
                    read: None,
                    ..self.clone()
                }
            }
        }
    };
}

/// The variables an actor model over one key shows first: the log, the server's cell under
/// the name the model gives it, and whether a write landed on a row with a higher offset.
pub fn key_variables(
    op: Ops,
    max_offset: u8,
    (name, cell): (&'static str, Cell),
    overwrote: bool,
) -> Variables {
    vec![
        ("op", op.shown(max_offset)),
        (name, cell.into()),
        ("overwrote", overwrote.into()),
    ]
}

/// The state and step types of an actor model over one key, `ActorState` and `ActorAction`
/// (of its `Node` and `History`), and the accessors of its nodes (their `NodeState` and
/// `FlowState` in scope): `nodes(op)`, the actors of the system over the log `op` as the
/// model runs them (what `run-actors` runs for real); `$server(s)`, the state of the node that
/// holds the key (actor `$id`, a `NodeState::$variant`, with an `overwrote` flag);
/// `flow(s, id)`, the state of a flow; and `no_stale_overwrite`, the invariant that no write
/// landed on a row with a higher offset (`INV_NoStaleOverwrite`).
#[macro_export]
macro_rules! owner_nodes {
    ($model:ty, $server:ident: $variant:ident($state:ty) at $id:ident) => {
        pub type ActorState = $crate::infra::actors::systems::State<Node, History>;
        pub type ActorAction = $crate::infra::actors::systems::Action<Node>;

        impl $model {
            pub fn nodes(&self, op: $crate::infra::vocab::Ops) -> Vec<Node> {
                self.systems.actors_for_log(op)
            }

            pub fn $server(s: &ActorState) -> $state {
                match *s.actor_states[$id] {
                    NodeState::$variant(server) => server,
                    _ => unreachable!(concat!(stringify!($id), " is the ", stringify!($server))),
                }
            }

            pub fn flow(s: &ActorState, id: usize) -> FlowState {
                match *s.actor_states[id] {
                    NodeState::Flow(st) => st,
                    _ => unreachable!("actor {id} is not a flow"),
                }
            }

            pub fn no_stale_overwrite(&self, s: &ActorState) -> bool {
                !Self::$server(s).overwrote
            }
        }
    };
}
