//! `[drv]` ListOffsets for one partition (Kafka's
//! `Partition.fetchOffsetForTimestamp` and `UnifiedLog.fetchOffsetByTimestamp`;
//! the record search is the log's).

use super::{OffsetAnswer, Partition, EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP};
use crate::protocol::ErrorCode;
use crate::purgatory::delayed_fetch::FetchIsolation;
use crate::purgatory::view::PartitionRole;
use crate::storage::partition_log::RecordPick;

impl Partition {
    /// ListOffsets for one partition, answered at record level like Kafka
    /// (`UnifiedLog.fetchOffsetByTimestamp`; the search is the log's).
    pub async fn list_offset(&self, timestamp: i64, isolation: FetchIsolation) -> OffsetAnswer {
        if self.is_offline() {
            return OffsetAnswer::error(ErrorCode::KAFKA_STORAGE_ERROR);
        }
        let Ok(log) = self.log.read().await else {
            return OffsetAnswer::error(ErrorCode::NOT_LEADER_OR_FOLLOWER);
        };
        let ends = log.ends();
        // Kafka's `Partition.fetchOffsetForTimestamp` with
        // `fetchOnlyFromLeader` (`localLogWithEpochOrThrow`): a client's
        // lookup on a follower (its metadata not yet moved to the new
        // leader) answers NOT_LEADER_OR_FOLLOWER, never the follower's own
        // HW, which lags what the leader acknowledged.
        if isolation != FetchIsolation::LogEnd && self.role() != PartitionRole::Leader {
            return OffsetAnswer::error(self.not_serving());
        }
        // KIP-207 (Kafka's `Partition.fetchOffsetForTimestamp`): a leader
        // whose HW has not reached the start offset of its own leader epoch
        // (a new leader whose HW still lags what the previous leader
        // acknowledged) answers a client OFFSET_NOT_AVAILABLE, retriable,
        // for "latest" and for a timestamp lookup whose answer lies past
        // the HW, so the offsets a client sees never go back across a
        // leader change; "earliest" is answered. No entry for the current
        // epoch yet: nothing was appended in it, so it starts at the LEO
        // (Kafka's `leaderEpochStartOffsetOpt`, set in `makeLeader`).
        let lagging = isolation != FetchIsolation::LogEnd && {
            let epoch = self.leader_epoch.get().0;
            let epoch_start = log
                .leader_epochs()
                .iter()
                .find(|(e, _)| *e == epoch)
                .map_or(ends.log_end_offset, |(_, start)| *start);
            epoch_start > ends.high_watermark
        };
        // Kafka (Partition.fetchOffsetForTimestamp): answers at or past the
        // last fetchable offset (HW, or LEO for replicas) are "not found".
        let fetchable = match isolation {
            FetchIsolation::LogEnd => ends.log_end_offset,
            FetchIsolation::HighWatermark => ends.high_watermark,
            FetchIsolation::TxnCommitted => self.last_stable_offset(ends.high_watermark),
        };
        let found = |offset: i64, ts: i64| OffsetAnswer {
            error_code: ErrorCode::NONE,
            timestamp: ts,
            offset,
            leader_epoch: self.leader_epoch.get(),
        };
        let pick = match timestamp {
            LATEST_TIMESTAMP if lagging => {
                return OffsetAnswer::error(ErrorCode::OFFSET_NOT_AVAILABLE)
            }
            LATEST_TIMESTAMP => return found(fetchable, -1),
            EARLIEST_TIMESTAMP => return found(ends.log_start_offset, -1),
            MAX_TIMESTAMP => RecordPick::MaxTimestamp,
            ts if ts < 0 => return OffsetAnswer::error(ErrorCode::INVALID_REQUEST),
            ts => RecordPick::AtOrAfter(ts),
        };
        if lagging {
            // Kafka's `ReplicaManager.fetchOffset`: the record found in the
            // whole log, refused when it lies at or past the fetchable end.
            return match log.find_record_by_timestamp(pick, ends.log_end_offset) {
                Ok(Some((offset, _))) if offset >= fetchable => {
                    OffsetAnswer::error(ErrorCode::OFFSET_NOT_AVAILABLE)
                }
                Ok(Some((offset, ts))) => found(offset, ts),
                Ok(None) => found(-1, -1),
                Err(code) => OffsetAnswer::error(code),
            };
        }
        match log.find_record_by_timestamp(pick, fetchable) {
            Ok(Some((offset, ts))) => found(offset, ts),
            Ok(None) => found(-1, -1),
            Err(code) => OffsetAnswer::error(code),
        }
    }
}
