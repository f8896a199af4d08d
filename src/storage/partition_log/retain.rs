//! Truncation (KIP-101), DeleteRecords and time / size retention (part of
//! the `[drv]` partition log).

use super::{PartitionLog, UNSET_MS};
use crate::storage::segment::{self, Segment};
use crate::storage::StorageError;

impl PartitionLog {
    /// Remove every offset >= `offset` (replication truncation, KIP-101).
    /// Cuts at the batch holding `offset`, so the new LEO is a batch
    /// boundary <= `offset`.
    pub async fn truncate_to(&mut self, offset: i64) -> Result<(), StorageError> {
        self.check_poison()?;
        if offset >= self.log_end_offset() {
            return Ok(());
        }
        let result = self.truncate_inner(offset).await;
        if result.is_err() {
            // Files may be half-cut: refuse further writes.
            self.poison();
        }
        result
    }

    async fn truncate_inner(&mut self, offset: i64) -> Result<(), StorageError> {
        self.settle_marker_removal().await?;
        self.await_roll_sync().await?;
        self.close_active().await?;
        let first_base = self.segments.keys().next().copied().unwrap_or(0);
        if offset <= self.log_start_offset || offset <= first_base {
            return self.truncate_fully_and_start_at(offset.max(0)).await;
        }
        let doomed: Vec<i64> = self.segments.range(offset..).map(|(b, _)| *b).collect();
        for base in doomed {
            if let Some(seg) = self.segments.remove(&base) {
                seg.delete_files_in_background(
                    self.storage.helpers(),
                    self.config.file_delete_delay_ms,
                )?;
            }
        }
        let Some((&base, seg)) = self.segments.iter().next_back() else {
            return self.truncate_fully_and_start_at(offset).await;
        };
        if let Some(cut) = seg.find_batch(offset)? {
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(seg.log_path())?;
            f.set_len(cut.position)?;
        }
        // Rescan the cut segment: rebuilds indexes and max timestamp exactly.
        let (mut seg, _) = Segment::recover(&self.dir, base, &self.config, UNSET_MS).await?;
        seg.activate(&self.config, self.storage.buffers(), self.storage.timings())
            .await?;
        self.segments.insert(base, seg);
        self.after_truncation();
        Ok(())
    }

    pub(super) async fn truncate_fully_and_start_at(
        &mut self,
        offset: i64,
    ) -> Result<(), StorageError> {
        self.settle_marker_removal().await?;
        for (_, seg) in std::mem::take(&mut self.segments) {
            seg.delete_files()?;
        }
        // The log may restart below offsets the pooled files held.
        segment::free_in_background(self.storage.helpers(), self.recycle.drain(), true);
        let mut seg =
            Segment::create_empty(&self.dir, offset, &self.config, UNSET_MS, None).await?;
        seg.activate(&self.config, self.storage.buffers(), self.storage.timings())
            .await?;
        self.segments.insert(offset, seg);
        self.log_start_offset = offset;
        self.after_truncation();
        Ok(())
    }

    fn after_truncation(&mut self) {
        let leo = self.log_end_offset();
        self.cache.borrow_mut().truncate_to(self.cache_id, leo);
        self.high_watermark = self.high_watermark.min(leo).max(self.log_start_offset);
        self.recovery_point.set(self.recovery_point.get().min(leo));
        // Kafka's LogManager.truncateTo checkpoints the recovery points
        // right after a truncation: the file must not keep a point past
        // the new end (the next start would trust unflushed segments).
        self.storage.request_checkpoints();
        self.leader_epochs.retain(|&(_, start)| start < leo);
        let _ = self.write_leader_epochs();
        self.publish_ends();
    }

    /// DeleteRecords: advance the log start offset to `offset` (at most the
    /// high watermark, else OFFSET_OUT_OF_RANGE) and drop whole segments
    /// that lie entirely below it. Returns the new log start offset.
    pub fn delete_records_before(&mut self, offset: i64) -> Result<i64, StorageError> {
        if offset > self.high_watermark || offset < 0 {
            return Err(StorageError::OffsetOutOfRange {
                offset,
                log_start_offset: self.log_start_offset,
                log_end_offset: self.log_end_offset(),
            });
        }
        if offset > self.log_start_offset {
            self.log_start_offset = offset;
            self.delete_segments_while(|_, next_base, log| next_base <= log.log_start_offset)?;
            self.publish_ends();
        }
        Ok(self.log_start_offset)
    }

    /// A segment dropped below the log start offset: into the recycle pool
    /// when it is on and has room, else deleted in the background.
    fn retire(&mut self, seg: Segment) -> Result<(), StorageError> {
        if self.config.recycle_segments && self.recycle.has_room() {
            if let Some(path) =
                seg.retire_to_pool(self.storage.helpers(), self.config.file_delete_delay_ms)?
            {
                self.recycle.add(seg.next_offset, path);
                return Ok(());
            }
        }
        seg.delete_files_in_background(self.storage.helpers(), self.config.file_delete_delay_ms)
    }

    /// Delete the oldest non-active segments while `pred(segment, next
    /// segment base, log)` holds; advances the log start offset.
    fn delete_segments_while(
        &mut self,
        mut pred: impl FnMut(&Segment, i64, &Self) -> bool,
    ) -> Result<usize, StorageError> {
        let mut deleted = 0;
        loop {
            let mut it = self.segments.iter();
            let (Some((&base, seg)), Some((&next_base, _))) = (it.next(), it.next()) else {
                break; // never the active segment
            };
            // A segment whose background close still writes it waits for
            // the next retention pass.
            if seg.is_closing() || !pred(seg, next_base, self) {
                break;
            }
            if let Some(seg) = self.segments.remove(&base) {
                self.retire(seg)?;
            }
            self.log_start_offset = self.log_start_offset.max(next_base);
            deleted += 1;
        }
        if deleted > 0 {
            self.publish_ends();
        }
        Ok(deleted)
    }

    /// Time (`retention.ms`, by the segment's largest timestamp) and size
    /// (`retention.bytes`) retention, as Kafka's `deleteOldSegments`: only
    /// whole segments, oldest first, never the active one, and only those
    /// entirely below the high watermark. Returns segments deleted.
    /// A log whose `cleanup.policy` lacks `delete` (compact only) keeps
    /// every segment (Kafka applies only log-start-offset deletion then).
    pub fn apply_retention(&mut self, now_ms: i64) -> Result<usize, StorageError> {
        let mut deleted = 0;
        if !self.config.delete {
            return Ok(0);
        }
        let retention_ms = self.config.retention_ms;
        if retention_ms >= 0 {
            deleted += self.delete_segments_while(|seg, next_base, log| {
                // An empty closed segment (the cleaner emptied it) holds
                // nothing to keep and must not hold retention up.
                next_base <= log.high_watermark
                    && (seg.is_empty()
                        || seg.index.max_timestamp >= 0
                            && now_ms.saturating_sub(seg.index.max_timestamp) > retention_ms)
            })?;
        }
        if self.config.retention_bytes >= 0 {
            let mut excess = self.size_bytes() as i64 - self.config.retention_bytes;
            deleted += self.delete_segments_while(|seg, next_base, log| {
                let fits = next_base <= log.high_watermark && excess - seg.size() as i64 >= 0;
                if fits {
                    excess -= seg.size() as i64;
                }
                fits
            })?;
        }
        Ok(deleted)
    }
}
