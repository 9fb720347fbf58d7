//! The first-write models from their definitions (docs/trace-format.md, the models' pages), as
//! the naive checker steps them, and histories generated the way a real store's clients would
//! log them.
//!
//! Written apart from the judge's faces (`AtomicRow`, the models' `Conform` adapters and the
//! fitting): offsets are the store's own, compared by order; writers are names; each write of
//! the compound (an `Update1` and the statements of its writer that follow it) is its own.

use loadbearing_specs::first_write::trace::{
    Deletion, FirstWriteEvent, Outcome, Payload, ReadRow, Statement, Writer,
};
use loadbearing_trace::{Key, Timed};

use super::Reference;

/// A key's row: none, a live row (its value when the write said it), or a tombstone.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Row {
    Absent,
    Live(u64, Option<String>),
    Tomb(u64),
}

impl Row {
    fn offset(&self) -> Option<u64> {
        match self {
            Row::Absent => None,
            Row::Live(o, _) | Row::Tomb(o) => Some(*o),
        }
    }
}

/// Whether a read could have found `row`: the same offset or both absent, and whatever else
/// it says (a value, live or tombstone) where the row is known.
fn read_fits(read: &ReadRow, row: &Row) -> bool {
    match (read, row) {
        (ReadRow::Absent, Row::Absent) => true,
        (
            ReadRow::Row {
                offset,
                value,
                tombstone,
            },
            Row::Live(o, v),
        ) => {
            offset == o
                && *tombstone != Some(true)
                && match (value, v) {
                    (Some(read), Some(held)) => read == held,
                    _ => true,
                }
        }
        (
            ReadRow::Row {
                offset,
                value,
                tombstone,
            },
            Row::Tomb(o),
        ) => offset == o && *tombstone != Some(false) && value.is_none(),
        _ => false,
    }
}

/// CasFirstWriteAtomic on a key's row: one conditional upsert (`IF offset <= o` when guarded,
/// none when last-write-wins), a delete (guarded: a tombstone keeping its offset; else the row
/// is gone), reads, and with `reap` a TTL that may empty the row at any time.
pub struct AtomicRowRef {
    pub guarded: bool,
    pub reap: bool,
}

impl AtomicRowRef {
    fn passes(&self, row: &Row, offset: u64) -> bool {
        match row.offset() {
            None => true,
            Some(held) => !self.guarded || held <= offset,
        }
    }

    /// The row a whole write leaves where it lands.
    fn lands(&self, event: &FirstWriteEvent, s: &Statement) -> Row {
        match event {
            FirstWriteEvent::Delete(_) if self.guarded => Row::Tomb(s.offset),
            FirstWriteEvent::Delete(_) => Row::Absent,
            _ => match &s.payload {
                Payload::Value(v) => Row::Live(s.offset, Some(v.clone())),
                Payload::Unsaid => Row::Live(s.offset, None),
                Payload::Tombstone => Row::Tomb(s.offset),
            },
        }
    }

    fn whole_write(event: &FirstWriteEvent) -> Option<&Statement> {
        match event {
            FirstWriteEvent::Persist(s) | FirstWriteEvent::Delete(Deletion(s)) => Some(s),
            _ => None,
        }
    }
}

impl Reference for AtomicRowRef {
    type Op = FirstWriteEvent;
    type State = Row;

    fn init(&self, _ops: &[&FirstWriteEvent]) -> Vec<Row> {
        vec![Row::Absent]
    }

    fn step(&self, row: &Row, event: &FirstWriteEvent) -> Vec<Row> {
        if let FirstWriteEvent::Read(read) = event {
            return if read_fits(read, row) {
                vec![row.clone()]
            } else {
                Vec::new()
            };
        }
        let Some(s) = Self::whole_write(event) else {
            // The compound's statements and a reported reap are no steps of the upsert.
            return Vec::new();
        };
        let passes = self.passes(row, s.offset);
        let fits = match s.outcome {
            None | Some(Outcome::NotSent) => return vec![row.clone()],
            Some(Outcome::Applied) => passes,
            Some(Outcome::NotApplied | Outcome::RowAbsent) => {
                !passes && s.stored.is_none_or(|stored| row.offset() == Some(stored))
            }
            Some(Outcome::GuardExpired) => false,
        };
        match (fits, s.outcome) {
            (false, _) => Vec::new(),
            (true, Some(Outcome::Applied)) => vec![self.lands(event, s)],
            (true, _) => vec![row.clone()],
        }
    }

    fn step_unknown(&self, row: &Row, event: &FirstWriteEvent) -> Vec<Row> {
        match Self::whole_write(event) {
            Some(s) if self.passes(row, s.offset) => vec![self.lands(event, s)],
            Some(_) => vec![row.clone()],
            None => Vec::new(),
        }
    }

    fn silent(&self, row: &Row) -> Vec<Row> {
        if self.reap && *row != Row::Absent {
            vec![Row::Absent]
        } else {
            Vec::new()
        }
    }
}

/// Where a write of the compound is: at its first UPDATE, its INSERT, its retried UPDATE, or
/// finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum At {
    Update,
    Insert,
    Retry,
    Finished,
}

/// One statement of the compound, with the write it belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteStep {
    /// The write: a writer's `Update1` and the statements of the same writer after it, until
    /// its next `Update1` (in call order).
    pub write: usize,
    /// The offset the write persists: its first statement's.
    pub offset: u64,
    pub event: FirstWriteEvent,
}

/// CasFirstWrite: each write's three statements on a row that holds an offset. `UPDATE … IF
/// offset <= o` (no condition unguarded) finds no row, applies, or is refused; `INSERT … IF NOT
/// EXISTS` (a plain upsert without it) claims an absent row or loses to one, and the loser
/// retries the UPDATE once (with `retry`); a `Repair` is the INSERT; a reported `ReapRow`
/// empties a present row (with `reap`). A statement names its write's offset, or it is none of
/// its steps.
pub struct CompoundRef {
    pub guarded: bool,
    pub insert_if_not_exists: bool,
    pub retry: bool,
    pub reap: bool,
    pub writes: usize,
}

/// The compound's state: the row (an offset, or none) and where each write is.
pub type CompoundState = (Option<u64>, Vec<At>);

impl CompoundRef {
    fn update_passes(&self, row: Option<u64>, offset: u64) -> bool {
        row.is_none_or(|held| !self.guarded || held <= offset)
    }

    /// The statement taking effect: its outcome in the compound and the state after it, or
    /// `None` when the write is not at this statement.
    fn take(&self, state: &CompoundState, step: &WriteStep) -> Option<(Outcome, CompoundState)> {
        let (row, at) = state;
        let mut next = state.clone();
        let o = step.offset;
        let here = at[step.write];
        let outcome = match &step.event {
            FirstWriteEvent::Update1(_) | FirstWriteEvent::RetryUpdate(_) => {
                let expected = if matches!(step.event, FirstWriteEvent::Update1(_)) {
                    At::Update
                } else {
                    At::Retry
                };
                if here != expected {
                    return None;
                }
                match row {
                    None if expected == At::Update => {
                        next.1[step.write] = At::Insert;
                        Outcome::RowAbsent
                    }
                    // The row vanished between the insert and the retry.
                    None => {
                        next.1[step.write] = At::Finished;
                        Outcome::RowAbsent
                    }
                    Some(_) if self.update_passes(*row, o) => {
                        next.0 = Some(o);
                        next.1[step.write] = At::Finished;
                        Outcome::Applied
                    }
                    Some(_) => {
                        next.1[step.write] = At::Finished;
                        Outcome::NotApplied
                    }
                }
            }
            FirstWriteEvent::Insert(_) | FirstWriteEvent::Repair(_) => {
                if here != At::Insert {
                    return None;
                }
                match row {
                    None => {
                        next.0 = Some(o);
                        next.1[step.write] = At::Finished;
                        Outcome::Applied
                    }
                    Some(_) if !self.insert_if_not_exists => {
                        next.0 = Some(o);
                        next.1[step.write] = At::Finished;
                        Outcome::Applied
                    }
                    Some(_) if self.retry => {
                        next.1[step.write] = At::Retry;
                        Outcome::NotApplied
                    }
                    Some(_) => {
                        next.1[step.write] = At::Finished;
                        Outcome::NotApplied
                    }
                }
            }
            _ => return None,
        };
        Some((outcome, next))
    }

    /// Whether a statement names its write's offset.
    fn names_its_offset(step: &WriteStep) -> bool {
        step.event
            .statement()
            .is_some_and(|s| s.offset == step.offset)
    }
}

impl Reference for CompoundRef {
    type Op = WriteStep;
    type State = CompoundState;

    fn init(&self, _ops: &[&WriteStep]) -> Vec<CompoundState> {
        vec![(None, vec![At::Update; self.writes])]
    }

    fn step(&self, state: &CompoundState, step: &WriteStep) -> Vec<CompoundState> {
        let row = state.0;
        match &step.event {
            FirstWriteEvent::Read(read) => {
                return if read.offset() == row {
                    vec![state.clone()]
                } else {
                    Vec::new()
                };
            }
            FirstWriteEvent::ReapRow {} => {
                return if self.reap && row.is_some() {
                    vec![(None, state.1.clone())]
                } else {
                    Vec::new()
                };
            }
            _ => {}
        }
        let Some(s) = step.event.statement() else {
            return Vec::new();
        };
        if !Self::names_its_offset(step) {
            return Vec::new();
        }
        match s.outcome {
            // Never sent: the write stops there; nothing changes.
            Some(Outcome::NotSent) => vec![state.clone()],
            // An insert that lost to a row whose guard expired: absent to the model.
            Some(Outcome::GuardExpired) => {
                if matches!(step.event, FirstWriteEvent::Insert(_)) && row.is_none() {
                    vec![state.clone()]
                } else {
                    Vec::new()
                }
            }
            Some(reported) => match self.take(state, step) {
                Some((outcome, next)) if outcome == reported => {
                    let stored_fits = outcome != Outcome::NotApplied
                        || s.stored.is_none_or(|stored| Some(stored) == row);
                    if stored_fits {
                        vec![next]
                    } else {
                        Vec::new()
                    }
                }
                _ => Vec::new(),
            },
            None => vec![state.clone()],
        }
    }

    fn step_unknown(&self, state: &CompoundState, step: &WriteStep) -> Vec<CompoundState> {
        if !Self::names_its_offset(step) {
            return Vec::new();
        }
        self.take(state, step)
            .map(|(_, next)| next)
            .into_iter()
            .collect()
    }
}

/// The compound's statements grouped into writes, in call order (each key apart): a writer's
/// `Update1` (or `Persist`, `Delete`) starts a write, its other statements continue its
/// current one; a statement with no write of its writer to continue starts one.
pub fn writes_of(history: &[Timed<FirstWriteEvent>]) -> (Vec<Timed<WriteStep>>, usize) {
    let mut order: Vec<usize> = (0..history.len()).collect();
    order.sort_by_key(|&i| (history[i].call, i));
    let mut current: Vec<(Writer, usize, u64)> = Vec::new();
    let mut writes = 0;
    let mut steps: Vec<Option<Timed<WriteStep>>> = vec![None; history.len()];
    for i in order {
        let op = &history[i];
        let (write, offset) = match op.event.statement() {
            None => (0, 0),
            Some(s) => {
                let starts = matches!(
                    op.event,
                    FirstWriteEvent::Update1(_)
                        | FirstWriteEvent::Persist(_)
                        | FirstWriteEvent::Delete(_)
                );
                match current.iter_mut().find(|(w, _, _)| *w == s.writer) {
                    Some((_, write, offset)) if !starts => (*write, *offset),
                    found => {
                        let started = (writes, s.offset);
                        writes += 1;
                        match found {
                            Some(slot) => *slot = (s.writer.clone(), started.0, started.1),
                            None => current.push((s.writer.clone(), started.0, started.1)),
                        }
                        started
                    }
                }
            }
        };
        steps[i] = Some(Timed {
            call: op.call,
            ret: op.ret,
            key: op.key.clone(),
            event: WriteStep {
                write,
                offset,
                event: op.event.clone(),
            },
            line: op.line,
        });
    }
    (
        steps.into_iter().map(|s| s.expect("every op")).collect(),
        writes.max(1),
    )
}

/// The shape of a generated first-write history.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub guarded: bool,
    pub reap: bool,
    /// The compound's statements (else the atomic upsert's whole writes and deletes).
    pub compound: bool,
    /// Values and tombstones on writes and reads (the row judge compares them).
    pub payloads: bool,
    /// Up to two keys.
    pub keys: bool,
}

/// What a client does next, when it is called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Doing {
    /// Nothing in progress: a new operation.
    Idle,
    /// The compound's next statement of its write in progress.
    Statement(At),
}

struct Client {
    doing: Doing,
    /// The write in progress: its key and offset.
    key: usize,
    offset: u64,
}

/// An operation simulated: its line in the making. Its outcome (and what a read found) is
/// filled in when it takes effect.
struct Made {
    op: Timed<FirstWriteEvent>,
    client: usize,
    /// The reply was lost: no outcome, whatever happened.
    lost: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Happens {
    /// The client calls its next statement.
    Call(usize),
    /// Operation `i` takes effect on its key's row.
    Effect(usize),
    /// A TTL empties key `k`'s row.
    Reap(usize),
}

/// A linearizable first-write history (2–5 clients, 3–14 operations, some of unknown outcome,
/// reads, deletes, values, tombstones, up to two keys). Simulated in time: each operation takes
/// effect on its key's row at one instant inside its interval, in the order of those instants
/// (the compound's next statement is called once the one before returns, and depends on what
/// it did); one whose reply is lost took effect at some later instant, or never, and its client
/// moves on after a timeout.
pub fn history(rng: &mut fastrand::Rng, shape: Shape) -> Vec<Timed<FirstWriteEvent>> {
    let clients = rng.usize(2..=5);
    let total = rng.usize(3..=14);
    let keys: Vec<Option<Key>> = if shape.keys && rng.bool() {
        vec![Some("a".into()), Some(Key::Number(2))]
    } else {
        vec![None]
    };
    let mut rows = vec![Row::Absent; keys.len()];
    let mut agenda = std::collections::BinaryHeap::new();
    let mut at_seq = 0u64;
    let mut schedule = |agenda: &mut std::collections::BinaryHeap<_>, time: u64, what: Happens| {
        at_seq += 1;
        agenda.push(std::cmp::Reverse((time, at_seq, what)));
    };
    for c in 0..clients {
        schedule(&mut agenda, rng.u64(0..4), Happens::Call(c));
    }
    if shape.reap {
        for _ in 0..rng.usize(0..3) {
            schedule(
                &mut agenda,
                rng.u64(0..30),
                Happens::Reap(rng.usize(0..keys.len())),
            );
        }
    }
    let mut people: Vec<Client> = (0..clients)
        .map(|_| Client {
            doing: Doing::Idle,
            key: 0,
            offset: 0,
        })
        .collect();
    let atomic = AtomicRowRef {
        guarded: shape.guarded,
        reap: shape.reap,
    };
    let compound = CompoundRef {
        guarded: shape.guarded,
        insert_if_not_exists: true,
        retry: true,
        reap: shape.reap,
        writes: 1,
    };
    let mut made: Vec<Made> = Vec::new();
    // The fitted compound holds at most 8 writes: past 7 (a wrong answer may start one more),
    // its clients only read.
    let mut writes = 0;
    while let Some(std::cmp::Reverse((now, _, what))) = agenda.pop() {
        match what {
            Happens::Call(c) => {
                if made.len() >= total {
                    continue;
                }
                let client = &mut people[c];
                let writer = Writer::named(format!("c{}", c + 1));
                let read = client.doing == Doing::Idle
                    && (rng.u8(0..10) < 3 || (shape.compound && writes >= 7));
                let event = if read {
                    client.key = rng.usize(0..keys.len());
                    FirstWriteEvent::Read(ReadRow::Absent)
                } else {
                    if client.doing == Doing::Idle {
                        writes += 1;
                        client.key = rng.usize(0..keys.len());
                        client.offset = 100 * rng.u64(1..=4);
                        client.doing = Doing::Statement(At::Update);
                    }
                    let statement = Statement::new(writer, client.offset, None, None);
                    match (shape.compound, client.doing) {
                        (true, Doing::Statement(At::Insert)) => FirstWriteEvent::Insert(statement),
                        (true, Doing::Statement(At::Retry)) => {
                            FirstWriteEvent::RetryUpdate(statement)
                        }
                        (true, _) => FirstWriteEvent::Update1(statement),
                        (false, _) if shape.payloads && rng.u8(0..5) == 0 => {
                            FirstWriteEvent::Delete(Deletion(statement.writing(Payload::Tombstone)))
                        }
                        (false, _) => FirstWriteEvent::Persist(statement.writing(
                            match (shape.payloads, rng.u8(0..8)) {
                                (false, _) => Payload::Unsaid,
                                (true, 0) => Payload::Tombstone,
                                (true, n) => Payload::Value(format!("v{}", n % 3)),
                            },
                        )),
                    }
                };
                let lost = !read && rng.u8(0..6) == 0;
                let effect = now + rng.u64(0..4);
                let ret = effect + rng.u64(0..4);
                let i = made.len();
                made.push(Made {
                    op: Timed {
                        call: now,
                        ret: (!lost).then_some(ret),
                        key: keys[client.key].clone(),
                        event,
                        line: 0,
                    },
                    client: c,
                    lost,
                });
                if !lost {
                    schedule(&mut agenda, effect, Happens::Effect(i));
                } else {
                    // Landed late, or never; the client gives up on the write after a timeout.
                    if rng.bool() {
                        schedule(&mut agenda, effect + rng.u64(0..12), Happens::Effect(i));
                    }
                    client.doing = Doing::Idle;
                    schedule(&mut agenda, ret + 4 + rng.u64(0..4), Happens::Call(c));
                }
            }
            Happens::Effect(i) => {
                let key = keys
                    .iter()
                    .position(|k| *k == made[i].op.key)
                    .expect("a generated key");
                let row = rows[key].clone();
                let m = &mut made[i];
                let event = &mut m.op.event;
                if let FirstWriteEvent::Read(read) = event {
                    *read = what_a_read_says(rng, &row, shape.payloads);
                } else if shape.compound {
                    let s = event.statement().expect("a statement").clone();
                    let step = WriteStep {
                        write: 0,
                        offset: s.offset,
                        event: event.clone(),
                    };
                    let state: CompoundState = (row.offset(), vec![step_at(&step.event)]);
                    let (outcome, next) = compound.take(&state, &step).expect("called in turn");
                    rows[key] = next.0.map_or(Row::Absent, |o| Row::Live(o, None));
                    if !m.lost {
                        set_outcome(rng, event, outcome, row.offset());
                        people[m.client].doing = match next.1[0] {
                            At::Finished => Doing::Idle,
                            at => Doing::Statement(at),
                        };
                    }
                } else {
                    let s = AtomicRowRef::whole_write(event)
                        .expect("a whole write")
                        .clone();
                    let passes = atomic.passes(&row, s.offset);
                    if passes {
                        rows[key] = atomic.lands(event, &s);
                    }
                    if !m.lost {
                        let outcome = if passes {
                            Outcome::Applied
                        } else {
                            Outcome::NotApplied
                        };
                        set_outcome(rng, event, outcome, row.offset());
                        people[m.client].doing = Doing::Idle;
                    }
                }
                if let Some(ret) = made[i].op.ret {
                    let c = made[i].client;
                    schedule(&mut agenda, ret + rng.u64(0..3), Happens::Call(c));
                }
            }
            Happens::Reap(key) => {
                if rows[key] != Row::Absent {
                    rows[key] = Row::Absent;
                    if shape.compound {
                        // The compound reports the expired row it found.
                        made.push(Made {
                            op: Timed {
                                call: now,
                                ret: Some(now),
                                key: keys[key].clone(),
                                event: FirstWriteEvent::ReapRow {},
                                line: 0,
                            },
                            client: usize::MAX,
                            lost: false,
                        });
                    }
                }
            }
        }
    }
    let mut ops: Vec<Timed<FirstWriteEvent>> = made.into_iter().map(|m| m.op).collect();
    ops.sort_by_key(|op| op.call);
    for (i, op) in ops.iter_mut().enumerate() {
        op.line = i + 1;
    }
    ops
}

/// Where the compound's write is when this statement of it is called.
fn step_at(event: &FirstWriteEvent) -> At {
    match event {
        FirstWriteEvent::Insert(_) | FirstWriteEvent::Repair(_) => At::Insert,
        FirstWriteEvent::RetryUpdate(_) => At::Retry,
        _ => At::Update,
    }
}

/// A read of `row`, saying its value and whether it is a tombstone when payloads are on (at
/// times only its offset).
fn what_a_read_says(rng: &mut fastrand::Rng, row: &Row, payloads: bool) -> ReadRow {
    let whole = payloads && rng.u8(0..4) > 0;
    match row {
        Row::Absent => ReadRow::Absent,
        Row::Live(o, v) => ReadRow::Row {
            offset: *o,
            value: if whole { v.clone() } else { None },
            tombstone: (whole && rng.bool()).then_some(false),
        },
        Row::Tomb(o) => ReadRow::Row {
            offset: *o,
            value: None,
            tombstone: whole.then_some(true),
        },
    }
}

/// The outcome a statement reports, and at times the stored offset a refusal names.
fn set_outcome(
    rng: &mut fastrand::Rng,
    event: &mut FirstWriteEvent,
    outcome: Outcome,
    row: Option<u64>,
) {
    let s = event.statement_mut().expect("a statement");
    s.outcome = Some(outcome);
    s.stored = (outcome == Outcome::NotApplied && rng.bool())
        .then_some(row)
        .flatten();
}

/// One wrong answer, as a broken store would give: an operation with a known outcome reports
/// another outcome, another stored offset, or a read another row. The history may still be
/// linearizable (another order may explain the answer): the oracle decides.
pub fn perturb(rng: &mut fastrand::Rng, history: &mut [Timed<FirstWriteEvent>], payloads: bool) {
    let known: Vec<usize> = (0..history.len())
        .filter(|&i| history[i].ret.is_some())
        .collect();
    let Some(&i) = known.get(rng.usize(0..known.len().max(1))) else {
        return;
    };
    let offsets: Vec<u64> = history
        .iter()
        .filter_map(|op| op.event.statement().map(|s| s.offset))
        .collect();
    let other_offset = |rng: &mut fastrand::Rng| {
        offsets
            .get(rng.usize(0..offsets.len().max(1)))
            .copied()
            .unwrap_or(100)
            + 100 * rng.u64(0..2)
    };
    match &mut history[i].event {
        FirstWriteEvent::Read(read) => {
            *read = match (&*read, rng.u8(0..3)) {
                (ReadRow::Absent, _) | (_, 0) => ReadRow::at(Some(other_offset(rng))),
                (ReadRow::Row { offset, .. }, 1) if payloads => ReadRow::Row {
                    offset: *offset,
                    value: Some("v9".into()),
                    tombstone: None,
                },
                _ => ReadRow::Absent,
            };
        }
        FirstWriteEvent::ReapRow {} => {}
        // A client out of step with its protocol: the compound's statement reported as
        // another of its statements.
        FirstWriteEvent::Update1(s)
        | FirstWriteEvent::Insert(s)
        | FirstWriteEvent::RetryUpdate(s)
        | FirstWriteEvent::Repair(s)
            if rng.u8(0..4) == 0 =>
        {
            let s = s.clone();
            let kinds: [fn(Statement) -> FirstWriteEvent; 3] = [
                FirstWriteEvent::Update1,
                FirstWriteEvent::Insert,
                FirstWriteEvent::RetryUpdate,
            ];
            history[i].event = kinds[rng.usize(0..3)](s);
        }
        event => {
            let s = event.statement_mut().expect("a statement");
            match rng.u8(0..4) {
                0 => s.stored = Some(other_offset(rng)),
                // The statement logged with another offset than its write's.
                1 => s.offset = other_offset(rng),
                _ => {
                    let outcomes = [
                        Outcome::Applied,
                        Outcome::NotApplied,
                        Outcome::RowAbsent,
                        Outcome::NotSent,
                    ];
                    let now = s.outcome;
                    let others: Vec<Outcome> =
                        outcomes.into_iter().filter(|o| Some(*o) != now).collect();
                    s.outcome = Some(others[rng.usize(0..others.len())]);
                    if s.outcome != Some(Outcome::NotApplied) {
                        s.stored = None;
                    }
                }
            }
        }
    }
}
