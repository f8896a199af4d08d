//! `[io]` The process's global allocator: the system allocator, with huge
//! requests served by lazily backed anonymous mappings (see
//! [`LazyHugeAllocator`]). The binary installs it (`main.rs`:
//! `#[global_allocator] static ALLOCATOR`); the library only declares it,
//! so tests and benches linking the library keep the system allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::num::NonZeroUsize;
use std::ptr::NonNull;

use nix::sys::mman::{mmap_anonymous, mremap, munmap, MRemapFlags, MapFlags, ProtFlags};

/// Allocations of at least this size reserve address space lazily.
const LAZY_ALLOC_BYTES: usize = 1 << 30;
/// mmap alignment (page size on every Linux target we run on).
const PAGE_BYTES: usize = 4096;

/// The system allocator, except that huge allocations are anonymous
/// `MAP_NORESERVE` mappings backed only where touched.
///
/// Why: `kafka-protocol`'s generated decoders call `Vec::with_capacity(n)`
/// with an element count read from the wire before reading the elements.
/// A hostile count asks for hundreds of GiB; malloc refuses (overcommit
/// heuristic) and Rust aborts the whole process. Handlers check the counts
/// they know about (`protocol::decode::check_array_len`); this is the
/// backstop for any they miss: the reservation succeeds, decoding fails at
/// the end of the (bounded) frame, the mapping is released, and only that
/// connection is closed.
pub struct LazyHugeAllocator;

fn is_lazy(size: usize, align: usize) -> bool {
    size >= LAZY_ALLOC_BYTES && align <= PAGE_BYTES
}

// SAFETY: delegates to `System` except for huge sizes, which get fresh
// private anonymous mappings (page-aligned, zero-filled) that are unmapped
// with the same size in `dealloc`; `realloc` preserves contents.
unsafe impl GlobalAlloc for LazyHugeAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if is_lazy(layout.size(), layout.align()) {
            return map_lazy(layout.size());
        }
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if is_lazy(layout.size(), layout.align()) {
            return map_lazy(layout.size()); // anonymous mappings are zeroed
        }
        // SAFETY: same contract as ours.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if is_lazy(layout.size(), layout.align()) {
            if let Some(mapping) = NonNull::new(ptr.cast()) {
                // SAFETY: `ptr` came from `map_lazy(layout.size())`.
                let _ = unsafe { munmap(mapping, layout.size()) };
            }
            return;
        }
        // SAFETY: `ptr` came from `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let (old_lazy, new_lazy) = (
            is_lazy(layout.size(), layout.align()),
            is_lazy(new_size, layout.align()),
        );
        if !old_lazy && !new_lazy {
            // SAFETY: same contract as ours.
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        if old_lazy && new_lazy {
            // Move the page tables, never the (mostly untouched) pages: a
            // copy would touch the whole old reservation.
            let Some(mapping) = NonNull::new(ptr.cast()) else {
                return std::ptr::null_mut();
            };
            // SAFETY: `ptr` is a mapping of `layout.size()` bytes from
            // `map_lazy`; MREMAP_MAYMOVE returns a new page-aligned mapping.
            let moved = unsafe {
                mremap(
                    mapping,
                    layout.size(),
                    new_size,
                    MRemapFlags::MREMAP_MAYMOVE,
                    None,
                )
            };
            return moved.map_or(std::ptr::null_mut(), |m| m.as_ptr().cast());
        }
        // One side is below LAZY_ALLOC_BYTES, so the copy is below it too.
        // SAFETY: `new_size` is non-zero and, with the old alignment, a
        // valid layout (the caller guarantees it does not overflow).
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: fresh allocation, then a copy of the overlapping prefix
        // between two distinct blocks, then release of the old block.
        unsafe {
            let new = self.alloc(new_layout);
            if !new.is_null() {
                std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
            new
        }
    }
}

fn map_lazy(size: usize) -> *mut u8 {
    let Some(len) = NonZeroUsize::new(size) else {
        return std::ptr::null_mut();
    };
    // SAFETY: anonymous private mapping; no file, no fixed address.
    let mapped = unsafe {
        mmap_anonymous(
            None,
            len,
            ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
            MapFlags::MAP_PRIVATE | MapFlags::MAP_NORESERVE,
        )
    };
    mapped.map_or(std::ptr::null_mut(), |p| p.as_ptr().cast())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_layout_is_mapped_lazily_grown_in_place_and_released() {
        let a = LazyHugeAllocator;
        let layout = Layout::from_size_align(64 << 30, 8).unwrap();
        // SAFETY: non-zero layout; the block is written inside its size
        // and released with the layout it was allocated (or grown) with.
        unsafe {
            let p = a.alloc_zeroed(layout);
            assert!(!p.is_null());
            assert_eq!(*p.add(4096), 0);
            *p.add(4096) = 7;
            let grown = a.realloc(p, layout, 128 << 30);
            assert!(!grown.is_null());
            assert_eq!(*grown.add(4096), 7);
            a.dealloc(grown, Layout::from_size_align(128 << 30, 8).unwrap());
        }
    }
}
