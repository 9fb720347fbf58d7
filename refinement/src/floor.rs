//! The floor a search is held against (`loadbearing bench`): the time this machine takes to
//! insert a fingerprint into a well-built hash set, measured beside the searches. Here, with
//! the engine, so that it is optimised in every build the engine is.
//!
//! A breadth-first search inserts every state it finds into its visited set at least once,
//! so no search of `n` states can take less than `n` inserts into a set that grows to `n`.
//! The set here is the standard library's (SwissTable: one byte of metadata a slot, probed
//! sixteen at a time), keyed by random 64-bit numbers hashed as themselves (a fingerprint
//! already is a hash), and grown from empty as a search's is: so it pays the same first
//! touch of fresh memory a search pays, which on a virtual machine is much of the cost.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::time::Instant;

/// Hashes a `u64` as itself: the keys are random already.
#[derive(Default)]
struct AsItself(u64);

impl Hasher for AsItself {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// The `i`th of a sequence of well-spread 64-bit numbers (SplitMix64's output function).
fn spread(i: u64) -> u64 {
    let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Nanoseconds an insert of `states` distinct fingerprints into a set grown from empty takes
/// on one core: the median of `repeat` measurements, each in a fresh set.
pub fn nanos_an_insert(states: u64, repeat: usize) -> f64 {
    let mut times: Vec<f64> = (0..repeat.max(1))
        .map(|round| {
            let first = round as u64 * states;
            let started = Instant::now();
            let mut set: HashSet<u64, BuildHasherDefault<AsItself>> = HashSet::default();
            for i in first..first + states {
                set.insert(spread(i));
            }
            let seconds = started.elapsed().as_secs_f64();
            assert_eq!(set.len() as u64, states, "distinct fingerprints");
            seconds
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2] * 1e9 / states.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_inserts_as_many_distinct_fingerprints_as_asked_and_times_them() {
        // `nanos_an_insert` asserts every key distinct; a spread that repeated would fail it.
        let nanos = nanos_an_insert(10_000, 3);
        assert!(nanos > 0.0 && nanos.is_finite());
        let mut seen = HashSet::new();
        assert!((0..100_000).all(|i| seen.insert(spread(i))));
    }
}
