//! `[io]` One data shard's storage timings: how long each DMA (O_DIRECT)
//! write and each fdatasync took, and how many segments reused a file from
//! the recycle pool (`recycle`). Plain counters owned by the shard's
//! [`ShardStorage`](super::ShardStorage) and touched only by its own tasks
//! (no atomics, no locks); a scrape copies them
//! ([`IoTimings::snapshot`]). The fdatasyncs are also Kafka's
//! `LogFlushRateAndTimeMs` (recent percentiles and a count); the rest are
//! shardlog's own (`shardlog_storage_*` histograms).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::io::clock::{Clock, SystemClock};
use crate::metrics::buckets::Buckets;
use crate::metrics::recent::RecentHistogram;
use crate::metrics::report::StorageTimings;

/// A shard's storage timings, shared by its logs' appenders.
#[derive(Debug, Default)]
pub struct IoTimings {
    clock: SystemClock,
    dma_writes: RefCell<Buckets>,
    fsyncs: RefCell<Buckets>,
    recycles: Cell<u64>,
    /// The fdatasyncs of the recent past (µs), for Kafka's percentiles.
    flushes: RefCell<RecentHistogram>,
}

pub type SharedIoTimings = Rc<IoTimings>;

impl IoTimings {
    pub fn shared() -> SharedIoTimings {
        Rc::default()
    }

    /// The start of a timed operation.
    pub fn start(&self) -> u64 {
        self.clock.mono_ns()
    }

    /// Nanoseconds since `start_ns` ([`Self::start`]): also how the
    /// shard's appends time their record conversions.
    pub fn elapsed_ns(&self, start_ns: u64) -> u64 {
        self.clock.mono_ns().saturating_sub(start_ns)
    }

    fn elapsed_us(&self, start_ns: u64) -> u64 {
        self.elapsed_ns(start_ns) / 1_000
    }

    /// A DMA write started at `start_ns` completed (or failed) now.
    pub fn on_dma_write(&self, start_ns: u64) {
        let us = self.elapsed_us(start_ns);
        self.dma_writes.borrow_mut().record_us(us);
    }

    /// An fdatasync started at `start_ns` returned now: also Kafka's
    /// `LogFlushRateAndTimeMs` (`LogSegment.flush`'s timer).
    pub fn on_fsync(&self, start_ns: u64) {
        let us = self.elapsed_us(start_ns);
        self.fsyncs.borrow_mut().record_us(us);
        self.flushes
            .borrow_mut()
            .record_us(self.clock.mono_ms(), us);
    }

    /// A new segment took its file from the recycle pool.
    pub fn on_recycle(&self) {
        self.recycles.set(self.recycles.get() + 1);
    }

    pub fn snapshot(&self) -> StorageTimings {
        let mut flushes = self.flushes.borrow_mut();
        StorageTimings {
            dma_writes: *self.dma_writes.borrow(),
            fsyncs: *self.fsyncs.borrow(),
            segment_recycles: self.recycles.get(),
            flush_count: flushes.count(),
            flush_recent: flushes.recent(self.clock.mono_ms()),
        }
    }
}
