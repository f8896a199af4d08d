//! `[pure]` The broker keys that supply topic-config defaults, validated
//! as Kafka's `ConfigDef` validates the topic keys they stand for.

use super::{topic, ConfigError, ServerConfig};

impl ServerConfig {
    /// The broker synonyms of topic keys, checked with the topic key's
    /// validator (Kafka's `ConfigDef` for `compression.type`, the levels
    /// and `log.message.timestamp.type`): a value shardlog would read as
    /// something else stops the start.
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
}
