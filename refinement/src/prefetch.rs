//! Asking the processor for memory before it is read.
//!
//! A search looks up many places that do not depend on each other (slots of the visited set,
//! the marks of a state's successors); told ahead, their cache misses overlap instead of each
//! waiting for the last.

/// Asks the processor to bring `value`'s cache line into its cache. A hint: nothing changes
/// but speed, on processors without the instruction not even that.
#[inline]
pub(crate) fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let address: *const T = value;
        // SAFETY: a prefetch reads nothing into the program and cannot fault, whatever the
        // address; this one is a reference's besides.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(address.cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
