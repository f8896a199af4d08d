//! Append, flush, roll, close, truncation, retention (part of the `[drv]` partition log).

use super::*;
use crate::protocol::record_batch::{BatchError, CRC_START, HEADER_LEN};
use crate::storage::close_batch;

/// Offset of the CRC field in a v2 batch header (Kafka's
/// `DefaultRecordBatch.CRC_OFFSET`).
const CRC_OFFSET: usize = 17;

/// The header of `batch` with its offsets assigned. baseOffset and
/// partitionLeaderEpoch lie outside the CRC; LogAppendTime rewrites
/// attributes and maxTimestamp, which it covers, so the CRC is recomputed
/// over the patched header and the unchanged rest.
fn patched_header(
    batch: &[u8],
    base_offset: i64,
    leader_epoch: i32,
    append_time: Option<i64>,
) -> Result<[u8; HEADER_LEN], StorageError> {
    let (Some(src), Some(rest)) = (batch.get(..HEADER_LEN), batch.get(HEADER_LEN..)) else {
        return Err(BatchError::Corrupt("batch shorter than its header").into());
    };
    let mut head = [0u8; HEADER_LEN];
    head.copy_from_slice(src);
    record_batch::set_base_offset(&mut head, base_offset);
    record_batch::set_partition_leader_epoch(&mut head, leader_epoch);
    if let Some(ts) = append_time {
        record_batch::set_log_append_time(&mut head, ts);
        let crc = crc32c::crc32c_append(crc32c::crc32c(&head[CRC_START..]), rest);
        head[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    }
    Ok(head)
}

/// The header of a batch appended as it is (a follower's copy).
fn unpatched_header(batch: &[u8]) -> Result<[u8; HEADER_LEN], StorageError> {
    let src = batch
        .get(..HEADER_LEN)
        .ok_or(BatchError::Corrupt("batch shorter than its header"))?;
    let mut head = [0u8; HEADER_LEN];
    head.copy_from_slice(src);
    Ok(head)
}

impl PartitionLog {
    /// Append one produce request's `records` (1+ v2 batches). Every batch is
    /// validated before anything is written; on error nothing is appended.
    /// Takes the request's bytes as they arrived (`Bytes` or `BytesMut`):
    /// they are copied once, into the DMA buffer, and not kept.
    pub async fn append(
        &mut self,
        records: impl Into<Bytes>,
        leader_epoch: i32,
        now_ms: i64,
        log_append_time: bool,
    ) -> Result<AppendInfo, StorageError> {
        self.check_poison()?;
        let records = ValidatedRecords::new(records.into())?;
        self.append_validated(records, leader_epoch, now_ms, log_append_time)
            .await
    }

    /// [`Self::append`] for records the caller has validated already (the
    /// shard reads producer fields from them first), so the CRC is checked
    /// once per request.
    pub async fn append_validated(
        &mut self,
        records: ValidatedRecords,
        leader_epoch: i32,
        now_ms: i64,
        log_append_time: bool,
    ) -> Result<AppendInfo, StorageError> {
        self.check_poison()?;
        self.reap_rolled();
        let mut record_offsets: i64 = 0;
        let mut max_ts = -1i64;
        for s in records.summaries() {
            if s.range.len() > self.config.max_message_bytes {
                return Err(StorageError::MessageTooLarge {
                    size: s.range.len(),
                    max: self.config.max_message_bytes,
                });
            }
            record_offsets += i64::from(s.last_offset_delta) + 1;
            max_ts = max_ts.max(s.max_timestamp);
        }
        // Kafka: a segment must hold the whole append.
        let size = records.bytes().len() as u64;
        if size > self.config.segment_bytes {
            return Err(StorageError::RecordListTooLarge {
                size,
                segment: self.config.segment_bytes,
            });
        }
        let log_append_time = log_append_time || self.config.message_timestamp_log_append_time;
        if log_append_time {
            max_ts = now_ms;
        }
        let first_offset = self.log_end_offset();
        let last_offset = first_offset + record_offsets - 1;
        self.maybe_roll(records.bytes().len() as u64, max_ts, last_offset, now_ms)
            .await?;
        self.write_to_active(
            &records,
            Some((first_offset, leader_epoch)),
            log_append_time.then_some(now_ms),
        )
        .await?;
        self.appended_bytes += records.bytes().len() as i64;
        self.publish_ends();
        self.maybe_record_leader_epoch(leader_epoch, first_offset)?;
        self.maybe_flush_after_append(record_offsets, now_ms)
            .await?;
        Ok(AppendInfo {
            first_offset,
            last_offset,
            log_append_time_ms: if log_append_time { now_ms } else { -1 },
            log_start_offset: self.log_start_offset,
            bytes: records.bytes().len(),
        })
    }

    /// Copy each batch into the active segment's DMA buffer with its offsets
    /// assigned (the patched header goes in, the request is not modified),
    /// then index it and hand the buffer's copy to the batch cache.
    /// `assign` = (first offset, leader epoch) stamps the batches as a
    /// leader does; `None` keeps each batch's own base offset and epoch (a
    /// follower appending the leader's batches, see `follower.rs`).
    pub(super) async fn write_to_active(
        &mut self,
        records: &ValidatedRecords,
        assign: Option<(i64, i32)>,
        append_time: Option<i64>,
    ) -> Result<(), StorageError> {
        let base_of = |bytes: &[u8], next: i64| match assign {
            Some(_) => next,
            None => record_batch::RecordBatch::new_unchecked_crc(bytes)
                .map(|b| b.base_offset())
                .unwrap_or(next),
        };
        let first_offset = match (assign, records.summaries().first()) {
            (Some((first, _)), _) => first,
            (None, Some(s)) => base_of(&records.bytes()[s.range.clone()], 0),
            (None, None) => self.log_end_offset(),
        };
        let cache = self.cache.clone();
        let cache_id = self.cache_id;
        self.activate_lazily().await?;
        let seg = self.active()?;
        let position = seg.size();
        let Some(appender) = seg.appender.as_mut() else {
            return Err(StorageError::Io(std::io::Error::other(
                "active segment has no appender",
            )));
        };
        // A full disk refuses the whole append here, before any batch is
        // copied in (KAFKA_STORAGE_ERROR, retriable): nothing becomes
        // visible, nothing counts in the LEO, and the log stays usable, so
        // the producer's retry appends once there is room again.
        appender.reserve(records.bytes().len()).await?;
        let mut lent = Vec::with_capacity(records.summaries().len());
        let mut base = first_offset;
        let mut failed = None;
        for s in records.summaries() {
            let batch = &records.bytes()[s.range.clone()];
            base = base_of(batch, base);
            let head = match assign {
                Some((_, leader_epoch)) => patched_header(batch, base, leader_epoch, append_time)?,
                None => unpatched_header(batch)?,
            };
            let lend = cache.borrow().accepts(batch.len());
            match appender
                .append_batch(&head, &batch[HEADER_LEN..], lend)
                .await
            {
                Ok(bytes) => lent.push(bytes),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
            base += i64::from(s.last_offset_delta) + 1;
        }
        if let Some(e) = failed {
            self.poison();
            return Err(e);
        }
        let mut cache = cache.borrow_mut();
        let mut base = first_offset;
        for (s, bytes) in records.summaries().iter().zip(lent) {
            base = base_of(&records.bytes()[s.range.clone()], base);
            let last = base + i64::from(s.last_offset_delta);
            let ts = append_time.unwrap_or(s.max_timestamp);
            seg.index.on_batch(
                base,
                position + s.range.start as u64,
                s.range.len() as u64,
                ts,
            );
            if let Some(bytes) = bytes {
                cache.on_append(cache_id, base, last, bytes);
            }
            base = last + 1;
        }
        seg.next_offset = base;
        Ok(())
    }

    pub(super) async fn maybe_flush_after_append(
        &mut self,
        records: i64,
        now_ms: i64,
    ) -> Result<(), StorageError> {
        self.messages_since_flush += records;
        if self.last_flush_ms == UNSET_MS {
            self.last_flush_ms = now_ms;
        }
        // log.flush.interval.messages / log.flush.interval.ms; Kafka's
        // defaults (Long.MAX) never force an fsync.
        let due = self.config.flush_every_append
            || self.messages_since_flush >= self.config.flush_messages
            || now_ms.saturating_sub(self.last_flush_ms) >= self.config.flush_ms;
        if due {
            self.flush().await?;
            self.last_flush_ms = now_ms;
        }
        Ok(())
    }

    /// Periodic check for `flush.ms` (the shard's timer calls it; Kafka's
    /// log flusher does the same). Returns whether it flushed.
    pub async fn maybe_flush(&mut self, now_ms: i64) -> Result<bool, StorageError> {
        let due = self.messages_since_flush > 0
            && self.last_flush_ms != UNSET_MS
            && now_ms.saturating_sub(self.last_flush_ms) >= self.config.flush_ms;
        if due {
            self.flush().await?;
            self.last_flush_ms = now_ms;
        }
        Ok(due)
    }

    /// Write everything buffered and fdatasync; advances the recovery point.
    pub async fn flush(&mut self) -> Result<(), StorageError> {
        self.check_poison()?;
        self.await_rolled_writes().await?;
        self.check_poison()?;
        let leo = self.log_end_offset();
        // Bytes of the segment the last roll closed count as flushed only
        // once its (background) fdatasync is done: do it here if not yet.
        if let Some(rolled) = &self.rolled {
            if let Some(file) = rolled.file_to_sync() {
                if let Err(e) = file.fdatasync().await {
                    self.poison();
                    return Err(StorageError::Io(e.into()));
                }
                rolled.synced.set(true);
            }
        }
        let seg = self.active()?;
        if let Some(a) = seg.appender.as_mut() {
            if let Err(e) = a.flush(true).await {
                self.poison();
                return Err(e);
            }
        }
        self.recovery_point.set(leo);
        self.messages_since_flush = 0;
        Ok(())
    }

    /// First half of a group-committed flush, under the log lock: write
    /// every buffered byte of the active segment (no fdatasync) and return
    /// what [`PendingSync::sync`] needs to make it durable without the
    /// lock, so appends can go on buffering meanwhile.
    pub async fn write_out(&mut self) -> Result<PendingSync, StorageError> {
        self.check_poison()?;
        self.await_rolled_writes().await?;
        self.check_poison()?;
        let log_end_offset = self.log_end_offset();
        let mut files: Vec<_> = self
            .rolled
            .iter()
            .filter_map(|r| r.file_to_sync())
            .collect();
        let seg = self.active()?;
        if let Some(a) = seg.appender.as_mut() {
            if let Err(e) = a.flush(false).await {
                self.poison();
                return Err(e);
            }
            files.push(a.file_handle());
        }
        Ok(PendingSync {
            files,
            log_end_offset,
        })
    }

    /// Second half, under the lock again: the sync of `pending` succeeded
    /// (advances the recovery point) or failed (poisons the log: an fsync
    /// is never retried).
    pub fn on_synced(&mut self, pending: &PendingSync, ok: bool) {
        if ok {
            self.recovery_point
                .set(self.recovery_point.get().max(pending.log_end_offset));
        } else {
            self.poison();
        }
    }

    pub(super) async fn maybe_roll(
        &mut self,
        append_bytes: u64,
        append_max_ts: i64,
        append_last_offset: i64,
        now_ms: i64,
    ) -> Result<(), StorageError> {
        let config = self.config.clone();
        let seg = self.active()?;
        if seg.created_ms == UNSET_MS {
            seg.created_ms = now_ms;
        }
        let input = RollInput {
            segment_base_offset: seg.base_offset,
            segment_bytes: seg.size(),
            first_batch_timestamp: seg.index.first_batch_timestamp,
            segment_created_ms: seg.created_ms,
            offset_index_full: seg.index.offsets.is_full(),
            time_index_full: seg.index.times.is_full(),
            append_bytes,
            append_max_timestamp: append_max_ts,
            append_last_offset,
            now_ms,
        };
        if let Some(reason) = should_roll(&config, &input) {
            tracing::debug!(tp = %self.tp, ?reason, "rolling segment");
            if let Err(e) = self.roll(now_ms).await {
                // Half-rolled: no usable active segment. Stop writing.
                self.poison();
                return Err(e);
            }
        }
        Ok(())
    }

    /// Give the active segment its appender if it has none: the first
    /// append after the open (see `PartitionLog::open`) or after a roll.
    /// A full disk fails here, so the append is refused
    /// (KAFKA_STORAGE_ERROR), not lost.
    pub(super) async fn activate_lazily(&mut self) -> Result<(), StorageError> {
        let idle = |s: &Segment| s.appender.is_none() && !s.is_closing();
        if !self.segments.values().next_back().is_some_and(idle) {
            return Ok(());
        }
        self.settle_marker_removal().await?;
        let config = &self.config;
        if let Some(seg) = self.segments.values_mut().next_back() {
            seg.activate(config).await?;
        }
        Ok(())
    }

    /// Housekeeping: close the active segment's appender (its write
    /// buffers and O_DIRECT fd; the next append reopens it,
    /// `activate_lazily`) once the log end offset has not moved for
    /// `shardlog.segment.idle.close.ms`. A broker with 10,000 partitions
    /// that each got a record held two fds per partition (the read fd and
    /// the appender's) and ran out of them at the host's 20,000.
    /// The close writes, trims and fdatasyncs the segment as a clean
    /// shutdown's does, and the files the open or the last roll created
    /// are synced as a flush syncs them, so everything appended counts as
    /// flushed. Returns whether it closed.
    pub async fn close_if_idle(&mut self, now_ms: i64) -> Result<bool, StorageError> {
        let leo = self.log_end_offset();
        if leo != self.idle_leo {
            self.idle_leo = leo;
            self.idle_since_ms = now_ms;
            return Ok(false);
        }
        let limit = i64::try_from(self.config.idle_close_ms).unwrap_or(i64::MAX);
        let open = self
            .segments
            .values()
            .next_back()
            .is_some_and(|s| s.appender.is_some());
        if limit == 0 || now_ms - self.idle_since_ms < limit || !open || self.poisoned.get() {
            return Ok(false);
        }
        // The rolled segment's close first; the directory fsyncs come
        // after the active segment's (below), so a shortage of fds that
        // fails them still lets this close free its appender's.
        self.await_rolled_close().await;
        self.close_active().await?;
        // The close fdatasynced the data; the files the open or the last
        // roll created are made durable as a flush would (`await_dir_sync`)
        // before the recovery point covers them. Out of fds, they wait for
        // the next flush (the error poisons nothing then).
        match self.await_dir_sync().await {
            Ok(()) => {
                self.recovery_point.set(self.recovery_point.get().max(leo));
                self.messages_since_flush = 0;
            }
            Err(e) if self.poisoned.get() => return Err(e),
            Err(_) => {}
        }
        Ok(true)
    }

    /// Make the open's removal of the clean-shutdown marker durable before
    /// a segment file changes (activation pre-allocates, truncation cuts):
    /// a marker found after a crash must vouch for every file's size. A
    /// failure poisons the log.
    async fn settle_marker_removal(&mut self) -> Result<(), StorageError> {
        if !self.marker_unsynced {
            return Ok(());
        }
        if let Err(e) = segment::sync_dir(&self.dir).await {
            if segment::out_of_fds(&e) {
                return Err(StorageError::Io(e)); // not synced: try again
            }
            tracing::error!(dir = %self.dir.display(), error = %e, "fsync after removing the clean-shutdown marker failed; log poisoned");
            self.poison();
            return Err(StorageError::Io(e));
        }
        self.marker_unsynced = false;
        Ok(())
    }

    /// Close the active segment and start a new one at the log end offset.
    /// The old segment's last writes, its trim to the logical end and its
    /// fdatasync finish in the background (Kafka's roll also schedules
    /// the old segment's flush); until they are written, reads of its tail
    /// come from the kept buffers ([`segment::PendingTail`]). Waiting for
    /// up to `WRITE_BEHIND_BYTES` of writes here held every append behind
    /// the roll for 1-2.7 ms, the broker's produce p99.9 (2026-11-30).
    pub async fn roll(&mut self, now_ms: i64) -> Result<(), StorageError> {
        // Rolls are seconds apart; the previous close is normally long done.
        self.await_roll_sync().await?;
        self.activate_lazily().await?;
        let leo = self.log_end_offset();
        let seg = self.active()?;
        let Some(mut appender) = seg.appender.take() else {
            return Err(StorageError::Io(std::io::Error::other(
                "active segment has no appender",
            )));
        };
        let written = Rc::new(Cell::new(false));
        let size = appender.logical_end();
        seg.set_closing(
            size,
            segment::PendingTail {
                written: appender.written_end(),
                parts: appender.unwritten_parts(),
                done: written.clone(),
            },
        );
        let old_base = seg.base_offset;
        let file = appender.file_handle();
        // The close starts before anything below can fail: the kept tail
        // holds acknowledged records that must reach the file even if the
        // next segment cannot be created (a full disk).
        // Only the fdatasync's success moves the recovery point; any
        // failure poisons the log (an fsync is never retried).
        let (recovery_point, poisoned) = (self.recovery_point.clone(), self.poisoned.clone());
        let dir = self.dir.clone();
        let synced = Rc::new(Cell::new(false));
        let (done_writing, done_syncing) = (written.clone(), synced.clone());
        let task = glommio::spawn_local(async move {
            let result = match appender.close_unsynced().await {
                Ok((_, f)) => {
                    done_writing.set(true);
                    f.fdatasync().await.map_err(|e| StorageError::Io(e.into()))
                }
                Err(e) => Err(e),
            };
            match result {
                Ok(()) => {
                    done_syncing.set(true);
                    recovery_point.set(recovery_point.get().max(leo));
                }
                Err(e) => {
                    tracing::error!(
                        dir = %dir.display(),
                        error = %e,
                        "closing a rolled segment failed; log poisoned"
                    );
                    if !poisoned.replace(true) {
                        crate::storage::dir_failure::report_failure(&dir);
                    }
                }
            }
        })
        .detach();
        self.rolled = Some(RolledSegment {
            file,
            base_offset: old_base,
            written,
            synced,
            task,
        });
        self.active()?.write_index_files()?;
        let reuse = if self.config.recycle_segments {
            self.recycle.take(leo)
        } else {
            None
        };
        // The new file's name becomes durable in the background, as
        // Kafka's roll leaves the directory flush to the flush it
        // schedules: waiting here held this partition's appends (and every
        // produce request naming it) for the 1-2 ms of a directory fsync.
        // Flushes and group commits wait for it (`await_dir_sync`) before
        // counting the new segment's records flushed.
        let seg = Segment::create_empty_unsynced(&self.dir, leo, &self.config, now_ms, reuse)?;
        let dir = self.dir.clone();
        self.dir_sync =
            Some(glommio::spawn_local(async move { segment::sync_dir(&dir).await }).detach());
        // Its appender opens at the first append into it
        // (`activate_lazily`), so a full disk refuses that append and
        // leaves the log usable instead of half-rolled.
        self.segments.insert(leo, seg);
        Ok(())
    }

    /// Wait for the directory fsync of the last roll; a failure poisons
    /// the log (the new segment's name may not survive a crash).
    async fn await_dir_sync(&mut self) -> Result<(), StorageError> {
        if let Some(files) = self.unsynced.take() {
            if let Err(e) = segment::sync_files_and_dir(files.clone(), &self.dir).await {
                if segment::out_of_fds(&e) {
                    // Nothing was synced or lost: the files could not be
                    // opened (EMFILE). Try again at the next flush.
                    self.unsynced = Some(files);
                    return Err(StorageError::Io(e));
                }
                tracing::error!(dir = %self.dir.display(), error = %e, "fsync of a new log's files failed; log poisoned");
                self.poison();
                return Err(StorageError::Io(e));
            }
        }
        let Some(task) = self.dir_sync.take() else {
            return Ok(());
        };
        let err = match task.await {
            Some(Ok(())) => return Ok(()),
            Some(Err(e)) => e,
            None => std::io::Error::other("directory fsync task was cancelled"),
        };
        if segment::out_of_fds(&err) {
            // The directory could not be opened: sync it at the next flush.
            self.unsynced.get_or_insert_with(Vec::new);
            return Err(StorageError::Io(err));
        }
        tracing::error!(dir = %self.dir.display(), error = %err, "directory fsync failed; log poisoned");
        self.poison();
        Err(StorageError::Io(err))
    }

    /// Drops a rolled segment's kept tail once its writes are done.
    pub(super) fn reap_rolled(&mut self) {
        let Some(base) = self
            .rolled
            .as_ref()
            .filter(|r| r.written.get())
            .map(|r| r.base_offset)
        else {
            return;
        };
        if let Some(seg) = self.segments.get_mut(&base) {
            seg.reap_tail();
        }
    }

    /// Waits until a rolled segment's bytes are all in its file (before a
    /// flush may count them durable), and for the last roll's directory
    /// fsync (`await_dir_sync`).
    async fn await_rolled_writes(&mut self) -> Result<(), StorageError> {
        if self.rolled.as_ref().is_some_and(|r| !r.written.get()) {
            self.await_rolled_close().await;
        }
        self.await_dir_sync().await
    }

    /// Waits for all the last roll left running: the closed segment's
    /// background close with its fdatasync, and the directory fsync.
    pub(super) async fn await_roll_sync(&mut self) -> Result<(), StorageError> {
        self.await_rolled_close().await;
        self.await_dir_sync().await
    }

    /// Wait for a rolled segment's background close (writes, fdatasync).
    async fn await_rolled_close(&mut self) {
        if let Some(rolled) = self.rolled.take() {
            let base = rolled.base_offset;
            rolled.task.await;
            if let Some(seg) = self.segments.get_mut(&base) {
                seg.reap_tail();
            }
        }
    }

    pub(super) async fn close_active(&mut self) -> Result<(), StorageError> {
        let seg = self.active()?;
        if let Some(a) = seg.appender.take() {
            match a.close().await {
                Ok(size) => seg.set_closed(size),
                Err(e) => {
                    self.poison();
                    return Err(e);
                }
            }
        }
        seg.write_index_files()
    }

    /// Clean shutdown: flush, trim the active segment, write its indexes,
    /// the leader epoch checkpoint and the clean-shutdown marker, so the
    /// next open trusts the files without rescanning. The log dir's offset
    /// checkpoints are written by [`super::super::log_dir::LogDir`].
    pub async fn close(mut self) -> Result<(), StorageError> {
        // A rolled segment's close still writes acknowledged records.
        // A failed directory fsync poisons the log, handled just below.
        let _ = self.await_roll_sync().await;
        if self.poisoned.get() {
            if let Some(a) = self.active()?.appender.take() {
                a.abandon().await;
            }
            return Err(StorageError::Poisoned);
        }
        self.close_active().await?;
        self.write_leader_epochs()?;
        self.cache.borrow_mut().remove_partition(self.cache_id);
        write_atomically(&self.dir.join(CLEAN_SHUTDOWN_MARKER), "")?;
        File::open(&self.dir)?.sync_all()?;
        Ok(())
    }

    /// [`Self::close`] for a batch of closes (`close_batch`): the same
    /// writes, none of them fsynced, the leader epoch checkpoint under its
    /// temporary name; [`close_batch::commit`] makes them durable, renames
    /// and marks the log cleanly shut down.
    pub async fn close_deferred(mut self) -> Result<close_batch::DeferredClose, StorageError> {
        // Files created at open are synced by the batch's commit.
        let created = self.unsynced.take().unwrap_or_default();
        let _ = self.await_roll_sync().await;
        if self.poisoned.get() {
            if let Some(a) = self.active()?.appender.take() {
                a.abandon().await;
            }
            return Err(StorageError::Poisoned);
        }
        let several = self.segments.len() > 1;
        let mut closed = close_batch::DeferredClose::new(self.dir.clone());
        let seg = self.active()?;
        if let Some(a) = seg.appender.take() {
            match a.close_for_batch().await {
                Ok(size) => seg.set_closed(size),
                Err(e) => {
                    self.poison();
                    return Err(e);
                }
            }
        }
        // A log that never held a record (most of a new topic's) creates
        // no files at close but its marker: every new inode cost ~0.3 ms on
        // this host's ext4 (`find_inode_bit`), five per log at shutdown.
        for f in created {
            closed.wrote(f);
        }
        closed.wrote(seg.log_path());
        if seg.size() > 0 || several {
            seg.write_index_files()?;
            for suffix in [segment::INDEX_SUFFIX, segment::TIME_INDEX_SUFFIX] {
                closed.wrote(segment::path_of(&seg.dir, seg.base_offset, suffix));
            }
        } else {
            seg.remove_index_files()?;
        }
        let to = self.dir.join(LEADER_EPOCH_CHECKPOINT);
        // No epochs and no file: the next open reads none either way.
        if !self.leader_epochs.is_empty() || to.exists() {
            let tmp = close_batch::tmp_path(&to);
            std::fs::write(&tmp, checkpoint::encode_leader_epochs(&self.leader_epochs))?;
            closed.rename_on_commit(tmp, to);
        }
        self.cache.borrow_mut().remove_partition(self.cache_id);
        Ok(closed)
    }

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
                seg.delete_files_in_background()?;
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
        seg.activate(&self.config).await?;
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
        segment::free_in_background(self.recycle.drain(), true);
        let mut seg =
            Segment::create_empty(&self.dir, offset, &self.config, UNSET_MS, None).await?;
        seg.activate(&self.config).await?;
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
        crate::storage::log_dir::request_checkpoints();
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
            if let Some(path) = seg.retire_to_pool()? {
                self.recycle.add(seg.next_offset, path);
                return Ok(());
            }
        }
        seg.delete_files_in_background()
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

    pub(super) fn load_leader_epochs(&mut self) -> Result<(), StorageError> {
        match std::fs::read_to_string(self.dir.join(LEADER_EPOCH_CHECKPOINT)) {
            Ok(text) => {
                self.leader_epochs = checkpoint::decode_leader_epochs(&text)
                    .map_err(|e| StorageError::CorruptCheckpoint(e.0))?;
                let leo = self.log_end_offset();
                self.leader_epochs.retain(|&(_, start)| start < leo);
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    fn write_leader_epochs(&self) -> Result<(), StorageError> {
        write_atomically(
            &self.dir.join(LEADER_EPOCH_CHECKPOINT),
            &checkpoint::encode_leader_epochs(&self.leader_epochs),
        )
    }

    /// KIP-101: remember the first offset of each new leader epoch.
    pub(super) fn maybe_record_leader_epoch(
        &mut self,
        epoch: i32,
        start_offset: i64,
    ) -> Result<(), StorageError> {
        if epoch < 0 || self.leader_epochs.last().is_some_and(|&(e, _)| e >= epoch) {
            return Ok(());
        }
        self.leader_epochs.push((epoch, start_offset));
        self.write_leader_epochs()
    }
}
