//! The visited set: each state's 63-bit fingerprint with a 64-bit value (its BFS parent's
//! fingerprint, or in a search that builds the liveness graph the state's id and its parent's).
//!
//! Open addressing with linear probing over 16-byte slots, doubled when 90% full, so it holds
//! between 45% and 90% of its slots: 17.8 to 35.6 bytes per state. (Grown by half it held 60 to
//! 90%, but a search then spent a tenth of its time growing it, and its lookups probed further.)
//! The table grows where it lies ([`ZeroedTable`]), its entries moved within it: a search
//! writes the pages of its last table only, not of every table before it too.
//!
//! Every thread of a search inserts into the one table at once ([`Visited::claim`]): the slots
//! are atomics, a new fingerprint takes an empty slot by compare-and-swap, and of the states of
//! a batch that reach the same fingerprint the one with the least claim (the first in frontier
//! order) keeps it, whichever thread came first. So the parent kept, and every counterexample,
//! is the same on every thread count, and no thread waits for another to insert.
//!
//! Fingerprints are 63-bit: the top bit of a slot's fingerprint marks it `PENDING`, claimed in
//! the batch under way and not yet settled. A lookup can then claim a new state in the same
//! visit that finds it new ([`Visited::claim_or_find`]), and still tell it from a state the
//! table held before the batch.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use rayon::prelude::*;

use crate::zeroed::{ZeroValid, ZeroedTable};

/// Fingerprint 0 marks an empty slot; `fingerprint()` never returns it.
const EMPTY: u64 = 0;
/// Set in a slot's fingerprint while its claims are pending; `fingerprint()` never sets it.
const PENDING: u64 = 1 << 63;

/// The value of a slot no claim has reached: any claim is less.
const UNCLAIMED: u64 = u64::MAX;
const MAX_LOAD: f64 = 0.9;
/// Old slots a task moves while the table grows: a few hundred kilobytes, many tasks a core.
const MOVE_SEGMENT: usize = 1 << 14;
const GROWTH: f64 = 2.0;

/// Relaxed atomics throughout: the phases that write a slot (claims, then settling the
/// winners) and those that read it are separated by the joins of the search's parallel steps.
///
/// The value is kept complemented (`!value`), so a slot of zeros is empty and unclaimed and a
/// table fresh from the kernel needs no writing before use; the least claim is then the
/// greatest complement.
#[repr(C, align(16))]
struct Slot {
    fp: AtomicU64,
    complement: AtomicU64,
}

// SAFETY: two atomics of zero bytes: fingerprint EMPTY, value UNCLAIMED.
unsafe impl ZeroValid for Slot {}

pub struct Visited {
    slots: ZeroedTable<Slot>,
    len: usize,
}

/// How many states a table of `slots` slots holds under the load limit: the one place that
/// says when it grows (`Visited::slots_for`) and how much a batch may claim (`Visited::room`).
fn holds(slots: usize) -> usize {
    (slots as f64 * MAX_LOAD) as usize
}

/// What `Visited::claim_or_find` found: a fingerprint held before the batch, or claimed in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    Held(usize),
    Claimed(usize),
}

impl Default for Visited {
    fn default() -> Self {
        Visited::with_slots(1024)
    }
}

impl Visited {
    fn with_slots(n: usize) -> Visited {
        Visited {
            slots: ZeroedTable::new(n.max(16)),
            len: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes held by the table.
    pub fn allocation_size(&self) -> usize {
        self.slots.bytes()
    }

    /// Maps a fingerprint onto `0..n` without a division (Lemire's multiply-shift), on its 63
    /// bits: the `PENDING` mark is shifted out.
    fn home(&self, fp: u64) -> usize {
        (((fp << 1) as u128 * self.slots.len() as u128) >> 64) as usize
    }

    /// The slot holding `fp`, or the empty slot where it would go. A fingerprint claimed in the
    /// batch under way is not held yet (its slot is `PENDING`): `find` passes it by.
    pub fn find(&self, fp: u64) -> Result<usize, usize> {
        let n = self.slots.len();
        let mut i = self.home(fp);
        loop {
            let slot = self.slots[i].fp.load(Relaxed);
            if slot == fp {
                return Ok(i);
            }
            if slot == EMPTY {
                return Err(i);
            }
            i += 1;
            if i == n {
                i = 0;
            }
        }
    }

    /// Asks the processor to bring `fp`'s home slot into its cache, and the cache line after
    /// it. A search looks up many keys that do not depend on each other; told ahead, their
    /// cache misses overlap instead of each waiting for the last (a claim, an atomic, waits
    /// for its own miss to end). Most keys a search looks up are new, and the lookup of a new
    /// key probes on from its home to the first empty slot: at 45-90% full, often past the
    /// four slots of its home's line.
    #[inline]
    pub fn prefetch(&self, fp: u64) {
        let home = self.home(fp);
        self.prefetch_slot(home);
        // Three slots on lies in the next line unless the home starts its own.
        self.prefetch_slot((home + 3).min(self.slots.len() - 1));
    }

    /// As `prefetch`, for a slot `find` or `claim` gave.
    #[inline]
    pub fn prefetch_slot(&self, slot: usize) {
        crate::prefetch::prefetch(&self.slots[slot]);
    }

    pub fn contains(&self, fp: u64) -> bool {
        self.find(fp).is_ok()
    }

    /// The value recorded for `fp`: its parent's fingerprint (0 for an initial state), or what
    /// the search that inserted it settled.
    pub fn value(&self, fp: u64) -> Option<u64> {
        self.find(fp).ok().map(|i| self.value_at(i))
    }

    /// The value in slot `slot` (a slot `find` or `claim` gave).
    pub fn value_at(&self, slot: usize) -> u64 {
        !self.slots[slot].complement.load(Relaxed)
    }

    /// Records `fp` with its value; false if it was already there (the first value stays).
    pub fn insert(&mut self, fp: u64, value: u64) -> bool {
        debug_assert!(fp != EMPTY && fp & PENDING == 0, "a 63-bit fingerprint");
        self.reserve(1);
        match self.find(fp) {
            Ok(_) => false,
            Err(i) => {
                let slot = &mut self.slots[i];
                *slot.fp.get_mut() = fp;
                *slot.complement.get_mut() = !value;
                self.len += 1;
                true
            }
        }
    }

    /// Grows the table, if need be, so `arriving` more states fit under the load limit: done
    /// before the claims of a batch, which cannot grow it.
    pub fn reserve(&mut self, arriving: usize) {
        let slots = self.slots_for(arriving);
        if slots > self.slots.len() {
            self.grow(slots);
        }
    }

    /// Claims `fp` for `claim` from any thread, and says in which slot it is: a fingerprint new
    /// to the table takes an empty slot; of the claims on one fingerprint the least stays,
    /// whatever the order they arrive in. Room must have been reserved, and the fingerprint
    /// must not have been in the table before this batch's claims. Claiming again with the
    /// same claim changes nothing.
    pub fn claim(&self, fp: u64, claim: u64) -> usize {
        match self.claim_or_find(fp, claim) {
            Lookup::Claimed(i) => i,
            Lookup::Held(_) => unreachable!("a claimed fingerprint was not in the table before"),
        }
    }

    /// Looks `fp` up from any thread: if the table held it before this batch, its slot;
    /// otherwise claims it for `claim`, as `claim` does. At most `room()` new fingerprints may
    /// be claimed in a batch (and none while it grows).
    pub fn claim_or_find(&self, fp: u64, claim: u64) -> Lookup {
        debug_assert!(fp != EMPTY && fp & PENDING == 0, "a 63-bit fingerprint");
        debug_assert_ne!(claim, UNCLAIMED);
        let n = self.slots.len();
        let mut i = self.home(fp);
        let pending = fp | PENDING;
        loop {
            let slot = &self.slots[i];
            // Read first: the compare-and-swap, an atomic, is only for a slot that looks free.
            let mut held = slot.fp.load(Relaxed);
            if held == EMPTY {
                held = match slot.fp.compare_exchange(EMPTY, pending, Relaxed, Relaxed) {
                    Ok(_) => pending,
                    Err(held) => held,
                };
            }
            if held == fp {
                return Lookup::Held(i);
            }
            if held == pending {
                slot.complement.fetch_max(!claim, Relaxed);
                return Lookup::Claimed(i);
            }
            i += 1;
            if i == n {
                i = 0;
            }
        }
    }

    /// How many new fingerprints may be claimed before the table must grow (`reserve`).
    pub fn room(&self) -> usize {
        holds(self.slots.len()).saturating_sub(self.len)
    }

    /// Gives a claimed slot its value and ends its `PENDING` mark; only the claim that kept it
    /// does, once every claim of the batch is in. The table then counts it.
    pub fn settle(&self, slot: usize, value: u64) {
        let slot = &self.slots[slot];
        // No claim writes the fingerprint any more: a plain read and write will do.
        slot.fp.store(slot.fp.load(Relaxed) & !PENDING, Relaxed);
        slot.complement.store(!value, Relaxed);
    }

    /// Counts the states a batch's winning claims added.
    pub fn add_settled(&mut self, states: usize) {
        self.len += states;
    }

    /// Bytes the table grows by while `arriving` more states are inserted.
    pub fn growth_bytes(&self, arriving: usize) -> usize {
        (self.slots_for(arriving) - self.slots.len()) * std::mem::size_of::<Slot>()
    }

    /// The slots the table needs so `arriving` more states fit under the load limit (`holds`):
    /// its length as it is, or doubled as often as it takes.
    fn slots_for(&self, arriving: usize) -> usize {
        let mut slots = self.slots.len();
        while self.len + arriving > holds(slots) {
            slots = (slots as f64 * GROWTH) as usize + 1;
        }
        slots
    }

    /// Lengthens the table to `bigger` slots (at least twice its length) and moves each
    /// state to its new place, on every core.
    fn grow(&mut self, bigger: usize) {
        self.grow_in_segments(bigger, MOVE_SEGMENT);
    }

    /// `grow`, moving `segment` old slots a task.
    ///
    /// A state's home scales with the table (`home` multiplies its fingerprint by the length),
    /// so the states of old slots `lo..hi` have their new homes in `scaled(lo)..scaled(hi)`,
    /// and from twice the length on that lies above `hi`. So the top half of the old table
    /// moves first, into the new part of the table; then the quarter below it, into the slots
    /// the top half left; and so on down, each half cut into segments moved at once, each
    /// into its own stretch of empty slots. A state goes to the first free slot from its home
    /// within its segment's stretch, and stays there: its probe stays unbroken. The bottom
    /// few old slots move on one core, within the table (`move_bottom`). The few states
    /// whose home or probe leaves their stretch (those of a run that crossed a boundary) are
    /// put in last, the ordinary way. The segments do not depend on the thread count, so
    /// neither does where a state ends up.
    fn grow_in_segments(&mut self, bigger: usize, segment: usize) {
        let old = self.slots.len();
        assert!(
            bigger > 2 * old,
            "a table grows to more than twice its length"
        );
        self.slots.grow(bigger);
        self.fault_in(old);
        let new = self.slots.len();
        let scaled = |slot: usize| (slot as u128 * new as u128 / old as u128) as usize;
        let mut late = Vec::new();
        let mut hi = old;
        while hi > 2 * segment {
            let lo = hi.div_ceil(2);
            let moved: Vec<Vec<(u64, u64)>> = (lo..hi)
                .into_par_iter()
                .step_by(segment)
                .map(|from| {
                    let to = (from + segment).min(hi);
                    self.move_segment(from..to, scaled(from)..scaled(to))
                })
                .collect();
            late.extend(moved.into_iter().flatten());
            hi = lo;
        }
        self.move_bottom(hi, &mut late);
        for (fp, complement) in late {
            let Err(to) = self.find(fp) else {
                unreachable!("a fingerprint is in the table once")
            };
            self.slots[to].fp.store(fp, Relaxed);
            self.slots[to].complement.store(complement, Relaxed);
        }
    }

    /// Moves the states of old slots `from` to the first free slot from their new home inside
    /// `into`, whose slots are all empty: those that do not fit there are returned, to be put
    /// in last. Segments moved at once touch disjoint slots.
    fn move_segment(
        &self,
        from: std::ops::Range<usize>,
        into: std::ops::Range<usize>,
    ) -> Vec<(u64, u64)> {
        let mut late = Vec::new();
        for slot in &self.slots[from] {
            // Loads and stores, not swaps: no other task touches these slots.
            let fp = slot.fp.load(Relaxed);
            if fp == EMPTY {
                continue;
            }
            let complement = slot.complement.load(Relaxed);
            slot.fp.store(EMPTY, Relaxed);
            slot.complement.store(0, Relaxed);
            let home = self.home(fp);
            let free = (into.contains(&home))
                .then(|| (home..into.end).find(|&i| self.slots[i].fp.load(Relaxed) == EMPTY))
                .flatten();
            match free {
                Some(to) => {
                    self.slots[to].fp.store(fp, Relaxed);
                    self.slots[to].complement.store(complement, Relaxed);
                }
                None => late.push((fp, complement)),
            }
        }
        late
    }

    /// Moves the states of old slots `0..end` within the table, from the last slot to the
    /// first, on one core: the slots above them have been moved or are new.
    ///
    /// Taken from the last slot down, a state whose new home lies at or after the slot it is
    /// taken from goes to the first free slot from its home, among slots that hold only moved
    /// states: none is taken out again, so every state's probe from its home stays unbroken.
    /// Those that would land before their old slot, or past the end, go to `late`.
    fn move_bottom(&mut self, end: usize, late: &mut Vec<(u64, u64)>) {
        let n = self.slots.len();
        for from in (0..end).rev() {
            let slot = &mut self.slots[from];
            let fp = std::mem::replace(slot.fp.get_mut(), EMPTY);
            if fp == EMPTY {
                continue;
            }
            let complement = std::mem::replace(slot.complement.get_mut(), 0);
            let home = self.home(fp);
            if home < from {
                late.push((fp, complement));
                continue;
            }
            match (home..n).find(|&i| *self.slots[i].fp.get_mut() == EMPTY) {
                Some(to) => {
                    let slot = &mut self.slots[to];
                    *slot.fp.get_mut() = fp;
                    *slot.complement.get_mut() = complement;
                }
                None => late.push((fp, complement)),
            }
        }
    }

    /// Writes a zero into each page of the slots from `first` on, on every core: the kernel
    /// backs a page when it is first written, and the move in `grow`, on one core, would
    /// otherwise wait for each.
    fn fault_in(&self, first: usize) {
        const SLOTS_A_PAGE: usize = 4096 / std::mem::size_of::<Slot>();
        self.slots[first..]
            .par_chunks(SLOTS_A_PAGE * 64)
            .for_each(|pages| {
                for page in pages.chunks(SLOTS_A_PAGE) {
                    page[0].fp.store(EMPTY, Relaxed);
                }
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 63-bit fingerprint, as `fingerprint()` gives.
    fn spread(i: u64) -> u64 {
        (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1) >> 1
    }

    #[test]
    fn keeps_the_first_value_and_finds_everything_after_growing() {
        let mut v = Visited::default();
        for i in 1..=100_000u64 {
            let fp = spread(i);
            assert!(v.insert(fp, fp ^ 1));
        }
        assert_eq!(v.len(), 100_000);
        assert!(!v.insert(spread(1), 7));
        for i in 1..=100_000u64 {
            let fp = spread(i);
            assert_eq!(v.value(fp), Some(fp ^ 1));
        }
        assert!(!v.contains(2));
        let per_state = v.allocation_size() as f64 / v.len() as f64;
        assert!(per_state <= 16.0 / 0.45, "{per_state} bytes per state");
    }

    /// Growing moves the old table's upper halves a segment at a time, each segment into its
    /// own stretch of the new table: states whose run crosses a segment's boundary, or wraps
    /// past the end, must stay findable, with every segment length down to one slot.
    #[test]
    fn growing_by_segments_keeps_every_state_where_its_probe_finds_it() {
        for segment in [1, 3, 64, MOVE_SEGMENT] {
            let mut v = Visited::default();
            // 300 fingerprints whose home is the last slot (they wrap to the first slots), 300
            // whose home is the first (a run from slot 0), and the rest spread between.
            let fps: Vec<u64> = (1..=300u64)
                .flat_map(|i| [(u64::MAX >> 1) - i, i, spread(i), spread(i + 300)])
                .chain((601..=30_000).map(spread))
                .collect();
            for &fp in &fps {
                assert!(v.insert(fp, !fp));
            }
            let mut slots = v.slots.len();
            while slots < 300_000 {
                v.grow_in_segments(slots * 2 + 1, segment);
                slots = v.slots.len();
                for &fp in &fps {
                    assert_eq!(v.value(fp), Some(!fp), "segment {segment}, {slots} slots");
                }
                let held = v.slots.iter().filter(|s| s.fp.load(Relaxed) != EMPTY);
                assert_eq!(held.count(), fps.len(), "segment {segment}, {slots} slots");
            }
        }
    }

    #[test]
    fn a_lookup_finds_what_the_table_held_and_claims_what_it_did_not() {
        let mut v = Visited::default();
        v.insert(spread(1), 5);
        v.reserve(2);
        assert_eq!(
            v.claim_or_find(spread(1), 9),
            Lookup::Held(v.find(spread(1)).unwrap())
        );
        let Lookup::Claimed(slot) = v.claim_or_find(spread(2), 9) else {
            panic!("a new fingerprint is claimed");
        };
        assert_eq!(v.claim_or_find(spread(2), 4), Lookup::Claimed(slot));
        assert_eq!(v.claim_or_find(spread(2), 7), Lookup::Claimed(slot));
        assert_eq!(v.value_at(slot), 4, "the least claim");
        assert!(!v.contains(spread(2)), "pending until settled");
        v.settle(slot, 11);
        v.add_settled(1);
        assert_eq!(v.claim_or_find(spread(2), 1), Lookup::Held(slot));
        assert_eq!(v.value(spread(2)), Some(11));
    }

    #[test]
    fn the_least_claim_keeps_a_fingerprint_whatever_the_order_of_the_threads() {
        let mut v = Visited::default();
        v.insert(spread(1), 0);
        // Four claims on each of 10,000 fingerprints, from two threads, in opposite orders.
        v.reserve(10_000);
        let claims = |order: &mut dyn Iterator<Item = u64>| {
            for claim in order {
                v.claim(spread(2 + claim % 10_000), claim);
            }
        };
        std::thread::scope(|s| {
            s.spawn(|| claims(&mut (0..20_000)));
            s.spawn(|| claims(&mut (20_000..40_000).rev()));
        });
        for i in 0..10_000u64 {
            assert!(v.find(spread(2 + i)).is_err(), "pending until settled");
            let slot = v.claim(spread(2 + i), i);
            assert_eq!(v.value_at(slot), i, "the least of the four claims");
            v.settle(slot, i + 100);
        }
        v.add_settled(10_000);
        assert_eq!(v.len(), 10_001);
        assert_eq!(v.value(spread(9)), Some(7 + 100));
        assert_eq!(v.value(spread(1)), Some(0));
    }
}
