//! `[drv]` The follower half of a [`Partition`]: what the replica fetcher
//! does to a partition this broker follows (Kafka's `Partition.appendRecordsToFollowerOrFutureReplica`,
//! `truncateTo`, `truncateFullyAndStartAt`, and the follower HW rule of
//! `ReplicaFetcherThread.processPartitionData`).
//!
//! Every change runs under the log's write guard. Producer state follows
//! the log: appended batches are replayed into it as at open (so a
//! follower that becomes leader checks sequences exactly as the old
//! leader did), and a truncation rebuilds it from the newest snapshot at
//! or below the new LEO plus the log tail.

use bytes::Bytes;

use super::load::load_producer_state;
use super::{txn, Partition};
use crate::protocol::control_record;
use crate::protocol::record_batch::RecordBatch;
use crate::purgatory::view::PartitionRole;
use crate::replication::producer_state::{LoggedBatch, TxnMarker};
use crate::replication::truncation;
use crate::storage::partition_log::{PartitionLog, ValidatedRecords};
use crate::storage::StorageError;

/// A follower's view of its log for the fetcher (one read of the ends).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowerLogState {
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    pub high_watermark: i64,
    /// The epoch of the last batch in the log (`last_fetched_epoch`,
    /// Fetch v12+), or -1.
    pub latest_epoch: i32,
}

/// What one fetched partition's append did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowerAppend {
    /// Batches appended (0 when the leader's records held no whole batch).
    pub batches: usize,
    pub log_end_offset: i64,
    pub high_watermark: i64,
    pub latest_epoch: i32,
}

impl Partition {
    /// The follower's offsets and latest epoch.
    pub async fn follower_log_state(&self) -> Result<FollowerLogState, StorageError> {
        let log = self.log.read().await.map_err(|_| StorageError::Poisoned)?;
        let ends = log.ends();
        Ok(FollowerLogState {
            log_start_offset: ends.log_start_offset,
            log_end_offset: ends.log_end_offset,
            high_watermark: ends.high_watermark,
            latest_epoch: log.leader_epochs().last().map_or(-1, |&(e, _)| e),
        })
    }

    /// This log's end offset for `epoch` (`LeaderEpochFileCache.endOffsetFor`).
    pub async fn end_offset_for_epoch(&self, epoch: i32) -> Result<(i32, i64), StorageError> {
        let log = self.log.read().await.map_err(|_| StorageError::Poisoned)?;
        Ok(truncation::end_offset_for(
            log.leader_epochs(),
            epoch,
            log.log_end_offset(),
        ))
    }

    /// The leader epoch cache ((epoch, start offset), ascending).
    pub async fn leader_epoch_cache(&self) -> Vec<(i32, i64)> {
        match self.log.read().await {
            Ok(log) => log.leader_epochs().to_vec(),
            Err(_) => Vec::new(),
        }
    }

    /// Append the leader's fetched `records` as they are, then take the
    /// leader's HW (min with our LEO, Kafka's `updateFollowerHighWatermark`)
    /// and log start offset (max with ours). Refused while this broker
    /// leads the partition (a stale fetch response after a leadership
    /// change must not write into a leader's log).
    pub async fn append_as_follower(
        &self,
        records: Option<Bytes>,
        leader_high_watermark: i64,
        leader_log_start_offset: i64,
        now_ms: i64,
    ) -> Result<FollowerAppend, StorageError> {
        let validated = match records {
            Some(bytes) if !bytes.is_empty() => ValidatedRecords::from_leader(bytes)?,
            _ => None,
        };
        let mut log = self.log.write().await.map_err(|_| StorageError::Poisoned)?;
        if self.is_offline() {
            return Err(StorageError::Poisoned);
        }
        if self.role.get() == PartitionRole::Leader {
            return Err(StorageError::Io(std::io::Error::other(
                "partition is led here; follower append refused",
            )));
        }
        let mut batches = 0;
        if let Some(records) = validated {
            let headers: Vec<LoggedBatch> = records
                .summaries()
                .iter()
                .filter_map(|s| {
                    let b =
                        RecordBatch::new_unchecked_crc(&records.bytes()[s.range.clone()]).ok()?;
                    Some(LoggedBatch {
                        base_offset: b.base_offset(),
                        last_offset_delta: b.last_offset_delta(),
                        max_timestamp: b.max_timestamp(),
                        producer_id: b.producer_id(),
                        producer_epoch: b.producer_epoch(),
                        base_sequence: b.base_sequence(),
                        is_control: b.is_control(),
                        is_transactional: b.is_transactional(),
                        marker: control_record::read_marker(b.as_bytes()).map(
                            |(commit, coordinator_epoch)| TxnMarker {
                                commit,
                                coordinator_epoch,
                            },
                        ),
                    })
                })
                .collect();
            let active_before = log.active_segment_base_offset();
            log.append_as_follower(records, now_ms).await?;
            // The next fetch reports this LEO to the leader, which may then
            // acknowledge acks=all produces: the bytes go to the kernel
            // first, as Kafka's follower appends reach the page cache
            // before it fetches again (see `group_commit`).
            log.write_out().await?;
            self.maybe_snapshot_on_roll(&log, active_before);
            let mut aborts = Vec::new();
            {
                let mut producers = self.producers.borrow_mut();
                producers.on_high_watermark(log.high_watermark());
                for h in &headers {
                    if let Some(d) = producers.on_replay(h) {
                        aborts.extend(txn::aborted_entry(&producers, &d));
                    }
                }
            }
            for entry in aborts {
                self.index_abort(&log, entry);
            }
            batches = headers.len();
        }
        if leader_log_start_offset > log.log_start_offset() {
            log.maybe_increment_log_start_offset(leader_log_start_offset)?;
        }
        let leo = log.log_end_offset();
        let hw = leader_high_watermark.min(leo);
        if hw > log.high_watermark() {
            log.set_high_watermark(hw);
        }
        let ends = log.ends();
        Ok(FollowerAppend {
            batches,
            log_end_offset: ends.log_end_offset,
            high_watermark: ends.high_watermark,
            latest_epoch: log.leader_epochs().last().map_or(-1, |&(e, _)| e),
        })
    }

    /// Truncate the follower's log to `offset` (KIP-101 truncation; a
    /// batch boundary ≤ `offset`), with its epoch cache, and rebuild the
    /// producer state for the new log end. Returns the new LEO.
    pub async fn truncate_as_follower(&self, offset: i64) -> Result<i64, StorageError> {
        let mut log = self.log.write().await.map_err(|_| StorageError::Poisoned)?;
        if offset >= log.log_end_offset() {
            return Ok(log.log_end_offset());
        }
        tracing::info!(tp = %self.tp, from = log.log_end_offset(), to = offset, "truncating follower log");
        log.truncate_to(offset).await?;
        self.on_log_truncated(log.log_end_offset());
        self.reload_producer_state(&log)?;
        Ok(log.log_end_offset())
    }

    /// Drop the whole log and start it at `offset` (the leader's log start
    /// offset is past our LEO; Kafka's `truncateFullyAndStartAt`).
    pub async fn truncate_fully_as_follower(&self, offset: i64) -> Result<i64, StorageError> {
        let mut log = self.log.write().await.map_err(|_| StorageError::Poisoned)?;
        tracing::info!(tp = %self.tp, start = offset, "follower log restarts at the leader's log start");
        log.truncate_fully_and_start_at_offset(offset).await?;
        self.on_log_truncated(log.log_end_offset());
        self.reload_producer_state(&log)?;
        Ok(log.log_end_offset())
    }

    fn reload_producer_state(&self, log: &PartitionLog) -> Result<(), StorageError> {
        self.trim_txn_index(log);
        let (producers, load) = load_producer_state(log, &mut self.txn_index.borrow_mut())?;
        tracing::debug!(tp = %self.tp, ?load, "producer state rebuilt after truncation");
        *self.producers.borrow_mut() = producers;
        Ok(())
    }
}
