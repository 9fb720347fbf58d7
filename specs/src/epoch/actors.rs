#![doc = include_str!("actors.md")]

use std::borrow::Cow;
use std::fmt;

use loadbearing_refinement::Shown;
use loadbearing_refinement::{Model, Property};
use loadbearing_refinement::{Refinement, Spec, Variables};
use serde::{Deserialize, Serialize};
use stateright::actor::{model_timeout, Actor, ActorModelAction, Envelope, Id, Out};

use crate::infra::actors::owner::{
    cancel_timers, key_variables, owner_reaches_end, owner_refinements, owner_system, set_timers,
    Flow, OwnerNext, OwnerView,
};
use crate::infra::actors::systems::{Actors, Systems};
pub use crate::infra::actors::NetKind;
use crate::infra::actors::{knobs, lossy_network, messages};

use crate::cassandra::actors::Row;
use crate::epoch::model::{Epoch, EpochState};
use crate::infra::vocab::{Cell, Ops};
use crate::one_key;
use crate::Configured;

crate::actor_ids!(
    BROKER = "broker",
    COORDINATOR = "coordinator",
    OWNER = "owner",
    ZOMBIE = "zombie",
);

// ActorState and ActorAction, and the nodes' accessors.
crate::owner_nodes!(EpochActors, broker: Broker(BrokerState) at BROKER);

/// The owner's producer epoch: it initialised before the behaviour starts (the shared-state
/// spec's `maxEpoch = 1`).
const OWNER_EPOCH: u8 = 1;

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
                let outcome = if *accepted {
                    "Committed"
                } else {
                    "ProducerFenced"
                };
                write!(f, "{outcome}({offset})")
            }
            Msg::RecordIs(row) => write!(f, "RecordIs({})", Cell::from(*row)),
            // The rest show as they are spelled.
            Msg::InitTransactions | Msg::ProducerEpoch(_) | Msg::Revoked | Msg::Read => {
                fmt::Debug::fmt(self, f)
            }
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

crate::owner_flow_state! {
    pub struct FlowState {
        /// Zombie: revoked and still running.
        pub active: bool = false,
        /// The producer epoch it commits with (the zombie's: 0 until initialised).
        pub epoch: u8 = 0,
    }
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
    Flow(Flow<EpochActorsParams>),
}

crate::owner_history! {
    /// What the refinement mapping needs beyond the actors' states: the log, and each decision as
    /// the broker sends it (the step a shared-state action is linearized at).
    pub struct History {
        /// The rebalance has happened (the coordinator's `Revoked` went out).
        pub rebalanced: bool,
        /// The broker accepted a zombie transaction.
        pub zombie_landed: bool,
    }
}

impl Node {
    fn proceed(flow: &Flow<EpochActorsParams>, st: &mut FlowState, o: &mut Out<Self>) {
        let Flow { zombie, op, params } = flow;
        st.phase = Phase::Idle;
        if *zombie {
            if st.active && st.epoch > 0 && st.pos < params.zombie_commits {
                set_timers(o, params.max_offset, Timer::ZombieCommit);
            }
            return;
        }
        let next = st.memory().next(*op, params.max_offset);
        if next == OwnerNext::Reload {
            st.phase = Phase::Reading;
            o.send(Id::from(BROKER), Msg::Read);
        } else if let OwnerNext::Write(offset, _) = next {
            Self::start_commit(st, *op, offset, o);
        }
    }

    /// A flow commits the correct fold at `offset` with its producer epoch.
    fn start_commit(st: &mut FlowState, op: Ops, offset: u8, o: &mut Out<Self>) {
        st.phase = Phase::Committing(offset);
        let row = Cell::correct_fold(op, offset).into();
        o.send(
            Id::from(BROKER),
            Msg::Commit {
                offset,
                row,
                epoch: st.epoch,
            },
        );
    }

    fn on_flow_msg(
        flow: &Flow<EpochActorsParams>,
        st: &mut FlowState,
        msg: Msg,
        o: &mut Out<Self>,
    ) -> bool {
        match (st.phase, msg) {
            (Phase::Idle, Msg::Revoked) if flow.zombie && !st.active => {
                // The revoked owner's producer initialises again (a restart after the
                // rebalance): with the stable id it gets the next epoch.
                st.active = true;
                st.phase = Phase::Initialising;
                o.send(Id::from(BROKER), Msg::InitTransactions);
            }
            (Phase::Initialising, Msg::ProducerEpoch(e)) => {
                st.epoch = e;
                Self::proceed(flow, st, o);
            }
            (Phase::Committing(p), Msg::Committed { offset, accepted }) if p == offset => {
                if accepted {
                    Self::proceed(flow, st, o);
                } else {
                    // ProducerFenced is fatal to a producer: the flow stops.
                    st.phase = Phase::Fenced;
                }
            }
            (Phase::Reading, Msg::RecordIs(row)) => {
                st.reloaded(row.into());
                Self::proceed(flow, st, o);
            }
            _ => return false,
        }
        true
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
}

impl Actor for Node {
    crate::actor_types!();

    fn name(&self) -> String {
        match self {
            Node::Broker => "broker".into(),
            Node::Coordinator => "coordinator".into(),
            Node::Flow(flow) => flow.name().into(),
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
            Node::Flow(flow) => {
                let mut st = FlowState::start();
                if !flow.zombie {
                    st.epoch = OWNER_EPOCH;
                    Self::proceed(flow, &mut st, o);
                }
                NodeState::Flow(st)
            }
        }
    }

    fn on_msg(&self, _id: Id, state: &mut Cow<NodeState>, src: Id, msg: Msg, o: &mut Out<Self>) {
        match (self, **state) {
            (_, NodeState::Broker(mut b)) => {
                Self::on_broker_msg(&mut b, src, msg, o);
                if NodeState::Broker(b) != **state {
                    *state.to_mut() = NodeState::Broker(b);
                }
            }
            (Node::Flow(flow), NodeState::Flow(mut st)) => {
                let handled = Self::on_flow_msg(flow, &mut st, msg, o);
                if handled {
                    *state.to_mut() = NodeState::Flow(st);
                }
            }
            _ => {}
        }
    }

    fn on_timeout(&self, _id: Id, state: &mut Cow<NodeState>, timer: &Timer, o: &mut Out<Self>) {
        match (self, **state, *timer) {
            (Node::Coordinator, NodeState::Coordinator { rebalanced: false }, Timer::Rebalance) => {
                o.send(Id::from(ZOMBIE), Msg::Revoked);
                *state.to_mut() = NodeState::Coordinator { rebalanced: true };
            }
            (
                Node::Flow(Flow { op, params, .. }),
                NodeState::Flow(mut st),
                Timer::ZombieCommit(m),
            ) if st.phase == Phase::Idle && st.active => {
                cancel_timers(o, params.max_offset, Timer::ZombieCommit);
                st.pos += 1;
                Self::start_commit(&mut st, *op, m, o);
                *state.to_mut() = NodeState::Flow(st);
            }
            _ => {}
        }
    }
}

crate::knob_params! {
    /// The constants of the actor model, one field a knob (declared below, as the spec names
    /// them).
    pub struct EpochActorsParams {
        max_offset: u8 = knobs::MAX_OFFSET, network: NetKind = knobs::NETWORK,
        lossy: bool = knobs::LOSSY, zombie_commits: u8 = knobs::ZOMBIE_COMMITS,
    }
}

pub type EpochActors = Actors<EpochActorsParams, Node, History>;

fn record_out(_: &(), h: &History, env: Envelope<&Msg>) -> Option<History> {
    let (src, dst) = (usize::from(env.src), usize::from(env.dst));
    match env.msg {
        Msg::Committed {
            offset,
            accepted: true,
        } if dst == OWNER => h.decide(*offset),
        Msg::Committed { accepted: true, .. } if dst == ZOMBIE && !h.zombie_landed => {
            Some(History {
                zombie_landed: true,
                ..h.clone()
            })
        }
        Msg::RecordIs(row) if dst == OWNER => Some(h.serve((*row).into())),
        Msg::Read if src == OWNER => Some(h.ask()),
        Msg::Revoked => Some(History {
            rebalanced: true,
            ..h.clone()
        }),
        _ => None,
    }
}

impl EpochActors {
    pub fn new(params: EpochActorsParams) -> EpochActors {
        let system = |op| {
            owner_system(op, &params, [Node::Broker, Node::Coordinator], Node::Flow)
                .lossy_network(lossy_network(params.lossy))
                .record_msg_out(record_out)
        };
        let systems = Systems::per_owner_log(params.max_offset, params.network, actor_name, system);
        EpochActors { params, systems }
    }

    /// The refinement mapping onto the shared-state Epoch spec: the owner's transaction is
    /// linearized at the broker's acceptance (a refused one is a stutter: the fenced owner
    /// never folds it), the zombie's `initTransactions` at the broker's answer.
    pub fn image(s: &ActorState) -> EpochState {
        let b = Self::broker(s);
        let owner = Self::flow(s, OWNER);
        // A fenced transaction stays pending: the owner never folds past it.
        let pending = matches!(owner.phase, Phase::Committing(_) | Phase::Fenced);
        let (owner_pos, owner_loaded, owner_state) = owner.owner_image(OwnerView {
            pending: pending.then_some(owner.pos),
            reloading: owner.phase == Phase::Reading,
            decided: s.history.decided,
            read: s.history.read,
        });
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

/// The names of the model's own steps (see `actor_model_steps!`).
impl EpochActors {
    fn own_step(action: &ActorAction) -> Option<String> {
        let ActorModelAction::Timeout(_, timer) = action else {
            return None;
        };
        Some(match timer {
            Timer::Rebalance => "Rebalance".into(),
            Timer::ZombieCommit(m) => format!("StartCommit({m})"),
        })
    }
}

impl Model for EpochActors {
    crate::actor_model_steps!(systems, own_step: Self::own_step);

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("RefDurableOK", one_key::ref_durable_ok::<Self>),
            Property::always("TypeOK", |m: &Self, s: &ActorState| {
                let max = m.params.max_offset;
                let b = Self::broker(s);
                one_key::row_in_range(b.topic, max)
                    && Self::flow(s, OWNER).memory_in_range(max)
                    && b.max_epoch <= max + 2
            }),
            // The late initialiser wins: its transaction lands, the live owner's are fenced.
            Property::sometimes("LateInitWins", |_, s: &ActorState| {
                s.history.zombie_landed && Self::flow(s, OWNER).phase == Phase::Fenced
            }),
            Property::sometimes("OwnerReachesEnd", owner_reaches_end),
            // A lossy network lost the answer to a request the broker decided.
            Property::sometimes("ZombieReplyLost", |_, s: &ActorState| {
                Self::zombie_reply_lost(s)
            }),
        ]
    }
}

// The one key as SingleWriterStore sees it: the log and the topic's cell.
crate::one_key_actors!(EpochActors, row: |s: &ActorState| EpochActors::broker(s).topic);

impl Spec for EpochActors {
    crate::actor_swimlanes!(systems);

    fn variables(&self, s: &ActorState) -> Variables {
        let b = Self::broker(s);
        let mut vars = key_variables(
            s.history.op,
            self.params.max_offset,
            ("topic", b.topic),
            b.overwrote,
        );
        let (owner, z) = (Self::flow(s, OWNER), Self::flow(s, ZOMBIE));
        vars.extend([
            ("maxEpoch", b.max_epoch.into()),
            ("zombieEpoch", b.zombie_epoch.into()),
            (
                "owner",
                Shown::name(format!(
                    "{:?}, {}, epoch {}",
                    owner.phase,
                    owner.memory_text(),
                    owner.epoch
                )),
            ),
            (
                "zombie",
                Shown::name(format!(
                    "{:?}, {}, epoch {}, {} commits",
                    z.phase,
                    if z.active {
                        "revoked"
                    } else {
                        "not revoked yet"
                    },
                    z.epoch,
                    z.pos
                )),
            ),
            self.systems.network_variable(s),
            ("decided", s.history.decided.into()),
        ]);
        vars
    }

    fn refinements(&self) -> Vec<Box<dyn Refinement<ActorState>>> {
        let epoch = Epoch {
            max_offset: self.params.max_offset,
        };
        owner_refinements(self, "RefEpoch", epoch, Self::image)
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
