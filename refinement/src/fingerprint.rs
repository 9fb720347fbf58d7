//! 64-bit state fingerprints. Fixed seeds keep runs reproducible: same model, same visit order,
//! same counterexample.

use std::hash::Hash;

const SEEDS: (u64, u64, u64, u64) = (
    0x243f_6a88_85a3_08d3,
    0x1319_8a2e_0370_7344,
    0xa409_3822_299f_31d0,
    0x082e_fa98_ec4e_6c89,
);

pub fn fingerprint<T: Hash>(value: &T) -> u64 {
    let hasher = ahash::RandomState::with_seeds(SEEDS.0, SEEDS.1, SEEDS.2, SEEDS.3);
    // Zero is reserved as "no parent" in the visited set.
    hasher.hash_one(value).max(1)
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
