//! Append as follower (part of the `[drv]` partition log): the leader's
//! batches written as they are, Kafka's `UnifiedLog.appendAsFollower`.
//!
//! A follower keeps the leader's offsets and `partitionLeaderEpoch` (no
//! offset assignment, no epoch stamping) and checks only what a copy can
//! break: batch length, magic and CRC-32C. Client-origin rules (record
//! count vs lastOffsetDelta, codec) are the leader's: a compacted leader
//! legitimately sends batches the produce path would refuse (emptied
//! batches, offset gaps), so they are not re-applied (Kafka's
//! `analyzeAndValidateRecords` for followers does the same).

use bytes::Bytes;

use super::{AppendInfo, PartitionLog, ValidatedRecords};
use crate::protocol::legacy;
use crate::protocol::record_batch::{peek_total_len, BatchError, BatchSummary, RecordBatch};
use crate::storage::recovery;
use crate::storage::StorageError;

/// Why the leader's records were not appended.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FollowerAppendError {
    /// The first batch starts below our LEO (Kafka's
    /// `UnexpectedAppendOffsetException`): an out-of-order or repeated fetch
    /// response. Nothing was appended.
    #[error("leader batch at offset {base_offset} below the log end offset {log_end_offset}")]
    OutOfOrder {
        base_offset: i64,
        log_end_offset: i64,
    },
    /// Batches inside one response overlap or go backwards.
    #[error("leader batches not in offset order at offset {0}")]
    NotMonotonic(i64),
}

impl ValidatedRecords {
    /// The leader's fetched `records`, checked as a follower checks them:
    /// each whole batch's length, magic and CRC. A trailing partial batch
    /// (the leader cut the response at `max_bytes`) is dropped, as Kafka's
    /// `MemoryRecords.batches()` ignores it. `Ok(None)`: no whole batch.
    pub fn from_leader(bytes: Bytes) -> Result<Option<Self>, BatchError> {
        let mut summaries = Vec::new();
        let mut pos = 0usize;
        while pos < bytes.len() {
            let rest = &bytes[pos..];
            if rest.get(legacy::MAGIC_OFFSET).is_some_and(|&m| m < 2) {
                // A legacy (magic 0/1) message of a log Kafka wrote with an
                // old `log.message.format.version`, copied as it is.
                match legacy_summary(rest, pos)? {
                    Some(s) => {
                        pos = s.range.end;
                        summaries.push(s);
                        continue;
                    }
                    None => break, // partial tail
                }
            }
            let total = match peek_total_len(rest)? {
                Some(t) if t <= rest.len() => t,
                _ => break, // partial tail
            };
            let batch = RecordBatch::new(&rest[..total])?;
            summaries.push(BatchSummary {
                range: pos..pos + total,
                record_count: batch.record_count(),
                last_offset_delta: batch.last_offset_delta().max(0),
                max_timestamp: batch.max_timestamp(),
            });
            pos += total;
        }
        if summaries.is_empty() {
            return Ok(None);
        }
        let bytes = bytes.slice(..pos);
        Ok(Some(ValidatedRecords { bytes, summaries }))
    }

    /// (base offset, partition leader epoch, last offset) of each batch; a
    /// legacy message has no leader epoch (-1) and stands for its offset
    /// field (`recovery::ScannedBatch`).
    pub fn batch_offsets(&self) -> Vec<(i64, i32, i64)> {
        self.summaries
            .iter()
            .filter_map(|s| {
                let bytes = &self.bytes[s.range.clone()];
                if bytes.get(legacy::MAGIC_OFFSET).is_some_and(|&m| m < 2) {
                    let h = recovery::entry_header(bytes, 0)?;
                    return Some((h.base_offset, -1, h.last_offset));
                }
                let b = RecordBatch::new_unchecked_crc(bytes).ok()?;
                Some((b.base_offset(), b.partition_leader_epoch(), b.last_offset()))
            })
            .collect()
    }
}

/// The legacy message at the start of `rest` (found at `pos` of the
/// leader's records), checked as Kafka's follower checks one
/// (`LegacyRecord.ensureValid`: size and CRC32; sizes of its key and
/// value too). `Ok(None)`: a partial tail. It counts as one entry
/// (`last_offset_delta` 0): a wrapper's inner count needs decompression.
fn legacy_summary(rest: &[u8], pos: usize) -> Result<Option<BatchSummary>, BatchError> {
    if rest.len() < legacy::LOG_OVERHEAD + legacy::RECORD_OVERHEAD_V0 {
        return Ok(None);
    }
    let h = recovery::entry_header(rest, 0).ok_or(BatchError::Corrupt(
        "legacy message shorter than its format's overhead",
    ))?;
    let Ok(total) = usize::try_from(h.len) else {
        return Ok(None);
    };
    if total > rest.len() {
        return Ok(None);
    }
    if !recovery::legacy_entry_ok(&rest[..total], true) {
        return Err(BatchError::Corrupt(
            "legacy message CRC32 or sizes mismatch",
        ));
    }
    Ok(Some(BatchSummary {
        range: pos..pos + total,
        record_count: 1,
        last_offset_delta: 0,
        max_timestamp: h.max_timestamp,
    }))
}

impl PartitionLog {
    /// Append the leader's batches as they are (offsets and epochs kept).
    /// Refuses (nothing appended) a first batch below the LEO or batches
    /// out of order; a base offset above the LEO is accepted (a compacted
    /// leader's gap, as Kafka's follower accepts it). Records each new
    /// leader epoch's start offset in the epoch cache (KIP-101: the
    /// follower's `leader-epoch-checkpoint` mirrors the leader's).
    pub async fn append_as_follower(
        &mut self,
        records: ValidatedRecords,
        now_ms: i64,
    ) -> Result<AppendInfo, StorageError> {
        self.check_poison()?;
        self.reap_rolled();
        let offsets = records.batch_offsets();
        let leo = self.log_end_offset();
        let mut next = leo;
        for &(base, _, last) in &offsets {
            if base < next || last < base {
                let e = if base < leo && next == leo {
                    FollowerAppendError::OutOfOrder {
                        base_offset: base,
                        log_end_offset: leo,
                    }
                } else {
                    FollowerAppendError::NotMonotonic(base)
                };
                return Err(StorageError::Follower(e));
            }
            next = last + 1;
        }
        let (Some(&(first_offset, _, _)), Some(&(_, _, last_offset))) =
            (offsets.first(), offsets.last())
        else {
            return Err(BatchError::Corrupt("no batch").into());
        };
        // No max.message.bytes check: the leader applied it (and a topic
        // config change must not stop replication of batches it accepted).
        let max_ts = records
            .summaries()
            .iter()
            .map(|s| s.max_timestamp)
            .max()
            .unwrap_or(-1);
        self.maybe_roll(records.bytes().len() as u64, max_ts, last_offset, now_ms)
            .await?;
        self.write_to_active(&records, None, None).await?;
        self.appended_bytes += records.bytes().len() as i64;
        self.publish_ends();
        for &(base, epoch, _) in &offsets {
            self.maybe_record_leader_epoch(epoch, base)?;
        }
        let appended: i64 = records
            .summaries()
            .iter()
            .map(|s| i64::from(s.last_offset_delta) + 1)
            .sum();
        self.maybe_flush_after_append(appended, now_ms).await?;
        Ok(AppendInfo {
            first_offset,
            last_offset,
            log_append_time_ms: -1,
            log_start_offset: self.log_start_offset,
            bytes: records.bytes().len(),
        })
    }

    /// The follower's log start offset follows the leader's (DeleteRecords
    /// and retention propagate through the fetch's `log_start_offset`,
    /// Kafka's `ReplicaFetcherThread.processPartitionData`:
    /// `maybeIncrementLogStartOffset`). Unlike DeleteRecords on the leader
    /// it may pass the local HW (not the LEO): the leader's HW is ahead.
    pub fn maybe_increment_log_start_offset(&mut self, offset: i64) -> Result<i64, StorageError> {
        let target = offset.min(self.log_end_offset());
        if target > self.log_start_offset {
            if self.high_watermark < target {
                self.high_watermark = target;
            }
            self.delete_records_before(target)?;
        }
        Ok(self.log_start_offset)
    }

    /// The latest epoch in the epoch cache, if any.
    pub fn latest_epoch(&self) -> Option<i32> {
        self.leader_epochs.last().map(|&(e, _)| e)
    }

    /// Drop every segment and restart the log empty at `offset` (Kafka's
    /// `truncateFullyAndStartAt`: the leader's log start lies past our
    /// LEO). Producer snapshots go too: none describes the new log.
    pub async fn truncate_fully_and_start_at_offset(
        &mut self,
        offset: i64,
    ) -> Result<(), StorageError> {
        self.check_poison()?;
        let result = async {
            self.await_roll_sync().await?;
            self.close_active().await?;
            for o in crate::storage::producer_snapshot::snapshot_offsets(&self.dir)? {
                let name = crate::storage::producer_snapshot::snapshot_file_name(o);
                let _ = std::fs::remove_file(self.dir.join(name));
            }
            self.truncate_fully_and_start_at(offset.max(0)).await
        }
        .await;
        if result.is_err() {
            self.poison();
        }
        result
    }
}
