//! A run of the implementation: clients on threads of their own, each with its own connection,
//! incrementing the register by read-then-cas and now and then overwriting it, all at once.
//! Each operation is recorded with its call and return times on one shared clock, so the
//! history says which operations overlapped. A seeded share of writes and cases lose their
//! reply (the request lost before the register saw it, or the reply after): the client records
//! the call, no return and no outcome, and reads again.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Mutex;
use std::time::Duration;

use loadbearing::conformance::{to_history_ndjson, Timed};

use crate::store::{Compare, Register};
use crate::trace::CasEvent;

/// What a run does.
#[derive(Clone, Debug)]
pub struct RunSettings {
    /// Clients running at once (the model holds three).
    pub clients: u8,
    /// Operations each client performs (a read and its cas are two).
    pub operations: usize,
    /// Out of a hundred writes and cases, how many lose their reply.
    pub lost_percent: u32,
    /// The guard, or the planted mutant without it.
    pub compare: Compare,
    pub seed: u64,
}

impl Default for RunSettings {
    fn default() -> Self {
        RunSettings {
            clients: 3,
            operations: 40,
            lost_percent: 10,
            compare: Compare::Checked,
            seed: 1,
        }
    }
}

/// Whether a request reached the register and whether its reply came back.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Delivery {
    Answered,
    /// Lost on the way: the register never saw it.
    RequestLost,
    /// Done by the register, the reply lost on the way back.
    ReplyLost,
}

/// Runs the clients against a new register in `db` and returns the history they recorded, as
/// NDJSON (`conform --trace` reads it).
pub fn run(db: &Path, settings: &RunSettings) -> rusqlite::Result<String> {
    let _ = std::fs::remove_file(db);
    Register::create(db)?;
    let clock = AtomicU64::new(0);
    let history: Mutex<Vec<Timed<CasEvent>>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        let handles: Vec<_> = (1..=settings.clients)
            .map(|client| {
                let (clock, history) = (&clock, &history);
                scope.spawn(move || client_run(db, settings, client, clock, history))
            })
            .collect();
        handles
            .into_iter()
            .try_for_each(|h| h.join().expect("a client does not panic"))
    })?;
    let mut ops = history.into_inner().expect("no client panicked");
    ops.sort_by_key(|op| op.call);
    Ok(to_history_ndjson(&ops))
}

fn client_run(
    db: &Path,
    settings: &RunSettings,
    client: u8,
    clock: &AtomicU64,
    history: &Mutex<Vec<Timed<CasEvent>>>,
) -> rusqlite::Result<()> {
    let register = Register::open(db, settings.compare)?;
    let mut rng = fastrand::Rng::with_seed(
        settings
            .seed
            .wrapping_mul(1_000)
            .wrapping_add(u64::from(client)),
    );
    let record = |call: u64, ret: Option<u64>, event: CasEvent| {
        history.lock().expect("no client panicked").push(Timed {
            call,
            ret,
            key: None,
            event,
            line: 0,
        });
    };
    let delivery = |rng: &mut fastrand::Rng| {
        if rng.u32(0..100) >= settings.lost_percent {
            Delivery::Answered
        } else if rng.bool() {
            Delivery::RequestLost
        } else {
            Delivery::ReplyLost
        }
    };
    let mut done = 0;
    while done < settings.operations {
        if rng.u32(0..100) < 15 {
            // An overwrite, with a small value.
            let value = rng.u64(0..=3);
            let how = delivery(&mut rng);
            let call = clock.fetch_add(1, SeqCst);
            if how != Delivery::RequestLost {
                register.write(value)?;
            }
            let ret = (how == Delivery::Answered).then(|| clock.fetch_add(1, SeqCst));
            let ok = ret.map(|_| true);
            record(call, ret, CasEvent::Write { client, value, ok });
            done += 1;
            continue;
        }
        // An increment: read, think a moment (others may act), then cas what was read.
        let call = clock.fetch_add(1, SeqCst);
        let value = register.read()?;
        let ret = clock.fetch_add(1, SeqCst);
        record(call, Some(ret), CasEvent::Read { client, value });
        done += 1;
        std::thread::sleep(Duration::from_micros(rng.u64(0..1_500)));
        if value == u64::from(u8::MAX) || done >= settings.operations {
            continue;
        }
        let (expected, new) = (value, value + 1);
        let how = delivery(&mut rng);
        let call = clock.fetch_add(1, SeqCst);
        let swapped = match how {
            Delivery::RequestLost => None,
            _ => Some(register.cas(expected, new)?),
        };
        let ret = (how == Delivery::Answered).then(|| clock.fetch_add(1, SeqCst));
        let swapped = swapped.filter(|_| ret.is_some());
        record(
            call,
            ret,
            CasEvent::Cas {
                client,
                expected,
                new,
                swapped,
            },
        );
        done += 1;
    }
    Ok(())
}
