#![doc = include_str!("actors.md")]

use std::borrow::Cow;
use std::fmt;

use loadbearing_refinement::{MappedRefinement, Refinement, Spec, Variables};
use serde::{Deserialize, Serialize};
use stateright::actor::{
    model_timeout, Actor, ActorModel, ActorModelAction, ActorModelState, Envelope, Id, Out,
};
use stateright::{Model, Property};

pub use crate::infra::actors::NetKind;
use crate::infra::actors::{in_flight, message_step, swimlane, OwnerMemory};

use crate::cassandra::actors::Row;
use crate::infra::knobs::{Choice, Flag, Knob, KnobError, Nat, Params, Resolved};
use crate::infra::vocab::{Cell, Offsets, Ops, LAST_OFFSET, OFFSETS_LIMIT};
use crate::kafka::model::{Kafka, KafkaState};
use crate::one_key::{self, OneKey};
use crate::{Configured, Guard};

pub const BROKER: usize = 0;
pub const OWNER: usize = 1;
pub const ZOMBIE: usize = 2;

pub fn actor_name(id: Id) -> &'static str {
    match usize::from(id) {
        BROKER => "broker",
        OWNER => "owner",
        _ => "zombie",
    }
}

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
            Msg::Poll => write!(f, "Poll"),
            Msg::Generation(g) => write!(f, "Generation({g})"),
            Msg::Revoked => write!(f, "Revoked"),
            Msg::Read => write!(f, "Read"),
            Msg::RecordIs(row) => write!(f, "RecordIs({})", Cell::from(*row)),
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FlowState {
    /// Owner: events folded, the pending one included. Zombie: commits started.
    pub pos: u8,
    pub contents: Offsets,
    pub loaded: bool,
    pub before: Offsets,
    pub before_loaded: bool,
    pub phase: Phase,
    /// Zombie: revoked and still running; torn down once it captures the new generation (if
    /// coupled).
    pub active: bool,
    pub alive: bool,
    pub captured: u8,
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

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct History {
    pub op: Ops,
    pub decided: u8,
    pub read: Option<Offsets>,
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
                    for m in 1..=max_offset {
                        o.set_timer(Timer::ZombieCommit(m), model_timeout());
                    }
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
        // The live owner's transaction writes the correct fold and is accepted.
        o.send(
            Id::from(BROKER),
            Msg::Commit {
                offset,
                row: Cell::correct_fold(op, offset).into(),
                gen: None,
                carries: true,
            },
        );
    }

    fn cancel_zombie_timers(max_offset: u8, o: &mut Out<Self>) {
        o.cancel_timer(Timer::ZombiePoll);
        for m in 1..=max_offset {
            o.cancel_timer(Timer::ZombieCommit(m));
        }
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
                        o.send(
                            Id::from(BROKER),
                            Msg::Commit {
                                offset: m,
                                row: Cell::correct_fold(op, m).into(),
                                gen: Some(st.captured),
                                carries: seeded,
                            },
                        );
                    }
                    Timer::Rebalance => return,
                }
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
pub struct KafkaActorsParams {
    pub max_offset: u8,
    pub coupled: bool,
    pub seeded: bool,
    pub generation_check: bool,
    pub network: NetKind,
    pub zombie_commits: u8,
}

#[derive(Clone)]
pub struct KafkaActors {
    pub params: KafkaActorsParams,
    systems: Vec<ActorModel<Node, (), History>>,
}

fn record_out(_: &(), h: &History, env: Envelope<&Msg>) -> Option<History> {
    let to_owner = usize::from(env.dst) == OWNER;
    match env.msg {
        Msg::Committed { offset, .. } if to_owner && *offset > h.decided => Some(History {
            decided: *offset,
            ..h.clone()
        }),
        Msg::RecordIs(row) if to_owner => Some(History {
            read: Some(Cell::from(*row).live_contents()),
            ..h.clone()
        }),
        Msg::Read if usize::from(env.src) == OWNER => Some(History {
            read: None,
            ..h.clone()
        }),
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
        let systems = Ops::all(max_offset)
            .map(|op| {
                let flow = |zombie| Node::Flow {
                    zombie,
                    op,
                    max_offset,
                    coupled,
                    seeded,
                    zombie_commits,
                };
                ActorModel::new(
                    (),
                    History {
                        op,
                        decided: 0,
                        read: None,
                    },
                )
                .actor(Node::Broker { generation_check })
                .actor(flow(false))
                .actor(flow(true))
                .init_network(network.empty())
                .record_msg_out(record_out)
            })
            .collect();
        KafkaActors { params, systems }
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
        let (owner_pos, owner_loaded, owner_state) = match owner.phase {
            Phase::Committing(offset) if s.history.decided < offset => {
                (offset - 1, owner.before_loaded, owner.before)
            }
            Phase::Reading => match s.history.read {
                Some(contents) => (owner.pos, true, contents),
                None => (owner.pos, false, Offsets::EMPTY),
            },
            _ => (owner.pos, owner.loaded, owner.contents),
        };
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

impl Model for KafkaActors {
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
            ActorModelAction::Timeout(_, Timer::ZombiePoll) => "StartPoll".into(),
            ActorModelAction::Timeout(_, Timer::ZombieCommit(m)) => format!("StartCommit({m})"),
            _ => format!("{action:?}"),
        }
    }

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

/// The one key as SingleWriterStore sees it: the log and the topic's cell, read straight off
/// the actors (the same as `Kafka::log`/`row` of `Self::image`, without building it).
impl OneKey for KafkaActors {
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

impl Spec for KafkaActors {
    fn variables(&self, s: &ActorState) -> Variables {
        let network = in_flight(&s.network, self.params.network, actor_name);
        let b = Self::broker(s);
        let owner = Self::flow(s, OWNER);
        let z = Self::flow(s, ZOMBIE);
        vec![
            ("op", s.history.op.render(self.params.max_offset)),
            ("topic", b.topic.to_string()),
            ("overwrote", b.overwrote.to_string()),
            ("liveGen", b.live_gen.to_string()),
            (
                "owner",
                format!(
                    "{:?}, pos {}, {}{}",
                    owner.phase,
                    owner.pos,
                    owner.contents,
                    if owner.loaded { "" } else { " evicted" }
                ),
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
            ("network", format!("[{}]", network.join("; "))),
            ("decided", s.history.decided.to_string()),
        ]
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

    fn actor(&self, action: &ActorAction) -> String {
        swimlane(action, actor_name)
    }
}

/// The constants, as the model's write-up names them.
impl KafkaActorsParams {
    pub const MAX_OFFSET: Nat = Nat::new(
        "MaxOffset",
        1,
        LAST_OFFSET as u64,
        2,
        "events at offsets 1..MaxOffset",
    )
    .max_because(OFFSETS_LIMIT);
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
    pub const ZOMBIE_COMMITS: Nat = Nat::new(
        "ZombieCommits",
        0,
        u8::MAX as u64,
        2,
        "transactions the zombie flow starts",
    )
    .max_because("the zombie counts its transactions in a u8");
}

impl Params for KafkaActorsParams {
    const KNOBS: &'static [Knob] = &[
        Self::MAX_OFFSET.knob(),
        Self::COUPLED.knob(),
        Self::SEEDED.knob(),
        Self::GENERATION_CHECK.knob(),
        Self::NETWORK.knob(),
        Self::ZOMBIE_COMMITS.knob(),
    ];

    fn from_resolved(k: &Resolved) -> Result<Self, KnobError> {
        Ok(KafkaActorsParams {
            max_offset: k.get(Self::MAX_OFFSET)?,
            coupled: k.get(Self::COUPLED)?,
            seeded: k.get(Self::SEEDED)?,
            generation_check: k.get(Self::GENERATION_CHECK)?,
            network: k.get(Self::NETWORK)?,
            zombie_commits: k.get(Self::ZOMBIE_COMMITS)?,
        })
    }
}

/// The spec's own constants: MaxOffset 2, the shipped guards, two zombie commits (the knobs'
/// defaults; a test pins that they agree).
impl Default for KafkaActorsParams {
    fn default() -> Self {
        KafkaActorsParams {
            max_offset: 2,
            coupled: true,
            seeded: true,
            generation_check: true,
            network: NetKind::Ordered,
            zombie_commits: 2,
        }
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

    #[test]
    fn the_default_constants_are_the_knobs_defaults() {
        let defaults = crate::infra::knobs::Resolved::resolve::<KafkaActorsParams>(
            KafkaActors::NAME,
            &Default::default(),
        )
        .unwrap();
        assert_eq!(
            KafkaActorsParams::from_resolved(&defaults).unwrap(),
            KafkaActorsParams::default()
        );
    }
}
