//! `[pure]` Unit tests of `config` (server.properties parsing and overrides).

use super::*;

fn load(text: &str) -> Result<Loaded, ConfigError> {
    ServerConfig::from_properties(text, &[])
}

#[test]
fn java_properties_syntax_is_understood() {
    let text = "# comment\n! also comment\n  broker.id = 7\nlog.dirs: /a, /b\n\
                    num.partitions 3\nzookeeper.session.timeout.ms 6000\nzookeeper.connect=zk1:2181,\\\n   zk2:2181\n\n";
    let pairs = parse_properties(text).unwrap();
    assert_eq!(
        pairs,
        vec![
            ("broker.id".to_string(), "7".to_string()),
            ("log.dirs".into(), "/a, /b".into()),
            ("num.partitions".into(), "3".into()),
            ("zookeeper.session.timeout.ms".into(), "6000".into()),
            ("zookeeper.connect".into(), "zk1:2181,zk2:2181".into()),
        ]
    );
    let c = load(text).unwrap().config;
    assert_eq!(c.broker_id, 7);
    assert_eq!(c.effective_log_dirs(), vec!["/a".to_string(), "/b".into()]);
    assert_eq!(c.num_partitions, 3);
    assert_eq!(c.zookeeper_connect.as_deref(), Some("zk1:2181,zk2:2181"));
}

#[test]
fn broker_topic_defaults_follow_log_keys_and_mark_set_ones_static() {
    let c = load("log.retention.hours=1\nlog.segment.bytes=2048\nnum.partitions=4\n")
        .unwrap()
        .config;
    let d = c.broker_topic_defaults();
    assert_eq!(d.log_retention_ms, 3_600_000);
    assert_eq!(d.log_segment_bytes, 2048);
    assert_eq!(d.num_partitions, 4);
    let stat: Vec<&str> = d.static_keys.iter().map(String::as_str).collect();
    assert_eq!(stat, vec!["log.retention.hours", "log.segment.bytes"]);
    let kv = c.key_values();
    let get = |k: &str| kv.iter().find(|e| e.name == k).unwrap().clone();
    assert_eq!(get("num.partitions").value.as_deref(), Some("4"));
    assert!(get("num.partitions").is_set);
    assert!(!get("message.max.bytes").is_set);
    assert_eq!(get("log.roll.ms").value, None);
    assert_eq!(
        get("log.cleanup.policy").config_type,
        topic::ConfigType::List
    );
    assert_eq!(kv.len(), ServerConfig::keys().len());
}

#[test]
fn defaults_are_kafkas() {
    let c = load("").unwrap().config;
    // (what, ours, Kafka's default)
    let rows: [(&str, i64, i64); 15] = [
        ("broker.id", c.broker_id.into(), -1),
        ("num.partitions", c.num_partitions.into(), 1),
        ("message.max.bytes", c.message_max_bytes.into(), 1_048_588),
        (
            "socket.request.max.bytes",
            c.socket_request_max_bytes.into(),
            104_857_600,
        ),
        ("log.segment.bytes", c.log_segment_bytes.into(), 1 << 30),
        (
            "log.index.interval.bytes",
            c.log_index_interval_bytes.into(),
            4096,
        ),
        (
            "offsets.topic.num.partitions",
            c.offsets_topic_num_partitions.into(),
            50,
        ),
        ("replica.lag.time.max.ms", c.replica_lag_time_max_ms, 30_000),
        (
            "replica.fetch.response.max.bytes",
            c.replica_fetch_response_max_bytes.into(),
            10_485_760,
        ),
        (
            "replica.fetch.backoff.ms",
            c.replica_fetch_backoff_ms.into(),
            1000,
        ),
        (
            "replica.socket.receive.buffer.bytes",
            c.replica_socket_receive_buffer_bytes.into(),
            65_536,
        ),
        (
            "replica.high.watermark.checkpoint.interval.ms",
            c.replica_high_watermark_checkpoint_interval_ms,
            5000,
        ),
        (
            "log.flush.offset.checkpoint.interval.ms",
            c.log_flush_offset_checkpoint_interval_ms,
            60_000,
        ),
        (
            "log.flush.start.offset.checkpoint.interval.ms",
            c.log_flush_start_offset_checkpoint_interval_ms,
            60_000,
        ),
        (
            "log.retention (ms)",
            c.effective_log_retention_ms(),
            168 * 3_600_000,
        ),
    ];
    for (key, ours, kafka) in rows {
        assert_eq!(ours, kafka, "{key}");
    }
    assert_eq!(c.listeners[0].port, 9092);
    assert_eq!(c.effective_log_dirs(), vec!["/tmp/kafka-logs".to_string()]);
    assert!(c.auto_create_topics_enable);
}

#[test]
fn every_field_is_the_kafka_key_with_underscores() {
    let keys = ServerConfig::keys();
    for key in [
        "broker.id",
        "log.retention.ms",
        "shardlog.batch.cache.bytes",
    ] {
        assert!(keys.contains(&key.to_string()), "{key}");
    }
    for key in keys {
        let mut c = ServerConfig::default();
        // Every listed key is settable by its own name.
        let value = if key.contains("listeners") {
            "PLAINTEXT://h:1"
        } else if key == "listener.security.protocol.map" {
            "PLAINTEXT:PLAINTEXT"
        } else if key == "shardlog.cpus" {
            "0"
        } else if key.ends_with("enable")
            || key.ends_with("append")
            || key == "log.preallocate"
            || key == "shardlog.segment.recycle"
            || key == "allow.everyone.if.no.acl.found"
        {
            "true"
        } else {
            "1"
        };
        assert_eq!(c.set(&key, value), Ok(true), "{key}");
    }
}

#[test]
fn retention_and_roll_follow_kafka_precedence() {
    let c = load("log.retention.hours=1\nlog.retention.minutes=2")
        .unwrap()
        .config;
    assert_eq!(c.effective_log_retention_ms(), 120_000);
    let c = load("log.retention.minutes=2\nlog.retention.ms=5")
        .unwrap()
        .config;
    assert_eq!(c.effective_log_retention_ms(), 5);
    let c = load("log.roll.hours=2").unwrap().config;
    assert_eq!(c.effective_log_roll_ms(), 7_200_000);
    let c = load("log.roll.hours=2\nlog.roll.ms=10").unwrap().config;
    assert_eq!(c.effective_log_roll_ms(), 10);
    let c = load("log.dir=/x").unwrap().config;
    assert_eq!(c.effective_log_dirs(), vec!["/x".to_string()]);
}

#[test]
fn invalid_values_name_the_key_and_value() {
    let rows = [
        ("num.partitions=abc", "num.partitions", "abc"),
        ("num.partitions=0", "num.partitions", "0"),
        (
            "zookeeper.max.in.flight.requests=0",
            "zookeeper.max.in.flight.requests",
            "0",
        ),
        (
            "auto.create.topics.enable=yes",
            "auto.create.topics.enable",
            "yes",
        ),
        (
            "listeners=PLAINTEXT://h:9092,SASL_SSL://h:9093",
            "sasl.enabled.mechanisms",
            "GSSAPI",
        ),
        (
            "listeners=PLAINTEXT://h:99999",
            "listeners",
            "PLAINTEXT://h:99999",
        ),
        ("shardlog.cpus=3-1", "shardlog.cpus", "3-1"),
        ("shardlog.shards=0", "shardlog.shards", "0"),
        (
            "queued.max.request.bytes=1000",
            "queued.max.request.bytes",
            "1000",
        ),
    ];
    for (text, key, value) in rows {
        match load(text) {
            Err(ConfigError::InvalidValue {
                key: k, value: v, ..
            }) => {
                assert_eq!((k.as_str(), v.as_str()), (key, value), "{text}");
            }
            other => panic!("{text}: expected InvalidValue, got {other:?}"),
        }
    }
}

#[test]
fn unknown_keys_warn_and_replaced_kafka_keys_do_not() {
    let loaded = load("no.such.key=1\nnum.io.threads=8\nbroker_id=5").unwrap();
    assert_eq!(loaded.warnings.len(), 2);
    assert!(loaded.warnings[0].contains("no.such.key"));
    assert!(loaded.warnings[1].contains("broker_id"));
    assert_eq!(loaded.config.broker_id, -1);
}

#[test]
fn overrides_win_over_the_file() {
    let overrides = vec![parse_override("broker.id=9").unwrap()];
    let c = ServerConfig::from_properties("broker.id=1", &overrides)
        .unwrap()
        .config;
    assert_eq!(c.broker_id, 9);
    assert!(parse_override("novalue").is_err());
}

#[test]
fn listeners_and_advertised_listeners_parse() {
    let c = load("listeners=PLAINTEXT://:9092\nadvertised.listeners=PLAINTEXT://[::1]:19092")
        .unwrap()
        .config;
    assert_eq!(c.listeners[0].host, "");
    let adv = &c.effective_advertised_listeners()[0];
    assert_eq!((adv.host.as_str(), adv.port), ("::1", 19092));
}

#[test]
fn shards_and_cpus() {
    let c = load("shardlog.cpus=2-3,6").unwrap().config;
    assert_eq!(c.shardlog_cpus, Some(CpuList(vec![2, 3, 6])));
    assert_eq!(c.data_shards(8), 3);
    assert_eq!(c.cpu_for_shard(2, &[0, 1]), 6);
    let c = load("").unwrap().config;
    assert_eq!(c.data_shards(4), 4);
    assert_eq!(c.cpu_for_shard(5, &[0, 1, 2, 3]), 1);
    assert_eq!(c.cpu_for_shard(1, &[4, 7]), 7);
}

#[test]
fn the_sample_config_loads_without_warnings() {
    let loaded = load(SAMPLE_SERVER_PROPERTIES).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(loaded.config.broker_id, 0);
    assert_eq!(loaded.config.listeners[0].port, 9092);
}
