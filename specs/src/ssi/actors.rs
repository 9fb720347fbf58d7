#![doc = include_str!("actors.md")]

use std::borrow::Cow;
use std::fmt;

use loadbearing_refinement::Shown;
use loadbearing_refinement::{MappedRefinement, Refinement, Spec, Variables};
use loadbearing_refinement::{Model, Property};
use serde::{Deserialize, Serialize};
use stateright::actor::{Actor, ActorModel, ActorModelAction, Id, Out};

use crate::infra::actors::systems::{self, Actors, Systems};
pub use crate::infra::actors::NetKind;
use crate::infra::actors::{lossy_network, messages, named};

use crate::infra::knobs::{Choice, Flag, Knob, KnobError, Params, Resolved};
use crate::ssi::{commit_record_final, Ssi, SsiAction, SsiState, Status, MAX_TXNS};
use crate::{Configured, Guard};

pub const ENGINE: usize = 0;

/// Transaction `t` (0-based, shown `T1`, `T2`, …) is actor `t + 1`.
pub fn client_id(t: u8) -> Id {
    Id::from(t as usize + 1)
}

pub fn actor_name(id: Id) -> &'static str {
    /// The engine, then the clients.
    const NAMES: [&str; 1 + MAX_TXNS] = ["engine", "T1", "T2", "T3"];
    named(&NAMES, id)
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Msg {
    /// A client's requests: begin, its next statement, commit.
    Begin,
    Exec(u8),
    Commit,
    /// The engine's answers.
    Begun,
    Done(u8),
    Committed,
    Aborted,
    /// The engine's own next step of a commit or an abort, sent to itself: between the two
    /// steps of a commit any other request may be handled (the #136 window).
    Record(u8),
    End(u8),
    Cleanup(u8),
}

impl fmt::Display for Msg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Msg::Record(t) => write!(f, "Record(T{})", t + 1),
            Msg::End(t) => write!(f, "End(T{})", t + 1),
            Msg::Cleanup(t) => write!(f, "Cleanup(T{})", t + 1),
            // The client's requests and the engine's answers show as they are spelled.
            _ => fmt::Debug::fmt(self, f),
        }
    }
}

/// No timers: the clients send as soon as they are answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Timer {}

/// What a client knows of its transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClientPhase {
    Beginning,
    /// Waiting for the answer to statement `i`.
    Executing(u8),
    Committing,
    /// The engine said so.
    Committed,
    Aborted,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EngineState {
    pub ssi: SsiState,
    /// Bit t: the engine has sent itself transaction t's cleanup.
    pub cleanup_sent: u8,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum NodeState {
    Engine(EngineState),
    Client(ClientPhase),
}

#[derive(Clone, Debug)]
pub enum Node {
    Engine(Ssi),
    /// A transaction of `len` statements.
    Client {
        len: u8,
    },
}

impl Node {
    /// Applies `action` if the shared-state engine enables it.
    fn apply(ssi: &Ssi, s: &mut SsiState, action: SsiAction) -> bool {
        let mut enabled = Vec::new();
        ssi.actions(s, &mut enabled);
        if !enabled.contains(&action) {
            return false;
        }
        *s = ssi.next_state(s, action).expect("an enabled step");
        true
    }

    /// Every aborted transaction gets its cleanup sent once (the abort may be another's doing).
    fn schedule_cleanups(e: &mut EngineState, o: &mut Out<Self>) {
        for (t, txn) in e.ssi.txns.iter().enumerate() {
            let bit = 1 << t;
            if txn.status == Status::Aborted && !txn.cleaned && e.cleanup_sent & bit == 0 {
                e.cleanup_sent |= bit;
                o.send(Id::from(ENGINE), Msg::Cleanup(t as u8));
            }
        }
    }

    fn on_client_msg(len: u8, phase: &mut ClientPhase, msg: Msg, o: &mut Out<Self>) -> bool {
        let engine = Id::from(ENGINE);
        let next = |i: u8, o: &mut Out<Self>| {
            if i < len {
                o.send(engine, Msg::Exec(i));
                ClientPhase::Executing(i)
            } else {
                o.send(engine, Msg::Commit);
                ClientPhase::Committing
            }
        };
        *phase = match (*phase, msg) {
            (ClientPhase::Beginning, Msg::Begun) => next(0, o),
            (ClientPhase::Executing(i), Msg::Done(j)) if i == j => next(i + 1, o),
            (ClientPhase::Committing, Msg::Committed) => ClientPhase::Committed,
            (
                ClientPhase::Beginning | ClientPhase::Executing(_) | ClientPhase::Committing,
                Msg::Aborted,
            ) => ClientPhase::Aborted,
            _ => return false,
        };
        true
    }

    fn on_engine_msg(ssi: &Ssi, e: &mut EngineState, src: Id, msg: Msg, o: &mut Out<Self>) {
        let me = Id::from(ENGINE);
        let client = |t: u8| client_id(t);
        let aborted = |e: &EngineState, t: u8| e.ssi.txns[t as usize].status == Status::Aborted;
        match msg {
            Msg::Begin | Msg::Exec(_) | Msg::Commit if usize::from(src) != ENGINE => {
                let t = (usize::from(src) - 1) as u8;
                let action = match msg {
                    Msg::Begin => SsiAction::Begin(t),
                    Msg::Exec(i) => SsiAction::Exec(t, i),
                    _ => SsiAction::Check(t),
                };
                if !Self::apply(ssi, &mut e.ssi, action) && !aborted(e, t) {
                    return;
                }
                let reply = if aborted(e, t) {
                    Some(Msg::Aborted)
                } else {
                    match msg {
                        Msg::Begin => Some(Msg::Begun),
                        Msg::Exec(i) => Some(Msg::Done(i)),
                        // The check passed: the commit record is next.
                        _ => {
                            o.send(me, Msg::Record(t));
                            None
                        }
                    }
                };
                if let Some(reply) = reply {
                    o.send(client(t), reply);
                }
            }
            Msg::Record(t) if usize::from(src) == ENGINE => {
                Self::apply(ssi, &mut e.ssi, SsiAction::Record(t));
                if aborted(e, t) {
                    // Option 2's re-check after the durable record.
                    o.send(client(t), Msg::Aborted);
                } else {
                    o.send(me, Msg::End(t));
                }
            }
            Msg::End(t)
                if usize::from(src) == ENGINE
                    && Self::apply(ssi, &mut e.ssi, SsiAction::End(t)) =>
            {
                o.send(client(t), Msg::Committed);
            }
            Msg::Cleanup(t) if usize::from(src) == ENGINE => {
                Self::apply(ssi, &mut e.ssi, SsiAction::Cleanup(t));
            }
            _ => {}
        }
        Self::schedule_cleanups(e, o);
    }
}

impl Actor for Node {
    crate::actor_types!();

    fn name(&self) -> String {
        match self {
            Node::Engine(_) => "engine".into(),
            Node::Client { .. } => "client".into(),
        }
    }

    fn on_start(&self, _id: Id, _storage: &Option<()>, o: &mut Out<Self>) -> NodeState {
        match self {
            Node::Engine(ssi) => NodeState::Engine(EngineState {
                ssi: ssi.init_states().remove(0),
                cleanup_sent: 0,
            }),
            Node::Client { .. } => {
                o.send(Id::from(ENGINE), Msg::Begin);
                NodeState::Client(ClientPhase::Beginning)
            }
        }
    }

    fn on_msg(&self, _id: Id, state: &mut Cow<NodeState>, src: Id, msg: Msg, o: &mut Out<Self>) {
        match (self, &**state) {
            (Node::Engine(ssi), NodeState::Engine(e)) => {
                let mut e = e.clone();
                Self::on_engine_msg(ssi, &mut e, src, msg, o);
                if NodeState::Engine(e.clone()) != **state {
                    *state.to_mut() = NodeState::Engine(e);
                }
            }
            (&Node::Client { len }, NodeState::Client(phase)) => {
                let mut phase = *phase;
                if Self::on_client_msg(len, &mut phase, msg, o) {
                    *state.to_mut() = NodeState::Client(phase);
                }
            }
            _ => {}
        }
    }
}

pub type ActorState = systems::State<Node, ()>;
pub type ActorAction = systems::Action<Node>;

/// The constants of the actor model: the shared-state engine's, and the faults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SsiActorsParams {
    pub ssi: Ssi,
    pub network: NetKind,
    pub lossy: bool,
    pub crash_client: bool,
}

pub type SsiActors = Actors<SsiActorsParams, Node, ()>;

impl SsiActors {
    pub fn new(params: SsiActorsParams) -> SsiActors {
        let ssi = params.ssi.clone();
        let mut system = ActorModel::new((), ()).actor(Node::Engine(ssi.clone()));
        for program in &ssi.workload.programs {
            system = system.actor(Node::Client {
                len: program.len() as u8,
            });
        }
        let system = system
            .lossy_network(lossy_network(params.lossy))
            .max_crashes(usize::from(params.crash_client));
        SsiActors {
            systems: Systems::one(system, params.network, actor_name),
            params,
        }
    }

    /// The actors as the model runs them.
    pub fn nodes(&self) -> Vec<Node> {
        self.systems.actors()
    }

    pub fn engine(s: &ActorState) -> &EngineState {
        match &*s.actor_states[ENGINE] {
            NodeState::Engine(e) => e,
            NodeState::Client(_) => unreachable!("actor 0 is the engine"),
        }
    }

    pub fn client(s: &ActorState, t: usize) -> ClientPhase {
        match &*s.actor_states[t + 1] {
            NodeState::Client(phase) => *phase,
            NodeState::Engine(_) => unreachable!("actors 1.. are clients"),
        }
    }

    fn clients(&self) -> std::ops::Range<usize> {
        0..self.params.ssi.workload.programs.len()
    }

    /// What a client was told matches what the engine did: a lost answer leaves it not knowing,
    /// never knowing the wrong thing.
    fn outcome_reported_truly(&self, s: &ActorState) -> bool {
        let e = Self::engine(s);
        self.clients().all(|t| match Self::client(s, t) {
            ClientPhase::Committed => e.ssi.txns[t].status == Status::Committed,
            ClientPhase::Aborted => e.ssi.txns[t].status == Status::Aborted,
            _ => true,
        })
    }

    /// A transaction committed and its client waits for an answer that is nowhere.
    fn commit_outcome_lost(&self, s: &ActorState) -> bool {
        let e = Self::engine(s);
        self.clients().any(|t| {
            Self::client(s, t) == ClientPhase::Committing
                && e.ssi.txns[t].status == Status::Committed
                && !messages(&s.network)
                    .into_iter()
                    .any(|(_, dst, _)| dst == client_id(t as u8))
        })
    }
}

/// The faults the model rules out, and the names of its own steps (see `actor_model_steps!`).
impl SsiActors {
    /// Only a client crashes, and it never comes back: a transaction that never sends its
    /// commit. The engine does not crash (its state is the shared-state engine's).
    fn allowed(&self, _: &ActorState, action: &ActorAction) -> bool {
        match action {
            ActorModelAction::Crash(id) => usize::from(*id) != ENGINE,
            ActorModelAction::Recover(_) => false,
            _ => true,
        }
    }

    fn own_step(action: &ActorAction) -> Option<String> {
        let ActorModelAction::Crash(id) = action else {
            return None;
        };
        Some(format!("Crash({})", actor_name(*id)))
    }
}

impl Model for SsiActors {
    crate::actor_model_steps!(systems, own_step: Self::own_step, allowed: Self::allowed);

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("Serializable", |m: &Self, s: &ActorState| {
                m.params.ssi.serializable(&Self::engine(s).ssi)
            }),
            Property::always("CommitRecordFinal", |_, s: &ActorState| {
                commit_record_final(&Self::engine(s).ssi)
            }),
            Property::always("OutcomeReportedTruly", |m: &Self, s: &ActorState| {
                m.outcome_reported_truly(s)
            }),
            // Another request handled between a transaction's check and its end: the window
            // the #136 fix closed, as a message in flight.
            Property::sometimes("CommitWindowOpen", |_, s: &ActorState| {
                messages(&s.network)
                    .into_iter()
                    .any(|(_, _, msg)| matches!(msg, Msg::Record(_) | Msg::End(_)))
                    && messages(&s.network)
                        .into_iter()
                        .any(|(src, _, _)| usize::from(src) != ENGINE)
            }),
            Property::sometimes("ClientCrashedMidTransaction", |m: &Self, s: &ActorState| {
                m.clients().any(|t| {
                    s.crashed[t + 1] && Self::engine(s).ssi.txns[t].status == Status::Running
                })
            }),
            Property::sometimes("CommitOutcomeLost", |m: &Self, s: &ActorState| {
                m.commit_outcome_lost(s)
            }),
        ]
    }
}

impl Spec for SsiActors {
    fn actor(&self, action: &ActorAction) -> String {
        self.systems.swimlane(action)
    }

    fn variables(&self, s: &ActorState) -> Variables {
        let mut vars = self.params.ssi.variables(&Self::engine(s).ssi);
        let clients = self.clients().map(|t| {
            let crashed = if s.crashed[t + 1] { " crashed" } else { "" };
            Shown::name(format!("T{}:{:?}{crashed}", t + 1, Self::client(s, t)))
        });
        vars.push(("clients", Shown::list(clients)));
        vars.push(self.systems.network_variable(s));
        vars
    }

    fn refinements(&self) -> Vec<Box<dyn Refinement<ActorState>>> {
        vec![Box::new(MappedRefinement::new(
            "RefSSI",
            self.params.ssi.clone(),
            |s: &ActorState| Self::engine(s).ssi.clone(),
        ))]
    }
}

/// The constants, as the model's write-up names them.
impl SsiActorsParams {
    pub const NETWORK: Choice<NetKind> = crate::infra::actors::NETWORK;
    pub const LOSSY: Flag = crate::infra::actors::LOSSY;
    pub const CRASH_CLIENT: Flag = Flag::new(
        "CrashClient",
        false,
        "one client may crash for good, its transaction left running",
    );
}

impl Params for SsiActorsParams {
    const KNOBS: &'static [Knob] = &[
        Ssi::WORKLOAD.knob(),
        Ssi::PAST_CHECK.knob(),
        Ssi::READER_SITE_FIXED.knob(),
        Ssi::OPTIMIZATION.knob(),
        Ssi::COMMIT_CHECK.knob(),
        Ssi::DROP_MARKERS_AT_COMMIT.knob(),
        Ssi::RECHECK_AFTER_RECORD.knob(),
        Ssi::PLAIN_SI.knob(),
        Ssi::VISIBLE_AT_RECORD.knob(),
        Self::NETWORK.knob(),
        Self::LOSSY.knob(),
        Self::CRASH_CLIENT.knob(),
    ];

    fn from_resolved(k: &Resolved) -> Result<Self, KnobError> {
        Ok(SsiActorsParams {
            ssi: Ssi::from_resolved(k)?,
            network: k.get(Self::NETWORK)?,
            lossy: k.get(Self::LOSSY)?,
            crash_client: k.get(Self::CRASH_CLIENT)?,
        })
    }
}

/// The guards are the engine's: the actor level removes each the same way.
impl Configured for SsiActors {
    const NAME: &'static str = "SSIActors";
    const DOC: &'static str = include_str!("actors.md");
    type Params = SsiActorsParams;
    const GUARDS: &'static [Guard] = <Ssi as Configured>::GUARDS;

    fn build(params: SsiActorsParams) -> Self {
        SsiActors::new(params)
    }
}

crate::conform_actors!(SsiActors, actor_name);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_constants_are_the_engines_design_without_faults() {
        let knobs = crate::infra::knobs::Resolved::resolve::<SsiActorsParams>(
            SsiActors::NAME,
            &Default::default(),
        )
        .unwrap();
        let params = SsiActorsParams::from_resolved(&knobs).unwrap();
        let engine =
            crate::infra::knobs::Resolved::resolve::<Ssi>(Ssi::NAME, &Default::default()).unwrap();
        assert_eq!(params.ssi, Ssi::from_resolved(&engine).unwrap());
        assert_eq!(params.network, NetKind::Ordered);
        assert!(!params.lossy && !params.crash_client);
    }
}
