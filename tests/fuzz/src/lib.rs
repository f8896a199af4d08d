//! What every fuzz target shares: a counting global allocator that holds
//! a decoder to its memory contract.
//!
//! The contract (STYLE.md "Nothing a client sends may reach an assert",
//! issue 26): a decoder given `n` bytes never holds more than
//! `64 × n + 1 MiB` of live heap at once. A forged array count or length
//! that pre-sizes a `Vec` breaks it long before the machine runs out of
//! memory; the allocator refuses any request that would take live heap
//! past the bound (the process stops on SIGSEGV, which libFuzzer reports
//! as a crash with the input saved), and
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
    /// Count `size` more live bytes; a request past the limit never returns.
    fn grow_live(size: usize) {
        let live = LIVE.fetch_add(size, Ordering::Relaxed) + size;
        PEAK.fetch_max(live, Ordering::Relaxed);
        // A failed assertion formats its report while the limit holds
        // (libfuzzer-sys aborts before unwinding): not the decoder's.
        if live > LIMIT.load(Ordering::Relaxed) && !std::thread::panicking() {
            refuse(size);
        }
    }
}

/// An allocation past the bound: say so and crash the way libFuzzer
/// records (a deadly signal: it saves the input as `crash-*`). Neither
/// panicking (an allocator must not unwind) nor returning null (Rust's
/// out-of-memory abort, which libFuzzer does not record as a crash) will do.
fn refuse(size: usize) -> ! {
    let mut msg = *b"fuzz: decoder asked for 0x0000000000000000 bytes past its memory bound\n";
    let digits = b"0123456789abcdef";
    for i in 0..16 {
        msg[26 + i] = digits[(size >> (60 - 4 * i)) & 0xf];
    }
    // SAFETY: writes a stack buffer to stderr; raises a signal whose
    // handler (libFuzzer's) does not return.
    unsafe {
        libc::write(2, msg.as_ptr().cast(), msg.len());
        libc::raise(libc::SIGSEGV);
        libc::abort()
    }
}

// SAFETY: every method forwards to `System` with the caller's layout and
// only adds bookkeeping; a refused request never returns.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        Self::grow_live(layout.size());
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        Self::grow_live(layout.size());
        System.alloc_zeroed(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            Self::grow_live(new_size - layout.size());
        } else {
            LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
        }
        System.realloc(ptr, layout, new_size)
    }
}

/// A failed assertion inside a bounded run formats its message (and
/// libfuzzer-sys's hook aborts before unwinding): lift the limit first so
/// the report is not mistaken for the decoder's allocation.
fn lift_limit_on_panic() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            LIMIT.store(usize::MAX, Ordering::Relaxed);
            previous(info);
        }));
    });
}

/// Lifts the allocation limit when dropped.
struct LiftLimit;

impl Drop for LiftLimit {
    fn drop(&mut self) {
        LIMIT.store(usize::MAX, Ordering::Relaxed);
    }
}

/// The live-heap bound for an input of `input_len` bytes.
pub fn bound_for(input_len: usize) -> usize {
    input_len
        .saturating_mul(BYTES_PER_INPUT_BYTE)
        .saturating_add(SLACK_BYTES)
}

/// Run `decode` on an input of `input_len` bytes under the memory
/// contract: no allocation may take live heap past the bound (refused:
/// SIGSEGV), and the peak is checked afterwards (panic). Returns
/// what `decode` returned.
pub fn check_bounded<T>(input_len: usize, decode: impl FnOnce() -> T) -> T {
    check_bounded_by(bound_for(input_len), decode)
}

/// [`check_bounded`] with an explicit bound in bytes of live heap above
/// what was live before `decode` ran.
pub fn check_bounded_by<T>(bound: usize, decode: impl FnOnce() -> T) -> T {
    lift_limit_on_panic();
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    LIMIT.store(base.saturating_add(bound), Ordering::Relaxed);
    let out = {
        // Lifted on unwind too, so a failed assertion can format its
        // message and libFuzzer can save the input.
        let _lift = LiftLimit;
        decode()
    };
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
