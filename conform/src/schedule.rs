//! Every source of nondeterminism in a conformance run goes through a [`Schedule`], in the shape
//! of shuttle's scheduler: at each decision it is asked which of the runnable actors goes next,
//! and every random value (offsets, jitter, logs, a choice among a model's enabled actions) is
//! drawn from it. A run is replayed from its [`Recorded`] schedule: the seed and the actors
//! chosen, in order.
//!
//! - [`Seeded`]: choices and values drawn from the crate's one generator, [`Rng`].
//! - [`Scripted`]: the actors in a given order (a model path's actors, or a recorded run's),
//!   values from its seed.
//! - Real threads racing: [`Turnstile`] runs the threads ungated and records the order the OS
//!   gave them, so a race, once recorded, replays as a [`Scripted`] schedule.
//!
//! [`Scheduler`] runs real threads under a schedule: exactly one actor runs a step at a time,
//! and the schedule says which.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use loadbearing_impls::trace::{Step, Tracer};

/// The crate's one generator: fastrand's wyrand, seeded. A small, dependency-free, well-kept
/// generator whose stream is fixed for a seed, so a run is reproducible from its printed seed.
#[derive(Clone)]
pub struct Rng(fastrand::Rng);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(fastrand::Rng::with_seed(seed))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.u64(..)
    }

    /// A value in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0.u64(..n)
    }
}

/// What replays a run: the seed its values were drawn from and the actors it chose, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recorded {
    pub seed: u64,
    pub actors: Vec<usize>,
}

/// An oracle deciding which actor runs next and what every random draw returns.
pub trait Schedule: Send {
    /// Which of `runnable` (non-empty) takes the next step; `None` ends the run here.
    fn next_actor(&mut self, runnable: &[usize]) -> Option<usize>;

    /// The next random value of the run.
    fn next_u64(&mut self) -> u64;

    /// What replays the run so far.
    fn recorded(&self) -> Recorded;

    /// A value in `0..n` (`n > 0`).
    fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// One of `n` (`n > 0`) alternatives: an actor decision among `0..n`.
    fn pick(&mut self, n: usize) -> Option<usize> {
        let all: Vec<usize> = (0..n).collect();
        self.next_actor(&all)
    }
}

/// Choices and values drawn from a seeded [`Rng`].
pub struct Seeded {
    seed: u64,
    rng: Rng,
    actors: Vec<usize>,
}

impl Seeded {
    pub fn new(seed: u64) -> Seeded {
        Seeded {
            seed,
            rng: Rng::new(seed),
            actors: Vec::new(),
        }
    }
}

impl Schedule for Seeded {
    fn next_actor(&mut self, runnable: &[usize]) -> Option<usize> {
        let actor = runnable[self.rng.below(runnable.len() as u64) as usize];
        self.actors.push(actor);
        Some(actor)
    }

    fn next_u64(&mut self) -> u64 {
        self.rng.next_u64()
    }

    fn below(&mut self, n: u64) -> u64 {
        self.rng.below(n)
    }

    fn recorded(&self) -> Recorded {
        Recorded {
            seed: self.seed,
            actors: self.actors.clone(),
        }
    }
}

/// The actors in a fixed order: a model path's actors, or a recorded run's. A scripted actor
/// is never skipped, runnable or not: the [`Scheduler`] reports one that finished before its
/// turn. When the script is done the run ends.
pub struct Scripted {
    script: VecDeque<usize>,
    seed: u64,
    rng: Rng,
    taken: Vec<usize>,
}

impl Scripted {
    /// The actors along a path, in order (values, if any are drawn, from seed 1).
    pub fn along(actors: impl IntoIterator<Item = usize>) -> Scripted {
        Scripted::replay(&Recorded {
            seed: 1,
            actors: actors.into_iter().collect(),
        })
    }

    /// The schedule a recorded run took.
    pub fn replay(recorded: &Recorded) -> Scripted {
        Scripted {
            script: recorded.actors.iter().copied().collect(),
            seed: recorded.seed,
            rng: Rng::new(recorded.seed),
            taken: Vec::new(),
        }
    }
}

impl Schedule for Scripted {
    fn next_actor(&mut self, _runnable: &[usize]) -> Option<usize> {
        let actor = self.script.pop_front()?;
        self.taken.push(actor);
        Some(actor)
    }

    fn next_u64(&mut self) -> u64 {
        self.rng.next_u64()
    }

    fn below(&mut self, n: u64) -> u64 {
        self.rng.below(n)
    }

    fn recorded(&self) -> Recorded {
        Recorded {
            seed: self.seed,
            actors: self.taken.clone(),
        }
    }
}

/// Real threads racing: each step is one critical section, taken in whatever order the OS
/// gives, and the order is recorded (the actors' indices), so the race replays as a
/// [`Scripted`] schedule.
#[derive(Default)]
pub struct Turnstile {
    order: Mutex<Vec<usize>>,
}

impl Turnstile {
    /// Runs `step` as `actor`'s turn: no other actor steps until it returns.
    pub fn step<R>(&self, actor: usize, step: impl FnOnce() -> R) -> R {
        let mut order = self.order.lock().unwrap_or_else(|e| e.into_inner());
        let r = step();
        order.push(actor);
        r
    }

    /// The order the OS gave, as a schedule that replays it.
    pub fn recorded(&self, seed: u64) -> Recorded {
        Recorded {
            seed,
            actors: self.order.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        }
    }
}

/// Real threads under a [`Schedule`]: exactly one actor runs a step at a time, and which one
/// goes next is the schedule's decision. Each step event is the actor's turn ending, so the
/// recorded steps are the execution order.
pub struct Scheduler {
    state: Mutex<Turns>,
    changed: Condvar,
}

struct Turns {
    turn: Option<usize>,
    active: Vec<bool>,
    schedule: Box<dyn Schedule>,
    /// A scripted actor is never skipped when it finishes: its turn stays until
    /// [`Scheduler::wait_script_done`] reports it.
    scripted: bool,
    /// The run is over and was released: everyone runs freely, unrecorded.
    free: bool,
    sink: Vec<(usize, Step)>,
}

impl Scheduler {
    /// Seeded turns among `actors` actors.
    pub fn seeded(actors: usize, seed: u64) -> Arc<Scheduler> {
        Scheduler::start(actors, Box::new(Seeded::new(seed)), false)
    }

    /// Turns in exactly the script's order; when it is done, everyone waits until
    /// [`Scheduler::release`].
    pub fn scripted(actors: usize, script: Scripted) -> Arc<Scheduler> {
        Scheduler::start(actors, Box::new(script), true)
    }

    fn start(actors: usize, schedule: Box<dyn Schedule>, scripted: bool) -> Arc<Scheduler> {
        let mut turns = Turns {
            turn: None,
            active: vec![true; actors],
            schedule,
            scripted,
            free: false,
            sink: Vec::new(),
        };
        turns.pass();
        Arc::new(Scheduler {
            state: Mutex::new(turns),
            changed: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Turns> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait_for(&self, w: usize, mut turns: MutexGuard<'_, Turns>) {
        while turns.turn != Some(w) && !turns.free {
            turns = self.changed.wait(turns).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Blocks until it is actor `w`'s turn.
    pub fn wait_turn(&self, w: usize) {
        let turns = self.lock();
        self.wait_for(w, turns);
    }

    /// Actor `w` took a step: record it, hand the turn on, wait for the next one.
    fn stepped(&self, w: usize, step: &Step) {
        let mut turns = self.lock();
        if !turns.free {
            turns.sink.push((w, step.clone()));
            turns.pass();
        }
        self.changed.notify_all();
        self.wait_for(w, turns);
    }

    /// Actor `w` is done.
    pub fn finished(&self, w: usize) {
        let mut turns = self.lock();
        turns.active[w] = false;
        if !turns.scripted {
            turns.pass();
        }
        self.changed.notify_all();
    }

    /// Blocks until a scripted run's script is done (every scripted step was recorded), or
    /// the scripted actor whose turn it is has finished without taking it (`Err`: the steps
    /// recorded before).
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

    /// Lets every actor run freely from now on (their steps are no longer recorded).
    pub fn release(&self) {
        self.lock().free = true;
        self.changed.notify_all();
    }

    /// The recorded steps, each with the index of the actor that took it.
    pub fn steps(&self) -> Vec<(usize, Step)> {
        self.lock().sink.clone()
    }

    /// What replays this run.
    pub fn recorded(&self) -> Recorded {
        self.lock().schedule.recorded()
    }

    /// A tracer for actor `w`: each step it reports ends its turn.
    pub fn tracer(self: &Arc<Scheduler>, w: usize) -> Arc<dyn Tracer> {
        Arc::new(ScheduledTracer {
            writer: w,
            scheduler: self.clone(),
        })
    }
}

impl Turns {
    fn pass(&mut self) {
        let active: Vec<usize> = (0..self.active.len()).filter(|&w| self.active[w]).collect();
        self.turn = if active.is_empty() && !self.scripted {
            None
        } else {
            self.schedule.next_actor(&active)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seeded_schedule_replays_as_a_script() {
        let mut seeded = Seeded::new(7);
        let runnable = [0, 2, 5];
        let chosen: Vec<usize> = (0..20)
            .map(|_| seeded.next_actor(&runnable).unwrap())
            .collect();
        let mut replayed = Scripted::replay(&seeded.recorded());
        let again: Vec<usize> = (0..20)
            .map(|_| replayed.next_actor(&runnable).unwrap())
            .collect();
        assert_eq!(chosen, again);
        assert_eq!(replayed.next_actor(&runnable), None, "the script is done");
    }

    #[test]
    fn the_same_seed_draws_the_same_values() {
        let draws = |seed| {
            let mut s = Seeded::new(seed);
            (0..10).map(|_| s.below(1000)).collect::<Vec<_>>()
        };
        assert_eq!(draws(3), draws(3));
        assert_ne!(draws(3), draws(4));
    }
}
