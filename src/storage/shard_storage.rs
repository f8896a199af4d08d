//! `[io]` What one data shard's storage owns beside its logs
//! (ARCHITECTURE.md §1: one owner per state): the batch cache, the pool
//! of DMA write buffers, the helper threads, the handle on the broker's
//! log-dir failure channel, the request for an early checkpoint write, the
//! parsed offset checkpoints every open reads, and the scratch buffer
//! stored LZ4 batches are inflated in.
//! The shard's replica manager creates it; each [`PartitionLog`] the shard
//! opens holds an `Rc` of it.
//!
//! [`PartitionLog`]: super::partition_log::PartitionLog

use std::cell::{Cell, RefCell, RefMut};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::batch_cache::{BatchCache, SharedBatchCache};
use super::buffer_pool::{BufferPool, SharedBufferPool};
use super::checkpoint;
use super::dir_failure::DirFailureChannel;
use super::helper_thread::HelperThreads;
use super::io_timings::{IoTimings, SharedIoTimings};
use super::StorageError;
use crate::protocol::record_walk::InflateScratch;
use crate::types::TopicPartition;

/// Which version of a checkpoint file a parse is of: a rewrite renames a
/// new file into place (a new inode and modification time).
type FileVersion = (u64, i64, i64, u64);
/// A checkpoint file's entries by partition.
type Entries = Rc<HashMap<TopicPartition, i64>>;

pub struct ShardStorage {
    cache: SharedBatchCache,
    /// The appenders' DMA write buffers, recycled (lent to the cache).
    buffers: SharedBufferPool,
    /// Threads for read-ahead hints and freeing deleted segments.
    helpers: HelperThreads,
    failures: DirFailureChannel,
    /// Set by a truncation or a log deletion: the next housekeeping round
    /// writes every checkpoint file at once.
    checkpoints_wanted: Cell<bool>,
    /// The log dirs' checkpoint files as last parsed on this shard. Every
    /// partition's open looks up its own entry: parsing the whole file for
    /// each made opening 10,000 partitions quadratic (34 s of a restart).
    parsed_checkpoints: RefCell<HashMap<PathBuf, (FileVersion, Entries)>>,
    /// Where this shard's walks of stored LZ4 batches inflate them (the
    /// compacted-topic key check on produce, ListOffsets by timestamp, the
    /// cleaner, the group coordinator's load): kept so a batch costs no
    /// 4 MiB allocation and zero-fill.
    inflate_scratch: RefCell<InflateScratch>,
    /// DMA write and fdatasync latencies, segment recycles.
    timings: SharedIoTimings,
    /// The largest cleanable ratio among the shard's compacted logs at
    /// its cleaner's last look (Kafka's `LogCleanerManager`
    /// `dirtiestLogCleanableRatio`), 0 before it looked.
    max_dirty_ratio: Rc<Cell<f64>>,
}

impl std::fmt::Debug for ShardStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardStorage").finish_non_exhaustive()
    }
}

impl ShardStorage {
    /// A shard's storage over its batch cache, reporting failed logs on
    /// the broker's `failures` channel.
    pub fn new(cache: SharedBatchCache, failures: DirFailureChannel) -> Rc<Self> {
        Rc::new(ShardStorage {
            cache,
            buffers: BufferPool::shared(),
            helpers: HelperThreads::new(),
            failures,
            checkpoints_wanted: Cell::new(false),
            parsed_checkpoints: RefCell::default(),
            inflate_scratch: RefCell::default(),
            timings: IoTimings::shared(),
            max_dirty_ratio: Rc::default(),
        })
    }

    /// A data shard's storage: a batch cache of `budget` bytes and, since
    /// the cache holds slices of the appenders' write buffers, as many
    /// `buffer`-byte buffers reserved (and pre-faulted) as it can hold,
    /// but never more than this shard's half of the host's memory
    /// (`n_shards` share it; a budget typed too large must not make the
    /// start itself run out of memory).
    pub fn for_shard(
        budget: usize,
        buffer: usize,
        n_shards: usize,
        failures: &DirFailureChannel,
    ) -> Rc<Self> {
        let storage = Self::new(BatchCache::shared(budget), failures.clone());
        storage
            .buffers
            .borrow_mut()
            .reserve_within_memory(budget, buffer, n_shards);
        storage
    }

    /// Storage for logs opened outside a broker (tests, benchmarks,
    /// tools): failures go to a channel of its own, which nobody reads.
    pub fn standalone(cache: SharedBatchCache) -> Rc<Self> {
        Self::new(cache, DirFailureChannel::new())
    }

    pub fn cache(&self) -> &SharedBatchCache {
        &self.cache
    }

    pub fn buffers(&self) -> &SharedBufferPool {
        &self.buffers
    }

    pub fn timings(&self) -> &SharedIoTimings {
        &self.timings
    }

    /// Where the shard's cleaner leaves its dirtiest log's ratio.
    pub fn max_dirty_ratio(&self) -> &Rc<Cell<f64>> {
        &self.max_dirty_ratio
    }

    pub fn helpers(&self) -> &HelperThreads {
        &self.helpers
    }

    pub fn failures(&self) -> &DirFailureChannel {
        &self.failures
    }

    /// The shard's LZ4 inflate scratch, for one synchronous walk: held
    /// across no `.await` (another task's walk would find it borrowed).
    pub fn inflate_scratch(&self) -> RefMut<'_, InflateScratch> {
        self.inflate_scratch.borrow_mut()
    }

    /// Ask this shard's next housekeeping round for a checkpoint write.
    pub fn request_checkpoints(&self) {
        self.checkpoints_wanted.set(true);
    }

    /// Whether a write was asked for since the last call (and reset it).
    pub fn take_checkpoint_request(&self) -> bool {
        self.checkpoints_wanted.replace(false)
    }

    /// `tp`'s entry in the checkpoint file `name` of `log_dir`, if any.
    pub(crate) fn checkpoint_entry(
        &self,
        log_dir: &Path,
        name: &str,
        tp: &TopicPartition,
    ) -> Result<Option<i64>, StorageError> {
        let path = log_dir.join(name);
        let meta = match std::fs::metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let entries = self.parsed_checkpoint(&path, &meta)?;
        Ok(entries.get(tp).copied())
    }

    fn parsed_checkpoint(
        &self,
        path: &Path,
        meta: &std::fs::Metadata,
    ) -> Result<Entries, StorageError> {
        use std::os::unix::fs::MetadataExt;
        let version = (meta.ino(), meta.mtime(), meta.mtime_nsec(), meta.len());
        let cached = self
            .parsed_checkpoints
            .borrow()
            .get(path)
            .filter(|(v, _)| *v == version)
            .map(|(_, m)| m.clone());
        if let Some(map) = cached {
            return Ok(map);
        }
        let text = std::fs::read_to_string(path)?;
        let entries =
            checkpoint::decode_offsets(&text).map_err(|e| StorageError::CorruptCheckpoint(e.0))?;
        let map = Rc::new(entries.into_iter().collect::<HashMap<_, _>>());
        self.parsed_checkpoints
            .borrow_mut()
            .insert(path.to_path_buf(), (version, map.clone()));
        Ok(map)
    }
}
