//! Stores that misbehave only while a fault lasts, so that the writes after it bury what they
//! did: the end-state check cannot see them, the judged history must.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use loadbearing_impls::kit::Backend;
use loadbearing_impls::store::{Mode, Read, SnapshotStore, StoreOptions, WriteError};
use loadbearing_impls::trace::SharedTracer;

/// What a mutant does while the fault lasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Misbehaviour {
    /// Writes go through a last-write-wins session: stale writes land.
    StaleWritesLand,
    /// Every third write is acknowledged and never made.
    AcknowledgedWritesLost,
}

/// A backend whose sessions misbehave while `during` is set.
pub struct DuringFault<'a> {
    pub inner: &'a dyn Backend,
    pub misbehaviour: Misbehaviour,
    pub during: Arc<AtomicBool>,
    /// Writes the sessions answered as the mutant (through last-write-wins, or acknowledged
    /// and dropped): how the run knows the mutant really misbehaved.
    pub misbehaved: Arc<AtomicU64>,
}

impl Backend for DuringFault<'_> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn open(&self, options: StoreOptions, tracer: SharedTracer) -> Box<dyn SnapshotStore> {
        let lww = StoreOptions {
            mode: Mode::LastWriteWins,
            ..options
        };
        Box::new(Session {
            guarded: self.inner.open(options, tracer.clone()),
            lww: self.inner.open(lww, tracer),
            misbehaviour: self.misbehaviour,
            during: self.during.clone(),
            writes: AtomicU64::new(0),
            misbehaved: self.misbehaved.clone(),
        })
    }
}

struct Session {
    guarded: Box<dyn SnapshotStore>,
    lww: Box<dyn SnapshotStore>,
    misbehaviour: Misbehaviour,
    during: Arc<AtomicBool>,
    writes: AtomicU64,
    misbehaved: Arc<AtomicU64>,
}

impl Session {
    /// The session a write goes through now, or `None`: acknowledge it and do nothing.
    fn writer(&self) -> Option<&dyn SnapshotStore> {
        if !self.during.load(Ordering::Relaxed) {
            return Some(&*self.guarded);
        }
        match self.misbehaviour {
            Misbehaviour::StaleWritesLand => Some(&*self.lww),
            Misbehaviour::AcknowledgedWritesLost => (!self
                .writes
                .fetch_add(1, Ordering::Relaxed)
                .is_multiple_of(3))
            .then_some(&*self.guarded),
        }
    }
}

impl SnapshotStore for Session {
    fn read(&self, key: &str) -> Result<Read, loadbearing_impls::store::ReadError> {
        self.guarded.read(key)
    }
    fn persist(&self, key: &str, offset: u64, value: &[u8]) -> Result<(), WriteError> {
        let misbehaving = self.during.load(Ordering::Relaxed);
        let answer = match self.writer() {
            Some(store) => store.persist(key, offset, value),
            None => Ok(()),
        };
        if misbehaving && answer.is_ok() {
            self.misbehaved.fetch_add(1, Ordering::Relaxed);
        }
        answer
    }
    fn delete(&self, key: &str, offset: u64) -> Result<(), WriteError> {
        let misbehaving = self.during.load(Ordering::Relaxed);
        let answer = match self.writer() {
            Some(store) => store.delete(key, offset),
            None => Ok(()),
        };
        if misbehaving && answer.is_ok() {
            self.misbehaved.fetch_add(1, Ordering::Relaxed);
        }
        answer
    }
    fn options(&self) -> StoreOptions {
        self.guarded.options()
    }
    fn backend(&self) -> &'static str {
        self.guarded.backend()
    }
}

/// How many writes the mutant must have answered its way before it stops misbehaving.
const MISBEHAVED: u64 = 20;

/// A 4 s stress through `inner` whose sessions misbehave while `fault` lasts (and past it,
/// while they reconnect, until they answered [`MISBEHAVED`] writes the mutant's way or 3 s
/// passed), `fault` done a third into the run. The run is printed with
/// what the end-state check found; the caller holds its history to the model.
pub fn run_misbehaving(
    inner: &dyn Backend,
    misbehaviour: Misbehaviour,
    fault_named: &str,
    fault: &(dyn Fn() + Sync),
) -> super::stress::StressReport {
    let during = Arc::new(AtomicBool::new(false));
    let misbehaved = Arc::new(AtomicU64::new(0));
    let mutant = DuringFault {
        inner,
        misbehaviour,
        during: during.clone(),
        misbehaved: misbehaved.clone(),
    };
    // The mutant misbehaves while the fault lasts and past it, until its sessions (which
    // reconnect at their own pace) have answered a few writes its way, or a few seconds: a
    // run whose mutant never misbehaved would show nothing.
    let misbehaving = || {
        during.store(true, Ordering::Relaxed);
        fault();
        let past = std::time::Instant::now();
        while misbehaved.load(Ordering::Relaxed) < MISBEHAVED
            && past.elapsed() < std::time::Duration::from_secs(3)
        {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        during.store(false, Ordering::Relaxed);
    };
    let what = format!("mutant {misbehaviour:?} while {fault_named}");
    let cfg = super::stress::StressConfig {
        duration: std::time::Duration::from_secs(4),
        ..Default::default()
    };
    let report = super::stress::run_faulted(&mutant, cfg, Some((&what, &misbehaving)));
    super::say(&format!(
        "stress[{}, {what}]: {report}; the end-state check found {} violation(s)",
        inner.name(),
        report.violations.len()
    ));
    report
}
