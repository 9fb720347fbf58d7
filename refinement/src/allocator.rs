//! How a process that runs many searches asks the C allocator to treat large blocks.
//!
//! glibc's `malloc` serves a block of 128 KiB or more from a mapping of its own, given back to
//! the system when freed, but raises that threshold to the size of every such block freed, up
//! to 32 MiB. A search frees its frontier, its graph's arrays and its chunks' buffers at the
//! end, so the next search in the same process (a suite, `mutate`, `bench`'s repeated runs) was
//! served those up to 32 MiB from the allocator's heaps: memory a heap keeps once freed, and
//! spread over one heap per thread. Measured in `bench` on the 835 suite's Kafka MaxOffset=4:
//! the peak RSS of each run after the first 391 MiB, against 212 MiB with the threshold fixed,
//! and on two threads 0.53-0.55 s against 0.51 s (a single run in a fresh process: 0.51 s);
//! `mutate` held 863 MB at its peak and holds 645 MB, in the same time.

/// The smallest block served from a mapping of its own: glibc's default, now kept.
const MAPPED_FROM: usize = 128 * 1024;

/// Keeps the C allocator's threshold for mapping a block at its default for the rest of the
/// process (setting it stops glibc from raising it). A process-wide setting, so the CLI's
/// entry point calls it, never a search; elsewhere than glibc, nothing to do.
pub fn map_large_blocks() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a parameter of the allocator, which every later allocation
    // reads under the allocator's own lock; no memory is touched.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MAPPED_FROM as libc::c_int);
    }
}
