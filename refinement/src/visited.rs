//! The visited set: each state's 64-bit fingerprint with its BFS parent's fingerprint.
//!
//! Open addressing with linear probing over 16-byte slots, sized by any number (not only powers
//! of two) and grown by half when 90% full, so it holds between 60% and 90% of its slots: 17.8 to
//! 26.7 bytes per state, under the 32 bytes a state may cost. A general hash map would double its
//! power-of-two table and sit anywhere between 19 and 39 bytes per state.

/// Fingerprint 0 marks an empty slot; `fingerprint()` never returns it.
const EMPTY: u64 = 0;
const MAX_LOAD: f64 = 0.9;
const GROWTH: f64 = 1.5;

pub struct Visited {
    slots: Vec<[u64; 2]>,
    len: usize,
}

impl Default for Visited {
    fn default() -> Self {
        Visited::with_slots(1024)
    }
}

impl Visited {
    fn with_slots(n: usize) -> Visited {
        Visited {
            slots: vec![[EMPTY, 0]; n.max(16)],
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
        self.slots.capacity() * std::mem::size_of::<[u64; 2]>()
    }

    /// Maps a fingerprint onto `0..n` without a division (Lemire's multiply-shift).
    fn home(&self, fp: u64) -> usize {
        ((fp as u128 * self.slots.len() as u128) >> 64) as usize
    }

    fn find(&self, fp: u64) -> Result<usize, usize> {
        let n = self.slots.len();
        let mut i = self.home(fp);
        loop {
            let slot = self.slots[i][0];
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

    pub fn contains(&self, fp: u64) -> bool {
        self.find(fp).is_ok()
    }

    /// The parent recorded for `fp` (0 for an initial state).
    pub fn parent(&self, fp: u64) -> Option<u64> {
        self.find(fp).ok().map(|i| self.slots[i][1])
    }

    /// Records `fp` with its parent; false if it was already there (the first parent stays).
    pub fn insert(&mut self, fp: u64, parent: u64) -> bool {
        debug_assert_ne!(fp, EMPTY);
        if (self.len + 1) as f64 > self.slots.len() as f64 * MAX_LOAD {
            self.grow();
        }
        match self.find(fp) {
            Ok(_) => false,
            Err(i) => {
                self.slots[i] = [fp, parent];
                self.len += 1;
                true
            }
        }
    }

    /// Bytes of the tables allocated while `arriving` more states are inserted (each growth
    /// holds the old table and the new at once, so that is the most held at one time).
    pub fn growth_bytes(&self, arriving: usize) -> usize {
        let mut slots = self.slots.len();
        let mut largest = 0;
        while (self.len + arriving) as f64 > slots as f64 * MAX_LOAD {
            slots = (slots as f64 * GROWTH) as usize + 1;
            largest = slots;
        }
        largest * std::mem::size_of::<[u64; 2]>()
    }

    fn grow(&mut self) {
        let bigger = (self.slots.len() as f64 * GROWTH) as usize + 1;
        let old = std::mem::replace(self, Visited::with_slots(bigger));
        for [fp, parent] in old.slots {
            if fp != EMPTY {
                let i = self.find(fp).expect_err("fingerprints are unique");
                self.slots[i] = [fp, parent];
                self.len += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_first_parent_and_finds_everything_after_growing() {
        let mut v = Visited::default();
        for fp in 1..=100_000u64 {
            let fp = fp.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            assert!(v.insert(fp, fp ^ 1));
        }
        assert_eq!(v.len(), 100_000);
        assert!(!v.insert(0x9E37_79B9_7F4A_7C15 | 1, 7));
        for fp in 1..=100_000u64 {
            let fp = fp.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            assert_eq!(v.parent(fp), Some(fp ^ 1));
        }
        assert!(!v.contains(2));
        let per_state = v.allocation_size() as f64 / v.len() as f64;
        assert!(per_state <= 32.0, "{per_state} bytes per state");
    }
}
