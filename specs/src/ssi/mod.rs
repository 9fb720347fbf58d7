#![doc = include_str!("ssi.md")]

#[cfg(feature = "actors")]
pub mod actors;
// Workloads, the serial oracle and the anomaly classifier are shared with the engine
// (`impls/ssi`), which depends on no model: they live in `loadbearing-workload`.
pub use loadbearing_workload::{anomaly, schedule, serial, workload};
pub mod conform;
pub mod explore;
pub mod file;
pub mod step;
pub mod trace;

use std::fmt;

use loadbearing_refinement::Shown;
use loadbearing_refinement::{Model, Property};
use loadbearing_refinement::{Spec, Variables};

use crate::infra::knobs::{Choice, Choices, Flag};
use crate::{Configured, Guard};
use workload::{eval, Ending, ModelBounds, Number, Stmt, Value, Workload};

pub const MAX_TXNS: usize = 3;
pub const MAX_STMTS: usize = 4;
pub const MAX_PAGES: usize = 2;

/// What the model has room for: a workload beyond it runs on engines only
/// ([`Workload::outside_model`] says which bound it passes). Its values are `i8`s.
pub const BOUNDS: ModelBounds = ModelBounds {
    txns: MAX_TXNS,
    stmts: MAX_STMTS,
    values: i8::MIN as Value..=i8::MAX as Value,
};

/// With `VisibleAtRecord`, the commit sequence of a transaction that wrote nothing: after every
/// snapshot, as libdb's MAX_LSN `visible_lsn` of a read-only transaction.
pub const NO_COMMIT_POINT: u8 = u8::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Status {
    Idle,
    Running,
    Committed,
    Aborted,
}

/// Where a running transaction is in its commit.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum Phase {
    Exec,
    /// CHECK passed; the commit record is not yet durable.
    Checked,
    /// The commit record is durable; END (status := COMMITTED) is next.
    Recorded,
}

/// Why a transaction aborted: libdb's error kinds, or the application's choice. In a trace,
/// its name (`"SnapshotUnsafe"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Failure {
    SnapshotConflict,
    SnapshotUnsafe,
    WriteConflict,
    AppAbort,
    /// Option 2: the re-check after the durable commit record.
    RecheckConflict,
}

impl Failure {
    pub fn name(self) -> &'static str {
        match self {
            Failure::SnapshotConflict => "SnapshotConflict",
            Failure::SnapshotUnsafe => "SnapshotUnsafe",
            Failure::WriteConflict => "WriteConflict",
            Failure::AppAbort => "AppAbort",
            Failure::RecheckConflict => "RecheckConflict",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Txn {
    pub status: Status,
    pub pc: u8,
    pub phase: Phase,
    pub snapshot: u8,
    pub commit_seq: u8,
    pub rconf: bool,
    pub wconf: bool,
    pub sichecked: bool,
    pub cleaned: bool,
    pub failure: Option<Failure>,
    /// The value each read statement returned, by statement index.
    pub reads: [Option<i8>; MAX_STMTS],
}

impl Txn {
    const IDLE: Txn = Txn {
        status: Status::Idle,
        pc: 0,
        phase: Phase::Exec,
        snapshot: 0,
        commit_seq: 0,
        rconf: false,
        wconf: false,
        sichecked: false,
        cleaned: false,
        failure: None,
        reads: [None; MAX_STMTS],
    };

    fn finished(&self) -> bool {
        matches!(self.status, Status::Committed | Status::Aborted)
    }

    /// Committed before a snapshot taken at `snapshot`: its versions are visible there and its
    /// markers cannot form an edge with the snapshot's owner.
    fn committed_by(&self, snapshot: u8) -> bool {
        self.status == Status::Committed && self.commit_seq <= snapshot
    }

    /// Its versions are what a snapshot taken at `snapshot` reads: committed by then, or, where
    /// versions are published by the commit record (`at_record`, as libdb's visible_lsn),
    /// recorded by then and still running towards its END.
    fn visible_by(&self, snapshot: u8, at_record: bool) -> bool {
        self.committed_by(snapshot)
            || (at_record
                && self.status == Status::Running
                && self.phase == Phase::Recorded
                && self.commit_seq <= snapshot)
    }
}

/// One version of a key. `writer` 0 is the initial value; `t + 1` is transaction t.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Version {
    pub writer: u8,
    pub value: i8,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct SsiState {
    pub txns: [Txn; MAX_TXNS],
    pub versions: Vec<Vec<Version>>,
    /// Bit t of `markers[p]`: transaction t holds an SIREAD marker on page p.
    pub markers: [u8; MAX_PAGES],
    /// Commit sequence: bumped at each END; a snapshot is the value at begin.
    pub clock: u8,
    /// History: the writer path failed a writer by rule (1) because of a peer that had not
    /// committed nor passed its CHECK.
    pub spurious_unsafe: bool,
    /// History: rule (3) failed a writer UNSAFE over an edge to an ABORTED peer, whose reads
    /// never counted (over-aborting the fix keeps).
    pub over_abort: bool,
}

/// `CommitRecordFinal`: no transaction is aborted after its commit record is durable.
pub fn commit_record_final(s: &SsiState) -> bool {
    s.txns
        .iter()
        .all(|t| !(t.phase == Phase::Recorded && t.status == Status::Aborted))
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum SsiAction {
    Begin(u8),
    /// The transaction's next statement (a read or a write).
    Exec(u8, u8),
    Check(u8),
    Record(u8),
    End(u8),
    AppAbort(u8),
    Cleanup(u8),
}

impl fmt::Debug for SsiAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SsiAction::Begin(t) => write!(f, "Begin(T{})", t + 1),
            SsiAction::Exec(t, i) => write!(f, "Exec(T{}, {i})", t + 1),
            SsiAction::Check(t) => write!(f, "Check(T{})", t + 1),
            SsiAction::Record(t) => write!(f, "Record(T{})", t + 1),
            SsiAction::End(t) => write!(f, "End(T{})", t + 1),
            SsiAction::AppAbort(t) => write!(f, "AppAbort(T{})", t + 1),
            SsiAction::Cleanup(t) => write!(f, "Cleanup(T{})", t + 1),
        }
    }
}

/// "Is the peer past its check?", the predicate the #136 fix changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PastCheck {
    /// Pre-fix: COMMITTED only, so a peer inside the commit window looks unchecked.
    Status,
    /// The fix: COMMITTED, or RUNNING with SICHECKED published by its CHECK.
    Published,
    /// The rejected alternative: SICHECKED published, and any peer not RUNNING, ABORTED
    /// included, counts as past its check.
    NotRunning,
}

/// Why the model never meets a predicate read, an insert or an absent key: every way in
/// (`check --workload`, `isolation`'s model columns) refuses a workload whose
/// [`Workload::outside_model`] says so, before building a model of it.
pub const OUTSIDE_THE_MODEL: &str =
    "a workload outside the model (predicates, inserts, absent keys, or beyond its bounds) is refused before the model is built";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ssi {
    pub workload: Workload,
    pub past_check: PastCheck,
    /// The reader (buffer-pool) site uses the same predicate; false keeps its status-only test.
    pub reader_site_fixed: bool,
    /// The writer path's "the reader will abort itself" optimization (rule 2).
    pub optimization: bool,
    pub commit_check: bool,
    pub drop_markers_at_commit: bool,
    /// Option 2: re-check the flags after the durable commit record, and abort there.
    pub recheck_after_record: bool,
    /// Snapshot isolation with no SSI at all.
    pub plain_si: bool,
    /// A transaction's versions become visible to later snapshots at its commit record, not at
    /// END (libdb: a version is visible once its owner's visible_lsn, the commit record's LSN,
    /// is at or before the reader's snapshot, while the status stays RUNNING until END).
    pub visible_at_record: bool,
}

impl Ssi {
    fn txn_count(&self) -> usize {
        self.workload.programs.len()
    }

    fn past(&self, predicate: PastCheck, peer: &Txn) -> bool {
        match predicate {
            PastCheck::Status => peer.status == Status::Committed,
            PastCheck::Published => {
                peer.status == Status::Committed
                    || (peer.status == Status::Running && peer.sichecked)
            }
            PastCheck::NotRunning => peer.status != Status::Running || peer.sichecked,
        }
    }

    fn reader_predicate(&self) -> PastCheck {
        if self.reader_site_fixed {
            self.past_check
        } else {
            PastCheck::Status
        }
    }

    fn fail(s: &mut SsiState, t: usize, why: Failure) {
        s.txns[t].status = Status::Aborted;
        s.txns[t].failure = Some(why);
    }

    /// The version of `key` that transaction t can see: its own write, else the newest version
    /// committed by its snapshot. Public so a history can name the writer a read saw (values
    /// alone can coincide).
    pub fn visible_version(&self, s: &SsiState, t: usize, key: usize) -> Version {
        let versions = &s.versions[key];
        if let Some(own) = versions.iter().rev().find(|v| v.writer as usize == t + 1) {
            return *own;
        }
        let snapshot = s.txns[t].snapshot;
        *versions
            .iter()
            .filter(|v| {
                v.writer == 0
                    || s.txns[v.writer as usize - 1].visible_by(snapshot, self.visible_at_record)
            })
            .max_by_key(|v| {
                if v.writer == 0 {
                    0
                } else {
                    s.txns[v.writer as usize - 1].commit_seq
                }
            })
            .expect("the initial version is never removed")
    }

    fn read(&self, s: &mut SsiState, t: usize, stmt: usize, key: usize) {
        let value = self.visible_version(s, t, key).value;
        if !self.plain_si {
            let wrote_it = s.versions[key].iter().any(|v| v.writer as usize == t + 1);
            // The reader path: a newer version by W that R's snapshot cannot see.
            let snapshot = s.txns[t].snapshot;
            let mut newer: Vec<usize> = s.versions[key]
                .iter()
                .filter(|v| v.writer != 0 && v.writer as usize != t + 1)
                .map(|v| v.writer as usize - 1)
                .filter(|&w| {
                    let writer = &s.txns[w];
                    writer.status != Status::Aborted
                        && !writer.visible_by(snapshot, self.visible_at_record)
                })
                .collect();
            newer.dedup();
            if wrote_it {
                newer.clear();
            }
            for w in newer {
                if s.txns[t].wconf
                    || (self.past(self.reader_predicate(), &s.txns[w]) && s.txns[w].rconf)
                {
                    Self::fail(s, t, Failure::SnapshotConflict);
                    return;
                }
                s.txns[w].wconf = true;
                s.txns[t].rconf = true;
            }
            s.markers[self.workload.pages[key]] |= 1 << t;
        }
        s.txns[t].reads[stmt] = Some(value);
        s.txns[t].pc += 1;
    }

    fn write(&self, s: &mut SsiState, t: usize, key: usize, value: i8) {
        let snapshot = s.txns[t].snapshot;
        // First updater wins: any other transaction's version not committed by our snapshot.
        let contended = s.versions[key].iter().any(|v| {
            v.writer != 0
                && v.writer as usize != t + 1
                && !s.txns[v.writer as usize - 1].committed_by(snapshot)
        });
        if contended {
            Self::fail(s, t, Failure::WriteConflict);
            return;
        }
        if !self.plain_si {
            let page = self.workload.pages[key];
            for r in 0..self.txn_count() {
                let holds_marker = s.markers[page] & (1 << r) != 0;
                if r == t || !holds_marker || s.txns[r].committed_by(snapshot) {
                    continue;
                }
                let peer = s.txns[r];
                if peer.wconf && self.past(self.past_check, &peer) {
                    // Rule (1): the peer can no longer resolve the edge; the writer must.
                    let legitimately_past = peer.status == Status::Committed
                        || (peer.status == Status::Running && peer.phase >= Phase::Checked);
                    s.spurious_unsafe |= !legitimately_past;
                    Self::fail(s, t, Failure::SnapshotUnsafe);
                    return;
                }
                if self.optimization
                    && peer.status == Status::Running
                    && !self.past(self.past_check, &peer)
                    && peer.wconf
                {
                    // Rule (2): the reader will abort itself at its CHECK.
                    s.txns[r].rconf = true;
                    continue;
                }
                // Rule (3).
                if s.txns[t].rconf {
                    s.over_abort |= peer.status == Status::Aborted;
                    Self::fail(s, t, Failure::SnapshotUnsafe);
                    return;
                }
                s.txns[t].wconf = true;
                s.txns[r].rconf = true;
            }
        }
        match s.versions[key]
            .iter_mut()
            .find(|v| v.writer as usize == t + 1)
        {
            Some(own) => own.value = value,
            None => s.versions[key].push(Version {
                writer: t as u8 + 1,
                value,
            }),
        }
        s.txns[t].pc += 1;
    }

    fn exec(&self, s: &mut SsiState, t: usize, stmt: usize) {
        let program = &self.workload.programs[t];
        match &program[stmt] {
            Stmt::Read(key) => self.read(s, t, stmt, *key),
            Stmt::Select(_) | Stmt::Insert { .. } | Stmt::Update { .. } | Stmt::Delete(_) => {
                unreachable!("{OUTSIDE_THE_MODEL}")
            }
            Stmt::Write {
                key,
                value,
                only_if,
            } => {
                let reads = s.txns[t].reads;
                let last = |k: usize| serial::last_read(program, &reads, stmt, k);
                if only_if.is_none_or(|(k, v)| Value::from(last(k)) == v) {
                    let value = eval(value, &last);
                    self.write(s, t, *key, value);
                } else {
                    s.txns[t].pc += 1;
                }
            }
        }
    }

    /// Its outcome is decided: committed, or, where versions are published at the commit record,
    /// recorded (past the record a libdb commit cannot fail: `__txn_end` panics rather).
    fn decided(&self, t: &Txn) -> bool {
        t.status == Status::Committed
            || (self.visible_at_record && t.status == Status::Running && t.phase == Phase::Recorded)
    }

    /// The committed value of every key: the version with the highest commit sequence.
    pub fn committed_state(&self, s: &SsiState) -> Vec<i8> {
        s.versions
            .iter()
            .map(|versions| {
                versions
                    .iter()
                    .filter(|v| v.writer == 0 || self.decided(&s.txns[v.writer as usize - 1]))
                    .max_by_key(|v| {
                        if v.writer == 0 {
                            0
                        } else {
                            s.txns[v.writer as usize - 1].commit_seq
                        }
                    })
                    .expect("the initial version is never removed")
                    .value
            })
            .collect()
    }

    pub fn committed(&self, s: &SsiState) -> Vec<usize> {
        (0..self.txn_count())
            .filter(|&t| self.decided(&s.txns[t]))
            .collect()
    }

    fn reads_of<'s>(&self, s: &'s SsiState, t: usize) -> &'s [Option<i8>] {
        &s.txns[t].reads[..self.workload.programs[t].len()]
    }

    pub fn serializable(&self, s: &SsiState) -> bool {
        let committed = self.committed(s);
        serial::serializable(
            &self.workload,
            &committed,
            &|t| self.reads_of(s, t),
            &self.committed_state(s),
        )
    }

    /// Every transaction committed, with exactly the reads and final state of serial order
    /// number `index` (in `serial::permutations` order).
    fn reached_serial_outcome(&self, s: &SsiState, index: usize) -> bool {
        // The cheap test first: most states have some transaction not yet committed.
        if !s.txns[..self.txn_count()]
            .iter()
            .all(|t| t.status == Status::Committed)
        {
            return false;
        }
        let all: Vec<usize> = (0..self.txn_count()).collect();
        let orders = serial::permutations(&all);
        let Some(order) = orders.get(index) else {
            return false;
        };
        let run = serial::run(&self.workload, order);
        run.state == self.committed_state(s)
            && all
                .iter()
                .all(|&t| run.reads[t].as_slice() == self.reads_of(s, t))
    }

    fn txn_text(&self, t: &Txn) -> String {
        let mut flags = Vec::new();
        if t.rconf {
            flags.push("RCONF");
        }
        if t.wconf {
            flags.push("WCONF");
        }
        if t.sichecked {
            flags.push("SICHECKED");
        }
        let flags = if flags.is_empty() {
            String::new()
        } else {
            format!(" {}", flags.join("+"))
        };
        match t.status {
            Status::Idle => "idle".into(),
            Status::Running => {
                let phase = match t.phase {
                    Phase::Exec => format!("pc={}", t.pc),
                    Phase::Checked => "checked".to_string(),
                    Phase::Recorded
                        if self.visible_at_record && t.commit_seq == NO_COMMIT_POINT =>
                    {
                        "recorded, read-only: no commit point".to_string()
                    }
                    Phase::Recorded if self.visible_at_record => {
                        format!("commit record durable, visible from seq={}", t.commit_seq)
                    }
                    Phase::Recorded => "commit record durable".to_string(),
                };
                format!("running snap={} {phase}{flags}", t.snapshot)
            }
            Status::Committed if self.visible_at_record && t.commit_seq == NO_COMMIT_POINT => {
                format!("committed, read-only: no commit point{flags}")
            }
            Status::Committed => format!("committed seq={}{flags}", t.commit_seq),
            Status::Aborted => {
                let why = t.failure.map(|f| format!("{f:?}")).unwrap_or_default();
                let cleaned = if t.cleaned { ", cleaned up" } else { "" };
                format!("aborted ({why}{cleaned}){flags}")
            }
        }
    }
}

/// Witness properties, one per serial order of all transactions (at most 3! of them).
const SERIAL_WITNESSES: [fn(&Ssi, &SsiState) -> bool; 6] = [
    |m, s| m.reached_serial_outcome(s, 0),
    |m, s| m.reached_serial_outcome(s, 1),
    |m, s| m.reached_serial_outcome(s, 2),
    |m, s| m.reached_serial_outcome(s, 3),
    |m, s| m.reached_serial_outcome(s, 4),
    |m, s| m.reached_serial_outcome(s, 5),
];
const SERIAL_NAMES_2: [&str; 2] = ["Serial_T1_T2", "Serial_T2_T1"];
const SERIAL_NAMES_3: [&str; 6] = [
    "Serial_T1_T2_T3",
    "Serial_T1_T3_T2",
    "Serial_T2_T1_T3",
    "Serial_T2_T3_T1",
    "Serial_T3_T1_T2",
    "Serial_T3_T2_T1",
];

impl Model for Ssi {
    type State = SsiState;
    type Action = SsiAction;

    fn init_states(&self) -> Vec<SsiState> {
        vec![SsiState {
            txns: [Txn::IDLE; MAX_TXNS],
            versions: self
                .workload
                .initial
                .iter()
                .map(|&value| {
                    vec![Version {
                        writer: 0,
                        value: i8::of(value.expect(OUTSIDE_THE_MODEL)),
                    }]
                })
                .collect(),
            markers: [0; MAX_PAGES],
            clock: 0,
            spurious_unsafe: false,
            over_abort: false,
        }]
    }

    fn actions(&self, s: &SsiState, actions: &mut Vec<SsiAction>) {
        for t in 0..self.txn_count() {
            let txn = &s.txns[t];
            let id = t as u8;
            match (txn.status, txn.phase) {
                (Status::Idle, _) => actions.push(SsiAction::Begin(id)),
                (Status::Running, Phase::Exec) => {
                    if (txn.pc as usize) < self.workload.programs[t].len() {
                        actions.push(SsiAction::Exec(id, txn.pc));
                    } else if self.workload.ending(t) == Ending::Commit {
                        actions.push(SsiAction::Check(id));
                    }
                    // A transaction whose program ends in `abort` never checks: after its last
                    // statement only its own abort is left.
                    actions.push(SsiAction::AppAbort(id));
                }
                (Status::Running, Phase::Checked) => actions.push(SsiAction::Record(id)),
                (Status::Running, Phase::Recorded) => actions.push(SsiAction::End(id)),
                (Status::Aborted, _) if !txn.cleaned => actions.push(SsiAction::Cleanup(id)),
                _ => {}
            }
        }
    }

    fn next_state(&self, s: &SsiState, action: SsiAction) -> Option<SsiState> {
        let mut next = s.clone();
        match action {
            SsiAction::Begin(t) => {
                let txn = &mut next.txns[t as usize];
                txn.status = Status::Running;
                txn.snapshot = s.clock;
            }
            SsiAction::Exec(t, stmt) => self.exec(&mut next, t as usize, stmt as usize),
            SsiAction::Check(t) => {
                let txn = &mut next.txns[t as usize];
                if !self.plain_si && self.commit_check && txn.rconf && txn.wconf {
                    Self::fail(&mut next, t as usize, Failure::SnapshotConflict);
                } else {
                    txn.phase = Phase::Checked;
                    // The fix: publish the passed check in the same critical section.
                    txn.sichecked = !self.plain_si && self.past_check != PastCheck::Status;
                }
            }
            SsiAction::Record(t) => {
                if self.visible_at_record {
                    let wrote = next.versions.iter().flatten().any(|v| v.writer == t + 1);
                    if wrote {
                        next.clock += 1;
                        next.txns[t as usize].commit_seq = next.clock;
                    } else {
                        // libdb logs nothing for a read-only transaction, so it never gets a
                        // commit point (its visible_lsn stays MAX_LSN): every later writer
                        // still counts its markers as concurrent.
                        next.txns[t as usize].commit_seq = NO_COMMIT_POINT;
                    }
                }
                next.txns[t as usize].phase = Phase::Recorded;
            }
            SsiAction::End(t) => {
                let txn = next.txns[t as usize];
                if !self.plain_si && self.recheck_after_record && txn.rconf && txn.wconf {
                    Self::fail(&mut next, t as usize, Failure::RecheckConflict);
                } else {
                    if !self.visible_at_record {
                        next.clock += 1;
                        next.txns[t as usize].commit_seq = next.clock;
                    }
                    let txn = &mut next.txns[t as usize];
                    txn.status = Status::Committed;
                    if self.drop_markers_at_commit {
                        for page in next.markers.iter_mut() {
                            *page &= !(1 << t);
                        }
                    }
                }
            }
            SsiAction::AppAbort(t) => Self::fail(&mut next, t as usize, Failure::AppAbort),
            SsiAction::Cleanup(t) => {
                for page in next.markers.iter_mut() {
                    *page &= !(1 << t);
                }
                for versions in next.versions.iter_mut() {
                    versions.retain(|v| v.writer != t + 1);
                }
                next.txns[t as usize].cleaned = true;
            }
        }
        Some(next)
    }

    fn format_action(&self, action: &SsiAction) -> String {
        match action {
            SsiAction::Exec(t, stmt) => {
                let program = &self.workload.programs[*t as usize];
                match &program[*stmt as usize] {
                    Stmt::Read(k) => format!("Read(T{}, {})", t + 1, self.workload.keys[*k]),
                    Stmt::Write { key, .. } => {
                        format!("Write(T{}, {})", t + 1, self.workload.keys[*key])
                    }
                    Stmt::Select(_)
                    | Stmt::Insert { .. }
                    | Stmt::Update { .. }
                    | Stmt::Delete(_) => {
                        unreachable!("{OUTSIDE_THE_MODEL}")
                    }
                }
            }
            other => format!("{other:?}"),
        }
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let mut properties = vec![
            Property::always("Serializable", |m: &Self, s: &SsiState| m.serializable(s)),
            Property::always("CommitRecordFinal", |_, s: &SsiState| {
                commit_record_final(s)
            }),
            Property::always("NoSpuriousUnsafe", |_, s: &SsiState| !s.spurious_unsafe),
            Property::eventually("Finishes", |m: &Self, s: &SsiState| {
                s.txns[..m.txn_count()].iter().all(Txn::finished)
            }),
            Property::sometimes("OverAbortByAbortedPeer", |_, s: &SsiState| s.over_abort),
        ];
        let names: &[&'static str] = match self.txn_count() {
            2 => &SERIAL_NAMES_2,
            3 => &SERIAL_NAMES_3,
            _ => &[],
        };
        for (i, name) in names.iter().enumerate() {
            properties.push(Property::sometimes(name, SERIAL_WITNESSES[i]));
        }
        properties
    }
}

impl Spec for Ssi {
    /// A serializability violation names its dependency cycle, as `check --workload` does.
    fn explain_violation(
        &self,
        property: &str,
        path: &loadbearing_refinement::path::Path<SsiState, SsiAction>,
    ) -> Option<String> {
        if property != "Serializable" {
            return None;
        }
        let anomalies = explore::anomalies_of_path(self, path);
        (!anomalies.is_empty()).then(|| anomalies.join("; "))
    }

    fn variables(&self, s: &SsiState) -> Variables {
        const TXN_NAMES: [&str; MAX_TXNS] = ["T1", "T2", "T3"];
        let mut vars: Variables = (0..self.txn_count())
            .map(|t| (TXN_NAMES[t], Shown::name(self.txn_text(&s.txns[t]))))
            .collect();
        let committed = self.committed_state(s);
        let committed: Vec<String> = self
            .workload
            .keys
            .iter()
            .zip(&committed)
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        vars.push(("committed", Shown::name(committed.join(" "))));
        let pending: Vec<String> = s
            .versions
            .iter()
            .enumerate()
            .flat_map(|(k, versions)| {
                versions
                    .iter()
                    .filter(|v| {
                        v.writer != 0 && s.txns[v.writer as usize - 1].status != Status::Committed
                    })
                    .map(move |v| (k, v))
            })
            .map(|(k, v)| format!("{}={} by T{}", self.workload.keys[k], v.value, v.writer))
            .collect();
        vars.push(("uncommitted", Shown::name(pending.join(", "))));
        let markers: Vec<String> = (0..self.workload.page_count())
            .map(|p| {
                let holders: Vec<String> = (0..self.txn_count())
                    .filter(|t| s.markers[p] & (1 << t) != 0)
                    .map(|t| format!("T{}", t + 1))
                    .collect();
                format!("p{p}:{{{}}}", holders.join(","))
            })
            .collect();
        vars.push(("markers", Shown::name(markers.join(" "))));
        let reads: Vec<String> = (0..self.txn_count())
            .flat_map(|t| {
                self.workload.programs[t]
                    .iter()
                    .enumerate()
                    .filter_map(move |(i, stmt)| match stmt {
                        Stmt::Read(k) => s.txns[t].reads[i].map(|v| (t, *k, v)),
                        _ => None,
                    })
            })
            .map(|(t, k, v)| format!("T{} {}={v}", t + 1, self.workload.keys[k]))
            .collect();
        vars.push(("reads", Shown::name(reads.join(", "))));
        vars.push(("spuriousUnsafe", s.spurious_unsafe.into()));
        vars.push(("overAbort", s.over_abort.into()));
        vars
    }

    fn fairness_groups(&self) -> Vec<String> {
        (1..=self.txn_count()).map(|t| format!("T{t}")).collect()
    }

    fn fairness_group(&self, action: &SsiAction) -> Option<usize> {
        Some(actor_of(action) as usize)
    }

    fn actor(&self, action: &SsiAction) -> String {
        format!("T{}", actor_of(action) + 1)
    }
}

fn actor_of(action: &SsiAction) -> u8 {
    match *action {
        SsiAction::Begin(t)
        | SsiAction::Exec(t, _)
        | SsiAction::Check(t)
        | SsiAction::Record(t)
        | SsiAction::End(t)
        | SsiAction::AppAbort(t)
        | SsiAction::Cleanup(t) => t,
    }
}

impl Choices for Workload {
    const NAMES: &'static [&'static str] = workload::NAMES;
    fn named(name: &str) -> Option<Workload> {
        workload::named(name)
    }
}

impl Choices for PastCheck {
    const NAMES: &'static [&'static str] = &["status", "published", "not_running"];
    fn named(name: &str) -> Option<PastCheck> {
        match name {
            "status" => Some(PastCheck::Status),
            "published" => Some(PastCheck::Published),
            "not_running" => Some(PastCheck::NotRunning),
            _ => None,
        }
    }
}

crate::params! {
    Ssi {
        workload: pub const WORKLOAD: Choice<Workload> =
            Choice::new("Workload", "write_skew", "the transactions' programs");
        past_check: pub const PAST_CHECK: Choice<PastCheck> = Choice::new(
            "PastCheck",
            "published",
            "is a peer past its check: status (pre-fix #136), published SICHECKED (the fix), not_running (rejected)",
        );
        reader_site_fixed: pub const READER_SITE_FIXED: Flag = Flag::new(
            "ReaderSiteFixed",
            true,
            "the reader (buffer-pool) site uses the same predicate",
        );
        optimization: pub const OPTIMIZATION: Flag = Flag::new(
            "Optimization",
            true,
            "the writer path's \"reader will abort itself\" rule",
        );
        commit_check: pub const COMMIT_CHECK: Flag = Flag::new(
            "CommitCheck",
            true,
            "CHECK aborts a pivot (both flags) at commit",
        );
        drop_markers_at_commit: pub const DROP_MARKERS_AT_COMMIT: Flag = Flag::new(
            "DropMarkersAtCommit",
            false,
            "SIREAD markers vanish at commit",
        );
        recheck_after_record: pub const RECHECK_AFTER_RECORD: Flag = Flag::new(
            "RecheckAfterRecord",
            false,
            "option 2: re-check after the durable commit record",
        );
        plain_si: pub const PLAIN_SI: Flag = Flag::new("PlainSI", false, "snapshot isolation with no SSI at all");
        visible_at_record: pub const VISIBLE_AT_RECORD: Flag = Flag::new(
            "VisibleAtRecord",
            false,
            "a committing transaction's writes are visible to snapshots from its commit record on (libdb's visible_lsn), not from END",
        );
    }
}

impl Configured for Ssi {
    const NAME: &'static str = "SSI";
    const DOC: &'static str = include_str!("ssi.md");
    type Params = Ssi;
    const GUARDS: &'static [Guard] = &[
        Guard::off("pivot check", Self::COMMIT_CHECK),
        Guard::choice("SICHECKED", Self::PAST_CHECK, "status"),
        Guard::off("reader site", Self::READER_SITE_FIXED),
        Guard::on("markers survive commit", Self::DROP_MARKERS_AT_COMMIT),
        Guard::on("SSI", Self::PLAIN_SI),
    ];

    fn build(params: Ssi) -> Self {
        params
    }
}
