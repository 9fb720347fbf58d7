//! The two sets a configuration of the history search carries: which pending operations it has
//! placed ([`Slots`], a bit a slot), and how many operations of each unknown-outcome class it
//! has used ([`Used`], sparse counts, ordered by inclusion).

use std::hash::{Hash, Hasher};

/// Which of the slots of the pending operations are placed: a bit a slot. A part's operations
/// pending at one time are few (the clients that overlap), so two words hold them inline; a part
/// with more overlapping operations than that keeps its bits on the heap.
#[derive(Clone, PartialEq, Eq)]
pub(super) enum Slots {
    Inline(u128),
    Heap(Box<[u64]>),
}

impl Slots {
    /// No slot placed, for a part whose operations overlap `width` at a time at most.
    pub(super) fn empty(width: usize) -> Slots {
        if width <= 128 {
            Slots::Inline(0)
        } else {
            Slots::Heap(vec![0; width.div_ceil(64)].into_boxed_slice())
        }
    }

    pub(super) fn contains(&self, slot: usize) -> bool {
        match self {
            Slots::Inline(bits) => bits >> slot & 1 == 1,
            Slots::Heap(words) => words[slot / 64] >> (slot % 64) & 1 == 1,
        }
    }

    pub(super) fn insert(&mut self, slot: usize) {
        match self {
            Slots::Inline(bits) => *bits |= 1 << slot,
            Slots::Heap(words) => words[slot / 64] |= 1 << (slot % 64),
        }
    }

    pub(super) fn remove(&mut self, slot: usize) {
        match self {
            Slots::Inline(bits) => *bits &= !(1 << slot),
            Slots::Heap(words) => words[slot / 64] &= !(1 << (slot % 64)),
        }
    }

    /// How many slots are placed.
    pub(super) fn len(&self) -> u32 {
        match self {
            Slots::Inline(bits) => bits.count_ones(),
            Slots::Heap(words) => words.iter().map(|w| w.count_ones()).sum(),
        }
    }
}

impl Hash for Slots {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match self {
            Slots::Inline(bits) => state.write_u128(*bits),
            Slots::Heap(words) => words.iter().for_each(|w| state.write_u64(*w)),
        }
    }
}

/// How many operations of each class of unknown outcome a configuration has placed, as
/// `(class, count)` pairs in class order, none with a zero count. Empty (and unallocated) in
/// the common case: nothing unknown placed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(super) struct Used(Vec<(u32, u32)>);

impl Used {
    /// How many of `class` are placed.
    pub(super) fn count(&self, class: u32) -> u32 {
        match self.0.binary_search_by_key(&class, |&(c, _)| c) {
            Ok(at) => self.0[at].1,
            Err(_) => 0,
        }
    }

    /// The same, with one more of `class`.
    pub(super) fn plus(&self, class: u32) -> Used {
        let mut more = self.clone();
        match more.0.binary_search_by_key(&class, |&(c, _)| c) {
            Ok(at) => more.0[at].1 += 1,
            Err(at) => more.0.insert(at, (class, 1)),
        }
        more
    }

    /// Whether every class is placed at most as often here as in `other`: a configuration that
    /// used less, in the same state with the same operations placed, can do all the other can.
    pub(super) fn within(&self, other: &Used) -> bool {
        if self.0.len() > other.0.len() {
            return false;
        }
        let mut theirs = other.0.iter();
        self.0.iter().all(|&(class, n)| {
            theirs
                .by_ref()
                .find(|&&(c, _)| c >= class)
                .is_some_and(|&(c, m)| c == class && m >= n)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_inline_and_on_the_heap_agree() {
        for width in [3, 128, 129, 300] {
            let mut slots = Slots::empty(width);
            let marked: Vec<usize> = (0..width)
                .filter(|s| s % 7 == 3 || *s == width - 1)
                .collect();
            for &s in &marked {
                slots.insert(s);
            }
            for s in 0..width {
                assert_eq!(
                    slots.contains(s),
                    marked.contains(&s),
                    "width {width}, slot {s}"
                );
            }
            assert_eq!(slots.len() as usize, marked.len());
            slots.remove(marked[0]);
            assert!(!slots.contains(marked[0]));
            assert_eq!(slots.len() as usize, marked.len() - 1);
        }
    }

    #[test]
    fn used_counts_compare_by_inclusion() {
        let none = Used::default();
        let a = none.plus(3);
        let aa = a.plus(3);
        let ab = a.plus(1);
        assert_eq!(ab.count(1), 1);
        assert_eq!(aa.count(3), 2);
        assert_eq!(aa.count(2), 0);
        assert!(none.within(&a) && a.within(&aa) && a.within(&ab));
        assert!(!aa.within(&a) && !aa.within(&ab) && !ab.within(&aa));
        assert!(!a.within(&none));
        let b = none.plus(1);
        assert!(b.within(&ab) && !b.within(&aa));
        // A class the other lacks, past its last.
        assert!(!none.plus(9).within(&ab));
    }
}
