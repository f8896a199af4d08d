//! `[pure]` The topic key table (Kafka 3.9's `LogConfig` `ConfigDef`):
//! every key we accept with its type, validator and broker synonyms, and
//! the parse-and-validate step each override goes through.

use super::value::{ConfigError, ConfigType, ConfigValue};

/// How a key's value is validated (Kafka's `ConfigDef.Validator`s).
#[derive(Debug, Clone, Copy)]
enum Check {
    Any,
    AtLeast(i64),
    Between(i64, i64),
    /// `GzipCompression.LEVEL_VALIDATOR`: -1 (default) or 1..=9.
    GzipLevel,
    /// `Lz4Compression.LEVEL_VALIDATOR` (1..=17), narrowed to Kafka's
    /// default 9: shardlog's LZ4 encoder has only LZ4's fast mode, which
    /// is what Kafka writes at 9 (`KafkaLZ4BlockOutputStream`); the other
    /// levels need lz4-java's high-compression mode.
    Lz4Level,
    DoubleBetween(f64, f64),
    OneOf(&'static [&'static str]),
    ListOf(&'static [&'static str]),
    /// `ThrottledReplicaListValidator`: `*` or `partition:broker,...`.
    ThrottledReplicas,
}

pub(super) struct KeyDef {
    pub(super) name: &'static str,
    pub(super) kind: ConfigType,
    check: Check,
    /// The broker key that supplies the default (first synonym).
    pub(super) broker_key: Option<&'static str>,
    /// Other broker keys feeding the same default (e.g. log.retention.hours).
    pub(super) broker_synonyms: &'static [&'static str],
}

const fn key(
    name: &'static str,
    kind: ConfigType,
    check: Check,
    broker_key: Option<&'static str>,
    broker_synonyms: &'static [&'static str],
) -> KeyDef {
    KeyDef {
        name,
        kind,
        check,
        broker_key,
        broker_synonyms,
    }
}

const COMPRESSION_TYPES: &[&str] = &["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"];
const CLEANUP_POLICIES: &[&str] = &["compact", "delete"];
const TIMESTAMP_TYPES: &[&str] = &["CreateTime", "LogAppendTime"];
/// `LegacyRecord.RECORD_OVERHEAD_V0`: the floor of segment.bytes.
const RECORD_OVERHEAD_V0: i64 = 14;

use Check::*;
use ConfigType as T;

/// Every topic key we accept, sorted by name (describe order).
pub(super) static KEYS: &[KeyDef] = &[
    key(
        "cleanup.policy",
        T::List,
        ListOf(CLEANUP_POLICIES),
        Some("log.cleanup.policy"),
        &[],
    ),
    key(
        "compression.gzip.level",
        T::Int,
        GzipLevel,
        Some("compression.gzip.level"),
        &[],
    ),
    key(
        "compression.lz4.level",
        T::Int,
        Lz4Level,
        Some("compression.lz4.level"),
        &[],
    ),
    key(
        "compression.type",
        T::String,
        OneOf(COMPRESSION_TYPES),
        Some("compression.type"),
        &[],
    ),
    key(
        "compression.zstd.level",
        T::Int,
        Between(-131072, 22),
        Some("compression.zstd.level"),
        &[],
    ),
    key(
        "delete.retention.ms",
        T::Long,
        AtLeast(0),
        Some("log.cleaner.delete.retention.ms"),
        &[],
    ),
    key(
        "file.delete.delay.ms",
        T::Long,
        AtLeast(0),
        Some("log.segment.delete.delay.ms"),
        &[],
    ),
    key(
        "flush.messages",
        T::Long,
        AtLeast(1),
        Some("log.flush.interval.messages"),
        &[],
    ),
    key(
        "flush.ms",
        T::Long,
        AtLeast(0),
        Some("log.flush.interval.ms"),
        &["log.flush.scheduler.interval.ms"],
    ),
    key(
        "follower.replication.throttled.replicas",
        T::List,
        ThrottledReplicas,
        None,
        &[],
    ),
    key(
        "index.interval.bytes",
        T::Int,
        AtLeast(0),
        Some("log.index.interval.bytes"),
        &[],
    ),
    key(
        "leader.replication.throttled.replicas",
        T::List,
        ThrottledReplicas,
        None,
        &[],
    ),
    key(
        "local.retention.bytes",
        T::Long,
        AtLeast(-2),
        Some("log.local.retention.bytes"),
        &[],
    ),
    key(
        "local.retention.ms",
        T::Long,
        AtLeast(-2),
        Some("log.local.retention.ms"),
        &[],
    ),
    key(
        "max.compaction.lag.ms",
        T::Long,
        AtLeast(1),
        Some("log.cleaner.max.compaction.lag.ms"),
        &[],
    ),
    key(
        "max.message.bytes",
        T::Int,
        AtLeast(0),
        Some("message.max.bytes"),
        &[],
    ),
    key(
        "message.downconversion.enable",
        T::Boolean,
        Any,
        Some("log.message.downconversion.enable"),
        &[],
    ),
    key(
        "message.timestamp.after.max.ms",
        T::Long,
        AtLeast(0),
        Some("log.message.timestamp.after.max.ms"),
        &[],
    ),
    key(
        "message.timestamp.before.max.ms",
        T::Long,
        AtLeast(0),
        Some("log.message.timestamp.before.max.ms"),
        &[],
    ),
    key(
        "message.timestamp.difference.max.ms",
        T::Long,
        AtLeast(0),
        Some("log.message.timestamp.difference.max.ms"),
        &[],
    ),
    key(
        "message.timestamp.type",
        T::String,
        OneOf(TIMESTAMP_TYPES),
        Some("log.message.timestamp.type"),
        &[],
    ),
    key(
        "min.cleanable.dirty.ratio",
        T::Double,
        DoubleBetween(0.0, 1.0),
        Some("log.cleaner.min.cleanable.ratio"),
        &[],
    ),
    key(
        "min.compaction.lag.ms",
        T::Long,
        AtLeast(0),
        Some("log.cleaner.min.compaction.lag.ms"),
        &[],
    ),
    key(
        "min.insync.replicas",
        T::Int,
        AtLeast(1),
        Some("min.insync.replicas"),
        &[],
    ),
    key("preallocate", T::Boolean, Any, Some("log.preallocate"), &[]),
    key("remote.storage.enable", T::Boolean, Any, None, &[]),
    key(
        "retention.bytes",
        T::Long,
        Any,
        Some("log.retention.bytes"),
        &[],
    ),
    key(
        "retention.ms",
        T::Long,
        AtLeast(-1),
        Some("log.retention.ms"),
        &["log.retention.minutes", "log.retention.hours"],
    ),
    key(
        "segment.bytes",
        T::Int,
        AtLeast(RECORD_OVERHEAD_V0),
        Some("log.segment.bytes"),
        &[],
    ),
    key(
        "segment.index.bytes",
        T::Int,
        AtLeast(4),
        Some("log.index.size.max.bytes"),
        &[],
    ),
    key(
        "segment.jitter.ms",
        T::Long,
        AtLeast(0),
        Some("log.roll.jitter.ms"),
        &["log.roll.jitter.hours"],
    ),
    key(
        "segment.ms",
        T::Long,
        AtLeast(1),
        Some("log.roll.ms"),
        &["log.roll.hours"],
    ),
    key(
        "unclean.leader.election.enable",
        T::Boolean,
        Any,
        Some("unclean.leader.election.enable"),
        &[],
    ),
];

pub(super) fn key_def(name: &str) -> Option<&'static KeyDef> {
    KEYS.iter().find(|k| k.name == name)
}

/// Names of every topic config key we accept.
pub fn topic_config_names() -> impl Iterator<Item = &'static str> {
    KEYS.iter().map(|k| k.name)
}

/// The config type of a topic key, if known.
pub fn topic_config_type(name: &str) -> Option<ConfigType> {
    key_def(name).map(|k| k.kind)
}

pub(super) fn parse_error(key: &str, value: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError {
        key: key.to_string(),
        value: value.to_string(),
        reason: reason.into(),
    }
}

/// Parses `raw` for `def` like Kafka's `ConfigDef.parseType` (values are
/// trimmed; booleans case-insensitive; lists split on commas) and runs the
/// key's validator.
pub(super) fn parse_value(def: &KeyDef, raw: &str) -> Result<ConfigValue, ConfigError> {
    let err = |reason: &str| parse_error(def.name, raw, reason);
    let trimmed = raw.trim();
    let value = match def.kind {
        T::Boolean => match trimmed.to_ascii_lowercase().as_str() {
            "true" => ConfigValue::Boolean(true),
            "false" => ConfigValue::Boolean(false),
            _ => return Err(err("Expected value to be either true or false")),
        },
        T::Int | T::Short => ConfigValue::Int(
            trimmed
                .parse()
                .map_err(|_| err("Not a number of type INT"))?,
        ),
        T::Long => ConfigValue::Long(
            trimmed
                .parse()
                .map_err(|_| err("Not a number of type LONG"))?,
        ),
        T::Double => ConfigValue::Double(
            trimmed
                .parse()
                .map_err(|_| err("Not a number of type DOUBLE"))?,
        ),
        T::List => ConfigValue::List(if trimmed.is_empty() {
            Vec::new()
        } else {
            trimmed.split(',').map(|s| s.trim().to_string()).collect()
        }),
        T::String | T::Class | T::Password => ConfigValue::String(trimmed.to_string()),
    };
    check_value(def, &value).map_err(|reason| err(&reason))?;
    Ok(value)
}

fn check_value(def: &KeyDef, value: &ConfigValue) -> Result<(), String> {
    let number = match value {
        ConfigValue::Int(v) => Some(i64::from(*v)),
        ConfigValue::Long(v) => Some(*v),
        _ => None,
    };
    match (def.check, value) {
        (Any, _) => Ok(()),
        (AtLeast(min), _) => match number {
            Some(n) if n < min => Err(format!("Value must be at least {min}")),
            _ => Ok(()),
        },
        (Between(lo, hi), _) => match number {
            Some(n) if n < lo || n > hi => Err(format!(
                "Value must be no less than {lo} and no more than {hi}"
            )),
            _ => Ok(()),
        },
        (Lz4Level, _) => match number {
            Some(n) if !(1..=17).contains(&n) => {
                Err("Value must be no less than 1 and no more than 17".into())
            }
            Some(n) if n != 9 => Err(format!(
                "shardlog writes LZ4 in its fast mode only, which is Kafka's level 9; \
                 level {n} needs LZ4's high-compression mode, which shardlog does not have"
            )),
            _ => Ok(()),
        },
        (GzipLevel, _) => match number {
            Some(n) if n != -1 && !(1..=9).contains(&n) => {
                Err("Value must be between 1 and 9, or -1".into())
            }
            _ => Ok(()),
        },
        (DoubleBetween(lo, hi), ConfigValue::Double(d)) if !(*d >= lo && *d <= hi) => Err(format!(
            "Value must be no less than {lo} and no more than {hi}"
        )),
        (DoubleBetween(..), _) => Ok(()),
        (OneOf(allowed), ConfigValue::String(s)) if !allowed.contains(&s.as_str()) => {
            Err(format!("String must be one of: {}", allowed.join(", ")))
        }
        (OneOf(_), _) => Ok(()),
        (ListOf(allowed), ConfigValue::List(items)) => {
            match items.iter().find(|i| !allowed.contains(&i.as_str())) {
                Some(bad) => Err(format!(
                    "Invalid value {bad}: String must be one of: {}",
                    allowed.join(", ")
                )),
                None => Ok(()),
            }
        }
        (ListOf(_), _) => Ok(()),
        (ThrottledReplicas, ConfigValue::List(items)) => check_throttled(items),
        (ThrottledReplicas, _) => Ok(()),
    }
}

fn check_throttled(items: &[String]) -> Result<(), String> {
    let pair = |s: &str| {
        s.is_empty()
            || s.split_once(':').is_some_and(|(p, b)| {
                !p.is_empty()
                    && !b.is_empty()
                    && p.bytes().all(|c| c.is_ascii_digit())
                    && b.bytes().all(|c| c.is_ascii_digit())
            })
    };
    if items.iter().all(|i| pair(i)) || items.concat().trim() == "*" {
        Ok(())
    } else {
        Err("must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...".into())
    }
}
