#![doc = include_str!("read.md")]

use std::fmt;

use loadbearing_refinement::Shown;
use loadbearing_refinement::{MappedRefinement, Refinement, Spec, Variables};
use loadbearing_refinement::{Model, Property};

use crate::infra::knobs::{Flag, Knob, KnobError, Params, Resolved};
use crate::recovery::log::{EnvAction, Environment, Indexes, Status, Topic, MAX_LOG};
use crate::recovery::read_atomic::{
    read_committed_only, returns_s3, AtomicRead, AtomicReadState, RecoveryReadAtomic, FAIR,
};
use crate::{Configured, Guard, Under};

/// Where the fine-grained read is: before capturing its bound, draining to it, done, or failed
/// loudly by the tripwire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ReaderState {
    Pending,
    Reading,
    Done,
    Failed,
}

impl fmt::Display for ReaderState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReaderState::Pending => "pending",
            ReaderState::Reading => "reading",
            ReaderState::Done => "done",
            ReaderState::Failed => "failed",
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct ReadState {
    /// `log` and `wphase`, the environment's.
    pub topic: Topic,
    pub rstate: ReaderState,
    /// The captured read bound (a log index; meaningful while reading).
    pub target: u8,
    /// The log indexes the completed read returned.
    pub result: Indexes,
    /// History variable: the committed set the read saw at Capture, its linearization point.
    pub observed: Indexes,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReadAction {
    Env(EnvAction),
    Capture,
    Complete,
    TripFail,
}

impl fmt::Debug for ReadAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadAction::Env(a) => a.fmt(f),
            ReadAction::Capture => write!(f, "Capture"),
            ReadAction::Complete => write!(f, "Complete"),
            ReadAction::TripFail => write!(f, "TripFail"),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecoveryRead {
    pub env: Environment,
    /// Remedy A: bound the read at the high watermark, read through an uncommitted lens.
    pub hw_target: bool,
    /// Platform fact: the reader's own read_committed endOffsets returns the LSO (false: the
    /// log end).
    pub end_offsets_is_lso: bool,
    /// The #849 remedy: a read whose target outlives the log end fails loudly.
    pub tripwire: bool,
    /// The refinement mapping reads the observation frozen at Capture (false: recomputes it
    /// from the current log, the negative control).
    pub freeze_observed: bool,
}

impl RecoveryRead {
    /// The bound Capture takes from `t`.
    fn bound(&self, t: &Topic) -> usize {
        if self.hw_target || !self.end_offsets_is_lso {
            t.log.hw()
        } else {
            t.log.lso()
        }
    }

    /// Complete's guard: the position reached the target, and no open record below it holds a
    /// read_committed position back.
    fn can_complete(&self, s: &ReadState) -> bool {
        let target = s.target as usize;
        s.rstate == ReaderState::Reading
            && target <= s.topic.log.len()
            && !s.topic.log.open_upto(target)
    }

    fn atomic(&self) -> RecoveryReadAtomic {
        RecoveryReadAtomic { env: self.env }
    }

    /// `ResultView`: what the abstract read has observed.
    fn result_view(&self, s: &ReadState) -> Indexes {
        match s.rstate {
            ReaderState::Done => s.result,
            ReaderState::Reading | ReaderState::Failed if self.freeze_observed => s.observed,
            ReaderState::Reading | ReaderState::Failed => {
                s.topic.log.committed_upto(s.target as usize)
            }
            ReaderState::Pending => Indexes::EMPTY,
        }
    }

    /// The refinement mapping: the same log and script; a failed read is a read that never
    /// responds.
    fn map(&self, s: &ReadState) -> AtomicReadState {
        AtomicReadState {
            topic: s.topic.clone(),
            rstate: match s.rstate {
                ReaderState::Pending => AtomicRead::Pending,
                ReaderState::Reading | ReaderState::Failed => AtomicRead::Reading,
                ReaderState::Done => AtomicRead::Done,
            },
            result: self.result_view(s),
        }
    }

    /// `INV_LineageSerialized`: without a foreign writer and with a stable id, no committed
    /// record sits above an open one.
    fn lineage_serialized(&self, s: &ReadState) -> bool {
        if !self.env.stable_id || self.env.foreign {
            return true;
        }
        let log = &s.topic.log.0;
        let first_open = log.iter().position(|r| r.st == Status::Open);
        match first_open {
            Some(o) => !log[o + 1..].iter().any(|r| r.st == Status::Committed),
            None => true,
        }
    }

    fn type_ok(&self, s: &ReadState) -> bool {
        s.topic.log.type_ok()
            && s.target as usize <= MAX_LOG
            && s.result.within(MAX_LOG)
            && s.observed.within(MAX_LOG)
    }
}

impl Model for RecoveryRead {
    type State = ReadState;
    type Action = ReadAction;

    fn init_states(&self) -> Vec<ReadState> {
        vec![ReadState {
            topic: Topic::INITIAL,
            rstate: ReaderState::Pending,
            target: 0,
            result: Indexes::EMPTY,
            observed: Indexes::EMPTY,
        }]
    }

    fn actions(&self, s: &ReadState, actions: &mut Vec<ReadAction>) {
        let mut env = Vec::new();
        self.env.actions(&s.topic, &mut env);
        actions.extend(env.into_iter().map(ReadAction::Env));
        if s.rstate == ReaderState::Pending {
            actions.push(ReadAction::Capture);
        }
        if self.can_complete(s) {
            actions.push(ReadAction::Complete);
        }
        if self.tripwire
            && s.rstate == ReaderState::Reading
            && s.target as usize > s.topic.log.len()
        {
            actions.push(ReadAction::TripFail);
        }
    }

    fn next_state(&self, s: &ReadState, action: ReadAction) -> Option<ReadState> {
        let mut next = s.clone();
        match action {
            ReadAction::Env(a) => next.topic = self.env.apply(&s.topic, a),
            ReadAction::Capture => {
                let target = self.bound(&s.topic);
                next.target = target as u8;
                next.rstate = ReaderState::Reading;
                // Frozen here: a later truncation cannot un-observe what the read saw.
                next.observed = s.topic.log.committed_upto(target);
            }
            ReadAction::Complete => {
                next.result = if self.freeze_observed {
                    s.observed
                } else {
                    s.topic.log.committed_upto(s.target as usize)
                };
                next.rstate = ReaderState::Done;
            }
            ReadAction::TripFail => next.rstate = ReaderState::Failed,
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("TypeOK", |m: &Self, s: &ReadState| m.type_ok(s)),
            Property::always("INV_ReadCommittedOnly", |_, s: &ReadState| {
                read_committed_only(&s.topic, s.result)
            }),
            Property::always("INV_LineageSerialized", |m: &Self, s: &ReadState| {
                m.lineage_serialized(s)
            }),
            Property::eventually("Terminates", |_, s: &ReadState| {
                s.rstate == ReaderState::Done
            }),
            Property::eventually("TerminatesOrFails", |_, s: &ReadState| {
                matches!(s.rstate, ReaderState::Done | ReaderState::Failed)
            }),
            // A completed read returns B's snapshot S3: the refinement is not kept by reads
            // that only ever complete before B writes.
            Property::sometimes("ReadReturnsS3", |_, s: &ReadState| {
                s.rstate == ReaderState::Done && returns_s3(&s.topic, s.result)
            }),
            // The tripwire fires on a read whose target outlived the log.
            Property::sometimes("TripFires", |_, s: &ReadState| {
                s.rstate == ReaderState::Failed
            }),
        ]
    }
}

impl Spec for RecoveryRead {
    fn variables(&self, s: &ReadState) -> Variables {
        vec![
            ("log", (&s.topic.log).into()),
            ("wphase", Shown::name(s.topic.wphase)),
            ("rstate", Shown::name(s.rstate)),
            ("target", s.target.into()),
            ("result", s.result.into()),
            ("observed", s.observed.into()),
        ]
    }

    fn fairness_groups(&self) -> Vec<String> {
        vec![FAIR.into()]
    }

    fn fairness_group(&self, _action: &ReadAction) -> Option<usize> {
        Some(0)
    }

    fn refinements(&self) -> Vec<Box<dyn Refinement<ReadState>>> {
        // Capture must be DoRead, Complete must be Respond, a tripwire failure a stutter, and
        // every environment step the atomic spec's own.
        let this = self.clone();
        vec![Box::new(MappedRefinement::new(
            "RefAtomic",
            self.atomic(),
            move |s: &ReadState| this.map(s),
        ))]
    }

    fn actor(&self, action: &ReadAction) -> String {
        match action {
            ReadAction::Env(a) => a.actor().into(),
            ReadAction::Capture | ReadAction::Complete | ReadAction::TripFail => "reader".into(),
        }
    }
}

/// The constants, as the spec names them.
impl RecoveryRead {
    pub const HW_TARGET: Flag = Flag::new(
        "HwTarget",
        true,
        "remedy A: the read bounds at the high watermark, captured through a read_uncommitted lens",
    );
    pub const END_OFFSETS_IS_LSO: Flag = Flag::new(
        "EndOffsetsIsLSO",
        true,
        "platform fact: the reader's own read_committed endOffsets returns the LSO (false: the log end)",
    );
    pub const TRIPWIRE: Flag = Flag::new(
        "Tripwire",
        true,
        "a read whose target outlives the log end fails loudly instead of hanging",
    );
    pub const FREEZE_OBSERVED: Flag = Flag::new(
        "FreezeObserved",
        true,
        "the refinement mapping reads the observation frozen at Capture (false: recomputed from the current log)",
    );
}

impl Params for RecoveryRead {
    const KNOBS: &'static [Knob] = &[
        Environment::STABLE_ID.knob(),
        Self::HW_TARGET.knob(),
        Environment::FOREIGN.knob(),
        Self::END_OFFSETS_IS_LSO.knob(),
        Environment::TRUNCATION.knob(),
        Self::TRIPWIRE.knob(),
        Self::FREEZE_OBSERVED.knob(),
    ];

    fn from_resolved(k: &Resolved) -> Result<Self, KnobError> {
        Ok(RecoveryRead {
            env: Environment::from_resolved(k)?,
            hw_target: k.get(Self::HW_TARGET)?,
            end_offsets_is_lso: k.get(Self::END_OFFSETS_IS_LSO)?,
            tripwire: k.get(Self::TRIPWIRE)?,
            freeze_observed: k.get(Self::FREEZE_OBSERVED)?,
        })
    }
}

impl Configured for RecoveryRead {
    const NAME: &'static str = "RecoveryRead";
    const DOC: &'static str = include_str!("read.md");
    const UNDER: &'static [Under] = &[Under {
        backend: "Kafka835",
        step: "OwnerRecover: the recovery read, taken as one step",
    }];
    type Params = RecoveryRead;
    const GUARDS: &'static [Guard] = &[
        Guard::off("stable transactional.id", Environment::STABLE_ID),
        Guard::off("high-watermark bound", Self::HW_TARGET),
        Guard::off("no-progress tripwire", Self::TRIPWIRE),
        Guard::off("frozen observation", Self::FREEZE_OBSERVED),
    ];

    fn build(params: RecoveryRead) -> Self {
        params
    }
}

use crate::recovery::read_trace::ReadEvent;
use loadbearing_trace::Conform;

/// Why a recovery-read event contradicts a RecoveryRead step.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReadContradiction {
    #[error("the read captured the records below {seen}, the model's bound is {model}")]
    Target { seen: u8, model: u8 },
    #[error("the read returned records {seen:?}, the model's result is {model}")]
    Result { seen: Vec<u8>, model: Indexes },
    #[error(
        "the partition's ends are {seen_stable} stable of {seen_high} records, the model's log \
         {log} has {model_stable} of {model_high}"
    )]
    Ends {
        seen_stable: u8,
        seen_high: u8,
        model_stable: usize,
        model_high: usize,
        log: crate::recovery::log::Log,
    },
}

impl Indexes {
    /// The set of these 1-based indexes, or `None` if one is out of range.
    pub fn of(indexes: &[u8]) -> Option<Indexes> {
        indexes.iter().try_fold(Indexes::EMPTY, |mut set, &i| {
            (1..=8).contains(&i).then(|| {
                set.insert(usize::from(i));
                set
            })
        })
    }
}

impl Conform for RecoveryRead {
    type Event = ReadEvent;
    type Contradiction = ReadContradiction;

    fn reports(&self, action: &ReadAction, event: &ReadEvent) -> bool {
        use EnvAction as E;
        matches!(
            (action, event),
            (ReadAction::Env(E::AWriteS1), ReadEvent::AWriteS1)
                | (ReadAction::Env(E::AOpenT1), ReadEvent::AOpenT1)
                | (ReadAction::Env(E::ForeignOpen), ReadEvent::ForeignOpen)
                | (ReadAction::Env(E::BInit), ReadEvent::BInit)
                | (ReadAction::Env(E::BWriteS3), ReadEvent::BWriteS3)
                | (ReadAction::Env(E::BOpenT2), ReadEvent::BOpenT2)
                | (ReadAction::Capture, ReadEvent::Capture { .. })
                | (ReadAction::Complete, ReadEvent::Complete { .. })
                | (ReadAction::TripFail, ReadEvent::TripFail)
        ) || match (action, event) {
            (ReadAction::Env(E::TimeoutAbort(i)), ReadEvent::TimeoutAbort { index }) => i == index,
            (ReadAction::Env(E::Truncate(k)), ReadEvent::Truncate { keep }) => k == keep,
            _ => false,
        }
    }

    fn observe(
        &self,
        _before: &ReadState,
        after: &ReadState,
        event: &ReadEvent,
    ) -> Result<(), ReadContradiction> {
        match event {
            ReadEvent::Capture { target } if *target != after.target => {
                Err(ReadContradiction::Target {
                    seen: *target,
                    model: after.target,
                })
            }
            ReadEvent::Complete { result } if Indexes::of(result) != Some(after.result) => {
                Err(ReadContradiction::Result {
                    seen: result.clone(),
                    model: after.result,
                })
            }
            ReadEvent::Ends { stable, high }
                if usize::from(*stable) != after.topic.log.lso()
                    || usize::from(*high) != after.topic.log.hw() =>
            {
                Err(ReadContradiction::Ends {
                    seen_stable: *stable,
                    seen_high: *high,
                    model_stable: after.topic.log.lso(),
                    model_high: after.topic.log.hw(),
                    log: after.topic.log.clone(),
                })
            }
            _ => Ok(()),
        }
    }

    fn is_stutter(&self, event: &ReadEvent) -> bool {
        matches!(event, ReadEvent::Ends { .. })
    }

    /// Record indexes and counts past the model's log.
    fn beyond(&self, events: &[ReadEvent]) -> Option<loadbearing_trace::Beyond> {
        let most = crate::recovery::log::MAX_LOG as u64;
        events.iter().enumerate().find_map(|(i, event)| {
            let named: Vec<(&str, u8)> = match event {
                ReadEvent::TimeoutAbort { index } => vec![("index", *index)],
                ReadEvent::Truncate { keep } => vec![("records kept", *keep)],
                ReadEvent::Capture { target } => vec![("target", *target)],
                ReadEvent::Complete { result } => {
                    result.iter().map(|&r| ("index read", r)).collect()
                }
                ReadEvent::Ends { stable, high } => {
                    vec![
                        ("records below the stable offset", *stable),
                        ("records below the high watermark", *high),
                    ]
                }
                _ => Vec::new(),
            };
            named
                .into_iter()
                .find(|&(_, n)| n as u64 > most)
                .map(|(what, n)| loadbearing_trace::Beyond {
                    event: i,
                    what: format!("{what} {n}"),
                    bound: loadbearing_trace::Bound::Fixed {
                        what: "records in the log",
                        most,
                    },
                })
        })
    }

    fn disabled_reason(&self, s: &ReadState, event: &ReadEvent) -> Option<String> {
        match event {
            ReadEvent::Complete { .. } if s.rstate != ReaderState::Reading => {
                Some(format!("the read is {}", s.rstate))
            }
            ReadEvent::Complete { .. } => Some(format!(
                "the read's bound {} is not below a stable log end: {} (an open transaction \
                 below it, or the log shorter)",
                s.target, s.topic.log
            )),
            ReadEvent::TripFail if !self.tripwire => Some("the design has no tripwire".into()),
            ReadEvent::TripFail => Some(format!(
                "the bound {} has not outlived the log {} (the model trips only then)",
                s.target, s.topic.log
            )),
            ReadEvent::Capture { .. } => Some(format!("the read is {}", s.rstate)),
            ReadEvent::TimeoutAbort { index } => {
                Some(format!("no open transaction at {index} in {}", s.topic.log))
            }
            _ => Some(format!(
                "the writers' script is at {}, which does not take this step",
                s.topic.wphase
            )),
        }
    }
}
