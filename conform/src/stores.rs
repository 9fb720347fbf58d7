//! What the store families share (the store targets, `crate::store`; the compound's,
//! `crate::compound`; the faults', `crate::store_faults`; the reliability runs,
//! [`crate::reliability`]; and every family whose implementation runs on a store): the stores
//! a run opens (`StoreFactory`, on every backend of `STORES`), writers racing on one key, the
//! compound's statements interleaved by a seeded schedule, and the first-write events and
//! histories they report.

use std::sync::{Arc, Mutex};

use loadbearing_impls::servers::{Database, DatabaseSpec};
use loadbearing_impls::trace::{no_trace, SharedTracer, StatementOutcome, Step, Tracer, WriteKind};
use loadbearing_impls::{CompoundGuards, Mode, Read, SnapshotStore, StoreOptions};
use loadbearing_specs::first_write::atomic::CasFirstWriteAtomic;
use loadbearing_specs::first_write::compound::{CasFirstWrite, Row};
use loadbearing_specs::first_write::trace::{
    FirstWriteEvent, Outcome, Payload, ReadRow, Statement, Writer,
};
use loadbearing_trace::{Timed, TraceEvent as _};

use crate::backend::{Backend, BackendKind, StoreBackend};
use crate::error::{Error, ValueError};
use crate::schedule::Scheduler;

/// Offsets the writers draw from: small, so that races on one key collide often.
pub const MAX_OFFSET: u8 = 5;

/// The backends a snapshot store runs on: every database of the implementations' catalogue.
pub const STORES: &[BackendKind] = &{
    let mut stores = [BackendKind::SQLITE; StoreBackend::ALL.len()];
    let mut i = 0;
    while i < stores.len() {
        stores[i] = BackendKind::Store(StoreBackend::ALL[i]);
        i += 1;
    }
    stores
};

/// Opens store sessions on one fresh database, one per concurrent writer.
pub struct StoreFactory {
    /// Where the database is, and its name (a table, a file, a Cassandra table), unique to the
    /// run: what PostgreSQL's reaper connects to.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    backend: Backend,
    mode: Mode,
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    name: String,
    database: Box<dyn Database>,
}

static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl StoreFactory {
    pub fn new(backend: Backend, mode: Mode, label: &str) -> Result<StoreFactory, Error> {
        StoreFactory::open_database(backend, mode, label, false, CompoundGuards::default())
    }

    /// A store whose guarded first write is the three-statement compound (PostgreSQL's can be
    /// either; Cassandra's always is), with these guards (turning one off is a planted mutant).
    pub fn compound(
        backend: Backend,
        mode: Mode,
        label: &str,
        guards: CompoundGuards,
    ) -> Result<StoreFactory, Error> {
        StoreFactory::open_database(backend, mode, label, true, guards)
    }

    /// The database is made here, once: a server that refuses is said now, not at the first
    /// session.
    fn open_database(
        backend: Backend,
        mode: Mode,
        label: &str,
        compound: bool,
        guards: CompoundGuards,
    ) -> Result<StoreFactory, Error> {
        let BackendKind::Store(store) = backend.kind() else {
            return Err(Error::Unsupported {
                needs: "a database the snapshot store runs on (`conform --list` names them)",
                backend: backend.kind(),
            });
        };
        if !store.compiled_in() {
            return Err(Error::NotCompiled(backend.kind()));
        }
        let name = format!(
            "{label}_{}_{}",
            std::process::id(),
            COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        )
        .replace('-', "_");
        let spec = DatabaseSpec {
            name: name.clone(),
            compound,
            guards,
        };
        let address = (!store.embedded()).then(|| backend.address()).transpose()?;
        let database = store
            .database(address, &spec)
            .map_err(Error::open("opening the store's database"))?;
        Ok(StoreFactory {
            backend,
            mode,
            name,
            database,
        })
    }

    /// A PostgreSQL session that reaps rows (the model's `ReapRow`).
    #[cfg(feature = "postgres")]
    pub fn reaper(
        &self,
        tracer: SharedTracer,
    ) -> Result<loadbearing_impls::servers::postgres::PostgresStore, Error> {
        if self.backend.kind() != BackendKind::Store(StoreBackend::Postgres) {
            return Err(Error::Unsupported {
                needs: "reaping on demand needs PostgreSQL",
                backend: self.backend.kind(),
            });
        }
        loadbearing_impls::servers::postgres::PostgresStore::connect_traced(
            self.backend.address()?,
            &self.name,
            self.options(),
            tracer,
        )
        .map_err(Error::open("connecting to PostgreSQL"))
    }

    fn options(&self) -> StoreOptions {
        StoreOptions {
            mode: self.mode,
            ttl: None,
        }
    }

    pub fn open(&self, tracer: SharedTracer) -> Result<Box<dyn SnapshotStore>, Error> {
        self.database
            .session(self.options(), tracer)
            .map_err(Error::open("opening a store session"))
    }
}

/// One round of the compound: each writer persists its offset to a fresh key, one statement
/// at a time in the seeded order, so the three statements of different writers interleave.
pub fn scheduled_round(
    factory: &StoreFactory,
    key: &str,
    offsets: &[u64],
    seed: u64,
) -> Result<Vec<FirstWriteEvent>, Error> {
    let scheduler = Scheduler::seeded(offsets.len(), seed);
    let stores = (0..offsets.len())
        .map(|w| factory.open(scheduler.tracer(w)))
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
        .filter_map(|(w, step)| event_of(Writer::model(*w), step, None))
        .collect())
}

/// The first-write models' reading of a store's step, or `None` for the steps of the
/// partition flow (other vocabularies). Every step kind is named, so a new one must be placed.
///
/// A persist's statements carry `value` when the caller knows it (the step names a tombstone,
/// not the value).
pub fn event_of(writer: Writer, step: &Step, value: Option<&str>) -> Option<FirstWriteEvent> {
    let statement = |offset: u64, kind: &WriteKind, outcome: &StatementOutcome| {
        let (outcome, stored) = match outcome {
            StatementOutcome::Applied => (Some(Outcome::Applied), None),
            StatementOutcome::NotApplied { stored } => (Some(Outcome::NotApplied), Some(*stored)),
            StatementOutcome::RowAbsent => (Some(Outcome::RowAbsent), None),
            StatementOutcome::GuardExpired => (Some(Outcome::GuardExpired), None),
            StatementOutcome::Failed(_) => (Some(Outcome::NotSent), None),
            // Sent and never answered: unresolved, the model's to place.
            StatementOutcome::Indeterminate(_) => (None, None),
        };
        let payload = match (kind, value) {
            (WriteKind::Persist, None) => Payload::Unsaid,
            (WriteKind::Persist, Some(value)) => Payload::Value(value.to_string()),
            (WriteKind::Delete, _) => Payload::Tombstone,
        };
        Statement::new(writer, offset, outcome, stored).writing(payload)
    };
    match step {
        Step::Persist {
            offset,
            kind,
            outcome,
            ..
        } => Some(FirstWriteEvent::Persist(statement(*offset, kind, outcome))),
        Step::Update1 {
            offset,
            kind,
            outcome,
            ..
        } => Some(FirstWriteEvent::Update1(statement(*offset, kind, outcome))),
        Step::Insert {
            offset,
            kind,
            outcome,
            ..
        } => Some(FirstWriteEvent::Insert(statement(*offset, kind, outcome))),
        Step::RetryUpdate {
            offset,
            kind,
            outcome,
            ..
        } => Some(FirstWriteEvent::RetryUpdate(statement(
            *offset, kind, outcome,
        ))),
        Step::Repair {
            offset,
            kind,
            outcome,
            ..
        } => Some(FirstWriteEvent::Repair(statement(*offset, kind, outcome))),
        Step::ReapRow { .. } => Some(FirstWriteEvent::ReapRow {}),
        Step::Fold { .. }
        | Step::Write { .. }
        | Step::OwnerRecover { .. }
        | Step::OwnerFold { .. }
        | Step::ZombieWrite { .. }
        | Step::Phase { .. } => None,
    }
}

/// A writer's step as its store traced it, stamped with the time on the race's clock (after
/// the statement returned: the tracer is called once its outcome is known).
pub(crate) struct ClockedTracer {
    pub(crate) writer: Writer,
    pub(crate) clock: Clock,
    pub(crate) sink: Arc<Mutex<Vec<(Writer, u64, Step)>>>,
}

impl Tracer for ClockedTracer {
    fn step(&self, step: &Step) {
        let at = self.clock.now();
        self.sink.lock().unwrap_or_else(|e| e.into_inner()).push((
            self.writer.clone(),
            at,
            step.clone(),
        ));
    }
}

/// One clock every thread of a race reads: nanoseconds since the race began.
#[derive(Clone, Copy)]
pub(crate) struct Clock(std::time::Instant);

impl Clock {
    pub(crate) fn start() -> Clock {
        Clock(std::time::Instant::now())
    }

    pub(crate) fn now(self) -> u64 {
        self.0.elapsed().as_nanos() as u64
    }
}

/// The value writer `w` (0-based) persists at `offset` in a race: each write's own, so a read
/// names the write it found.
pub(crate) fn race_value(w: usize, offset: u64) -> String {
    format!("w{}@{offset}", w + 1)
}

/// A store's value as the trace spells it: the text when it is UTF-8 and does not start with
/// `0x`, else `0x` and its bytes in hex, so two different values never read alike.
pub fn value_text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) if !text.starts_with("0x") => text.to_string(),
        _ => {
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            format!("0x{hex}")
        }
    }
}

/// A read as the first-write vocabulary spells it: the whole row (`whole`: its value and
/// whether it is a tombstone, for the row judge) or its offset alone (for the compound model,
/// which holds offsets only).
pub(crate) fn read_event(read: &Read, whole: bool) -> FirstWriteEvent {
    FirstWriteEvent::Read(match read {
        Read::Live { offset, value } if whole => ReadRow::Row {
            offset: *offset,
            value: Some(value_text(value)),
            tombstone: Some(false),
        },
        Read::Tombstone { offset } if whole => ReadRow::Row {
            offset: *offset,
            value: None,
            tombstone: Some(true),
        },
        read => ReadRow::at(stored_offset(read)),
    })
}

/// One round: `offsets.len()` threads race to persist their offset to a fresh key, truly
/// concurrently: nothing orders their calls to the database but the database. What each did
/// is a history, not a sequence: a statement was called when its writer called `persist` (or
/// its previous statement returned) and returned when the store traced its outcome; the
/// checker finds an order of the overlapping statements that the model allows, if any.
///
/// With `whole`, each write carries its value and the last read the whole row, for the row
/// judge; without, the read carries the row's offset alone (for the compound model).
pub fn race(
    factory: &StoreFactory,
    key: &str,
    offsets: &[u64],
    jitter: &[u64],
    whole: bool,
) -> Result<Vec<Timed<FirstWriteEvent>>, Error> {
    let sink = Arc::new(Mutex::new(Vec::new()));
    let clock = Clock::start();
    let stores = offsets
        .iter()
        .enumerate()
        .map(|(w, _)| {
            factory.open(Arc::new(ClockedTracer {
                writer: Writer::model(w),
                clock,
                sink: sink.clone(),
            }))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let barrier = std::sync::Barrier::new(offsets.len());
    let called: Vec<u64> = std::thread::scope(|scope| {
        let threads: Vec<_> = stores
            .iter()
            .enumerate()
            .map(|(w, store)| {
                let barrier = &barrier;
                let (offset, pause) = (offsets[w], jitter[w]);
                scope.spawn(move || {
                    barrier.wait();
                    std::thread::sleep(std::time::Duration::from_micros(pause));
                    let call = clock.now();
                    let _ = store.persist(key, offset, race_value(w, offset).as_bytes());
                    call
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| t.join().expect("a racing writer panicked"))
            .collect()
    });
    let steps = std::mem::take(&mut *sink.lock().unwrap_or_else(|e| e.into_inner()));
    let mut history = history_of(&steps, &called, offsets);
    // The key read once every writer returned: what a lost or stale write would leave there
    // (without it, overlapping writes may be ordered to explain any outcome they report).
    let call = clock.now();
    let read = factory.open(no_trace())?.read(key)?;
    history.push(Timed {
        call,
        ret: Some(clock.now()),
        key: None,
        event: read_event(&read, whole),
        line: history.len() + 1,
    });
    Ok(history)
}

/// The offset a read shows (a tombstone's too), as the implementation gave it.
pub(crate) fn stored_offset(read: &Read) -> Option<u64> {
    match read {
        Read::Live { offset, .. } | Read::Tombstone { offset } => Some(*offset),
        Read::Absent => None,
    }
}

/// The history of a race's traced steps: each writer's statements in its own order, the first
/// called when the writer called `persist` (`called[w]`), each later one when the one before it
/// returned; a statement sent and never answered never returned. A persist's statements carry
/// their writer's value (`race_value` of its offset, `offsets[w]`).
pub(crate) fn history_of(
    steps: &[(Writer, u64, Step)],
    called: &[u64],
    offsets: &[u64],
) -> Vec<Timed<FirstWriteEvent>> {
    let mut since: Vec<u64> = called.to_vec();
    let mut history = Vec::new();
    for (writer, at, step) in steps {
        let w = writer
            .index()
            .expect("a race's writers are the model's, w1 …");
        let value = race_value(w, offsets[w]);
        let Some(event) = event_of(writer.clone(), step, Some(&value)) else {
            continue;
        };
        let call = since[w];
        since[w] = *at;
        let ret = event.has_outcome().then_some(*at);
        history.push(Timed {
            call,
            ret,
            key: None,
            event,
            line: history.len() + 1,
        });
    }
    history
}

/// The guarded atomic upsert of `writers` writers: what every store race is held to.
pub(crate) fn guarded_atomic(writers: usize) -> CasFirstWriteAtomic {
    CasFirstWriteAtomic {
        writers: writers as u8,
        max_offset: MAX_OFFSET,
        guarded: true,
        reap: false,
    }
}

/// The guarded three-statement first write of `writers` writers.
pub(crate) fn guarded_compound(writers: usize) -> CasFirstWrite {
    CasFirstWrite {
        writers: writers as u8,
        max_offset: MAX_OFFSET,
        guarded: true,
        reap: false,
        insert_if_not_exists: true,
        retry: true,
        spec_guarded: true,
    }
}

/// The store's row as the model sees it; an offset past the model's range is an error naming
/// it, never clamped.
pub(crate) fn row_of(read: &Read) -> Result<Row, ValueError> {
    Ok(match stored_offset(read) {
        Some(offset) => {
            Row::present(u8::try_from(offset).map_err(|_| ValueError::OffsetOutOfRange(offset))?)
        }
        None => Row::ABSENT,
    })
}
