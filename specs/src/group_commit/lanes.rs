#![doc = include_str!("lanes.md")]

use std::fmt;

use arrayvec::ArrayVec;
use loadbearing_refinement::Shown;
use loadbearing_refinement::{EventuallyAlways, Spec, Variables};
use loadbearing_refinement::{Model, Property};

use crate::group_commit::model::{CAP_LIMIT, MAX_CAP};
use crate::infra::knobs::{Flag, Nat};
use crate::{Configured, Guard, Under};

/// At most this many writers (a set of them is a bit set of a `u16`, bit `w` for writer `w`).
pub const MAX_WRITERS: u8 = 15;

/// A set of writers `1..=N`: bit `w` is writer `w` (bit 0 is unused).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct WriterSet(pub u16);

impl WriterSet {
    pub const EMPTY: WriterSet = WriterSet(0);

    /// Writers `1..=n`.
    pub fn upto(n: u8) -> WriterSet {
        WriterSet(((1u32 << (n + 1)) - 2) as u16)
    }

    pub fn contains(self, w: u8) -> bool {
        self.0 & (1 << w) != 0
    }

    pub fn with(self, w: u8) -> WriterSet {
        WriterSet(self.0 | (1 << w))
    }

    pub fn union(self, other: WriterSet) -> WriterSet {
        WriterSet(self.0 | other.0)
    }

    pub fn is_subset(self, of: WriterSet) -> bool {
        self.0 & !of.0 == 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl From<WriterSet> for Shown {
    fn from(writers: WriterSet) -> Shown {
        let members = (1..=MAX_WRITERS).filter(|&w| writers.contains(w));
        Shown::items("{", ", ", "}", members)
    }
}

impl fmt::Display for WriterSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let members: Vec<String> = (1..=MAX_WRITERS)
            .filter(|&w| self.contains(w))
            .map(|w| w.to_string())
            .collect();
        write!(f, "{{{}}}", members.join(", "))
    }
}

impl fmt::Debug for WriterSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// What the last `TxnBegin` saw and took, so that `INV_NoSlotSteal` can judge it afterwards.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct LastBegin {
    /// Writes queued on the write lane when it began.
    pub w_avail: u8,
    /// Writes it took into its transaction.
    pub w_take: u8,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct LanesState {
    /// The write lane: offered writes not yet taken into a transaction, in arrival order.
    /// Each writer offers once, so it never holds more than `MAX_WRITERS`: kept in the state
    /// itself, so that cloning a state for each successor allocates nothing.
    pub writes: ArrayVec<u8, { MAX_WRITERS as usize }>,
    /// The writers that have offered their write (each offers once).
    pub offered: WriterSet,
    /// The marker lane: queued offset-only commit tokens.
    pub markers: u8,
    /// Markers ever submitted by the flow.
    pub markers_scheduled: u8,
    /// Markers whose transaction has committed.
    pub markers_delivered: u8,
    /// A transaction is open (the lock, a semaphore of one, is held).
    pub txn_open: bool,
    /// The writes taken into the open transaction.
    pub txn_writes: WriterSet,
    /// The markers taken into the open transaction.
    pub txn_markers: u8,
    /// The committed (durable) writes.
    pub done: WriterSet,
    /// `offsetToCommit`: the offset the flow last scheduled (a shared cell).
    pub oc: u8,
    /// The committed offset.
    pub co: u8,
    pub last_begin: LastBegin,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum LanesAction {
    /// Writer `w` offers its one write to the write lane.
    OfferWrite(u8),
    /// The flow schedules offset `o` and submits a marker.
    ScheduleMarker(u8),
    TxnBegin,
    TxnCommit,
    TxnAbort,
    /// No other action is enabled: the system stutters, so a dead end is not a deadlock and a
    /// stranded marker shows as a liveness failure.
    Stutter,
}

impl fmt::Debug for LanesAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LanesAction::OfferWrite(w) => write!(f, "OfferWrite({w})"),
            LanesAction::ScheduleMarker(o) => write!(f, "ScheduleMarker({o})"),
            LanesAction::TxnBegin => f.write_str("TxnBegin"),
            LanesAction::TxnCommit => f.write_str("TxnCommit"),
            LanesAction::TxnAbort => f.write_str("TxnAbort"),
            LanesAction::Stutter => f.write_str("Stutter"),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupCommitLanes {
    pub n: u8,
    pub cap: u8,
    /// The flow schedules an offset only once the writes it covers are durable.
    pub gated: bool,
    /// Markers share the per-transaction `Cap` with writes instead of riding their own lane.
    pub shared_budget: bool,
    /// A queued marker triggers a transaction by itself.
    pub marker_self_commit: bool,
    /// A platform fact: a transaction may abort (a fenced generation).
    pub enable_abort: bool,
    /// A write counts as durable only once its transaction commits.
    pub atomic_durable: bool,
}

impl GroupCommitLanes {
    /// What the flow sees as durable when it decides whether an offset is committable.
    fn visible(&self, s: &LanesState) -> WriterSet {
        if self.atomic_durable {
            s.done
        } else {
            // Eager: a write in the open transaction already counts; an abort unmakes it.
            s.done.union(s.txn_writes)
        }
    }

    fn durable_prefix(&self, s: &LanesState, o: u8) -> bool {
        let visible = self.visible(s);
        (1..=o).all(|k| visible.contains(k))
    }

    /// Markers the next transaction takes: all of them on their own lane, what fits otherwise.
    fn marker_take(&self, s: &LanesState) -> u8 {
        if self.shared_budget {
            self.cap.min(s.markers)
        } else {
            s.markers
        }
    }

    /// Writes the next transaction takes.
    fn write_take(&self, s: &LanesState) -> u8 {
        let queued = s.writes.len() as u8;
        if self.shared_budget {
            (self.cap - self.marker_take(s)).min(queued)
        } else {
            self.cap.min(queued)
        }
    }

    fn terminated(&self, s: &LanesState) -> bool {
        s.done == WriterSet::upto(self.n)
            && s.oc == self.n
            && s.markers == 0
            && s.markers_delivered == s.markers_scheduled
            && !s.txn_open
            && s.writes.is_empty()
    }

    /// A write that was taken into a transaction that aborted: offered, but neither queued,
    /// in the open transaction nor durable.
    fn some_write_aborted(&self, s: &LanesState) -> bool {
        (1..=self.n).any(|w| {
            s.offered.contains(w)
                && !s.writes.contains(&w)
                && !s.txn_writes.contains(w)
                && !s.done.contains(w)
        })
    }

    fn type_ok(&self, s: &LanesState) -> bool {
        let writers = WriterSet::upto(self.n);
        let upto_n = |v: u8| v <= self.n;
        s.offered.is_subset(writers)
            && s.done.is_subset(writers)
            && s.txn_writes.is_subset(writers)
            && upto_n(s.markers)
            && upto_n(s.markers_scheduled)
            && upto_n(s.markers_delivered)
            && upto_n(s.txn_markers)
            && upto_n(s.oc)
            && upto_n(s.co)
            && s.writes.len() <= self.n as usize
            && s.writes.iter().all(|&w| (1..=self.n).contains(&w))
            && upto_n(s.last_begin.w_avail)
            && upto_n(s.last_begin.w_take)
    }
}

impl Model for GroupCommitLanes {
    type State = LanesState;
    type Action = LanesAction;

    fn init_states(&self) -> Vec<LanesState> {
        vec![LanesState {
            writes: ArrayVec::new(),
            offered: WriterSet::EMPTY,
            markers: 0,
            markers_scheduled: 0,
            markers_delivered: 0,
            txn_open: false,
            txn_writes: WriterSet::EMPTY,
            txn_markers: 0,
            done: WriterSet::EMPTY,
            oc: 0,
            co: 0,
            last_begin: LastBegin::default(),
        }]
    }

    fn actions(&self, s: &LanesState, actions: &mut Vec<LanesAction>) {
        actions.extend(
            (1..=self.n)
                .filter(|&w| !s.offered.contains(w))
                .map(LanesAction::OfferWrite),
        );
        actions.extend(
            (s.oc + 1..=self.n)
                .filter(|&o| !self.gated || self.durable_prefix(s, o))
                .map(LanesAction::ScheduleMarker),
        );
        if !s.txn_open && (!s.writes.is_empty() || (s.markers > 0 && self.marker_self_commit)) {
            actions.push(LanesAction::TxnBegin);
        }
        if s.txn_open {
            actions.push(LanesAction::TxnCommit);
            if self.enable_abort {
                actions.push(LanesAction::TxnAbort);
            }
        }
        if actions.is_empty() {
            actions.push(LanesAction::Stutter);
        }
    }

    fn next_state(&self, s: &LanesState, action: LanesAction) -> Option<LanesState> {
        let mut next = s.clone();
        match action {
            LanesAction::OfferWrite(w) => {
                next.offered = s.offered.with(w);
                next.writes.push(w);
            }
            LanesAction::ScheduleMarker(o) => {
                next.oc = o;
                next.markers = s.markers + 1;
                next.markers_scheduled = s.markers_scheduled + 1;
            }
            LanesAction::TxnBegin => {
                let (markers, writes) = (self.marker_take(s), self.write_take(s));
                next.txn_open = true;
                next.txn_writes = s.writes[..writes as usize]
                    .iter()
                    .fold(WriterSet::EMPTY, |set, &w| set.with(w));
                next.txn_markers = markers;
                next.writes.drain(..writes as usize);
                next.markers = s.markers - markers;
                next.last_begin = LastBegin {
                    w_avail: s.writes.len() as u8,
                    w_take: writes,
                };
            }
            LanesAction::TxnCommit => {
                // The latest offset binds, however many markers collapse into this commit.
                next.done = s.done.union(s.txn_writes);
                next.co = s.oc;
                next.markers_delivered = s.markers_delivered + s.txn_markers;
                next.txn_open = false;
                next.txn_writes = WriterSet::EMPTY;
                next.txn_markers = 0;
            }
            LanesAction::TxnAbort => {
                // The taken writes and markers are consumed; nothing durable moves.
                next.txn_open = false;
                next.txn_writes = WriterSet::EMPTY;
                next.txn_markers = 0;
            }
            LanesAction::Stutter => {}
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("INV_OffsetWithinDurable", |_, s: &LanesState| {
                (1..=s.co).all(|k| s.done.contains(k))
            }),
            Property::always("INV_NoSlotSteal", |m: &Self, s: &LanesState| {
                s.last_begin.w_take == m.cap.min(s.last_begin.w_avail)
            }),
            Property::always("TypeOK", |m: &Self, s: &LanesState| m.type_ok(s)),
            Property::eventually("Termination", |m: &Self, s: &LanesState| m.terminated(s)),
            // A transaction of markers alone: the marker lane triggered it with no write to
            // ride, so `LIVE_MarkersNotStarved` is seen to rest on the self-trigger.
            Property::sometimes("MarkersCommitAlone", |_, s: &LanesState| {
                s.txn_open && s.txn_writes.is_empty() && s.txn_markers > 0
            }),
            // A transaction takes a full batch of `Cap` writes and leaves more queued: the cap
            // is seen to split a flush, so `INV_NoSlotSteal` judges a binding cap.
            Property::sometimes("CapSplitsWrites", |m: &Self, s: &LanesState| {
                s.last_begin.w_take == m.cap && s.last_begin.w_avail > m.cap
            }),
            // A write lost to an abort beside a committed offset: the abort path ran and the
            // marker lane still committed, yet the offset stays within the durable writes.
            Property::sometimes("AbortBesideCommittedOffset", |m: &Self, s: &LanesState| {
                s.co > 0 && m.some_write_aborted(s)
            }),
        ]
    }
}

/// Fairness groups after the `N` writers' `OfferWrite(w)` groups.
const SCHEDULE_MARKER: usize = 0;
const TXN_BEGIN: usize = 1;
const TXN_COMMIT: usize = 2;

impl Spec for GroupCommitLanes {
    fn variables(&self, s: &LanesState) -> Variables {
        vec![
            ("writes", Shown::sequence(s.writes.iter())),
            ("offered", s.offered.into()),
            ("markers", s.markers.into()),
            ("markersScheduled", s.markers_scheduled.into()),
            ("markersDelivered", s.markers_delivered.into()),
            ("txnOpen", s.txn_open.into()),
            ("txnWrites", s.txn_writes.into()),
            ("txnMarkers", s.txn_markers.into()),
            ("done", s.done.into()),
            ("oc", s.oc.into()),
            ("co", s.co.into()),
            (
                "lastBegin",
                Shown::list([
                    Shown::name(format!("wAvail={}", s.last_begin.w_avail)),
                    Shown::name(format!("wTake={}", s.last_begin.w_take)),
                ]),
            ),
        ]
    }

    fn eventually_always(&self) -> Vec<EventuallyAlways<Self>> {
        vec![EventuallyAlways::new(
            "LIVE_MarkersNotStarved",
            |_, s: &LanesState| s.markers == 0,
        )]
    }

    /// `WF_vars(OfferWrite(w))` for each writer, then `ScheduleMarker`, `TxnBegin` and
    /// `TxnCommit`. `TxnAbort` is not fair: a transaction need never abort.
    fn fairness_groups(&self) -> Vec<String> {
        let mut groups: Vec<String> = (1..=self.n).map(|w| format!("OfferWrite({w})")).collect();
        groups.extend(["ScheduleMarker", "TxnBegin", "TxnCommit"].map(String::from));
        groups
    }

    fn fairness_group(&self, action: &LanesAction) -> Option<usize> {
        let after_writers = |g: usize| Some(self.n as usize + g);
        match action {
            LanesAction::OfferWrite(w) => Some(*w as usize - 1),
            LanesAction::ScheduleMarker(_) => after_writers(SCHEDULE_MARKER),
            LanesAction::TxnBegin => after_writers(TXN_BEGIN),
            LanesAction::TxnCommit => after_writers(TXN_COMMIT),
            LanesAction::TxnAbort | LanesAction::Stutter => None,
        }
    }

    fn actor(&self, action: &LanesAction) -> String {
        match action {
            LanesAction::OfferWrite(w) => format!("writer {w}"),
            LanesAction::ScheduleMarker(_) => "flow".into(),
            LanesAction::TxnBegin | LanesAction::TxnCommit | LanesAction::TxnAbort => {
                "transaction".into()
            }
            LanesAction::Stutter => "system".into(),
        }
    }
}

crate::params! {
    GroupCommitLanes {
        n: pub const N: Nat = Nat::new(
            "N",
            1,
            MAX_WRITERS as u64,
            3,
            "writers 1..N; writer w writes offset w",
        )
        .max_because("a set of writers is 16-bit, bit w for writer w");
        cap: pub const CAP: Nat = Nat::new(
            "Cap",
            1,
            MAX_CAP,
            2,
            "at most Cap writes per transaction (maxWritesPerTransaction)",
        )
        .max_because(CAP_LIMIT);
        gated: pub const GATED: Flag = Flag::new(
            "Gated",
            true,
            "the flow schedules offset o only once the writes 1..o are seen durable",
        );
        shared_budget: pub const SHARED_BUDGET: Flag = Flag::new(
            "SharedBudget",
            false,
            "markers share the per-transaction Cap with writes instead of their own lane",
        );
        marker_self_commit: pub const MARKER_SELF_COMMIT: Flag = Flag::new(
            "MarkerSelfCommit",
            true,
            "a queued marker triggers a transaction by itself",
        );
        enable_abort: pub const ENABLE_ABORT: Flag = Flag::new(
            "EnableAbort",
            false,
            "platform fact: an open transaction may abort (a fenced generation)",
        );
        atomic_durable: pub const ATOMIC_DURABLE: Flag = Flag::new(
            "AtomicDurable",
            true,
            "a write counts as durable only once its transaction commits (not when sent)",
        );
    }
}

impl Configured for GroupCommitLanes {
    const NAME: &'static str = "GroupCommitLanes";
    const DOC: &'static str = include_str!("lanes.md");
    const UNDER: &'static [Under] = &[Under {
        backend: "Kafka835",
        step: crate::group_commit::model::COMMIT_STEP,
    }];
    type Params = GroupCommitLanes;
    const GUARDS: &'static [Guard] = &[
        Guard::off("gate on the flow", Self::GATED),
        Guard::on("own marker lane", Self::SHARED_BUDGET),
        Guard::off("marker self-trigger", Self::MARKER_SELF_COMMIT),
        Guard::off("atomic durability", Self::ATOMIC_DURABLE),
    ];

    fn build(params: GroupCommitLanes) -> Self {
        params
    }
}

use crate::group_commit::lanes_trace::LanesEvent;
use loadbearing_trace::Conform;

/// Why a group-commit event contradicts a GroupCommitLanes step.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LanesContradiction {
    #[error(
        "the transaction drained {seen} write(s), the model's takes {model} of {queued} queued"
    )]
    Drained { seen: u8, model: u8, queued: u8 },
    #[error("the committed offset is {seen}, the model's is {model}")]
    Committed { seen: u8, model: u8 },
    #[error("the run ended, but under weak fairness the model must still take {pending}")]
    NotQuiescent { pending: String },
}

impl Conform for GroupCommitLanes {
    type Event = LanesEvent;
    type Contradiction = LanesContradiction;

    fn reports(&self, action: &LanesAction, event: &LanesEvent) -> bool {
        match (action, event) {
            (LanesAction::OfferWrite(w), LanesEvent::OfferWrite { writer }) => w == writer,
            (LanesAction::ScheduleMarker(o), LanesEvent::ScheduleMarker { offset }) => o == offset,
            (LanesAction::TxnBegin, LanesEvent::TxnBegin { .. })
            | (LanesAction::TxnCommit, LanesEvent::TxnCommit)
            | (LanesAction::TxnAbort, LanesEvent::TxnAbort) => true,
            _ => false,
        }
    }

    fn observe(
        &self,
        before: &LanesState,
        after: &LanesState,
        event: &LanesEvent,
    ) -> Result<(), LanesContradiction> {
        match event {
            LanesEvent::TxnBegin { writes } if *writes != after.last_begin.w_take => {
                Err(LanesContradiction::Drained {
                    seen: *writes,
                    model: after.last_begin.w_take,
                    queued: before.writes.len() as u8,
                })
            }
            LanesEvent::Quiesced { co } if *co != after.co => Err(LanesContradiction::Committed {
                seen: *co,
                model: after.co,
            }),
            LanesEvent::Quiesced { .. } => {
                match crate::infra::fairness::fair_actions_left(self, after) {
                    None => Ok(()),
                    Some(pending) => Err(LanesContradiction::NotQuiescent { pending }),
                }
            }
            _ => Ok(()),
        }
    }

    fn is_stutter(&self, event: &LanesEvent) -> bool {
        matches!(event, LanesEvent::Quiesced { .. })
    }

    /// Writers and offsets past `N` (or below 1: the model's are 1 to N); a transaction of more
    /// writes than `Cap`.
    fn beyond(&self, events: &[LanesEvent]) -> Option<loadbearing_trace::Beyond> {
        events.iter().enumerate().find_map(|(i, event)| {
            let n = |what: &str, o: u8| {
                let what = format!("{what} {o}");
                if o == 0 {
                    return Some(loadbearing_trace::Beyond {
                        event: i,
                        what,
                        bound: loadbearing_trace::Bound::Fixed {
                            what: "writers and offsets numbered from 1",
                            most: self.n as u64,
                        },
                    });
                }
                GroupCommitLanes::N.passed_by(self.n as u64, o as u64, i, || what)
            };
            match *event {
                LanesEvent::OfferWrite { writer } => n("writer", writer),
                LanesEvent::ScheduleMarker { offset } => n("offset", offset),
                LanesEvent::Quiesced { co } => {
                    GroupCommitLanes::N.passed_by(self.n as u64, co as u64, i, || {
                        format!("committed offset {co}")
                    })
                }
                LanesEvent::TxnBegin { writes } => {
                    GroupCommitLanes::CAP.passed_by(self.cap as u64, writes as u64, i, || {
                        format!("a transaction of {writes} writes")
                    })
                }
                LanesEvent::TxnCommit | LanesEvent::TxnAbort => None,
            }
        })
    }

    fn disabled_reason(&self, s: &LanesState, event: &LanesEvent) -> Option<String> {
        Some(match event {
            LanesEvent::OfferWrite { writer } => format!("writer {writer} has offered already"),
            LanesEvent::ScheduleMarker { offset } if *offset <= s.oc => {
                format!("offset {offset} is not above the scheduled {}", s.oc)
            }
            LanesEvent::ScheduleMarker { offset } => format!(
                "the writes up to {offset} are not all durable (durable: {}){}",
                s.done,
                if self.gated { "" } else { " (ungated)" }
            ),
            LanesEvent::TxnBegin { .. } if s.txn_open => "a transaction is open".into(),
            LanesEvent::TxnBegin { .. } => format!(
                "nothing to take: no write queued{}",
                if s.markers > 0 {
                    " and a marker does not trigger a transaction by itself"
                } else {
                    ", no marker"
                }
            ),
            LanesEvent::TxnCommit | LanesEvent::TxnAbort => "no transaction is open".into(),
            LanesEvent::Quiesced { .. } => return None,
        })
    }
}
