#![doc = include_str!("model.md")]

use std::fmt;

use arrayvec::ArrayVec;
use loadbearing_refinement::Shown;
use loadbearing_refinement::{Model, Property};
use loadbearing_refinement::{Spec, Variables};

use crate::infra::knobs::{Flag, Nat};
use crate::{Configured, Guard, Under};

/// At most this many writers: the state keeps their program counters in a fixed array.
pub const MAX_WRITERS: usize = 8;
/// Writer ids in order, each writer at most once, so never more than `MAX_WRITERS`: kept in
/// the state itself, so that cloning a state for each successor allocates nothing.
pub type WriterQueue = ArrayVec<u8, MAX_WRITERS>;
pub(crate) const WRITERS_LIMIT: &str = "the state keeps 8 writers' program counters in an array";
/// The greatest `Cap` of the group-commit models, and why no more is needed: it lies past every
/// `N`, and a cap of `N` or more already takes every queued write.
pub(crate) const MAX_CAP: u64 = 64;
pub(crate) const CAP_LIMIT: &str =
    "a range chosen for the suite, past any N: a cap of N or more takes every queued write";

/// The Kafka backends' step a group commit spells out (and GroupCommitLanes with it).
pub const COMMIT_STEP: &str = "OwnerFold: the transaction that commits a snapshot with its offset";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Pc {
    Offer,
    Acq,
    Commit,
    Await,
    Sched,
    Done,
}

impl fmt::Display for Pc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Pc::Offer => "offer",
            Pc::Acq => "acq",
            Pc::Commit => "commit",
            Pc::Await => "await_",
            Pc::Sched => "sched",
            Pc::Done => "Done",
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct GcState {
    /// Writer ids in arrival order.
    pub queue: WriterQueue,
    pub lock: bool,
    /// Bit w: writer w's write is durable.
    pub done: u16,
    pub oc: u8,
    pub co: u8,
    /// `pc[0]` is the flow process, `pc[w]` writer w.
    pub pc: [Pc; MAX_WRITERS + 1],
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum GcAction {
    Offer(u8),
    Acq(u8),
    Commit(u8),
    Await(u8),
    /// The flow schedules offset `o` for the next transaction's offset commit.
    Sched(u8),
    SchedDone,
    /// Every process is Done: the system stutters.
    Terminating,
}

impl fmt::Debug for GcAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GcAction::Offer(w) => write!(f, "offer({w})"),
            GcAction::Acq(w) => write!(f, "acq({w})"),
            GcAction::Commit(w) => write!(f, "commit({w})"),
            GcAction::Await(w) => write!(f, "await_({w})"),
            GcAction::Sched(o) => write!(f, "sched({o})"),
            GcAction::SchedDone => write!(f, "sched(Done)"),
            GcAction::Terminating => write!(f, "Terminating"),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupCommit {
    pub n: u8,
    pub cap: u8,
    pub gated: bool,
}

impl GroupCommit {
    fn durable_upto(s: &GcState, o: u8) -> bool {
        (1..=o).all(|k| s.done & (1 << k) != 0)
    }

    fn all_done(&self, s: &GcState) -> bool {
        s.pc[..=self.n as usize].iter().all(|&pc| pc == Pc::Done)
    }

    fn writers(&self) -> impl Iterator<Item = usize> {
        1..=self.n as usize
    }

    /// How many writers have taken their commit step (each takes it once).
    fn commits_taken(&self, s: &GcState) -> u32 {
        self.writers()
            .filter(|&w| matches!(s.pc[w], Pc::Await | Pc::Done))
            .count() as u32
    }
}

impl Model for GroupCommit {
    type State = GcState;
    type Action = GcAction;

    fn init_states(&self) -> Vec<GcState> {
        let mut pc = [Pc::Done; MAX_WRITERS + 1];
        pc[0] = Pc::Sched;
        for slot in pc.iter_mut().skip(1).take(self.n as usize) {
            *slot = Pc::Offer;
        }
        vec![GcState {
            queue: WriterQueue::new(),
            lock: false,
            done: 0,
            oc: 0,
            co: 0,
            pc,
        }]
    }

    fn actions(&self, s: &GcState, actions: &mut Vec<GcAction>) {
        if s.pc[0] == Pc::Sched {
            if s.oc < self.n {
                for o in s.oc + 1..=self.n {
                    if !self.gated || Self::durable_upto(s, o) {
                        actions.push(GcAction::Sched(o));
                    }
                }
            } else {
                actions.push(GcAction::SchedDone);
            }
        }
        for w in 1..=self.n {
            match s.pc[w as usize] {
                Pc::Offer => actions.push(GcAction::Offer(w)),
                Pc::Acq if !s.lock => actions.push(GcAction::Acq(w)),
                Pc::Commit => actions.push(GcAction::Commit(w)),
                Pc::Await if s.done & (1 << w) != 0 => actions.push(GcAction::Await(w)),
                _ => {}
            }
        }
        if self.all_done(s) {
            actions.push(GcAction::Terminating);
        }
    }

    fn next_state(&self, s: &GcState, action: GcAction) -> Option<GcState> {
        let mut next = s.clone();
        match action {
            GcAction::Offer(w) => {
                // Each writer offers once: the queue never holds more than N.
                next.queue.push(w);
                next.pc[w as usize] = Pc::Acq;
            }
            GcAction::Acq(w) => {
                next.lock = true;
                next.pc[w as usize] = Pc::Commit;
            }
            GcAction::Commit(w) => {
                let take = next.queue.len().min(self.cap as usize);
                for id in next.queue.drain(..take) {
                    next.done |= 1 << id;
                }
                next.co = s.oc;
                next.lock = false;
                next.pc[w as usize] = Pc::Await;
            }
            GcAction::Await(w) => next.pc[w as usize] = Pc::Done,
            GcAction::Sched(o) => next.oc = o,
            GcAction::SchedDone => next.pc[0] = Pc::Done,
            GcAction::Terminating => {}
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("INV_OffsetWithinDurable", |_, s: &GcState| {
                GroupCommit::durable_upto(s, s.co)
            }),
            Property::always("TypeOK", |m: &Self, s: &GcState| {
                s.oc <= m.n
                    && s.co <= m.n
                    && s.queue.iter().all(|&w| (1..=m.n).contains(&w))
                    && s.queue.len() <= m.n as usize
            }),
            Property::eventually("Termination", |m: &Self, s: &GcState| m.all_done(s)),
            Property::sometimes("GateLetsThrough", |_, s: &GcState| {
                s.done.count_ones() >= 2 && s.co > 0
            }),
            // Each commit makes its batch durable, and no write twice: more durable writes
            // than commits taken means some transaction carried two or more.
            Property::sometimes("BatchOfTwo", |m: &Self, s: &GcState| {
                s.done.count_ones() > m.commits_taken(s)
            }),
            Property::sometimes("CommittedByAnother", |m: &Self, s: &GcState| {
                m.writers()
                    .any(|w| s.done & (1 << w) != 0 && matches!(s.pc[w], Pc::Acq | Pc::Commit))
            }),
        ]
    }
}

impl Spec for GroupCommit {
    fn variables(&self, s: &GcState) -> Variables {
        let done = (1..=self.n).filter(|w| s.done & (1 << w) != 0);
        let pc = (0..=self.n as usize).map(|p| Shown::name(format!("{p}:{}", s.pc[p])));
        vec![
            ("queue", Shown::sequence(s.queue.iter())),
            ("lock", s.lock.into()),
            ("done", Shown::set(done)),
            ("oc", s.oc.into()),
            ("co", s.co.into()),
            ("pc", Shown::list(pc)),
        ]
    }

    fn fairness_groups(&self) -> Vec<String> {
        let mut groups = vec!["flow".to_string()];
        groups.extend((1..=self.n).map(|w| format!("writer {w}")));
        groups
    }

    fn fairness_group(&self, action: &GcAction) -> Option<usize> {
        match action {
            GcAction::Sched(_) | GcAction::SchedDone => Some(0),
            GcAction::Offer(w) | GcAction::Acq(w) | GcAction::Commit(w) | GcAction::Await(w) => {
                Some(*w as usize)
            }
            GcAction::Terminating => None,
        }
    }

    fn actor(&self, action: &GcAction) -> String {
        match action {
            GcAction::Sched(_) | GcAction::SchedDone => "flow".into(),
            GcAction::Offer(w) | GcAction::Acq(w) | GcAction::Commit(w) | GcAction::Await(w) => {
                format!("writer {w}")
            }
            GcAction::Terminating => "system".into(),
        }
    }
}

crate::params! {
    GroupCommit {
        n: pub const N: Nat = Nat::new(
            "N",
            1,
            MAX_WRITERS as u64,
            3,
            "writers 1..N; writer w writes offset w",
        )
        .max_because(WRITERS_LIMIT);
        cap: pub const CAP: Nat = Nat::new(
            "Cap",
            1,
            MAX_CAP,
            1,
            "at most Cap queued writes per transaction",
        )
        .max_because(CAP_LIMIT);
        gated: pub const GATED: Flag = Flag::new(
            "Gated",
            true,
            "the flow schedules offset o only once 1..o are durable",
        );
    }
}

impl Configured for GroupCommit {
    const NAME: &'static str = "GroupCommit";
    const DOC: &'static str = include_str!("model.md");
    const UNDER: &'static [Under] = &[
        Under {
            backend: "Kafka",
            step: COMMIT_STEP,
        },
        Under {
            backend: "Kafka835",
            step: COMMIT_STEP,
        },
    ];
    type Params = GroupCommit;
    const GUARDS: &'static [Guard] = &[Guard::off("gate on the flow", Self::GATED)];

    fn build(params: GroupCommit) -> Self {
        params
    }
}

/// Traces of the group commit implementation (`impls/kafka`), read as GroupCommit steps in
/// the `group_commit` vocabulary (`trace::GcEvent`): `offer`, `acq`, `commit` (`writes`: how
/// many queued writes it drained, `co`: the offset its transaction carries), `await_`
/// (`outcome`) by writer `wN`, where N is the input offset the writer writes (the model's
/// writer N writes offset N); `sched` (`o`) by the flow; `transaction` (`outcome`) changes no
/// model variable, and the model has no failing transaction, so only a committed one fits.
/// The flow's last step and the final stutter are never logged.
impl loadbearing_trace::Conform for GroupCommit {
    type Event = GcEvent;
    type Contradiction = GcContradiction;

    fn reports(&self, action: &GcAction, event: &GcEvent) -> bool {
        let by = |writer: &Writer, w: &u8| *writer == Writer::Of(*w);
        match (action, event) {
            (GcAction::Offer(w), GcEvent::Offer { writer })
            | (GcAction::Acq(w), GcEvent::Acq { writer })
            | (GcAction::Commit(w), GcEvent::Commit { writer, .. })
            | (GcAction::Await(w), GcEvent::Await { writer, .. }) => by(writer, w),
            // Any scheduled offset reports a Sched, so that `observe` can say why one does not fit.
            (GcAction::Sched(_), GcEvent::Sched { .. }) => true,
            (
                GcAction::Offer(_)
                | GcAction::Acq(_)
                | GcAction::Commit(_)
                | GcAction::Await(_)
                | GcAction::Sched(_)
                | GcAction::SchedDone
                | GcAction::Terminating,
                GcEvent::Offer { .. }
                | GcEvent::Acq { .. }
                | GcEvent::Commit { .. }
                | GcEvent::Transaction { .. }
                | GcEvent::Await { .. }
                | GcEvent::Sched { .. },
            ) => false,
        }
    }

    fn observe(
        &self,
        before: &GcState,
        after: &GcState,
        event: &GcEvent,
    ) -> Result<(), GcContradiction> {
        match event {
            GcEvent::Sched { o } => {
                if *o == after.oc as u64 {
                    return Ok(());
                }
                Err(self
                    .ahead_of_durable(before.done, *o)
                    .unwrap_or(GcContradiction::Scheduled {
                        scheduled: *o,
                        model: after.oc,
                    }))
            }
            GcEvent::Commit { writes, co, .. } => {
                let drained = (after.done & !before.done).count_ones() as u64;
                if let Some(writes) = writes {
                    if *writes != drained {
                        return Err(GcContradiction::Drained {
                            reported: *writes,
                            model: drained,
                            queue: before.queue.to_vec(),
                            cap: self.cap,
                        });
                    }
                }
                match co {
                    Some(co) if *co != after.co as u64 => Err(GcContradiction::CarriedOffset {
                        carried: *co,
                        model: after.co,
                    }),
                    _ => Ok(()),
                }
            }
            GcEvent::Await { outcome, .. } | GcEvent::Transaction { outcome, .. } => {
                match outcome {
                    Some(TxnOutcome::Committed) | None => Ok(()),
                    Some(failed) => Err(GcContradiction::TransactionFailed(failed.clone())),
                }
            }
            GcEvent::Offer { .. } | GcEvent::Acq { .. } => Ok(()),
        }
    }

    fn is_stutter(&self, event: &GcEvent) -> bool {
        matches!(event, GcEvent::Transaction { .. })
    }

    fn is_silent(&self, action: &GcAction) -> bool {
        matches!(action, GcAction::SchedDone | GcAction::Terminating)
    }

    /// Writers, scheduled and committed offsets past `N`; a commit of more writes than `Cap`.
    fn beyond(&self, events: &[GcEvent]) -> Option<loadbearing_trace::Beyond> {
        events.iter().enumerate().find_map(|(i, event)| {
            let n = |what: &str, o: u64| {
                GroupCommit::N.passed_by(self.n as u64, o, i, || format!("{what} {o}"))
            };
            let writer = |w: &crate::group_commit::trace::Writer| match w {
                crate::group_commit::trace::Writer::Of(o) => {
                    GroupCommit::N.passed_by(self.n as u64, *o as u64, i, || format!("writer w{o}"))
                }
                crate::group_commit::trace::Writer::Unmodelled(_) => None,
            };
            match event {
                GcEvent::Offer { writer: w }
                | GcEvent::Acq { writer: w }
                | GcEvent::Transaction { writer: w, .. }
                | GcEvent::Await { writer: w, .. } => writer(w),
                GcEvent::Commit {
                    writer: w,
                    writes,
                    co,
                } => writer(w)
                    .or_else(|| co.and_then(|co| n("committed offset", co)))
                    .or_else(|| {
                        writes.and_then(|k| {
                            GroupCommit::CAP.passed_by(self.cap as u64, k, i, || {
                                format!("a commit of {k} writes")
                            })
                        })
                    }),
                GcEvent::Sched { o } => n("scheduled offset", *o),
            }
        })
    }

    fn disabled_reason(&self, state: &GcState, event: &GcEvent) -> Option<String> {
        let GcEvent::Sched { o } = event else {
            return None;
        };
        if state.pc[0] != Pc::Sched {
            return None;
        }
        self.ahead_of_durable(state.done, *o)
            .map(|why| why.to_string())
    }
}

impl GroupCommit {
    /// Why the gated flow may not schedule offset `o` with `done` durable, if it may not.
    fn ahead_of_durable(&self, done: u16, o: u64) -> Option<GcContradiction> {
        if !self.gated {
            return None;
        }
        let offsets = |durable: bool| -> Vec<u8> {
            (1..=o.min(self.n as u64) as u8)
                .filter(|w| (done & (1 << w) != 0) == durable)
                .collect()
        };
        let missing = offsets(false);
        (!missing.is_empty()).then(|| GcContradiction::AheadOfDurable {
            scheduled: o,
            missing,
            durable: offsets(true),
        })
    }
}

/// Why a group commit event contradicts a GroupCommit step.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GcContradiction {
    /// The gate: the committed offset may not lead the durable writes.
    #[error(
        "the flow scheduled offset {scheduled} while the writes of offsets {} were not durable \
         (durable: {{{}}}): the committed offset would lead the durable writes",
        comma_separated(.missing),
        comma_separated(.durable)
    )]
    AheadOfDurable {
        scheduled: u64,
        missing: Vec<u8>,
        durable: Vec<u8>,
    },
    #[error("the flow scheduled {scheduled}; this step schedules {model}")]
    Scheduled { scheduled: u64, model: u8 },
    #[error("the commit drained {reported} writes; the model drains {model} (queue {queue:?}, Cap {cap})")]
    Drained {
        reported: u64,
        model: u64,
        queue: Vec<u8>,
        cap: u8,
    },
    #[error("the transaction carries offset {carried}; the model commits oc = {model}")]
    CarriedOffset { carried: u64, model: u8 },
    #[error("the transaction failed ({0}); in the model every transaction commits")]
    TransactionFailed(TxnOutcome),
}

/// Offsets as a report lists them: `1,2,3`.
fn comma_separated(offsets: &[u8]) -> String {
    offsets
        .iter()
        .map(u8::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

use crate::group_commit::trace::{GcEvent, TxnOutcome, Writer};

#[cfg(test)]
mod tests {
    use super::*;
    use loadbearing_refinement::{check, CheckSpec, Options, Outcome};

    fn witness(cap: u8, property: &str) -> Outcome {
        let model = GroupCommit {
            n: 3,
            cap,
            gated: true,
        };
        let spec = CheckSpec {
            properties: vec![property.to_string()],
            fair: true,
            allow_end_states: false,
            symmetry: Vec::new(),
        };
        check(&model, &spec, &Options::default()).unwrap().outcome
    }

    #[test]
    fn a_batch_of_two_needs_a_cap_above_one() {
        assert_eq!(
            witness(1, "BatchOfTwo"),
            Outcome::Missing("BatchOfTwo".into())
        );
        assert_eq!(witness(2, "BatchOfTwo"), Outcome::Holds);
        // Draining another writer's write from the queue needs no batching.
        assert_eq!(witness(1, "CommittedByAnother"), Outcome::Holds);
    }

    #[test]
    fn scheduling_ahead_of_durable_writes_lists_both_sets() {
        let why = GcContradiction::AheadOfDurable {
            scheduled: 3,
            missing: vec![1, 3],
            durable: vec![2],
        };
        assert_eq!(
            why.to_string(),
            "the flow scheduled offset 3 while the writes of offsets 1,3 were not durable \
             (durable: {2}): the committed offset would lead the durable writes"
        );
    }
}
