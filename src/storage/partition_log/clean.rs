//! What the log cleaner sees of a log and how a cleaned segment replaces
//! the ones it was made from (part of the `[drv]` partition log; the
//! cleaner itself is `storage::cleaner`).
//!
//! The cleaner reads closed segments through their read-only fds without
//! the log's lock ([`CleanerSegment`] holds the fd), writes
//! `<base>.log.cleaned` and its indexes (the aborted-transaction index
//! `<base>.txnindex.cleaned` among them), and only the swap takes the lock
//! ([`PartitionLog::replace_segments`], Kafka's `UnifiedLog.replaceSegments`):
//! `.cleaned` → `.swap`, the old segments deleted, `.swap` → the final
//! names. A log changed meanwhile (retention, truncation, DeleteRecords)
//! refuses the swap, and the cleaner throws its files away.

use std::fs::File;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;

use super::{PartitionLog, UNSET_MS};
use crate::storage::config::LogConfig;
use crate::storage::segment::{self, Segment, INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX};
use crate::storage::shard_storage::ShardStorage;
use crate::storage::swap::{self, CLEANED_SUFFIX, SWAP_SUFFIX};
use crate::storage::txn_index::TXN_INDEX_SUFFIX;
use crate::storage::StorageError;

/// One segment, as the cleaner's selection (`cleaner::select`) needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentStat {
    pub base_offset: i64,
    pub size: u64,
    /// Largest batch max timestamp (-1 when unknown or empty).
    pub largest_timestamp: i64,
    /// Max timestamp of the first batch (Kafka's
    /// `getFirstBatchTimestampForSegments`), `None` when empty.
    pub first_batch_timestamp: Option<i64>,
}

/// A closed segment as the cleaner reads it.
#[derive(Debug, Clone)]
pub struct CleanerSegment {
    pub base_offset: i64,
    /// Last offset + 1 of what it holds.
    pub next_offset: i64,
    pub size: u64,
    pub file: Arc<File>,
    pub offset_index_bytes: u64,
    pub time_index_bytes: u64,
    pub stat: SegmentStat,
}

/// A log as the cleaner sees it, taken under the lock.
#[derive(Debug, Clone)]
pub struct CleanerView {
    pub dir: PathBuf,
    pub config: LogConfig,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    pub high_watermark: i64,
    /// Every segment; those from `active_base_offset` on are still written.
    pub segments: Vec<CleanerSegment>,
    /// Base of the first segment still being written (the active one, or
    /// one a roll is still closing).
    pub active_base_offset: i64,
    /// The shard's storage the log belongs to (the cleaner inflates LZ4
    /// batches in its scratch).
    pub storage: Rc<ShardStorage>,
}

impl PartitionLog {
    pub fn cleaner_view(&self) -> CleanerView {
        // The last segment is the active one even before its first append
        // gives it an appender (`activate_lazily`).
        let last_base = self.segments.keys().next_back().copied();
        let active_base_offset = self
            .segments
            .values()
            .find(|s| s.appender.is_some() || s.is_closing())
            .map(|s| s.base_offset)
            .or(last_base)
            .unwrap_or(self.log_end_offset());
        let segments = self
            .segments
            .values()
            .map(|s| CleanerSegment {
                base_offset: s.base_offset,
                next_offset: s.next_offset,
                size: s.size(),
                file: s.read_file.clone(),
                offset_index_bytes: s.index.offsets.len() as u64 * 8,
                time_index_bytes: s.index.times.len() as u64 * 12,
                stat: SegmentStat {
                    base_offset: s.base_offset,
                    size: s.size(),
                    largest_timestamp: s.index.max_timestamp,
                    first_batch_timestamp: s.index.first_batch_timestamp,
                },
            })
            .collect();
        CleanerView {
            dir: self.dir.clone(),
            config: self.config.clone(),
            log_start_offset: self.log_start_offset,
            log_end_offset: self.log_end_offset(),
            high_watermark: self.high_watermark,
            segments,
            active_base_offset,
            storage: self.storage.clone(),
        }
    }

    /// Whether `old` are still this log's segments, unchanged and closed.
    fn still_holds(&self, old: &[CleanerSegment]) -> bool {
        old.iter().all(|o| {
            self.segments.get(&o.base_offset).is_some_and(|s| {
                Arc::ptr_eq(&s.read_file, &o.file)
                    && s.size() == o.size
                    && s.appender.is_none()
                    && !s.is_closing()
            })
        })
    }

    /// Swap the cleaned segment at `base` (files `<base>.*.cleaned`) in
    /// for `old`, as Kafka's `replaceSegments`. `Ok(false)`: the log
    /// changed since the cleaner looked, nothing was replaced (the caller
    /// deletes its files). `delay` runs once the `.swap` files are durable
    /// (the fault-injection hook `shardlog.cleaner.swap.delay.ms`).
    pub async fn replace_segments(
        &mut self,
        old: &[CleanerSegment],
        base: i64,
        delay: std::time::Duration,
    ) -> Result<bool, StorageError> {
        self.check_poison()?;
        if old.is_empty() || old[0].base_offset != base || !self.still_holds(old) {
            return Ok(false);
        }
        let result = self.replace_inner(old, base, delay).await;
        if result.is_err() {
            // Half-swapped files: the next open completes the swap.
            self.poison();
        }
        result.map(|()| true)
    }

    async fn replace_inner(
        &mut self,
        old: &[CleanerSegment],
        base: i64,
        delay: std::time::Duration,
    ) -> Result<(), StorageError> {
        swap::rename_all(&self.dir, base, CLEANED_SUFFIX, SWAP_SUFFIX)?;
        segment::sync_dir(&self.dir).await?;
        if !delay.is_zero() {
            glommio::timer::sleep(delay).await;
        }
        for o in old {
            if let Some(seg) = self.segments.remove(&o.base_offset) {
                seg.delete_files_in_background(
                    self.storage.helpers(),
                    self.config.file_delete_delay_ms,
                )?;
            }
        }
        // The log file last: until it is renamed a crash leaves `.swap`,
        // which the next open completes (a `.txnindex` already renamed is
        // then known to be the cleaned one: `swap`'s module doc).
        swap::rename_one(&self.dir, base, INDEX_SUFFIX, SWAP_SUFFIX)?;
        swap::rename_one(&self.dir, base, TIME_INDEX_SUFFIX, SWAP_SUFFIX)?;
        swap::rename_one(&self.dir, base, TXN_INDEX_SUFFIX, SWAP_SUFFIX)?;
        swap::rename_one(&self.dir, base, LOG_SUFFIX, SWAP_SUFFIX)?;
        let seg = match Segment::load_trusted(&self.dir, base, &self.config, UNSET_MS)? {
            Some(seg) => seg,
            None => {
                Segment::recover(&self.dir, base, &self.config, UNSET_MS)
                    .await?
                    .0
            }
        };
        let end = old.last().map_or(base, |o| o.next_offset);
        self.segments.insert(base, seg);
        segment::sync_dir(&self.dir).await?;
        self.cache.borrow_mut().forget_below(self.cache_id, end);
        self.publish_ends();
        Ok(())
    }
}
