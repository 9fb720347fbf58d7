//! 63-bit state fingerprints. A fixed seed keeps runs reproducible: same model, same visit order,
//! same counterexample.

use std::hash::{BuildHasher, Hash};

/// Fixed, so that every run and every worker of a distributed search agrees on a state's key.
const SEED: u64 = 0x243f_6a88_85a3_08d3;

/// foldhash's quality variant: a state hashes field by field (`derive(Hash)`), most fields a
/// byte or a flag, and foldhash gathers such small writes into one 128-bit word before each
/// multiply, where aHash multiplied once per field. The quality variant mixes the result once
/// more at the end: a fingerprint stands for its state, so its bits must all depend on it.
///
/// 63 bits: the visited set marks a slot claimed in the batch under way with the top bit.
pub fn fingerprint<T: Hash>(value: &T) -> u64 {
    let hasher = foldhash::quality::FixedState::with_seed(SEED);
    // Zero is reserved as "no parent" in the visited set.
    (hasher.hash_one(value) >> 1).max(1)
}

/// A hasher for keys that are already fingerprints: hashing them again only costs time.
#[derive(Default, Clone, Copy)]
pub struct IdentityHasher(u64);

impl std::hash::Hasher for IdentityHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _bytes: &[u8]) {
        unreachable!("IdentityHasher only hashes u64 fingerprints")
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

pub type BuildIdentity = std::hash::BuildHasherDefault<IdentityHasher>;
