//! Dense per-state bits: one flag a state, or a few bits a state packed without padding.

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

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn insert(&mut self, i: usize) {
        assert!(i < self.len, "bit {i} of {}", self.len);
        self.words[i / 64] |= 1 << (i % 64);
    }

    pub fn push(&mut self, bit: bool) {
        if self.len.is_multiple_of(64) {
            self.words.push(0);
        }
        if bit {
            self.words[self.len / 64] |= 1 << (self.len % 64);
        }
        self.len += 1;
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

/// `width` bits per state (0 to 64), pushed in id order or set in place: a state's fair groups
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

    /// `n` values of `width` bits, all zero.
    pub fn zeroed(width: usize, n: usize) -> PackedBits {
        let mut bits = PackedBits::new(width);
        bits.words = vec![0; (n * width).div_ceil(64)];
        bits.len = n;
        bits
    }

    fn mask(&self) -> u64 {
        if self.width == 64 {
            u64::MAX
        } else {
            (1 << self.width) - 1
        }
    }

    pub fn push(&mut self, value: u64) {
        debug_assert_eq!(value & !self.mask(), 0, "a value wider than its bits");
        if self.width == 0 {
            self.len += 1;
            return;
        }
        let bit = self.len * self.width;
        let (word, shift) = (bit / 64, bit % 64);
        while self.words.len() <= (bit + self.width - 1) / 64 {
            self.words.push(0);
        }
        self.words[word] |= value << shift;
        if shift + self.width > 64 {
            self.words[word + 1] |= value >> (64 - shift);
        }
        self.len += 1;
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

    /// Replaces value `i` (one already pushed, or within `zeroed`'s `n`).
    pub fn set(&mut self, i: usize, value: u64) {
        assert!(i < self.len, "value {i} of {}", self.len);
        debug_assert_eq!(value & !self.mask(), 0, "a value wider than its bits");
        if self.width == 0 {
            return;
        }
        let mask = self.mask();
        let bit = i * self.width;
        let (word, shift) = (bit / 64, bit % 64);
        self.words[word] = self.words[word] & !(mask << shift) | value << shift;
        if shift + self.width > 64 {
            let high = 64 - shift;
            self.words[word + 1] = self.words[word + 1] & !(mask >> high) | value >> high;
        }
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
                bits.push(v);
            }
            for (i, &v) in values.iter().enumerate() {
                assert_eq!(bits.get(i), v, "width {width}, state {i}");
            }
        }
    }

    #[test]
    fn values_set_in_place_leave_their_neighbours_alone() {
        for width in [0, 1, 2, 3, 7, 13, 64] {
            let mask = if width == 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            let mut bits = PackedBits::zeroed(width, 500);
            let mut expected = vec![0u64; 500];
            // Every value written twice, the second time over a first of all ones.
            for round in [mask, 0x5555_5555_5555_5555] {
                for i in (0..500).step_by(3).chain((1..500).step_by(3)) {
                    let v = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) & mask & round;
                    bits.set(i, v);
                    expected[i] = v;
                }
            }
            for (i, &v) in expected.iter().enumerate() {
                assert_eq!(bits.get(i), v, "width {width}, state {i}");
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
