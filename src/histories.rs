//! Seeded first-write histories for the history checker's benchmark (`loadbearing bench
//! --histories`) and its tests: what a real store's clients would log against one atomic
//! conditional upsert per key (`IF offset <= o`), so each history is linearizable by
//! construction.
//!
//! Each key has its own writers, each a client that calls an operation, waits for its reply and
//! calls the next after a pause. An operation takes effect at one instant strictly inside its
//! interval, and the key's row is simulated in the order of those instants: a write of offset
//! `o` applies iff there is no row or the row holds at most `o`, else it is refused with the row's
//! offset; a read returns the row. Operations overlap freely (the writers' intervals are drawn
//! independently). An operation whose reply is lost has an unknown outcome (`"ret": null`): it
//! took effect at its instant or never, and its client moves on after a timeout.

use loadbearing_specs::first_write::trace::{FirstWriteEvent, Outcome, ReadRow, Statement, Writer};
use loadbearing_trace::{to_history_ndjson, to_ndjson, Key, Timed};

/// The shape of a generated history.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// Operations over all keys.
    pub operations: usize,
    /// Keys, each with `operations / keys` operations (the remainder on the first keys).
    pub keys: usize,
    /// Concurrent writers a key (at most 256: the vocabulary's `w1` … `w256`).
    pub writers: usize,
    /// Operations of unknown outcome, in percent.
    pub unknown_percent: u32,
    /// Reads among the operations, in percent (the rest are writes).
    pub read_percent: u32,
    pub seed: u64,
}

impl Shape {
    /// Benchmark (a): 10,000 operations by 8 writers on one key, 5 % of unknown outcome.
    pub const ONE_KEY: Shape = Shape {
        operations: 10_000,
        keys: 1,
        writers: 8,
        unknown_percent: 5,
        read_percent: 10,
        seed: 1,
    };

    /// Benchmark (b): 100,000 operations over 1,000 keys, 8 writers a key.
    pub const MANY_KEYS: Shape = Shape {
        operations: 100_000,
        keys: 1_000,
        writers: 8,
        unknown_percent: 5,
        read_percent: 10,
        seed: 2,
    };
}

/// A generated history: its operations (file order: by call) and the same operations as a
/// sequence, in the order they took effect (one that never did at its call).
pub struct Generated {
    pub history: Vec<Timed<FirstWriteEvent>>,
    /// In effect order, without times (one key's only: a sequence names no key).
    pub sequence: Vec<FirstWriteEvent>,
}

impl Generated {
    pub fn history_ndjson(&self) -> String {
        to_history_ndjson(&self.history)
    }

    pub fn sequence_ndjson(&self) -> String {
        to_ndjson(&self.sequence)
    }
}

/// One simulated operation before it is written out.
struct Simulated {
    op: Timed<FirstWriteEvent>,
}

/// Generates a linearizable history of `shape` (the same for the same shape and seed).
pub fn generate(shape: Shape) -> Generated {
    assert!(shape.keys > 0 && (1..=256).contains(&shape.writers));
    let mut rng = fastrand::Rng::with_seed(shape.seed);
    let mut all: Vec<Simulated> = Vec::with_capacity(shape.operations);
    for key in 0..shape.keys {
        let count =
            shape.operations / shape.keys + usize::from(key < shape.operations % shape.keys);
        let name = (shape.keys > 1).then(|| Key::Name(format!("k{key}")));
        simulate_key(&mut rng, shape, count, name, &mut all);
    }
    // Each key's operations were simulated in effect order (one that never took effect at the
    // instant it would have): for one key, that is the sequence.
    let sequence = if shape.keys == 1 {
        all.iter().map(|s| s.op.event.clone()).collect()
    } else {
        Vec::new()
    };
    all.sort_by_key(|s| (s.op.call, s.op.ret));
    let history: Vec<Timed<FirstWriteEvent>> = all
        .into_iter()
        .enumerate()
        .map(|(i, s)| Timed {
            line: i + 1,
            ..s.op
        })
        .collect();
    Generated { history, sequence }
}

fn simulate_key(
    rng: &mut fastrand::Rng,
    shape: Shape,
    count: usize,
    key: Option<Key>,
    out: &mut Vec<Simulated>,
) {
    // Each operation: (writer, call, effect instant, ret), effect strictly inside.
    struct Planned {
        writer: usize,
        call: u64,
        effect: u64,
        ret: Option<u64>,
        lands: bool,
        read: bool,
        offset: u64,
    }
    let mut next_call: Vec<u64> = (0..shape.writers).map(|_| rng.u64(0..20)).collect();
    let mut planned: Vec<Planned> = Vec::with_capacity(count);
    for i in 0..count {
        let writer = i % shape.writers;
        let call = next_call[writer];
        let effect = call + rng.u64(1..40);
        let ret = effect + rng.u64(1..40);
        let unknown = rng.u32(0..100) < shape.unknown_percent;
        let read = !unknown && rng.u32(0..100) < shape.read_percent;
        // The offsets a key's writers persist climb with time, with stragglers: a write
        // below the row is refused.
        let offset = 1_000 + call / 2 + rng.u64(0..60);
        planned.push(Planned {
            writer,
            call,
            effect,
            ret: (!unknown).then_some(ret),
            // An unanswered write landed, or never did.
            lands: !unknown || rng.bool(),
            read,
            offset,
        });
        // The client waits for the reply (or times out) and pauses.
        next_call[writer] = ret + if unknown { 40 } else { 0 } + rng.u64(0..20);
    }
    let mut order: Vec<usize> = (0..planned.len()).collect();
    order.sort_by_key(|&i| (planned[i].effect, i));
    let mut row: Option<u64> = None;
    for i in order {
        let p = &planned[i];
        let event = if p.read {
            FirstWriteEvent::Read(ReadRow::at(row))
        } else {
            let applies = row.is_none_or(|stored| stored <= p.offset);
            let (outcome, stored) = match (p.ret, applies) {
                (None, _) => (None, None),
                (Some(_), true) => (Some(Outcome::Applied), None),
                (Some(_), false) => (Some(Outcome::NotApplied), row),
            };
            if applies && p.lands {
                row = Some(p.offset);
            }
            FirstWriteEvent::Persist(Statement::new(
                Writer::model(p.writer),
                p.offset,
                outcome,
                stored,
            ))
        };
        out.push(Simulated {
            op: Timed {
                call: p.call,
                ret: p.ret,
                key: key.clone(),
                event,
                line: 0,
            },
        });
    }
}

/// Plants a stale write acknowledged: a refused write (its offset below a row some write that
/// returned before it was called had stored) now says it applied. The row only grows, so no
/// order of the history can take it: the history is no longer linearizable. Returns the line
/// of the planted operation, or `None` when the history has no such write.
pub fn plant_stale_write(history: &mut [Timed<FirstWriteEvent>]) -> Option<usize> {
    // Per key: the applied writes by return time, and the refused ones.
    for i in 0..history.len() {
        let FirstWriteEvent::Persist(s) = &history[i].event else {
            continue;
        };
        if s.outcome != Some(Outcome::NotApplied) {
            continue;
        }
        let (key, call, offset) = (history[i].key.clone(), history[i].call, s.offset);
        let stale = history.iter().any(|other| {
            other.key == key
                && other.ret.is_some_and(|r| r < call)
                && matches!(&other.event, FirstWriteEvent::Persist(w)
                    if w.outcome == Some(Outcome::Applied) && w.offset > offset)
        });
        if stale {
            if let FirstWriteEvent::Persist(s) = &mut history[i].event {
                s.outcome = Some(Outcome::Applied);
                s.stored = None;
            }
            return Some(history[i].line);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small(seed: u64) -> Shape {
        Shape {
            operations: 300,
            keys: 3,
            writers: 4,
            unknown_percent: 10,
            read_percent: 10,
            seed,
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_history() {
        assert_eq!(generate(small(3)).history, generate(small(3)).history);
        assert_ne!(generate(small(3)).history, generate(small(4)).history);
    }

    #[test]
    fn the_history_has_the_shape_asked_for() {
        let g = generate(small(5));
        assert_eq!(g.history.len(), 300);
        let unknown = g.history.iter().filter(|op| op.ret.is_none()).count();
        assert!((10..=60).contains(&unknown), "{unknown}");
        let mut keys: Vec<_> = g.history.iter().map(|op| op.key.clone()).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), 3);
        // Refused writes and overlapping operations both occur.
        assert!(g.history.iter().any(|op| matches!(&op.event,
            FirstWriteEvent::Persist(s) if s.outcome == Some(Outcome::NotApplied))));
        assert!(g
            .history
            .windows(2)
            .any(|w| w[0].key == w[1].key && w[0].ret.is_some_and(|r| r >= w[1].call)));
    }
}
