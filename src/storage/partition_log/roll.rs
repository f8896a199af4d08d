//! Segment roll, lazy activation, idle close and the background syncs a roll
//! leaves running (part of the `[drv]` partition log).

use std::cell::Cell;
use std::rc::Rc;

use super::{PartitionLog, RolledSegment, UNSET_MS};
use crate::storage::policy::{roll_jitter_ms, should_roll, RollInput};
use crate::storage::segment::{self, Segment};
use crate::storage::StorageError;

impl PartitionLog {
    pub(super) async fn maybe_roll(
        &mut self,
        append_bytes: u64,
        append_max_ts: i64,
        append_last_offset: i64,
        now_ms: i64,
    ) -> Result<(), StorageError> {
        let config = self.config.clone();
        let roll_jitter_ms = roll_jitter_ms(
            &config,
            &self.tp.topic,
            self.tp.partition,
            self.active_segment_base_offset(),
        );
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
            roll_jitter_ms,
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
        let buffers = self.storage.buffers();
        if let Some(seg) = self.segments.values_mut().next_back() {
            seg.activate(config, buffers, self.storage.timings())
                .await?;
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
    pub(super) async fn settle_marker_removal(&mut self) -> Result<(), StorageError> {
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
        let failures = self.storage.failures().clone();
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
                        failures.report(&dir);
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
        if reuse.is_some() {
            self.storage.timings().on_recycle();
        }
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
    pub(super) async fn await_rolled_writes(&mut self) -> Result<(), StorageError> {
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
}
