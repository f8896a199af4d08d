//! `[pure]` Dynamic broker configs (Kafka 3.9 `DynamicBrokerConfig`,
//! `DynamicConfig.Broker`, `BrokerConfigHandler`): the keys a broker
//! takes without a restart, stored in `/config/brokers/<id>` (this
//! broker) and `/config/brokers/<default>` (every broker), which of them
//! may be stored where, how the layers resolve (per broker over
//! cluster default over `server.properties` over Kafka's default), and
//! what DescribeConfigs shows for a BROKER resource with each key's
//! source (DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
//! STATIC_BROKER_CONFIG, DEFAULT_CONFIG).
//!
//! The dynamic keys shardlog applies:
//! - the topic defaults Kafka's `DynamicLogConfig` reconfigures (the
//!   primary broker synonym of each topic config: `log.retention.ms`,
//!   `log.segment.bytes`, `log.cleanup.policy`, `min.insync.replicas`,
//!   `message.max.bytes`, …): topics without an override follow them;
//! - `leader.replication.throttled.rate` and
//!   `follower.replication.throttled.rate` (`DynamicConfig.Broker`,
//!   bytes/s, default Long.MAX_VALUE = unthrottled): the replication
//!   quotas, read from this broker's own entity only, as Kafka's
//!   `BrokerConfigHandler` does;
//! - per broker only, a listener's keystore and truststore
//!   (`listener.name.<l>.ssl.keystore.location`, …; passwords stored
//!   encoded): `security`.
//!
//! Keys Kafka treats as dynamic but shardlog does not apply (thread pool
//! sizes, listener settings other than the keystore/truststore ones of
//! `security`, connection limits, cleaner threads)
//! are refused as static with Kafka's "Cannot update these configs
//! dynamically" rather than stored without effect. Keys neither Kafka
//! nor shardlog knows are stored as given, as Kafka stores them.

pub mod security;

use std::collections::{BTreeMap, BTreeSet};

use super::topic::{BrokerTopicDefaults, ConfigEntry, ConfigSource, ConfigSynonym, ConfigType};
use super::ServerConfig;

/// `DynamicConfig.Broker.LeaderReplicationThrottledRateProp`.
pub const LEADER_REPLICATION_THROTTLED_RATE: &str = "leader.replication.throttled.rate";
/// `DynamicConfig.Broker.FollowerReplicationThrottledRateProp`.
pub const FOLLOWER_REPLICATION_THROTTLED_RATE: &str = "follower.replication.throttled.rate";
/// `DynamicConfig.Broker.ReplicaAlterLogDirsIoMaxBytesPerSecondProp`:
/// the bound of log-dir moves' copying (`replication::quota`).
pub const REPLICA_ALTER_LOG_DIRS_IO_MAX: &str = "replica.alter.log.dirs.io.max.bytes.per.second";

/// The entity name of the cluster-wide default (`ZooKeeperInternals.DEFAULT_STRING`).
pub const DEFAULT_ENTITY: &str = "<default>";

/// The replication quota keys (Long, at least 0, default Long.MAX_VALUE).
const QUOTA_KEYS: [&str; 3] = [
    LEADER_REPLICATION_THROTTLED_RATE,
    FOLLOWER_REPLICATION_THROTTLED_RATE,
    REPLICA_ALTER_LOG_DIRS_IO_MAX,
];

/// Kafka's `DynamicLogConfig.ReconfigurableConfigs` that are
/// `server.properties` keys here: the primary broker synonym of each
/// topic config shardlog has.
const DYNAMIC_LOG_KEYS: [&str; 28] = [
    "log.segment.bytes",
    "log.roll.ms",
    "log.roll.jitter.ms",
    "log.retention.bytes",
    "log.retention.ms",
    "log.cleanup.policy",
    "log.cleaner.delete.retention.ms",
    "log.cleaner.min.cleanable.ratio",
    "log.cleaner.min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms",
    "log.flush.interval.messages",
    "log.flush.interval.ms",
    "log.index.interval.bytes",
    "log.index.size.max.bytes",
    "log.preallocate",
    "log.message.timestamp.type",
    "log.message.timestamp.before.max.ms",
    "log.message.timestamp.after.max.ms",
    "log.message.timestamp.difference.max.ms",
    "compression.type",
    "compression.gzip.level",
    "compression.lz4.level",
    "compression.zstd.level",
    "min.insync.replicas",
    "unclean.leader.election.enable",
    "message.max.bytes",
    "log.segment.delete.delay.ms",
    "log.message.downconversion.enable",
];

/// Whether shardlog applies `key` without a restart.
pub fn is_dynamic(key: &str) -> bool {
    QUOTA_KEYS.contains(&key) || DYNAMIC_LOG_KEYS.contains(&key)
}

/// The two dynamic layers of one broker's config.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DynamicBrokerConfigs {
    /// `/config/brokers/<default>`.
    pub cluster_default: BTreeMap<String, String>,
    /// `/config/brokers/<this broker's id>`.
    pub per_broker: BTreeMap<String, String>,
}

impl DynamicBrokerConfigs {
    /// The dynamic layer `key` comes from, if any.
    pub fn source_of(&self, key: &str) -> Option<ConfigSource> {
        if self.per_broker.contains_key(key) {
            Some(ConfigSource::DynamicBrokerConfig)
        } else if self.cluster_default.contains_key(key) {
            Some(ConfigSource::DynamicDefaultBrokerConfig)
        } else {
            None
        }
    }

    /// A replication throttle rate in bytes/s from this broker's own
    /// entity (`BrokerConfigHandler.processConfigChanges` updates the
    /// quota managers from it alone); `None` when unthrottled.
    pub fn replication_rate(&self, key: &str) -> Option<f64> {
        let rate: i64 = self.per_broker.get(key)?.trim().parse().ok()?;
        (0..i64::MAX).contains(&rate).then_some(rate as f64)
    }

    /// Both layers applied to `layer` in order (default, then per broker).
    fn layers(&self) -> [&BTreeMap<String, String>; 2] {
        [&self.cluster_default, &self.per_broker]
    }
}

/// Kafka's `DynamicBrokerConfig.validateConfigs` for the new config of
/// one entity (`per_broker`: `/config/brokers/<id>`, else `<default>`)
/// over `base`, before the listeners check theirs: the message of the
/// ConfigException (`ZkAdminManager` answers INVALID_CONFIG with it).
/// The listener SSL rules are `security`'s.
pub fn validate(
    base: &ServerConfig,
    config: &BTreeMap<String, String>,
    per_broker: bool,
) -> Result<(), String> {
    let known = ServerConfig::keys();
    let mut fixed: BTreeSet<&str> = config
        .keys()
        .map(String::as_str)
        .filter(|k| {
            known.iter().any(|n| n == k)
                && !is_dynamic(k)
                && !security::RECONFIGURABLE_SSL.contains(k)
        })
        .collect();
    fixed.extend(security::fixed_listener_keys(config));
    if !fixed.is_empty() {
        let names: Vec<&str> = fixed.into_iter().collect();
        return Err(format!(
            "Cannot update these configs dynamically: Set({})",
            names.join(", ")
        ));
    }
    security::check_security_keys(config, per_broker)?;
    let mut probe = base.clone();
    for (key, value) in config {
        if QUOTA_KEYS.contains(&key.as_str()) {
            match value.trim().parse::<i64>() {
                Ok(v) if v >= 0 => {}
                Ok(_) => {
                    return Err(format!(
                        "Invalid value {value} for configuration {key}: Value must be at least 0"
                    ))
                }
                Err(_) => {
                    return Err(format!(
                        "Invalid value {value} for configuration {key}: Not a number of type LONG"
                    ))
                }
            }
        } else if is_dynamic(key) {
            probe
                .set(key, value)
                .map_err(|e| format!("Invalid value {value} for configuration {key}: {e}"))?;
        }
    }
    probe.validate().map_err(|e| e.to_string())
}

impl ServerConfig {
    /// This broker's config with the dynamic layers over it (values
    /// that no longer parse are skipped: they were checked when stored).
    pub fn with_dynamic(&self, dynamic: &DynamicBrokerConfigs) -> ServerConfig {
        let mut out = self.clone();
        for layer in dynamic.layers() {
            for (key, value) in layer {
                if DYNAMIC_LOG_KEYS.contains(&key.as_str()) {
                    let _ = out.set(key, value);
                }
            }
        }
        out
    }

    /// The topic defaults with the dynamic layers applied, each
    /// dynamically set key remembered with its source (DescribeConfigs
    /// of a topic names it).
    pub fn topic_defaults(&self, dynamic: &DynamicBrokerConfigs) -> BrokerTopicDefaults {
        let mut d = self.with_dynamic(dynamic).broker_topic_defaults();
        d.static_keys = self.broker_topic_defaults().static_keys;
        d.dynamic_keys = DYNAMIC_LOG_KEYS
            .iter()
            .filter_map(|k| dynamic.source_of(k).map(|s| ((*k).to_owned(), s)))
            .collect();
        d
    }

    /// DescribeConfigs for this broker's BROKER resource: every key with
    /// its effective value and source, the dynamic ones alterable; the
    /// dynamic keys that are not `server.properties` keys follow when set.
    /// `keys` limits the answer (None = all).
    pub fn describe_broker(
        &self,
        dynamic: &DynamicBrokerConfigs,
        keys: Option<&[String]>,
    ) -> Vec<ConfigEntry> {
        let effective = self.with_dynamic(dynamic);
        let statics = self.key_values();
        let mut out: Vec<ConfigEntry> = effective
            .key_values()
            .into_iter()
            .zip(statics)
            .map(|(kv, st)| {
                let mut synonyms = dynamic_synonyms(dynamic, &kv.name);
                let fallback = if st.is_set {
                    ConfigSource::StaticBrokerConfig
                } else {
                    ConfigSource::DefaultConfig
                };
                synonyms.push(ConfigSynonym {
                    name: kv.name.clone(),
                    value: st.value,
                    source: fallback,
                });
                entry(kv.name, kv.value, kv.config_type, synonyms, true)
            })
            .collect();
        let known = ServerConfig::keys();
        let extra: BTreeSet<&String> = dynamic
            .cluster_default
            .keys()
            .chain(dynamic.per_broker.keys())
            .filter(|k| !known.contains(k))
            .collect();
        for key in extra {
            let synonyms = dynamic_synonyms(dynamic, key);
            let value = synonyms.first().and_then(|s| s.value.clone());
            let kind = if QUOTA_KEYS.contains(&key.as_str()) {
                ConfigType::Long
            } else if security::is_password_config(key) {
                ConfigType::Password
            } else {
                ConfigType::String
            };
            out.push(entry(key.clone(), value, kind, synonyms, false));
        }
        out.retain(|e| keys.is_none_or(|ks| ks.contains(&e.name)));
        out
    }
}

/// DescribeConfigs for the BROKER resource with an empty name: the
/// cluster-wide dynamic defaults only (Kafka's `ConfigHelper` answers
/// `currentDynamicDefaultConfigs`).
pub fn describe_default(
    dynamic: &DynamicBrokerConfigs,
    keys: Option<&[String]>,
) -> Vec<ConfigEntry> {
    let known = ServerConfig::keys();
    let types: BTreeMap<String, ConfigType> = ServerConfig::default()
        .key_values()
        .into_iter()
        .map(|kv| (kv.name, kv.config_type))
        .collect();
    dynamic
        .cluster_default
        .iter()
        .filter(|(k, _)| keys.is_none_or(|ks| ks.contains(k)))
        .map(|(k, v)| {
            let kind = types
                .get(k)
                .copied()
                .unwrap_or(if QUOTA_KEYS.contains(&k.as_str()) {
                    ConfigType::Long
                } else if security::is_password_config(k) {
                    ConfigType::Password
                } else {
                    ConfigType::String
                });
            let synonyms = vec![ConfigSynonym {
                name: k.clone(),
                value: shown(k, v),
                source: ConfigSource::DynamicDefaultBrokerConfig,
            }];
            entry(k.clone(), shown(k, v), kind, synonyms, known.contains(k))
        })
        .collect()
}

/// A dynamic value as DescribeConfigs shows it: null for a password
/// (Kafka's `ConfigHelper` hides sensitive values).
fn shown(key: &str, value: &str) -> Option<String> {
    (!security::is_password_config(key)).then(|| value.to_owned())
}

/// The dynamic layers holding `key`, most specific first.
fn dynamic_synonyms(dynamic: &DynamicBrokerConfigs, key: &str) -> Vec<ConfigSynonym> {
    let mut out = Vec::new();
    if let Some(v) = dynamic.per_broker.get(key) {
        out.push(ConfigSynonym {
            name: key.to_owned(),
            value: shown(key, v),
            source: ConfigSource::DynamicBrokerConfig,
        });
    }
    if let Some(v) = dynamic.cluster_default.get(key) {
        out.push(ConfigSynonym {
            name: key.to_owned(),
            value: shown(key, v),
            source: ConfigSource::DynamicDefaultBrokerConfig,
        });
    }
    out
}

/// One broker entry: the source is the first synonym's; read-only when
/// `known` (a `server.properties` key) and not dynamic.
fn entry(
    name: String,
    value: Option<String>,
    config_type: ConfigType,
    synonyms: Vec<ConfigSynonym>,
    known: bool,
) -> ConfigEntry {
    let source = synonyms
        .first()
        .map_or(ConfigSource::DefaultConfig, |s| s.source);
    ConfigEntry {
        read_only: known && !is_dynamic(&name),
        is_default: source == ConfigSource::DefaultConfig,
        is_sensitive: config_type == ConfigType::Password,
        name,
        value,
        source,
        config_type,
        synonyms,
    }
}

#[cfg(test)]
mod tests;
