//! `[pure]` Per-log configuration: Kafka's topic-level keys with dots →
//! underscores; each default is Kafka's, citing the key.

use crate::config::topic::{TimestampType, TopicConfig};
use crate::config::ServerConfig;

/// Log configuration for one partition.
#[derive(Debug, Clone, PartialEq)]
pub struct LogConfig {
    /// `segment.bytes` (broker `log.segment.bytes`), default 1 GiB.
    pub segment_bytes: u64,
    /// `segment.ms` (broker `log.roll.ms` / `log.roll.hours` = 168), default 7 days.
    pub segment_ms: i64,
    /// `segment.jitter.ms` (broker `log.roll.jitter.ms` / `hours`), default
    /// 0: each segment rolls up to this much before `segment.ms`
    /// (`policy::roll_jitter_ms`).
    pub segment_jitter_ms: i64,
    /// `segment.index.bytes` (broker `log.index.size.max.bytes`), default 10 MiB.
    pub segment_index_bytes: u64,
    /// `index.interval.bytes` (broker `log.index.interval.bytes`), default 4096.
    pub index_interval_bytes: u64,
    /// `flush.messages` (broker `log.flush.interval.messages`), default
    /// Long.MAX_VALUE: no forced fsync, durability comes from replication.
    pub flush_messages: i64,
    /// `flush.ms` (broker `log.flush.interval.ms`), default Long.MAX_VALUE.
    pub flush_ms: i64,
    /// `retention.ms` (broker `log.retention.ms`/`hours` = 168), default 7 days; -1 = forever.
    pub retention_ms: i64,
    /// `retention.bytes` (broker `log.retention.bytes`), default -1 = unlimited.
    pub retention_bytes: i64,
    /// `max.message.bytes` (broker `message.max.bytes`), default 1048588.
    pub max_message_bytes: usize,
    /// `preallocate` (broker `log.preallocate`), default false in Kafka. We
    /// always pre-allocate in `preallocate_step_bytes` steps for O_DIRECT
    /// (PLATFORM.md: fewer metadata updates); `true` pre-allocates the whole
    /// `segment.bytes` at creation, as Kafka does.
    pub preallocate: bool,
    /// `message.timestamp.type` = LogAppendTime when true (default CreateTime).
    pub message_timestamp_log_append_time: bool,
    /// shardlog: fsync after every append (durable single-node mode).
    pub flush_every_append: bool,
    /// shardlog: pre-allocation step for segment files (64 MiB).
    pub preallocate_step_bytes: u64,
    /// shardlog: size of the DMA write buffer of the active segment (1 MiB;
    /// PLATFORM.md: 512 KiB–1 MiB writes reach the disk's bandwidth).
    pub write_buffer_bytes: usize,
    /// shardlog: bytes of a segment read ahead into the page cache past a
    /// fetch served from the file (16 MiB; 0 = the kernel's own read-ahead
    /// only). See `readahead`.
    pub readahead_bytes: u64,
    /// shardlog: reuse the files of segments retention drops for new
    /// segments (`shardlog.segment.recycle`, default true; see `recycle`).
    pub recycle_segments: bool,
    /// shardlog: an active segment nobody appended to for this long closes
    /// its appender (`shardlog.segment.idle.close.ms`, default 10 s; 0 =
    /// never; see `PartitionLog::close_if_idle`).
    pub idle_close_ms: u64,
    /// `cleanup.policy` holds `compact`: the log cleaner keeps the latest
    /// record per key (`storage::cleaner`), default false (Kafka: delete).
    pub compact: bool,
    /// `cleanup.policy` holds `delete`: time and size retention apply
    /// (Kafka's `UnifiedLog.deleteOldSegments`), default true.
    pub delete: bool,
    /// `min.cleanable.dirty.ratio` (broker `log.cleaner.min.cleanable.ratio`), default 0.5.
    pub min_cleanable_dirty_ratio: f64,
    /// `min.compaction.lag.ms` (broker `log.cleaner.min.compaction.lag.ms`), default 0.
    pub min_compaction_lag_ms: i64,
    /// `max.compaction.lag.ms` (broker `log.cleaner.max.compaction.lag.ms`), default Long.MAX_VALUE.
    pub max_compaction_lag_ms: i64,
    /// `file.delete.delay.ms` (broker `log.segment.delete.delay.ms`),
    /// default 60 s: a deleted segment's `.deleted` files are removed this
    /// long after the delete (`Segment::delete_files_in_background`).
    pub file_delete_delay_ms: u64,
    /// `delete.retention.ms` (broker `log.cleaner.delete.retention.ms`), default 1 day.
    pub delete_retention_ms: i64,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            segment_bytes: 1 << 30,
            segment_ms: 7 * 24 * 3600 * 1000,
            segment_jitter_ms: 0,
            segment_index_bytes: 10 * 1024 * 1024,
            index_interval_bytes: 4096,
            flush_messages: i64::MAX,
            flush_ms: i64::MAX,
            retention_ms: 7 * 24 * 3600 * 1000,
            retention_bytes: -1,
            max_message_bytes: 1_048_588,
            preallocate: false,
            message_timestamp_log_append_time: false,
            flush_every_append: false,
            preallocate_step_bytes: 64 << 20,
            write_buffer_bytes: 1 << 20,
            readahead_bytes: 16 << 20,
            recycle_segments: true,
            idle_close_ms: 10_000,
            compact: false,
            delete: true,
            min_cleanable_dirty_ratio: 0.5,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            delete_retention_ms: 86_400_000,
            file_delete_delay_ms: 60_000,
        }
    }
}

impl LogConfig {
    /// Entries that fit an offset index (8 bytes each) of `segment.index.bytes`.
    pub fn max_offset_index_entries(&self) -> usize {
        (self.segment_index_bytes / 8) as usize
    }
    /// Entries that fit a time index (12 bytes each) of `segment.index.bytes`.
    pub fn max_time_index_entries(&self) -> usize {
        (self.segment_index_bytes / 12) as usize
    }
}

impl LogConfig {
    /// The storage layer's view of a topic's config (topic keys resolved
    /// over the broker's, plus shardlog's own storage keys).
    pub fn for_topic(topic: &TopicConfig, server: &ServerConfig) -> LogConfig {
        let compact = topic.is_compacted();
        // Kafka's `LogConfig.maxSegmentMs`: a compacted log also rolls by
        // `max.compaction.lag.ms`, so its active segment becomes cleanable.
        let segment_ms = if compact && topic.max_compaction_lag_ms > 0 {
            topic.segment_ms.min(topic.max_compaction_lag_ms)
        } else {
            topic.segment_ms
        };
        LogConfig {
            segment_bytes: topic.segment_bytes.max(1) as u64,
            segment_ms,
            segment_jitter_ms: topic.segment_jitter_ms,
            segment_index_bytes: topic.segment_index_bytes.max(8) as u64,
            index_interval_bytes: topic.index_interval_bytes.max(0) as u64,
            flush_messages: topic.flush_messages,
            flush_ms: topic.flush_ms,
            retention_ms: topic.retention_ms,
            retention_bytes: topic.retention_bytes,
            max_message_bytes: topic.max_message_bytes.max(0) as usize,
            preallocate: topic.preallocate,
            message_timestamp_log_append_time: topic.message_timestamp_type
                == TimestampType::LogAppendTime,
            // shardlog.flush.every.append is group-committed by the partition
            // (replication::partition's sync_through), not flushed by the log
            // per append.
            flush_every_append: false,
            write_buffer_bytes: write_buffer_bytes(server.shardlog_write_buffer_bytes),
            readahead_bytes: server.shardlog_fetch_readahead_bytes,
            recycle_segments: server.shardlog_segment_recycle,
            idle_close_ms: server.shardlog_segment_idle_close_ms,
            compact,
            delete: topic.is_delete(),
            min_cleanable_dirty_ratio: topic.min_cleanable_dirty_ratio,
            min_compaction_lag_ms: topic.min_compaction_lag_ms,
            max_compaction_lag_ms: topic.max_compaction_lag_ms,
            delete_retention_ms: topic.delete_retention_ms,
            file_delete_delay_ms: topic.file_delete_delay_ms.max(0) as u64,
            ..LogConfig::default()
        }
    }
}

/// `shardlog.write.buffer.bytes`, kept between one page and 64 MiB.
pub fn write_buffer_bytes(configured: u64) -> usize {
    usize::try_from(configured)
        .unwrap_or(1 << 20)
        .clamp(4096, 64 << 20)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn topic(overrides: &[(&str, &str)], server: &ServerConfig) -> LogConfig {
        let o: BTreeMap<String, String> = overrides
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let t = TopicConfig::resolve(&o, &server.broker_topic_defaults()).unwrap();
        LogConfig::for_topic(&t, server)
    }

    #[test]
    fn cleanup_policy_and_compaction_keys_reach_the_log() {
        let server = ServerConfig::default();
        let plain = topic(&[], &server);
        assert!(!plain.compact && plain.delete);
        let c = topic(
            &[
                ("cleanup.policy", "compact"),
                ("min.cleanable.dirty.ratio", "0.1"),
                ("delete.retention.ms", "5"),
                ("min.compaction.lag.ms", "7"),
            ],
            &server,
        );
        assert!(c.compact && !c.delete);
        assert_eq!(c.min_cleanable_dirty_ratio, 0.1);
        assert_eq!((c.delete_retention_ms, c.min_compaction_lag_ms), (5, 7));
        let both = topic(&[("cleanup.policy", "compact,delete")], &server);
        assert!(both.compact && both.delete);
    }

    #[test]
    fn a_compacted_log_also_rolls_by_max_compaction_lag() {
        // Kafka's LogConfig.maxSegmentMs.
        let server = ServerConfig::default();
        let c = topic(
            &[
                ("cleanup.policy", "compact"),
                ("max.compaction.lag.ms", "1000"),
            ],
            &server,
        );
        assert_eq!(c.segment_ms, 1000);
        let d = topic(&[("max.compaction.lag.ms", "1000")], &server);
        assert_eq!(d.segment_ms, 7 * 24 * 3600 * 1000, "only compacted logs");
    }

    #[test]
    fn broker_cleaner_keys_parse_and_feed_topic_defaults() {
        let props = "listeners=PLAINTEXT://127.0.0.1:0\nlog.cleaner.backoff.ms=50\n\
                     log.cleaner.min.cleanable.ratio=0.25\nlog.cleaner.delete.retention.ms=9\n\
                     log.cleaner.io.max.bytes.per.second=1048576.0\n";
        let loaded = ServerConfig::from_properties(props, &[]).unwrap();
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        let s = loaded.config;
        assert_eq!(s.log_cleaner_backoff_ms, 50);
        assert_eq!(s.log_cleaner_io_max_bytes_per_second, 1_048_576.0);
        let c = topic(&[("cleanup.policy", "compact")], &s);
        assert_eq!(
            (c.min_cleanable_dirty_ratio, c.delete_retention_ms),
            (0.25, 9)
        );
        let d = s.broker_topic_defaults();
        assert!(d.static_keys.contains("log.cleaner.min.cleanable.ratio"));
    }
}
