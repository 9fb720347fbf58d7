//! Symmetry reduction: states that differ only by a permutation of interchangeable processes
//! (TLC's `SYMMETRY Permutations(Writers)`) are stored once.
//!
//! A state's key is the smallest fingerprint over every permutation of it, the same for every
//! state of an orbit, so the visited set counts orbits, as TLC does. The search still expands
//! the concrete state it reached, and a path of keys is replayed from the concrete initial
//! state, step by step, to the successor whose key is the next: a counterexample is shown as a
//! concrete behaviour of the model.

use crate::fingerprint::fingerprint;
use crate::spec::Spec;

/// How states are keyed in the visited set: by fingerprint, or by the orbit's least one.
pub struct Keys<'a, M: Spec> {
    model: &'a M,
    /// Per declared symmetry: its index in the model's list and every permutation of it.
    symmetries: Vec<(usize, Vec<Vec<u8>>)>,
}

impl<'a, M: Spec> Keys<'a, M> {
    /// Plain fingerprints: no symmetry.
    pub fn plain(model: &'a M) -> Self {
        Keys {
            model,
            symmetries: Vec::new(),
        }
    }

    /// Keys under the model's symmetries at `indices` (into `model.symmetries()`).
    pub fn reduced(model: &'a M, indices: &[usize]) -> Self {
        let all = model.symmetries();
        let symmetries = indices
            .iter()
            .map(|&i| (i, permutations(all[i].size)))
            .collect();
        Keys { model, symmetries }
    }

    pub fn model(&self) -> &'a M {
        self.model
    }

    pub fn key(&self, state: &M::State) -> u64 {
        if self.symmetries.is_empty() {
            return fingerprint(state);
        }
        if let [(symmetry, _)] = self.symmetries[..] {
            if let Some(representative) = self.model.canonical(state, symmetry) {
                return fingerprint(&representative);
            }
        }
        let mut least = u64::MAX;
        self.each_image(state.clone(), 0, &mut |image| {
            least = least.min(fingerprint(image));
        });
        least
    }

    /// Calls `visit` on every image of `state` under the symmetries from `from` on.
    fn each_image(&self, state: M::State, from: usize, visit: &mut impl FnMut(&M::State)) {
        let Some((symmetry, permutations)) = self.symmetries.get(from) else {
            visit(&state);
            return;
        };
        for permutation in permutations {
            let image = self.model.permute(&state, *symmetry, permutation);
            self.each_image(image, from + 1, visit);
        }
    }
}

/// Every permutation of `0..n`, the identity first (Heap's algorithm would do; `n` is small,
/// since the orbit is walked for every state).
fn permutations(n: usize) -> Vec<Vec<u8>> {
    let mut all = vec![Vec::new()];
    for k in 0..n as u8 {
        all = all
            .into_iter()
            .flat_map(|p| {
                (0..=p.len()).map(move |at| {
                    let mut q = p.clone();
                    q.insert(at, k);
                    q
                })
            })
            .collect();
    }
    all.sort();
    all
}

/// Checks a model's `canonical` against its `permute` on `states`: every image of a state under
/// the symmetry has the same representative, and the representative is one of the images.
/// For the models' tests.
pub fn check_canonical<M: Spec>(
    model: &M,
    symmetry: usize,
    states: &[M::State],
) -> Result<(), String> {
    let size = model.symmetries()[symmetry].size;
    for state in states {
        let Some(representative) = model.canonical(state, symmetry) else {
            return Err("the model names no representative".into());
        };
        let images: Vec<M::State> = permutations(size)
            .iter()
            .map(|p| model.permute(state, symmetry, p))
            .collect();
        if !images.contains(&representative) {
            return Err(format!("{representative:?} is not an image of {state:?}"));
        }
        for image in &images {
            if model.canonical(image, symmetry).as_ref() != Some(&representative) {
                return Err(format!(
                    "{image:?} and {state:?} are one orbit with two representatives"
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_permutation_once() {
        let all = permutations(4);
        assert_eq!(all.len(), 24);
        assert_eq!(all[0], [0, 1, 2, 3]);
        let mut unique = all.clone();
        unique.dedup();
        assert_eq!(unique.len(), 24);
        assert_eq!(permutations(0), [Vec::<u8>::new()]);
    }
}
