//! The engine: multi-version key-value storage in memory, snapshot reads, and SSI as libdb
//! implements it — exactly the steps of the SSI model (docs/models/ssi.md).
//!
//! Every step is one critical section under the engine's single mutex (libdb's
//! `TXN_SYSTEM_LOCK`: the conflict state, and here the versions too), and emits its step event
//! before the mutex is released. Transactions are driven step by step — `begin`, `read`,
//! `write`, then `check` → `record` → `end` (the #136 window lies between `check` and `end`),
//! or `abort` (the decision) then `cleanup` — so a deterministic scheduler can interleave them
//! exactly like the model, and real threads can race them.
//!
//! | model (`Ssi`) | engine |
//! |---|---|
//! | `Begin(T)` | [`Txn::begin`] (or [`Engine::begin`]) |
//! | `Exec(T, i)`: a read | [`Txn::read`] (the reader path) |
//! | `Exec(T, i)`: a write | [`Txn::write`] (first-updater-wins, the writer path rules 1–3), or [`Txn::skip_write`] when its condition is false |
//! | `Check(T)` | [`Txn::check`]: both flags → `SnapshotConflict`; passing publishes SICHECKED (the fix) |
//! | `Record(T)` | [`Txn::record`]: the commit record is appended to the log |
//! | `End(T)` | [`Txn::end`]: COMMITTED, a commit sequence number; option 2's re-check |
//! | `AppAbort(T)` | [`Txn::abort`] |
//! | `Cleanup(T)` | [`Txn::cleanup`]: the aborted transaction's markers and versions go |
//! | (none) | [`Txn::scan`]: a predicate read of a whole page |
//!
//! Beyond the model: SIREAD markers of committed transactions are reclaimed once no running
//! transaction began before their commit (they can no longer form an edge), and versions that
//! every running snapshot sees past are reclaimed too; neither changes any outcome.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

pub use crate::trace::Failure;
use crate::trace::{EngineEvent, NoTrace, Tracer, Txn as TraceTxn};

pub type TxnId = usize;
pub type Page = usize;

/// Whether a peer is past its commit-time check, as the engine asks it (both conflict sites).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PastCheck {
    /// Pre-fix: COMMITTED only, so a peer inside the commit window looks unchecked.
    Status,
    /// The fix: COMMITTED, or RUNNING with SICHECKED published by its CHECK.
    Published,
    /// The rejected alternative: SICHECKED published, and any peer not RUNNING, ABORTED
    /// included, counts as past its check.
    NotRunning,
}

/// The engine's knobs (the SSI model's, one to one; the conformance adapter,
/// `loadbearing_conform::ssi_engine`, maps a variant to its model).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variant {
    pub past_check: PastCheck,
    pub reader_site_fixed: bool,
    pub optimization: bool,
    pub commit_check: bool,
    pub drop_markers_at_commit: bool,
    pub recheck_after_record: bool,
    pub plain_si: bool,
}

impl Variant {
    /// libdb after #151: SICHECKED published at CHECK, asked at both sites.
    pub const FIX: Variant = Variant {
        past_check: PastCheck::Published,
        reader_site_fixed: true,
        optimization: true,
        commit_check: true,
        drop_markers_at_commit: false,
        recheck_after_record: false,
        plain_si: false,
    };

    /// Every named variant, in the order the tier reports them.
    pub const NAMES: &'static [&'static str] = &[
        "fix",
        "prefix",
        "nocheck",
        "dropmarkers",
        "plainsi",
        "notrunning",
        "noopt",
        "prefix_noopt",
        "readerunfixed",
        "option2",
    ];

    /// The variants the issue names: the fix, the pre-fix status test, no commit check, markers
    /// dropped at commit, plain SI.
    pub const MAIN: &'static [&'static str] =
        &["fix", "prefix", "nocheck", "dropmarkers", "plainsi"];

    /// A variant by its name (the suffix of the model's `ssi_<name>_*` configs).
    pub fn named(name: &str) -> Option<Variant> {
        let fix = Variant::FIX;
        Some(match name {
            "fix" => fix,
            "prefix" => Variant {
                past_check: PastCheck::Status,
                ..fix
            },
            "nocheck" => Variant {
                commit_check: false,
                ..fix
            },
            "dropmarkers" => Variant {
                drop_markers_at_commit: true,
                ..fix
            },
            "plainsi" => Variant {
                plain_si: true,
                ..fix
            },
            "notrunning" => Variant {
                past_check: PastCheck::NotRunning,
                ..fix
            },
            "noopt" => Variant {
                optimization: false,
                ..fix
            },
            "prefix_noopt" => Variant {
                past_check: PastCheck::Status,
                optimization: false,
                ..fix
            },
            "readerunfixed" => Variant {
                reader_site_fixed: false,
                ..fix
            },
            "option2" => Variant {
                past_check: PastCheck::Status,
                recheck_after_record: true,
                ..fix
            },
            _ => return None,
        })
    }

    /// What the variant is, in a few words.
    pub fn describe(name: &str) -> &'static str {
        match name {
            "fix" => "the fix #151: SICHECKED published at CHECK",
            "prefix" => "pre-fix #136: past check = COMMITTED",
            "nocheck" => "no commit-time pivot check",
            "dropmarkers" => "SIREAD markers dropped at commit",
            "plainsi" => "plain snapshot isolation, no SSI",
            "notrunning" => "rejected: any non-RUNNING peer is past its check",
            "noopt" => "the fix without the writer optimization",
            "prefix_noopt" => "pre-fix without the writer optimization",
            "readerunfixed" => "the fix at the writer site only",
            "option2" => "rejected option 2: pre-fix, re-checked after the commit record",
            _ => "",
        }
    }
}

/// The error a failed step returns.
fn error_of(f: Failure) -> Error {
    match f {
        Failure::SnapshotUnsafe => Error::SnapshotUnsafe,
        Failure::SnapshotConflict => Error::SnapshotConflict,
        Failure::WriteConflict => Error::WriteConflict,
        Failure::RecheckConflict => Error::RecheckConflict,
        Failure::AppAbort => Error::NotAllowed("an application abort is not an error".into()),
    }
}

/// The errors a step returns. The first four abort the transaction (the decision is made by the
/// step; the caller runs [`Txn::cleanup`] next); `NotAllowed` is a misuse and changes nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// `DB_SNAPSHOT_UNSAFE`: the writer path rejected a write that would make a pivot.
    SnapshotUnsafe,
    /// `DB_SNAPSHOT_CONFLICT`: the reader path rejected a read, or CHECK found both flags.
    SnapshotConflict,
    /// First updater wins: another transaction's version of the key is not in the snapshot.
    WriteConflict,
    /// Option 2 only: the re-check after the durable commit record fired.
    RecheckConflict,
    /// The step is not possible in the transaction's state.
    NotAllowed(String),
}

impl Error {
    pub fn failure(&self) -> Option<Failure> {
        match self {
            Error::SnapshotUnsafe => Some(Failure::SnapshotUnsafe),
            Error::SnapshotConflict => Some(Failure::SnapshotConflict),
            Error::WriteConflict => Some(Failure::WriteConflict),
            Error::RecheckConflict => Some(Failure::RecheckConflict),
            Error::NotAllowed(_) => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NotAllowed(why) => write!(f, "not allowed: {why}"),
            other => write!(f, "{}", other.failure().expect("an abort").name()),
        }
    }
}

impl std::error::Error for Error {}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Idle,
    Running,
    Committed,
    Aborted,
}

/// Where a running transaction is in its commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    Exec,
    /// CHECK passed; the commit record is not yet durable.
    Checked,
    /// The commit record is durable; END is next.
    Recorded,
}

/// Which pages hold which keys: SIREAD markers are per page. Keys not listed go to a page of
/// their own, computed from the key.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    pages: HashMap<String, Page>,
}

impl Layout {
    pub fn new() -> Layout {
        Layout::default()
    }

    pub fn key(mut self, key: &str, page: Page) -> Layout {
        self.pages.insert(key.to_string(), page);
        self
    }

    pub fn page_of(&self, key: &str) -> Page {
        self.pages.get(key).copied().unwrap_or_else(|| {
            // FNV-1a, offset past any small explicit page number.
            let h = key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
            });
            1_000_000 + (h % 1_000_000) as Page
        })
    }

    /// Every key listed, sorted.
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.pages.keys().cloned().collect();
        keys.sort();
        keys
    }

    /// The keys listed on `page`, sorted.
    pub fn keys_on(&self, page: Page) -> Vec<String> {
        let mut keys: Vec<String> = self
            .pages
            .iter()
            .filter(|(_, p)| **p == page)
            .map(|(k, _)| k.clone())
            .collect();
        keys.sort();
        keys
    }
}

/// One version of a key. `writer` None is data loaded before any transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Version {
    writer: Option<TxnId>,
    value: i64,
}

/// What a transaction read: the key and whose version it saw (None: the loaded data, or the key
/// was absent when `value` is None).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadRecord {
    pub key: String,
    pub writer: Option<TxnId>,
    pub value: Option<i64>,
}

/// A transaction as the engine sees it (for judging histories; not the model's variables).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnView {
    pub id: TxnId,
    pub name: String,
    pub status: Status,
    pub phase: Phase,
    pub snapshot: u64,
    /// 0 until END.
    pub commit_seq: u64,
    pub rconf: bool,
    pub wconf: bool,
    pub sichecked: bool,
    pub cleaned: bool,
    pub failure: Option<Failure>,
    /// Reads that returned, in order (a scan reports every key of its page).
    pub reads: Vec<ReadRecord>,
    /// Pages scanned (predicate reads).
    pub scanned: Vec<Page>,
    /// Keys written, in first-write order.
    pub writes: Vec<String>,
    /// The read or write that failed, if a statement failed: (key, was it a write).
    pub failed_op: Option<(String, bool)>,
    /// The commit record reached the log.
    pub recorded: bool,
    /// After an abort, before cleanup: what the rest of the program would have read at the
    /// snapshot ([`Txn::ghost_read`]), and the keys it would have written. For judging whether
    /// the abort was needed; no effect on anything else.
    pub ghost_reads: Vec<ReadRecord>,
    pub ghost_writes: Vec<String>,
    pub ghost_scans: Vec<Page>,
}

impl TxnView {
    fn new(id: TxnId, name: &str) -> TxnView {
        TxnView {
            id,
            name: name.to_string(),
            status: Status::Idle,
            phase: Phase::Exec,
            snapshot: 0,
            commit_seq: 0,
            rconf: false,
            wconf: false,
            sichecked: false,
            cleaned: false,
            failure: None,
            reads: Vec::new(),
            scanned: Vec::new(),
            writes: Vec::new(),
            failed_op: None,
            recorded: false,
            ghost_reads: Vec::new(),
            ghost_writes: Vec::new(),
            ghost_scans: Vec::new(),
        }
    }

    fn committed_by(&self, snapshot: u64) -> bool {
        self.status == Status::Committed && self.commit_seq <= snapshot
    }
}

#[derive(Debug, Default)]
struct Inner {
    txns: Vec<TxnView>,
    data: BTreeMap<String, Vec<Version>>,
    /// Page → the transactions holding an SIREAD marker on it.
    markers: BTreeMap<Page, BTreeSet<TxnId>>,
    clock: u64,
    /// The commit log: (transaction, its writes) in record order.
    log: Vec<(TxnId, Vec<(String, i64)>)>,
    reclaimed_markers: u64,
    reclaimed_versions: u64,
}

impl Inner {
    fn committed_by(&self, writer: Option<TxnId>, snapshot: u64) -> bool {
        writer.is_none_or(|w| self.txns[w].committed_by(snapshot))
    }

    fn seq_of(&self, writer: Option<TxnId>) -> u64 {
        writer.map_or(0, |w| self.txns[w].commit_seq)
    }

    /// The version of `key` transaction t sees: its own, else the newest committed by its
    /// snapshot.
    fn visible(&self, t: TxnId, key: &str) -> Option<Version> {
        let versions = self.data.get(key)?;
        if let Some(own) = versions.iter().rev().find(|v| v.writer == Some(t)) {
            return Some(*own);
        }
        let snapshot = self.txns[t].snapshot;
        versions
            .iter()
            .filter(|v| self.committed_by(v.writer, snapshot))
            .max_by_key(|v| self.seq_of(v.writer))
            .copied()
    }

    fn fail(&mut self, t: TxnId, why: Failure) {
        self.txns[t].status = Status::Aborted;
        self.txns[t].failure = Some(why);
    }

    fn remove_markers(&mut self, t: TxnId) {
        for holders in self.markers.values_mut() {
            holders.remove(&t);
        }
        self.markers.retain(|_, h| !h.is_empty());
    }

    /// Markers of committed transactions that no running transaction can meet any more (every
    /// running snapshot includes their commit), and versions every running snapshot sees past
    /// (aborted transactions keep their snapshot until cleanup, for the ghost reads).
    fn reclaim(&mut self) {
        let horizon = self
            .txns
            .iter()
            .filter(|t| t.status == Status::Running || (t.status == Status::Aborted && !t.cleaned))
            .map(|t| t.snapshot)
            .min()
            .unwrap_or(self.clock);
        let txns = &self.txns;
        let mut dropped = 0;
        for holders in self.markers.values_mut() {
            let before = holders.len();
            holders.retain(|&r| !txns[r].committed_by(horizon));
            dropped += before - holders.len();
        }
        self.markers.retain(|_, h| !h.is_empty());
        self.reclaimed_markers += dropped as u64;
        let mut versions_dropped = 0;
        for versions in self.data.values_mut() {
            let newest_seen = versions
                .iter()
                .filter(|v| v.writer.is_none_or(|w| txns[w].committed_by(horizon)))
                .map(|v| v.writer.map_or(0, |w| txns[w].commit_seq))
                .max();
            if let Some(newest) = newest_seen {
                let before = versions.len();
                versions.retain(|v| {
                    !v.writer.is_none_or(|w| txns[w].committed_by(horizon))
                        || v.writer.map_or(0, |w| txns[w].commit_seq) == newest
                });
                versions_dropped += before - versions.len();
            }
        }
        self.reclaimed_versions += versions_dropped as u64;
    }
}

/// The engine. Share it between threads by reference (`std::thread::scope`) or in an `Arc`.
pub struct Engine {
    inner: Mutex<Inner>,
    variant: Variant,
    layout: Layout,
    tracer: Arc<dyn Tracer>,
}

/// Counters for tests and reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stats {
    /// SIREAD markers held now, over all pages.
    pub markers: usize,
    pub reclaimed_markers: u64,
    pub versions: usize,
    pub reclaimed_versions: u64,
    pub commit_records: usize,
}

impl Engine {
    pub fn new(variant: Variant, layout: Layout) -> Engine {
        Engine {
            inner: Mutex::new(Inner::default()),
            variant,
            layout,
            tracer: Arc::new(NoTrace),
        }
    }

    pub fn with_tracer(mut self, tracer: Arc<dyn Tracer>) -> Engine {
        self.tracer = tracer;
        self
    }

    pub fn variant(&self) -> Variant {
        self.variant
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic on another thread leaves no half-done step: every step mutates after its checks.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Data present before any transaction (committed at sequence 0).
    pub fn load(&self, key: &str, value: i64) {
        self.lock().data.insert(
            key.to_string(),
            vec![Version {
                writer: None,
                value,
            }],
        );
    }

    /// A transaction that has not begun (the model's idle state). Transactions registered
    /// first are visited first by the writer path, as the model visits T1 before T2.
    pub fn register(&self, name: &str) -> Txn<'_> {
        let mut inner = self.lock();
        let id = inner.txns.len();
        inner.txns.push(TxnView::new(id, name));
        Txn { engine: self, id }
    }

    /// Register and begin.
    pub fn begin(&self, name: &str) -> Txn<'_> {
        let txn = self.register(name);
        txn.begin().expect("a new transaction can begin");
        txn
    }

    pub fn txn(&self, id: TxnId) -> Txn<'_> {
        Txn { engine: self, id }
    }

    /// Every transaction, by id.
    pub fn txns(&self) -> Vec<TxnView> {
        self.lock().txns.clone()
    }

    /// The committed value of `key`: the version with the highest commit sequence.
    pub fn committed_value(&self, key: &str) -> Option<i64> {
        let inner = self.lock();
        let versions = inner.data.get(key)?;
        versions
            .iter()
            .filter(|v| {
                v.writer
                    .is_none_or(|w| inner.txns[w].status == Status::Committed)
            })
            .max_by_key(|v| inner.seq_of(v.writer))
            .map(|v| v.value)
    }

    pub fn stats(&self) -> Stats {
        let inner = self.lock();
        Stats {
            markers: inner.markers.values().map(BTreeSet::len).sum(),
            reclaimed_markers: inner.reclaimed_markers,
            versions: inner.data.values().map(Vec::len).sum(),
            reclaimed_versions: inner.reclaimed_versions,
            commit_records: inner.log.len(),
        }
    }

    fn past(&self, predicate: PastCheck, peer: &TxnView) -> bool {
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
        if self.variant.reader_site_fixed {
            self.variant.past_check
        } else {
            PastCheck::Status
        }
    }

    fn emit(&self, event: EngineEvent) {
        self.tracer.step(&event);
    }

    /// Checks that t is RUNNING in `phase`.
    fn expect(inner: &Inner, t: TxnId, step: &str, phase: Phase) -> Result<(), Error> {
        let txn = inner
            .txns
            .get(t)
            .ok_or_else(|| Error::NotAllowed(format!("{step}: no transaction {t}")))?;
        if txn.status != Status::Running || txn.phase != phase {
            return Err(Error::NotAllowed(format!(
                "{step}({}): the transaction is {:?}/{:?}, not Running/{phase:?}",
                txn.name, txn.status, txn.phase
            )));
        }
        Ok(())
    }

    /// The reader path for a read of `key` by t: every newer version by W (W running, or
    /// committed after t's snapshot). Err when t must fail `SnapshotConflict`.
    fn reader_path(&self, inner: &mut Inner, t: TxnId, key: &str) -> Result<(), ()> {
        let Some(versions) = inner.data.get(key) else {
            return Ok(());
        };
        if versions.iter().any(|v| v.writer == Some(t)) {
            return Ok(());
        }
        let snapshot = inner.txns[t].snapshot;
        let mut newer: Vec<TxnId> = versions
            .iter()
            .filter_map(|v| v.writer)
            .filter(|&w| {
                let writer = &inner.txns[w];
                writer.status == Status::Running
                    || (writer.status == Status::Committed && writer.commit_seq > snapshot)
            })
            .collect();
        newer.dedup();
        for w in newer {
            if inner.txns[t].wconf
                || (self.past(self.reader_predicate(), &inner.txns[w]) && inner.txns[w].rconf)
            {
                return Err(());
            }
            inner.txns[w].wconf = true;
            inner.txns[t].rconf = true;
        }
        Ok(())
    }

    fn read(&self, t: TxnId, key: &str) -> Result<Option<i64>, Error> {
        let mut inner = self.lock();
        Self::expect(&inner, t, "Read", Phase::Exec)?;
        let seen = inner.visible(t, key);
        if !self.variant.plain_si {
            if self.reader_path(&mut inner, t, key).is_err() {
                inner.fail(t, Failure::SnapshotConflict);
                inner.txns[t].failed_op = Some((key.to_string(), false));
                self.emit(EngineEvent::Read {
                    txn: traced(t),
                    key: key.to_string(),
                    value: None,
                    failed: Some(Failure::SnapshotConflict),
                });
                return Err(Error::SnapshotConflict);
            }
            inner
                .markers
                .entry(self.layout.page_of(key))
                .or_default()
                .insert(t);
        }
        let value = seen.map(|v| v.value);
        inner.txns[t].reads.push(ReadRecord {
            key: key.to_string(),
            writer: seen.and_then(|v| v.writer),
            value,
        });
        self.emit(EngineEvent::Read {
            txn: traced(t),
            key: key.to_string(),
            value,
            failed: None,
        });
        Ok(value)
    }

    /// A predicate read: every key of `page` that t can see. Runs the reader path for every key
    /// of the page that has versions, and leaves one marker on the page, so a later insert of a
    /// new key there meets it.
    fn scan(&self, t: TxnId, page: Page) -> Result<BTreeMap<String, i64>, Error> {
        let mut inner = self.lock();
        Self::expect(&inner, t, "Scan", Phase::Exec)?;
        let keys: Vec<String> = inner
            .data
            .keys()
            .filter(|k| self.layout.page_of(k) == page)
            .cloned()
            .collect();
        let mut rows = BTreeMap::new();
        let mut seen = Vec::new();
        for key in &keys {
            let version = inner.visible(t, key);
            if !self.variant.plain_si && self.reader_path(&mut inner, t, key).is_err() {
                inner.fail(t, Failure::SnapshotConflict);
                inner.txns[t].failed_op = Some((key.clone(), false));
                self.emit(EngineEvent::Scan {
                    txn: traced(t),
                    page: page as u64,
                    rows: None,
                    failed: Some(Failure::SnapshotConflict),
                });
                return Err(Error::SnapshotConflict);
            }
            if let Some(v) = version {
                rows.insert(key.clone(), v.value);
            }
            seen.push(ReadRecord {
                key: key.clone(),
                writer: version.and_then(|v| v.writer),
                value: version.map(|v| v.value),
            });
        }
        if !self.variant.plain_si {
            inner.markers.entry(page).or_default().insert(t);
        }
        inner.txns[t].reads.extend(seen);
        inner.txns[t].scanned.push(page);
        self.emit(EngineEvent::Scan {
            txn: traced(t),
            page: page as u64,
            rows: Some(rows.clone()),
            failed: None,
        });
        Ok(rows)
    }

    fn write(&self, t: TxnId, key: &str, value: i64) -> Result<(), Error> {
        let mut inner = self.lock();
        Self::expect(&inner, t, "Write", Phase::Exec)?;
        let write = |failed: Option<Failure>| EngineEvent::Write {
            txn: traced(t),
            key: key.to_string(),
            value: Some(value),
            skipped: false,
            failed,
        };
        match self.writer_path(&mut inner, t, key) {
            Ok(()) => {}
            Err(why) => {
                inner.fail(t, why);
                inner.txns[t].failed_op = Some((key.to_string(), true));
                self.emit(write(Some(why)));
                return Err(error_of(why));
            }
        }
        let versions = inner.data.entry(key.to_string()).or_default();
        match versions.iter_mut().find(|v| v.writer == Some(t)) {
            Some(own) => own.value = value,
            None => versions.push(Version {
                writer: Some(t),
                value,
            }),
        }
        if !inner.txns[t].writes.iter().any(|k| k == key) {
            inner.txns[t].writes.push(key.to_string());
        }
        self.emit(write(None));
        Ok(())
    }

    /// First updater wins, then the writer path's rules (1)–(3) for every marker holder on the
    /// key's page that did not commit before t's snapshot.
    fn writer_path(&self, inner: &mut Inner, t: TxnId, key: &str) -> Result<(), Failure> {
        let snapshot = inner.txns[t].snapshot;
        let contended = inner.data.get(key).is_some_and(|versions| {
            versions.iter().any(|v| {
                v.writer
                    .is_some_and(|w| w != t && !inner.txns[w].committed_by(snapshot))
            })
        });
        if contended {
            return Err(Failure::WriteConflict);
        }
        if self.variant.plain_si {
            return Ok(());
        }
        let holders: Vec<TxnId> = inner
            .markers
            .get(&self.layout.page_of(key))
            .map(|h| h.iter().copied().collect())
            .unwrap_or_default();
        for r in holders {
            if r == t || inner.txns[r].committed_by(snapshot) {
                continue;
            }
            let peer = inner.txns[r].clone();
            if peer.wconf && self.past(self.variant.past_check, &peer) {
                // Rule (1): the peer can no longer resolve the edge; the writer must.
                return Err(Failure::SnapshotUnsafe);
            }
            if self.variant.optimization
                && peer.status == Status::Running
                && !self.past(self.variant.past_check, &peer)
                && peer.wconf
            {
                // Rule (2): the reader will abort itself at its CHECK.
                inner.txns[r].rconf = true;
                continue;
            }
            // Rule (3).
            if inner.txns[t].rconf {
                return Err(Failure::SnapshotUnsafe);
            }
            inner.txns[t].wconf = true;
            inner.txns[r].rconf = true;
        }
        Ok(())
    }

    fn skip_write(&self, t: TxnId, key: &str) -> Result<(), Error> {
        let inner = self.lock();
        Self::expect(&inner, t, "Write", Phase::Exec)?;
        self.emit(EngineEvent::Write {
            txn: traced(t),
            key: key.to_string(),
            value: None,
            skipped: true,
            failed: None,
        });
        Ok(())
    }

    fn check(&self, t: TxnId) -> Result<(), Error> {
        let mut inner = self.lock();
        Self::expect(&inner, t, "Check", Phase::Exec)?;
        let v = self.variant;
        let txn = &inner.txns[t];
        if !v.plain_si && v.commit_check && txn.rconf && txn.wconf {
            inner.fail(t, Failure::SnapshotConflict);
            self.emit(EngineEvent::Check {
                txn: traced(t),
                failed: Some(Failure::SnapshotConflict),
            });
            return Err(Error::SnapshotConflict);
        }
        let txn = &mut inner.txns[t];
        txn.phase = Phase::Checked;
        // The fix: publish the passed check in the same critical section.
        txn.sichecked = !v.plain_si && v.past_check != PastCheck::Status;
        self.emit(EngineEvent::Check {
            txn: traced(t),
            failed: None,
        });
        Ok(())
    }

    fn record(&self, t: TxnId) -> Result<(), Error> {
        let mut inner = self.lock();
        Self::expect(&inner, t, "Record", Phase::Checked)?;
        let writes: Vec<(String, i64)> = inner.txns[t]
            .writes
            .iter()
            .filter_map(|k| {
                let v = inner.data.get(k)?.iter().find(|v| v.writer == Some(t))?;
                Some((k.clone(), v.value))
            })
            .collect();
        inner.log.push((t, writes));
        inner.txns[t].phase = Phase::Recorded;
        inner.txns[t].recorded = true;
        self.emit(EngineEvent::Record { txn: traced(t) });
        Ok(())
    }

    fn end(&self, t: TxnId) -> Result<(), Error> {
        let mut inner = self.lock();
        Self::expect(&inner, t, "End", Phase::Recorded)?;
        let v = self.variant;
        let txn = &inner.txns[t];
        if !v.plain_si && v.recheck_after_record && txn.rconf && txn.wconf {
            // Option 2: an abort after the commit record is durable (CommitRecordFinal).
            inner.fail(t, Failure::RecheckConflict);
            self.emit(EngineEvent::End {
                txn: traced(t),
                failed: Some(Failure::RecheckConflict),
            });
            return Err(Error::RecheckConflict);
        }
        inner.clock += 1;
        let seq = inner.clock;
        let txn = &mut inner.txns[t];
        txn.status = Status::Committed;
        txn.commit_seq = seq;
        if v.drop_markers_at_commit {
            inner.remove_markers(t);
        }
        self.emit(EngineEvent::End {
            txn: traced(t),
            failed: None,
        });
        inner.reclaim();
        Ok(())
    }

    fn abort(&self, t: TxnId) -> Result<(), Error> {
        let mut inner = self.lock();
        Self::expect(&inner, t, "AppAbort", Phase::Exec)?;
        inner.fail(t, Failure::AppAbort);
        self.emit(EngineEvent::AppAbort { txn: traced(t) });
        Ok(())
    }

    fn cleanup(&self, t: TxnId) -> Result<(), Error> {
        let mut inner = self.lock();
        let txn = inner
            .txns
            .get(t)
            .ok_or_else(|| Error::NotAllowed(format!("Cleanup: no transaction {t}")))?;
        if txn.status != Status::Aborted || txn.cleaned {
            return Err(Error::NotAllowed(format!(
                "Cleanup({}): the transaction is {:?}{}",
                txn.name,
                txn.status,
                if txn.cleaned { ", cleaned up" } else { "" }
            )));
        }
        inner.remove_markers(t);
        for versions in inner.data.values_mut() {
            versions.retain(|v| v.writer != Some(t));
        }
        inner.data.retain(|_, v| !v.is_empty());
        inner.txns[t].cleaned = true;
        self.emit(EngineEvent::Cleanup { txn: traced(t) });
        inner.reclaim();
        Ok(())
    }

    fn aborted_not_cleaned(inner: &Inner, t: TxnId, step: &str) -> Result<(), Error> {
        let txn = &inner.txns[t];
        if txn.status != Status::Aborted || txn.cleaned {
            return Err(Error::NotAllowed(format!(
                "{step}({}): only an aborted transaction before its cleanup has ghost steps",
                txn.name
            )));
        }
        Ok(())
    }

    fn ghost_read(&self, t: TxnId, key: &str) -> Result<Option<i64>, Error> {
        let mut inner = self.lock();
        Self::aborted_not_cleaned(&inner, t, "ghost read")?;
        let seen = inner.visible(t, key);
        inner.txns[t].ghost_reads.push(ReadRecord {
            key: key.to_string(),
            writer: seen.and_then(|v| v.writer),
            value: seen.map(|v| v.value),
        });
        Ok(seen.map(|v| v.value))
    }

    fn ghost_scan(&self, t: TxnId, page: Page) -> Result<BTreeMap<String, i64>, Error> {
        let mut inner = self.lock();
        Self::aborted_not_cleaned(&inner, t, "ghost scan")?;
        let keys: Vec<String> = inner
            .data
            .keys()
            .filter(|k| self.layout.page_of(k) == page)
            .cloned()
            .collect();
        let mut rows = BTreeMap::new();
        for key in keys {
            let seen = inner.visible(t, &key);
            if let Some(v) = seen {
                rows.insert(key.clone(), v.value);
            }
            inner.txns[t].ghost_reads.push(ReadRecord {
                key,
                writer: seen.and_then(|v| v.writer),
                value: seen.map(|v| v.value),
            });
        }
        inner.txns[t].ghost_scans.push(page);
        Ok(rows)
    }

    fn ghost_write(&self, t: TxnId, key: &str) -> Result<(), Error> {
        let mut inner = self.lock();
        Self::aborted_not_cleaned(&inner, t, "ghost write")?;
        inner.txns[t].ghost_writes.push(key.to_string());
        Ok(())
    }

    fn begin_txn(&self, t: TxnId) -> Result<(), Error> {
        let mut inner = self.lock();
        let txn = inner
            .txns
            .get(t)
            .ok_or_else(|| Error::NotAllowed(format!("Begin: no transaction {t}")))?;
        if txn.status != Status::Idle {
            return Err(Error::NotAllowed(format!(
                "Begin({}): the transaction is {:?}",
                txn.name, txn.status
            )));
        }
        let clock = inner.clock;
        let txn = &mut inner.txns[t];
        txn.status = Status::Running;
        txn.snapshot = clock;
        self.emit(EngineEvent::Begin { txn: traced(t) });
        Ok(())
    }
}

/// The transaction as the model names it: the engine's ids are registration order, as the
/// model's transactions are.
fn traced(t: TxnId) -> TraceTxn {
    TraceTxn(u8::try_from(t).expect("fewer than 256 transactions"))
}

/// Which commit step just completed, for [`Txn::commit_with`]'s hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommitStep {
    /// CHECK passed: the #136 window is open.
    Checked,
    /// The commit record is durable; END comes after the hook returns.
    Recorded,
}

/// A handle on one transaction of an engine.
#[derive(Clone, Copy)]
pub struct Txn<'e> {
    engine: &'e Engine,
    id: TxnId,
}

impl<'e> Txn<'e> {
    pub fn id(&self) -> TxnId {
        self.id
    }

    pub fn view(&self) -> TxnView {
        self.engine.lock().txns[self.id].clone()
    }

    pub fn status(&self) -> Status {
        self.engine.lock().txns[self.id].status
    }

    /// `Begin`: RUNNING, snapshot := the commit clock.
    pub fn begin(&self) -> Result<(), Error> {
        self.engine.begin_txn(self.id)
    }

    /// `Read`: the snapshot value (None: the key is absent), through the reader path.
    pub fn read(&self, key: &str) -> Result<Option<i64>, Error> {
        self.engine.read(self.id, key)
    }

    /// A predicate read of a whole page.
    pub fn scan(&self, page: Page) -> Result<BTreeMap<String, i64>, Error> {
        self.engine.scan(self.id, page)
    }

    /// `Write`: first-updater-wins, then the writer path.
    pub fn write(&self, key: &str, value: i64) -> Result<(), Error> {
        self.engine.write(self.id, key, value)
    }

    /// A conditional write whose condition was false: nothing happens but the event.
    pub fn skip_write(&self, key: &str) -> Result<(), Error> {
        self.engine.skip_write(self.id, key)
    }

    /// `Check`: the commit-time pivot check.
    pub fn check(&self) -> Result<(), Error> {
        self.engine.check(self.id)
    }

    /// `Record`: the durable commit record.
    pub fn record(&self) -> Result<(), Error> {
        self.engine.record(self.id)
    }

    /// `End`: COMMITTED.
    pub fn end(&self) -> Result<(), Error> {
        self.engine.end(self.id)
    }

    /// CHECK, record, END.
    pub fn commit(&self) -> Result<(), Error> {
        self.commit_with(|_| {})
    }

    /// CHECK, record, END, calling `hook` after CHECK and after the record: whatever it does
    /// happens inside the #136 window.
    pub fn commit_with(&self, mut hook: impl FnMut(CommitStep)) -> Result<(), Error> {
        self.check()?;
        hook(CommitStep::Checked);
        self.record()?;
        hook(CommitStep::Recorded);
        self.end()
    }

    /// `AppAbort`: the application gives up (before CHECK). Cleanup is a separate step.
    pub fn abort(&self) -> Result<(), Error> {
        self.engine.abort(self.id)
    }

    /// `Cleanup`: an aborted transaction's markers and uncommitted versions are removed.
    pub fn cleanup(&self) -> Result<(), Error> {
        self.engine.cleanup(self.id)
    }

    /// After an abort and before cleanup, the rest of the program "as if": a read at the
    /// snapshot, with no marker, no flag, no event — recorded for judging the abort only.
    pub fn ghost_read(&self, key: &str) -> Result<Option<i64>, Error> {
        self.engine.ghost_read(self.id, key)
    }

    pub fn ghost_scan(&self, page: Page) -> Result<BTreeMap<String, i64>, Error> {
        self.engine.ghost_scan(self.id, page)
    }

    /// Records a write the rest of the program would have made.
    pub fn ghost_write(&self, key: &str) -> Result<(), Error> {
        self.engine.ghost_write(self.id, key)
    }

    /// Abort if still running, then clean up (what an application does after an error).
    pub fn rollback(&self) -> Result<(), Error> {
        if self.status() == Status::Running {
            self.abort()?;
        }
        self.cleanup()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Recorder;

    fn two_pages() -> Engine {
        let e = Engine::new(Variant::FIX, Layout::new().key("alice", 0).key("bob", 1));
        e.load("alice", 1);
        e.load("bob", 1);
        e
    }

    #[test]
    fn snapshot_reads_see_neither_later_commits_nor_others_uncommitted_writes() {
        let e = two_pages();
        let t1 = e.begin("T1");
        let t2 = e.begin("T2");
        t2.write("alice", 5).unwrap();
        assert_eq!(t1.read("alice").unwrap(), Some(1));
        assert_eq!(t2.read("alice").unwrap(), Some(5), "read your writes");
        t2.commit().unwrap();
        assert_eq!(t1.read("bob").unwrap(), Some(1));
        let t3 = e.begin("T3");
        assert_eq!(t3.read("alice").unwrap(), Some(5));
        assert_eq!(t3.read("carol").unwrap(), None);
    }

    #[test]
    fn first_updater_wins() {
        let e = two_pages();
        let t1 = e.begin("T1");
        let t2 = e.begin("T2");
        t1.write("alice", 2).unwrap();
        assert_eq!(t2.write("alice", 3), Err(Error::WriteConflict));
        assert_eq!(t2.status(), Status::Aborted);
        t2.cleanup().unwrap();
        t1.commit().unwrap();
        let t3 = e.begin("T3");
        let t4 = e.register("T4");
        t4.begin().unwrap();
        t3.write("alice", 4).unwrap();
        t3.commit().unwrap();
        assert_eq!(
            t4.write("alice", 5),
            Err(Error::WriteConflict),
            "committed after T4 began"
        );
    }

    #[test]
    fn write_skew_control_aborts_t1_at_check_and_the_trigger_fails_t2_unsafe() {
        // Control: both write before either commits.
        let e = two_pages();
        let (t1, t2) = (e.begin("T1"), e.begin("T2"));
        t1.read("bob").unwrap();
        t2.read("alice").unwrap();
        t1.write("alice", 0).unwrap();
        t2.write("bob", 0).unwrap();
        assert_eq!(t1.commit(), Err(Error::SnapshotConflict));
        t2.commit().unwrap();
        // Trigger: T2 writes inside T1's commit window.
        for (variant, expect) in [
            (Variant::FIX, Err(Error::SnapshotUnsafe)),
            (Variant::named("prefix").unwrap(), Ok(())),
        ] {
            let e = Engine::new(variant, Layout::new().key("alice", 0).key("bob", 1));
            e.load("alice", 1);
            e.load("bob", 1);
            let (t1, t2) = (e.register("T1"), e.register("T2"));
            t1.begin().unwrap();
            t1.read("bob").unwrap();
            t1.write("alice", 0).unwrap();
            let mut inside = None;
            t1.commit_with(|step| {
                if step == CommitStep::Recorded {
                    t2.begin().unwrap();
                    t2.read("alice").unwrap();
                    inside = Some(t2.write("bob", 0));
                }
            })
            .unwrap();
            assert_eq!(inside, Some(expect.clone()));
            if expect.is_ok() {
                t2.commit().unwrap();
                assert_eq!(e.committed_value("alice"), Some(0));
                assert_eq!(e.committed_value("bob"), Some(0), "the #136 write skew");
            }
        }
    }

    #[test]
    fn markers_survive_commit_and_are_reclaimed_when_no_concurrent_transaction_remains() {
        let e = two_pages();
        let t1 = e.begin("T1");
        let t2 = e.begin("T2");
        t1.read("bob").unwrap();
        t1.write("alice", 0).unwrap();
        t1.commit().unwrap();
        assert_eq!(
            e.stats().markers,
            1,
            "T2 began before T1's commit: T1's marker stays"
        );
        // Late: T2's write of bob meets the committed T1's marker.
        t2.read("alice").unwrap();
        assert_eq!(t2.write("bob", 0), Err(Error::SnapshotUnsafe));
        t2.cleanup().unwrap();
        let s = e.stats();
        assert_eq!(s.markers, 0, "nobody can meet T1's marker any more: {s:?}");
        assert!(s.reclaimed_markers >= 1);
        assert_eq!(s.versions, 2, "the superseded alice=1 is reclaimed too");
    }

    #[test]
    fn events_are_emitted_for_every_step_and_misuse_emits_nothing() {
        let rec = Recorder::new();
        let e = Engine::new(Variant::FIX, Layout::new()).with_tracer(rec.clone());
        e.load("x", 0);
        let t = e.begin("T1");
        t.read("x").unwrap();
        t.skip_write("x").unwrap();
        assert!(matches!(t.record(), Err(Error::NotAllowed(_))));
        t.abort().unwrap();
        assert!(matches!(t.check(), Err(Error::NotAllowed(_))));
        t.cleanup().unwrap();
        let lines: Vec<String> = rec.events().iter().map(EngineEvent::brief).collect();
        assert_eq!(
            lines,
            [
                "T1 Begin",
                "T1 Read(x) -> 0",
                "T1 Write(x, skipped)",
                "T1 AppAbort",
                "T1 Cleanup",
            ]
        );
    }

    #[test]
    fn a_scan_sees_a_page_and_a_concurrent_insert_into_it_forms_an_edge() {
        let e = Engine::new(
            Variant::FIX,
            Layout::new().key("room/T1", 0).key("room/T2", 0),
        );
        let (t1, t2) = (e.begin("T1"), e.begin("T2"));
        assert!(t1.scan(0).unwrap().is_empty());
        assert!(t2.scan(0).unwrap().is_empty());
        t1.write("room/T1", 1).unwrap(); // T1 WCONF, T2 RCONF
        t2.write("room/T2", 1).unwrap(); // T1 holds WCONF: "it will abort itself"
        assert_eq!(t1.commit(), Err(Error::SnapshotConflict));
        t1.cleanup().unwrap();
        t2.commit().unwrap();
        let plain = Engine::new(
            Variant::named("plainsi").unwrap(),
            Layout::new().key("room/T1", 0).key("room/T2", 0),
        );
        let (t1, t2) = (plain.begin("T1"), plain.begin("T2"));
        t1.scan(0).unwrap();
        t2.scan(0).unwrap();
        t1.write("room/T1", 1).unwrap();
        t2.write("room/T2", 1).unwrap();
        t1.commit().unwrap();
        t2.commit().unwrap();
        let t3 = plain.begin("T3");
        assert_eq!(t3.scan(0).unwrap().len(), 2, "plain SI: both bookings");
    }
}
