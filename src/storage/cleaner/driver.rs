//! `[drv]` One clean of one log (Kafka 3.9 `Cleaner.doClean`): build the
//! offset map over the dirty section, then for each group of segments
//! write the cleaned segment `<base>.log.cleaned` with rebuilt indexes and
//! fsync it; the caller swaps each group in under the log's write lock
//! (`PartitionLog::replace_segments`) and, once all are in, records the
//! new first dirty offset in `cleaner-offset-checkpoint`.
//!
//! One transaction tracker (`txn::CleanedTxnMetadata`) reads every group
//! in order from the log start, as Kafka's `doClean` passes one to every
//! `cleanSegments`. Each cleaned segment gets a new aborted-transaction
//! index, `<base>.txnindex.cleaned`, holding the aborted transactions
//! whose ABORT marker it keeps because their data was still read
//! ([`CleanedGroup::aborted`]; the caller hands them to the partition's
//! in-memory index after the swap).
//!
//! Reads and writes run on glommio's blocking pool in chunks of
//! [`CHUNK_BYTES`], the CPU work (inflate, filter, deflate) on the shard
//! with a yield after each batch, so a clean never holds the shard for long.

use std::collections::BTreeMap;
use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use super::codec;
use super::filter::{self, LastRecord, Outcome, RetainRules};
use super::group::{group_segments_by_size, GroupInput};
use super::legacy;
use super::offset_map::OffsetMap;
use super::select::LogToClean;
use super::throttle::Throttler;
use super::txn::{BatchFacts, BatchKind, CleanedTxnMetadata};
use crate::config::ServerConfig;
use crate::io::clock::Clock;
use crate::protocol::control_record;
use crate::protocol::legacy::{MAGIC_OFFSET, RECORD_OVERHEAD_V0};
use crate::protocol::record_batch::{BatchError, RecordBatch};
use crate::protocol::record_walk::records_section;
use crate::storage::checkpoint::{self, CLEANER_OFFSET_CHECKPOINT};
use crate::storage::index::SegmentIndex;
use crate::storage::log_dir::LogDirs;
use crate::storage::partition_log::{CleanerSegment, CleanerView};
use crate::storage::segment::Segment;
use crate::storage::shard_storage::ShardStorage;
use crate::storage::swap::{self, CLEANED_SUFFIX};
use crate::storage::txn_index::AbortedTxn;
use crate::storage::StorageError;
use crate::types::TopicPartition;

/// Bytes per read or write of the cleaner.
pub const CHUNK_BYTES: usize = 1 << 20;

/// The broker keys one shard's cleaner runs with.
#[derive(Debug, Clone, PartialEq)]
pub struct CleanerConfig {
    /// This shard's share of `log.cleaner.dedupe.buffer.size`.
    pub dedupe_buffer_bytes: u64,
    /// This shard's share of `log.cleaner.io.max.bytes.per.second`.
    pub io_max_bytes_per_second: f64,
    /// `shardlog.cleaner.swap.delay.ms` (fault injection).
    pub swap_delay_ms: u64,
}

impl CleanerConfig {
    /// One data shard's cleaner config: the shards share the broker's
    /// buffer and I/O budget as Kafka's cleaner threads do (`LogCleaner`
    /// gives each `CleanerThread` `dedupeBufferSize / numThreads`).
    pub fn for_shard(server: &ServerConfig, n_shards: usize) -> Self {
        let shards = n_shards.max(1) as u64;
        CleanerConfig {
            dedupe_buffer_bytes: u64::try_from(server.log_cleaner_dedupe_buffer_size).unwrap_or(0)
                / shards,
            io_max_bytes_per_second: server.log_cleaner_io_max_bytes_per_second / shards as f64,
            swap_delay_ms: server.shardlog_cleaner_swap_delay_ms,
        }
    }
}

/// What one clean did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CleanStats {
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub records_read: u64,
    pub records_kept: u64,
    pub segments_cleaned: u64,
    pub groups: u64,
    pub map_entries: usize,
    /// The new first dirty offset.
    pub end_offset: i64,
    /// Earliest delete horizon of tombstones still in the cleaned part.
    pub pending_delete_horizon_ms: Option<i64>,
}

/// The cleaner's I/O accounting and throttle.
pub struct IoBudget {
    clock: Rc<dyn Clock>,
    throttle: Throttler,
}

impl IoBudget {
    pub fn new(clock: Rc<dyn Clock>, bytes_per_second: f64) -> Self {
        let now = clock.mono_ms();
        IoBudget {
            clock,
            throttle: Throttler::new(bytes_per_second, now),
        }
    }

    async fn on_io(&mut self, bytes: u64) {
        let sleep = self.throttle.on_io(self.clock.mono_ms(), bytes);
        if sleep > 0 {
            glommio::timer::sleep(std::time::Duration::from_millis(sleep)).await;
            self.throttle.on_slept(self.clock.mono_ms());
        }
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> Result<T, StorageError> {
    Ok(glommio::executor().spawn_blocking(f).await?)
}

/// Whole batches of one closed segment, read in chunks.
struct BatchReader {
    file: Arc<File>,
    size: u64,
    buf: Vec<u8>,
    /// File position of `buf[0]`.
    buf_pos: u64,
    at: usize,
}

fn invalid(what: &str) -> StorageError {
    StorageError::Io(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        what.to_string(),
    ))
}

impl BatchReader {
    fn new(seg: &CleanerSegment) -> Self {
        BatchReader {
            file: seg.file.clone(),
            size: seg.size,
            buf: Vec::new(),
            buf_pos: 0,
            at: 0,
        }
    }

    /// The next batch as a range of `self.buf`, valid until the next call.
    async fn next(&mut self, io: &mut IoBudget) -> Result<Option<Range<usize>>, StorageError> {
        loop {
            let avail = self.buf.len() - self.at;
            let mut needed = 12;
            if avail >= 12 {
                let h = &self.buf[self.at..];
                let len = i32::from_be_bytes([h[8], h[9], h[10], h[11]]);
                // A legacy (magic 0/1) message may be as short as 14 bytes.
                if len < RECORD_OVERHEAD_V0 as i32 {
                    return Err(invalid(
                        "entry length below the legacy minimum in a segment",
                    ));
                }
                needed = 12 + len as usize;
                if avail >= needed {
                    let range = self.at..self.at + needed;
                    self.at += needed;
                    return Ok(Some(range));
                }
            }
            let file_at = self.buf_pos + self.buf.len() as u64;
            if file_at >= self.size {
                return if avail == 0 {
                    Ok(None)
                } else {
                    Err(invalid("segment ends inside a batch"))
                };
            }
            self.buf.drain(..self.at);
            self.buf_pos += self.at as u64;
            self.at = 0;
            let want = (CHUNK_BYTES.max(needed) as u64).min(self.size - file_at) as usize;
            let file = self.file.clone();
            // Read straight into the buffer's tail (moved to the pool thread and back).
            let mut buf = std::mem::take(&mut self.buf);
            let kept = buf.len();
            buf.resize(kept + want, 0);
            self.buf = blocking(move || {
                file.read_exact_at(&mut buf[kept..], file_at)?;
                Ok(buf)
            })
            .await?;
            io.on_io(want as u64).await;
        }
    }
}

/// A cleaned group, written and fsynced, waiting for its swap.
#[derive(Debug)]
pub struct CleanedGroup {
    pub base_offset: i64,
    /// The segments it replaces.
    pub old: Vec<CleanerSegment>,
    /// Its aborted-transaction index (also in `<base>.txnindex.cleaned`):
    /// the entries of `old` it replaces.
    pub aborted: Vec<AbortedTxn>,
    dir: PathBuf,
}

impl CleanedGroup {
    /// The swap was refused (the log changed): remove the files.
    pub fn discard(self) {
        let _ = swap::remove_all(&swap::paths(&self.dir, self.base_offset, CLEANED_SUFFIX));
    }
}

/// One clean of one log, step by step (the caller swaps each group in).
pub struct CleanJob {
    view: CleanerView,
    to_clean: LogToClean,
    last_records: BTreeMap<i64, LastRecord>,
    /// The log's aborted transactions: their records are neither mapped
    /// nor kept.
    aborted: Vec<AbortedTxn>,
    /// The one tracker of the groups' transactions, from the first group
    /// written on (Kafka's `doClean`).
    txns: Option<CleanedTxnMetadata>,
    now_ms: i64,
    map: OffsetMap,
    end_offset: i64,
    pub stats: CleanStats,
}

fn corrupt(e: BatchError) -> StorageError {
    StorageError::Batch(e)
}

impl CleanJob {
    pub fn new(
        view: CleanerView,
        to_clean: LogToClean,
        last_records: BTreeMap<i64, LastRecord>,
        aborted: Vec<AbortedTxn>,
        now_ms: i64,
        config: &CleanerConfig,
    ) -> Self {
        CleanJob {
            view,
            to_clean,
            last_records,
            aborted,
            txns: None,
            now_ms,
            map: OffsetMap::new(config.dedupe_buffer_bytes),
            end_offset: to_clean.first_uncleanable_offset,
            stats: CleanStats::default(),
        }
    }

    /// Kafka's `buildOffsetMap` over `[first dirty, first uncleanable)`;
    /// a full map ends this round's dirty part early.
    pub async fn build_offset_map(&mut self, io: &mut IoBudget) -> Result<(), StorageError> {
        let (start, end) = (
            self.to_clean.first_dirty_offset,
            self.to_clean.first_uncleanable_offset,
        );
        let dirty: Vec<CleanerSegment> = self
            .view
            .segments
            .iter()
            .filter(|s| s.base_offset < end && s.next_offset > start)
            .cloned()
            .collect();
        // Kafka's `buildOffsetMap` keeps its own tracker over the dirty part.
        let mut txns = CleanedTxnMetadata::new(&self.aborted, start);
        'segments: for seg in &dirty {
            let mut reader = BatchReader::new(seg);
            while let Some(range) = reader.next(io).await? {
                self.stats.bytes_read += range.len() as u64;
                let batch = &reader.buf[range];
                if is_legacy(batch) {
                    let last = i64::from_be_bytes(batch[..8].try_into().map_err(corrupt_len)?);
                    if last < start {
                        continue;
                    }
                    let scratch = &mut self.view.storage.inflate_scratch();
                    if !legacy::map_entry(batch, start, &mut self.map, scratch).map_err(corrupt)? {
                        self.end_offset = self.map.latest_offset() + 1;
                        break 'segments;
                    }
                    self.map.update_latest_offset(last);
                    continue;
                }
                let view = RecordBatch::new_unchecked_crc(batch).map_err(corrupt)?;
                if view.last_offset() < start {
                    continue;
                }
                if view.base_offset() >= end {
                    break 'segments;
                }
                // Markers map nothing; aborted data must not be mapped.
                let facts = batch_facts(&view, batch);
                let mapped = if view.is_control() {
                    txns.on_control_batch_read(&facts);
                    false
                } else {
                    !txns.on_batch_read(&facts)
                };
                if mapped {
                    let body = records_section(batch, &mut self.view.storage.inflate_scratch())
                        .map_err(corrupt)?;
                    let records = filter::parse_records(
                        &body,
                        view.record_count(),
                        view.base_offset(),
                        view.base_timestamp(),
                    )
                    .map_err(corrupt)?;
                    for r in records.iter().filter(|r| r.offset >= start) {
                        if let Some(key) = r.key {
                            if !self.map.put(key, r.offset) {
                                self.end_offset = self.map.latest_offset() + 1;
                                break 'segments;
                            }
                        }
                    }
                }
                self.map.update_latest_offset(view.last_offset());
                glommio::yield_if_needed().await;
            }
        }
        if self.end_offset == end {
            // The map covers the whole dirty part: every record below its
            // end is judged by it (a key it lacks is -1, so kept). Without
            // this a round with an empty dirty part (a passed delete
            // horizon) would keep every record as past the map's end.
            self.map.update_latest_offset(end - 1);
        }
        self.map.check_invariants();
        self.stats.map_entries = self.map.len();
        self.stats.end_offset = self.end_offset;
        Ok(())
    }

    /// The groups to clean (`groupSegmentsBySize` over the segments below
    /// the end of this round's dirty part).
    pub fn groups(&self) -> Vec<Vec<CleanerSegment>> {
        let segs: Vec<&CleanerSegment> = self
            .view
            .segments
            .iter()
            .filter(|s| {
                s.base_offset < self.end_offset && s.base_offset < self.view.active_base_offset
            })
            .collect();
        let inputs: Vec<GroupInput> = segs
            .iter()
            .map(|s| GroupInput {
                base_offset: s.base_offset,
                size: s.size,
                offset_index_bytes: s.offset_index_bytes,
                time_index_bytes: s.time_index_bytes,
            })
            .collect();
        group_segments_by_size(
            &inputs,
            self.view.config.segment_bytes,
            self.view.config.segment_index_bytes,
            self.to_clean.first_uncleanable_offset,
        )
        .into_iter()
        .map(|r| segs[r].iter().map(|s| (*s).clone()).collect())
        .collect()
    }

    /// Write `group` cleaned into `<base>.log.cleaned` (+ indexes), fsynced.
    pub async fn write_group(
        &mut self,
        group: Vec<CleanerSegment>,
        io: &mut IoBudget,
    ) -> Result<CleanedGroup, StorageError> {
        let base = group.first().map_or(0, |s| s.base_offset);
        let dir = self.view.dir.clone();
        let paths = swap::paths(&dir, base, CLEANED_SUFFIX);
        swap::remove_all(&paths)?;
        let file = Arc::new(
            std::fs::OpenOptions::new()
                .create_new(true)
                .write(true)
                .open(&paths[0])?,
        );
        let mut done = CleanedGroup {
            base_offset: base,
            old: group,
            aborted: Vec::new(),
            dir,
        };
        match self.write_into(&done, &file, &paths, io).await {
            Ok(aborted) => {
                done.aborted = aborted;
                Ok(done)
            }
            Err(e) => {
                done.discard();
                Err(e)
            }
        }
    }

    /// The cleaned segment and its indexes, fsynced; returns its aborted
    /// transactions (written to `<base>.txnindex.cleaned`, even when none:
    /// the swap's recovery relies on the file, see `swap`).
    async fn write_into(
        &mut self,
        group: &CleanedGroup,
        file: &Arc<File>,
        paths: &[PathBuf],
        io: &mut IoBudget,
    ) -> Result<Vec<AbortedTxn>, StorageError> {
        let map = std::mem::replace(&mut self.map, OffsetMap::new(0));
        let producers = std::mem::take(&mut self.last_records);
        let rules = RetainRules {
            map: &map,
            now_ms: self.now_ms,
            delete_retention_ms: self.view.config.delete_retention_ms,
            last_records: &producers,
        };
        let mut index = Segment::new_index(group.base_offset, &self.view.config);
        let txns = self
            .txns
            .get_or_insert_with(|| CleanedTxnMetadata::new(&self.aborted, group.base_offset));
        let result = copy_cleaned(
            &group.old,
            &self.view.storage,
            &rules,
            txns,
            &mut index,
            file,
            &mut self.stats,
            io,
        )
        .await;
        self.map = map;
        self.last_records = producers;
        let written = result?;
        let aborted = txns.take_retained_aborts();
        self.stats.bytes_written += written;
        self.stats.groups += 1;
        std::fs::write(&paths[1], index.offsets.encode())?;
        std::fs::write(&paths[2], index.times.encode())?;
        let entries: Vec<u8> = aborted.iter().flat_map(AbortedTxn::encode).collect();
        std::fs::write(&paths[3], entries)?;
        let (file, paths) = (file.clone(), paths.to_vec());
        blocking(move || {
            file.sync_all()?;
            for p in &paths[1..] {
                File::open(p)?.sync_all()?;
            }
            Ok(())
        })
        .await?;
        Ok(aborted)
    }
}

/// Copy the kept part of `old` into `file`, indexing it; returns bytes
/// written. Each batch goes past `txns` first (Kafka's
/// `shouldDiscardBatch` in `checkBatchRetention`). LZ4 batches are
/// inflated in `storage`'s scratch, one batch at a time.
#[allow(clippy::too_many_arguments)] // the clean's parts, lent apart by `CleanJob::write_into`
async fn copy_cleaned(
    old: &[CleanerSegment],
    storage: &ShardStorage,
    rules: &RetainRules<'_>,
    txns: &mut CleanedTxnMetadata,
    index: &mut SegmentIndex,
    file: &Arc<File>,
    stats: &mut CleanStats,
    io: &mut IoBudget,
) -> Result<u64, StorageError> {
    let (mut out, mut written) = (Vec::with_capacity(CHUNK_BYTES), 0u64);
    for seg in old {
        let mut reader = BatchReader::new(seg);
        while let Some(range) = reader.next(io).await? {
            stats.bytes_read += range.len() as u64;
            let batch = &reader.buf[range];
            if is_legacy(batch) {
                let c = legacy::clean_entry(batch, rules, &mut storage.inflate_scratch())
                    .map_err(corrupt)?;
                stats.records_read += c.records_read;
                stats.records_kept += c.records_kept;
                if let Some(bytes) = c.bytes {
                    // Indexed by its offset field, as recovery does.
                    let offset = i64::from_be_bytes(bytes[..8].try_into().map_err(corrupt_len)?);
                    let position = written + out.len() as u64;
                    index.on_batch(offset, position, bytes.len() as u64, c.max_timestamp);
                    out.extend_from_slice(&bytes);
                }
                if out.len() >= CHUNK_BYTES {
                    written += flush_out(file, written, &mut out, io).await?;
                }
                glommio::yield_if_needed().await;
                continue;
            }
            let view = RecordBatch::new_unchecked_crc(batch).map_err(corrupt)?;
            let base_offset = view.base_offset();
            let facts = batch_facts(&view, batch);
            let (bytes, max_ts) = if view.is_control() {
                let can_discard = txns.on_control_batch_read(&facts);
                clean_batch(batch, rules, Some(can_discard), stats, storage)?
            } else if txns.on_batch_read(&facts) {
                discard_aborted(batch, &view, rules, stats)
            } else {
                clean_batch(batch, rules, None, stats, storage)?
            };
            if let Some(bytes) = bytes {
                let position = written + out.len() as u64;
                index.on_batch(base_offset, position, bytes.len() as u64, max_ts);
                out.extend_from_slice(&bytes);
            }
            if out.len() >= CHUNK_BYTES {
                written += flush_out(file, written, &mut out, io).await?;
            }
            glommio::yield_if_needed().await;
        }
        stats.segments_cleaned += 1;
    }
    written += flush_out(file, written, &mut out, io).await?;
    Ok(written)
}

/// A legacy (magic 0/1) message of a log Kafka wrote with an old
/// `log.message.format.version` (the magic sits at byte 16 in every format).
fn is_legacy(entry: &[u8]) -> bool {
    entry.get(MAGIC_OFFSET).is_some_and(|&m| m < 2)
}

fn corrupt_len(_: std::array::TryFromSliceError) -> StorageError {
    invalid("legacy entry shorter than its offset")
}

/// What the transaction tracker needs of a batch.
fn batch_facts(view: &RecordBatch<'_>, batch: &[u8]) -> BatchFacts {
    let kind = if !view.is_control() {
        BatchKind::Data {
            transactional: view.is_transactional(),
        }
    } else if view.record_count() <= 0 {
        BatchKind::EmptyControl
    } else {
        match control_record::read_marker(batch) {
            Some((true, _)) => BatchKind::Commit,
            Some((false, _)) => BatchKind::Abort,
            None => BatchKind::OtherControl,
        }
    };
    BatchFacts {
        last_offset: view.last_offset(),
        producer_id: view.producer_id(),
        kind,
    }
}

/// A batch of an aborted transaction: dropped, or only its header kept when
/// it is its producer's last batch (Kafka's `RETAIN_EMPTY`: the producer's
/// epoch and sequence survive).
fn discard_aborted(
    batch: &[u8],
    view: &RecordBatch<'_>,
    rules: &RetainRules<'_>,
    stats: &mut CleanStats,
) -> (Option<Vec<u8>>, i64) {
    stats.records_read += view.record_count().max(0) as u64;
    if rules.is_last_batch_of_producer(view) {
        (Some(filter::empty_header(batch)), view.max_timestamp())
    } else {
        (None, -1)
    }
}

/// One batch cleaned: the bytes to write (if any) and their max timestamp.
/// `marker`: for a control batch, whether the tracker lets it go.
fn clean_batch(
    batch: &[u8],
    rules: &RetainRules<'_>,
    marker: Option<bool>,
    stats: &mut CleanStats,
    storage: &ShardStorage,
) -> Result<(Option<Vec<u8>>, i64), StorageError> {
    let view = RecordBatch::new_unchecked_crc(batch).map_err(corrupt)?;
    let body = records_section(batch, &mut storage.inflate_scratch()).map_err(corrupt)?;
    let f = match marker {
        Some(can_discard) => filter::filter_marker(batch, &body, rules, can_discard),
        None => filter::filter_batch(batch, &body, rules),
    }
    .map_err(corrupt)?;
    stats.records_read += f.records_read;
    stats.records_kept += f.records_kept;
    if let Some(h) = f.pending_delete_horizon_ms {
        let p = &mut stats.pending_delete_horizon_ms;
        *p = Some(p.map_or(h, |x| x.min(h)));
    }
    Ok(match f.outcome {
        Outcome::KeepOriginal => (Some(batch.to_vec()), view.max_timestamp()),
        Outcome::Empty(h) => (Some(h), view.max_timestamp()),
        Outcome::Drop => (None, -1),
        Outcome::Rewrite(r) => {
            let records = codec::compress(filter::codec_of(batch), &r.records).map_err(corrupt)?;
            (
                Some(filter::encode_batch(batch, &r, &records)),
                r.max_timestamp,
            )
        }
    })
}

/// Write `out` at `at` off the shard; returns the bytes written.
async fn flush_out(
    file: &Arc<File>,
    at: u64,
    out: &mut Vec<u8>,
    io: &mut IoBudget,
) -> Result<u64, StorageError> {
    if out.is_empty() {
        return Ok(0);
    }
    let data = std::mem::take(out);
    let n = data.len() as u64;
    let f = file.clone();
    let data = blocking(move || f.write_all_at(&data, at).map(|()| data)).await?;
    *out = data;
    out.clear();
    io.on_io(n).await;
    Ok(n)
}

/// The checkpointed first dirty offsets of `log_dir`.
pub fn read_checkpoint(log_dir: &Path) -> Result<Vec<(TopicPartition, i64)>, StorageError> {
    match std::fs::read_to_string(log_dir.join(CLEANER_OFFSET_CHECKPOINT)) {
        Ok(text) => {
            checkpoint::decode_offsets(&text).map_err(|e| StorageError::CorruptCheckpoint(e.0))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

/// Merge `updates` into the `cleaner-offset-checkpoint` of dir `log_dir`
/// of `log_dirs` (tmp file, fsync, rename), off the shard. Shards share a
/// dir's file: the dir's lock ([`LogDirs::cleaner_checkpoint_lock`]) keeps
/// one writer at a time.
pub async fn write_checkpoint(
    log_dirs: Arc<LogDirs>,
    log_dir: usize,
    updates: Vec<(TopicPartition, i64)>,
) -> Result<(), StorageError> {
    let dir = log_dirs.path(log_dir).to_path_buf();
    glommio::executor()
        .spawn_blocking(move || {
            let _one_writer = log_dirs
                .cleaner_checkpoint_lock(log_dir)
                .map(|l| l.lock().unwrap_or_else(|e| e.into_inner()));
            let existing = read_checkpoint(&dir).unwrap_or_default();
            let merged = checkpoint::merge_offsets(existing, &updates, &[]);
            crate::storage::partition_log::write_atomically(
                &dir.join(CLEANER_OFFSET_CHECKPOINT),
                &checkpoint::encode_offsets(&merged),
            )
        })
        .await
}
