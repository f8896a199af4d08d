use super::*;

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn entry_of<'a>(entries: &'a [ConfigEntry], name: &str) -> &'a ConfigEntry {
    entries
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("{name} missing"))
}

#[test]
fn static_keys_are_refused_with_kafkas_message_and_bad_values_named() {
    let base = ServerConfig::default();
    assert_eq!(
        validate(
            &base,
            &map(&[("num.partitions", "3"), ("broker.id", "2")]),
            true
        ),
        Err("Cannot update these configs dynamically: Set(broker.id, num.partitions)".into())
    );
    let bad = validate(&base, &map(&[("log.retention.ms", "soon")]), true).unwrap_err();
    assert!(
        bad.starts_with("Invalid value soon for configuration log.retention.ms"),
        "{bad}"
    );
    assert_eq!(
        validate(&base, &map(&[(LEADER_REPLICATION_THROTTLED_RATE, "-1")]), true),
        Err("Invalid value -1 for configuration leader.replication.throttled.rate: Value must be at least 0".into())
    );
    assert!(validate(
        &base,
        &map(&[(FOLLOWER_REPLICATION_THROTTLED_RATE, "x")]),
        true
    )
    .is_err());
    // Dynamic keys, and keys nobody knows (stored as Kafka stores them).
    assert_eq!(
        validate(
            &base,
            &map(&[
                ("log.retention.ms", "60000"),
                ("log.cleanup.policy", "compact,delete"),
                (LEADER_REPLICATION_THROTTLED_RATE, "10000000"),
                ("my.custom.key", "anything"),
            ]),
            true
        ),
        Ok(())
    );
}

#[test]
fn per_broker_wins_over_default_which_wins_over_static() {
    let base = ServerConfig {
        log_segment_bytes: 4096,
        ..ServerConfig::default()
    };
    let dynamic = DynamicBrokerConfigs {
        cluster_default: map(&[("log.retention.ms", "1000"), ("log.segment.bytes", "8192")]),
        per_broker: map(&[("log.retention.ms", "2000")]),
    };
    let eff = base.with_dynamic(&dynamic);
    assert_eq!(eff.effective_log_retention_ms(), 2000);
    assert_eq!(eff.log_segment_bytes, 8192);
    let d = base.topic_defaults(&dynamic);
    assert_eq!(d.log_retention_ms, 2000);
    assert_eq!(d.log_segment_bytes, 8192);
    assert_eq!(
        d.dynamic_keys.get("log.retention.ms"),
        Some(&ConfigSource::DynamicBrokerConfig)
    );
    assert_eq!(
        d.dynamic_keys.get("log.segment.bytes"),
        Some(&ConfigSource::DynamicDefaultBrokerConfig)
    );
    assert!(d.static_keys.contains("log.segment.bytes"));
    // A topic without overrides shows where its defaults came from.
    let t = crate::config::topic::TopicConfig::from_broker_defaults(&d);
    let described = t.describe(&BTreeMap::new(), &d, None);
    assert_eq!(
        entry_of(&described, "retention.ms").source,
        ConfigSource::DynamicBrokerConfig
    );
    assert_eq!(
        entry_of(&described, "segment.bytes").source,
        ConfigSource::DynamicDefaultBrokerConfig
    );
    assert_eq!(
        entry_of(&described, "cleanup.policy").source,
        ConfigSource::DefaultConfig
    );
}

#[test]
fn describe_shows_each_keys_layer_and_which_are_alterable() {
    let base = ServerConfig {
        num_partitions: 3,
        ..ServerConfig::default()
    };
    let dynamic = DynamicBrokerConfigs {
        cluster_default: map(&[("min.insync.replicas", "2"), ("log.retention.ms", "5000")]),
        per_broker: map(&[
            ("log.retention.ms", "7000"),
            (LEADER_REPLICATION_THROTTLED_RATE, "10000000"),
        ]),
    };
    let all = base.describe_broker(&dynamic, None);
    let retention = entry_of(&all, "log.retention.ms");
    assert_eq!(retention.value.as_deref(), Some("7000"));
    assert_eq!(retention.source, ConfigSource::DynamicBrokerConfig);
    let layers: Vec<ConfigSource> = retention.synonyms.iter().map(|s| s.source).collect();
    assert_eq!(
        layers,
        [
            ConfigSource::DynamicBrokerConfig,
            ConfigSource::DynamicDefaultBrokerConfig,
            ConfigSource::DefaultConfig
        ]
    );
    assert!(!retention.read_only);
    let isr = entry_of(&all, "min.insync.replicas");
    assert_eq!(
        (isr.value.as_deref(), isr.source),
        (Some("2"), ConfigSource::DynamicDefaultBrokerConfig)
    );
    let parts = entry_of(&all, "num.partitions");
    assert_eq!(
        (parts.source, parts.read_only),
        (ConfigSource::StaticBrokerConfig, true)
    );
    assert_eq!(
        entry_of(&all, "broker.id").source,
        ConfigSource::DefaultConfig
    );
    let rate = entry_of(&all, LEADER_REPLICATION_THROTTLED_RATE);
    assert_eq!(
        (
            rate.value.as_deref(),
            rate.source,
            rate.config_type,
            rate.read_only
        ),
        (
            Some("10000000"),
            ConfigSource::DynamicBrokerConfig,
            ConfigType::Long,
            false
        )
    );
    let only = base.describe_broker(&dynamic, Some(&["num.partitions".to_owned()]));
    assert_eq!(only.len(), 1);

    let defaults = describe_default(&dynamic, None);
    let names: Vec<&str> = defaults.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["log.retention.ms", "min.insync.replicas"]);
    assert!(defaults
        .iter()
        .all(|e| e.source == ConfigSource::DynamicDefaultBrokerConfig));
}

#[test]
fn throttle_rates_come_from_this_brokers_entity_only() {
    let dynamic = DynamicBrokerConfigs {
        cluster_default: map(&[(FOLLOWER_REPLICATION_THROTTLED_RATE, "5")]),
        per_broker: map(&[(LEADER_REPLICATION_THROTTLED_RATE, "10000000")]),
    };
    assert_eq!(
        dynamic.replication_rate(LEADER_REPLICATION_THROTTLED_RATE),
        Some(10_000_000.0)
    );
    assert_eq!(
        dynamic.replication_rate(FOLLOWER_REPLICATION_THROTTLED_RATE),
        None
    );
    let unbounded = DynamicBrokerConfigs {
        per_broker: map(&[(LEADER_REPLICATION_THROTTLED_RATE, &i64::MAX.to_string())]),
        ..Default::default()
    };
    assert_eq!(
        unbounded.replication_rate(LEADER_REPLICATION_THROTTLED_RATE),
        None
    );
}
