#![doc = include_str!("actors.md")]

use std::borrow::Cow;
use std::fmt;

use loadbearing_refinement::{MappedRefinement, Refinement, Spec, Variables};
use serde::{Deserialize, Serialize};
use stateright::actor::{
    model_timeout, Actor, ActorModel, ActorModelAction, ActorModelState, Envelope, Id,
    LossyNetwork, Out,
};
use stateright::{Model, Property};

pub use crate::infra::actors::NetKind;
use crate::infra::actors::{in_flight, message_step, messages, swimlane, OwnerMemory};

use crate::cassandra::actors::Row;
use crate::epoch::model::{Epoch, EpochState};
use crate::infra::knobs::{Choice, Flag, Knob, KnobError, Nat, Params, Resolved};
use crate::infra::vocab::{Cell, Offsets, Ops, LAST_OFFSET, OFFSETS_LIMIT};
use crate::one_key::{self, OneKey};
use crate::Configured;

pub const BROKER: usize = 0;
pub const COORDINATOR: usize = 1;
pub const OWNER: usize = 2;
pub const ZOMBIE: usize = 3;

/// The owner's producer epoch: it initialised before the behaviour starts (the shared-state
/// spec's `maxEpoch = 1`).
const OWNER_EPOCH: u8 = 1;

pub fn actor_name(id: Id) -> &'static str {
    match usize::from(id) {
        BROKER => "broker",
        COORDINATOR => "coordinator",
        OWNER => "owner",
        _ => "zombie",
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Msg {
    /// A transaction of producer epoch `epoch`: the snapshot record at `offset`.
    Commit {
        offset: u8,
        row: Row,
        epoch: u8,
    },
    /// The transaction's outcome: refused when a newer epoch has fenced the producer.
    Committed {
        offset: u8,
        accepted: bool,
    },
    /// `initTransactions` with the stable transactional id, answered with the next epoch.
    InitTransactions,
    ProducerEpoch(u8),
    /// The group coordinator's rebalance left the revoked flow running: a zombie from now on.
    Revoked,
    Read,
    RecordIs(Row),
}

impl fmt::Display for Msg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Msg::Commit { offset, row, epoch } => {
                write!(f, "Commit({offset}, {}, epoch {epoch})", Cell::from(*row))
            }
            Msg::Committed { offset, accepted } => {
                if *accepted {
                    write!(f, "Committed({offset})")
                } else {
                    write!(f, "ProducerFenced({offset})")
                }
            }
            Msg::InitTransactions => write!(f, "InitTransactions"),
            Msg::ProducerEpoch(e) => write!(f, "ProducerEpoch({e})"),
            Msg::Revoked => write!(f, "Revoked"),
            Msg::Read => write!(f, "Read"),
            Msg::RecordIs(row) => write!(f, "RecordIs({})", Cell::from(*row)),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Timer {
    Rebalance,
    ZombieCommit(u8),
}

/// The transaction coordinator and the compacted topic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BrokerState {
    pub topic: Cell,
    pub overwrote: bool,
    /// The highest epoch handed out for the transactional id.
    pub max_epoch: u8,
    /// The epoch handed to the zombie's `initTransactions` (0: none yet).
    pub zombie_epoch: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    Idle,
    Committing(u8),
    Initialising,
    Reading,
    /// Its producer was fenced: the flow stopped.
    Fenced,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FlowState {
    /// Owner: events folded, the pending one included. Zombie: commits started.
    pub pos: u8,
    pub contents: Offsets,
    pub loaded: bool,
    pub before: Offsets,
    pub before_loaded: bool,
    pub phase: Phase,
    /// Zombie: revoked and still running.
    pub active: bool,
    /// The producer epoch it commits with (the zombie's: 0 until initialised).
    pub epoch: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeState {
    Broker(BrokerState),
    Coordinator { rebalanced: bool },
    Flow(FlowState),
}

#[derive(Clone, Debug)]
pub enum Node {
    Broker,
    Coordinator,
    Flow {
        zombie: bool,
        op: Ops,
        max_offset: u8,
        zombie_commits: u8,
    },
}

/// What the refinement mapping needs beyond the actors' states: the log, and each decision as
/// the broker sends it (the step a shared-state action is linearized at).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct History {
    pub op: Ops,
    /// The highest offset of an owner transaction the broker accepted.
    pub decided: u8,
    /// The contents the broker served the owner's current recovery read, once served.
    pub read: Option<Offsets>,
    /// The rebalance has happened (the coordinator's `Revoked` went out).
    pub rebalanced: bool,
    /// The broker accepted a zombie transaction.
    pub zombie_landed: bool,
}

impl Node {
    fn proceed(&self, st: &mut FlowState, o: &mut Out<Self>) {
        let Node::Flow {
            zombie,
            op,
            max_offset,
            zombie_commits,
        } = *self
        else {
            return;
        };
        st.phase = Phase::Idle;
        if zombie {
            if st.active && st.epoch > 0 && st.pos < zombie_commits {
                for m in 1..=max_offset {
                    o.set_timer(Timer::ZombieCommit(m), model_timeout());
                }
            }
            return;
        }
        if !st.loaded {
            st.phase = Phase::Reading;
            o.send(Id::from(BROKER), Msg::Read);
            return;
        }
        if st.pos >= max_offset {
            return;
        }
        let (offset, _) = OwnerMemory {
            pos: &mut st.pos,
            contents: &mut st.contents,
            loaded: &mut st.loaded,
            before: &mut st.before,
            before_loaded: &mut st.before_loaded,
        }
        .fold_next(op);
        st.phase = Phase::Committing(offset);
        o.send(
            Id::from(BROKER),
            Msg::Commit {
                offset,
                row: Cell::correct_fold(op, offset).into(),
                epoch: st.epoch,
            },
        );
    }

    fn on_broker_msg(b: &mut BrokerState, src: Id, msg: Msg, o: &mut Out<Self>) {
        match msg {
            Msg::Commit { offset, row, epoch } => {
                // The producer fence: a transaction of an epoch older than the newest handed
                // out for the transactional id is refused.
                let accepted = epoch == b.max_epoch;
                if accepted {
                    b.overwrote |= b.topic.would_overwrite(offset);
                    b.topic = row.into();
                }
                o.send(src, Msg::Committed { offset, accepted });
            }
            Msg::InitTransactions => {
                // Epochs in arrival order: whoever initialises last holds the newest.
                b.max_epoch += 1;
                if usize::from(src) == ZOMBIE {
                    b.zombie_epoch = b.max_epoch;
                }
                o.send(src, Msg::ProducerEpoch(b.max_epoch));
            }
            Msg::Read => o.send(src, Msg::RecordIs(b.topic.into())),
            _ => {}
        }
    }

    fn on_flow_msg(&self, st: &mut FlowState, msg: Msg, o: &mut Out<Self>) -> bool {
        let zombie = matches!(self, Node::Flow { zombie: true, .. });
        match (st.phase, msg) {
            (Phase::Idle, Msg::Revoked) if zombie && !st.active => {
                // The revoked owner's producer initialises again (a restart after the
                // rebalance): with the stable id it gets the next epoch.
                st.active = true;
                st.phase = Phase::Initialising;
                o.send(Id::from(BROKER), Msg::InitTransactions);
            }
            (Phase::Initialising, Msg::ProducerEpoch(e)) => {
                st.epoch = e;
                self.proceed(st, o);
            }
            (Phase::Committing(p), Msg::Committed { offset, accepted }) if p == offset => {
                if accepted {
                    self.proceed(st, o);
                } else {
                    // ProducerFenced is fatal to a producer: the flow stops.
                    st.phase = Phase::Fenced;
                }
            }
            (Phase::Reading, Msg::RecordIs(row)) => {
                st.contents = Cell::from(row).live_contents();
                st.loaded = true;
                self.proceed(st, o);
            }
            _ => return false,
        }
        true
    }
}

impl Actor for Node {
    type Msg = Msg;
    type Timer = Timer;
    type State = NodeState;
    type Storage = ();
    type Random = ();

    fn name(&self) -> String {
        match self {
            Node::Broker => "broker".into(),
            Node::Coordinator => "coordinator".into(),
            Node::Flow { zombie: false, .. } => "owner".into(),
            Node::Flow { zombie: true, .. } => "zombie".into(),
        }
    }

    fn on_start(&self, _id: Id, _storage: &Option<()>, o: &mut Out<Self>) -> NodeState {
        match self {
            Node::Broker => NodeState::Broker(BrokerState {
                topic: Cell::ABSENT,
                overwrote: false,
                max_epoch: OWNER_EPOCH,
                zombie_epoch: 0,
            }),
            Node::Coordinator => {
                o.set_timer(Timer::Rebalance, model_timeout());
                NodeState::Coordinator { rebalanced: false }
            }
            Node::Flow { zombie, .. } => {
                let mut st = FlowState {
                    pos: 0,
                    contents: Offsets::EMPTY,
                    loaded: true,
                    before: Offsets::EMPTY,
                    before_loaded: true,
                    phase: Phase::Idle,
                    active: false,
                    epoch: if *zombie { 0 } else { OWNER_EPOCH },
                };
                if !zombie {
                    self.proceed(&mut st, o);
                }
                NodeState::Flow(st)
            }
        }
    }

    fn on_msg(&self, _id: Id, state: &mut Cow<NodeState>, src: Id, msg: Msg, o: &mut Out<Self>) {
        match **state {
            NodeState::Broker(mut b) => {
                Self::on_broker_msg(&mut b, src, msg, o);
                if NodeState::Broker(b) != **state {
                    *state.to_mut() = NodeState::Broker(b);
                }
            }
            NodeState::Flow(mut st) => {
                if self.on_flow_msg(&mut st, msg, o) {
                    *state.to_mut() = NodeState::Flow(st);
                }
            }
            NodeState::Coordinator { .. } => {}
        }
    }

    fn on_timeout(&self, _id: Id, state: &mut Cow<NodeState>, timer: &Timer, o: &mut Out<Self>) {
        match (self, **state, *timer) {
            (Node::Coordinator, NodeState::Coordinator { rebalanced: false }, Timer::Rebalance) => {
                o.send(Id::from(ZOMBIE), Msg::Revoked);
                *state.to_mut() = NodeState::Coordinator { rebalanced: true };
            }
            (
                &Node::Flow { op, max_offset, .. },
                NodeState::Flow(mut st),
                Timer::ZombieCommit(m),
            ) if st.phase == Phase::Idle && st.active => {
                for t in 1..=max_offset {
                    o.cancel_timer(Timer::ZombieCommit(t));
                }
                st.pos += 1;
                st.phase = Phase::Committing(m);
                o.send(
                    Id::from(BROKER),
                    Msg::Commit {
                        offset: m,
                        row: Cell::correct_fold(op, m).into(),
                        epoch: st.epoch,
                    },
                );
                *state.to_mut() = NodeState::Flow(st);
            }
            _ => {}
        }
    }
}

pub type ActorState = ActorModelState<Node, History>;
pub type ActorAction = ActorModelAction<Msg, Timer, ()>;

/// The constants of the actor model, one field per knob (declared below, as the spec names them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EpochActorsParams {
    pub max_offset: u8,
    pub network: NetKind,
    pub lossy: bool,
    pub zombie_commits: u8,
}

#[derive(Clone)]
pub struct EpochActors {
    pub params: EpochActorsParams,
    systems: Vec<ActorModel<Node, (), History>>,
}

fn record_out(_: &(), h: &History, env: Envelope<&Msg>) -> Option<History> {
    let (src, dst) = (usize::from(env.src), usize::from(env.dst));
    match env.msg {
        Msg::Committed {
            offset,
            accepted: true,
        } if dst == OWNER && *offset > h.decided => Some(History {
            decided: *offset,
            ..h.clone()
        }),
        Msg::Committed { accepted: true, .. } if dst == ZOMBIE && !h.zombie_landed => {
            Some(History {
                zombie_landed: true,
                ..h.clone()
            })
        }
        Msg::RecordIs(row) if dst == OWNER => Some(History {
            read: Some(Cell::from(*row).live_contents()),
            ..h.clone()
        }),
        Msg::Read if src == OWNER => Some(History {
            read: None,
            ..h.clone()
        }),
        Msg::Revoked => Some(History {
            rebalanced: true,
            ..h.clone()
        }),
        _ => None,
    }
}

impl EpochActors {
    pub fn new(params: EpochActorsParams) -> EpochActors {
        let EpochActorsParams {
            max_offset,
            network,
            lossy,
            zombie_commits,
        } = params;
        let systems = Ops::all(max_offset)
            .map(|op| {
                let flow = |zombie| Node::Flow {
                    zombie,
                    op,
                    max_offset,
                    zombie_commits,
                };
                ActorModel::new(
                    (),
                    History {
                        op,
                        decided: 0,
                        read: None,
                        rebalanced: false,
                        zombie_landed: false,
                    },
                )
                .actor(Node::Broker)
                .actor(Node::Coordinator)
                .actor(flow(false))
                .actor(flow(true))
                .init_network(network.empty())
                .lossy_network(if lossy {
                    LossyNetwork::Yes
                } else {
                    LossyNetwork::No
                })
                .record_msg_out(record_out)
            })
            .collect();
        EpochActors { params, systems }
    }

    /// The actors of the system over the log `op`, as the model runs them (what
    /// `run-actors` runs for real).
    pub fn nodes(&self, op: Ops) -> Vec<Node> {
        self.systems[(op.0 >> 1) as usize].actors.clone()
    }

    fn system(&self, s: &ActorState) -> &ActorModel<Node, (), History> {
        &self.systems[(s.history.op.0 >> 1) as usize]
    }

    pub fn broker(s: &ActorState) -> BrokerState {
        match *s.actor_states[BROKER] {
            NodeState::Broker(b) => b,
            _ => unreachable!("actor 0 is the broker"),
        }
    }

    pub fn flow(s: &ActorState, id: usize) -> FlowState {
        match *s.actor_states[id] {
            NodeState::Flow(st) => st,
            _ => unreachable!("actors 2 and 3 are flows"),
        }
    }

    /// The refinement mapping onto the shared-state Epoch spec: the owner's transaction is
    /// linearized at the broker's acceptance (a refused one is a stutter: the fenced owner
    /// never folds it), the zombie's `initTransactions` at the broker's answer.
    pub fn image(s: &ActorState) -> EpochState {
        let b = Self::broker(s);
        let owner = Self::flow(s, OWNER);
        let (owner_pos, owner_loaded, owner_state) = match owner.phase {
            Phase::Committing(_) | Phase::Fenced if s.history.decided < owner.pos => {
                (owner.pos - 1, owner.before_loaded, owner.before)
            }
            Phase::Reading => match s.history.read {
                Some(contents) => (owner.pos, true, contents),
                None => (owner.pos, false, Offsets::EMPTY),
            },
            _ => (owner.pos, owner.loaded, owner.contents),
        };
        EpochState {
            op: s.history.op,
            topic: b.topic,
            owner_pos,
            owner_loaded,
            owner_state,
            rebalanced: s.history.rebalanced,
            z_epoch: b.zombie_epoch,
            max_epoch: b.max_epoch,
        }
    }

    /// A reply the zombie waits for is nowhere: the broker decided its request and the
    /// network lost the answer (only a lossy network gets here).
    fn zombie_reply_lost(s: &ActorState) -> bool {
        let z = Self::flow(s, ZOMBIE);
        let waiting = matches!(z.phase, Phase::Committing(_) | Phase::Initialising);
        let in_flight = messages(&s.network)
            .into_iter()
            .any(|(src, dst, _)| usize::from(src) == ZOMBIE || usize::from(dst) == ZOMBIE);
        let decided = match z.phase {
            Phase::Initialising => Self::broker(s).zombie_epoch > 0,
            _ => true,
        };
        waiting && decided && !in_flight
    }
}

impl Model for EpochActors {
    type State = ActorState;
    type Action = ActorAction;

    fn init_states(&self) -> Vec<ActorState> {
        self.systems.iter().flat_map(|m| m.init_states()).collect()
    }

    fn actions(&self, s: &ActorState, actions: &mut Vec<ActorAction>) {
        self.system(s).actions(s, actions);
    }

    fn next_state(&self, s: &ActorState, action: ActorAction) -> Option<ActorState> {
        self.system(s).next_state(s, action)
    }

    /// Stateright's sequence diagram of the actors along a path.
    fn as_svg(&self, path: stateright::Path<ActorState, ActorAction>) -> Option<String> {
        let system = self.system(path.last_state()).clone();
        system.as_svg(path)
    }

    fn format_action(&self, action: &ActorAction) -> String {
        if let Some(step) = message_step(action, actor_name) {
            return step;
        }
        match action {
            ActorModelAction::Timeout(_, Timer::Rebalance) => "Rebalance".into(),
            ActorModelAction::Timeout(_, Timer::ZombieCommit(m)) => format!("StartCommit({m})"),
            _ => format!("{action:?}"),
        }
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("RefDurableOK", |m: &Self, s: &ActorState| {
                one_key::ref_durable_ok(m, s)
            }),
            Property::always("TypeOK", |m: &Self, s: &ActorState| {
                let max = m.params.max_offset;
                let b = Self::broker(s);
                let owner = Self::flow(s, OWNER);
                one_key::row_in_range(b.topic, max)
                    && owner.pos <= max
                    && owner.contents.within(1, max)
                    && b.max_epoch <= max + 2
            }),
            // The late initialiser wins: its transaction lands, the live owner's are fenced.
            Property::sometimes("LateInitWins", |_, s: &ActorState| {
                s.history.zombie_landed && Self::flow(s, OWNER).phase == Phase::Fenced
            }),
            Property::sometimes("OwnerReachesEnd", |m: &Self, s: &ActorState| {
                s.history.decided == m.params.max_offset
            }),
            // A lossy network lost the answer to a request the broker decided.
            Property::sometimes("ZombieReplyLost", |_, s: &ActorState| {
                Self::zombie_reply_lost(s)
            }),
        ]
    }
}

/// The one key as SingleWriterStore sees it: the log and the topic's cell.
impl OneKey for EpochActors {
    fn max_offset(&self) -> u8 {
        self.params.max_offset
    }
    fn log(s: &ActorState) -> Ops {
        s.history.op
    }
    fn row(s: &ActorState) -> Cell {
        Self::broker(s).topic
    }
}

impl Spec for EpochActors {
    fn variables(&self, s: &ActorState) -> Variables {
        let network = in_flight(&s.network, self.params.network, actor_name);
        let b = Self::broker(s);
        let owner = Self::flow(s, OWNER);
        let z = Self::flow(s, ZOMBIE);
        vec![
            ("op", s.history.op.render(self.params.max_offset)),
            ("topic", b.topic.to_string()),
            ("overwrote", b.overwrote.to_string()),
            ("maxEpoch", b.max_epoch.to_string()),
            ("zombieEpoch", b.zombie_epoch.to_string()),
            (
                "owner",
                format!(
                    "{:?}, pos {}, {}{}, epoch {}",
                    owner.phase,
                    owner.pos,
                    owner.contents,
                    if owner.loaded { "" } else { " evicted" },
                    owner.epoch
                ),
            ),
            (
                "zombie",
                format!(
                    "{:?}, {}, epoch {}, {} commits",
                    z.phase,
                    if z.active {
                        "revoked"
                    } else {
                        "not revoked yet"
                    },
                    z.epoch,
                    z.pos
                ),
            ),
            ("network", format!("[{}]", network.join("; "))),
            ("decided", s.history.decided.to_string()),
        ]
    }

    fn refinements(&self) -> Vec<Box<dyn Refinement<ActorState>>> {
        let epoch = Epoch {
            max_offset: self.params.max_offset,
        };
        vec![
            Box::new(MappedRefinement::new("RefEpoch", epoch, Self::image)),
            one_key::ref_safe_spec(self),
        ]
    }

    fn actor(&self, action: &ActorAction) -> String {
        swimlane(action, actor_name)
    }
}

/// The constants, as the model's write-up names them.
impl EpochActorsParams {
    pub const MAX_OFFSET: Nat = Nat::new(
        "MaxOffset",
        1,
        LAST_OFFSET as u64,
        2,
        "events at offsets 1..MaxOffset",
    )
    .max_because(OFFSETS_LIMIT);
    pub const NETWORK: Choice<NetKind> = crate::infra::actors::NETWORK;
    pub const LOSSY: Flag = crate::infra::actors::LOSSY;
    pub const ZOMBIE_COMMITS: Nat = Nat::new(
        "ZombieCommits",
        0,
        u8::MAX as u64,
        2,
        "transactions the zombie flow starts",
    )
    .max_because("the zombie counts its transactions in a u8");
}

impl Params for EpochActorsParams {
    const KNOBS: &'static [Knob] = &[
        Self::MAX_OFFSET.knob(),
        Self::NETWORK.knob(),
        Self::LOSSY.knob(),
        Self::ZOMBIE_COMMITS.knob(),
    ];

    fn from_resolved(k: &Resolved) -> Result<Self, KnobError> {
        Ok(EpochActorsParams {
            max_offset: k.get(Self::MAX_OFFSET)?,
            network: k.get(Self::NETWORK)?,
            lossy: k.get(Self::LOSSY)?,
            zombie_commits: k.get(Self::ZOMBIE_COMMITS)?,
        })
    }
}

/// The spec's own constants (the knobs' defaults; a test pins that they agree).
impl Default for EpochActorsParams {
    fn default() -> Self {
        EpochActorsParams {
            max_offset: 2,
            network: NetKind::Ordered,
            lossy: false,
            zombie_commits: 2,
        }
    }
}

/// No guard to remove: the design itself is the must-fail case (as the shared-state Epoch).
impl Configured for EpochActors {
    const NAME: &'static str = "EpochActors";
    const DOC: &'static str = include_str!("actors.md");
    type Params = EpochActorsParams;

    fn build(params: EpochActorsParams) -> Self {
        EpochActors::new(params)
    }
}

crate::conform_actors!(EpochActors, actor_name);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_constants_are_the_knobs_defaults() {
        let defaults = crate::infra::knobs::Resolved::resolve::<EpochActorsParams>(
            EpochActors::NAME,
            &Default::default(),
        )
        .unwrap();
        assert_eq!(
            EpochActorsParams::from_resolved(&defaults).unwrap(),
            EpochActorsParams::default()
        );
    }
}
