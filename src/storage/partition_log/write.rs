//! Append, flush and group-commit write-out, leader epochs (part of the
//! `[drv]` partition log).

use bytes::Bytes;

use super::{write_atomically, AppendInfo, PartitionLog, PendingSync, ValidatedRecords, UNSET_MS};
use crate::protocol::record_batch::{self, BatchError, CRC_START, HEADER_LEN};
use crate::storage::checkpoint::{self, LEADER_EPOCH_CHECKPOINT};
use crate::storage::StorageError;

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
        // A follower keeps each entry's own offset field: a v2 batch's base
        // offset, a legacy message's offset (see `recovery::ScannedBatch`).
        let base_of = |bytes: &[u8], next: i64| match (assign, bytes.get(..8)) {
            (None, Some(b)) => i64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
            _ => next,
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
            let patched;
            // A follower's copy goes in as it is (a legacy message may be
            // shorter than a v2 header).
            let (head, body): (&[u8], &[u8]) = match assign {
                Some((_, leader_epoch)) => {
                    patched = patched_header(batch, base, leader_epoch, append_time)?;
                    (&patched, &batch[HEADER_LEN..])
                }
                None => (&[], batch),
            };
            let lend = cache.borrow().accepts(batch.len());
            match appender.append_batch(head, body, lend).await {
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
        // `flush.messages` (`UnifiedLog.append`; Kafka's default Long.MAX
        // never forces an fsync); `flush.ms` is the flusher's
        // (`storage::flusher`, [`Self::maybe_flush`]).
        let due = self.config.flush_every_append
            || self.messages_since_flush >= self.config.flush_messages;
        if due {
            self.flush().await?;
            self.last_flush_ms = now_ms;
        }
        Ok(())
    }

    /// The log flusher's check for `flush.ms` (the shard's timer calls it
    /// when `storage::flusher` says, as Kafka's `flushDirtyLogs`). Returns
    /// whether it flushed.
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
            timings: self.storage.timings().clone(),
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

    pub(super) fn write_leader_epochs(&self) -> Result<(), StorageError> {
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
