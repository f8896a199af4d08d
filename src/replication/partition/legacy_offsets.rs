//! `[drv]` ListOffsets v0's answer for one partition: Kafka 3.9's
//! `Partition.legacyFetchOffsetsForTimestamp` over
//! `UnifiedLog.legacyFetchOffsetsBefore` (offsets by segment file
//! modification time, not by record timestamps).

use super::Partition;
use crate::protocol::ErrorCode;
use crate::purgatory::view::PartitionRole;
use crate::storage::partition_log::SegmentTime;

/// ListOffsets v0's `timestamp` for "latest" and "earliest".
const LATEST: i64 = -1;
const EARLIEST: i64 = -2;

/// One ListOffsets v0 partition query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LegacyOffsetsQuery {
    pub timestamp: i64,
    pub max_num_offsets: i32,
    /// `replica_id` -1: offsets above the high watermark are hidden.
    pub from_consumer: bool,
    /// `replica_id` other than -2 (the debugging id): the leader only.
    pub only_from_leader: bool,
}

impl Partition {
    /// The offsets, in descending order, or the partition's error
    /// (KAFKA_STORAGE_ERROR offline, NOT_LEADER_OR_FOLLOWER off the leader).
    pub async fn legacy_offsets_before(
        &self,
        query: LegacyOffsetsQuery,
        now_ms: i64,
    ) -> Result<Vec<i64>, ErrorCode> {
        match self.role() {
            PartitionRole::Offline => return Err(ErrorCode::KAFKA_STORAGE_ERROR),
            PartitionRole::Leader => {}
            _ if query.only_from_leader => return Err(ErrorCode::NOT_LEADER_OR_FOLLOWER),
            _ => {}
        }
        let log = self
            .log
            .read()
            .await
            .map_err(|_| ErrorCode::NOT_LEADER_OR_FOLLOWER)?;
        let ends = log.ends();
        let offsets = offsets_before(
            &log.segment_times(),
            (ends.log_start_offset, ends.log_end_offset),
            query,
            now_ms,
        );
        Ok(hide_above_high_watermark(
            offsets,
            query,
            ends.high_watermark,
        ))
    }
}

/// `UnifiedLog.legacyFetchOffsetsBefore`: one (offset, time) pair per
/// segment (its base offset, at least the log start, and its file's
/// mtime), plus (log end, now) when the last segment holds data; the
/// start is the last pair for "latest", the first for "earliest", else
/// the last pair whose time is at or before the timestamp; then up to
/// `max_num_offsets` offsets walking back from there, sorted descending.
pub fn offsets_before(
    segments: &[SegmentTime],
    (log_start, log_end): (i64, i64),
    query: LegacyOffsetsQuery,
    now_ms: i64,
) -> Vec<i64> {
    let mut pairs: Vec<(i64, i64)> = segments
        .iter()
        .map(|s| (s.base_offset.max(log_start), s.last_modified_ms))
        .collect();
    if segments.last().is_some_and(|s| s.size > 0) {
        pairs.push((log_end, now_ms));
    }
    let start: i64 = match query.timestamp {
        LATEST => pairs.len() as i64 - 1,
        EARLIEST => 0,
        ts => pairs
            .iter()
            .rposition(|(_, t)| *t <= ts)
            .map_or(-1, |i| i as i64),
    };
    let count = i64::from(query.max_num_offsets).min(start + 1).max(0);
    let mut out: Vec<i64> = (0..count)
        .filter_map(|j| usize::try_from(start - j).ok())
        .filter_map(|i| pairs.get(i).map(|p| p.0))
        .collect();
    out.sort_unstable_by(|a, b| b.cmp(a));
    out
}

/// `Partition.legacyFetchOffsetsForTimestamp`: for a consumer, offsets
/// above the high watermark give way to the high watermark first.
pub fn hide_above_high_watermark(
    offsets: Vec<i64>,
    query: LegacyOffsetsQuery,
    high_watermark: i64,
) -> Vec<i64> {
    if !query.from_consumer || !offsets.iter().any(|&o| o > high_watermark) {
        return offsets;
    }
    std::iter::once(high_watermark)
        .chain(offsets.into_iter().skip_while(|&o| o > high_watermark))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(base_offset: i64, last_modified_ms: i64, size: u64) -> SegmentTime {
        SegmentTime {
            base_offset,
            last_modified_ms,
            size,
        }
    }

    fn q(timestamp: i64, max: i32) -> LegacyOffsetsQuery {
        LegacyOffsetsQuery {
            timestamp,
            max_num_offsets: max,
            from_consumer: true,
            only_from_leader: true,
        }
    }

    #[test]
    fn offsets_follow_segment_times_as_kafka_does() {
        let segs = [seg(0, 100, 10), seg(5, 200, 10), seg(9, 300, 10)];
        let ends = (0, 12);
        assert_eq!(offsets_before(&segs, ends, q(-1, 1), 1000), vec![12]);
        assert_eq!(
            offsets_before(&segs, ends, q(-1, 10), 1000),
            vec![12, 9, 5, 0]
        );
        assert_eq!(offsets_before(&segs, ends, q(-2, 1), 1000), vec![0]);
        assert_eq!(offsets_before(&segs, ends, q(-2, 5), 1000), vec![0]);
        assert_eq!(offsets_before(&segs, ends, q(250, 5), 1000), vec![5, 0]);
        assert_eq!(
            offsets_before(&segs, ends, q(50, 5), 1000),
            Vec::<i64>::new()
        );
        assert_eq!(
            offsets_before(&segs, ends, q(-1, 0), 1000),
            Vec::<i64>::new()
        );
        // The log start raises the first segment's offset.
        assert_eq!(offsets_before(&segs, (3, 12), q(-2, 1), 1000), vec![3]);
        // An empty active segment adds no (log end, now) pair.
        let empty = [seg(0, 100, 0)];
        assert_eq!(offsets_before(&empty, (0, 0), q(-1, 3), 1000), vec![0]);
    }

    #[test]
    fn a_consumer_sees_the_high_watermark_instead_of_what_lies_above() {
        assert_eq!(
            hide_above_high_watermark(vec![12, 9, 5], q(-1, 3), 10),
            vec![10, 9, 5]
        );
        assert_eq!(
            hide_above_high_watermark(vec![9, 5], q(-1, 3), 10),
            vec![9, 5]
        );
        let replica = LegacyOffsetsQuery {
            from_consumer: false,
            ..q(-1, 3)
        };
        assert_eq!(
            hide_above_high_watermark(vec![12, 9], replica, 10),
            vec![12, 9]
        );
    }
}
