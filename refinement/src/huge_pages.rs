//! Huge pages for the tables a search looks up at random.
//!
//! A lookup in a visited set of hundreds of megabytes lands on a page of its own nearly every
//! time; with 4 KiB pages each such lookup also misses the processor's page-translation cache
//! and walks the page tables, so the search waits on memory twice. Linux backs a region with
//! 2 MiB pages where the program asks for them (`madvise`, the default setting of transparent
//! huge pages), 512 times fewer pages to translate.

/// The size of a huge page on x86-64 and most arm64 kernels.
const HUGE_PAGE: usize = 2 << 20;

/// Asks the kernel to back `buffer`'s allocation (its whole capacity, before it is written)
/// with huge pages. A hint: where the kernel does not follow it, nothing changes but speed.
pub fn advise<T>(buffer: &Vec<T>) {
    let bytes = buffer.capacity() * std::mem::size_of::<T>();
    // A small table fits the translation cache anyway.
    if bytes < 4 * HUGE_PAGE {
        return;
    }
    let start = buffer.as_ptr() as usize;
    let first = start.next_multiple_of(HUGE_PAGE);
    let end = (start + bytes) / HUGE_PAGE * HUGE_PAGE;
    if end > first {
        #[cfg(target_os = "linux")]
        // SAFETY: the range lies inside `buffer`'s own allocation, and MADV_HUGEPAGE changes
        // how it is backed, never its contents or whether it is mapped.
        unsafe {
            libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
        }
    }
}
