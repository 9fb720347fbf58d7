//! Appending to a vector from every core.
//!
//! A batch's chunks each bring the next states, edges and fingerprints in order; appended on one
//! core, they were a tenth of ReplayFence's search with the other core idle, most of it the
//! kernel backing the vectors' new pages on first write. Here each chunk writes its own stretch
//! of the vector's spare room, on any core.

use std::mem::MaybeUninit;

use rayon::prelude::*;

/// Appends each part's items to `vec`, in the order of the parts: part i is its length and an
/// iterator giving exactly that many items, written on any core.
///
/// # Panics
/// If a part's iterator gives fewer items than its length (the vector is then left as it was,
/// the items written leaked).
pub(crate) fn extend_in_parts<T, I>(vec: &mut Vec<T>, parts: Vec<(usize, I)>)
where
    T: Send,
    I: Iterator<Item = T> + Send,
{
    let total: usize = parts.iter().map(|(len, _)| len).sum();
    vec.reserve(total);
    let mut rest = &mut vec.spare_capacity_mut()[..total];
    let mut stretches: Vec<(&mut [MaybeUninit<T>], I)> = Vec::with_capacity(parts.len());
    for (len, items) in parts {
        let (stretch, after) = rest.split_at_mut(len);
        stretches.push((stretch, items));
        rest = after;
    }
    stretches.into_par_iter().for_each(|(stretch, mut items)| {
        for slot in stretch {
            slot.write(
                items
                    .next()
                    .expect("a part gives as many items as its length"),
            );
        }
    });
    let len = vec.len();
    // SAFETY: the `total` slots after `len` are the stretches, each written in full above (a
    // part short of items panicked, and the panic reached here before this line).
    unsafe { vec.set_len(len + total) };
}

/// Where each of a run of consecutive ranges of these lengths starts, the first at 0.
pub(crate) fn starts(lengths: impl Iterator<Item = usize>) -> Vec<usize> {
    lengths
        .scan(0, |next, len| {
            let start = *next;
            *next += len;
            Some(start)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_appended_in_order_after_what_the_vector_held() {
        let mut vec = vec![0u32];
        let parts: Vec<(usize, std::ops::Range<u32>)> = (0..50u32)
            .map(|p| ((p % 7) as usize, p * 10..p * 10 + p % 7))
            .collect();
        let expected: Vec<u32> = std::iter::once(0)
            .chain(parts.iter().flat_map(|(_, r)| r.clone()))
            .collect();
        extend_in_parts(&mut vec, parts);
        assert_eq!(vec, expected);
    }

    #[test]
    fn a_part_short_of_items_panics_and_leaves_the_vector_as_it_was() {
        let mut vec = vec![1u64, 2];
        let short = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            extend_in_parts(&mut vec, vec![(2, 10..12u64), (3, 20..22u64)]);
        }));
        assert!(short.is_err());
        assert_eq!(vec, [1, 2]);
    }
}
