#![doc = include_str!("actors.md")]

use std::borrow::Cow;
use std::fmt;

use loadbearing_refinement::Shown;
use loadbearing_refinement::{MappedRefinement, Refinement, Spec, Variables};
use loadbearing_refinement::{Model, Property};
use serde::{Deserialize, Serialize};
use stateright::actor::{model_timeout, Actor, ActorModel, ActorModelAction, Id, Out};

use crate::infra::actors::owner::cancel_timers;
use crate::infra::actors::systems::{self, Actors, Systems};
pub use crate::infra::actors::NetKind;
use crate::infra::actors::{knobs, named};

use crate::group_commit::model::{
    GcState, GroupCommit, Pc, WriterQueue, CAP_LIMIT, MAX_CAP, MAX_WRITERS, WRITERS_LIMIT,
};
use crate::infra::knobs::{Flag, Nat};
use crate::{Configured, Guard};

pub const PRODUCER: usize = 0;
pub const FLOW: usize = 1;

/// Writer `w` (1-based, it writes input offset `w`) is actor `w + 1`.
pub fn writer_id(w: u8) -> Id {
    Id::from(w as usize + 1)
}

fn writer_of(id: Id) -> u8 {
    (usize::from(id) - 1) as u8
}

pub fn actor_name(id: Id) -> &'static str {
    /// The producer, the flow, then the writers.
    const NAMES: [&str; 2 + MAX_WRITERS] = [
        "producer", "flow", "writer 1", "writer 2", "writer 3", "writer 4", "writer 5", "writer 6",
        "writer 7", "writer 8",
    ];
    named(&NAMES, id)
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Msg {
    /// A writer queues its write.
    Offer,
    Queued,
    /// A writer asks for the transaction lock.
    Acquire,
    Granted,
    /// The lock is held by another writer: ask again.
    Busy,
    /// The lock holder's transaction: drain the queue (up to the cap) with the scheduled offset.
    Commit,
    Committed,
    /// Writer `w`'s write is durable (to the writer, and to the flow, which gates on it).
    Durable(u8),
    /// The flow schedules input offset `o` for the next transaction's offset commit.
    Schedule(u8),
    Scheduled(u8),
}

/// Every message shows as it is spelled: `Offer`, `Durable(2)`.
impl fmt::Display for Msg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Timer {
    /// The flow's choice to schedule offset `o` now.
    Schedule(u8),
}

/// The producer: the transaction lock, the queue, and what its transactions made durable.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ProducerState {
    /// Writers in arrival order.
    pub queue: Vec<u8>,
    /// The writer holding the lock.
    pub lock: Option<u8>,
    /// Bit w: writer w's write is durable.
    pub durable: u16,
    /// The writers in the order their writes became durable.
    pub drained: Vec<u8>,
    /// Bit w: writer w's transaction step is done.
    pub committed: u16,
    pub oc: u8,
    pub co: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WriterPhase {
    Offering,
    Acquiring,
    Committing,
    Awaiting,
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WriterState {
    pub phase: WriterPhase,
    /// The producer said its write is durable.
    pub durable: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FlowState {
    /// The offset the producer acknowledged as scheduled.
    pub oc: u8,
    /// Bit w: the flow was told writer w's write is durable.
    pub known: u16,
    /// A `Schedule` is outstanding.
    pub waiting: bool,
    pub done: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum NodeState {
    Producer(ProducerState),
    Flow(FlowState),
    Writer(WriterState),
}

#[derive(Clone, Debug)]
pub enum Node {
    Producer { cap: u8 },
    Flow { n: u8, gated: bool },
    Writer,
}

fn durable_upto(bits: u16, o: u8) -> bool {
    (1..=o).all(|k| bits & (1 << k) != 0)
}

impl Node {
    /// The flow arms a timer for every offset it may schedule next: above the acknowledged
    /// one, and (gated) with every write up to it known durable.
    fn arm(&self, st: &FlowState, o: &mut Out<Self>) {
        let Node::Flow { n, gated } = *self else {
            return;
        };
        for off in st.oc + 1..=n {
            if !gated || durable_upto(st.known, off) {
                o.set_timer(Timer::Schedule(off), model_timeout());
            }
        }
    }

    fn on_flow_msg(&self, st: &mut FlowState, msg: Msg, o: &mut Out<Self>) -> bool {
        let Node::Flow { n, .. } = *self else {
            return false;
        };
        match msg {
            Msg::Durable(w) => {
                st.known |= 1 << w;
                if !st.waiting && !st.done {
                    self.arm(st, o);
                }
            }
            Msg::Scheduled(off) if st.waiting => {
                st.waiting = false;
                st.oc = st.oc.max(off);
                if st.oc == n {
                    st.done = true;
                } else {
                    self.arm(st, o);
                }
            }
            _ => return false,
        }
        true
    }

    fn on_writer_msg(st: &mut WriterState, msg: Msg, o: &mut Out<Self>) -> bool {
        match (st.phase, msg) {
            (WriterPhase::Offering, Msg::Queued) => {
                st.phase = WriterPhase::Acquiring;
                o.send(Id::from(PRODUCER), Msg::Acquire);
            }
            (WriterPhase::Acquiring, Msg::Busy) => o.send(Id::from(PRODUCER), Msg::Acquire),
            (WriterPhase::Acquiring, Msg::Granted) => {
                st.phase = WriterPhase::Committing;
                o.send(Id::from(PRODUCER), Msg::Commit);
            }
            (WriterPhase::Committing, Msg::Committed) => {
                st.phase = if st.durable {
                    WriterPhase::Done
                } else {
                    WriterPhase::Awaiting
                };
            }
            (_, Msg::Durable(_)) => {
                st.durable = true;
                if st.phase == WriterPhase::Awaiting {
                    st.phase = WriterPhase::Done;
                }
            }
            _ => return false,
        }
        true
    }

    fn on_producer_msg(cap: u8, p: &mut ProducerState, src: Id, msg: Msg, o: &mut Out<Self>) {
        match msg {
            Msg::Offer => {
                p.queue.push(writer_of(src));
                o.send(src, Msg::Queued);
            }
            Msg::Acquire => match p.lock {
                None => {
                    p.lock = Some(writer_of(src));
                    o.send(src, Msg::Granted);
                }
                Some(_) => o.send(src, Msg::Busy),
            },
            Msg::Commit if p.lock == Some(writer_of(src)) => {
                let take = p.queue.len().min(cap as usize);
                let batch: Vec<u8> = p.queue.drain(..take).collect();
                for &w in &batch {
                    p.durable |= 1 << w;
                    p.drained.push(w);
                    o.send(writer_id(w), Msg::Durable(w));
                    o.send(Id::from(FLOW), Msg::Durable(w));
                }
                p.co = p.oc;
                p.lock = None;
                p.committed |= 1 << writer_of(src);
                o.send(src, Msg::Committed);
            }
            Msg::Schedule(off) => {
                if off > p.oc {
                    p.oc = off;
                }
                o.send(src, Msg::Scheduled(off));
            }
            _ => {}
        }
    }
}

impl Actor for Node {
    crate::actor_types!();

    fn name(&self) -> String {
        match self {
            Node::Producer { .. } => "producer".into(),
            Node::Flow { .. } => "flow".into(),
            Node::Writer => "writer".into(),
        }
    }

    fn on_start(&self, _id: Id, _storage: &Option<()>, o: &mut Out<Self>) -> NodeState {
        match self {
            Node::Producer { .. } => NodeState::Producer(ProducerState {
                queue: Vec::new(),
                lock: None,
                durable: 0,
                drained: Vec::new(),
                committed: 0,
                oc: 0,
                co: 0,
            }),
            Node::Flow { .. } => {
                let st = FlowState {
                    oc: 0,
                    known: 0,
                    waiting: false,
                    done: false,
                };
                self.arm(&st, o);
                NodeState::Flow(st)
            }
            Node::Writer => {
                o.send(Id::from(PRODUCER), Msg::Offer);
                NodeState::Writer(WriterState {
                    phase: WriterPhase::Offering,
                    durable: false,
                })
            }
        }
    }

    fn on_msg(&self, _id: Id, state: &mut Cow<NodeState>, src: Id, msg: Msg, o: &mut Out<Self>) {
        match (self, &**state) {
            (&Node::Producer { cap }, NodeState::Producer(p)) => {
                let mut p = p.clone();
                Self::on_producer_msg(cap, &mut p, src, msg, o);
                if NodeState::Producer(p.clone()) != **state {
                    *state.to_mut() = NodeState::Producer(p);
                }
            }
            (Node::Flow { .. }, NodeState::Flow(st)) => {
                let mut st = *st;
                if self.on_flow_msg(&mut st, msg, o) {
                    *state.to_mut() = NodeState::Flow(st);
                }
            }
            (Node::Writer, NodeState::Writer(st)) => {
                let mut st = *st;
                if Self::on_writer_msg(&mut st, msg, o) {
                    *state.to_mut() = NodeState::Writer(st);
                }
            }
            _ => {}
        }
    }

    fn on_timeout(&self, _id: Id, state: &mut Cow<NodeState>, timer: &Timer, o: &mut Out<Self>) {
        let (Node::Flow { n, .. }, NodeState::Flow(st)) = (self, &**state) else {
            return;
        };
        let Timer::Schedule(off) = *timer;
        if st.waiting || st.done {
            return;
        }
        let mut st = *st;
        cancel_timers(o, *n, Timer::Schedule);
        st.waiting = true;
        o.send(Id::from(PRODUCER), Msg::Schedule(off));
        *state.to_mut() = NodeState::Flow(st);
    }
}

pub type ActorState = systems::State<Node, ()>;
pub type ActorAction = systems::Action<Node>;

crate::knob_params! {
    /// The constants of the actor model, one field a knob (declared below, as the spec names
    /// them).
    pub struct GroupCommitActorsParams {
        n: u8 = Self::N, cap: u8 = Self::CAP, gated: bool = Self::GATED,
        network: NetKind = knobs::NETWORK,
    }
}

/// The constants, as the model's write-up names them.
impl GroupCommitActorsParams {
    pub const N: Nat = Nat::new(
        "N",
        1,
        MAX_WRITERS as u64,
        2,
        "writers 1..N; writer w writes offset w",
    )
    .max_because(WRITERS_LIMIT);
    pub const CAP: Nat = Nat::new(
        "Cap",
        1,
        MAX_CAP,
        2,
        "at most Cap queued writes per transaction",
    )
    .max_because(CAP_LIMIT);
    pub const GATED: Flag = Flag::new(
        "Gated",
        true,
        "the flow schedules offset o only once it was told 1..o are durable",
    );
}

pub type GroupCommitActors = Actors<GroupCommitActorsParams, Node, ()>;

impl GroupCommitActors {
    pub fn new(params: GroupCommitActorsParams) -> GroupCommitActors {
        let GroupCommitActorsParams {
            n,
            cap,
            gated,
            network,
        } = params;
        let mut system = ActorModel::new((), ())
            .actor(Node::Producer { cap })
            .actor(Node::Flow { n, gated });
        for _ in 1..=n {
            system = system.actor(Node::Writer);
        }
        let system = Systems::one(system, network, actor_name);
        GroupCommitActors {
            params,
            systems: system,
        }
    }

    /// The actors as the model runs them (what `run-actors` runs for real).
    pub fn nodes(&self) -> Vec<Node> {
        self.systems.actors()
    }

    pub fn producer(s: &ActorState) -> &ProducerState {
        match &*s.actor_states[PRODUCER] {
            NodeState::Producer(p) => p,
            _ => unreachable!("actor 0 is the producer"),
        }
    }

    pub fn flow(s: &ActorState) -> FlowState {
        match &*s.actor_states[FLOW] {
            NodeState::Flow(st) => *st,
            _ => unreachable!("actor 1 is the flow"),
        }
    }

    pub fn writer(s: &ActorState, w: u8) -> WriterState {
        match &*s.actor_states[usize::from(writer_id(w))] {
            NodeState::Writer(st) => *st,
            _ => unreachable!("actors 2.. are writers"),
        }
    }

    fn writers(&self) -> impl Iterator<Item = u8> {
        1..=self.params.n
    }

    /// The refinement mapping onto the shared-state GroupCommit: each writer step is linearized
    /// where the producer takes it, the await where the writer learns the last of its two
    /// answers; the flow's schedule where the producer records it, its end where the flow
    /// learns the last offset was scheduled.
    pub fn image(&self, s: &ActorState) -> GcState {
        let p = Self::producer(s);
        let mut pc = [Pc::Done; MAX_WRITERS + 1];
        pc[0] = if Self::flow(s).done {
            Pc::Done
        } else {
            Pc::Sched
        };
        for w in self.writers() {
            let bit = 1 << w;
            pc[w as usize] = if Self::writer(s, w).phase == WriterPhase::Done {
                Pc::Done
            } else if p.committed & bit != 0 {
                Pc::Await
            } else if p.lock == Some(w) {
                Pc::Commit
            } else if p.queue.contains(&w) || p.durable & bit != 0 {
                Pc::Acq
            } else {
                Pc::Offer
            };
        }
        GcState {
            // Each writer offers once, so the queue fits the model's.
            queue: WriterQueue::try_from(&p.queue[..]).expect("each writer offers once"),
            lock: p.lock.is_some(),
            done: p.durable,
            oc: p.oc,
            co: p.co,
            pc,
        }
    }

    pub fn shipped(&self) -> GroupCommit {
        GroupCommit {
            n: self.params.n,
            cap: self.params.cap,
            gated: true,
        }
    }

    fn all_done(&self, s: &ActorState) -> bool {
        Self::flow(s).done
            && self
                .writers()
                .all(|w| Self::writer(s, w).phase == WriterPhase::Done)
    }

    /// A later write's durability notice reached the flow before an earlier one's: only a
    /// racing network reorders the producer's notices.
    fn notice_overtaken(s: &ActorState) -> bool {
        let p = Self::producer(s);
        let known = Self::flow(s).known;
        p.drained.iter().enumerate().any(|(i, &earlier)| {
            known & (1 << earlier) == 0 && p.drained[i + 1..].iter().any(|&l| known & (1 << l) != 0)
        })
    }

    /// The fairness group of a delivery on one connection, or of the flow's timers.
    fn connection_group(&self, src: Id, dst: Id) -> Option<usize> {
        let (src, dst) = (usize::from(src), usize::from(dst));
        let writers = self.params.n as usize;
        match (src, dst) {
            (FLOW, PRODUCER) => Some(1),
            (PRODUCER, FLOW) => Some(2),
            (w, PRODUCER) if w >= 2 => Some(3 + 2 * (w - 2)),
            (PRODUCER, w) if w >= 2 && w - 2 < writers => Some(4 + 2 * (w - 2)),
            _ => None,
        }
    }
}

/// The names of the model's own steps (see `actor_model_steps!`).
impl GroupCommitActors {
    fn own_step(action: &ActorAction) -> Option<String> {
        let ActorModelAction::Timeout(_, Timer::Schedule(o)) = action else {
            return None;
        };
        Some(format!("StartSchedule({o})"))
    }
}

impl Model for GroupCommitActors {
    crate::actor_model_steps!(systems, own_step: Self::own_step);

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("INV_OffsetWithinDurable", |_, s: &ActorState| {
                let p = Self::producer(s);
                durable_upto(p.durable, p.co)
            }),
            Property::always("TypeOK", |m: &Self, s: &ActorState| {
                let p = Self::producer(s);
                let n = m.params.n;
                p.oc <= n && p.co <= n && p.queue.len() <= n as usize
            }),
            Property::eventually("Termination", |m: &Self, s: &ActorState| m.all_done(s)),
            // The gate decides on what the flow was told: a write is durable while its notice
            // is still on its way to the flow.
            Property::sometimes("NoticeInFlight", |_, s: &ActorState| {
                let p = Self::producer(s);
                p.durable & !Self::flow(s).known != 0
            }),
            Property::sometimes("CommittedByAnother", |m: &Self, s: &ActorState| {
                let p = Self::producer(s);
                m.writers()
                    .any(|w| p.durable & (1 << w) != 0 && p.committed & (1 << w) == 0)
            }),
            Property::sometimes("NoticeOvertaken", |_, s: &ActorState| {
                Self::notice_overtaken(s)
            }),
        ]
    }
}

impl Spec for GroupCommitActors {
    fn actor(&self, action: &ActorAction) -> String {
        self.systems.swimlane(action)
    }

    fn variables(&self, s: &ActorState) -> Variables {
        let p = Self::producer(s);
        let f = Self::flow(s);
        let bits = |b: u16| Shown::set(self.writers().filter(|w| b & (1 << w) != 0));
        let writers = self.writers().map(|w| {
            let st = Self::writer(s, w);
            let durable = if st.durable { " durable" } else { "" };
            Shown::name(format!("{w}:{:?}{durable}", st.phase))
        });
        vec![
            ("queue", Shown::sequence(p.queue.iter())),
            (
                "lock",
                Shown::name(p.lock.map_or("free".to_string(), |w| format!("writer {w}"))),
            ),
            ("durable", bits(p.durable)),
            ("oc", p.oc.into()),
            ("co", p.co.into()),
            (
                "flow",
                Shown::name(format!(
                    "oc {}, knows {}{}{}",
                    f.oc,
                    bits(f.known),
                    if f.waiting { ", waiting" } else { "" },
                    if f.done { ", done" } else { "" }
                )),
            ),
            ("writers", Shown::list(writers)),
            self.systems.network_variable(s),
        ]
    }

    /// One weakly-fair group per connection (a message in flight on it is eventually
    /// delivered) and one for the flow's timers: fairness per actor would let the producer
    /// answer one writer's retries forever while another's commit waits.
    fn fairness_groups(&self) -> Vec<String> {
        let mut groups = vec![
            "flow's timers".to_string(),
            "flow→producer".to_string(),
            "producer→flow".to_string(),
        ];
        for w in self.writers() {
            groups.push(format!("writer {w}→producer"));
            groups.push(format!("producer→writer {w}"));
        }
        groups
    }

    fn fairness_group(&self, action: &ActorAction) -> Option<usize> {
        match action {
            ActorModelAction::Deliver { src, dst, .. } => self.connection_group(*src, *dst),
            ActorModelAction::Timeout(..) => Some(0),
            _ => None,
        }
    }

    fn refinements(&self) -> Vec<Box<dyn Refinement<ActorState>>> {
        let me = self.clone();
        vec![Box::new(MappedRefinement::new(
            "RefGroupCommit",
            self.shipped(),
            move |s: &ActorState| me.image(s),
        ))]
    }
}

impl Configured for GroupCommitActors {
    const NAME: &'static str = "GroupCommitActors";
    const DOC: &'static str = include_str!("actors.md");
    type Params = GroupCommitActorsParams;
    const GUARDS: &'static [Guard] = &[Guard::off(
        "gate on the flow",
        GroupCommitActorsParams::GATED,
    )];

    fn build(params: GroupCommitActorsParams) -> Self {
        GroupCommitActors::new(params)
    }
}

crate::conform_actors!(GroupCommitActors, actor_name);
