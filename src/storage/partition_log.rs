//! `[drv]` One partition's log, owned by one shard (`!Send`).
//!
//! Segments in an ordered map by base offset; the last one is active and
//! owns the DMA appender. Appends validate every batch first (once), copy
//! the bytes once into the DMA buffer with offsets assigned in the copied
//! header, and share that copy (`Bytes` slices of the buffer) with the
//! per-shard batch cache. Reads
//! return regions: cached `Bytes` for the tail, or (file, position, len)
//! ranges of the segment's buffered fd for sendfile.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use bytes::Bytes;

use super::batch_cache::SharedBatchCache;
use super::checkpoint::{
    self, LOG_START_OFFSET_CHECKPOINT, PARTITION_METADATA, RECOVERY_POINT_CHECKPOINT,
    REPLICATION_CHECKPOINT,
};
use super::config::LogConfig;
use super::recycle::{RecyclePool, RECYCLE_SUFFIX};
use super::segment::{self, delete_segment_files, Segment, DELETED_SUFFIX, LOG_SUFFIX};
use super::shard_storage::ShardStorage;
use super::swap;
use super::StorageError;
use crate::protocol::out_part::OutPart;
use crate::protocol::record_batch::{validate_all_for_append, BatchError, BatchSummary};
use crate::types::TopicPartition;

/// Kafka's clean-shutdown marker. Kafka keeps one per log dir; partitions
/// here open and close independently (each shard owns its own), so the
/// marker lives in the partition directory. Its removal at open costs no
/// fsync of its own (see `PartitionLog::open`).
pub const CLEAN_SHUTDOWN_MARKER: &str = ".kafka_cleanshutdown";
/// `segment.ms` falls back to wall age from this, set at the first append.
const UNSET_MS: i64 = i64::MIN;

#[derive(Debug, Clone, Default)]
pub struct ReadResult {
    /// The records as response parts: cached `Bytes` for the tail, or a
    /// segment file range for sendfile.
    pub regions: Vec<OutPart>,
    pub bytes: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendInfo {
    pub first_offset: i64,
    pub last_offset: i64,
    /// The LogAppendTime stamped on the batches, or -1 for CreateTime.
    pub log_append_time_ms: i64,
    pub log_start_offset: i64,
    pub bytes: usize,
}

/// A produce request's records, validated once (structure, magic, CRC-32C
/// and Kafka's client-origin rules). Only [`ValidatedRecords::new`] builds
/// one, so holding it proves the check ran.
#[derive(Debug, Clone)]
pub struct ValidatedRecords {
    bytes: Bytes,
    summaries: Vec<BatchSummary>,
}

impl ValidatedRecords {
    pub fn new(bytes: Bytes) -> Result<Self, BatchError> {
        let summaries = validate_all_for_append(&bytes)?;
        Ok(ValidatedRecords { bytes, summaries })
    }
    /// [`Self::new`], giving the bytes back with the refusal.
    pub fn try_new(bytes: Bytes) -> Result<Self, (BatchError, Bytes)> {
        match validate_all_for_append(&bytes) {
            Ok(summaries) => Ok(ValidatedRecords { bytes, summaries }),
            Err(e) => Err((e, bytes)),
        }
    }
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }
    /// One per batch, in order; never empty.
    pub fn summaries(&self) -> &[BatchSummary] {
        &self.summaries
    }
}

/// What opening the log cost: tests assert a clean reopen scans nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecoveryStats {
    pub clean_shutdown: bool,
    pub segments_scanned: u64,
    pub bytes_scanned: u64,
    /// Segments dropped because an earlier one was cut short.
    pub segments_dropped: u64,
}

/// A log's offsets as the log itself last published them: what other
/// owners on the shard (the partition's replica state, the purgatory's
/// view) read without taking the log's lock. Only [`PartitionLog`] writes
/// it, after every change; nothing else stores these values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogEnds {
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    pub high_watermark: i64,
    /// Bytes appended since the log was opened: the logical position of
    /// the LEO (Kafka's `LogOffsetMetadata.relativePositionInSegment`,
    /// enough for DelayedFetch's byte accounting).
    pub log_end_position: i64,
    /// The logical position of the HW, as of the last time the HW reached
    /// the LEO it was set against.
    pub high_watermark_position: i64,
}

/// A read-only handle on a log's published [`LogEnds`].
#[derive(Debug, Clone)]
pub struct LogEndsView(Rc<Cell<LogEnds>>);

impl LogEndsView {
    pub fn get(&self) -> LogEnds {
        self.0.get()
    }
}

pub struct PartitionLog {
    tp: TopicPartition,
    dir: PathBuf,
    config: LogConfig,
    segments: BTreeMap<i64, Segment>,
    log_start_offset: i64,
    /// Kafka's `UnifiedLog.highWatermark`: the log stores it (it bounds
    /// retention, DeleteRecords and truncation, and is checkpointed with
    /// the log); the replica state decides when it moves.
    high_watermark: i64,
    high_watermark_position: i64,
    appended_bytes: i64,
    ends: Rc<Cell<LogEnds>>,
    recovery_point: Rc<Cell<i64>>,
    /// The shard's storage: the batch cache, the failure channel, the
    /// checkpoint request a truncation makes.
    storage: Rc<ShardStorage>,
    cache: SharedBatchCache,
    cache_id: u64,
    messages_since_flush: i64,
    last_flush_ms: i64,
    poisoned: Rc<Cell<bool>>,
    /// The segment the last roll closed, while its fdatasync may still be
    /// running in the background.
    rolled: Option<RolledSegment>,
    /// The fsync of the log directory after the last roll created the
    /// active segment's file, running in the background.
    dir_sync: Option<glommio::task::JoinHandle<std::io::Result<()>>>,
    /// Files the open created (`partition.metadata`, a first segment) and
    /// not yet fsynced, with the directory naming them: synced before the
    /// first flush counts an append durable (`await_dir_sync`).
    unsynced: Option<Vec<PathBuf>>,
    /// The open removed the clean-shutdown marker and has not fsynced the
    /// directory since: done before any segment file changes
    /// (`settle_marker_removal`).
    marker_unsynced: bool,
    /// The log end offset housekeeping last saw, and since when (ms) it
    /// has not moved (`close_if_idle`).
    idle_leo: i64,
    idle_since_ms: i64,
    recovery_stats: RecoveryStats,
    leader_epochs: Vec<(i32, i64)>,
    /// Files of segments retention dropped, for new segments to reuse.
    recycle: RecyclePool,
}

/// Where [`PartitionLog::load_segments`] may trust files and where an
/// empty log starts.
struct LoadFrom {
    /// The last shutdown left the clean-shutdown marker.
    clean: bool,
    recovery_point: i64,
    start_offset: i64,
}

/// The segments an open loaded.
struct LoadedSegments {
    segments: BTreeMap<i64, Segment>,
    /// The last segment's file ends exactly at its last whole batch.
    last_exact: bool,
}

/// Write `text` to `path` atomically (tmp file, fsync, rename), as Kafka's
/// CheckpointFile does.
pub(crate) fn write_atomically(path: &Path, text: &str) -> Result<(), StorageError> {
    use std::io::Write;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let mut f = File::create(&tmp)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}

/// Write `text` to `path` (tmp file, rename) without an fsync: the caller
/// syncs the file and its directory before anything relies on it.
fn write_unsynced(path: &Path, text: &str) -> Result<(), StorageError> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}

/// The names in `dir`, read once per open: the segments, the recycle
/// pool, the clean-shutdown marker and an interrupted clean's files all
/// come from this one listing (a restart at 10,000 partitions listed each
/// directory three times).
fn list_names(dir: &Path) -> Result<Vec<String>, StorageError> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        names.push(entry?.file_name().to_string_lossy().into_owned());
    }
    Ok(names)
}

/// Remove `dir/name`; a file already gone is fine (this process's delete
/// thread may be removing it too: a log reopened while its retention
/// deletes still run).
fn remove_if_present(dir: &Path, name: &str) -> Result<(), StorageError> {
    match std::fs::remove_file(dir.join(name)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
        _ => Ok(()),
    }
}

/// Base offsets of the `.log` files among `names`; removes `.deleted` and
/// `.tmp` leftovers.
fn list_segments(dir: &Path, names: &[String]) -> Result<Vec<i64>, StorageError> {
    let mut bases = Vec::new();
    for name in names {
        if name.ends_with(DELETED_SUFFIX) || name.ends_with(".tmp") {
            remove_if_present(dir, name)?;
        } else if let Some(stem) = name.strip_suffix(LOG_SUFFIX) {
            if let Ok(base) = stem.parse::<i64>() {
                bases.push(base);
            }
        }
    }
    bases.sort_unstable();
    Ok(bases)
}

/// The recycle pool an earlier run left among `names`; removes pool files
/// past the limit and names that do not parse.
fn load_recycle_pool(dir: &Path, names: &[String]) -> Result<RecyclePool, StorageError> {
    let pooled: Vec<String> = names
        .iter()
        .filter(|n| n.ends_with(RECYCLE_SUFFIX))
        .cloned()
        .collect();
    let (pool, remove) = RecyclePool::from_names(&pooled);
    for name in remove {
        remove_if_present(dir, &name)?;
    }
    Ok(pool.within(dir))
}

impl PartitionLog {
    /// Open (or create) the log of `tp` under `log_dir`, recovering it if the
    /// last shutdown was not clean.
    pub async fn open(
        log_dir: &Path,
        tp: &TopicPartition,
        topic_id: Option<uuid::Uuid>,
        config: LogConfig,
        storage: Rc<ShardStorage>,
    ) -> Result<Self, StorageError> {
        Self::open_folder(log_dir, None, tp, topic_id, config, storage).await
    }

    /// [`Self::open`] of the log in `log_dir`'s folder `folder` (a future
    /// replica's `<topic>-<p>.<id>-future`), or of `tp`'s own folder when
    /// `None`. A named folder is not in the dir's checkpoint files (they
    /// record current logs): it recovers from its start and its log start
    /// offset is its first segment's, as Kafka opens a future log
    /// the checkpoints do not cover.
    pub async fn open_folder(
        log_dir: &Path,
        folder: Option<&str>,
        tp: &TopicPartition,
        topic_id: Option<uuid::Uuid>,
        config: LogConfig,
        storage: Rc<ShardStorage>,
    ) -> Result<Self, StorageError> {
        let dir = log_dir.join(folder.map_or_else(|| tp.dir_name(), str::to_string));
        let checkpointed = folder.is_none();
        std::fs::create_dir_all(&dir)?;
        // Files this open creates are made durable lazily, before the
        // first flush counts anything appended (`await_dir_sync`), as
        // Kafka does: `UnifiedLog.initializeTopicId` only records the
        // topic id and leaves `maybeFlushMetadataFile` to a scheduled task
        // and to the first append, and a new log's first segment is not
        // fsynced, nor is its directory until `LocalLog.flush` covers the
        // new segment. Opening a 1,000-partition topic spent ~4 fsyncs per
        // partition on the shard.
        let mut unsynced = Vec::new();
        if let Some(id) = topic_id {
            let p = dir.join(PARTITION_METADATA);
            // A crash before the lazy fsync may leave it empty: rewrite.
            let whole = std::fs::read_to_string(&p)
                .is_ok_and(|t| checkpoint::decode_partition_metadata(&t) == Ok(id));
            if !whole {
                write_unsynced(&p, &checkpoint::encode_partition_metadata(id))?;
                unsynced.push(p);
            }
        }
        let mut names = list_names(&dir)?;
        // A clean interrupted by a crash: finish its swap or drop its files
        // before the segments are listed (Kafka's `LogLoader`).
        if names.iter().any(|n| swap::is_leftover(n)) {
            swap::complete_or_roll_back(&dir)?;
            names = list_names(&dir)?;
        }
        let clean = names.iter().any(|n| n == CLEAN_SHUTDOWN_MARKER);
        let entry = |name: &str| -> Result<Option<i64>, StorageError> {
            if checkpointed {
                storage.checkpoint_entry(log_dir, name, tp)
            } else {
                Ok(None)
            }
        };
        let recovery_point = entry(RECOVERY_POINT_CHECKPOINT)?.unwrap_or(0);
        let start_cp = entry(LOG_START_OFFSET_CHECKPOINT)?;
        let hw_cp = entry(REPLICATION_CHECKPOINT)?;
        let mut stats = RecoveryStats {
            clean_shutdown: clean,
            ..RecoveryStats::default()
        };
        let loaded = Self::load_segments(
            &dir,
            &names,
            &config,
            LoadFrom {
                clean,
                recovery_point,
                start_offset: start_cp.unwrap_or(0),
            },
            &mut stats,
            &mut unsynced,
        )
        .await?;
        if clean {
            // Consume the marker before any segment file changes (the
            // active segment's activation cuts and pre-allocates it): a
            // crash from then on must be followed by a rescan, never by
            // trusting file sizes. The removal is made durable just before
            // the first such change (`settle_marker_removal`), not here: a
            // directory fsync per partition was most of a clean restart at
            // 10,000 partitions.
            std::fs::remove_file(dir.join(CLEAN_SHUTDOWN_MARKER))?;
        }
        let cache = storage.cache().clone();
        let cache_id = cache.borrow_mut().register();
        let mut log = PartitionLog {
            tp: tp.clone(),
            dir,
            config,
            segments: loaded.segments,
            log_start_offset: 0,
            high_watermark: 0,
            high_watermark_position: 0,
            appended_bytes: 0,
            ends: Rc::new(Cell::new(LogEnds::default())),
            recovery_point: Rc::new(Cell::new(0)),
            storage,
            cache,
            cache_id,
            messages_since_flush: 0,
            last_flush_ms: UNSET_MS,
            poisoned: Rc::new(Cell::new(false)),
            rolled: None,
            dir_sync: None,
            unsynced: (!unsynced.is_empty()).then_some(unsynced),
            marker_unsynced: clean,
            idle_leo: -1,
            idle_since_ms: 0,
            recovery_stats: stats,
            leader_epochs: Vec::new(),
            recycle: RecyclePool::default(),
        };
        let mut pool = load_recycle_pool(&log.dir, &names)?;
        if !log.config.recycle_segments {
            segment::free_in_background(log.storage.helpers(), pool.drain(), true);
        }
        log.recycle = pool;
        // The active segment gets its DMA appender (an O_DIRECT open and
        // the first pre-allocation step) at the first append
        // (`activate_lazily`), not at open: a restart or a topic of 10,000
        // partitions opens no appender for those nobody writes to. Only a
        // recovered segment whose file runs past its last whole batch (a
        // pre-allocation or a torn write after a crash) is activated now,
        // since activation cuts the file to its data: a clean close must
        // never vouch for a file longer than its batches.
        if !loaded.last_exact {
            log.activate_lazily().await?;
        }
        let first_base = log.segments.keys().next().copied().unwrap_or(0);
        let leo = log.log_end_offset();
        log.log_start_offset = start_cp.unwrap_or(first_base).max(first_base).min(leo);
        log.high_watermark = hw_cp
            .unwrap_or(log.log_start_offset)
            .clamp(log.log_start_offset, leo);
        log.recovery_point.set(leo);
        log.load_leader_epochs()?;
        log.publish_ends();
        Ok(log)
    }

    async fn load_segments(
        dir: &Path,
        names: &[String],
        config: &LogConfig,
        from: LoadFrom,
        stats: &mut RecoveryStats,
        unsynced: &mut Vec<PathBuf>,
    ) -> Result<LoadedSegments, StorageError> {
        let bases = list_segments(dir, names)?;
        let mut segments = BTreeMap::new();
        let mut last_exact = true;
        for (i, &base) in bases.iter().enumerate() {
            let next_base = bases.get(i + 1).copied();
            // Kafka recovers from the segment holding the recovery point on;
            // the last segment is always rescanned after an unclean stop
            // because its pre-allocated file size says nothing.
            let trusted = from.clean || next_base.is_some_and(|n| n <= from.recovery_point);
            let loaded = if trusted {
                Segment::load_trusted(dir, base, config, UNSET_MS)?
            } else {
                None
            };
            let (seg, exact) = match loaded {
                // A trusted load takes the file's size as the segment's.
                Some(seg) => (seg, true),
                None => {
                    let file_len =
                        std::fs::metadata(segment::path_of(dir, base, LOG_SUFFIX))?.len();
                    let (seg, scanned) = Segment::recover(dir, base, config, UNSET_MS).await?;
                    stats.segments_scanned += 1;
                    stats.bytes_scanned += scanned;
                    let exact = seg.size() == file_len;
                    (seg, exact)
                }
            };
            // Compaction leaves offset gaps (the last batches of a cleaned
            // segment may be gone): in a compacted log a segment that ends
            // exactly on a batch boundary of its file is whole even when
            // its next offset falls short of the next segment's base.
            let complete = next_base.is_none_or(|n| {
                seg.next_offset == n || (config.compact && exact && seg.next_offset < n)
            });
            segments.insert(base, seg);
            last_exact = exact;
            if !complete {
                // A cut-short segment in the middle: later ones cannot follow
                // it (Kafka deletes every segment after a corrupt one).
                for &later in &bases[i + 1..] {
                    delete_segment_files(dir, later)?;
                    stats.segments_dropped += 1;
                }
                break;
            }
        }
        if segments.is_empty() {
            let seg = Segment::create_empty_unsynced(
                dir,
                from.start_offset.max(0),
                config,
                UNSET_MS,
                None,
            )?;
            unsynced.push(seg.log_path());
            segments.insert(seg.base_offset, seg);
            last_exact = true;
        }
        Ok(LoadedSegments {
            segments,
            last_exact,
        })
    }

    pub fn topic_partition(&self) -> &TopicPartition {
        &self.tp
    }
    pub fn dir(&self) -> &Path {
        &self.dir
    }
    pub fn config(&self) -> &LogConfig {
        &self.config
    }
    /// A changed topic config, applied to the open log (Kafka's
    /// `UnifiedLog.updateConfig`): later appends, rolls, flushes and
    /// retention rounds follow it; segments already created keep their
    /// index capacity and pre-allocation, as Kafka's do.
    pub fn set_config(&mut self, config: LogConfig) {
        self.config = config;
    }
    pub fn recovery_stats(&self) -> RecoveryStats {
        self.recovery_stats
    }
    pub fn log_start_offset(&self) -> i64 {
        self.log_start_offset
    }
    pub fn log_end_offset(&self) -> i64 {
        self.segments
            .values()
            .next_back()
            .map_or(0, |s| s.next_offset)
    }
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark
    }
    /// Offsets below this are fsynced.
    pub fn recovery_point(&self) -> i64 {
        self.recovery_point.get()
    }
    /// A handle on the recovery point that reads it without the log's lock.
    pub fn recovery_point_view(&self) -> Rc<Cell<i64>> {
        self.recovery_point.clone()
    }
    pub fn is_poisoned(&self) -> bool {
        self.poisoned.get()
    }
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }
    pub fn segment_base_offsets(&self) -> Vec<i64> {
        self.segments.keys().copied().collect()
    }
    /// Bytes of all segments.
    pub fn size_bytes(&self) -> u64 {
        self.segments.values().map(|s| s.size()).sum()
    }
    pub fn leader_epochs(&self) -> &[(i32, i64)] {
        &self.leader_epochs
    }

    /// Set by the replication layer; clamped to [log start, LEO].
    pub fn set_high_watermark(&mut self, hw: i64) {
        let position = self.appended_bytes;
        self.set_high_watermark_at(hw, position);
    }

    /// [`Self::set_high_watermark`] where the caller knows the logical
    /// position `position` of the offset `hw` was computed against (a group
    /// commit advances the HW to the end it synced, which later appends may
    /// have passed). The HW's position follows only when the HW lands on
    /// that offset.
    pub fn set_high_watermark_at(&mut self, hw: i64, position: i64) {
        let before = self.high_watermark;
        self.high_watermark = hw.clamp(self.log_start_offset, self.log_end_offset());
        if self.high_watermark > before && self.high_watermark == hw {
            self.high_watermark_position = position;
        }
        self.publish_ends();
    }

    /// The offsets as of now (see [`LogEnds`]).
    pub fn ends(&self) -> LogEnds {
        self.ends.get()
    }

    /// A handle that reads the published offsets without this log.
    pub fn ends_view(&self) -> LogEndsView {
        LogEndsView(self.ends.clone())
    }

    /// The shard's storage this log belongs to (kept by whoever needs it
    /// without the log's lock).
    pub fn storage(&self) -> &Rc<ShardStorage> {
        &self.storage
    }

    /// Publish the offsets after a change (append, truncation, retention,
    /// DeleteRecords, HW move, open).
    pub(super) fn publish_ends(&self) {
        self.ends.set(LogEnds {
            log_start_offset: self.log_start_offset,
            log_end_offset: self.log_end_offset(),
            high_watermark: self.high_watermark,
            log_end_position: self.appended_bytes,
            high_watermark_position: self.high_watermark_position,
        });
    }

    fn active(&mut self) -> Result<&mut Segment, StorageError> {
        self.segments
            .values_mut()
            .next_back()
            .ok_or_else(|| StorageError::Io(std::io::Error::other("log has no segment")))
    }

    /// Stop writing this log after a failed write or fsync, and report
    /// its log dir as failed (the shard's failure channel: Kafka takes the
    /// whole dir offline on an I/O error in any of its logs).
    fn poison(&self) {
        if !self.poisoned.replace(true) {
            self.storage.failures().report(&self.dir);
        }
    }

    fn check_poison(&self) -> Result<(), StorageError> {
        if self.poisoned.get() {
            Err(StorageError::Poisoned)
        } else {
            Ok(())
        }
    }
}

impl Drop for PartitionLog {
    /// Release this partition's share of the shard's batch cache.
    fn drop(&mut self) {
        if let Ok(mut cache) = self.cache.try_borrow_mut() {
            cache.remove_partition(self.cache_id);
        }
    }
}

mod clean;
pub use clean::{CleanerSegment, CleanerView, SegmentStat};
mod follower;
mod future;
pub use follower::FollowerAppendError;
mod read;
pub use read::RecordPick;
mod scan;
pub use scan::BatchHeaderInfo;
mod close;
mod retain;
mod roll;
mod segment_times;
pub use segment_times::SegmentTime;
mod write;

/// A just-rolled segment's file and its background fdatasync.
struct RolledSegment {
    file: Rc<glommio::io::DmaFile>,
    base_offset: i64,
    /// Set once the background close wrote every byte into `file`.
    written: Rc<Cell<bool>>,
    /// Set once an fdatasync of `file` succeeded (background or not).
    synced: Rc<Cell<bool>>,
    task: glommio::task::JoinHandle<()>,
}

impl RolledSegment {
    /// The file, if its bytes may not be durable yet (flushes and group
    /// commits must then sync it too: it holds appends not yet synced).
    fn file_to_sync(&self) -> Option<Rc<glommio::io::DmaFile>> {
        (!self.synced.get()).then(|| self.file.clone())
    }
}

/// Written-out bytes waiting for their fdatasync (see
/// [`PartitionLog::write_out`]).
pub struct PendingSync {
    /// The active segment's file, and a just-rolled one whose background
    /// fdatasync may not have finished.
    files: Vec<Rc<glommio::io::DmaFile>>,
    /// Every offset below this was written out.
    pub log_end_offset: i64,
    /// The shard's, for the fdatasyncs' latency.
    pub(crate) timings: super::io_timings::SharedIoTimings,
}

impl PendingSync {
    /// fdatasync every file the written-out bytes went to.
    pub async fn sync(&self) -> Result<(), StorageError> {
        for f in &self.files {
            let start = self.timings.start();
            let r = f.fdatasync().await;
            self.timings.on_fsync(start);
            r.map_err(|e| StorageError::Io(e.into()))?;
        }
        Ok(())
    }
}
