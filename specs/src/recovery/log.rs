//! The snapshot topic's log and the environment acting on it (the double-handover writers and
//! the broker), shared by [`crate::recovery::read_atomic`] and [`crate::recovery::read`].
//!
//! Both modules of the #835 suite write the same writer and broker actions over the same `log`;
//! the read is what differs. The refinement maps states, not actions, so sharing the
//! environment's code cannot hide an implementation step from the check.

use loadbearing_refinement::Shown;
use std::fmt;

use crate::infra::knobs::Flag;

/// Who wrote a record: the first owner, the second owner, or a producer outside the lineage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Writer {
    A,
    B,
    F,
}

/// A record's transaction: committed, open, or aborted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Status {
    Committed,
    Open,
    Aborted,
}

/// One record per transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Rec {
    pub w: Writer,
    pub st: Status,
}

impl fmt::Display for Rec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let w = match self.w {
            Writer::A => "A",
            Writer::B => "B",
            Writer::F => "F",
        };
        let st = match self.st {
            Status::Committed => "c",
            Status::Open => "o",
            Status::Aborted => "x",
        };
        write!(f, "{w}:{st}")
    }
}

/// The longest log the script writes (S1, T1, the foreign open, S3, T2).
pub const MAX_LOG: usize = 5;

/// The writer script's position (`wphase`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum WPhase {
    A1,
    A2,
    F,
    BInit,
    BWrite,
    BOpen,
    Idle,
}

impl fmt::Display for WPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WPhase::A1 => "a1",
            WPhase::A2 => "a2",
            WPhase::F => "f",
            WPhase::BInit => "binit",
            WPhase::BWrite => "bwrite",
            WPhase::BOpen => "bopen",
            WPhase::Idle => "idle",
        })
    }
}

/// A set of log indexes (1-based, as the spec counts them), one bit each.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct Indexes(u8);

impl Indexes {
    pub const EMPTY: Indexes = Indexes(0);

    pub fn insert(&mut self, i: usize) {
        self.0 |= 1 << (i - 1);
    }

    pub fn iter(self) -> impl Iterator<Item = usize> {
        (1..=8).filter(move |i| self.0 & (1 << (i - 1)) != 0)
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Every index lies in `1..=n`.
    pub fn within(self, n: usize) -> bool {
        self.iter().all(|i| i <= n)
    }
}

impl From<Indexes> for Shown {
    fn from(indexes: Indexes) -> Shown {
        Shown::items("{", ", ", "}", indexes.iter())
    }
}

impl fmt::Display for Indexes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let items: Vec<String> = self.iter().map(|i| i.to_string()).collect();
        write!(f, "{{{}}}", items.join(", "))
    }
}

/// The topic partition's log, one record per transaction.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Log(pub Vec<Rec>);

impl Log {
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `log[i]`, 1-based.
    pub fn at(&self, i: usize) -> Rec {
        self.0[i - 1]
    }

    /// The committed records among the first `bound` (`{i \in 1..bound : log[i].st = "c"}`).
    pub fn committed_upto(&self, bound: usize) -> Indexes {
        let mut set = Indexes::EMPTY;
        for (i, r) in self.0.iter().enumerate().take(bound) {
            if r.st == Status::Committed {
                set.insert(i + 1);
            }
        }
        set
    }

    /// `Committed(log)`: every committed record.
    pub fn committed(&self) -> Indexes {
        self.committed_upto(self.len())
    }

    /// Whether an open transaction lies among the first `bound` records.
    pub fn open_upto(&self, bound: usize) -> bool {
        self.0.iter().take(bound).any(|r| r.st == Status::Open)
    }

    /// The last stable offset: the records before the first open one (`FirstOpen(log) - 1`).
    pub fn lso(&self) -> usize {
        self.0
            .iter()
            .position(|r| r.st == Status::Open)
            .unwrap_or(self.len())
    }

    /// The high watermark: the log end.
    pub fn hw(&self) -> usize {
        self.len()
    }

    /// Every record is of its type (`log \in Seq(...)`, `Len(log) <= 5`).
    pub fn type_ok(&self) -> bool {
        self.len() <= MAX_LOG
    }
}

/// A TLA+ sequence as TLC prints it, `<<A:c, B:o>>`.
impl From<&Log> for Shown {
    fn from(log: &Log) -> Shown {
        Shown::tuple(log.0.iter().map(Shown::name))
    }
}

impl fmt::Display for Log {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let items: Vec<String> = self.0.iter().map(|r| r.to_string()).collect();
        write!(f, "<<{}>>", items.join(", "))
    }
}

/// The log and the writer script: the variables the environment owns.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Topic {
    pub log: Log,
    pub wphase: WPhase,
}

impl Topic {
    pub const INITIAL: Topic = Topic {
        log: Log(Vec::new()),
        wphase: WPhase::A1,
    };
}

/// A step of the writers or the broker.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum EnvAction {
    AWriteS1,
    AOpenT1,
    ForeignOpen,
    BInit,
    BWriteS3,
    BOpenT2,
    /// The broker aborts the open transaction at this index (1-based).
    TimeoutAbort(u8),
    /// The broker keeps only the first k records.
    Truncate(u8),
}

impl fmt::Debug for EnvAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EnvAction::AWriteS1 => write!(f, "AWriteS1"),
            EnvAction::AOpenT1 => write!(f, "AOpenT1"),
            EnvAction::ForeignOpen => write!(f, "ForeignOpen"),
            EnvAction::BInit => write!(f, "BInit"),
            EnvAction::BWriteS3 => write!(f, "BWriteS3"),
            EnvAction::BOpenT2 => write!(f, "BOpenT2"),
            EnvAction::TimeoutAbort(i) => write!(f, "TimeoutAbort({i})"),
            EnvAction::Truncate(k) => write!(f, "Truncate({k})"),
        }
    }
}

impl EnvAction {
    /// The party that takes the step, a swimlane column.
    pub fn actor(self) -> &'static str {
        match self {
            EnvAction::AWriteS1 | EnvAction::AOpenT1 => "owner A",
            EnvAction::ForeignOpen => "foreign producer",
            EnvAction::BInit | EnvAction::BWriteS3 | EnvAction::BOpenT2 => "owner B",
            EnvAction::TimeoutAbort(_) | EnvAction::Truncate(_) => "broker",
        }
    }
}

/// The environment's constants: facts of the platform and of the deployment, and one design
/// choice of the writers (the stable id).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Environment {
    pub stable_id: bool,
    pub foreign: bool,
    pub truncation: bool,
}

/// The constants, as the spec names them.
impl Environment {
    pub const STABLE_ID: Flag = Flag::new(
        "StableId",
        true,
        "writers share the partition's transactional.id, so B's mandatory init aborts A's open transaction",
    );
    pub const FOREIGN: Flag = Flag::new(
        "Foreign",
        false,
        "a producer outside the id lineage leaves an open transaction no takeover aborts",
    );
    pub const TRUNCATION: Flag = Flag::new(
        "Truncation",
        false,
        "platform fact: an unclean leader election may lose the log tail (the log end regresses)",
    );

    /// The steps the environment may take from `t`.
    pub fn actions(&self, t: &Topic, actions: &mut Vec<EnvAction>) {
        let writer = match t.wphase {
            WPhase::A1 => Some(EnvAction::AWriteS1),
            WPhase::A2 => Some(EnvAction::AOpenT1),
            WPhase::F => Some(EnvAction::ForeignOpen),
            WPhase::BInit => Some(EnvAction::BInit),
            WPhase::BWrite => Some(EnvAction::BWriteS3),
            WPhase::BOpen => Some(EnvAction::BOpenT2),
            WPhase::Idle => None,
        };
        actions.extend(writer);
        // The broker's timeout abort: any open transaction, one per step.
        for (i, r) in t.log.0.iter().enumerate() {
            if r.st == Status::Open {
                actions.push(EnvAction::TimeoutAbort(i as u8 + 1));
            }
        }
        // An unclean leader election keeps any strictly shorter prefix.
        if self.truncation {
            for k in 0..t.log.len() {
                actions.push(EnvAction::Truncate(k as u8));
            }
        }
    }

    /// The topic after `action`.
    pub fn apply(&self, t: &Topic, action: EnvAction) -> Topic {
        let mut next = t.clone();
        let append = |next: &mut Topic, w, st, phase| {
            next.log.0.push(Rec { w, st });
            next.wphase = phase;
        };
        match action {
            EnvAction::AWriteS1 => append(&mut next, Writer::A, Status::Committed, WPhase::A2),
            EnvAction::AOpenT1 => {
                let phase = if self.foreign {
                    WPhase::F
                } else {
                    WPhase::BInit
                };
                append(&mut next, Writer::A, Status::Open, phase)
            }
            EnvAction::ForeignOpen => append(&mut next, Writer::F, Status::Open, WPhase::BInit),
            EnvAction::BInit => {
                // A stable id's init fences the lineage: A's open transaction is aborted.
                if self.stable_id {
                    for r in &mut next.log.0 {
                        if r.w == Writer::A && r.st == Status::Open {
                            r.st = Status::Aborted;
                        }
                    }
                }
                next.wphase = WPhase::BWrite;
            }
            EnvAction::BWriteS3 => append(&mut next, Writer::B, Status::Committed, WPhase::BOpen),
            EnvAction::BOpenT2 => append(&mut next, Writer::B, Status::Open, WPhase::Idle),
            EnvAction::TimeoutAbort(i) => next.log.0[i as usize - 1].st = Status::Aborted,
            EnvAction::Truncate(k) => next.log.0.truncate(k as usize),
        }
        next
    }
}
