#![doc = include_str!("actors.md")]

use std::borrow::Cow;
use std::fmt;

use loadbearing_refinement::{MappedRefinement, Refinement, Spec, Variables};
use serde::{Deserialize, Serialize};
use stateright::actor::{model_timeout, Actor, ActorModel, ActorModelAction, Envelope, Id, Out};
use stateright::{Model, Property};

use crate::infra::actors::owner::{cancel_timers, key_variables, set_timers, OwnerNext, OwnerView};
use crate::infra::actors::systems::{self, Actors, Systems};
pub use crate::infra::actors::NetKind;

use crate::cassandra::actors::Row;
use crate::infra::knobs::{Choice, Flag, Nat};
use crate::infra::vocab::{Cell, Offsets, Ops};
use crate::kafka::model::{Kafka, KafkaState};
use crate::one_key;
use crate::{Configured, Guard};

crate::actor_ids!(BROKER = "broker", OWNER = "owner", ZOMBIE = "zombie");

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
                if *accepted {
                    write!(f, "Committed({offset})")
                } else {
                    write!(f, "Fenced({offset})")
                }
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
        pub phase: Phase,
        /// Zombie: revoked and still running; torn down once it captures the new generation
        /// (if coupled).
        pub active: bool,
        pub alive: bool,
        pub captured: u8,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeState {
    Broker(BrokerState),
    Flow(FlowState),
}

#[derive(Clone, Debug)]
pub enum Node {
    Broker {
        generation_check: bool,
    },
    Flow {
        zombie: bool,
        op: Ops,
        max_offset: u8,
        coupled: bool,
        seeded: bool,
        zombie_commits: u8,
    },
}

crate::owner_history! {
    pub struct History {}
}

impl Node {
    fn proceed(&self, st: &mut FlowState, o: &mut Out<Self>) {
        let Node::Flow {
            zombie,
            op,
            max_offset,
            zombie_commits,
            ..
        } = *self
        else {
            return;
        };
        st.phase = Phase::Idle;
        if zombie {
            if st.alive && st.active {
                o.set_timer(Timer::ZombiePoll, model_timeout());
                if st.pos < zombie_commits {
                    set_timers(o, max_offset, Timer::ZombieCommit);
                }
            }
            return;
        }
        match st.memory().next(op, max_offset) {
            OwnerNext::Reload => {
                st.phase = Phase::Reading;
                o.send(Id::from(BROKER), Msg::Read);
            }
            OwnerNext::Write(offset, _) => {
                st.phase = Phase::Committing(offset);
                // The live owner's transaction writes the correct fold and is accepted.
                o.send(Id::from(BROKER), Self::commit(op, offset, None, true));
            }
            OwnerNext::Done => {}
        }
    }

    /// The transaction that writes the correct fold at `offset`.
    fn commit(op: Ops, offset: u8, gen: Option<u8>, carries: bool) -> Msg {
        Msg::Commit {
            offset,
            row: Cell::correct_fold(op, offset).into(),
            gen,
            carries,
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
            Node::Flow { zombie: false, .. } => "owner".into(),
            Node::Flow { zombie: true, .. } => "zombie".into(),
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
            Node::Flow { zombie, .. } => {
                let mut st = FlowState {
                    pos: 0,
                    contents: Offsets::EMPTY,
                    loaded: true,
                    before: Offsets::EMPTY,
                    before_loaded: true,
                    phase: Phase::Idle,
                    active: false,
                    alive: true,
                    captured: 1,
                };
                if !zombie {
                    self.proceed(&mut st, o);
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
            (
                &Node::Flow {
                    zombie, max_offset, ..
                },
                NodeState::Flow(mut st),
                msg,
            ) => {
                match (st.phase, msg) {
                    (_, Msg::Revoked) if zombie => {
                        st.active = true;
                        self.proceed(&mut st, o);
                    }
                    (Phase::Committing(p), Msg::Committed { offset, .. }) if p == offset => {
                        self.proceed(&mut st, o);
                    }
                    (Phase::Polling, Msg::Generation(g)) => {
                        let Node::Flow { coupled, .. } = *self else {
                            return;
                        };
                        if g != st.captured {
                            // The rebalance callback runs: capture, and (coupled) tear down.
                            st.captured = g;
                            st.alive = !coupled;
                        }
                        if !st.alive {
                            Self::cancel_zombie_timers(max_offset, o);
                        }
                        self.proceed(&mut st, o);
                    }
                    (Phase::Reading, Msg::RecordIs(row)) => {
                        st.contents = Cell::from(row).live_contents();
                        st.loaded = true;
                        self.proceed(&mut st, o);
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
            (
                &Node::Flow {
                    op,
                    max_offset,
                    seeded,
                    ..
                },
                NodeState::Flow(mut st),
                t,
            ) if st.phase == Phase::Idle && st.alive && st.active => {
                Self::cancel_zombie_timers(max_offset, o);
                match t {
                    Timer::ZombiePoll => {
                        st.phase = Phase::Polling;
                        o.send(Id::from(BROKER), Msg::Poll);
                    }
                    Timer::ZombieCommit(m) => {
                        st.pos += 1;
                        st.phase = Phase::Committing(m);
                        let commit = Self::commit(op, m, Some(st.captured), seeded);
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

pub type ActorState = systems::State<Node, History>;
pub type ActorAction = systems::Action<Node>;

crate::knob_params! {
    /// The constants of the actor model, one field a knob (declared below, as the spec names
    /// them).
    pub struct KafkaActorsParams {
        max_offset: u8 = MAX_OFFSET, coupled: bool = COUPLED, seeded: bool = SEEDED,
        generation_check: bool = GENERATION_CHECK, network: NetKind = NETWORK,
        zombie_commits: u8 = ZOMBIE_COMMITS,
    }
}

/// The constants, as the model's write-up names them.
impl KafkaActorsParams {
    pub const MAX_OFFSET: Nat = crate::infra::actors::knobs::MAX_OFFSET;
    pub const COUPLED: Flag = Flag::new(
        "Coupled",
        true,
        "capturing the new generation tears the revoked flow down",
    );
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
    pub const NETWORK: Choice<NetKind> = crate::infra::actors::NETWORK;
    pub const ZOMBIE_COMMITS: Nat = crate::infra::actors::knobs::ZOMBIE_COMMITS;
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
        let KafkaActorsParams {
            max_offset,
            coupled,
            seeded,
            generation_check,
            network,
            zombie_commits,
        } = params;
        let system = |op| {
            let flow = |zombie| Node::Flow {
                zombie,
                op,
                max_offset,
                coupled,
                seeded,
                zombie_commits,
            };
            ActorModel::new((), History::of_log(op))
                .actor(Node::Broker { generation_check })
                .actor(flow(false))
                .actor(flow(true))
                .record_msg_out(record_out)
        };
        let systems = Systems::per_log(max_offset, system, |h: &History| h.op, network, actor_name);
        KafkaActors { params, systems }
    }

    /// The actors of the system over the log `op`, as the model runs them (what
    /// `run-actors` runs for real).
    pub fn nodes(&self, op: Ops) -> Vec<Node> {
        self.systems.actors_for_log(op)
    }

    pub fn broker(s: &ActorState) -> BrokerState {
        match *s.actor_states[BROKER] {
            NodeState::Broker(b) => b,
            NodeState::Flow(_) => unreachable!("actor 0 is the broker"),
        }
    }

    pub fn flow(s: &ActorState, id: usize) -> FlowState {
        match *s.actor_states[id] {
            NodeState::Flow(st) => st,
            NodeState::Broker(_) => unreachable!("actors 1 and 2 are flows"),
        }
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
            Property::always("RefDurableOK", |m: &Self, s: &ActorState| {
                one_key::ref_durable_ok(m, s)
            }),
            Property::always("INV_NoStaleOverwrite", |_, s: &ActorState| {
                !Self::broker(s).overwrote
            }),
            Property::always("INV_CaptureCoupled", |m: &Self, s: &ActorState| {
                let k = Self::image(m.params.seeded, s);
                !k.z_alive || k.z_captured_gen != k.live_gen
            }),
            Property::always("TypeOK", |m: &Self, s: &ActorState| {
                let max = m.params.max_offset;
                let owner = Self::flow(s, OWNER);
                one_key::row_in_range(Self::broker(s).topic, max)
                    && owner.pos <= max
                    && owner.contents.within(1, max)
                    && Self::broker(s).live_gen <= max + 2
            }),
            Property::sometimes("ZombieFenced", |_, s: &ActorState| {
                Self::broker(s).rebalanced && !Self::flow(s, ZOMBIE).alive
            }),
            Property::sometimes("OwnerReachesEnd", |m: &Self, s: &ActorState| {
                s.history.decided == m.params.max_offset
            }),
        ]
    }
}

// The one key as SingleWriterStore sees it: the log and the topic's cell, read straight off
// the actors (the same as `Kafka::log`/`row` of `Self::image`, without building it).
crate::one_key_actors!(KafkaActors, row: |s: &ActorState| KafkaActors::broker(s).topic);

impl Spec for KafkaActors {
    fn actor(&self, action: &ActorAction) -> String {
        self.systems.swimlane(action)
    }

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
                ("liveGen", b.live_gen.to_string()),
                (
                    "owner",
                    format!("{:?}, {}", owner.phase, owner.memory_text()),
                ),
                (
                    "zombie",
                    format!(
                        "{:?}, {}, captured {}, {} commits",
                        z.phase,
                        match (z.active, z.alive) {
                            (false, _) => "not revoked yet",
                            (true, true) => "alive",
                            (true, false) => "torn down",
                        },
                        z.captured,
                        z.pos
                    ),
                ),
                self.systems.network_variable(s),
                ("decided", s.history.decided.to_string()),
            ])
            .collect()
    }

    fn refinements(&self) -> Vec<Box<dyn Refinement<ActorState>>> {
        let seeded = self.params.seeded;
        vec![
            Box::new(MappedRefinement::new(
                "RefKafka",
                self.shipped(),
                move |s: &ActorState| Self::image(seeded, s),
            )),
            one_key::ref_safe_spec(self),
        ]
    }
}

impl Configured for KafkaActors {
    const NAME: &'static str = "KafkaActors";
    const DOC: &'static str = include_str!("actors.md");
    type Params = KafkaActorsParams;
    const GUARDS: &'static [Guard] = &[
        Guard::off("capture coupling", KafkaActorsParams::COUPLED),
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
        let path = stateright::Path::from_actions(&model, init, actions.iter().take(1)).unwrap();
        let svg = model
            .as_svg(path)
            .expect("an actor model draws its messages");
        assert!(svg.starts_with("<svg"), "{svg}");
    }
}
