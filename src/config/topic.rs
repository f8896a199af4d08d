//! `[pure]` Topic-level configs (Kafka names: cleanup.policy, retention.ms, ...)
//! with broker defaults.
//!
//! Follows Kafka 3.9's `LogConfig`: the same keys, types, validators and
//! broker synonyms. A topic's effective config is its overrides (the
//! `/config/topics/<t>` znode) over [`BrokerTopicDefaults`], which the
//! `server.properties` parser fills from the `log.*` keys. [`TopicConfig::describe`]
//! produces what DescribeConfigs needs (value, source, synonyms, type).
//!
//! Left out: `message.format.version` (ignored since Kafka 3.0, removed in
//! 4.0) and the tiered-storage copy/delete switches; `remote.storage.enable`
//! is accepted only as `false` because we have no remote log storage.
//!
//! The key table and its validators are [`keys`]; the value types and
//! their DescribeConfigs codes are [`value`] (re-exported here).

mod keys;
mod value;

use std::collections::{BTreeMap, BTreeSet};

use keys::{key_def, parse_error, parse_value, KeyDef, KEYS};
pub use keys::{topic_config_names, topic_config_type};
pub use value::{ConfigError, ConfigSource, ConfigType, ConfigValue};

/// Broker-level defaults for topic configs. Field = Kafka broker key with
/// dots → underscores; values already resolved by the broker config parser
/// (e.g. `log.retention.ms` ← minutes ← hours). Defaults are Kafka 3.9's.
#[derive(Debug, Clone, PartialEq)]
pub struct BrokerTopicDefaults {
    /// `log.cleanup.policy` = delete
    pub log_cleanup_policy: Vec<String>,
    /// `compression.type` = producer
    pub compression_type: String,
    /// `compression.gzip.level` = -1 (KIP-390)
    pub compression_gzip_level: i32,
    /// `compression.lz4.level` = 9
    pub compression_lz4_level: i32,
    /// `compression.zstd.level` = 3
    pub compression_zstd_level: i32,
    /// `log.cleaner.delete.retention.ms` = 1 day
    pub log_cleaner_delete_retention_ms: i64,
    /// `log.segment.delete.delay.ms` = 60 s
    pub log_segment_delete_delay_ms: i64,
    /// `log.flush.interval.messages` = Long.MAX_VALUE
    pub log_flush_interval_messages: i64,
    /// `log.flush.interval.ms` (unset → `log.flush.scheduler.interval.ms` = Long.MAX_VALUE)
    pub log_flush_interval_ms: i64,
    /// `log.index.interval.bytes` = 4096
    pub log_index_interval_bytes: i32,
    /// `log.local.retention.bytes` = -2 (follow retention.bytes)
    pub log_local_retention_bytes: i64,
    /// `log.local.retention.ms` = -2 (follow retention.ms)
    pub log_local_retention_ms: i64,
    /// `log.cleaner.max.compaction.lag.ms` = Long.MAX_VALUE
    pub log_cleaner_max_compaction_lag_ms: i64,
    /// `message.max.bytes` = 1048588
    pub message_max_bytes: i32,
    /// `log.message.downconversion.enable` = true
    pub log_message_downconversion_enable: bool,
    /// `log.message.timestamp.after.max.ms` = Long.MAX_VALUE (KIP-937)
    pub log_message_timestamp_after_max_ms: i64,
    /// `log.message.timestamp.before.max.ms` = Long.MAX_VALUE (KIP-937)
    pub log_message_timestamp_before_max_ms: i64,
    /// `log.message.timestamp.difference.max.ms` = Long.MAX_VALUE (deprecated by KIP-937)
    pub log_message_timestamp_difference_max_ms: i64,
    /// `log.message.timestamp.type` = CreateTime
    pub log_message_timestamp_type: String,
    /// `log.cleaner.min.cleanable.ratio` = 0.5
    pub log_cleaner_min_cleanable_ratio: f64,
    /// `log.cleaner.min.compaction.lag.ms` = 0
    pub log_cleaner_min_compaction_lag_ms: i64,
    /// `min.insync.replicas` = 1
    pub min_insync_replicas: i32,
    /// `log.preallocate` = false
    pub log_preallocate: bool,
    /// `log.retention.bytes` = -1 (unlimited)
    pub log_retention_bytes: i64,
    /// `log.retention.ms` (← minutes ← `log.retention.hours` = 168) = 7 days
    pub log_retention_ms: i64,
    /// `log.segment.bytes` = 1 GiB
    pub log_segment_bytes: i32,
    /// `log.index.size.max.bytes` = 10 MiB
    pub log_index_size_max_bytes: i32,
    /// `log.roll.jitter.ms` (← `log.roll.jitter.hours` = 0)
    pub log_roll_jitter_ms: i64,
    /// `log.roll.ms` (← `log.roll.hours` = 168) = 7 days
    pub log_roll_ms: i64,
    /// `unclean.leader.election.enable` = false
    pub unclean_leader_election_enable: bool,
    /// `remote.log.storage.system.enable` = false (KIP-405); we have none.
    pub remote_log_storage_system_enable: bool,
    /// `num.partitions` = 1: CreateTopics with num_partitions -1 (KIP-464).
    pub num_partitions: i32,
    /// `default.replication.factor` = 1: CreateTopics with replication_factor -1.
    pub default_replication_factor: i16,
    /// Broker keys set explicitly in server.properties: their defaults show
    /// as STATIC_BROKER_CONFIG instead of DEFAULT_CONFIG in DescribeConfigs.
    pub static_keys: BTreeSet<String>,
    /// Broker keys set dynamically (`/config/brokers/<id>` or
    /// `<default>`, [`crate::config::dynamic`]): their source wins over
    /// [`Self::static_keys`].
    pub dynamic_keys: BTreeMap<String, ConfigSource>,
}

impl Default for BrokerTopicDefaults {
    fn default() -> Self {
        Self {
            log_cleanup_policy: vec!["delete".to_string()],
            compression_type: "producer".to_string(),
            compression_gzip_level: -1,
            compression_lz4_level: 9,
            compression_zstd_level: 3,
            log_cleaner_delete_retention_ms: 86_400_000,
            log_segment_delete_delay_ms: 60_000,
            log_flush_interval_messages: i64::MAX,
            log_flush_interval_ms: i64::MAX,
            log_index_interval_bytes: 4096,
            log_local_retention_bytes: -2,
            log_local_retention_ms: -2,
            log_cleaner_max_compaction_lag_ms: i64::MAX,
            message_max_bytes: 1_048_588,
            log_message_downconversion_enable: true,
            log_message_timestamp_after_max_ms: i64::MAX,
            log_message_timestamp_before_max_ms: i64::MAX,
            log_message_timestamp_difference_max_ms: i64::MAX,
            log_message_timestamp_type: "CreateTime".to_string(),
            log_cleaner_min_cleanable_ratio: 0.5,
            log_cleaner_min_compaction_lag_ms: 0,
            min_insync_replicas: 1,
            log_preallocate: false,
            log_retention_bytes: -1,
            log_retention_ms: 7 * 24 * 3_600_000,
            log_segment_bytes: 1 << 30,
            log_index_size_max_bytes: 10 * 1024 * 1024,
            log_roll_jitter_ms: 0,
            log_roll_ms: 7 * 24 * 3_600_000,
            unclean_leader_election_enable: false,
            remote_log_storage_system_enable: false,
            num_partitions: 1,
            default_replication_factor: 1,
            static_keys: BTreeSet::new(),
            dynamic_keys: BTreeMap::new(),
        }
    }
}

/// `compression.type` at topic level (`BrokerCompressionType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrokerCompressionType {
    Uncompressed,
    Zstd,
    Lz4,
    Snappy,
    Gzip,
    /// Keep whatever the producer used.
    Producer,
}

impl BrokerCompressionType {
    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "uncompressed" => Self::Uncompressed,
            "zstd" => Self::Zstd,
            "lz4" => Self::Lz4,
            "snappy" => Self::Snappy,
            "gzip" => Self::Gzip,
            "producer" => Self::Producer,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            Self::Uncompressed => "uncompressed",
            Self::Zstd => "zstd",
            Self::Lz4 => "lz4",
            Self::Snappy => "snappy",
            Self::Gzip => "gzip",
            Self::Producer => "producer",
        }
    }
}

/// `message.timestamp.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampType {
    CreateTime,
    LogAppendTime,
}

impl TimestampType {
    pub fn name(self) -> &'static str {
        match self {
            Self::CreateTime => "CreateTime",
            Self::LogAppendTime => "LogAppendTime",
        }
    }
}

/// A topic's effective configuration. Field = topic key, dots → underscores.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicConfig {
    pub cleanup_policy: Vec<String>,
    pub compression_gzip_level: i32,
    pub compression_lz4_level: i32,
    pub compression_type: BrokerCompressionType,
    pub compression_zstd_level: i32,
    pub delete_retention_ms: i64,
    pub file_delete_delay_ms: i64,
    pub flush_messages: i64,
    pub flush_ms: i64,
    pub follower_replication_throttled_replicas: Vec<String>,
    pub index_interval_bytes: i32,
    pub leader_replication_throttled_replicas: Vec<String>,
    pub local_retention_bytes: i64,
    pub local_retention_ms: i64,
    pub max_compaction_lag_ms: i64,
    pub max_message_bytes: i32,
    pub message_downconversion_enable: bool,
    pub message_timestamp_after_max_ms: i64,
    pub message_timestamp_before_max_ms: i64,
    pub message_timestamp_difference_max_ms: i64,
    pub message_timestamp_type: TimestampType,
    pub min_cleanable_dirty_ratio: f64,
    pub min_compaction_lag_ms: i64,
    pub min_insync_replicas: i32,
    pub preallocate: bool,
    pub remote_storage_enable: bool,
    pub retention_bytes: i64,
    pub retention_ms: i64,
    pub segment_bytes: i32,
    pub segment_index_bytes: i32,
    pub segment_jitter_ms: i64,
    pub segment_ms: i64,
    pub unclean_leader_election_enable: bool,
}

/// One DescribeConfigs synonym.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigSynonym {
    pub name: String,
    pub value: Option<String>,
    pub source: ConfigSource,
}

/// One DescribeConfigs result entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigEntry {
    pub name: String,
    /// None only for sensitive configs (no topic config is).
    pub value: Option<String>,
    pub source: ConfigSource,
    /// Topic configs are all alterable.
    pub read_only: bool,
    /// v0's `is_default`: true when no override and no static broker value.
    pub is_default: bool,
    pub is_sensitive: bool,
    pub config_type: ConfigType,
    /// Most specific first: the topic override, then the broker key.
    pub synonyms: Vec<ConfigSynonym>,
}

impl TopicConfig {
    /// The config of a topic with no overrides.
    pub fn from_broker_defaults(d: &BrokerTopicDefaults) -> Self {
        Self {
            cleanup_policy: d.log_cleanup_policy.clone(),
            compression_gzip_level: d.compression_gzip_level,
            compression_lz4_level: d.compression_lz4_level,
            compression_type: BrokerCompressionType::parse(&d.compression_type)
                .unwrap_or(BrokerCompressionType::Producer),
            compression_zstd_level: d.compression_zstd_level,
            delete_retention_ms: d.log_cleaner_delete_retention_ms,
            file_delete_delay_ms: d.log_segment_delete_delay_ms,
            flush_messages: d.log_flush_interval_messages,
            flush_ms: d.log_flush_interval_ms,
            follower_replication_throttled_replicas: Vec::new(),
            index_interval_bytes: d.log_index_interval_bytes,
            leader_replication_throttled_replicas: Vec::new(),
            local_retention_bytes: d.log_local_retention_bytes,
            local_retention_ms: d.log_local_retention_ms,
            max_compaction_lag_ms: d.log_cleaner_max_compaction_lag_ms,
            max_message_bytes: d.message_max_bytes,
            message_downconversion_enable: d.log_message_downconversion_enable,
            message_timestamp_after_max_ms: d.log_message_timestamp_after_max_ms,
            message_timestamp_before_max_ms: d.log_message_timestamp_before_max_ms,
            message_timestamp_difference_max_ms: d.log_message_timestamp_difference_max_ms,
            message_timestamp_type: if d.log_message_timestamp_type == "LogAppendTime" {
                TimestampType::LogAppendTime
            } else {
                TimestampType::CreateTime
            },
            min_cleanable_dirty_ratio: d.log_cleaner_min_cleanable_ratio,
            min_compaction_lag_ms: d.log_cleaner_min_compaction_lag_ms,
            min_insync_replicas: d.min_insync_replicas,
            preallocate: d.log_preallocate,
            remote_storage_enable: false,
            retention_bytes: d.log_retention_bytes,
            retention_ms: d.log_retention_ms,
            segment_bytes: d.log_segment_bytes,
            segment_index_bytes: d.log_index_size_max_bytes,
            segment_jitter_ms: d.log_roll_jitter_ms,
            segment_ms: d.log_roll_ms,
            unclean_leader_election_enable: d.unclean_leader_election_enable,
        }
    }

    /// Validates `overrides` (unknown keys, types, ranges, cross-key rules)
    /// and applies them over the broker defaults (Kafka's
    /// `LogConfig.validate` + `LogConfig.fromProps`).
    pub fn resolve(
        overrides: &BTreeMap<String, String>,
        broker_defaults: &BrokerTopicDefaults,
    ) -> Result<TopicConfig, ConfigError> {
        let mut config = Self::from_broker_defaults(broker_defaults);
        for (name, raw) in overrides {
            let def =
                key_def(name).ok_or_else(|| parse_error(name, raw, "Unknown topic config name"))?;
            config.apply(def.name, parse_value(def, raw)?);
        }
        config.validate_values(overrides, broker_defaults)?;
        Ok(config)
    }

    /// Kafka's `LogConfig.validateValues`: rules spanning several keys.
    fn validate_values(
        &self,
        overrides: &BTreeMap<String, String>,
        d: &BrokerTopicDefaults,
    ) -> Result<(), ConfigError> {
        let raw = |k: &str| overrides.get(k).cloned().unwrap_or_default();
        if self.min_compaction_lag_ms > self.max_compaction_lag_ms {
            return Err(parse_error(
                "min.compaction.lag.ms",
                &raw("min.compaction.lag.ms"),
                format!(
                    "conflict: min.compaction.lag.ms {} must not exceed max.compaction.lag.ms {}",
                    self.min_compaction_lag_ms, self.max_compaction_lag_ms
                ),
            ));
        }
        if self.remote_storage_enable && !d.remote_log_storage_system_enable {
            return Err(parse_error(
                "remote.storage.enable",
                &raw("remote.storage.enable"),
                "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage.",
            ));
        }
        Ok(())
    }

    fn apply(&mut self, name: &str, value: ConfigValue) {
        use ConfigValue as V;
        match (name, value) {
            ("cleanup.policy", V::List(v)) => self.cleanup_policy = v,
            ("compression.gzip.level", V::Int(v)) => self.compression_gzip_level = v,
            ("compression.lz4.level", V::Int(v)) => self.compression_lz4_level = v,
            ("compression.type", V::String(v)) => {
                self.compression_type =
                    BrokerCompressionType::parse(&v).unwrap_or(self.compression_type)
            }
            ("compression.zstd.level", V::Int(v)) => self.compression_zstd_level = v,
            ("delete.retention.ms", V::Long(v)) => self.delete_retention_ms = v,
            ("file.delete.delay.ms", V::Long(v)) => self.file_delete_delay_ms = v,
            ("flush.messages", V::Long(v)) => self.flush_messages = v,
            ("flush.ms", V::Long(v)) => self.flush_ms = v,
            ("follower.replication.throttled.replicas", V::List(v)) => {
                self.follower_replication_throttled_replicas = v
            }
            ("index.interval.bytes", V::Int(v)) => self.index_interval_bytes = v,
            ("leader.replication.throttled.replicas", V::List(v)) => {
                self.leader_replication_throttled_replicas = v
            }
            ("local.retention.bytes", V::Long(v)) => self.local_retention_bytes = v,
            ("local.retention.ms", V::Long(v)) => self.local_retention_ms = v,
            ("max.compaction.lag.ms", V::Long(v)) => self.max_compaction_lag_ms = v,
            ("max.message.bytes", V::Int(v)) => self.max_message_bytes = v,
            ("message.downconversion.enable", V::Boolean(v)) => {
                self.message_downconversion_enable = v
            }
            ("message.timestamp.after.max.ms", V::Long(v)) => {
                self.message_timestamp_after_max_ms = v
            }
            ("message.timestamp.before.max.ms", V::Long(v)) => {
                self.message_timestamp_before_max_ms = v
            }
            ("message.timestamp.difference.max.ms", V::Long(v)) => {
                self.message_timestamp_difference_max_ms = v
            }
            ("message.timestamp.type", V::String(v)) => {
                self.message_timestamp_type = if v == "LogAppendTime" {
                    TimestampType::LogAppendTime
                } else {
                    TimestampType::CreateTime
                }
            }
            ("min.cleanable.dirty.ratio", V::Double(v)) => self.min_cleanable_dirty_ratio = v,
            ("min.compaction.lag.ms", V::Long(v)) => self.min_compaction_lag_ms = v,
            ("min.insync.replicas", V::Int(v)) => self.min_insync_replicas = v,
            ("preallocate", V::Boolean(v)) => self.preallocate = v,
            ("remote.storage.enable", V::Boolean(v)) => self.remote_storage_enable = v,
            ("retention.bytes", V::Long(v)) => self.retention_bytes = v,
            ("retention.ms", V::Long(v)) => self.retention_ms = v,
            ("segment.bytes", V::Int(v)) => self.segment_bytes = v,
            ("segment.index.bytes", V::Int(v)) => self.segment_index_bytes = v,
            ("segment.jitter.ms", V::Long(v)) => self.segment_jitter_ms = v,
            ("segment.ms", V::Long(v)) => self.segment_ms = v,
            ("unclean.leader.election.enable", V::Boolean(v)) => {
                self.unclean_leader_election_enable = v
            }
            // parse_value produced the KeyDef's type, so no other pairs occur.
            _ => debug_assert!(false, "type mismatch applying {name}"),
        }
    }

    /// The effective value of `name` (None for unknown keys).
    pub fn value_of(&self, name: &str) -> Option<ConfigValue> {
        use ConfigValue as V;
        Some(match name {
            "cleanup.policy" => V::List(self.cleanup_policy.clone()),
            "compression.gzip.level" => V::Int(self.compression_gzip_level),
            "compression.lz4.level" => V::Int(self.compression_lz4_level),
            "compression.type" => V::String(self.compression_type.name().to_string()),
            "compression.zstd.level" => V::Int(self.compression_zstd_level),
            "delete.retention.ms" => V::Long(self.delete_retention_ms),
            "file.delete.delay.ms" => V::Long(self.file_delete_delay_ms),
            "flush.messages" => V::Long(self.flush_messages),
            "flush.ms" => V::Long(self.flush_ms),
            "follower.replication.throttled.replicas" => {
                V::List(self.follower_replication_throttled_replicas.clone())
            }
            "index.interval.bytes" => V::Int(self.index_interval_bytes),
            "leader.replication.throttled.replicas" => {
                V::List(self.leader_replication_throttled_replicas.clone())
            }
            "local.retention.bytes" => V::Long(self.local_retention_bytes),
            "local.retention.ms" => V::Long(self.local_retention_ms),
            "max.compaction.lag.ms" => V::Long(self.max_compaction_lag_ms),
            "max.message.bytes" => V::Int(self.max_message_bytes),
            "message.downconversion.enable" => V::Boolean(self.message_downconversion_enable),
            "message.timestamp.after.max.ms" => V::Long(self.message_timestamp_after_max_ms),
            "message.timestamp.before.max.ms" => V::Long(self.message_timestamp_before_max_ms),
            "message.timestamp.difference.max.ms" => {
                V::Long(self.message_timestamp_difference_max_ms)
            }
            "message.timestamp.type" => V::String(self.message_timestamp_type.name().to_string()),
            "min.cleanable.dirty.ratio" => V::Double(self.min_cleanable_dirty_ratio),
            "min.compaction.lag.ms" => V::Long(self.min_compaction_lag_ms),
            "min.insync.replicas" => V::Int(self.min_insync_replicas),
            "preallocate" => V::Boolean(self.preallocate),
            "remote.storage.enable" => V::Boolean(self.remote_storage_enable),
            "retention.bytes" => V::Long(self.retention_bytes),
            "retention.ms" => V::Long(self.retention_ms),
            "segment.bytes" => V::Int(self.segment_bytes),
            "segment.index.bytes" => V::Int(self.segment_index_bytes),
            "segment.jitter.ms" => V::Long(self.segment_jitter_ms),
            "segment.ms" => V::Long(self.segment_ms),
            "unclean.leader.election.enable" => V::Boolean(self.unclean_leader_election_enable),
            _ => return None,
        })
    }

    pub fn is_compacted(&self) -> bool {
        self.cleanup_policy.iter().any(|p| p == "compact")
    }

    pub fn is_delete(&self) -> bool {
        self.cleanup_policy.iter().any(|p| p == "delete")
    }

    /// DescribeConfigs entries for this (resolved) config. `overrides` are
    /// the topic's stored overrides (they decide the source); `keys` limits
    /// the answer to those names (unknown names are skipped, as in Kafka);
    /// None = every key.
    pub fn describe(
        &self,
        overrides: &BTreeMap<String, String>,
        broker_defaults: &BrokerTopicDefaults,
        keys: Option<&[String]>,
    ) -> Vec<ConfigEntry> {
        let defaults = Self::from_broker_defaults(broker_defaults);
        KEYS.iter()
            .filter(|def| keys.is_none_or(|ks| ks.iter().any(|k| k == def.name)))
            .map(|def| self.describe_key(def, overrides, broker_defaults, &defaults))
            .collect()
    }

    fn describe_key(
        &self,
        def: &KeyDef,
        overrides: &BTreeMap<String, String>,
        broker_defaults: &BrokerTopicDefaults,
        defaults: &TopicConfig,
    ) -> ConfigEntry {
        let value = self.value_of(def.name).map(|v| v.to_kafka_string());
        let default_value = defaults.value_of(def.name).map(|v| v.to_kafka_string());
        let broker_keys = || {
            def.broker_key
                .into_iter()
                .chain(def.broker_synonyms.iter().copied())
        };
        // The most specific broker layer holding a synonym names the
        // source (Kafka's synonym order: per-broker, default, static).
        let dynamic = broker_keys()
            .filter_map(|k| broker_defaults.dynamic_keys.get(k).copied())
            .min_by_key(|s| *s as i8);
        let static_broker = broker_keys().any(|k| broker_defaults.static_keys.contains(k));
        let broker_source = match dynamic {
            Some(source) => source,
            None if static_broker => ConfigSource::StaticBrokerConfig,
            None => ConfigSource::DefaultConfig,
        };
        let mut synonyms = Vec::new();
        let overridden = overrides.contains_key(def.name);
        if overridden {
            synonyms.push(ConfigSynonym {
                name: def.name.to_string(),
                value: value.clone(),
                source: ConfigSource::DynamicTopicConfig,
            });
        }
        // Kafka names the broker key as the synonym for the default;
        // keys without a broker synonym show themselves.
        synonyms.push(ConfigSynonym {
            name: def.broker_key.unwrap_or(def.name).to_string(),
            value: default_value,
            source: broker_source,
        });
        let source = if overridden {
            ConfigSource::DynamicTopicConfig
        } else {
            broker_source
        };
        ConfigEntry {
            name: def.name.to_string(),
            value,
            source,
            read_only: false,
            is_default: source == ConfigSource::DefaultConfig,
            is_sensitive: def.kind == ConfigType::Password,
            config_type: def.kind,
            synonyms,
        }
    }
}

/// Validates one key/value pair alone (no cross-key rules), e.g. for
/// IncrementalAlterConfigs APPEND/SUBTRACT on list keys.
pub fn validate_one(name: &str, raw: &str) -> Result<ConfigValue, ConfigError> {
    let def = key_def(name).ok_or_else(|| parse_error(name, raw, "Unknown topic config name"))?;
    parse_value(def, raw)
}

#[cfg(test)]
mod tests;
