//! What every fuzz target shares: a counting global allocator that holds
//! a decoder to its memory contract.
//!
//! The contract (STYLE.md "Nothing a client sends may reach an assert",
//! issue 26): a decoder given `n` bytes never holds more than
//! `64 × n + 1 MiB` of live heap at once. A forged array count or length
//! that pre-sizes a `Vec` breaks it long before the machine runs out of
//! memory; the allocator refuses any single request above the bound (the
//! process aborts with "memory allocation of N bytes failed", which
//! libFuzzer reports as a crash with the input saved), and
//! [`check_bounded`] fails when the peak of many smaller ones does.
//!
//! Only Rust allocations are counted; the C codecs' (zstd) go to malloc
//! directly.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Live bytes allowed per input byte.
pub const BYTES_PER_INPUT_BYTE: usize = 64;
/// Live bytes allowed whatever the input.
pub const SLACK_BYTES: usize = 1 << 20;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// Live bytes beyond which an allocation is refused (usize::MAX: none).
static LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);

/// The global allocator of every target (`#[global_allocator]` is set
/// here, so a target only has to link this crate).
pub struct CountingAlloc;

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

impl CountingAlloc {
    fn grow_live(size: usize) -> bool {
        let live = LIVE.fetch_add(size, Ordering::Relaxed) + size;
        PEAK.fetch_max(live, Ordering::Relaxed);
        if live > LIMIT.load(Ordering::Relaxed) {
            LIVE.fetch_sub(size, Ordering::Relaxed);
            return false;
        }
        true
    }
}

// SAFETY: every method forwards to `System` with the caller's layout and
// only adds bookkeeping; a refused request returns null, which callers of
// `GlobalAlloc` must handle (Rust's collections abort).
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !Self::grow_live(layout.size()) {
            return std::ptr::null_mut();
        }
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !Self::grow_live(layout.size()) {
            return std::ptr::null_mut();
        }
        System.alloc_zeroed(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            if !Self::grow_live(new_size - layout.size()) {
                return std::ptr::null_mut();
            }
        } else {
            LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
        }
        System.realloc(ptr, layout, new_size)
    }
}

/// The live-heap bound for an input of `input_len` bytes.
pub fn bound_for(input_len: usize) -> usize {
    input_len
        .saturating_mul(BYTES_PER_INPUT_BYTE)
        .saturating_add(SLACK_BYTES)
}

/// Run `decode` on an input of `input_len` bytes under the memory
/// contract: no single allocation may take live heap past the bound
/// (refused → abort), and the peak is checked afterwards (panic). Returns
/// what `decode` returned.
pub fn check_bounded<T>(input_len: usize, decode: impl FnOnce() -> T) -> T {
    check_bounded_by(bound_for(input_len), decode)
}

/// [`check_bounded`] with an explicit bound in bytes of live heap above
/// what was live before `decode` ran.
pub fn check_bounded_by<T>(bound: usize, decode: impl FnOnce() -> T) -> T {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    LIMIT.store(base.saturating_add(bound), Ordering::Relaxed);
    let out = decode();
    LIMIT.store(usize::MAX, Ordering::Relaxed);
    let peak = PEAK.load(Ordering::Relaxed) - base;
    assert!(
        peak <= bound,
        "decoder held {peak} bytes of live heap; the bound is {bound}"
    );
    out
}

/// Run `decode` with no bound and return what it returned and the peak of
/// live heap it held, for contracts that depend on the output (an inflated
/// section may be as large as the walk's limit).
pub fn peak_of<T>(decode: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let out = decode();
    (out, PEAK.load(Ordering::Relaxed) - base)
}
