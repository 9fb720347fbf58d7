//! Symmetry reduction: states that differ only by a permutation of interchangeable processes
//! (TLC's `SYMMETRY Permutations(Writers)`) are stored once.
//!
//! A state's key is the smallest fingerprint over every permutation of it, the same for every
//! state of an orbit, so the visited set counts orbits, as TLC does. The search still expands
//! the concrete state it reached, and a path of keys is replayed from the concrete initial
//! state, step by step, to the successor whose key is the next: a counterexample is shown as a
//! concrete behaviour of the model.
//!
//! Where a check asked for no symmetry, a model's declared symmetries may still shorten its
//! search (`Keys::counting`): the search keys states by orbit as above, and counts each new
//! orbit as the states it holds, and each expanded state's successors once for every state of
//! its orbit. Every state of an orbit is reached at the same depth (a permutation maps the
//! initial states and every step to themselves) and has as many successors, so the counts,
//! the depth and the verdict are those of the search of every state.
//!
//! So are its counterexamples and witnesses. The state such a search keeps of an orbit is the
//! one the search of every state reaches first: that one's parent is the first state of its
//! own orbit (any other state of the parent's orbit has the first as an earlier image, whose
//! successors reach the orbit too), so by induction on the levels the search by orbits expands
//! exactly the first state of each orbit, in the same order. The first state of a level to
//! break an invariant is the first of its orbit (the invariant breaks on every image, the first
//! one included), and the replay of its path of keys takes, from each state, the first
//! successor into the next orbit: the path the search of every state shows.

use crate::fingerprint::fingerprint;
use crate::spec::Spec;

/// How states are keyed in the visited set: by fingerprint, or by the orbit's least one.
pub struct Keys<'a, M: Spec> {
    model: &'a M,
    /// Per declared symmetry: its index in the model's list and every permutation of it.
    symmetries: Vec<(usize, Vec<Vec<u8>>)>,
    /// Each orbit counts as the states it holds (`counting`), not as one (TLC's `SYMMETRY`).
    counting: bool,
}

impl<'a, M: Spec> Keys<'a, M> {
    /// Plain fingerprints: no symmetry.
    pub fn plain(model: &'a M) -> Self {
        Keys {
            model,
            symmetries: Vec::new(),
            counting: false,
        }
    }

    /// Keys under the model's symmetries at `indices` (into `model.symmetries()`): the search
    /// counts orbits, as TLC's `SYMMETRY` does.
    pub fn reduced(model: &'a M, indices: &[usize]) -> Self {
        let all = model.symmetries();
        let symmetries = indices
            .iter()
            .map(|&i| (i, permutations(all[i].size)))
            .collect();
        Keys {
            model,
            symmetries,
            counting: false,
        }
    }

    /// Keys under every symmetry the model declares, each orbit counted as the states it
    /// holds: the counts of a search without symmetry, from one state an orbit. `None` when
    /// the model declares none.
    pub fn counting(model: &'a M) -> Option<Self> {
        let every: Vec<usize> = (0..model.symmetries().len()).collect();
        if every.is_empty() {
            return None;
        }
        Some(Keys {
            counting: true,
            ..Keys::reduced(model, &every)
        })
    }

    pub fn model(&self) -> &'a M {
        self.model
    }

    /// Whether the search counts each orbit's states (`counting`).
    pub fn counts_orbits(&self) -> bool {
        self.counting
    }

    /// The states `state` stands for in the search's counts: its orbit's when counting, else
    /// itself alone.
    pub fn states_of(&self, state: &M::State) -> u64 {
        if !self.counting {
            return 1;
        }
        if let [(symmetry, _)] = self.symmetries[..] {
            if let Some(size) = self.model.orbit_size(state, symmetry) {
                return size;
            }
        }
        let mut images = Vec::new();
        self.each_image(state.clone(), 0, &mut |image| {
            images.push(fingerprint(image));
        });
        distinct(images)
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

/// How many distinct states images' fingerprints stand for: an orbit's size.
fn distinct(mut fingerprints: Vec<u64>) -> u64 {
    fingerprints.sort_unstable();
    fingerprints.dedup();
    fingerprints.len() as u64
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

/// Checks a model's `canonical` and `orbit_size` against its `permute` on `states`: every
/// image of a state under the symmetry has the same representative, the representative is one
/// of the images, and the orbit's size is the number of distinct images. For the models' tests.
pub fn check_canonical<M: Spec>(
    model: &M,
    symmetry: usize,
    states: &[M::State],
) -> Result<(), String> {
    let permutations = permutations(model.symmetries()[symmetry].size);
    for state in states {
        let images: Vec<M::State> = permutations
            .iter()
            .map(|p| model.permute(state, symmetry, p))
            .collect();
        if let Some(orbit) = model.orbit_size(state, symmetry) {
            let distinct_images = distinct(images.iter().map(fingerprint).collect());
            if orbit != distinct_images {
                return Err(format!(
                    "{state:?}: the model counts {orbit} states in its orbit, its images are \
                     {distinct_images}"
                ));
            }
        }
        let Some(representative) = model.canonical(state, symmetry) else {
            return Err("the model names no representative".into());
        };
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
    use crate::model::Model;
    use crate::spec::Variables;
    use crate::Shown;

    /// Three processes, each holding a value below 3, interchangeable; the model names no
    /// representative and counts no orbit, so the engine's own ways are used.
    struct Three;

    impl Model for Three {
        type State = [u8; 3];
        type Action = usize;
        fn init_states(&self) -> Vec<[u8; 3]> {
            vec![[0; 3]]
        }
        fn actions(&self, _: &[u8; 3], actions: &mut Vec<usize>) {
            actions.extend(0..3);
        }
        fn next_state(&self, s: &[u8; 3], p: usize) -> Option<[u8; 3]> {
            let mut next = *s;
            next[p] = (next[p] + 1) % 3;
            Some(next)
        }
    }

    impl Spec for Three {
        fn variables(&self, s: &[u8; 3]) -> Variables {
            vec![("v", Shown::name(format!("{s:?}")))]
        }
        fn symmetries(&self) -> Vec<crate::spec::Symmetry> {
            vec![crate::spec::Symmetry {
                name: "Processes",
                size: 3,
            }]
        }
        fn permute(&self, s: &[u8; 3], _: usize, to: &[u8]) -> [u8; 3] {
            let mut image = [0; 3];
            for (p, &t) in to.iter().enumerate() {
                image[t as usize] = s[p];
            }
            image
        }
    }

    /// Counted by its distinct images: three values alike are one state, two alike three,
    /// all different six; plain or reduced keys count every key as one.
    #[test]
    fn an_orbit_counts_its_distinct_images() {
        let counting = Keys::counting(&Three).expect("Three declares a symmetry");
        assert_eq!(counting.states_of(&[1, 1, 1]), 1);
        assert_eq!(counting.states_of(&[2, 1, 2]), 3);
        assert_eq!(counting.states_of(&[0, 2, 1]), 6);
        assert_eq!(counting.key(&[2, 1, 2]), counting.key(&[2, 2, 1]));
        assert_eq!(Keys::plain(&Three).states_of(&[0, 2, 1]), 1);
        assert_eq!(Keys::reduced(&Three, &[0]).states_of(&[0, 2, 1]), 1);
        assert!(
            Keys::counting(&Lone).is_none(),
            "no symmetry, no counting keys"
        );
    }

    /// A model that declares no symmetry.
    struct Lone;

    impl Model for Lone {
        type State = u8;
        type Action = u8;
        fn init_states(&self) -> Vec<u8> {
            vec![0]
        }
        fn actions(&self, _: &u8, _: &mut Vec<u8>) {}
        fn next_state(&self, _: &u8, _: u8) -> Option<u8> {
            None
        }
    }

    impl Spec for Lone {
        fn variables(&self, s: &u8) -> Variables {
            vec![("v", s.into())]
        }
    }

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
