//! `[pure]` Unit tests of `config::topic`.

use super::*;
use proptest::prelude::*;

fn overrides(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn resolve(pairs: &[(&str, &str)]) -> Result<TopicConfig, ConfigError> {
    TopicConfig::resolve(&overrides(pairs), &BrokerTopicDefaults::default())
}

#[test]
fn keys_are_sorted_and_unique() {
    let names: Vec<&str> = topic_config_names().collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(names, sorted);
}

#[test]
fn no_overrides_gives_kafka_defaults() {
    let c = resolve(&[]).unwrap();
    assert_eq!(c.retention_ms, 604_800_000);
    assert_eq!(c.segment_bytes, 1_073_741_824);
    assert_eq!(c.max_message_bytes, 1_048_588);
    assert_eq!(c.cleanup_policy, vec!["delete"]);
    assert_eq!(c.compression_type, BrokerCompressionType::Producer);
    assert_eq!(c.min_insync_replicas, 1);
    assert!(!c.unclean_leader_election_enable);
    assert!(c.is_delete() && !c.is_compacted());
}

#[test]
fn valid_overrides_are_applied() {
    let c = resolve(&[
        ("retention.ms", " 1000 "),
        ("cleanup.policy", "compact, delete"),
        ("compression.type", "zstd"),
        ("min.cleanable.dirty.ratio", "0.1"),
        ("preallocate", "TRUE"),
        ("message.timestamp.type", "LogAppendTime"),
        ("retention.bytes", "-1"),
        ("leader.replication.throttled.replicas", "0:1,1:2"),
        ("follower.replication.throttled.replicas", "*"),
    ])
    .unwrap();
    assert_eq!(c.retention_ms, 1000);
    assert_eq!(c.cleanup_policy, vec!["compact", "delete"]);
    assert!(c.is_compacted());
    assert_eq!(c.compression_type, BrokerCompressionType::Zstd);
    assert_eq!(c.min_cleanable_dirty_ratio, 0.1);
    assert!(c.preallocate);
    assert_eq!(c.message_timestamp_type, TimestampType::LogAppendTime);
    assert_eq!(c.leader_replication_throttled_replicas, vec!["0:1", "1:2"]);
}

#[test]
fn invalid_overrides_are_rejected_with_the_key() {
    let rows: &[(&str, &str)] = &[
        ("no.such.key", "1"),
        ("retention.ms", "-2"),
        ("retention.ms", "abc"),
        ("segment.bytes", "13"),
        ("segment.bytes", "4294967296"),
        ("segment.ms", "0"),
        ("segment.index.bytes", "3"),
        ("flush.messages", "0"),
        ("min.insync.replicas", "0"),
        ("max.message.bytes", "-1"),
        ("cleanup.policy", "compact,forever"),
        ("compression.type", "brotli"),
        ("compression.type", "ZSTD"),
        ("compression.gzip.level", "0"),
        ("compression.lz4.level", "18"),
        ("compression.zstd.level", "23"),
        ("min.cleanable.dirty.ratio", "1.5"),
        ("min.cleanable.dirty.ratio", "NaN"),
        ("preallocate", "yes"),
        ("message.timestamp.type", "createtime"),
        ("leader.replication.throttled.replicas", "0-1"),
        ("local.retention.ms", "-3"),
        ("remote.storage.enable", "true"),
    ];
    for (key, value) in rows {
        let err = resolve(&[(key, value)]).expect_err(&format!("{key}={value}"));
        assert_eq!(err.key, *key);
        assert_eq!(err.value, *value);
    }
}

#[test]
fn compaction_lag_conflict_is_rejected() {
    let err = resolve(&[
        ("min.compaction.lag.ms", "10"),
        ("max.compaction.lag.ms", "5"),
    ])
    .unwrap_err();
    assert_eq!(err.key, "min.compaction.lag.ms");
    assert!(err.reason.contains("conflict"));
}

#[test]
fn broker_defaults_flow_into_topic_config() {
    let d = BrokerTopicDefaults {
        log_retention_ms: 3_600_000,
        log_cleanup_policy: vec!["compact".into()],
        ..Default::default()
    };
    let c = TopicConfig::resolve(&BTreeMap::new(), &d).unwrap();
    assert_eq!(c.retention_ms, 3_600_000);
    assert!(c.is_compacted());
}

#[test]
fn describe_reports_sources_and_synonyms() {
    let mut d = BrokerTopicDefaults::default();
    d.static_keys.insert("log.retention.hours".into());
    let o = overrides(&[("segment.ms", "1000")]);
    let c = TopicConfig::resolve(&o, &d).unwrap();
    let entries = c.describe(&o, &d, None);
    assert_eq!(entries.len(), topic_config_names().count());
    let get = |n: &str| entries.iter().find(|e| e.name == n).unwrap().clone();

    let seg = get("segment.ms");
    assert_eq!(
        (seg.value.as_deref(), seg.source),
        (Some("1000"), ConfigSource::DynamicTopicConfig)
    );
    assert!(!seg.is_default && !seg.read_only && !seg.is_sensitive);
    assert_eq!(seg.config_type, ConfigType::Long);
    assert_eq!(seg.synonyms.len(), 2);
    assert_eq!(seg.synonyms[1].name, "log.roll.ms");
    assert_eq!(seg.synonyms[1].value.as_deref(), Some("604800000"));

    let ret = get("retention.ms");
    assert_eq!(ret.source, ConfigSource::StaticBrokerConfig);
    assert!(!ret.is_default);

    let ratio = get("min.cleanable.dirty.ratio");
    assert_eq!(
        (ratio.value.as_deref(), ratio.source),
        (Some("0.5"), ConfigSource::DefaultConfig)
    );
    assert!(ratio.is_default);
    assert_eq!(
        get("flush.messages").value.as_deref(),
        Some("9223372036854775807")
    );
    assert_eq!(get("cleanup.policy").config_type, ConfigType::List);

    let only = c.describe(
        &o,
        &d,
        Some(&["retention.ms".to_string(), "bogus".to_string()]),
    );
    assert_eq!(only.len(), 1);
}

#[test]
fn every_key_has_a_value_and_round_trips_through_its_string() {
    let c = resolve(&[]).unwrap();
    for name in topic_config_names() {
        let v = c.value_of(name).expect(name);
        let again = validate_one(name, &v.to_kafka_string()).expect(name);
        assert_eq!(again, v, "{name}");
    }
}

proptest! {
    #[test]
    fn resolve_never_panics(key_idx in 0usize..40, value in ".{0,20}") {
        let names: Vec<&str> = topic_config_names().collect();
        let key = names.get(key_idx).copied().unwrap_or("unknown.key");
        let _ = resolve(&[(key, &value)]);
    }

    #[test]
    fn long_keys_accept_exactly_their_range(v in any::<i64>()) {
        let r = resolve(&[("retention.ms", &v.to_string())]);
        prop_assert_eq!(r.is_ok(), v >= -1);
    }
}
