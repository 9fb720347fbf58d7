//! A run of the implementation: two clients, the lock service and storage on SQLite, driven by
//! a schedule (which client acts next, and when a lease runs out), every step written to the
//! trace as it happened. A client writes with the token it holds; refused, it drops the token
//! (it has learnt it is fenced) and must acquire again.

use std::path::Path;

use loadbearing::conformance::TraceEvent;

use crate::lock::{ClientId, LockService, Token};
use crate::storage::{Storage, TokenCheck, WriteError};
use crate::trace::FencingEvent;

pub const CLIENTS: u8 = 2;

/// Who does what next.
#[derive(Clone, Debug)]
pub enum Schedule {
    /// `steps` steps chosen at random from those possible, from `seed`, with `leases` leases
    /// granted at most.
    Random { seed: u64, steps: usize, leases: u8 },
    /// The textbook failure: c1 takes the lease, pauses past its expiry, c2 takes the lease and
    /// writes, then c1 wakes and writes with its old token.
    GcPause,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Acquire(ClientId),
    Expire,
    Write(ClientId),
}

struct Run {
    lock: LockService,
    storage: Storage,
    held: [Option<Token>; CLIENTS as usize],
    events: Vec<FencingEvent>,
}

impl Run {
    fn possible(&self, leases: u8) -> Vec<Step> {
        let mut steps = Vec::new();
        if self.lock.holder().is_none() && self.lock.last_token() < leases {
            steps.extend((1..=CLIENTS).map(|c| Step::Acquire(ClientId(c))));
        }
        if self.lock.holder().is_some() {
            steps.push(Step::Expire);
        }
        steps.extend(
            (1..=CLIENTS)
                .filter(|&c| self.held[usize::from(c - 1)].is_some())
                .map(|c| Step::Write(ClientId(c))),
        );
        steps
    }

    fn take(&mut self, step: Step) -> Result<(), Box<dyn std::error::Error>> {
        match step {
            Step::Acquire(client) => {
                let token = self
                    .lock
                    .acquire(client)
                    .map_err(|e| format!("{client:?} was not granted the lease: {e:?}"))?;
                self.held[usize::from(client.0 - 1)] = Some(token);
                self.events.push(FencingEvent::Acquire {
                    client: client.0,
                    token,
                });
            }
            Step::Expire => {
                self.lock.expire();
                self.events.push(FencingEvent::Expire);
            }
            Step::Write(client) => {
                let slot = &mut self.held[usize::from(client.0 - 1)];
                let token = slot.ok_or_else(|| format!("{client:?} holds no token"))?;
                let value = format!("written by c{} with token {token}", client.0);
                let accepted = match self.storage.write(token, client, &value) {
                    Ok(()) => true,
                    Err(WriteError::Stale(_)) => {
                        *slot = None;
                        false
                    }
                    Err(e) => return Err(e.into()),
                };
                self.events.push(FencingEvent::Write {
                    client: client.0,
                    token,
                    accepted,
                });
            }
        }
        Ok(())
    }
}

/// Runs `schedule` on a fresh database at `database`; the events in the order they happened.
pub fn run(
    schedule: &Schedule,
    database: &Path,
    check: TokenCheck,
) -> Result<Vec<FencingEvent>, Box<dyn std::error::Error>> {
    let mut run = Run {
        lock: LockService::default(),
        storage: Storage::open(database, check)?,
        held: [None; CLIENTS as usize],
        events: Vec::new(),
    };
    match *schedule {
        Schedule::Random {
            seed,
            steps,
            leases,
        } => {
            let mut rng = fastrand::Rng::with_seed(seed);
            for _ in 0..steps {
                let possible = run.possible(leases);
                if possible.is_empty() {
                    break;
                }
                run.take(possible[rng.usize(..possible.len())])?;
            }
        }
        Schedule::GcPause => {
            let (c1, c2) = (ClientId(1), ClientId(2));
            for step in [
                Step::Acquire(c1),
                Step::Expire,
                Step::Acquire(c2),
                Step::Write(c2),
                Step::Write(c1),
            ] {
                run.take(step)?;
            }
        }
    }
    Ok(run.events)
}

/// The events as the trace file holds them, one line each.
pub fn write_trace(events: &[FencingEvent], out: &mut impl std::io::Write) -> std::io::Result<()> {
    for event in events {
        writeln!(out, "{}", event.to_line())?;
    }
    out.flush()
}

/// Writes the trace to `path`.
pub fn save_trace(events: &[FencingEvent], path: &Path) -> std::io::Result<()> {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    write_trace(events, &mut file)
}
