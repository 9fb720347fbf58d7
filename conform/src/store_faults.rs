//! The snapshot store's histories under network faults, judged by the model instead of by
//! hand-written assertions: writers race on PostgreSQL through a Toxiproxy proxy while the
//! network breaks under some of their statements, and each round's history — every statement
//! with what its client was told, then a read of the key once the network is back — must be a
//! behaviour of CasFirstWriteAtomic.
//!
//! Each round, `writers` sessions persist one offset each to a fresh key in a seeded order cut
//! in three: the writers before a seeded window of one or two race together, then the window's
//! writers race while a fault breaks the network under them, then the rest race once it is
//! back. Nothing orders the statements of a group but the database: the round is a history
//! (each statement's call and return times; an unanswered one never returned), judged by the
//! linearizability checker. The faults:
//!
//! | fault | what the statements in the window meet |
//! |---|---|
//! | replies reset | every reply reset (TCP RST) as it arrives: the statement ran, its client was not told |
//! | proxy cut | every connection closed and new ones refused, until restored |
//! | cut in flight | replies delayed, and the proxy cut while the first statement waits for its reply |
//! | stall | all replies held while the first statement is in flight, then released |
//!
//! How the model reads what the clients were told (`store::event_of`): an applied or refused
//! upsert is the model's `Persist`, which must have done the same; one never sent (the session
//! was lost before it) is the writer's `GiveUp`; one sent and never answered is unresolved: the
//! model may place its `Persist` anywhere after its call, or never, since such a write may land
//! after its client gave up, and nothing is inferred from it. The final read is a stutter
//! whose row must be the model's. So a stale write that lands, an acknowledged write the read
//! does not show, a refused or unsent write that the read does show, and an unknown outcome
//! taken for a known one are each a divergence.
//!
//! A fault that left no statement unresolved or unsent in any of its rounds was judged on no
//! faulted history, and the run says so (a mismatch) rather than passing.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use loadbearing_impls::harness::toxiproxy::{Proxy, Toxic, Toxiproxy};
use loadbearing_impls::trace::no_trace;
use loadbearing_impls::{Mode, Read, SnapshotStore};
use loadbearing_specs::first_write::atomic::CasFirstWriteAtomic;
use loadbearing_specs::first_write::trace::{FirstWriteEvent, Writer};
use loadbearing_trace::Timed;

use crate::backend::{Backend, BackendKind, StoreBackend};
use crate::error::Error;
use crate::mismatch::Mismatch;
use crate::schedule::{Schedule, Seeded};
use crate::stores::{
    guarded_atomic, history_of, race_value, read_event, Clock, ClockedTracer, StoreFactory,
    MAX_OFFSET,
};
use crate::target::{Expect, ModelName, Settings, Target, TargetResult};
use crate::target_id::TargetId;

/// Writers racing through a faulty network on PostgreSQL, built `mode`.
pub struct StoreFaults {
    id: TargetId,
    mode: Mode,
    expect: Expect,
}

/// The guarded store: every faulted history must be a behaviour of the guarded model.
pub static STORE_FAULTS: StoreFaults = StoreFaults {
    id: TargetId::StoreFaults,
    mode: Mode::Guarded,
    expect: Expect::Conforms,
};

/// Last-write-wins through the same faults: the model must catch it.
pub static STORE_FAULTS_LWW: StoreFaults = StoreFaults {
    id: TargetId::StoreFaultsLww,
    mode: Mode::LastWriteWins,
    expect: Expect::Diverges,
};

/// The backends a proxy can stand in front of (an embedded store has no network).
const PROXIED: &[BackendKind] = &[BackendKind::Store(StoreBackend::Postgres)];

impl Target for StoreFaults {
    fn id(&self) -> TargetId {
        self.id
    }

    fn model(&self, _: BackendKind) -> ModelName {
        ModelName::of::<CasFirstWriteAtomic>()
    }

    fn backends(&self) -> &'static [BackendKind] {
        PROXIED
    }

    fn expect(&self) -> Expect {
        self.expect
    }

    fn run(&self, settings: &Settings, result: &mut TargetResult) -> Result<(), Error> {
        let (upstream, proxied) = proxied_conn_str(settings.backend.address()?)?;
        let toxiproxy = Toxiproxy::start().map_err(Error::open("starting Toxiproxy"))?;
        let proxy = toxiproxy
            .proxy(self.id.name(), &upstream)
            .map_err(Error::open("creating the proxy"))?;
        let factory = StoreFactory::new(
            Backend::at(
                BackendKind::Store(StoreBackend::Postgres),
                proxied(proxy.port()),
            ),
            self.mode,
            self.id.name(),
        )?;
        let model = guarded_atomic(settings.writers);
        let mut schedule = Seeded::new(settings.seed);
        // Per fault, the statements it left unresolved or unsent.
        let mut hit = [0usize; FAULTS.len()];
        for round in 0..settings.traces {
            let fault = round % FAULTS.len();
            let plan = RoundPlan::draw(&mut schedule, settings.writers);
            let history = faulted_round(
                &factory,
                &proxy,
                FAULTS[fault],
                &format!("key{round}"),
                &plan,
            )?;
            hit[fault] += history
                .iter()
                .filter(|op| op.event.is_unresolved() || op.event.not_sent())
                .count();
            result.tally_rows(&model, &history);
        }
        // A fault that never left a statement unresolved or unsent was judged on no faulted
        // history: the run shows nothing about it.
        for (fault, _) in FAULTS
            .iter()
            .zip(hit)
            .take(settings.traces)
            .filter(|(_, hit)| *hit == 0)
        {
            result.mismatches.push(Mismatch::FaultMissed {
                fault: fault.describe(),
            });
        }
        Ok(())
    }
}

/// The PostgreSQL server's `host:port` and a connection string to the same database through a
/// proxy at a port of our choosing.
fn proxied_conn_str(conn: &str) -> Result<(String, impl Fn(u16) -> String + '_), Error> {
    let field = |name: &str| {
        conn.split_whitespace()
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
    };
    let (Some(host), Some(port)) = (field("host"), field("port")) else {
        return Err(Error::Open {
            what: "reading the PostgreSQL address",
            reason: format!("`{conn}` names no host and port to put a proxy in front of"),
        });
    };
    let through = move |proxy: u16| {
        conn.split_whitespace()
            .map(|kv| {
                if kv.starts_with("port=") {
                    format!("port={proxy}")
                } else {
                    kv.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    Ok((format!("{host}:{port}"), through))
}

/// What the network does to the statements of a round's fault window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    ResetReplies,
    Cut,
    CutInFlight,
    Stall,
}

/// The faults, one per round in turn.
const FAULTS: [Fault; 4] = [
    Fault::ResetReplies,
    Fault::Cut,
    Fault::CutInFlight,
    Fault::Stall,
];

/// How long a statement in flight waits before the fault's second half hits it (the cut of
/// `CutInFlight`, the release of `Stall`): long enough for the statement to be on the wire.
const IN_FLIGHT: Duration = Duration::from_millis(150);

impl Fault {
    fn begin(self, proxy: &Proxy<'_>) -> Result<(), Error> {
        let done = match self {
            Fault::ResetReplies => proxy.add(Toxic::ResetPeer),
            Fault::Cut => proxy.set_enabled(false),
            // Replies held longer than the cut takes to come.
            Fault::CutInFlight => proxy.add(Toxic::Latency { millis: 1_000 }),
            Fault::Stall => proxy.add(Toxic::Stall),
        };
        done.map_err(Error::open("starting a fault"))
    }

    /// What happens while the window's first statement is in flight, if anything.
    fn in_flight(self, proxy: &Proxy<'_>) -> Result<(), Error> {
        let done = match self {
            Fault::CutInFlight => proxy.set_enabled(false),
            Fault::Stall => proxy.remove(),
            Fault::ResetReplies | Fault::Cut => return Ok(()),
        };
        done.map_err(Error::open("a fault in flight"))
    }

    fn end(self, proxy: &Proxy<'_>) -> Result<(), Error> {
        let done = match self {
            Fault::ResetReplies => proxy.remove(),
            Fault::Cut => proxy.set_enabled(true),
            Fault::CutInFlight => proxy.set_enabled(true).and_then(|()| proxy.remove()),
            // Released in flight.
            Fault::Stall => Ok(()),
        };
        done.map_err(Error::open("ending a fault"))
    }

    fn describe(self) -> &'static str {
        match self {
            Fault::ResetReplies => "replies reset",
            Fault::Cut => "proxy cut",
            Fault::CutInFlight => "proxy cut with a statement in flight",
            Fault::Stall => "replies stalled and released",
        }
    }

    fn acts_in_flight(self) -> bool {
        matches!(self, Fault::CutInFlight | Fault::Stall)
    }
}

/// A round drawn from the seed: each writer's offset, the order they write in, and the
/// positions of that order the fault covers.
struct RoundPlan {
    offsets: Vec<u64>,
    order: Vec<usize>,
    window: std::ops::Range<usize>,
}

impl RoundPlan {
    fn draw(schedule: &mut Seeded, writers: usize) -> RoundPlan {
        let offsets = (0..writers)
            .map(|_| schedule.below(u64::from(MAX_OFFSET) + 1))
            .collect();
        let mut order: Vec<usize> = (0..writers).collect();
        for i in (1..writers).rev() {
            order.swap(i, schedule.below(i as u64 + 1) as usize);
        }
        let start = schedule.below(writers as u64) as usize;
        let end = (start + 1 + schedule.below(2) as usize).min(writers);
        RoundPlan {
            offsets,
            order,
            window: start..end,
        }
    }
}

/// One round (see the module's doc): the writers before the fault's window race together,
/// then the window's writers race while the network breaks under them, then the rest; the
/// round's history is every statement with its call and return times (an unanswered one never
/// returned), then the read of the key once the network is back.
fn faulted_round(
    factory: &StoreFactory,
    proxy: &Proxy<'_>,
    fault: Fault,
    key: &str,
    plan: &RoundPlan,
) -> Result<Vec<Timed<FirstWriteEvent>>, Error> {
    let sink = Arc::new(Mutex::new(Vec::new()));
    let clock = Clock::start();
    let stores = (0..plan.offsets.len())
        .map(|w| {
            factory.open(Arc::new(ClockedTracer {
                writer: Writer::model(w),
                clock,
                sink: sink.clone(),
            }))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut called = vec![0; plan.offsets.len()];
    let window = plan.window.clone();
    let groups = [
        &plan.order[..window.start],
        &plan.order[window.clone()],
        &plan.order[window.end..],
    ];
    for (g, group) in groups.into_iter().enumerate() {
        let faulted = g == 1;
        if faulted {
            fault.begin(proxy)?;
        }
        std::thread::scope(|scope| {
            let hit = (faulted && fault.acts_in_flight()).then(|| {
                scope.spawn(|| {
                    std::thread::sleep(IN_FLIGHT);
                    fault.in_flight(proxy)
                })
            });
            let writers: Vec<_> = group
                .iter()
                .map(|&w| {
                    let (store, offset) = (&stores[w], plan.offsets[w]);
                    scope.spawn(move || {
                        let call = clock.now();
                        // Its outcome is in the trace, whatever it is.
                        let value = race_value(w, offset);
                        let _ = store.persist(key, offset, value.as_bytes());
                        (w, call)
                    })
                })
                .collect();
            for writer in writers {
                let (w, call) = writer.join().expect("a writer of the round panicked");
                called[w] = call;
            }
            hit.map_or(Ok(()), |h| h.join().expect("the fault's thread"))
        })?;
        if faulted {
            fault.end(proxy)?;
        }
    }
    let steps = std::mem::take(&mut *sink.lock().unwrap_or_else(|e| e.into_inner()));
    let mut history = history_of(&steps, &called, &plan.offsets);
    let call = clock.now();
    let read = read_back(&*factory.open(no_trace())?, key)?;
    history.push(Timed {
        call,
        ret: Some(clock.now()),
        key: None,
        event: read_event(&read, true),
        line: history.len() + 1,
    });
    Ok(history)
}

/// The key's row once the network is back (a session may take a few tries to reconnect).
fn read_back(store: &dyn SnapshotStore, key: &str) -> Result<Read, Error> {
    let mut tries = 0;
    loop {
        match store.read(key) {
            Ok(read) => return Ok(read),
            Err(_) if tries < 20 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_proxied_connection_string_keeps_everything_but_the_port() {
        let conn = "host=127.0.0.1 port=5433 user=postgres dbname=postgres connect_timeout=5";
        let (upstream, through) = proxied_conn_str(conn).unwrap();
        assert_eq!(upstream, "127.0.0.1:5433");
        assert_eq!(
            through(9000),
            "host=127.0.0.1 port=9000 user=postgres dbname=postgres connect_timeout=5"
        );
        assert!(proxied_conn_str("dbname=postgres").is_err());
    }

    #[test]
    fn a_round_plan_orders_every_writer_once_and_covers_one_or_two() {
        let mut schedule = Seeded::new(7);
        for _ in 0..50 {
            let plan = RoundPlan::draw(&mut schedule, 5);
            let mut order = plan.order.clone();
            order.sort();
            assert_eq!(order, [0, 1, 2, 3, 4]);
            assert!(plan.window.start < plan.window.end && plan.window.end <= 5);
            assert!(plan.window.len() <= 2);
            assert!(plan.offsets.iter().all(|&o| o <= u64::from(MAX_OFFSET)));
        }
    }
}
