//! `allocator::map_large_blocks`, in a process of its own: the setting is process-wide.

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn a_large_block_is_still_mapped_after_a_larger_one_was_freed() {
    use std::hint::black_box;

    /// Blocks the allocator serves from mappings of their own, now.
    fn mapped_blocks() -> usize {
        // SAFETY: mallinfo2 only reads the allocator's counters.
        unsafe { libc::mallinfo2() }.hblks
    }

    loadbearing_refinement::allocator::map_large_blocks();
    // Left to itself, glibc would now serve blocks of up to 8 MiB from its heap.
    drop(black_box(vec![1u8; 8 << 20]));
    let before = mapped_blocks();
    let block = black_box(Vec::<u8>::with_capacity(1 << 20));
    assert_eq!(mapped_blocks(), before + 1, "a 1 MiB block from the heap");
    drop(block);
    assert_eq!(mapped_blocks(), before, "a freed block given back");
}
