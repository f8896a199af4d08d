//! `[pure]` The broker keys that supply topic-config defaults, validated
//! as Kafka's `ConfigDef` validates the topic keys they stand for.

use super::{topic, ConfigError, ServerConfig};

impl ServerConfig {
    /// The broker synonyms of topic keys, checked with the topic key's
    /// validator (Kafka's `ConfigDef` for `compression.type`, the levels,
    /// `log.message.timestamp.type`, `log.segment.delete.delay.ms` and the
    /// roll jitter): a value shardlog would read as something else stops
    /// the start.
    pub(super) fn validate_log_keys(&self) -> Result<(), ConfigError> {
        let checks = [
            (
                "compression.type",
                "compression.type",
                self.compression_type.clone(),
            ),
            (
                "compression.gzip.level",
                "compression.gzip.level",
                self.compression_gzip_level.to_string(),
            ),
            (
                "compression.lz4.level",
                "compression.lz4.level",
                self.compression_lz4_level.to_string(),
            ),
            (
                "compression.zstd.level",
                "compression.zstd.level",
                self.compression_zstd_level.to_string(),
            ),
            (
                "log.message.timestamp.type",
                "message.timestamp.type",
                self.log_message_timestamp_type.clone(),
            ),
            (
                "log.segment.delete.delay.ms",
                "file.delete.delay.ms",
                self.log_segment_delete_delay_ms.to_string(),
            ),
            (
                "log.roll.jitter.ms",
                "segment.jitter.ms",
                self.log_roll_jitter_ms.unwrap_or(0).to_string(),
            ),
            (
                "log.roll.jitter.hours",
                "segment.jitter.ms",
                self.log_roll_jitter_hours.to_string(),
            ),
        ];
        for (broker_key, topic_key, value) in checks {
            topic::validate_one(topic_key, &value).map_err(|e| ConfigError::InvalidValue {
                key: broker_key.into(),
                value,
                reason: e.reason,
            })?;
        }
        Ok(())
    }

    /// Whether each broker key of this file differs from Kafka's default
    /// (shown as STATIC_BROKER_CONFIG in a topic's DescribeConfigs).
    pub(super) fn log_keys_set(&self, kafka: &ServerConfig) -> [(&'static str, bool); 7] {
        [
            (
                "compression.type",
                self.compression_type != kafka.compression_type,
            ),
            (
                "compression.gzip.level",
                self.compression_gzip_level != kafka.compression_gzip_level,
            ),
            (
                "compression.lz4.level",
                self.compression_lz4_level != kafka.compression_lz4_level,
            ),
            (
                "compression.zstd.level",
                self.compression_zstd_level != kafka.compression_zstd_level,
            ),
            ("log.roll.jitter.ms", self.log_roll_jitter_ms.is_some()),
            (
                "log.roll.jitter.hours",
                self.log_roll_jitter_hours != kafka.log_roll_jitter_hours,
            ),
            (
                "log.segment.delete.delay.ms",
                self.log_segment_delete_delay_ms != kafka.log_segment_delete_delay_ms,
            ),
        ]
    }

    /// This file's keys into the topic defaults.
    pub(super) fn fill_log_key_defaults(&self, d: &mut topic::BrokerTopicDefaults) {
        d.compression_gzip_level = self.compression_gzip_level;
        d.compression_lz4_level = self.compression_lz4_level;
        d.compression_zstd_level = self.compression_zstd_level;
        d.log_roll_jitter_ms = self
            .log_roll_jitter_ms
            .unwrap_or(i64::from(self.log_roll_jitter_hours) * 3_600_000);
        d.log_segment_delete_delay_ms = self.log_segment_delete_delay_ms;
    }
}
