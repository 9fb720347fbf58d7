//! `loadbearing conform`: the implementations checked against their models, both ways.
//!
//! Implementation → model: real threads drive a store, every step event is recorded, and the
//! trace is validated against the model (refinement/src/conform.rs). Model → implementation:
//! model paths (every shortest counterexample that maps onto the store, random walks, and all
//! short paths) drive the store step by step, comparing its row with the model's after every
//! step.

//! The server backends are Cargo features (`postgres`, `cassandra`, `kafka`; `full` for all):
//! the default build runs every target on its embedded backend (SQLite, the in-memory
//! producer, the SSI engine itself) without compiling a server client. A [`Backend`] exists
//! only for what was compiled in; [`BackendKind`] names every backend, so the target table and
//! `conform --list` are the same in every build, and [`Servers::backend`] says which feature a
//! missing one needs.

#[cfg(feature = "postgres")]
pub mod compound;
pub mod flow;
pub mod group_commit;
pub mod kafka;
pub mod ssi;

use std::sync::{Arc, Mutex};
use std::time::Instant;

#[cfg(feature = "cassandra")]
use loadbearing_impls::cassandra::CassandraCluster;
#[cfg(feature = "postgres")]
use loadbearing_impls::postgres::PostgresStore;
use loadbearing_impls::sqlite::SqliteStore;
use loadbearing_impls::trace::{SharedTracer, StatementOutcome, Step, Tracer};
use loadbearing_impls::{CompoundGuards, Mode, Read, SnapshotStore, StoreOptions, WriteError};
use loadbearing_refinement::conform::{validate, Conform, Divergence, Limits};
use loadbearing_refinement::refinement::StepMatch;
use loadbearing_refinement::{Options, Spec};
use loadbearing_specs::cas_first_write::trace::{FirstWriteEvent, Outcome, Statement, Writer};
use loadbearing_specs::cas_first_write::{CasFirstWrite, Row};
use loadbearing_specs::cas_first_write_atomic::{AtomicAction, AtomicState, CasFirstWriteAtomic};
use loadbearing_specs::vocab::{Cell, Offsets};
use serde::Serialize;
use stateright::Model;

/// Offsets the writers draw from: small, so that races on one key collide often.
const MAX_OFFSET: u8 = 5;

/// Where an implementation runs.
#[derive(Clone, Debug)]
pub enum Backend {
    /// Embedded SQLite (the store family's default).
    Sqlite,
    /// A PostgreSQL connection string.
    #[cfg(feature = "postgres")]
    Postgres(String),
    /// A Cassandra 5 node (`host:port`).
    #[cfg(feature = "cassandra")]
    Cassandra(String),
    /// The in-memory transactional producer (the Kafka family's default): one shared log that
    /// checks generations like the group coordinator.
    Memory,
    /// A Kafka 4.4 broker's bootstrap address.
    #[cfg(feature = "kafka")]
    Kafka(String),
}

impl Backend {
    pub fn name(&self) -> &'static str {
        self.kind().name()
    }

    pub fn kind(&self) -> BackendKind {
        match self {
            Backend::Sqlite => BackendKind::Sqlite,
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => BackendKind::Postgres,
            #[cfg(feature = "cassandra")]
            Backend::Cassandra(_) => BackendKind::Cassandra,
            Backend::Memory => BackendKind::Memory,
            #[cfg(feature = "kafka")]
            Backend::Kafka(_) => BackendKind::Kafka,
        }
    }
}

/// A backend without its connection details: what a target can run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum BackendKind {
    Sqlite,
    Postgres,
    Cassandra,
    Memory,
    Kafka,
}

impl BackendKind {
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Sqlite => "sqlite",
            BackendKind::Postgres => "postgres",
            BackendKind::Cassandra => "cassandra",
            BackendKind::Memory => "memory",
            BackendKind::Kafka => "kafka",
        }
    }

    /// The Cargo feature that compiles this backend's client and server launcher in (None:
    /// always built).
    pub fn feature(self) -> Option<&'static str> {
        match self {
            BackendKind::Sqlite | BackendKind::Memory => None,
            BackendKind::Postgres => Some("postgres"),
            BackendKind::Cassandra => Some("cassandra"),
            BackendKind::Kafka => Some("kafka"),
        }
    }

    /// Is this backend's client compiled into this build?
    pub fn compiled_in(self) -> bool {
        match self {
            BackendKind::Sqlite | BackendKind::Memory => true,
            BackendKind::Postgres => cfg!(feature = "postgres"),
            BackendKind::Cassandra => cfg!(feature = "cassandra"),
            BackendKind::Kafka => cfg!(feature = "kafka"),
        }
    }

    /// Ok when compiled in; otherwise the feature to build with.
    pub fn require(self) -> Result<(), NotCompiledIn> {
        match self.feature() {
            Some(feature) if !self.compiled_in() => Err(NotCompiledIn {
                backend: self,
                feature,
            }),
            _ => Ok(()),
        }
    }
}

/// A backend asked for but not compiled into this build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotCompiledIn {
    pub backend: BackendKind,
    pub feature: &'static str,
}

impl std::fmt::Display for NotCompiledIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the {} backend is not compiled into this build: rebuild with `--features {}` (or `--features full`)",
            self.backend.name(),
            self.feature
        )
    }
}

impl std::error::Error for NotCompiledIn {}

/// Opens store sessions on one fresh database, one per concurrent writer.
pub struct StoreFactory {
    backend: Backend,
    mode: Mode,
    /// PostgreSQL: the three-statement first-write compound instead of one upsert (Cassandra's
    /// store is always the compound).
    compound: bool,
    sqlite_path: Option<std::path::PathBuf>,
    /// PostgreSQL's table (SQLite has a file of its own, Cassandra a cluster handle).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    table: String,
    #[cfg(feature = "cassandra")]
    cassandra: Option<CassandraCluster>,
    /// PostgreSQL's compound with some guards off (planted mutants).
    guards: CompoundGuards,
}

impl StoreFactory {
    pub fn new(backend: Backend, mode: Mode, label: &str) -> Result<StoreFactory, String> {
        let unique = format!(
            "{label}_{}_{}",
            std::process::id(),
            COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let sqlite_path = match backend {
            Backend::Sqlite => {
                let dir = std::env::temp_dir().join("loadbearing-conform");
                std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
                let path = dir.join(format!("{unique}.db"));
                let _ = std::fs::remove_file(&path);
                Some(path)
            }
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => None,
            #[cfg(feature = "cassandra")]
            Backend::Cassandra(_) => None,
            #[cfg(feature = "kafka")]
            Backend::Kafka(_) => return Err(not_a_store(&backend)),
            Backend::Memory => return Err(not_a_store(&backend)),
        };
        let table = unique.replace('-', "_");
        #[cfg(feature = "cassandra")]
        let cassandra = match &backend {
            Backend::Cassandra(node) => Some(CassandraCluster::connect(
                node,
                "loadbearing_conform",
                &table,
            )?),
            _ => None,
        };
        Ok(StoreFactory {
            backend,
            mode,
            compound: false,
            sqlite_path,
            table,
            #[cfg(feature = "cassandra")]
            cassandra,
            guards: CompoundGuards::default(),
        })
    }

    pub fn compound(mut self) -> StoreFactory {
        self.compound = true;
        self
    }

    /// PostgreSQL's compound with these guards (turning one off is a planted mutant).
    pub fn with_guards(mut self, guards: CompoundGuards) -> StoreFactory {
        self.guards = guards;
        self
    }

    /// A PostgreSQL session that reaps rows (the model's `ReapRow`).
    #[cfg(feature = "postgres")]
    pub fn reaper(&self, tracer: SharedTracer) -> Result<PostgresStore, String> {
        match &self.backend {
            Backend::Postgres(conn) => PostgresStore::connect_traced(
                conn,
                &self.table,
                StoreOptions {
                    mode: self.mode,
                    ttl: None,
                },
                tracer,
            ),
            other => Err(format!(
                "reaping on demand needs PostgreSQL, not {}",
                other.name()
            )),
        }
    }

    pub fn open(&self, tracer: SharedTracer) -> Result<Box<dyn SnapshotStore>, String> {
        let options = StoreOptions {
            mode: self.mode,
            ttl: None,
        };
        match &self.backend {
            Backend::Sqlite => {
                let path = self.sqlite_path.as_ref().expect("sqlite has a path");
                SqliteStore::open_traced(path, options, tracer)
                    .map(|s| Box::new(s) as Box<dyn SnapshotStore>)
                    .map_err(|e| e.to_string())
            }
            #[cfg(feature = "postgres")]
            Backend::Postgres(conn) => {
                PostgresStore::connect_traced(conn, &self.table, options, tracer).map(|s| {
                    Box::new(s.compound(self.compound).compound_guards(self.guards))
                        as Box<dyn SnapshotStore>
                })
            }
            #[cfg(feature = "cassandra")]
            Backend::Cassandra(_) => {
                let cluster = self.cassandra.as_ref().expect("connected in new");
                Ok(Box::new(cluster.store_traced(options, tracer)))
            }
            #[cfg(feature = "kafka")]
            Backend::Kafka(_) => unreachable!("StoreFactory::new refuses the non-store backends"),
            Backend::Memory => unreachable!("StoreFactory::new refuses the non-store backends"),
        }
    }
}

impl Drop for StoreFactory {
    fn drop(&mut self) {
        if let Some(path) = &self.sqlite_path {
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
            }
        }
    }
}

fn not_a_store(backend: &Backend) -> String {
    format!(
        "the snapshot store runs on sqlite, postgres or cassandra, not {}",
        backend.name()
    )
}

static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Records each step with the writer that took it, in the order the steps happened.
struct ActorTracer {
    writer: Writer,
    sink: Arc<Mutex<Vec<(Writer, Step)>>>,
}

impl Tracer for ActorTracer {
    fn step(&self, step: &Step) {
        self.sink
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((self.writer, step.clone()));
    }
}

/// A deterministic scheduler over real threads: exactly one writer runs a statement at a time,
/// and which one goes next is drawn from a seeded generator, or taken from a script (a model
/// path's actors, in order). Each statement's step event is the writer's turn ending, so the
/// trace is the execution order and the run replays from its seed or script.
pub struct Scheduler {
    state: Mutex<Turns>,
    changed: std::sync::Condvar,
}

struct Turns {
    turn: Option<usize>,
    active: Vec<bool>,
    rng: Rng,
    /// Scripted turns still to come; `None` for seeded turns.
    script: Option<std::collections::VecDeque<usize>>,
    /// A scripted run whose script is done and which was released: everyone runs freely.
    free: bool,
    sink: Vec<(Writer, Step)>,
}

impl Scheduler {
    pub fn new(writers: usize, seed: u64) -> Arc<Scheduler> {
        Scheduler::start(writers, Rng::new(seed), None)
    }

    /// Turns in exactly this order (actor indices); when the script is done, everyone waits
    /// until [`Scheduler::release`].
    pub fn scripted(actors: usize, order: Vec<usize>) -> Arc<Scheduler> {
        Scheduler::start(actors, Rng::new(1), Some(order.into()))
    }

    fn start(
        actors: usize,
        rng: Rng,
        script: Option<std::collections::VecDeque<usize>>,
    ) -> Arc<Scheduler> {
        let mut turns = Turns {
            turn: None,
            active: vec![true; actors],
            rng,
            script,
            free: false,
            sink: Vec::new(),
        };
        turns.pass();
        Arc::new(Scheduler {
            state: Mutex::new(turns),
            changed: std::sync::Condvar::new(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Turns> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait_for(&self, w: usize, mut turns: std::sync::MutexGuard<'_, Turns>) {
        while turns.turn != Some(w) && !turns.free {
            turns = self.changed.wait(turns).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Blocks until it is writer `w`'s turn.
    pub fn wait_turn(&self, w: usize) {
        let turns = self.lock();
        self.wait_for(w, turns);
    }

    /// Writer `w` ran a statement: record it, hand the turn on, wait for the next one.
    fn stepped(&self, w: usize, step: &Step) {
        let mut turns = self.lock();
        if !turns.free {
            turns.sink.push((Writer(w as u8), step.clone()));
            turns.pass();
        }
        self.changed.notify_all();
        self.wait_for(w, turns);
    }

    /// Writer `w` is done.
    pub fn finished(&self, w: usize) {
        let mut turns = self.lock();
        turns.active[w] = false;
        // A scripted turn is never skipped: `wait_script_done` reports a writer that finished
        // before taking it.
        if turns.script.is_none() {
            turns.pass();
        }
        self.changed.notify_all();
    }

    /// Blocks until a scripted run's script is done (every scripted step was recorded), or
    /// the scripted actor whose turn it is has finished without taking it (`Err`).
    pub fn wait_script_done(&self) -> Result<(), usize> {
        let mut turns = self.lock();
        loop {
            match turns.turn {
                None => return Ok(()),
                Some(w) if !turns.active[w] => return Err(turns.sink.len()),
                Some(_) => {}
            }
            turns = self.changed.wait(turns).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Lets every writer run freely from now on (their steps are no longer recorded).
    pub fn release(&self) {
        self.lock().free = true;
        self.changed.notify_all();
    }

    /// The recorded steps, each with the actor index that took it.
    pub fn steps(&self) -> Vec<(Writer, Step)> {
        self.lock().sink.clone()
    }
}

impl Turns {
    fn pass(&mut self) {
        if let Some(script) = &mut self.script {
            self.turn = script.pop_front();
            return;
        }
        let active: Vec<usize> = (0..self.active.len()).filter(|&w| self.active[w]).collect();
        self.turn = if active.is_empty() {
            None
        } else {
            Some(active[self.rng.below(active.len() as u64) as usize])
        };
    }
}

struct ScheduledTracer {
    writer: usize,
    scheduler: Arc<Scheduler>,
}

impl Tracer for ScheduledTracer {
    fn step(&self, step: &Step) {
        self.scheduler.stepped(self.writer, step);
    }
}

/// One round of the compound: each writer persists its offset to a fresh key, one statement
/// at a time in the seeded order, so the three statements of different writers interleave.
pub fn scheduled_round(
    factory: &StoreFactory,
    key: &str,
    offsets: &[u64],
    seed: u64,
) -> Result<Vec<FirstWriteEvent>, String> {
    let scheduler = Scheduler::new(offsets.len(), seed);
    let stores = (0..offsets.len())
        .map(|w| {
            factory.open(Arc::new(ScheduledTracer {
                writer: w,
                scheduler: scheduler.clone(),
            }))
        })
        .collect::<Result<Vec<_>, _>>()?;
    std::thread::scope(|scope| {
        for (w, store) in stores.iter().enumerate() {
            let scheduler = scheduler.clone();
            let offset = offsets[w];
            scope.spawn(move || {
                scheduler.wait_turn(w);
                let _ = store.persist(key, offset, format!("w{}@{offset}", w + 1).as_bytes());
                scheduler.finished(w);
            });
        }
    });
    Ok(scheduler
        .steps()
        .iter()
        .filter_map(|(writer, step)| event_of(*writer, step))
        .collect())
}

/// The first-write models' reading of a store's step, or `None` for the steps of the
/// partition flow (other vocabularies). Every step kind is named, so a new one must be placed.
pub fn event_of(writer: Writer, step: &Step) -> Option<FirstWriteEvent> {
    let statement = |offset: u64, outcome: &StatementOutcome| {
        let (outcome, stored) = match outcome {
            StatementOutcome::Applied => (Some(Outcome::Applied), None),
            StatementOutcome::NotApplied { stored } => (Some(Outcome::NotApplied), Some(*stored)),
            StatementOutcome::RowAbsent => (Some(Outcome::RowAbsent), None),
            // Sent but unknown, or known not applied: the model may have taken either branch.
            StatementOutcome::Indeterminate(_) | StatementOutcome::Failed(_) => (None, None),
        };
        Statement {
            writer,
            offset,
            outcome,
            stored,
        }
    };
    match step {
        Step::Persist {
            offset, outcome, ..
        } => Some(FirstWriteEvent::Persist(statement(*offset, outcome))),
        Step::Update1 {
            offset, outcome, ..
        } => Some(FirstWriteEvent::Update1(statement(*offset, outcome))),
        Step::Insert {
            offset, outcome, ..
        } => Some(FirstWriteEvent::Insert(statement(*offset, outcome))),
        Step::RetryUpdate {
            offset, outcome, ..
        } => Some(FirstWriteEvent::RetryUpdate(statement(*offset, outcome))),
        Step::ReapRow { .. } => Some(FirstWriteEvent::ReapRow {}),
        Step::Fold { .. }
        | Step::Write { .. }
        | Step::OwnerRecover { .. }
        | Step::OwnerFold { .. }
        | Step::ZombieWrite { .. }
        | Step::Phase { .. } => None,
    }
}

/// A small seeded generator (xorshift*), so a run is reproducible from its printed seed.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// One round: `offsets.len()` threads race to persist their offset to a fresh key. A mutex held
/// around each call makes the recorded order the order the database applied the writes (SQLite
/// serializes writers anyway); which thread goes next is up to the OS.
pub fn race(
    factory: &StoreFactory,
    key: &str,
    offsets: &[u64],
    jitter: &[u64],
) -> Result<Vec<FirstWriteEvent>, String> {
    let sink = Arc::new(Mutex::new(Vec::new()));
    let turnstile = Arc::new(Mutex::new(()));
    let stores = offsets
        .iter()
        .enumerate()
        .map(|(w, _)| {
            factory.open(Arc::new(ActorTracer {
                writer: Writer(w as u8),
                sink: sink.clone(),
            }))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let barrier = std::sync::Barrier::new(offsets.len());
    std::thread::scope(|scope| {
        for (w, store) in stores.iter().enumerate() {
            let (barrier, turnstile) = (&barrier, turnstile.clone());
            let (offset, pause) = (offsets[w], jitter[w]);
            scope.spawn(move || {
                barrier.wait();
                std::thread::sleep(std::time::Duration::from_micros(pause));
                let _turn = turnstile.lock().unwrap_or_else(|e| e.into_inner());
                let _ = store.persist(key, offset, format!("w{}@{offset}", w + 1).as_bytes());
            });
        }
    });
    let steps = sink.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Ok(steps
        .iter()
        .filter_map(|(writer, step)| event_of(*writer, step))
        .collect())
}

/// A conformance target: an implementation built one way, the model it must (or must not)
/// follow, in one or both directions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Target {
    /// The guarded store: every trace must be a behaviour of the guarded model.
    Store,
    /// The planted mutant, last-write-wins: conformance must catch it.
    StoreLww,
    /// Model paths replayed on the guarded and the last-write-wins store.
    Replay,
    /// PostgreSQL and Cassandra: the non-atomic three-statement first write, its statements of
    /// 8 writers interleaved by the seeded scheduler, against CasFirstWrite.
    Compound,
    /// An owner and a zombie partition flow overlapping on the guarded store, against the
    /// Cassandra model.
    Flow,
    /// The same flows on the last-write-wins store (planted mutant).
    FlowLww,
    /// The same flows with the tombstone turned into a hard delete (planted mutant).
    FlowHardDelete,
    /// The replay fence: an owner resuming below its recovered high water, against ReplayFence.
    Fence,
    /// The replay fence switched off (planted mutant).
    FenceOff,
    /// Concurrent group commits against GroupCommit.
    GroupCommit,
    /// Group commit scheduling offsets ahead of durable writes (planted mutant).
    GroupCommitUngated,
    /// Owner and revoked flows on the generation-fenced Kafka design, against the Kafka model.
    Kafka,
    /// The capture decoupled from the teardown (planted mutant).
    KafkaDecoupled,
    /// Transactions carrying no offset until the first schedule (planted mutant).
    KafkaUnseeded,
    /// The generation not checked (planted mutant).
    KafkaUnfenced,
    /// The rejected producer-epoch design, against the Epoch model (its counterexample must
    /// land on the implementation).
    Epoch,
    /// The SSI engine with the #136 fix, against the fix's model; every must-fail `ssi_*`
    /// counterexample replayed on its engine variant.
    Ssi,
    /// The pre-fix SSI engine against the fix's model (the #136 bug, kept as a variant).
    SsiPrefix,
}

/// Which part of the code base a target exercises (and which module runs it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Store,
    Flow,
    GroupCommit,
    Kafka,
    Ssi,
}

const STORES: &[BackendKind] = &[
    BackendKind::Sqlite,
    BackendKind::Postgres,
    BackendKind::Cassandra,
];
const COMPOUND_STORES: &[BackendKind] = &[BackendKind::Postgres, BackendKind::Cassandra];
const PRODUCERS: &[BackendKind] = &[BackendKind::Memory, BackendKind::Kafka];
const IN_PROCESS: &[BackendKind] = &[BackendKind::Memory];

impl Target {
    pub const ALL: [Target; 18] = [
        Target::Store,
        Target::StoreLww,
        Target::Replay,
        Target::Compound,
        Target::Flow,
        Target::FlowLww,
        Target::FlowHardDelete,
        Target::Fence,
        Target::FenceOff,
        Target::GroupCommit,
        Target::GroupCommitUngated,
        Target::Kafka,
        Target::KafkaDecoupled,
        Target::KafkaUnseeded,
        Target::KafkaUnfenced,
        Target::Epoch,
        Target::Ssi,
        Target::SsiPrefix,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Target::Store => "store",
            Target::StoreLww => "store-lww",
            Target::Replay => "replay",
            Target::Compound => "compound",
            Target::Flow => "flow",
            Target::FlowLww => "flow-lww",
            Target::FlowHardDelete => "flow-hard-delete",
            Target::Fence => "fence",
            Target::FenceOff => "fence-off",
            Target::GroupCommit => "group-commit",
            Target::GroupCommitUngated => "group-commit-ungated",
            Target::Kafka => "kafka",
            Target::KafkaDecoupled => "kafka-decoupled",
            Target::KafkaUnseeded => "kafka-unseeded",
            Target::KafkaUnfenced => "kafka-unfenced",
            Target::Epoch => "epoch",
            Target::Ssi => "ssi",
            Target::SsiPrefix => "ssi-prefix",
        }
    }

    pub fn parse(name: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == name)
    }

    pub fn family(self) -> Family {
        match self {
            Target::Store | Target::StoreLww | Target::Replay | Target::Compound => Family::Store,
            Target::Flow
            | Target::FlowLww
            | Target::FlowHardDelete
            | Target::Fence
            | Target::FenceOff => Family::Flow,
            Target::GroupCommit | Target::GroupCommitUngated => Family::GroupCommit,
            Target::Kafka
            | Target::KafkaDecoupled
            | Target::KafkaUnseeded
            | Target::KafkaUnfenced
            | Target::Epoch => Family::Kafka,
            Target::Ssi | Target::SsiPrefix => Family::Ssi,
        }
    }

    /// The backends this target runs on; the first is its default.
    pub fn backends(self) -> &'static [BackendKind] {
        match self {
            Target::Compound => COMPOUND_STORES,
            _ => match self.family() {
                Family::Store | Family::Flow => STORES,
                Family::GroupCommit | Family::Kafka => PRODUCERS,
                Family::Ssi => IN_PROCESS,
            },
        }
    }

    /// Whether this target must show a divergence (a planted mutant) rather than conform.
    pub fn is_mutant(self) -> bool {
        matches!(
            self,
            Target::StoreLww
                | Target::FlowLww
                | Target::FlowHardDelete
                | Target::FenceOff
                | Target::GroupCommitUngated
                | Target::KafkaDecoupled
                | Target::KafkaUnseeded
                | Target::KafkaUnfenced
                | Target::Epoch
                | Target::SsiPrefix
        )
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct TargetResult {
    pub target: &'static str,
    pub model: &'static str,
    pub backend: &'static str,
    pub seed: u64,
    pub traces: usize,
    pub events: usize,
    pub conforming: usize,
    pub divergences: Vec<Divergence>,
    /// Divergences found in all (only the first few are kept in `divergences`).
    pub divergent_traces: usize,
    /// `conforms` or `diverges`: what this target must show.
    pub expected: &'static str,
    pub ok: bool,
    pub seconds: f64,
    /// Time spent validating traces (the rest drives the implementation).
    pub validation_seconds: f64,
    /// Model → implementation: model steps driven, and the mismatches between the
    /// implementation and the model.
    pub steps: usize,
    pub mismatches: Vec<String>,
    /// Must-fail configs whose counterexample was driven through the implementation.
    pub replays: Vec<Replay>,
}

/// A must-fail config's counterexample driven through the broken and the guarded
/// implementation.
#[derive(Clone, Debug, Serialize)]
pub struct Replay {
    pub config: String,
    /// The model steps, in order.
    pub steps: Vec<String>,
    /// What the broken implementation did (the violation, reproduced).
    pub broken: String,
    /// What the guarded implementation did with the same schedule.
    pub guarded: String,
}

impl TargetResult {
    /// Validates one trace and counts it; the first few divergences are kept.
    pub(crate) fn tally<M: Conform>(&mut self, model: &M, events: &[M::Event]) {
        self.traces += 1;
        self.events += events.len();
        let validating = Instant::now();
        let verdict = validate(model, events, Limits::default());
        self.validation_seconds += validating.elapsed().as_secs_f64();
        if verdict.conforming {
            self.conforming += 1;
        } else {
            self.divergent_traces += 1;
            if self.divergences.len() < 3 {
                self.divergences.extend(verdict.divergence);
            }
        }
    }
}

pub struct Settings {
    pub backend: Backend,
    pub traces: usize,
    pub writers: usize,
    pub seed: u64,
}

pub fn run(target: Target, settings: &Settings) -> Result<TargetResult, String> {
    if !target.backends().contains(&settings.backend.kind()) {
        let names: Vec<&str> = target.backends().iter().map(|b| b.name()).collect();
        return Err(format!(
            "{}: runs on {} (--backend), not {}",
            target.name(),
            names.join(" or "),
            settings.backend.name()
        ));
    }
    let started = Instant::now();
    let mut result = TargetResult {
        target: target.name(),
        model: "CasFirstWriteAtomic",
        backend: settings.backend.name(),
        seed: settings.seed,
        traces: 0,
        events: 0,
        conforming: 0,
        divergences: Vec::new(),
        divergent_traces: 0,
        expected: if target.is_mutant() {
            "diverges"
        } else {
            "conforms"
        },
        ok: false,
        seconds: 0.0,
        validation_seconds: 0.0,
        steps: 0,
        mismatches: Vec::new(),
        replays: Vec::new(),
    };
    match target {
        Target::Store | Target::StoreLww => {
            let mode = if target == Target::Store {
                Mode::Guarded
            } else {
                Mode::LastWriteWins
            };
            let factory = StoreFactory::new(settings.backend.clone(), mode, target.name())?;
            // Cassandra's persist is the three-LWT compound: its events are CasFirstWrite's.
            let compound = settings.backend.kind() == BackendKind::Cassandra;
            let atomic = CasFirstWriteAtomic {
                writers: settings.writers as u8,
                max_offset: MAX_OFFSET,
                guarded: true,
                reap: false,
            };
            let three_statements = guarded_compound(settings.writers);
            if compound {
                result.model = "CasFirstWrite";
            }
            let mut rng = Rng::new(settings.seed);
            for round in 0..settings.traces {
                let offsets: Vec<u64> = (0..settings.writers)
                    .map(|_| rng.below(MAX_OFFSET as u64 + 1))
                    .collect();
                let jitter: Vec<u64> = (0..settings.writers).map(|_| rng.below(200)).collect();
                let events = race(&factory, &format!("key{round}"), &offsets, &jitter)?;
                if compound {
                    result.tally(&three_statements, &events);
                } else {
                    result.tally(&atomic, &events);
                }
            }
            result.ok = match target {
                Target::Store => result.conforming == result.traces,
                _ => result.divergent_traces > 0,
            };
        }
        Target::Replay => replay_all(settings, &mut result)?,
        Target::Compound => {
            result.model = "CasFirstWrite";
            let factory =
                StoreFactory::new(settings.backend.clone(), Mode::Guarded, target.name())?
                    .compound();
            let model = guarded_compound(settings.writers);
            let mut rng = Rng::new(settings.seed);
            for round in 0..settings.traces {
                let offsets: Vec<u64> = (0..settings.writers)
                    .map(|_| rng.below(MAX_OFFSET as u64 + 1))
                    .collect();
                let events =
                    scheduled_round(&factory, &format!("key{round}"), &offsets, rng.next_u64())?;
                result.tally(&model, &events);
            }
            match settings.backend {
                #[cfg(feature = "postgres")]
                Backend::Postgres(_) => compound::replay_counterexamples(settings, &mut result)?,
                _ => eprintln!(
                    "conform: compound: the casfw_* counterexamples replay on PostgreSQL (its store has the mutant switches), not on {}",
                    settings.backend.name()
                ),
            }
            result.ok = result.conforming == result.traces && result.mismatches.is_empty();
        }
        _ => match target.family() {
            Family::Flow => flow::run(target, settings, &mut result)?,
            Family::GroupCommit => group_commit::run(target, settings, &mut result)?,
            Family::Kafka => kafka::run(target, settings, &mut result)?,
            Family::Ssi => ssi::run(target, settings, &mut result)?,
            Family::Store => unreachable!("every store target is matched above"),
        },
    }
    result.seconds = started.elapsed().as_secs_f64();
    Ok(result)
}

/// A stored row (or a compacted topic's last record) as a model cell: a live value's lines are
/// the offsets it folded.
pub fn cell_of(read: &Read) -> Result<Cell, String> {
    Ok(match read {
        Read::Absent => Cell::ABSENT,
        Read::Tombstone { offset } => Cell::tomb(small(*offset)?),
        Read::Live { offset, value } => Cell::snap(small(*offset)?, contents_of(value)?),
    })
}

/// A folded value (one offset per line: the flows append each record's offset) as the model's set of offsets.
pub(crate) fn contents_of(value: &[u8]) -> Result<Offsets, String> {
    let mut contents = Offsets::EMPTY;
    for line in String::from_utf8_lossy(value).lines() {
        let o: u8 = line
            .parse()
            .map_err(|_| format!("a row value line is not an offset: {line:?}"))?;
        contents = contents.with(o);
    }
    Ok(contents)
}

fn small(offset: u64) -> Result<u8, String> {
    u8::try_from(offset)
        .ok()
        .filter(|o| *o < 32)
        .ok_or_else(|| format!("offset {offset} is outside the model's range"))
}

/// The guarded three-statement first write of `writers` writers.
fn guarded_compound(writers: usize) -> CasFirstWrite {
    CasFirstWrite {
        writers: writers as u8,
        max_offset: MAX_OFFSET,
        guarded: true,
        reap: false,
        insert_if_not_exists: true,
        retry: true,
    }
}

/// The store's row as the model sees it.
fn row_of(read: &Read) -> Row {
    match read {
        Read::Live { offset, .. } | Read::Tombstone { offset } => Row::present(*offset as u8),
        Read::Absent => Row::ABSENT,
    }
}

/// Drives the store through `path` from `init`, comparing rows after every step. Returns the
/// mismatches, and whether the store ever let a lower offset overwrite a higher one.
pub fn replay(
    factory: &StoreFactory,
    key: &str,
    model: &CasFirstWriteAtomic,
    init: &AtomicState,
    path: &[AtomicAction],
) -> Result<(Vec<String>, bool), String> {
    let store = factory.open(loadbearing_impls::trace::no_trace())?;
    let mut state = init.clone();
    let mut mismatches = Vec::new();
    let mut regressed = false;
    for (i, action) in path.iter().enumerate() {
        let before = row_of(&store.read(key).map_err(|e| e.to_string())?);
        if let AtomicAction::Persist(w) = action {
            let offset = state.off[*w as usize] as u64;
            match store.persist(key, offset, b"replayed") {
                Ok(()) | Err(WriteError::Conflict(_)) => {}
                Err(other) => return Err(format!("step {} {action:?}: {other}", i + 1)),
            }
        }
        state = model
            .next_state(&state, *action)
            .ok_or_else(|| format!("step {} {action:?} is not enabled in the model", i + 1))?;
        let after = row_of(&store.read(key).map_err(|e| e.to_string())?);
        regressed |= before.present && after.present && after.offset < before.offset;
        if after != state.stored {
            mismatches.push(format!(
                "{key}: after step {} {action:?} the store holds {after}, the model {}",
                i + 1,
                state.stored
            ));
        }
    }
    Ok((mismatches, regressed))
}

/// Every path of at most `depth` steps from `init`, leaving out the actions `skip` names: each
/// non-empty prefix when `every_prefix`, else only the maximal ones (depth reached, or nothing
/// enabled). Depth first, in the model's action order.
pub fn all_paths<M>(
    model: &M,
    init: M::State,
    depth: usize,
    every_prefix: bool,
    skip: impl Fn(&M::Action) -> bool,
) -> Vec<Vec<M::Action>>
where
    M: Model,
    M::Action: Clone,
{
    let mut out = Vec::new();
    let mut stack = vec![(init, Vec::new())];
    while let Some((state, path)) = stack.pop() {
        let mut actions = Vec::new();
        model.actions(&state, &mut actions);
        actions.retain(|a| !skip(a));
        let maximal = path.len() == depth || actions.is_empty();
        if (every_prefix && !path.is_empty()) || (!every_prefix && maximal) {
            out.push(path.clone());
        }
        if path.len() == depth {
            continue;
        }
        for action in actions {
            if let Some(next) = model.next_state(&state, action.clone()) {
                let mut longer = path.clone();
                longer.push(action);
                stack.push((next, longer));
            }
        }
    }
    out
}

/// A seeded random walk of `model` from `init`: one enabled action (other than those `skip`
/// names) drawn from `rng` at each step, until none is enabled or `max_steps` were taken. The
/// states start with `init`.
pub fn random_walk<M>(
    model: &M,
    init: M::State,
    rng: &mut Rng,
    max_steps: usize,
    skip: impl Fn(&M::Action) -> bool,
) -> ModelPath<M>
where
    M: Model,
    M::Action: Clone,
{
    let mut path = Vec::new();
    let mut states = vec![init];
    while path.len() < max_steps {
        let state = states.last().expect("starts with init");
        let mut actions = Vec::new();
        model.actions(state, &mut actions);
        actions.retain(|a| !skip(a));
        if actions.is_empty() {
            break;
        }
        let action = actions[rng.below(actions.len() as u64) as usize].clone();
        let next = model.next_state(state, action.clone()).expect("enabled");
        path.push(action);
        states.push(next);
    }
    (path, states)
}

/// A must-fail config's counterexample: the model built from its constants, the states along
/// the path and the actions between them.
pub struct Cx<M: Model> {
    pub model: M,
    pub states: Vec<M::State>,
    pub path: Vec<M::Action>,
}

/// Checks `config_name` afresh and returns its shortest counterexample as model steps.
pub fn counterexample<M: loadbearing_specs::Configured>(
    config_name: &str,
) -> Result<Cx<M>, String> {
    let (model, _) = suite_model::<M>(config_name)?;
    let (path, states) = counterexample_path(&model, config_name)?;
    Ok(Cx {
        model,
        states,
        path,
    })
}

/// A must-fail config of the suite: the model its constants build, and the config.
pub fn suite_model<M: loadbearing_specs::Configured>(
    config_name: &str,
) -> Result<(M, loadbearing_expected::suite::Config), String> {
    let config = loadbearing_expected::suite::load(&loadbearing_expected::suite::default_path())
        .map_err(|e| e.to_string())?
        .into_iter()
        .find(|c| c.name == config_name)
        .ok_or_else(|| format!("no config {config_name} in the suite"))?;
    if config.model != M::NAME {
        return Err(format!(
            "{config_name} is a {} config, not {}",
            config.model,
            M::NAME
        ));
    }
    let model = M::from_knobs(&config.constants).map_err(|e| e.to_string())?;
    Ok((model, config))
}

/// A model path: its actions, and the states they lead through (the initial one first).
pub type ModelPath<M> = (
    Vec<<M as stateright::Model>::Action>,
    Vec<<M as stateright::Model>::State>,
);

/// A config's shortest counterexample, checked afresh, as the model's own actions: each shown
/// step is matched to the action of that name whose successor shows the same variables.
pub fn counterexample_path<M: Spec>(model: &M, config_name: &str) -> Result<ModelPath<M>, String> {
    let config = loadbearing_expected::suite::load(&loadbearing_expected::suite::default_path())
        .map_err(|e| e.to_string())?
        .into_iter()
        .find(|c| c.name == config_name)
        .ok_or_else(|| format!("no config {config_name} in the suite"))?;
    let judged = loadbearing_expected::run::run(&config, &Options::default())?;
    let cx = judged
        .report
        .counterexample
        .ok_or_else(|| format!("{config_name} has no counterexample"))?;
    let shown = |s: &M::State| -> Vec<(String, String)> {
        model
            .variables(s)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    };
    let mut states = vec![model
        .init_states()
        .into_iter()
        .find(|s| shown(s) == cx.steps[0].state)
        .ok_or_else(|| {
            format!("{config_name}: the counterexample's initial state is not the model's")
        })?];
    let mut path = Vec::new();
    for (i, step) in cx.steps.iter().enumerate().skip(1) {
        let state = states.last().expect("non-empty").clone();
        let mut actions = Vec::new();
        model.actions(&state, &mut actions);
        let (action, next) = actions
            .into_iter()
            .filter(|a| Some(model.format_action(a)) == step.action)
            .find_map(|a| {
                let next = model.next_state(&state, a.clone())?;
                (shown(&next) == step.state).then_some((a, next))
            })
            .ok_or_else(|| {
                format!(
                    "{config_name}: step {i} ({:?}) does not replay on the model",
                    step.action
                )
            })?;
        path.push(action);
        states.push(next);
    }
    Ok((path, states))
}

/// A counterexample of the compound, mapped onto the atomic store through the refinement: the
/// in-flight statements are stutters, a landing write is a Persist, a conflict a GiveUp.
pub fn atomic_schedule(config_name: &str) -> Result<AtomicSchedule, String> {
    let Cx {
        model: compound,
        states,
        ..
    } = counterexample::<CasFirstWrite>(config_name)?;
    let refinement = compound
        .refinements()
        .into_iter()
        .next()
        .ok_or("CasFirstWrite refines CasFirstWriteAtomic")?;
    // The model the refinement maps onto, and the atomic step of each simulated step, found
    // by the name the refinement reports.
    let atomic = CasFirstWriteAtomic {
        writers: compound.writers,
        max_offset: compound.max_offset,
        guarded: compound.guarded,
        reap: compound.reap,
    };
    let atomic_init = atomic.init_states_for(&states[0].off[..compound.writers as usize]);
    let mut state = atomic_init.clone();
    let mut schedule = Vec::new();
    for pair in states.windows(2) {
        match refinement.check_step(&pair[0], &pair[1]) {
            Ok(StepMatch::Stutter) => {}
            Ok(StepMatch::Simulates(shown)) => {
                let mut actions = Vec::new();
                atomic.actions(&state, &mut actions);
                let action = actions
                    .into_iter()
                    .find(|a| atomic.format_action(a) == shown)
                    .ok_or_else(|| format!("{config_name}: {shown} is not an atomic step here"))?;
                state = atomic.next_state(&state, action).expect("enabled");
                schedule.push(action);
            }
            Err(_) => return Err(format!("{config_name}: a step maps to no atomic step")),
        }
    }
    Ok(AtomicSchedule {
        model: atomic,
        init: atomic_init,
        schedule,
    })
}

/// A compound counterexample as atomic steps: the atomic model it maps onto (the config's
/// constants), its initial state and the steps.
pub struct AtomicSchedule {
    pub model: CasFirstWriteAtomic,
    pub init: AtomicState,
    pub schedule: Vec<AtomicAction>,
}

fn replay_all(settings: &Settings, result: &mut TargetResult) -> Result<(), String> {
    let guarded = StoreFactory::new(settings.backend.clone(), Mode::Guarded, "replay")?;
    let lww = StoreFactory::new(settings.backend.clone(), Mode::LastWriteWins, "replay_lww")?;
    let small = |guarded: bool| CasFirstWriteAtomic {
        writers: 2,
        max_offset: 2,
        guarded,
        reap: false,
    };
    // All short paths, on the guarded store against the guarded model and on the LWW store
    // against the unguarded model: the store must do exactly what the model does.
    let mut key = 0;
    for (factory, model) in [(&guarded, small(true)), (&lww, small(false))] {
        let paths = model.init_states().into_iter().flat_map(|init| {
            all_paths(&model, init.clone(), 4, true, |_| false)
                .into_iter()
                .map(move |path| (init.clone(), path))
        });
        for (init, path) in paths {
            key += 1;
            let (mismatches, _) = replay(factory, &format!("path{key}"), &model, &init, &path)?;
            result.traces += 1;
            result.steps += path.len();
            result.mismatches.extend(mismatches);
        }
    }
    // Random walks with more writers.
    let mut rng = Rng::new(settings.seed);
    let wide = CasFirstWriteAtomic {
        writers: settings.writers as u8,
        max_offset: MAX_OFFSET,
        guarded: true,
        reap: false,
    };
    for _ in 0..settings.traces {
        let off: Vec<u8> = (0..settings.writers)
            .map(|_| rng.below(MAX_OFFSET as u64 + 1) as u8)
            .collect();
        let init = wide.init_states_for(&off);
        let (path, _) = random_walk(&wide, init.clone(), &mut rng, usize::MAX, |_| false);
        key += 1;
        let (mismatches, _) = replay(&guarded, &format!("walk{key}"), &wide, &init, &path)?;
        result.traces += 1;
        result.steps += path.len();
        result.mismatches.extend(mismatches);
    }
    // The must-fail config, mapped onto the store: it must reproduce on the broken store and be
    // refused on the guarded one.
    let AtomicSchedule {
        model,
        init,
        schedule,
    } = atomic_schedule("casfw_unguarded")?;
    let guarded_model = CasFirstWriteAtomic {
        guarded: true,
        ..model.clone()
    };
    key += 1;
    let (_, regressed_lww) = replay(&lww, &format!("cx{key}"), &model, &init, &schedule)?;
    let (_, regressed_guarded) = replay(
        &guarded,
        &format!("cx{key}"),
        &guarded_model,
        &init,
        &schedule,
    )?;
    result.traces += 2;
    result.steps += 2 * schedule.len();
    if !regressed_lww {
        result.mismatches.push(
            "casfw_unguarded replayed on the last-write-wins store did not regress the row".into(),
        );
    }
    if regressed_guarded {
        result
            .mismatches
            .push("casfw_unguarded replayed on the guarded store regressed the row".into());
    }
    result.replays.push(Replay {
        config: "casfw_unguarded".into(),
        steps: schedule.iter().map(|a| format!("{a:?}")).collect(),
        broken: if regressed_lww {
            "the last-write-wins store let the lower offset overwrite the higher one".into()
        } else {
            "did not reproduce".into()
        },
        guarded: if regressed_guarded {
            "regressed the row".into()
        } else {
            "refused the stale write (typed conflict); the row kept the higher offset".into()
        },
    });
    result.conforming = result.traces - result.mismatches.len().min(result.traces);
    result.ok = result.mismatches.is_empty();
    Ok(())
}

/// The servers a run started, kept until it ends; each is started the first time a target
/// asks for its backend. A backend whose feature is off is an error naming the feature.
#[derive(Default)]
pub struct Servers {
    #[cfg(feature = "postgres")]
    postgres: Option<loadbearing_impls::harness::postgres::PgServer>,
    #[cfg(feature = "cassandra")]
    cassandra: Option<loadbearing_impls::harness::cassandra::CassandraNode>,
    #[cfg(feature = "kafka")]
    kafka: Option<loadbearing_impls_kafka::harness::KafkaBroker>,
}

impl Servers {
    pub fn backend(&mut self, kind: BackendKind) -> Result<Backend, String> {
        Ok(match kind {
            BackendKind::Sqlite => Backend::Sqlite,
            BackendKind::Memory => Backend::Memory,
            #[cfg(feature = "postgres")]
            BackendKind::Postgres => {
                if self.postgres.is_none() {
                    eprintln!("conform: starting PostgreSQL");
                    self.postgres = Some(
                        loadbearing_impls::harness::postgres::PgServer::start()
                            .map_err(|e| format!("cannot start PostgreSQL: {e}"))?,
                    );
                }
                Backend::Postgres(self.postgres.as_ref().expect("started").conn_str())
            }
            #[cfg(feature = "cassandra")]
            BackendKind::Cassandra => {
                if self.cassandra.is_none() {
                    eprintln!("conform: starting Cassandra 5");
                    self.cassandra = Some(
                        loadbearing_impls::harness::cassandra::CassandraNode::start()
                            .map_err(|e| format!("cannot start Cassandra: {e}"))?,
                    );
                }
                Backend::Cassandra(self.cassandra.as_ref().expect("started").node())
            }
            #[cfg(feature = "kafka")]
            BackendKind::Kafka => {
                if self.kafka.is_none() {
                    eprintln!("conform: starting Kafka 4.4");
                    self.kafka = Some(
                        loadbearing_impls_kafka::harness::KafkaBroker::start()
                            .map_err(|e| format!("cannot start Kafka: {e}"))?,
                    );
                }
                Backend::Kafka(self.kafka.as_ref().expect("started").bootstrap())
            }
            #[allow(unreachable_patterns)] // with every backend compiled in (`full`)
            missing => return Err(missing.require().unwrap_err().to_string()),
        })
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        // Their guardians would remove them at exit anyway; stopping now frees the machine.
        #[cfg(feature = "kafka")]
        if let Some(kafka) = &self.kafka {
            kafka.stop();
        }
        #[cfg(feature = "cassandra")]
        if let Some(cassandra) = &self.cassandra {
            cassandra.stop();
        }
        #[cfg(feature = "postgres")]
        if let Some(postgres) = &self.postgres {
            postgres.stop();
        }
    }
}
