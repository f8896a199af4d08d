//! `[io]` Per-shard pool of DMA write buffers whose filled bytes are lent
//! out as `Bytes` (ARCHITECTURE.md §4: the batch cache holds exactly the
//! appended bytes).
//!
//! Why: the batch cache used to keep each produce request's own buffer
//! alive. Those buffers were fresh heap memory for every request (the cache
//! holds tens of MiB of them), so the append path paid a page fault per
//! 4 KiB (PLATFORM.md: first touch ~1.3 GB/s) plus a second copy. Now a
//! batch is copied once, into the appender's aligned buffer, and the cache
//! holds a slice of that buffer. A buffer goes back to this pool when its
//! write has completed and the last lent slice is dropped (cache eviction,
//! fetch response sent), so its pages stay mapped and the next fill touches
//! warm memory.
//!
//! Safety invariant: bytes of a buffer that were lent are never written
//! again until the buffer is recycled, and a buffer is recycled or freed
//! only when no lent slice is alive (checked with `Arc::get_mut`, which
//! synchronises with slices dropped on other threads). A buffer that still
//! has lent slices when its owner goes away is leaked, never freed.

use std::cell::RefCell;
use std::ops::Range;
use std::rc::Rc;
use std::sync::Arc;

use bytes::Bytes;
use glommio::io::DmaBuffer;

/// Free buffers kept per shard beyond those in use: enough for a roll or a
/// burst on another partition without holding much idle memory.
const FREE_MAX: usize = 8;

/// The shard's pool (one per shard, in its `ShardStorage`): every buffer
/// taken from it holds a handle to retire into.
pub type SharedBufferPool = Rc<RefCell<BufferPool>>;

/// A buffer being filled by the appender. Bytes below `lent_end` are
/// immutable (slices of them are alive or may be).
pub struct FillBuffer {
    buf: Option<DmaBuffer>,
    /// The pool the buffer goes back to.
    pool: SharedBufferPool,
    /// One strong count per lent slice, plus this one.
    leases: Arc<()>,
    lent_end: usize,
}

/// The owner behind a lent `Bytes`: keeps its buffer from being reused.
struct Lease {
    _leases: Arc<()>,
    ptr: *const u8,
    len: usize,
}

// SAFETY: a lease only reads `len` bytes at `ptr`, which stay allocated and
// unchanged while any lease of the buffer is alive (module invariant); the
// buffer itself is dropped or reused only on its shard, after the Arc
// count shows no lease is left.
unsafe impl Send for Lease {}
// SAFETY: as above; the memory is immutable while shared.
unsafe impl Sync for Lease {}

impl AsRef<[u8]> for Lease {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: see `unsafe impl Send for Lease`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl FillBuffer {
    fn new(buf: DmaBuffer, pool: SharedBufferPool) -> Self {
        FillBuffer {
            buf: Some(buf),
            pool,
            leases: Arc::new(()),
            lent_end: 0,
        }
    }

    #[allow(
        clippy::expect_used,
        reason = "an invariant of this type: the buffer is taken only by into_shared and drop"
    )]
    fn dma(&self) -> &DmaBuffer {
        // `buf` is `None` only inside `into_shared` / `drop`.
        self.buf.as_ref().expect("fill buffer present")
    }

    pub fn len(&self) -> usize {
        self.dma().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn as_bytes(&self) -> &[u8] {
        self.dma().as_bytes()
    }

    /// Copy `src` to `at`. Writing over lent bytes is our bug: it panics.
    #[allow(
        clippy::expect_used,
        reason = "an invariant of this type: the buffer is taken only by into_shared and drop"
    )]
    pub fn copy_in(&mut self, at: usize, src: &[u8]) {
        let end = at + src.len();
        assert!(
            at >= self.lent_end && end <= self.len(),
            "write into lent or missing bytes"
        );
        let buf = self.buf.as_mut().expect("fill buffer present");
        // SAFETY: `at..end` lies inside the buffer and past every lent
        // byte, so no other reference to it exists; raw pointers avoid a
        // `&mut` over the lent prefix, which other threads may be reading.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), buf.as_mut_ptr().add(at), src.len()) }
    }

    /// Lend `range` (already filled) as `Bytes` without copying.
    pub fn lend(&mut self, range: Range<usize>) -> Bytes {
        assert!(range.start <= range.end && range.end <= self.len());
        self.lent_end = self.lent_end.max(range.end);
        let lease = Lease {
            _leases: self.leases.clone(),
            // SAFETY: in bounds (asserted above).
            ptr: unsafe { self.dma().as_ptr().add(range.start) },
            len: range.len(),
        };
        Bytes::from_owner(lease)
    }

    /// Hand the buffer to a write. The pool keeps a handle and recycles
    /// the buffer once the write has dropped its `Rc` and no slice is lent.
    #[allow(
        clippy::expect_used,
        reason = "an invariant of this type: the buffer is taken only by into_shared and drop"
    )]
    pub fn into_shared(mut self) -> Rc<DmaBuffer> {
        let (buf, leases) = self.take_parts().expect("fill buffer present");
        let buf = Rc::new(buf);
        retire(&self.pool, buf.clone(), leases, true);
        buf
    }

    /// Hand the first `len` bytes (page aligned) to a write: a flush of a
    /// partly filled buffer, without copying it. glommio cannot grow a
    /// trimmed buffer back, so the pool frees it (instead of recycling it)
    /// once the write and every lent slice are done with it.
    #[allow(
        clippy::expect_used,
        reason = "an invariant of this type: the buffer is taken only by into_shared and drop"
    )]
    pub fn into_shared_prefix(mut self, len: usize) -> Rc<DmaBuffer> {
        let (mut buf, leases) = self.take_parts().expect("fill buffer present");
        buf.trim_to_size(len);
        let buf = Rc::new(buf);
        retire(&self.pool, buf.clone(), leases, false);
        buf
    }

    /// Zero `range` (past every lent byte): what lands on disk past the
    /// logical end of a flush is zeros, never a reused buffer's old bytes.
    #[allow(
        clippy::expect_used,
        reason = "an invariant of this type: the buffer is taken only by into_shared and drop"
    )]
    pub fn zero(&mut self, range: Range<usize>) {
        assert!(
            range.start >= self.lent_end && range.start <= range.end && range.end <= self.len(),
            "zeroing lent or missing bytes"
        );
        let buf = self.buf.as_mut().expect("fill buffer present");
        // SAFETY: in bounds and past every lent byte (asserted), so no
        // other reference to these bytes exists.
        unsafe { std::ptr::write_bytes(buf.as_mut_ptr().add(range.start), 0, range.len()) }
    }

    /// The buffer and our lease count, leaving `self` empty (so the pool
    /// sees only the leases of lent slices).
    fn take_parts(&mut self) -> Option<(DmaBuffer, Arc<()>)> {
        let buf = self.buf.take()?;
        Some((buf, std::mem::replace(&mut self.leases, Arc::new(()))))
    }
}

impl Drop for FillBuffer {
    fn drop(&mut self) {
        if let Some((buf, leases)) = self.take_parts() {
            retire(&self.pool, Rc::new(buf), leases, true);
        }
    }
}

struct Retired {
    buf: Rc<DmaBuffer>,
    leases: Arc<()>,
    /// Whole (not trimmed): goes back to the free list when idle.
    recycle: bool,
}

impl Retired {
    /// Neither a write nor a lent slice uses the buffer any more.
    fn is_idle(&mut self) -> bool {
        Rc::strong_count(&self.buf) == 1 && Arc::get_mut(&mut self.leases).is_some()
    }
}

/// Free and retired write buffers of one shard.
#[derive(Default)]
pub struct BufferPool {
    free: Vec<DmaBuffer>,
    retired: Vec<Retired>,
    /// Free buffers kept: `FREE_MAX` plus what [`reserve`] asked for.
    reserved: usize,
}

impl BufferPool {
    fn free_max(&self) -> usize {
        FREE_MAX + self.reserved
    }

    /// An idle buffer: back to the free list if it is whole and there is
    /// room, else dropped (freed).
    fn give_back(&mut self, buf: DmaBuffer, recycle: bool) {
        if recycle && self.free.len() < self.free_max() {
            self.free.push(buf);
        }
    }
}

impl BufferPool {
    /// Move idle retired buffers to the free list (dropping extras).
    fn sweep(&mut self) {
        let mut i = 0;
        while i < self.retired.len() {
            if self.retired[i].is_idle() {
                let r = self.retired.swap_remove(i);
                if let Ok(buf) = Rc::try_unwrap(r.buf) {
                    self.give_back(buf, r.recycle);
                }
            } else {
                i += 1;
            }
        }
    }
}

impl Drop for BufferPool {
    fn drop(&mut self) {
        for mut r in self.retired.drain(..) {
            if Arc::get_mut(&mut r.leases).is_none() {
                // Slices may outlive this shard (e.g. in a response being
                // sent elsewhere): never free memory they point to.
                std::mem::forget(r.buf);
            }
        }
    }
}

/// `buf` is done with by its filler: back to `pool` if nothing uses it,
/// else kept there until its write and lent slices are done with it (one
/// still lent when the pool goes is leaked, never freed: `Drop for
/// BufferPool`).
fn retire(pool: &SharedBufferPool, buf: Rc<DmaBuffer>, leases: Arc<()>, recycle: bool) {
    let mut r = Retired {
        buf,
        leases,
        recycle,
    };
    let Ok(mut pool) = pool.try_borrow_mut() else {
        // Only a drop inside the pool's own borrow could get here: leak
        // rather than free memory a lent slice may still read.
        std::mem::forget(r.buf);
        return;
    };
    if r.is_idle() {
        if let Ok(buf) = Rc::try_unwrap(r.buf) {
            pool.give_back(buf, recycle);
        }
        return;
    }
    pool.retired.push(r);
}

impl BufferPool {
    /// A new, empty pool for one shard.
    pub fn shared() -> SharedBufferPool {
        Rc::new(RefCell::new(BufferPool::default()))
    }

    /// Reserve `len`-byte buffers for a batch cache of `budget` bytes, but
    /// never more than this shard's half of the host's memory (`n_shards`
    /// shards share it): a budget typed too large must not make the start
    /// itself run out of memory.
    pub fn reserve_within_memory(&mut self, budget: usize, len: usize, n_shards: usize) {
        self.reserve(reservable_bytes(budget, len, n_shards) / len.max(1), len);
    }
}

/// The bytes [`reserve_within_memory`] reserves for these arguments.
pub fn reservable_bytes(budget: usize, len: usize, n_shards: usize) -> usize {
    let len = len.max(1);
    budget.min(half_of_memory_per_shard(n_shards)) / len * len
}

/// io_uring refuses to register one buffer above 1 GiB (`io_buffer_validate`).
const REGISTER_MAX: usize = 1 << 30;
/// What a shard registers when it may not pin more: 512 KiB keeps three
/// executors' rings within the default 8 MiB RLIMIT_MEMLOCK (PLATFORM.md).
pub const REGISTER_FLOOR: usize = 512 << 10;

/// `[pure]` The memory a data shard registers with io_uring (glommio's
/// `io_memory`) given the write buffers it reserves (`reserved`, see
/// [`reservable_bytes`]) and the writes that may be in flight beyond them.
/// Buffers allocated from it are written with `WRITE_FIXED`: the kernel
/// pinned their pages once, at registration, where a buffer from the heap
/// has its pages pinned and unpinned by every O_DIRECT write
/// (`gup_fast_fallback`, 6% of a shard's profile under the Java producer;
/// broker CPU per MB 0.855x with it, perf/RESULTS.md 2026-12-05). The
/// reserved buffers are allocated first, so they are the ones in it.
/// `may_pin` false (neither root nor a memlock limit that fits it): the
/// floor, as before, rather than a registration that fails.
pub fn registered_bytes(reserved: usize, in_flight: usize, may_pin: bool) -> usize {
    if !may_pin {
        return REGISTER_FLOOR;
    }
    reserved
        .saturating_add(in_flight)
        .clamp(REGISTER_FLOOR, REGISTER_MAX)
}

/// Half of physical memory divided among `n_shards` (unbounded if the
/// host does not say).
fn half_of_memory_per_shard(n_shards: usize) -> usize {
    crate::io::host::physical_memory_bytes().map_or(usize::MAX, |bytes| {
        usize::try_from(bytes).unwrap_or(usize::MAX) / 2 / n_shards.max(1)
    })
}

/// Reserve `count` buffers of `len` bytes for this shard now, each page
/// touched once, and keep that many free from then on. Sized to the batch
/// cache (`shardlog.batch.cache.bytes`): while the cache fills, every
/// append needs a buffer the cache has not given back yet, and fresh heap
/// memory costs a page fault per 4 KiB plus the kernel's zeroing on the
/// append path. Reserving up front is what Redpanda's seastar does with all
/// of its memory.
pub fn reserve(pool: &SharedBufferPool, count: usize, len: usize) {
    pool.borrow_mut().reserve(count, len);
}

impl BufferPool {
    fn reserve(&mut self, count: usize, len: usize) {
        self.reserved = self.reserved.max(count);
        let have = self.free.iter().filter(|b| b.len() == len).count();
        for _ in have..count {
            let mut buf = glommio::allocate_dma_buffer(len);
            buf.as_bytes_mut().fill(0);
            self.free.push(buf);
        }
    }
}

/// A buffer of `len` bytes from `pool`: a recycled one when available,
/// else `alloc`.
pub fn take(
    pool: &SharedBufferPool,
    len: usize,
    alloc: impl FnOnce(usize) -> DmaBuffer,
) -> FillBuffer {
    let recycled = {
        let mut p = pool.borrow_mut();
        p.sweep();
        // The most recently freed buffer: its pages are the warmest.
        p.free
            .iter()
            .rposition(|b| b.len() == len)
            .map(|at| p.free.swap_remove(at))
    };
    FillBuffer::new(recycled.unwrap_or_else(|| alloc(len)), pool.clone())
}

/// Buffers of `pool` waiting for their writes or lent slices, and free
/// ones (tests and diagnostics).
pub fn pool_counts(pool: &SharedBufferPool) -> (usize, usize) {
    let p = pool.borrow();
    (p.retired.len(), p.free.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn in_executor<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        glommio::LocalExecutorBuilder::default()
            .spawn(move || async move { f() })
            .unwrap()
            .join()
            .unwrap()
    }

    const LEN: usize = 8192;

    #[test]
    fn registered_memory_covers_the_reserved_buffers_and_the_writes_in_flight() {
        const MIB: usize = 1 << 20;
        // The default: a 64 MiB batch cache's buffers and 16 MiB in flight.
        assert_eq!(registered_bytes(64 * MIB, 16 * MIB, true), 80 * MIB);
        // Not allowed to pin: the small floor, whatever was reserved.
        assert_eq!(registered_bytes(64 * MIB, 16 * MIB, false), REGISTER_FLOOR);
        // Nothing reserved still registers the floor; io_uring's 1 GiB
        // limit per registered buffer caps a large cache.
        assert_eq!(registered_bytes(0, 0, true), REGISTER_FLOOR);
        assert_eq!(registered_bytes(3 << 30, 16 * MIB, true), 1 << 30);
        assert_eq!(registered_bytes(usize::MAX, 16 * MIB, true), 1 << 30);
        // What is reserved is whole buffers.
        assert_eq!(reservable_bytes(64 * MIB + 5, MIB, 1) % MIB, 0);
        assert_eq!(reservable_bytes(10, 0, 1), 10);
    }

    #[test]
    fn reserved_buffers_are_handed_out_before_any_new_allocation() {
        let (fresh, free_after) = in_executor(|| {
            let pool = BufferPool::shared();
            reserve(&pool, 3, LEN);
            let mut fresh = 0;
            let bufs: Vec<FillBuffer> = (0..3)
                .map(|_| {
                    take(&pool, LEN, |n| {
                        fresh += 1;
                        glommio::allocate_dma_buffer(n)
                    })
                })
                .collect();
            drop(bufs);
            (fresh, pool_counts(&pool).1)
        });
        assert_eq!(fresh, 0, "reserved buffers must serve the first takes");
        assert_eq!(free_after, 3, "returned buffers stay reserved");
    }

    fn take_one(pool: &SharedBufferPool) -> FillBuffer {
        take(pool, LEN, glommio::allocate_dma_buffer)
    }

    #[test]
    fn lent_bytes_survive_their_buffer_being_retired_and_the_pool_reused() {
        in_executor(|| {
            let pool = BufferPool::shared();
            let mut a = take_one(&pool);
            let a_ptr = a.as_bytes().as_ptr();
            a.copy_in(0, &[7u8; 100]);
            let lent = a.lend(0..100);
            drop(a);
            // Still lent: the next buffer must be a different one.
            let mut b = take_one(&pool);
            assert_ne!(b.as_bytes().as_ptr(), a_ptr);
            b.copy_in(0, &[9u8; LEN]);
            assert_eq!(&lent[..], &[7u8; 100][..]);
            assert_eq!(pool_counts(&pool), (1, 0));
            // The last slice goes: the buffer is recycled, not reallocated.
            drop(lent);
            let c = take_one(&pool);
            assert_eq!(c.as_bytes().as_ptr(), a_ptr);
            assert_eq!(pool_counts(&pool), (0, 0));
        });
    }

    #[test]
    fn a_slice_dropped_on_another_thread_frees_the_buffer_for_reuse() {
        in_executor(|| {
            let pool = BufferPool::shared();
            let mut a = take_one(&pool);
            let a_ptr = a.as_bytes().as_ptr();
            a.copy_in(0, b"kafka");
            let lent = a.lend(0..5);
            drop(a);
            let seen = std::thread::spawn(move || lent.to_vec()).join().unwrap();
            assert_eq!(seen, b"kafka");
            assert_eq!(take_one(&pool).as_bytes().as_ptr(), a_ptr);
        });
    }

    #[test]
    fn buffers_in_use_by_a_write_are_not_recycled() {
        in_executor(|| {
            let pool = BufferPool::shared();
            let a = take_one(&pool);
            let a_ptr = a.as_bytes().as_ptr();
            let in_write = a.into_shared();
            assert_ne!(take_one(&pool).as_bytes().as_ptr(), a_ptr);
            drop(in_write);
            let (retired, free) = pool_counts(&pool);
            assert_eq!((retired, free), (1, 1));
            assert_eq!(take_one(&pool).as_bytes().as_ptr(), a_ptr);
        });
    }

    #[test]
    fn writing_over_lent_bytes_is_refused() {
        let refused = in_executor(|| {
            let pool = BufferPool::shared();
            let mut a = take_one(&pool);
            a.copy_in(0, &[1u8; 64]);
            let _lent = a.lend(0..64);
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| a.copy_in(32, &[2u8; 8])))
                .is_err()
        });
        assert!(refused);
    }
}
