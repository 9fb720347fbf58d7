#![doc = include_str!("read_atomic.md")]

use std::fmt;

use loadbearing_refinement::Shown;
use loadbearing_refinement::{Model, Property};
use loadbearing_refinement::{Spec, Variables};

use crate::infra::knobs::{Knob, KnobError, Params, Resolved};
use crate::recovery::log::{EnvAction, Environment, Indexes, Status, Topic, Writer, MAX_LOG};
use crate::Configured;

/// Where the atomic read is: before its linearization point, between it and the response, or
/// done.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum AtomicRead {
    Pending,
    Reading,
    Done,
}

impl fmt::Display for AtomicRead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AtomicRead::Pending => "pending",
            AtomicRead::Reading => "reading",
            AtomicRead::Done => "done",
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct AtomicReadState {
    /// `log` and `wphase`, shared with the implementation.
    pub topic: Topic,
    pub rstate: AtomicRead,
    /// The log indexes the read observed at its linearization point.
    pub result: Indexes,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum AtomicReadAction {
    Env(EnvAction),
    DoRead,
    Respond,
}

impl fmt::Debug for AtomicReadAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AtomicReadAction::Env(a) => a.fmt(f),
            AtomicReadAction::DoRead => write!(f, "DoRead"),
            AtomicReadAction::Respond => write!(f, "Respond"),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecoveryReadAtomic {
    pub env: Environment,
}

impl Model for RecoveryReadAtomic {
    type State = AtomicReadState;
    type Action = AtomicReadAction;

    fn init_states(&self) -> Vec<AtomicReadState> {
        vec![AtomicReadState {
            topic: Topic::INITIAL,
            rstate: AtomicRead::Pending,
            result: Indexes::EMPTY,
        }]
    }

    fn actions(&self, s: &AtomicReadState, actions: &mut Vec<AtomicReadAction>) {
        let mut env = Vec::new();
        self.env.actions(&s.topic, &mut env);
        actions.extend(env.into_iter().map(AtomicReadAction::Env));
        match s.rstate {
            AtomicRead::Pending => actions.push(AtomicReadAction::DoRead),
            AtomicRead::Reading => actions.push(AtomicReadAction::Respond),
            AtomicRead::Done => {}
        }
    }

    fn next_state(&self, s: &AtomicReadState, action: AtomicReadAction) -> Option<AtomicReadState> {
        let mut next = s.clone();
        match action {
            AtomicReadAction::Env(a) => next.topic = self.env.apply(&s.topic, a),
            // The linearization point: at one instant, exactly the committed set.
            AtomicReadAction::DoRead => {
                next.result = s.topic.log.committed();
                next.rstate = AtomicRead::Reading;
            }
            AtomicReadAction::Respond => next.rstate = AtomicRead::Done,
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("TypeOK", |_, s: &AtomicReadState| {
                s.topic.log.type_ok() && s.result.within(MAX_LOG)
            }),
            Property::always("INV_ReadCommittedOnly", |_, s: &AtomicReadState| {
                read_committed_only(&s.topic, s.result)
            }),
            Property::eventually("Terminates", |_, s: &AtomicReadState| {
                s.rstate == AtomicRead::Done
            }),
            // B's snapshot S3 is among what a completed read returns, so the invariant is not
            // kept by reads that see nothing.
            Property::sometimes("ReadReturnsS3", |_, s: &AtomicReadState| {
                s.rstate == AtomicRead::Done && returns_s3(&s.topic, s.result)
            }),
        ]
    }
}

/// `INV_ReadCommittedOnly`: every returned index is a committed record of the current log.
pub fn read_committed_only(t: &Topic, result: Indexes) -> bool {
    result
        .iter()
        .all(|i| i <= t.log.len() && t.log.at(i).st == Status::Committed)
}

/// A returned index holds B's committed snapshot S3.
pub fn returns_s3(t: &Topic, result: Indexes) -> bool {
    result
        .iter()
        .any(|i| i <= t.log.len() && t.log.at(i).w == Writer::B)
}

/// The one weakly-fair group: `WF_vars(Next)`.
pub const FAIR: &str = "Next";

impl Spec for RecoveryReadAtomic {
    fn variables(&self, s: &AtomicReadState) -> Variables {
        vec![
            ("log", (&s.topic.log).into()),
            ("wphase", Shown::name(s.topic.wphase)),
            ("rstate", Shown::name(s.rstate)),
            ("result", s.result.into()),
        ]
    }

    fn fairness_groups(&self) -> Vec<String> {
        vec![FAIR.into()]
    }

    fn fairness_group(&self, _action: &AtomicReadAction) -> Option<usize> {
        Some(0)
    }

    fn actor(&self, action: &AtomicReadAction) -> String {
        match action {
            AtomicReadAction::Env(a) => a.actor().into(),
            AtomicReadAction::DoRead | AtomicReadAction::Respond => "reader".into(),
        }
    }
}

impl Params for Environment {
    const KNOBS: &'static [Knob] = &[
        Self::STABLE_ID.knob(),
        Self::FOREIGN.knob(),
        Self::TRUNCATION.knob(),
    ];

    fn from_resolved(k: &Resolved) -> Result<Self, KnobError> {
        Ok(Environment {
            stable_id: k.get(Self::STABLE_ID)?,
            foreign: k.get(Self::FOREIGN)?,
            truncation: k.get(Self::TRUNCATION)?,
        })
    }
}

/// No guards: the atomic read is the specification, and its constants are the environment's.
impl Configured for RecoveryReadAtomic {
    const NAME: &'static str = "RecoveryReadAtomic";
    const DOC: &'static str = include_str!("read_atomic.md");
    type Params = Environment;

    fn build(env: Environment) -> Self {
        RecoveryReadAtomic { env }
    }
}
