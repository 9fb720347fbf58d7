//! The owner and zombie flows of the actor models over one key: what the owner holds of the
//! key, and its next move.

use stateright::actor::{model_timeout, Actor, Out};

use loadbearing_refinement::Variables;

use crate::infra::vocab::{Cell, Offsets, Op, Ops};

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

/// The fields of a flow state that the owner keeps its memory in, and the owner's view of them.
/// A macro, not a generic struct: each model's flow state stays one flat struct of its own,
/// the fields in the same order, so its states hash as before.
#[macro_export]
macro_rules! owner_flow_state {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            pub phase: $phase:ty,
            $($(#[$field_meta:meta])* pub $field:ident: $ty:ty,)*
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
            pub phase: $phase,
            $($(#[$field_meta])* pub $field: $ty,)*
        }

        impl $name {
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

        impl $name {
            /// The history of a run over the log `op`, before its first step.
            pub fn of_log(op: $crate::infra::vocab::Ops) -> Self {
                $name {
                    op,
                    decided: 0,
                    read: None,
                    $($flag: false,)*
                }
            }

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
        ("op", op.render(max_offset)),
        (name, cell.to_string()),
        ("overwrote", overwrote.to_string()),
    ]
}
