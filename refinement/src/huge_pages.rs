//! Huge pages for the tables a search looks up at random.
//!
//! A lookup in a visited set of hundreds of megabytes lands on a page of its own nearly every
//! time; with 4 KiB pages each such lookup also misses the processor's page-translation cache
//! and walks the page tables, so the search waits on memory twice. Linux backs a region with
//! 2 MiB pages where the program asks for them (`madvise`, the default setting of transparent
//! huge pages), 512 times fewer pages to translate.

/// The size of a huge page on x86-64 and most arm64 kernels.
pub(crate) const HUGE_PAGE: usize = 2 << 20;

/// Asks the kernel to back the `bytes` of mapped memory at `start` (before they are written)
/// with huge pages. A hint: where the kernel does not follow it, nothing changes but speed.
pub fn advise(start: *const u8, bytes: usize) {
    if !worth(bytes) {
        return;
    }
    let start = start as usize;
    let first = start.next_multiple_of(HUGE_PAGE);
    let end = (start + bytes) / HUGE_PAGE * HUGE_PAGE;
    if end > first {
        #[cfg(target_os = "linux")]
        // SAFETY: the caller's range is mapped memory of its own, and MADV_HUGEPAGE changes
        // how it is backed, never its contents or whether it is mapped.
        unsafe {
            libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
        }
    }
}

/// `len` copies of `value` in memory the kernel is asked to back with huge pages before the
/// first is written: for an array a walk reads at random (Tarjan's marks), where 4 KiB pages
/// would cost a page-table walk on nearly every read and a page fault every 512 marks.
pub(crate) fn filled<T: Copy>(len: usize, value: T) -> Vec<T> {
    let mut vec: Vec<T> = Vec::with_capacity(len);
    advise(vec.as_ptr().cast(), len * std::mem::size_of::<T>());
    vec.resize(len, value);
    vec
}

/// Whether a table of `bytes` is worth huge pages: a small one fits the translation cache
/// anyway, and would pay for zeroing a whole huge page.
pub fn worth(bytes: usize) -> bool {
    bytes >= 4 * HUGE_PAGE
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_filled_array_holds_its_value_everywhere() {
        for len in [0, 3, super::HUGE_PAGE] {
            let marks = super::filled(len, (u32::MAX, 7u32));
            assert_eq!(marks.len(), len);
            assert!(marks.iter().all(|&m| m == (u32::MAX, 7)));
        }
    }
}
