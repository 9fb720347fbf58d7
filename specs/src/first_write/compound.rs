#![doc = include_str!("compound.md")]

use std::fmt;
use std::hash::{Hash, Hasher};

use loadbearing_refinement::Shown;
use loadbearing_refinement::{MappedRefinement, Refinement, Spec, Symmetry, Variables};
use loadbearing_refinement::{Model, Property};

use crate::first_write::atomic::{AtomicPc, AtomicState, CasFirstWriteAtomic};
use crate::first_write::{all_offsets, sorting, FirstWriteParams};
use crate::infra::knobs::{Flag, Knob, KnobError, Params, Resolved};
use crate::{Configured, Guard, Under};

pub use crate::first_write::{Row, MAX_WRITERS};

/// The Cassandra backends' steps the compound spells out.
const CAS_STEP: &str =
    "OwnerFold and ZombieWrite: each write's offset compare-and-set, taken as one step";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Pc {
    U1,
    Ins,
    U2,
    Done,
    Conflict,
}

impl fmt::Display for Pc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Pc::U1 => "u1",
            Pc::Ins => "ins",
            Pc::U2 => "u2",
            Pc::Done => "done",
            Pc::Conflict => "conflict",
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CasFwState {
    pub stored: Row,
    pub pc: [Pc; MAX_WRITERS],
    pub off: [u8; MAX_WRITERS],
    pub corrupted: bool,
    /// Bit w: writer w saw the row vanish between its insert and its retry.
    pub spurious: u8,
    /// History: a writer gave up with a conflict although no higher offset was stored (its
    /// write was lost, not refused).
    pub unjustified: bool,
}

impl CasFwState {
    /// Every field, packed losslessly into two words: distinct states give distinct words.
    fn words(&self) -> [u64; 2] {
        let pcs = self
            .pc
            .iter()
            .enumerate()
            .fold(0u64, |bits, (w, &pc)| bits | (pc as u64) << (3 * w));
        let rest = pcs
            | (self.stored.present as u64) << 24
            | (self.stored.offset as u64) << 25
            | (self.corrupted as u64) << 33
            | (self.spurious as u64) << 34
            | (self.unjustified as u64) << 42;
        [u64::from_le_bytes(self.off), rest]
    }

    /// The initial state in which writer w persists `off[w]`: no row, every writer at its first
    /// UPDATE.
    pub fn initial(off: [u8; MAX_WRITERS]) -> CasFwState {
        CasFwState {
            stored: Row::ABSENT,
            pc: [Pc::U1; MAX_WRITERS],
            off,
            corrupted: false,
            spurious: 0,
            unjustified: false,
        }
    }
}

/// A state is fingerprinted at every successor: two words, one write each, where `derive(Hash)`
/// wrote each field, and each array's length, on its own.
impl Hash for CasFwState {
    fn hash<H: Hasher>(&self, hasher: &mut H) {
        let [a, b] = self.words();
        hasher.write_u64(a);
        hasher.write_u64(b);
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum CasFwAction {
    Update1(u8),
    Insert(u8),
    RetryUpdate(u8),
    ReapRow,
}

impl fmt::Debug for CasFwAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CasFwAction::Update1(w) => write!(f, "Update1(w{})", w + 1),
            CasFwAction::Insert(w) => write!(f, "Insert(w{})", w + 1),
            CasFwAction::RetryUpdate(w) => write!(f, "RetryUpdate(w{})", w + 1),
            CasFwAction::ReapRow => write!(f, "ReapRow"),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CasFirstWrite {
    pub writers: u8,
    pub max_offset: u8,
    pub guarded: bool,
    pub reap: bool,
    /// The INSERT carries `IF NOT EXISTS`; without it, it overwrites a row that appeared.
    pub insert_if_not_exists: bool,
    /// A writer that lost the insert race retries the conditional UPDATE once.
    pub retry: bool,
    /// The atomic spec the compound must refine guards its Persist: normally as `guarded`; set
    /// apart only to show that `RefinesAtomic` can fail (an ungated compound, a guarded spec).
    pub spec_guarded: bool,
}

impl CasFirstWrite {
    fn update_applies(&self, stored: Row, offset: u8) -> bool {
        !self.guarded || stored.offset <= offset
    }

    /// The present-row branch of Update1 and RetryUpdate.
    fn update_present(&self, s: &mut CasFwState, w: usize) {
        let o = s.off[w];
        if self.update_applies(s.stored, o) {
            s.corrupted |= o < s.stored.offset;
            s.stored = Row::present(o);
            s.pc[w] = Pc::Done;
        } else {
            s.unjustified |= s.stored.offset <= o;
            s.pc[w] = Pc::Conflict;
        }
    }

    fn atomic(&self) -> CasFirstWriteAtomic {
        CasFirstWriteAtomic {
            writers: self.writers,
            max_offset: self.max_offset,
            guarded: self.spec_guarded,
            reap: self.reap,
        }
    }
}

impl Model for CasFirstWrite {
    type State = CasFwState;
    type Action = CasFwAction;

    fn init_states(&self) -> Vec<CasFwState> {
        all_offsets(self.writers, self.max_offset)
            .into_iter()
            .map(CasFwState::initial)
            .collect()
    }

    fn actions(&self, s: &CasFwState, actions: &mut Vec<CasFwAction>) {
        for w in 0..self.writers {
            match s.pc[w as usize] {
                Pc::U1 => actions.push(CasFwAction::Update1(w)),
                Pc::Ins => actions.push(CasFwAction::Insert(w)),
                Pc::U2 => actions.push(CasFwAction::RetryUpdate(w)),
                Pc::Done | Pc::Conflict => {}
            }
        }
        if self.reap && s.stored.present {
            actions.push(CasFwAction::ReapRow);
        }
    }

    fn next_state(&self, s: &CasFwState, action: CasFwAction) -> Option<CasFwState> {
        let mut next = s.clone();
        match action {
            CasFwAction::Update1(w) => {
                let w = w as usize;
                if s.stored.present {
                    self.update_present(&mut next, w);
                } else {
                    next.pc[w] = Pc::Ins;
                }
            }
            CasFwAction::Insert(w) => {
                let w = w as usize;
                if s.stored.present && !self.insert_if_not_exists {
                    // A plain INSERT is an upsert: it lands whatever the row holds.
                    let o = s.off[w];
                    next.corrupted |= o < s.stored.offset;
                    next.stored = Row::present(o);
                    next.pc[w] = Pc::Done;
                } else if s.stored.present && self.retry {
                    next.pc[w] = Pc::U2;
                } else if s.stored.present {
                    next.unjustified |= s.stored.offset <= s.off[w];
                    next.pc[w] = Pc::Conflict;
                } else {
                    next.stored = Row::present(s.off[w]);
                    next.pc[w] = Pc::Done;
                }
            }
            CasFwAction::RetryUpdate(w) => {
                let w = w as usize;
                if s.stored.present {
                    self.update_present(&mut next, w);
                } else {
                    // The row vanished between the insert and the retry.
                    next.spurious |= 1 << w;
                    next.pc[w] = Pc::Conflict;
                }
            }
            CasFwAction::ReapRow => next.stored = Row::ABSENT,
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("INV_NoStaleOverwrite", |_, s: &CasFwState| !s.corrupted),
            Property::always("INV_NeverSpurious", |_, s: &CasFwState| s.spurious == 0),
            Property::always("INV_NoUnjustifiedConflict", |_, s: &CasFwState| {
                !s.unjustified
            }),
            Property::always("TypeOK", |m: &Self, s: &CasFwState| {
                s.stored.offset <= m.max_offset
                    && s.off[..m.writers as usize]
                        .iter()
                        .all(|&o| o <= m.max_offset)
            }),
            Property::sometimes("SomeWriterLands", |m: &Self, s: &CasFwState| {
                s.pc[..m.writers as usize].contains(&Pc::Done)
            }),
        ]
    }
}

/// Writer `w`'s local state (pc, offset, spurious flag) as one number: nothing else in a
/// state names a writer.
fn local_state(s: &CasFwState, w: usize) -> u32 {
    (s.pc[w] as u32) << 16 | (s.off[w] as u32) << 8 | (s.spurious as u32 >> w) & 1
}

impl Spec for CasFirstWrite {
    /// The writers are interchangeable: each runs the same protocol on its own offset, the
    /// initial states assign every offset to every writer, and every property quantifies over
    /// all of them. (Fairness is per writer, so symmetry is for safety and refinement only.)
    fn symmetries(&self) -> Vec<Symmetry> {
        vec![Symmetry {
            name: "Writers",
            size: self.writers as usize,
        }]
    }

    fn permute(&self, s: &CasFwState, _symmetry: usize, to: &[u8]) -> CasFwState {
        let mut image = s.clone();
        image.spurious = 0;
        for (w, &t) in to.iter().enumerate() {
            let t = t as usize;
            image.pc[t] = s.pc[w];
            image.off[t] = s.off[w];
            image.spurious |= ((s.spurious >> w) & 1) << t;
        }
        image
    }

    /// The writers sorted by their local state (pc, offset, spurious flag): nothing else in a
    /// state names a writer, so this is one representative per orbit.
    fn canonical(&self, s: &CasFwState, symmetry: usize) -> Option<CasFwState> {
        let to = sorting(self.writers, |w| local_state(s, w));
        Some(self.permute(s, symmetry, &to))
    }

    fn orbit_size(&self, s: &CasFwState, _symmetry: usize) -> Option<u64> {
        Some(crate::first_write::orbit_size(self.writers, |w| {
            local_state(s, w)
        }))
    }

    fn variables(&self, s: &CasFwState) -> Variables {
        let writers = 0..self.writers as usize;
        let pc = writers
            .clone()
            .map(|w| Shown::name(format!("w{}:{}", w + 1, s.pc[w])));
        let off = writers
            .clone()
            .map(|w| Shown::name(format!("w{}:{}", w + 1, s.off[w])));
        let spurious = writers
            .filter(|w| s.spurious & (1 << w) != 0)
            .map(|w| Shown::name(format!("w{}", w + 1)));
        vec![
            ("stored", Shown::name(s.stored)),
            ("pc", Shown::list(pc)),
            ("off", Shown::list(off)),
            ("corrupted", s.corrupted.into()),
            ("spurious", Shown::set(spurious)),
            ("unjustified", s.unjustified.into()),
        ]
    }

    fn refinements(&self) -> Vec<Box<dyn Refinement<CasFwState>>> {
        // In-flight steps map to stutters; a spurious conflict maps to GiveUp.
        vec![Box::new(MappedRefinement::new(
            "RefinesAtomic",
            self.atomic(),
            |s: &CasFwState| AtomicState {
                stored: s.stored,
                pc: s.pc.map(|pc| match pc {
                    Pc::Done | Pc::Conflict => AtomicPc::Done,
                    Pc::U1 | Pc::Ins | Pc::U2 => AtomicPc::Todo,
                }),
                off: s.off,
                corrupted: s.corrupted,
            },
        ))]
    }

    fn actor(&self, action: &CasFwAction) -> String {
        match action {
            CasFwAction::Update1(w) | CasFwAction::Insert(w) | CasFwAction::RetryUpdate(w) => {
                format!("writer w{}", w + 1)
            }
            CasFwAction::ReapRow => "ttl".into(),
        }
    }
}

impl Configured for CasFirstWrite {
    const NAME: &'static str = "CasFirstWrite";
    const DOC: &'static str = include_str!("compound.md");
    const UNDER: &'static [Under] = &[
        Under {
            backend: "Cassandra",
            step: CAS_STEP,
        },
        Under {
            backend: "Cassandra835",
            step: CAS_STEP,
        },
    ];
    type Params = CasFwParams;
    const GUARDS: &'static [Guard] = &[
        Guard::off("offset condition", FirstWriteParams::GUARDED),
        Guard::off(
            "insert-if-not-exists",
            FirstWriteParams::INSERT_IF_NOT_EXISTS,
        ),
        Guard::off("retry", FirstWriteParams::RETRY),
    ];

    fn build(params: CasFwParams) -> Self {
        let CasFwParams {
            first_write: p,
            spec_guarded,
        } = params;
        CasFirstWrite {
            writers: p.writers,
            max_offset: p.max_offset,
            guarded: p.guarded,
            reap: p.reap,
            insert_if_not_exists: p.insert_if_not_exists,
            retry: p.retry,
            spec_guarded,
        }
    }
}

/// The compound's constants: the first-write ones and the guard of the atomic spec it refines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CasFwParams {
    pub first_write: FirstWriteParams,
    pub spec_guarded: bool,
}

impl CasFwParams {
    pub const SPEC_GUARDED: Flag = Flag::following(
        "SpecGuarded",
        FirstWriteParams::GUARDED,
        "the atomic spec RefinesAtomic maps onto guards its Persist",
    );
}

impl Params for CasFwParams {
    const KNOBS: &'static [Knob] = &[
        FirstWriteParams::WRITERS.knob(),
        FirstWriteParams::MAX_OFFSET.knob(),
        FirstWriteParams::GUARDED.knob(),
        FirstWriteParams::REAP.knob(),
        FirstWriteParams::INSERT_IF_NOT_EXISTS.knob(),
        FirstWriteParams::RETRY.knob(),
        Self::SPEC_GUARDED.knob(),
    ];

    fn from_resolved(k: &Resolved) -> Result<Self, KnobError> {
        Ok(CasFwParams {
            first_write: FirstWriteParams::from_resolved(k)?,
            spec_guarded: k.get(Self::SPEC_GUARDED)?,
        })
    }
}

/// Conformance: the compound reports each statement (`trace::FirstWriteEvent`), with its
/// outcome `applied`, `not_applied` (and the `stored` offset that refused it) or `row_absent`.
impl loadbearing_trace::Conform for CasFirstWrite {
    type Event = FirstWriteEvent;
    type Contradiction = FirstWriteContradiction;

    fn initial_candidates(&self, events: &[FirstWriteEvent]) -> Vec<CasFwState> {
        offset_choices(events)
            .into_iter()
            .map(CasFwState::initial)
            .collect()
    }

    fn reports(&self, action: &CasFwAction, event: &FirstWriteEvent) -> bool {
        if self.is_stutter(event) {
            return false;
        }
        let by = |s: &Statement, w: &u8| s.writer.index() == Some(*w as usize);
        match (action, event) {
            (CasFwAction::Update1(w), FirstWriteEvent::Update1(s))
            | (CasFwAction::Insert(w), FirstWriteEvent::Insert(s))
            // The repair claims a row whose guard expired: to the model the row is absent,
            // and the claim is its first write.
            | (CasFwAction::Insert(w), FirstWriteEvent::Repair(s))
            | (CasFwAction::RetryUpdate(w), FirstWriteEvent::RetryUpdate(s)) => by(s, w),
            (CasFwAction::ReapRow, FirstWriteEvent::ReapRow {}) => true,
            // The atomic upsert and delete are not statements of the compound; a read is a
            // stutter.
            (
                _,
                FirstWriteEvent::Persist(_) | FirstWriteEvent::Delete(_) | FirstWriteEvent::Read(_),
            ) => false,
            (
                CasFwAction::Update1(_)
                | CasFwAction::Insert(_)
                | CasFwAction::RetryUpdate(_)
                | CasFwAction::ReapRow,
                FirstWriteEvent::Update1(_)
                | FirstWriteEvent::Insert(_)
                | FirstWriteEvent::Repair(_)
                | FirstWriteEvent::RetryUpdate(_)
                | FirstWriteEvent::ReapRow {},
            ) => false,
        }
    }

    /// The writer's offset identifies its step on every statement, the unresolved and the
    /// unsent ones too; the outcome is compared where there is one.
    fn observe(
        &self,
        before: &CasFwState,
        _after: &CasFwState,
        event: &FirstWriteEvent,
    ) -> Result<(), FirstWriteContradiction> {
        let (insert, s) = match event {
            FirstWriteEvent::ReapRow {} => return Ok(()),
            FirstWriteEvent::Read(read) => {
                return crate::first_write::read_matches(read.offset(), before.stored)
            }
            FirstWriteEvent::Insert(s) | FirstWriteEvent::Repair(s) => (true, s),
            FirstWriteEvent::Update1(s)
            | FirstWriteEvent::RetryUpdate(s)
            | FirstWriteEvent::Persist(s)
            | FirstWriteEvent::Delete(Deletion(s)) => (false, s),
        };
        let offset = writer_offset(&before.off, s)?;
        if event.is_unresolved() || event.not_sent() {
            // Unresolved (its step is placed where the model allows it) or never sent (the
            // writer stopped there): nothing more to compare.
            return Ok(());
        }
        let row = before.stored;
        if event.is_guard_expired() && !row.present {
            // The insert lost to a row whose guard expired: absent to the model, a stutter.
            return Ok(());
        }
        let expected = match (insert, row.present) {
            (true, false) => Outcome::Applied,
            (false, false) => Outcome::RowAbsent,
            (true, true) if self.insert_if_not_exists => Outcome::NotApplied,
            (true, true) => Outcome::Applied,
            (false, true) if self.update_applies(row, offset) => Outcome::Applied,
            (false, true) => Outcome::NotApplied,
        };
        let got = s.outcome.ok_or(FirstWriteContradiction::NoOutcome)?;
        if got != expected {
            return Err(FirstWriteContradiction::Outcome {
                event: event.clone(),
                offset,
                row,
                got,
                expected,
            });
        }
        match s.stored {
            Some(stored) if got == Outcome::NotApplied && stored != row.offset as u64 => {
                Err(FirstWriteContradiction::StoredOffset { stored, row })
            }
            _ => Ok(()),
        }
    }

    /// A statement never sent ends its writer's compound there; an unresolved one and a read
    /// report no step.
    fn is_stutter(&self, event: &FirstWriteEvent) -> bool {
        event.is_stutter() || event.not_sent() || event.is_guard_expired()
    }

    /// A statement sent and never answered may have taken effect at any point since.
    fn unresolved(&self, events: &[FirstWriteEvent]) -> Vec<CasFwAction> {
        events
            .iter()
            .filter(|e| e.is_unresolved())
            .filter_map(|e| {
                let s = e.statement()?;
                let w = u8::try_from(s.writer.index()?).ok()?;
                match e {
                    FirstWriteEvent::Update1(_) => Some(CasFwAction::Update1(w)),
                    FirstWriteEvent::Insert(_) | FirstWriteEvent::Repair(_) => {
                        Some(CasFwAction::Insert(w))
                    }
                    FirstWriteEvent::RetryUpdate(_) => Some(CasFwAction::RetryUpdate(w)),
                    FirstWriteEvent::Persist(_)
                    | FirstWriteEvent::Delete(_)
                    | FirstWriteEvent::ReapRow {}
                    | FirstWriteEvent::Read(_) => None,
                }
            })
            .collect()
    }

    fn beyond(&self, events: &[FirstWriteEvent]) -> Option<loadbearing_trace::Beyond> {
        crate::first_write::beyond(self.writers, self.max_offset, events)
    }
}

use crate::first_write::contradiction::writer_offset;
use crate::first_write::contradiction::FirstWriteContradiction;
use crate::first_write::trace::{offset_choices, Deletion, FirstWriteEvent, Outcome, Statement};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::first_write::trace::ReadRow;
    use loadbearing_trace::{validate, Limits};

    fn compound() -> CasFirstWrite {
        CasFirstWrite {
            writers: 2,
            max_offset: 5,
            guarded: true,
            reap: false,
            insert_if_not_exists: true,
            retry: true,
            spec_guarded: true,
        }
    }

    fn statement(w: u8, offset: u64, outcome: Option<Outcome>) -> Statement {
        Statement::new(
            crate::first_write::trace::Writer::model(w as usize),
            offset,
            outcome,
            None,
        )
    }

    fn diverges(events: &[FirstWriteEvent]) -> Option<String> {
        validate(&compound(), events, Limits::default())
            .divergence
            .map(|d| d.text())
    }

    /// w1's first write lands; w2's first UPDATE is sent and never answered, or never sent.
    fn history(w2: Option<Outcome>, read: u64) -> Vec<FirstWriteEvent> {
        vec![
            FirstWriteEvent::Update1(statement(0, 2, Some(Outcome::RowAbsent))),
            FirstWriteEvent::Insert(statement(0, 2, Some(Outcome::Applied))),
            FirstWriteEvent::Update1(statement(1, 4, w2)),
            FirstWriteEvent::Read(ReadRow::at(Some(read))),
        ]
    }

    #[test]
    fn an_unresolved_statement_of_the_compound_may_have_landed_or_not() {
        assert_eq!(diverges(&history(None, 4)), None, "it landed");
        assert_eq!(diverges(&history(None, 2)), None, "it did not");
        let why = diverges(&history(None, 3)).expect("nobody wrote 3");
        assert!(why.contains("the read found Present(3)"), "{why}");
    }

    #[test]
    fn a_statement_never_sent_ends_its_writer_and_must_not_land() {
        assert_eq!(diverges(&history(Some(Outcome::NotSent), 2)), None);
        let why = diverges(&history(Some(Outcome::NotSent), 4)).expect("it was never sent");
        assert!(why.contains("the model's row holds Present(2)"), "{why}");
    }

    /// A state with every field drawn from `next`, over each field's whole range.
    fn drawn(next: &mut impl FnMut() -> u64) -> CasFwState {
        let pcs = [Pc::U1, Pc::Ins, Pc::U2, Pc::Done, Pc::Conflict];
        let mut pc = [Pc::U1; MAX_WRITERS];
        let mut off = [0; MAX_WRITERS];
        for w in 0..MAX_WRITERS {
            pc[w] = pcs[next() as usize % pcs.len()];
            off[w] = next() as u8;
        }
        CasFwState {
            stored: Row {
                present: next() % 2 == 1,
                offset: next() as u8,
            },
            pc,
            off,
            corrupted: next() % 2 == 1,
            spurious: next() as u8,
            unjustified: next() % 2 == 1,
        }
    }

    #[test]
    fn states_that_differ_in_any_field_hash_from_different_words() {
        // xorshift: the same draws on every run.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..20_000 {
            let a = drawn(&mut next);
            // Each field of `a` in turn takes the value it has in another drawn state.
            let b = drawn(&mut next);
            let mut changed: Vec<CasFwState> = Vec::new();
            let mut with = |change: &dyn Fn(&mut CasFwState)| {
                let mut c = a.clone();
                change(&mut c);
                changed.push(c);
            };
            with(&|c| c.stored.present = b.stored.present);
            with(&|c| c.stored.offset = b.stored.offset);
            with(&|c| c.corrupted = b.corrupted);
            with(&|c| c.spurious = b.spurious);
            with(&|c| c.unjustified = b.unjustified);
            for w in 0..MAX_WRITERS {
                with(&|c| c.pc[w] = b.pc[w]);
                with(&|c| c.off[w] = b.off[w]);
            }
            for c in changed {
                assert_eq!(c == a, c.words() == a.words(), "{a:?} and {c:?}");
            }
        }
    }
}
