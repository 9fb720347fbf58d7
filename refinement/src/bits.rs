//! Dense per-state bits: one flag a state, or a few bits a state packed without padding.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// One bit per state, pushed in id order.
#[derive(Default)]
pub struct BitSet {
    words: Vec<u64>,
    len: usize,
}

impl BitSet {
    /// `n` bits, all clear.
    pub fn sized(n: usize) -> BitSet {
        BitSet {
            words: vec![0; n.div_ceil(64)],
            len: n,
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn insert(&mut self, i: usize) {
        assert!(i < self.len, "bit {i} of {}", self.len);
        self.words[i / 64] |= 1 << (i % 64);
    }

    #[cfg(test)]
    pub fn push(&mut self, bit: bool) {
        if self.len.is_multiple_of(64) {
            self.words.push(0);
        }
        if bit {
            self.words[self.len / 64] |= 1 << (self.len % 64);
        }
        self.len += 1;
    }

    /// Pushes each of `bits` in turn, its words grown once.
    pub fn extend(&mut self, bits: impl ExactSizeIterator<Item = bool>) {
        let first = self.len;
        self.len += bits.len();
        self.words.resize(self.len.div_ceil(64), 0);
        for (i, bit) in (first..).zip(bits) {
            self.words[i / 64] |= u64::from(bit) << (i % 64);
        }
    }

    pub fn contains(&self, i: usize) -> bool {
        i < self.len && self.words[i / 64] & (1 << (i % 64)) != 0
    }

    pub fn allocation_size(&self) -> usize {
        self.words.capacity() * 8
    }

    /// Whether no bit is set.
    pub fn is_clear(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }
}

/// One bit per state that every thread sets and reads at once.
pub struct SharedBits {
    words: Vec<AtomicU64>,
}

impl SharedBits {
    /// `n` bits, all clear.
    pub fn sized(n: usize) -> SharedBits {
        SharedBits {
            words: (0..n.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    pub fn insert(&self, i: usize) {
        self.words[i / 64].fetch_or(1 << (i % 64), Relaxed);
    }

    pub fn contains(&self, i: usize) -> bool {
        self.words[i / 64].load(Relaxed) & (1 << (i % 64)) != 0
    }

    /// As `insert`, for a caller that is the only one setting bits at the time (it holds a
    /// lock every setter holds): a plain read and write, no locked instruction, while others
    /// read.
    pub fn insert_alone(&self, i: usize) {
        let word = &self.words[i / 64];
        word.store(word.load(Relaxed) | 1 << (i % 64), Relaxed);
    }
}

/// `width` bits per state (0 to 64), appended in id order: a state's fair groups
/// take as many bits as the spec has groups, not a whole word.
pub struct PackedBits {
    width: usize,
    words: Vec<u64>,
    len: usize,
}

impl PackedBits {
    pub fn new(width: usize) -> PackedBits {
        assert!(width <= 64, "at most 64 bits a state");
        PackedBits {
            width,
            words: Vec::new(),
            len: 0,
        }
    }

    fn mask(&self) -> u64 {
        if self.width == 64 {
            u64::MAX
        } else {
            (1 << self.width) - 1
        }
    }

    /// Pushes each of `values` in turn, its words grown once.
    pub fn extend(&mut self, values: impl ExactSizeIterator<Item = u64>) {
        let first = self.len;
        self.len += values.len();
        if self.width == 0 {
            return;
        }
        self.words.resize((self.len * self.width).div_ceil(64), 0);
        for (i, value) in (first..).zip(values) {
            debug_assert_eq!(value & !self.mask(), 0, "a value wider than its bits");
            let bit = i * self.width;
            let (word, shift) = (bit / 64, bit % 64);
            self.words[word] |= value << shift;
            if shift + self.width > 64 {
                self.words[word + 1] |= value >> (64 - shift);
            }
        }
    }

    pub fn get(&self, i: usize) -> u64 {
        if self.width == 0 || i >= self.len {
            return 0;
        }
        let bit = i * self.width;
        let (word, shift) = (bit / 64, bit % 64);
        let mut value = self.words[word] >> shift;
        if shift + self.width > 64 {
            value |= self.words[word + 1] << (64 - shift);
        }
        value & self.mask()
    }

    pub fn allocation_size(&self) -> usize {
        self.words.capacity() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_values_read_back_across_word_boundaries() {
        for width in [0, 1, 3, 7, 13, 64] {
            let mut bits = PackedBits::new(width);
            let mask = if width == 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            let values: Vec<u64> = (0..500u64)
                .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) & mask)
                .collect();
            for &v in &values {
                bits.extend(std::iter::once(v));
            }
            for (i, &v) in values.iter().enumerate() {
                assert_eq!(bits.get(i), v, "width {width}, state {i}");
            }
        }
    }

    #[test]
    fn shared_bits_read_back_what_one_thread_set_and_nothing_else() {
        let bits = SharedBits::sized(300);
        for i in (0..300).step_by(7) {
            bits.insert(i);
        }
        assert!((0..300).all(|i| bits.contains(i) == (i % 7 == 0)));
    }

    #[test]
    fn runs_appended_read_back_as_one_sequence() {
        for width in [0, 1, 3, 7, 13, 64] {
            let mask = if width == 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            let (mut packed, mut bits) = (PackedBits::new(width), BitSet::default());
            let mut all = Vec::new();
            for run in 0..40u64 {
                let values: Vec<u64> = (0..run * 3)
                    .map(|i| (i ^ run).wrapping_mul(0x9E37_79B9_7F4A_7C15) & mask)
                    .collect();
                packed.extend(values.iter().copied());
                bits.extend(values.iter().map(|&v| v & 1 == 1));
                all.extend(values);
            }
            assert_eq!((packed.len, bits.len()), (all.len(), all.len()));
            for (i, &v) in all.iter().enumerate() {
                assert_eq!(packed.get(i), v, "width {width}, value {i}");
                assert_eq!(bits.contains(i), v & 1 == 1, "width {width}, bit {i}");
            }
        }
    }

    #[test]
    fn a_bit_set_reads_back_what_was_pushed() {
        let mut set = BitSet::default();
        for i in 0..300 {
            set.push(i % 3 == 0);
        }
        assert!((0..300).all(|i| set.contains(i) == (i % 3 == 0)));
        assert!(!set.contains(300));
    }
}
