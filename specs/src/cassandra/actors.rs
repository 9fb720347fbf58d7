#![doc = include_str!("actors.md")]

use std::borrow::Cow;
use std::fmt;

use loadbearing_refinement::Shown;
use loadbearing_refinement::{Model, Property};
use loadbearing_refinement::{Refinement, Spec, Variables};
use serde::{Deserialize, Serialize};
use stateright::actor::{Actor, ActorModelAction, Envelope, Id, Out};

use crate::infra::actors::owner::{
    cancel_timers, key_variables, owner_reaches_end, owner_refinements, owner_system, set_timers,
    Flow, OwnerNext, OwnerView,
};
use crate::infra::actors::systems::{Actors, Systems};
pub use crate::infra::actors::NetKind;
use crate::infra::actors::{knobs, lossy_network, messages};

use crate::cassandra::model::{Cassandra, CassandraState};
use crate::infra::knobs::{Flag, Nat};
use crate::infra::vocab::{Cell, Offsets, Op};
use crate::one_key;
use crate::{Configured, Guard};

// The store node, the owner flow and the zombie flow, by actor id.
crate::actor_ids!(STORE = "store", OWNER = "owner", ZOMBIE = "zombie");

// ActorState and ActorAction, and the nodes' accessors.
crate::owner_nodes!(CassandraActors, store: Store(StoreDisk) at STORE);

/// A row on the wire: a [`Cell`] that messages can order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Row {
    pub present: bool,
    pub deleted: bool,
    pub offset: u8,
    pub contents: u32,
}

impl From<Cell> for Row {
    fn from(c: Cell) -> Row {
        Row {
            present: c.present,
            deleted: c.deleted,
            offset: c.offset,
            contents: c.contents.0,
        }
    }
}

impl From<Row> for Cell {
    fn from(r: Row) -> Cell {
        Cell {
            present: r.present,
            deleted: r.deleted,
            offset: r.offset,
            contents: Offsets(r.contents),
        }
    }
}

/// One LWT of a write: the single conditional write, or a round of the compound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Round {
    /// `UPDATE … IF offset <= o` that also inserts an absent row: the shared-state spec's write.
    Lwt,
    /// The compound's first round: `UPDATE … IF offset <= o`, not applied to an absent row.
    Update,
    /// `INSERT … IF NOT EXISTS`.
    Insert,
    /// The compound's retry of the conditional UPDATE after losing the INSERT race.
    RetryUpdate,
}

/// Why an LWT did not apply, or that it did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Outcome {
    Applied,
    /// Not applied: the row is absent.
    Absent,
    /// Not applied: the row is present (its offset is higher, or it exists).
    Present,
}

impl Round {
    /// Whether `outcome` ends the write, or names the next round.
    fn after(self, outcome: Outcome) -> Option<Round> {
        match (self, outcome) {
            (Round::Update, Outcome::Absent) => Some(Round::Insert),
            (Round::Insert, Outcome::Present) => Some(Round::RetryUpdate),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Msg {
    /// An LWT writing `row` at `offset`; `attempt` > 0 for a retry after an unknown outcome.
    Write {
        round: Round,
        offset: u8,
        row: Row,
        attempt: u8,
    },
    /// The store's reply to a write.
    Written {
        round: Round,
        offset: u8,
        outcome: Outcome,
    },
    /// A recovery read of the row, and its reply.
    Read,
    RowIs(Row),
}

impl fmt::Display for Msg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Msg::Write {
                round,
                offset,
                row,
                attempt,
            } => {
                write!(f, "{round:?}({offset}, {})", Cell::from(*row))?;
                if *attempt > 0 {
                    write!(f, " retry {attempt}")?;
                }
                Ok(())
            }
            Msg::Written {
                round,
                offset,
                outcome,
            } => write!(f, "{outcome:?}({round:?} {offset})"),
            Msg::Read => write!(f, "Read"),
            Msg::RowIs(row) => write!(f, "RowIs({})", Cell::from(*row)),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Timer {
    /// The client's LWT got no reply in time: its outcome is unknown.
    Retry,
    /// The zombie decides to write the fold at this offset.
    ZombieWrite(u8),
}

/// The durable row and the history flag of the store node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StoreDisk {
    pub row: Cell,
    /// A write landed on a present row with a higher offset.
    pub overwrote: bool,
}

/// What a flow is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    Idle,
    Writing {
        round: Round,
        offset: u8,
        row: Row,
        attempt: u8,
    },
    /// Reloading the row: after a delete evicted the key, or after a restart.
    Reading,
}

crate::owner_flow_state! {
    pub struct FlowState {
        /// The flow restarted after a crash.
        pub restarted: bool = false,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeState {
    Store(StoreDisk),
    Flow(FlowState),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Disk {
    Store(StoreDisk),
    /// The flow's last acknowledged offset (its committed input offset).
    Flow(u8),
}

/// One actor of the system, with the design's switches it reads.
#[derive(Clone, Debug)]
pub enum Node {
    Store { guarded: bool },
    Flow(Flow<CassandraActorsParams>),
}

/// The owner flow keeps its acknowledged offset on disk when the config lets it crash.
fn durable_pos(flow: &Flow<CassandraActorsParams>) -> bool {
    flow.params.crash_flow && !flow.zombie
}

crate::owner_history! {
    /// The history the refinement mapping reads: the event log, and the store's decisions on the
    /// owner's requests (each LWT's linearization point), plus flags for the witnesses.
    pub struct History {
        /// The store received a retry of an owner write it had already decided.
        pub retry_of_decided: bool,
        /// A zombie write reached the store after an owner write with a higher offset was
        /// decided.
        pub stale_after_owner: bool,
    }
}

fn delete_row(tombstone: bool, offset: u8) -> Cell {
    if tombstone {
        Cell::tomb(offset)
    } else {
        Cell::ABSENT
    }
}

impl Node {
    /// The store applies one LWT: the outcome, and the new row if it applied.
    fn lwt(guarded: bool, row: Cell, round: Round, offset: u8) -> Outcome {
        let condition = !guarded || row.offset <= offset;
        match round {
            Round::Lwt if !row.present || condition => Outcome::Applied,
            Round::Update | Round::RetryUpdate if !row.present => Outcome::Absent,
            Round::Update | Round::RetryUpdate if condition => Outcome::Applied,
            Round::Insert if !row.present => Outcome::Applied,
            _ => Outcome::Present,
        }
    }

    fn first_round(compound: bool) -> Round {
        if compound {
            Round::Update
        } else {
            Round::Lwt
        }
    }

    /// The flow's next move when it has no request outstanding.
    fn proceed(flow: &Flow<CassandraActorsParams>, st: &mut FlowState, o: &mut Out<Self>) {
        let Flow { zombie, op, params } = flow;
        st.phase = Phase::Idle;
        if *zombie {
            if st.pos < params.zombie_writes {
                set_timers(o, params.max_offset, Timer::ZombieWrite);
            }
            return;
        }
        let (offset, event) = match st.memory().next(*op, params.max_offset) {
            OwnerNext::Write(offset, event) => (offset, event),
            OwnerNext::Done => return,
            OwnerNext::Reload => {
                st.phase = Phase::Reading;
                return o.send(Id::from(STORE), Msg::Read);
            }
        };
        let row = match event {
            // The owner writes what it holds in memory, as the shared-state spec does.
            Op::Persist => Cell::snap(offset, st.contents),
            Op::Delete => delete_row(params.tombstone, offset),
        };
        Self::send_write(
            st,
            Self::first_round(params.compound),
            offset,
            row.into(),
            0,
            params.retries,
            o,
        );
    }

    fn send_write(
        st: &mut FlowState,
        round: Round,
        offset: u8,
        row: Row,
        attempt: u8,
        retries: u8,
        o: &mut Out<Self>,
    ) {
        st.phase = Phase::Writing {
            round,
            offset,
            row,
            attempt,
        };
        o.send(
            Id::from(STORE),
            Msg::Write {
                round,
                offset,
                row,
                attempt,
            },
        );
        if attempt < retries {
            o.set_timer(Timer::Retry, stateright::actor::model_timeout());
        }
    }
}

impl Actor for Node {
    crate::actor_types!(storage: Disk);

    fn name(&self) -> String {
        match self {
            Node::Store { .. } => "store".into(),
            Node::Flow(flow) => flow.name().into(),
        }
    }

    fn on_start(&self, _id: Id, storage: &Option<Disk>, o: &mut Out<Self>) -> NodeState {
        match self {
            Node::Store { .. } => NodeState::Store(match storage {
                Some(Disk::Store(disk)) => *disk,
                _ => StoreDisk {
                    row: Cell::ABSENT,
                    overwrote: false,
                },
            }),
            Node::Flow(flow) => {
                let restart = match storage {
                    Some(Disk::Flow(pos)) => Some(*pos),
                    _ => None,
                };
                if durable_pos(flow) && restart.is_none() {
                    // Offset 0 acknowledged: a restart then knows it is one.
                    o.save(Disk::Flow(0));
                }
                let mut st = FlowState {
                    pos: restart.unwrap_or(0),
                    // A restarted flow reloads the row before it folds.
                    loaded: restart.is_none(),
                    restarted: restart.is_some(),
                    ..FlowState::start()
                };
                Self::proceed(flow, &mut st, o);
                NodeState::Flow(st)
            }
        }
    }

    fn on_msg(&self, _id: Id, state: &mut Cow<NodeState>, src: Id, msg: Msg, o: &mut Out<Self>) {
        match (self, **state, msg) {
            (&Node::Store { guarded }, NodeState::Store(disk), msg) => match msg {
                Msg::Write {
                    round, offset, row, ..
                } => {
                    let outcome = Node::lwt(guarded, disk.row, round, offset);
                    if outcome == Outcome::Applied {
                        let next = StoreDisk {
                            row: row.into(),
                            overwrote: disk.overwrote || disk.row.would_overwrite(offset),
                        };
                        if next != disk {
                            *state.to_mut() = NodeState::Store(next);
                            o.save(Disk::Store(next));
                        }
                    }
                    o.send(
                        src,
                        Msg::Written {
                            round,
                            offset,
                            outcome,
                        },
                    );
                }
                Msg::Read => o.send(src, Msg::RowIs(disk.row.into())),
                _ => {}
            },
            (Node::Flow(flow), NodeState::Flow(mut st), msg) => match (st.phase, msg) {
                (
                    Phase::Writing {
                        round, offset, row, ..
                    },
                    Msg::Written {
                        round: r,
                        offset: off,
                        outcome,
                    },
                ) if r == round && off == offset => {
                    o.cancel_timer(Timer::Retry);
                    match round.after(outcome) {
                        Some(next) => {
                            Self::send_write(&mut st, next, offset, row, 0, flow.params.retries, o)
                        }
                        None => {
                            if durable_pos(flow) && st.phase != Phase::Idle {
                                o.save(Disk::Flow(st.pos));
                            }
                            Self::proceed(flow, &mut st, o);
                        }
                    }
                    *state.to_mut() = NodeState::Flow(st);
                }
                (Phase::Reading, Msg::RowIs(row)) => {
                    st.reloaded(row.into());
                    Self::proceed(flow, &mut st, o);
                    *state.to_mut() = NodeState::Flow(st);
                }
                // A reply to a request the flow no longer waits for.
                _ => {}
            },
            _ => {}
        }
    }

    fn on_timeout(&self, _id: Id, state: &mut Cow<NodeState>, timer: &Timer, o: &mut Out<Self>) {
        let (Node::Flow(Flow { op, params, .. }), NodeState::Flow(mut st)) = (self, **state) else {
            return;
        };
        let retries = params.retries;
        match (*timer, st.phase) {
            (
                Timer::Retry,
                Phase::Writing {
                    round,
                    offset,
                    row,
                    attempt,
                },
            ) => {
                // The outcome is unknown: send the same round again.
                Self::send_write(&mut st, round, offset, row, attempt + 1, retries, o);
            }
            (Timer::ZombieWrite(m), Phase::Idle) => {
                cancel_timers(o, params.max_offset, Timer::ZombieWrite);
                let row = match op.at(m) {
                    Op::Persist => Cell::snap(m, op.correct_contents(m)),
                    Op::Delete => delete_row(params.tombstone, m),
                };
                st.pos += 1;
                Self::send_write(
                    &mut st,
                    Self::first_round(params.compound),
                    m,
                    row.into(),
                    0,
                    retries,
                    o,
                );
            }
            _ => return,
        }
        *state.to_mut() = NodeState::Flow(st);
    }
}

crate::knob_params! {
    /// The constants of the actor model, one field a knob (declared below, as the spec names
    /// them).
    pub struct CassandraActorsParams {
        max_offset: u8 = knobs::MAX_OFFSET, guarded: bool = Self::GUARDED,
        tombstone: bool = Self::TOMBSTONE, compound: bool = Self::COMPOUND,
        network: NetKind = knobs::NETWORK, lossy: bool = Self::LOSSY, retries: u8 = Self::RETRIES,
        crash_flow: bool = Self::CRASH_FLOW, crash_store: bool = Self::CRASH_STORE,
        zombie_writes: u8 = Self::ZOMBIE_WRITES,
    }
}

/// The constants, as the model's write-up names them.
impl CassandraActorsParams {
    /// The crashes a run may have: one, if the flow or the store may crash.
    fn max_crashes(&self) -> usize {
        usize::from(self.crash_flow || self.crash_store)
    }

    pub const GUARDED: Flag = Flag::new(
        "Guarded",
        true,
        "the store applies a write only under IF offset <= o",
    );
    pub const TOMBSTONE: Flag = Flag::new(
        "Tombstone",
        true,
        "a delete keeps the row as an offset-carrying tombstone",
    );
    pub const COMPOUND: Flag = Flag::new(
        "Compound",
        false,
        "a write is CasFirstWrite's three LWT rounds (UPDATE, INSERT IF NOT EXISTS, retry UPDATE), not one",
    );
    pub const LOSSY: Flag = Flag::new("Lossy", false, "LWT requests and replies may be lost");
    pub const RETRIES: Nat = Nat::new(
        "Retries",
        0,
        u8::MAX as u64,
        0,
        "times a client resends an LWT whose reply did not come (unknown outcome)",
    )
    .max_because("a write counts its attempts in a u8");
    pub const CRASH_FLOW: Flag = Flag::new(
        "CrashFlow",
        false,
        "the owner flow may crash and restart at its last acknowledged offset, reloading the row",
    );
    pub const CRASH_STORE: Flag = Flag::new(
        "CrashStore",
        false,
        "the store node may crash and restart with its durable row",
    );
    pub const ZOMBIE_WRITES: Nat = Nat::new(
        "ZombieWrites",
        0,
        u8::MAX as u64,
        2,
        "writes the zombie flow starts",
    )
    .max_because("the zombie counts its writes in a u8");
}

/// The actor system for every event log: one Stateright `ActorModel` per log (the actors read
/// it as configuration), the log itself kept in the history for the mapping.
pub type CassandraActors = Actors<CassandraActorsParams, Node, History>;

fn record_out(_: &(), h: &History, env: Envelope<&Msg>) -> Option<History> {
    let to_owner = usize::from(env.dst) == OWNER;
    let from_owner = usize::from(env.src) == OWNER;
    match env.msg {
        Msg::Written {
            round,
            offset,
            outcome,
        } if to_owner && round.after(*outcome).is_none() => h.decide(*offset),
        Msg::RowIs(row) if to_owner => Some(h.serve((*row).into())),
        Msg::Read if from_owner => Some(h.ask()),
        _ => None,
    }
}

fn record_in(_: &(), h: &History, env: Envelope<&Msg>) -> Option<History> {
    let Msg::Write {
        offset, attempt, ..
    } = env.msg
    else {
        return None;
    };
    match usize::from(env.src) {
        OWNER if *attempt > 0 && *offset <= h.decided && !h.retry_of_decided => Some(History {
            retry_of_decided: true,
            ..h.clone()
        }),
        ZOMBIE if *offset < h.decided && !h.stale_after_owner => Some(History {
            stale_after_owner: true,
            ..h.clone()
        }),
        _ => None,
    }
}

impl CassandraActors {
    pub fn new(params: CassandraActorsParams) -> CassandraActors {
        let store = Node::Store {
            guarded: params.guarded,
        };
        let system = |op| {
            owner_system(op, &params, [store.clone()], Node::Flow)
                .lossy_network(lossy_network(params.lossy))
                .max_crashes(params.max_crashes())
                .record_msg_in(record_in)
                .record_msg_out(record_out)
        };
        let systems = Systems::per_owner_log(params.max_offset, params.network, actor_name, system);
        CassandraActors { systems, params }
    }

    /// The owner as the shared-state spec sees it: `(ownerPos, ownerLoaded, ownerState)`.
    pub fn owner_image(s: &ActorState) -> (u8, bool, Offsets) {
        let st = Self::flow(s, OWNER);
        let (pos, loaded, contents) = st.owner_image(OwnerView {
            pending: match st.phase {
                Phase::Writing { offset, .. } => Some(offset),
                _ => None,
            },
            reloading: st.phase == Phase::Reading,
            decided: s.history.decided,
            read: s.history.read,
        });
        if s.crashed[OWNER] {
            // A crash loses the in-memory state: the key is no longer loaded.
            (pos, false, Offsets::EMPTY)
        } else {
            (pos, loaded, contents)
        }
    }

    /// The refinement mapping onto the shared-state Cassandra spec.
    pub fn image(s: &ActorState) -> CassandraState {
        let disk = Self::store(s);
        let (owner_pos, owner_loaded, owner_state) = Self::owner_image(s);
        CassandraState {
            op: s.history.op,
            stored: disk.row,
            owner_pos,
            owner_loaded,
            owner_state,
            overwrote: disk.overwrote,
        }
    }

    /// The shipped shared-state design the actors must refine.
    pub fn shipped(&self) -> Cassandra {
        Cassandra {
            max_offset: self.params.max_offset,
            guarded: true,
            tombstone: true,
        }
    }

    fn flow_text(st: FlowState, zombie: bool) -> String {
        let phase = match st.phase {
            Phase::Idle => "idle".to_string(),
            Phase::Writing {
                round,
                offset,
                attempt,
                ..
            } => {
                if attempt > 0 {
                    format!("{round:?}({offset}) retry {attempt}")
                } else {
                    format!("{round:?}({offset})")
                }
            }
            Phase::Reading => "reading".to_string(),
        };
        let restarted = if st.restarted { ", restarted" } else { "" };
        if zombie {
            format!("{phase}, {} writes{restarted}", st.pos)
        } else {
            format!("{phase}, {}{restarted}", st.memory_text())
        }
    }
}

/// The faults the model rules out, and the names of its own steps (see `actor_model_steps!`).
impl CassandraActors {
    fn allowed(&self, s: &ActorState, action: &ActorAction) -> bool {
        match action {
            ActorModelAction::Crash(id) => match usize::from(*id) {
                // One flow crash: each restart re-sends, so repeated crashes grow the channels.
                OWNER => self.params.crash_flow && !Self::flow(s, OWNER).restarted,
                STORE => self.params.crash_store,
                _ => false,
            },
            // Reads are never lost: a lost read is a retried read, and the mapping would need
            // a prophecy of which reply the owner adopts.
            ActorModelAction::Drop(env) => {
                matches!(env.msg, Msg::Write { .. } | Msg::Written { .. })
            }
            // A message to a crashed node waits for it to recover.
            ActorModelAction::Deliver { dst, .. } => !s.crashed[usize::from(*dst)],
            _ => true,
        }
    }

    fn own_step(action: &ActorAction) -> Option<String> {
        match action {
            ActorModelAction::Timeout(_, Timer::Retry) => Some("ReplyTimeout".into()),
            ActorModelAction::Timeout(_, Timer::ZombieWrite(m)) => Some(format!("StartWrite({m})")),
            ActorModelAction::Crash(_) => Some("Crash".into()),
            ActorModelAction::Recover(_) => Some("Restart".into()),
            ActorModelAction::Deliver { .. }
            | ActorModelAction::Drop(_)
            | ActorModelAction::SelectRandom { .. } => None,
        }
    }
}

impl Model for CassandraActors {
    crate::actor_model_steps!(systems, own_step: Self::own_step, allowed: Self::allowed);

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("RefDurableOK", one_key::ref_durable_ok::<Self>),
            Property::always("INV_NoStaleOverwrite", Self::no_stale_overwrite),
            Property::always("INV_NoCorruptDurable", one_key::no_corrupt_durable::<Self>),
            Property::always("TypeOK", |m: &Self, s: &ActorState| {
                let max = m.params.max_offset;
                one_key::row_in_range(Self::store(s).row, max)
                    && Self::flow(s, OWNER).memory_in_range(max)
                    && Self::flow(s, ZOMBIE).pos <= m.params.zombie_writes
            }),
            Property::sometimes("OwnerReachesEnd", owner_reaches_end),
            Property::sometimes("StaleDeliveredAfterOwner", |_, s: &ActorState| {
                s.history.stale_after_owner
            }),
            Property::sometimes("RetryOfDecidedWrite", |_, s: &ActorState| {
                s.history.retry_of_decided
            }),
            // Needs a lossy network: the store decided the owner's pending write and nothing is
            // in flight between them, so its answer was lost (without loss it is in flight
            // until the owner takes it and moves on).
            Property::sometimes("OwnerReplyLost", |_, s: &ActorState| {
                let waiting = matches!(Self::flow(s, OWNER).phase,
                    Phase::Writing { offset, .. } if offset <= s.history.decided);
                let between = |a: Id, b: Id| {
                    let (a, b) = (usize::from(a), usize::from(b));
                    (a, b) == (OWNER, STORE) || (a, b) == (STORE, OWNER)
                };
                waiting
                    && !messages(&s.network)
                        .into_iter()
                        .any(|(src, dst, _)| between(src, dst))
            }),
            // Needs an unordered network: on a FIFO connection the original reaches the store
            // before its resend, so it is gone before the store decides the write (without
            // `CrashFlow`, whose restart writes an offset afresh).
            Property::sometimes("OriginalOvertaken", |_, s: &ActorState| {
                messages(&s.network).into_iter().any(|(src, dst, msg)| {
                    matches!(msg, Msg::Write { offset, attempt: 0, .. }
                        if usize::from(src) == OWNER
                            && usize::from(dst) == STORE
                            && *offset <= s.history.decided)
                })
            }),
            Property::sometimes("StoreCrashMidCompound", |_, s: &ActorState| {
                s.crashed[STORE]
                    && matches!(
                        Self::flow(s, OWNER).phase,
                        Phase::Writing {
                            round: Round::RetryUpdate,
                            ..
                        }
                    )
            }),
            Property::sometimes("FlowRestartedFromStore", |_, s: &ActorState| {
                let owner = Self::flow(s, OWNER);
                owner.restarted && owner.loaded && !s.crashed[OWNER]
            }),
        ]
    }
}

// The one key as SingleWriterStore sees it: the log and the stored row, read straight off
// the actors (the same as `Cassandra::log`/`row` of `Self::image`, without building it).
crate::one_key_actors!(CassandraActors, row: |s: &ActorState| CassandraActors::store(s).row);

impl Spec for CassandraActors {
    crate::actor_swimlanes!(systems);

    fn variables(&self, s: &ActorState) -> Variables {
        let disk = Self::store(s);
        let crashed = (0..3)
            .filter(|&i| s.crashed[i])
            .map(|i| Shown::name(actor_name(Id::from(i))));
        let read = match s.history.read {
            Some(c) => c.into(),
            None => Shown::name("-"),
        };
        let stored = ("stored", disk.row);
        let mut vars = key_variables(s.history.op, self.params.max_offset, stored, disk.overwrote);
        vars.extend([
            (
                "owner",
                Shown::name(Self::flow_text(Self::flow(s, OWNER), false)),
            ),
            (
                "zombie",
                Shown::name(Self::flow_text(Self::flow(s, ZOMBIE), true)),
            ),
            self.systems.network_variable(s),
            ("crashed", Shown::set(crashed)),
            ("decided", s.history.decided.into()),
            ("read", read),
        ]);
        vars
    }

    fn refinements(&self) -> Vec<Box<dyn Refinement<ActorState>>> {
        owner_refinements(self, "RefCassandra", self.shipped(), Self::image)
    }
}

impl Configured for CassandraActors {
    const NAME: &'static str = "CassandraActors";
    const DOC: &'static str = include_str!("actors.md");
    type Params = CassandraActorsParams;
    const GUARDS: &'static [Guard] = &[
        Guard::off(
            "offset condition in the LWT",
            CassandraActorsParams::GUARDED,
        ),
        Guard::off("tombstone", CassandraActorsParams::TOMBSTONE),
    ];

    fn build(params: CassandraActorsParams) -> Self {
        CassandraActors::new(params)
    }
}

impl Default for CassandraActors {
    fn default() -> Self {
        CassandraActors::new(CassandraActorsParams::default())
    }
}

crate::conform_actors!(CassandraActors, actor_name);

#[cfg(test)]
mod tests {
    use super::*;
    use loadbearing_refinement::{check, CheckSpec, Options, Outcome as Verdict};

    fn run(
        model: &CassandraActors,
        props: &[&str],
    ) -> loadbearing_refinement::ReportOf<CassandraActors> {
        let spec = CheckSpec {
            properties: props.iter().map(|p| p.to_string()).collect(),
            fair: false,
            allow_end_states: true,
            symmetry: Vec::new(),
        };
        check(model, &spec, &Options::default()).unwrap()
    }

    #[test]
    fn the_shipped_actors_refine_cassandra() {
        let r = run(
            &CassandraActors::default(),
            &["RefCassandra", "RefSafeSpec", "INV_NoStaleOverwrite"],
        );
        assert_eq!(r.outcome, Verdict::Holds, "{r:?}");
    }
}
