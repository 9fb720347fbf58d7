#![doc = include_str!("actors.md")]

use std::borrow::Cow;
use std::fmt;

use loadbearing_refinement::Shown;
use loadbearing_refinement::{Model, Property};
use loadbearing_refinement::{Refinement, Spec, Variables};
use serde::{Deserialize, Serialize};
use stateright::actor::{model_timeout, Actor, ActorModelAction, Envelope, Id, Out};

use crate::infra::actors::knobs;
use crate::infra::actors::owner::{
    cancel_timers, key_variables, owner_reaches_end, owner_refinements, owner_system, set_timers,
    Flow, OwnerNext, OwnerView,
};
use crate::infra::actors::systems::{Actors, Systems};
pub use crate::infra::actors::NetKind;

use crate::cassandra::actors::Row;
use crate::infra::knobs::Flag;
use crate::infra::vocab::{Cell, Ops};
use crate::kafka::model::{Kafka, KafkaState};
use crate::one_key;
use crate::{Configured, Guard};

crate::actor_ids!(BROKER = "broker", OWNER = "owner", ZOMBIE = "zombie");

// ActorState and ActorAction, and the nodes' accessors.
crate::owner_nodes!(KafkaActors, broker: Broker(BrokerState) at BROKER);

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Msg {
    /// A transaction: the snapshot record at `offset` and, when `carries`, the input offset
    /// committed with the consumer generation `gen` (the live owner's is always current).
    Commit {
        offset: u8,
        row: Row,
        gen: Option<u8>,
        carries: bool,
    },
    Committed {
        offset: u8,
        accepted: bool,
    },
    /// The consumer's poll, answered with the group's generation.
    Poll,
    Generation(u8),
    /// The rebalance left the revoked flow running: it starts acting as a zombie.
    Revoked,
    Read,
    RecordIs(Row),
}

impl Msg {
    /// The transaction that writes the correct fold at `offset`.
    fn commit(op: Ops, offset: u8, gen: Option<u8>, carries: bool) -> Msg {
        Msg::Commit {
            offset,
            row: Cell::correct_fold(op, offset).into(),
            gen,
            carries,
        }
    }
}

impl fmt::Display for Msg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Msg::Commit {
                offset, row, gen, ..
            } => match gen {
                Some(g) => write!(f, "Commit({offset}, {}, gen {g})", Cell::from(*row)),
                None => write!(f, "Commit({offset}, {})", Cell::from(*row)),
            },
            Msg::Committed { offset, accepted } => {
                let outcome = if *accepted { "Committed" } else { "Fenced" };
                write!(f, "{outcome}({offset})")
            }
            Msg::RecordIs(row) => write!(f, "RecordIs({})", Cell::from(*row)),
            // The rest show as they are spelled.
            Msg::Poll | Msg::Generation(_) | Msg::Revoked | Msg::Read => fmt::Debug::fmt(self, f),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Timer {
    Rebalance,
    ZombiePoll,
    ZombieCommit(u8),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BrokerState {
    pub topic: Cell,
    pub overwrote: bool,
    pub live_gen: u8,
    pub rebalanced: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    Idle,
    Committing(u8),
    Polling,
    Reading,
}

crate::owner_flow_state! {
    pub struct FlowState {
        /// Zombie: revoked and still running; torn down once it captures the new generation
        /// (if coupled).
        pub active: bool = false,
        pub alive: bool = true,
        pub captured: u8 = 1,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeState {
    Broker(BrokerState),
    Flow(FlowState),
}

#[derive(Clone, Debug)]
pub enum Node {
    Broker { generation_check: bool },
    Flow(Flow<KafkaActorsParams>),
}

crate::owner_history! {
    pub struct History {}
}

impl Node {
    fn proceed(flow: &Flow<KafkaActorsParams>, st: &mut FlowState, o: &mut Out<Self>) {
        let Flow { zombie, op, params } = flow;
        st.phase = Phase::Idle;
        if *zombie {
            if st.alive && st.active {
                o.set_timer(Timer::ZombiePoll, model_timeout());
                if st.pos < params.zombie_commits {
                    set_timers(o, params.max_offset, Timer::ZombieCommit);
                }
            }
            return;
        }
        match st.memory().next(*op, params.max_offset) {
            OwnerNext::Reload => {
                st.phase = Phase::Reading;
                o.send(Id::from(BROKER), Msg::Read);
            }
            OwnerNext::Write(offset, _) => {
                st.phase = Phase::Committing(offset);
                // The live owner's transaction writes the correct fold and is accepted.
                o.send(Id::from(BROKER), Msg::commit(*op, offset, None, true));
            }
            OwnerNext::Done => {}
        }
    }

    fn cancel_zombie_timers(max_offset: u8, o: &mut Out<Self>) {
        o.cancel_timer(Timer::ZombiePoll);
        cancel_timers(o, max_offset, Timer::ZombieCommit);
    }
}

impl Actor for Node {
    crate::actor_types!();

    fn name(&self) -> String {
        match self {
            Node::Broker { .. } => "broker".into(),
            Node::Flow(flow) => flow.name().into(),
        }
    }

    fn on_start(&self, _id: Id, _storage: &Option<()>, o: &mut Out<Self>) -> NodeState {
        match self {
            Node::Broker { .. } => {
                o.set_timer(Timer::Rebalance, model_timeout());
                NodeState::Broker(BrokerState {
                    topic: Cell::ABSENT,
                    overwrote: false,
                    live_gen: 1,
                    rebalanced: false,
                })
            }
            Node::Flow(flow) => {
                let mut st = FlowState::start();
                if !flow.zombie {
                    Self::proceed(flow, &mut st, o);
                }
                NodeState::Flow(st)
            }
        }
    }

    fn on_msg(&self, _id: Id, state: &mut Cow<NodeState>, src: Id, msg: Msg, o: &mut Out<Self>) {
        match (self, **state, msg) {
            (&Node::Broker { generation_check }, NodeState::Broker(mut b), msg) => {
                match msg {
                    Msg::Commit {
                        offset,
                        row,
                        gen,
                        carries,
                    } => {
                        // The transaction coordinator checks the offset commit's generation.
                        let accepted =
                            !carries || !generation_check || gen.is_none_or(|g| g == b.live_gen);
                        if accepted {
                            b.overwrote |= b.topic.would_overwrite(offset);
                            b.topic = row.into();
                        }
                        o.send(src, Msg::Committed { offset, accepted });
                    }
                    Msg::Poll => o.send(src, Msg::Generation(b.live_gen)),
                    Msg::Read => o.send(src, Msg::RecordIs(b.topic.into())),
                    _ => return,
                }
                if NodeState::Broker(b) != **state {
                    *state.to_mut() = NodeState::Broker(b);
                }
            }
            (Node::Flow(flow), NodeState::Flow(mut st), msg) => {
                let max_offset = flow.params.max_offset;
                match (st.phase, msg) {
                    (_, Msg::Revoked) if flow.zombie => {
                        st.active = true;
                        Self::proceed(flow, &mut st, o);
                    }
                    (Phase::Committing(p), Msg::Committed { offset, .. }) if p == offset => {
                        Self::proceed(flow, &mut st, o);
                    }
                    (Phase::Polling, Msg::Generation(g)) => {
                        if g != st.captured {
                            // The rebalance callback runs: capture, and (coupled) tear down.
                            st.captured = g;
                            st.alive = !flow.params.coupled;
                        }
                        if !st.alive {
                            Self::cancel_zombie_timers(max_offset, o);
                        }
                        Self::proceed(flow, &mut st, o);
                    }
                    (Phase::Reading, Msg::RecordIs(row)) => {
                        st.reloaded(row.into());
                        Self::proceed(flow, &mut st, o);
                    }
                    _ => return,
                }
                *state.to_mut() = NodeState::Flow(st);
            }
            _ => {}
        }
    }

    fn on_timeout(&self, _id: Id, state: &mut Cow<NodeState>, timer: &Timer, o: &mut Out<Self>) {
        match (self, **state, *timer) {
            (Node::Broker { .. }, NodeState::Broker(mut b), Timer::Rebalance) => {
                b.live_gen += 1;
                b.rebalanced = true;
                o.send(Id::from(ZOMBIE), Msg::Revoked);
                *state.to_mut() = NodeState::Broker(b);
            }
            (Node::Flow(Flow { op, params, .. }), NodeState::Flow(mut st), t)
                if st.phase == Phase::Idle && st.alive && st.active =>
            {
                Self::cancel_zombie_timers(params.max_offset, o);
                match t {
                    Timer::ZombiePoll => {
                        st.phase = Phase::Polling;
                        o.send(Id::from(BROKER), Msg::Poll);
                    }
                    Timer::ZombieCommit(m) => {
                        st.pos += 1;
                        st.phase = Phase::Committing(m);
                        let commit = Msg::commit(*op, m, Some(st.captured), params.seeded);
                        o.send(Id::from(BROKER), commit);
                    }
                    Timer::Rebalance => return,
                }
                *state.to_mut() = NodeState::Flow(st);
            }
            _ => {}
        }
    }
}

crate::knob_params! {
    /// The constants of the actor model, one field a knob (declared below, as the spec names
    /// them).
    pub struct KafkaActorsParams {
        max_offset: u8 = knobs::MAX_OFFSET, coupled: bool = Kafka::COUPLED,
        seeded: bool = Self::SEEDED, generation_check: bool = Self::GENERATION_CHECK,
        network: NetKind = knobs::NETWORK, zombie_commits: u8 = knobs::ZOMBIE_COMMITS,
    }
}

/// The constants, as the model's write-up names them (`Coupled` is the shared-state spec's).
impl KafkaActorsParams {
    pub const SEEDED: Flag = Flag::new(
        "Seeded",
        true,
        "the zombie's transaction carries an input offset, so it is gated",
    );
    pub const GENERATION_CHECK: Flag = Flag::new(
        "GenerationCheck",
        true,
        "the transaction coordinator rejects an offset commit from a stale generation",
    );
}

pub type KafkaActors = Actors<KafkaActorsParams, Node, History>;

fn record_out(_: &(), h: &History, env: Envelope<&Msg>) -> Option<History> {
    let to_owner = usize::from(env.dst) == OWNER;
    match env.msg {
        Msg::Committed { offset, .. } if to_owner => h.decide(*offset),
        Msg::RecordIs(row) if to_owner => Some(h.serve((*row).into())),
        Msg::Read if usize::from(env.src) == OWNER => Some(h.ask()),
        _ => None,
    }
}

impl KafkaActors {
    pub fn new(params: KafkaActorsParams) -> KafkaActors {
        let broker = Node::Broker {
            generation_check: params.generation_check,
        };
        let system =
            |op| owner_system(op, &params, [broker.clone()], Node::Flow).record_msg_out(record_out);
        let systems = Systems::per_owner_log(params.max_offset, params.network, actor_name, system);
        KafkaActors { params, systems }
    }

    /// The refinement mapping onto the shared-state Kafka spec.
    pub fn image(seeded: bool, s: &ActorState) -> KafkaState {
        let b = Self::broker(s);
        let owner = Self::flow(s, OWNER);
        let (owner_pos, owner_loaded, owner_state) = owner.owner_image(OwnerView {
            pending: match owner.phase {
                Phase::Committing(offset) => Some(offset),
                _ => None,
            },
            reloading: owner.phase == Phase::Reading,
            decided: s.history.decided,
            read: s.history.read,
        });
        let z = Self::flow(s, ZOMBIE);
        KafkaState {
            op: s.history.op,
            topic: b.topic,
            owner_pos,
            owner_loaded,
            owner_state,
            overwrote: b.overwrote,
            live_gen: b.live_gen,
            z_alive: b.rebalanced && z.alive,
            z_captured_gen: if b.rebalanced { z.captured } else { 0 },
            z_carries_offset: b.rebalanced && seeded,
            rebalanced: b.rebalanced,
        }
    }

    pub fn shipped(&self) -> Kafka {
        Kafka {
            max_offset: self.params.max_offset,
            coupled: true,
            seeded: true,
        }
    }
}

/// The names of the model's own steps (see `actor_model_steps!`).
impl KafkaActors {
    fn own_step(action: &ActorAction) -> Option<String> {
        match action {
            ActorModelAction::Timeout(_, Timer::Rebalance) => Some("Rebalance".into()),
            ActorModelAction::Timeout(_, Timer::ZombiePoll) => Some("StartPoll".into()),
            ActorModelAction::Timeout(_, Timer::ZombieCommit(m)) => {
                Some(format!("StartCommit({m})"))
            }
            _ => None,
        }
    }
}

impl Model for KafkaActors {
    crate::actor_model_steps!(systems, own_step: Self::own_step);

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("RefDurableOK", one_key::ref_durable_ok::<Self>),
            Property::always("INV_NoStaleOverwrite", Self::no_stale_overwrite),
            Property::always("INV_CaptureCoupled", |m: &Self, s: &ActorState| {
                let k = Self::image(m.params.seeded, s);
                !k.z_alive || k.z_captured_gen != k.live_gen
            }),
            Property::always("TypeOK", |m: &Self, s: &ActorState| {
                let max = m.params.max_offset;
                one_key::row_in_range(Self::broker(s).topic, max)
                    && Self::flow(s, OWNER).memory_in_range(max)
                    && Self::broker(s).live_gen <= max + 2
            }),
            Property::sometimes("ZombieFenced", |_, s: &ActorState| {
                Self::broker(s).rebalanced && !Self::flow(s, ZOMBIE).alive
            }),
            Property::sometimes("OwnerReachesEnd", owner_reaches_end),
        ]
    }
}

// The one key as SingleWriterStore sees it: the log and the topic's cell, read straight off
// the actors (the same as `Kafka::log`/`row` of `Self::image`, without building it).
crate::one_key_actors!(KafkaActors, row: |s: &ActorState| KafkaActors::broker(s).topic);

impl Spec for KafkaActors {
    crate::actor_swimlanes!(systems);

    fn variables(&self, s: &ActorState) -> Variables {
        let b = Self::broker(s);
        let (owner, z) = (Self::flow(s, OWNER), Self::flow(s, ZOMBIE));
        let key = key_variables(
            s.history.op,
            self.params.max_offset,
            ("topic", b.topic),
            b.overwrote,
        );
        key.into_iter()
            .chain([
                ("liveGen", b.live_gen.into()),
                (
                    "owner",
                    Shown::name(format!("{:?}, {}", owner.phase, owner.memory_text())),
                ),
                (
                    "zombie",
                    Shown::name(format!(
                        "{:?}, {}, captured {}, {} commits",
                        z.phase,
                        match (z.active, z.alive) {
                            (false, _) => "not revoked yet",
                            (true, true) => "alive",
                            (true, false) => "torn down",
                        },
                        z.captured,
                        z.pos
                    )),
                ),
                self.systems.network_variable(s),
                ("decided", s.history.decided.into()),
            ])
            .collect()
    }

    fn refinements(&self) -> Vec<Box<dyn Refinement<ActorState>>> {
        let seeded = self.params.seeded;
        owner_refinements(self, "RefKafka", self.shipped(), move |s| {
            Self::image(seeded, s)
        })
    }
}

impl Configured for KafkaActors {
    const NAME: &'static str = "KafkaActors";
    const DOC: &'static str = include_str!("actors.md");
    type Params = KafkaActorsParams;
    const GUARDS: &'static [Guard] = &[
        Guard::off("capture coupling", Kafka::COUPLED),
        Guard::off("seed", KafkaActorsParams::SEEDED),
        Guard::off(
            "generation check in the coordinator",
            KafkaActorsParams::GENERATION_CHECK,
        ),
    ];

    fn build(params: KafkaActorsParams) -> Self {
        KafkaActors::new(params)
    }
}

crate::conform_actors!(KafkaActors, actor_name);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_actors_draw_their_sequence_diagram() {
        let model = KafkaActors::new(KafkaActorsParams {
            zombie_commits: 1,
            ..KafkaActorsParams::default()
        });
        let init = model.init_states().remove(0);
        let mut actions = Vec::new();
        model.actions(&init, &mut actions);
        let svg = model
            .as_svg(&init, &actions[..1])
            .expect("an actor model draws its messages");
        assert!(svg.starts_with("<svg"), "{svg}");
    }
}
