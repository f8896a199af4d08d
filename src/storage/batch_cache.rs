//! `[pure]` Per-shard cache of recently appended batches (ARCHITECTURE.md §4).
//!
//! Holds the exact bytes appended (offsets already patched) as refcounted
//! `Bytes`, so tail fetches are answered without touching the file and
//! without copying. One cache is shared by every partition of a shard and
//! bounded by a byte budget; the oldest batch (across partitions) goes first.
//!
//! The `Bytes` are slices of the appender's DMA write buffers
//! (`buffer_pool`): a buffer is recycled when its last cached batch is
//! evicted. A batch that spans two write buffers is cached as a slice of
//! each ([`BatchBytes`]), not copied into one piece. Since each
//! partition's batches leave in order, memory beyond the budget is at most
//! about one write buffer per partition.
//!
//! Each batch is charged its bytes plus [`ENTRY_OVERHEAD`] for what keeps
//! it: its slots in the queues and the owner of its lent slice. Counting
//! only the bytes, a cache of 100-byte batches held more than its budget
//! again in bookkeeping (the soak test, heaptrack: 5.6 MB of queues for
//! 8 MiB of budget).

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

use bytes::Bytes;

/// Bytes charged per cached batch beyond its own: a `CachedBatch` and a
/// FIFO slot (96 bytes, in queues that keep their capacity) and the lent
/// slice's reference-counted owner (about 32).
pub const ENTRY_OVERHEAD: usize = 128;

/// Handle shared by the partitions of one shard (never crosses threads).
pub type SharedBatchCache = Rc<RefCell<BatchCache>>;

/// One batch's bytes, in order: one slice, or more when the batch spans
/// write buffers (the pieces are sent back to back, never joined).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BatchBytes {
    first: Bytes,
    rest: Vec<Bytes>,
    len: usize,
}

impl BatchBytes {
    /// Add the next piece (empty pieces are skipped).
    pub fn push(&mut self, piece: Bytes) {
        if piece.is_empty() {
            return;
        }
        self.len += piece.len();
        if self.first.is_empty() {
            self.first = piece;
        } else {
            self.rest.push(piece);
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The pieces, in order.
    pub fn pieces(&self) -> impl Iterator<Item = &Bytes> {
        std::iter::once(&self.first)
            .filter(|b| !b.is_empty())
            .chain(self.rest.iter())
    }
}

impl From<Bytes> for BatchBytes {
    fn from(b: Bytes) -> Self {
        let mut out = BatchBytes::default();
        out.push(b);
        out
    }
}

#[derive(Debug, Clone)]
struct CachedBatch {
    base_offset: i64,
    last_offset: i64,
    bytes: BatchBytes,
}

/// What a batch of `len` bytes counts against the budget.
fn charge_of(len: usize) -> usize {
    len + ENTRY_OVERHEAD
}

impl CachedBatch {
    fn charge(&self) -> usize {
        charge_of(self.bytes.len())
    }
}

#[derive(Debug, Default)]
pub struct BatchCache {
    budget_bytes: usize,
    used_bytes: usize,
    next_id: u64,
    partitions: HashMap<u64, VecDeque<CachedBatch>>,
    /// Insertion order across partitions: (partition id, base offset).
    /// Entries whose batch was already dropped (truncation) are skipped.
    fifo: VecDeque<(u64, i64)>,
    /// Reads served (`/metrics`), with their bytes, and reads it could
    /// not serve (the caller read the segment file).
    hits: Cell<u64>,
    hit_bytes: Cell<u64>,
    misses: Cell<u64>,
}

/// A cache's read counts since start (`/metrics`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheReads {
    pub hits: u64,
    pub hit_bytes: u64,
    pub misses: u64,
}

/// What a cache read returns: whole batches, in offset order, as the
/// pieces they were cached in (a split batch's pieces back to back).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheHit {
    pub pieces: Vec<Bytes>,
    pub bytes: usize,
}

impl BatchCache {
    pub fn new(budget_bytes: usize) -> Self {
        BatchCache {
            budget_bytes,
            ..Default::default()
        }
    }

    pub fn shared(budget_bytes: usize) -> SharedBatchCache {
        Rc::new(RefCell::new(BatchCache::new(budget_bytes)))
    }

    /// A fresh id for a partition using this cache.
    pub fn register(&mut self) -> u64 {
        self.next_id += 1;
        self.partitions.insert(self.next_id, VecDeque::new());
        self.next_id
    }

    pub fn used_bytes(&self) -> usize {
        self.used_bytes
    }

    /// Whether a batch of `len` bytes would be cached (the appender lends
    /// its bytes only then).
    pub fn accepts(&self, len: usize) -> bool {
        len > 0 && charge_of(len) <= self.budget_bytes
    }

    /// Cache one appended batch. Callers insert in offset order per
    /// partition. A batch larger than the whole budget is not cached.
    pub fn on_append(
        &mut self,
        id: u64,
        base_offset: i64,
        last_offset: i64,
        bytes: impl Into<BatchBytes>,
    ) {
        let bytes = bytes.into();
        let charge = charge_of(bytes.len());
        if bytes.is_empty() || charge > self.budget_bytes {
            return;
        }
        while self.used_bytes + charge > self.budget_bytes {
            if !self.evict_oldest() {
                break;
            }
        }
        let Some(q) = self.partitions.get_mut(&id) else {
            return;
        };
        if q.back().is_some_and(|b| b.last_offset >= base_offset) {
            // Out of order (should not happen): start over for this partition.
            self.drop_partition_batches(id);
        }
        self.used_bytes += charge;
        self.fifo.push_back((id, base_offset));
        if let Some(q) = self.partitions.get_mut(&id) {
            q.push_back(CachedBatch {
                base_offset,
                last_offset,
                bytes,
            });
        }
    }

    fn evict_oldest(&mut self) -> bool {
        while let Some((id, base)) = self.fifo.pop_front() {
            if let Some(q) = self.partitions.get_mut(&id) {
                if q.front().is_some_and(|b| b.base_offset == base) {
                    if let Some(b) = q.pop_front() {
                        self.used_bytes -= b.charge();
                    }
                    return true;
                }
            }
        }
        false
    }

    fn drop_partition_batches(&mut self, id: u64) {
        if let Some(q) = self.partitions.get_mut(&id) {
            let freed: usize = q.iter().map(CachedBatch::charge).sum();
            q.clear();
            self.used_bytes -= freed;
        }
    }

    /// Forget batches holding offsets >= `offset` (log truncation).
    pub fn truncate_to(&mut self, id: u64, offset: i64) {
        if let Some(q) = self.partitions.get_mut(&id) {
            while q.back().is_some_and(|b| b.last_offset >= offset) {
                if let Some(b) = q.pop_back() {
                    self.used_bytes -= b.charge();
                }
            }
        }
    }

    /// Forget batches wholly below `offset` (the log cleaner rewrote
    /// them: a fetch must read the cleaned segment, not the old bytes).
    pub fn forget_below(&mut self, id: u64, offset: i64) {
        if let Some(q) = self.partitions.get_mut(&id) {
            while q.front().is_some_and(|b| b.last_offset < offset) {
                if let Some(b) = q.pop_front() {
                    self.used_bytes -= b.charge();
                }
            }
        }
    }

    /// Forget a partition entirely (closed or deleted).
    pub fn remove_partition(&mut self, id: u64) {
        self.drop_partition_batches(id);
        self.partitions.remove(&id);
    }

    /// Whole batches starting with the one holding `start_offset`, while
    /// their last offset is below `upper_bound` and the total stays within
    /// `max_bytes` (at least one batch when `min_one_batch`, KIP-74).
    /// `None` when `start_offset` is not cached (caller reads the file).
    pub fn read(
        &self,
        id: u64,
        start_offset: i64,
        max_bytes: usize,
        upper_bound: i64,
        min_one_batch: bool,
    ) -> Option<CacheHit> {
        let hit = self.read_cached(id, start_offset, max_bytes, upper_bound, min_one_batch);
        match &hit {
            Some(h) => {
                self.hits.set(self.hits.get() + 1);
                self.hit_bytes.set(self.hit_bytes.get() + h.bytes as u64);
            }
            None => self.misses.set(self.misses.get() + 1),
        }
        hit
    }

    /// Reads served and not served since start.
    pub fn reads(&self) -> CacheReads {
        CacheReads {
            hits: self.hits.get(),
            hit_bytes: self.hit_bytes.get(),
            misses: self.misses.get(),
        }
    }

    fn read_cached(
        &self,
        id: u64,
        start_offset: i64,
        max_bytes: usize,
        upper_bound: i64,
        min_one_batch: bool,
    ) -> Option<CacheHit> {
        let q = self.partitions.get(&id)?;
        let front = q.front()?;
        if start_offset < front.base_offset || q.back()?.last_offset < start_offset {
            return None;
        }
        let first = q.partition_point(|b| b.last_offset < start_offset);
        let mut hit = CacheHit {
            pieces: Vec::new(),
            bytes: 0,
        };
        for b in q.iter().skip(first) {
            if b.last_offset >= upper_bound {
                break;
            }
            let fits = hit.bytes + b.bytes.len() <= max_bytes;
            let kip74_first = hit.bytes == 0 && min_one_batch;
            if !(fits || kip74_first) {
                break;
            }
            hit.bytes += b.bytes.len();
            hit.pieces.extend(b.bytes.pieces().cloned());
            if !fits {
                break;
            }
        }
        Some(hit)
    }

    /// Debug/test check: accounting matches the content.
    pub fn check_invariants(&self) {
        let sum: usize = self
            .partitions
            .values()
            .flatten()
            .map(CachedBatch::charge)
            .sum();
        assert_eq!(sum, self.used_bytes);
        assert!(self.used_bytes <= self.budget_bytes);
        for q in self.partitions.values() {
            assert!(q
                .iter()
                .zip(q.iter().skip(1))
                .all(|(a, b)| a.last_offset < b.base_offset));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(n: usize) -> Bytes {
        Bytes::from(vec![n as u8; n])
    }

    #[test]
    fn evicts_oldest_across_partitions_within_budget() {
        // Room for two 40-byte batches, not three.
        let mut c = BatchCache::new(2 * (40 + ENTRY_OVERHEAD) + 10);
        let (p, q) = (c.register(), c.register());
        c.on_append(p, 0, 0, b(40));
        c.on_append(q, 0, 4, b(40));
        c.on_append(p, 1, 1, b(40)); // evicts p@0
        c.check_invariants();
        assert!(c.read(p, 0, 1000, 100, true).is_none());
        assert_eq!(c.read(p, 1, 1000, 100, true).unwrap().bytes, 40);
        assert_eq!(c.read(q, 3, 1000, 100, true).unwrap().bytes, 40);
    }

    /// Small batches are charged what keeps them, not just their bytes:
    /// a budget of ten 100-byte batches holds ten, not twenty-eight.
    #[test]
    fn each_batch_is_charged_its_bookkeeping() {
        let mut c = BatchCache::new(10 * (100 + ENTRY_OVERHEAD));
        let p = c.register();
        for i in 0..100 {
            c.on_append(p, i, i, b(100));
        }
        c.check_invariants();
        assert!(c.read(p, 89, 1 << 20, 1000, true).is_none());
        assert_eq!(c.read(p, 90, 1 << 20, 1000, true).unwrap().pieces.len(), 10);
        assert!(!c.accepts(10 * (100 + ENTRY_OVERHEAD)));
    }

    #[test]
    fn read_honours_upper_bound_max_bytes_and_kip74() {
        let mut c = BatchCache::new(1000);
        let p = c.register();
        for i in 0..5 {
            c.on_append(p, i * 10, i * 10 + 9, b(50));
        }
        assert_eq!(c.read(p, 15, 1000, 1000, true).unwrap().pieces.len(), 4);
        assert_eq!(c.read(p, 15, 1000, 25, true).unwrap().pieces.len(), 1);
        assert_eq!(c.read(p, 15, 120, 1000, true).unwrap().pieces.len(), 2);
        assert_eq!(c.read(p, 15, 10, 1000, true).unwrap().pieces.len(), 1);
        assert_eq!(c.read(p, 15, 10, 1000, false).unwrap().pieces.len(), 0);
        assert!(c.read(p, 50, 1000, 1000, true).is_none());
        // Served and not served reads are counted (`/metrics`).
        let reads = c.reads();
        assert_eq!((reads.hits, reads.misses), (5, 1));
        assert_eq!(reads.hit_bytes, 200 + 50 + 100 + 50);
    }

    #[test]
    fn a_batch_in_two_pieces_is_read_whole_and_counted_once() {
        let mut c = BatchCache::new(1000);
        let p = c.register();
        c.on_append(p, 0, 9, b(50));
        let mut split = BatchBytes::default();
        split.push(Bytes::from_static(b"head-"));
        split.push(Bytes::new());
        split.push(Bytes::from_static(b"tail"));
        assert_eq!((split.len(), split.pieces().count()), (9, 2));
        c.on_append(p, 10, 19, split);
        c.on_append(p, 20, 29, b(50));
        c.check_invariants();
        assert_eq!(c.used_bytes(), 109 + 3 * ENTRY_OVERHEAD);
        let hit = c.read(p, 10, 1000, 1000, true).unwrap();
        let joined: Vec<u8> = hit.pieces.iter().flat_map(|p| p.iter().copied()).collect();
        assert_eq!(&joined[..9], b"head-tail");
        assert_eq!((hit.pieces.len(), hit.bytes), (3, 59));
        // max_bytes counts the split batch as one: 9 fits, 9 + 50 does not.
        let hit = c.read(p, 10, 20, 1000, true).unwrap();
        assert_eq!((hit.pieces.len(), hit.bytes), (2, 9));
        // KIP-74: the first batch goes whole even past max_bytes.
        let hit = c.read(p, 10, 1, 1000, true).unwrap();
        assert_eq!((hit.pieces.len(), hit.bytes), (2, 9));
        c.truncate_to(p, 10);
        c.check_invariants();
        assert_eq!(c.used_bytes(), 50 + ENTRY_OVERHEAD);
    }

    #[test]
    fn truncation_drops_batches_holding_later_offsets() {
        let mut c = BatchCache::new(1000);
        let p = c.register();
        for i in 0..5 {
            c.on_append(p, i * 10, i * 10 + 9, b(50));
        }
        c.truncate_to(p, 25);
        c.check_invariants();
        assert!(c.read(p, 25, 1000, 1000, true).is_none());
        assert_eq!(c.read(p, 0, 1000, 1000, true).unwrap().pieces.len(), 2);
        c.on_append(p, 20, 20, b(50));
        c.on_append(p, 21, 21, b(60));
        c.check_invariants();
        // the stale FIFO entry for offset 20 must not evict the new one wrongly
        for i in 0..20 {
            c.on_append(p, 100 + i, 100 + i, b(50));
            c.check_invariants();
        }
        c.remove_partition(p);
        assert_eq!(c.used_bytes(), 0);
    }
}
