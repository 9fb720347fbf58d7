//! A table of zeroed memory that grows where it lies.
//!
//! The visited set doubles many times in a large search. Grown into a fresh allocation, each
//! growth wrote every slot of a table twice the size (a page fault, and the kernel's zeroing of
//! the page, for each) and then gave the old table back: a search touched about twice the
//! memory it kept, and on a virtual machine a fresh page costs more than the lookups that use
//! it (casfw_reap Writers=4 MaxOffset=5: a quarter of its time zeroing pages). Here the table
//! lies at the start of a reservation of address space as large as the machine's memory,
//! which costs nothing until written; growing it only lengthens the slice, its new part
//! already zero, and the search moves its entries within the one table.

use std::ptr::NonNull;
use std::sync::OnceLock;

/// A type for which all-zero bytes are a valid value.
///
/// # Safety
/// Every bit pattern of zeros must be a valid `Self` (atomics of integers, integers).
pub unsafe trait ZeroValid {}

/// The slots `0..len` of a reservation, zero where never written.
pub struct ZeroedTable<T: ZeroValid> {
    /// The first slot, aligned to a huge page.
    start: NonNull<T>,
    len: usize,
    /// Slots the reservation holds from `start`.
    reserved: usize,
    /// The mapping as the kernel gave it (before aligning), to give back on drop.
    mapping: NonNull<libc::c_void>,
    mapping_bytes: usize,
}

// SAFETY: the table owns its mapping as a `Vec` owns its buffer; sharing it shares `&[T]`.
unsafe impl<T: ZeroValid + Send> Send for ZeroedTable<T> {}
// SAFETY: as above; `&ZeroedTable` only gives out `&[T]`.
unsafe impl<T: ZeroValid + Sync> Sync for ZeroedTable<T> {}

impl<T: ZeroValid> ZeroedTable<T> {
    /// A table of `len` zeroed slots, with room reserved to grow to the memory the process
    /// may use.
    pub fn new(len: usize) -> ZeroedTable<T> {
        let wanted = slot_bytes::<T>(len).max(reservation());
        // Under strict overcommit a reservation the size of memory is refused: then one of
        // just the table's size, copied to a larger one when it grows past it.
        let (mapping, mapping_bytes) = map(wanted)
            .or_else(|| map(slot_bytes::<T>(len)))
            .unwrap_or_else(|| panic!("cannot map {len} slots of memory"));
        let mut table = ZeroedTable::empty_in(mapping, mapping_bytes);
        table.grow(len);
        table
    }

    /// An empty table at the first huge page of a fresh mapping.
    fn empty_in(mapping: NonNull<libc::c_void>, mapping_bytes: usize) -> ZeroedTable<T> {
        let mut table = ZeroedTable {
            start: mapping.cast(),
            len: 0,
            reserved: 0,
            mapping,
            mapping_bytes,
        };
        table.place();
        table
    }

    /// Aligns `start` to a huge page inside the mapping (`map` adds one for it) and counts
    /// the slots after it.
    fn place(&mut self) {
        let base = self.mapping.as_ptr() as usize;
        let aligned = base.next_multiple_of(crate::huge_pages::HUGE_PAGE);
        // SAFETY: `aligned` lies inside the mapping, which is not null.
        self.start = unsafe { NonNull::new_unchecked(aligned as *mut T) };
        self.reserved = (base + self.mapping_bytes - aligned) / std::mem::size_of::<T>();
    }

    /// Lengthens the table to `len` slots, the new ones zero; the old keep their contents
    /// and, while the reservation lasts, their addresses.
    ///
    /// Pages written before the table was worth huge pages stay small, so the growth that
    /// makes it worth them moves it to a fresh reservation, advised before it is written.
    pub fn grow(&mut self, len: usize) {
        assert!(len >= self.len, "a table only grows");
        let worth = |slots| crate::huge_pages::worth(slot_bytes::<T>(slots));
        let written_small = self.len > 0 && !worth(self.len) && worth(len);
        if len > self.reserved || written_small {
            self.remap(self.reserved.max(len.saturating_mul(2)), len);
        } else {
            self.advise(len);
        }
        self.len = len;
    }

    /// Asks for huge pages under the first `len` slots (where they are worth it).
    fn advise(&self, len: usize) {
        crate::huge_pages::advise(self.start.as_ptr().cast(), slot_bytes::<T>(len));
    }

    /// Copies the table to a fresh mapping of `slots` slots, advised for a table of `len`
    /// before it is written.
    fn remap(&mut self, slots: usize, len: usize) {
        let (mapping, mapping_bytes) = map(slot_bytes::<T>(slots))
            .unwrap_or_else(|| panic!("cannot map {slots} slots of memory"));
        let old = std::mem::replace(self, ZeroedTable::empty_in(mapping, mapping_bytes));
        self.advise(len);
        // SAFETY: both ranges are mapped, `old.len` slots long, and do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(old.start.as_ptr(), self.start.as_ptr(), old.len);
        }
        self.len = old.len;
    }

    /// Bytes of the slots `0..len` (the pages the table may have written).
    pub fn bytes(&self) -> usize {
        slot_bytes::<T>(self.len)
    }
}

impl<T: ZeroValid> std::ops::Deref for ZeroedTable<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `len` slots from `start` lie inside the mapping, zeroed or written as `T`,
        // and zeros are a valid `T`.
        unsafe { std::slice::from_raw_parts(self.start.as_ptr(), self.len) }
    }
}

impl<T: ZeroValid> std::ops::DerefMut for ZeroedTable<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and `&mut self` is the only way in.
        unsafe { std::slice::from_raw_parts_mut(self.start.as_ptr(), self.len) }
    }
}

impl<T: ZeroValid> Drop for ZeroedTable<T> {
    fn drop(&mut self) {
        // SAFETY: the mapping is ours, mapped by `map` with this length, and no slice of it
        // outlives `self`.
        unsafe {
            libc::munmap(self.mapping.as_ptr(), self.mapping_bytes);
        }
    }
}

fn slot_bytes<T>(slots: usize) -> usize {
    slots
        .saturating_mul(std::mem::size_of::<T>())
        .max(std::mem::size_of::<T>())
}

/// Maps `bytes` of zeroed memory (plus a huge page, for aligning), counted against nothing
/// until written.
fn map(bytes: usize) -> Option<(NonNull<libc::c_void>, usize)> {
    let bytes = bytes.checked_add(crate::huge_pages::HUGE_PAGE)?;
    // SAFETY: an anonymous private mapping at an address the kernel picks touches no memory
    // of ours.
    let mapping = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if mapping == libc::MAP_FAILED {
        return None;
    }
    NonNull::new(mapping).map(|mapping| (mapping, bytes))
}

/// Bytes of address space a table reserves: the memory the process may use (a larger table
/// would not be held anyway), read once for every table of the run; none where it cannot be
/// read, each table then copied when it outgrows its mapping.
fn reservation() -> usize {
    static BYTES: OnceLock<usize> = OnceLock::new();
    *BYTES.get_or_init(|| {
        crate::budget::available_memory()
            .map_or(0, |bytes| usize::try_from(bytes).unwrap_or(usize::MAX))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

    // SAFETY: an AtomicU64 of zero bytes is 0.
    unsafe impl ZeroValid for AtomicU64 {}

    #[test]
    fn grows_in_place_keeping_what_was_written_and_zero_after() {
        let mut table = ZeroedTable::<AtomicU64>::new(1000);
        assert!(table.iter().all(|v| v.load(Relaxed) == 0));
        for (i, v) in table.iter().enumerate() {
            v.store(i as u64 + 1, Relaxed);
        }
        let before = table.as_ptr();
        table.grow(100_000);
        assert_eq!(table.as_ptr(), before, "grown where it lay");
        assert_eq!(table.len(), 100_000);
        for (i, v) in table.iter().enumerate() {
            let expected = if i < 1000 { i as u64 + 1 } else { 0 };
            assert_eq!(v.load(Relaxed), expected);
        }
    }

    /// Pages written while the table was small stay small pages: the growth that makes it
    /// worth huge pages moves it once, the growths after leave it where it lies.
    #[test]
    fn moves_once_when_it_becomes_worth_huge_pages() {
        let mut table = ZeroedTable::<AtomicU64>::new(1000);
        table[999].store(7, Relaxed);
        let small = table.as_ptr();
        let huge = crate::huge_pages::HUGE_PAGE * 4 / 8;
        table.grow(huge);
        assert_ne!(table.as_ptr(), small, "moved to a fresh reservation");
        let moved = table.as_ptr();
        table.grow(huge * 2);
        assert_eq!(table.as_ptr(), moved);
        assert_eq!(table[999].load(Relaxed), 7);
        assert_eq!(table[huge * 2 - 1].load(Relaxed), 0);
    }

    #[test]
    fn grows_past_its_reservation_by_moving() {
        let mut table = ZeroedTable::<AtomicU64>::new(10);
        table[9].store(9, Relaxed);
        let past = table.reserved + 1;
        table.grow(past);
        assert_eq!(table[9].load(Relaxed), 9);
        assert_eq!(table[past - 1].load(Relaxed), 0);
    }
}
