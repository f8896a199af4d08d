//! Dynamic topic config through ZooKeeper (issue 22): IncrementalAlterConfigs
//! (confluent-kafka) writes `/config/topics/<t>` and a `/config/changes`
//! notification; every broker of a three-broker cluster (real ZooKeeper,
//! tests/common/replica_cluster.rs) follows the notification and applies
//! the new `retention.ms` to its replica without a restart (old segments
//! deleted on leader and followers); DescribeConfigs reports
//! DYNAMIC_TOPIC_CONFIG; a broker restarted afterwards still applies it.
//! Every wait has a deadline; the retention check runs every second
//! (`log.retention.check.interval.ms`), segments roll at 4 KiB.
//!
//! A topic config change is applied to the open logs (Kafka's
//! `LogManager.updateTopicConfig`): with a follower replicating and a
//! producer writing through repeated changes, no log closes, the follower
//! never gets an error, and a lowered `max.message.bytes` takes effect.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::cluster::read;
use common::replica_cluster::{ReplCluster, System};

const TOPIC: &str = "dyncfg";

fn admin(args: &[&str]) -> serde_json::Value {
    common::cluster_admin(args)
}

/// The `.log` segment files of `topic`'s partition 0 on broker `id`.
fn segments_of(c: &mut ReplCluster, topic: &str, id: i32) -> usize {
    let dir = c.node(id).log_dir().join(format!("{topic}-0"));
    std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
                .count()
        })
        .unwrap_or(0)
}

/// Eight producer runs of 150 records: at least eight batches of ~2.7 KiB,
/// so eight segments of 4 KiB (two batches never share one). One producer
/// run alone may send everything in one batch, and a batch larger than
/// `segment.bytes` is refused (RECORD_LIST_TOO_LARGE), as in Kafka.
fn produce(c: &ReplCluster) {
    for _ in 0..8 {
        let r = admin(&["produce", &c.bootstrap(), TOPIC, "150", "all"]);
        assert_eq!(r["delivered"], 150, "{r}");
    }
}

fn wait_segments(c: &mut ReplCluster, what: &str, pred: impl Fn(usize) -> bool) {
    wait_segments_of(c, TOPIC, what, pred);
}

fn wait_segments_of(c: &mut ReplCluster, topic: &str, what: &str, pred: impl Fn(usize) -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    loop {
        let counts: Vec<usize> = (1..=3).map(|id| segments_of(c, topic, id)).collect();
        if counts.iter().all(|n| pred(*n)) {
            return;
        }
        if std::time::Instant::now() >= deadline {
            let dir = c.node(1).log_dir().join(format!("{topic}-0"));
            let files: Vec<(String, u64)> = std::fs::read_dir(&dir)
                .map(|rd| {
                    rd.filter_map(Result::ok)
                        .map(|e| {
                            let len = e.metadata().map_or(0, |m| m.len());
                            (e.file_name().to_string_lossy().to_string(), len)
                        })
                        .collect()
                })
                .unwrap_or_default();
            panic!(
                "timed out after 90 s waiting for {what}: segments per broker {counts:?}; \
                 broker 1's partition files {files:?}"
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn a_topic_retention_change_reaches_every_broker_without_a_restart() {
    retention_change(System::Shardlog);
}

/// The same against Apache Kafka 3.9 in ZooKeeper mode, the reference
/// (three JVMs on 2 cores): `cargo test --test cluster_dynamic_config -- --ignored`.
#[test]
#[ignore = "Kafka 3.9 reference: three JVMs; run with --ignored"]
fn kafka_a_topic_retention_change_reaches_every_broker() {
    retention_change(System::Kafka);
}

fn retention_change(system: System) {
    let mut c = ReplCluster::start(
        system,
        3,
        &[
            "zookeeper.session.timeout.ms=3000",
            "log.retention.check.interval.ms=1000",
            "log.segment.delete.delay.ms=0",
            "controlled.shutdown.retry.backoff.ms=500",
        ],
    );
    c.create_topic(TOPIC, 1, 3, &["segment.bytes=4096"]);
    produce(&c);
    wait_segments(&mut c, "several segments on every replica", |n| n >= 3);
    // A day's retention (the default is a week): nothing goes yet.
    admin(&[
        "alter_config",
        &c.bootstrap(),
        TOPIC,
        "retention.ms=86400000",
    ]);
    let d = admin(&["describe_config", &c.bootstrap(), TOPIC, "retention.ms"]);
    assert_eq!(d["value"], "86400000", "{d}");
    assert_eq!(d["source"], "DYNAMIC_TOPIC_CONFIG", "{d}");
    let path = format!("/config/topics/{TOPIC}");
    let stored = read(&c.zk.address(), &[&path])[&path]
        .clone()
        .expect("config znode")
        .0;
    assert!(stored.contains("\"retention.ms\":\"86400000\""), "{stored}");
    // One second: every replica drops its closed segments, only the active
    // one stays.
    admin(&["alter_config", &c.bootstrap(), TOPIC, "retention.ms=1000"]);
    wait_segments(&mut c, "every replica down to its active segment", |n| {
        n == 1
    });
    // A follower restarted afterwards reads the override at start-up: new
    // segments it gets go again.
    let leader = c.state(TOPIC, 0).leader;
    let follower = (1..=3).find(|b| *b != leader).unwrap();
    c.node(follower).stop();
    c.restart(follower);
    c.wait_state(
        90,
        "the restarted follower back in the ISR",
        TOPIC,
        0,
        |s| s.isr.len() == 3,
    );
    produce(&c);
    wait_segments(
        &mut c,
        "every replica down to its active segment again",
        |n| n == 1,
    );
}

/// Client quotas through ZooKeeper: Kafka's kafka-configs (AlterClientQuotas
/// to any broker) writes `/config/clients/<c>` in Kafka's format and a
/// `clients/<c>` notification; every broker of the cluster then reports the
/// quota from its own memory (DescribeClientQuotas sent to each broker),
/// so each one enforces it.
#[test]
fn a_client_quota_reaches_every_broker_through_config_changes() {
    use kafka_protocol::messages::describe_client_quotas_request::{
        ComponentData, DescribeClientQuotasRequest,
    };
    use kafka_protocol::protocol::StrBytes;
    let c = ReplCluster::start(System::Shardlog, 3, &["zookeeper.session.timeout.ms=3000"]);
    let mut cmd = common::java::kafka_tool("kafka.admin.ConfigCommand");
    cmd.args([
        "--bootstrap-server",
        &c.bootstrap(),
        "--alter",
        "--add-config",
    ])
    .args(["producer_byte_rate=2048000", "--entity-type", "clients"])
    .args(["--entity-name", "app 1"]);
    let out = common::java::run_ok(&mut cmd, "kafka-configs");
    assert!(String::from_utf8_lossy(&out.stdout).contains("Completed updating config"));
    // Kafka's layout: the sanitized name, string values.
    let path = "/config/clients/app%201";
    let (data, _) = read(&c.zk.address(), &[path])[path]
        .clone()
        .expect("quota znode");
    assert_eq!(
        common::cluster::json(&data),
        serde_json::json!({"version": 1, "config": {"producer_byte_rate": "2048000"}})
    );
    let changes = common::cluster::children(&c.zk.address(), "/config/changes");
    let named = changes.iter().any(|n| {
        let p = format!("/config/changes/{n}");
        read(&c.zk.address(), &[&p])[&p]
            .as_ref()
            .is_some_and(|(d, _)| common::cluster::json(d)["entity_path"] == "clients/app%201")
    });
    assert!(named, "no clients/app%201 notification among {changes:?}");
    let request =
        DescribeClientQuotasRequest::default().with_components(vec![ComponentData::default()
            .with_entity_type(StrBytes::from_static_str("client-id"))
            .with_match_type(0)
            .with_match(Some(StrBytes::from_static_str("app 1")))]);
    for node in &c.nodes {
        common::cluster::wait_for(60, "the quota on every broker", || {
            let mut conn = common::Conn::open_addr(&node.link.address());
            let r = conn.call(1, &request);
            let entries = r.entries.unwrap_or_default();
            (entries.len() == 1 && entries[0].values[0].value == 2_048_000.0).then_some(())
        });
    }
}

/// A broker key's (value, source code) as broker `id` describes itself
/// (DescribeConfigs v4 to that broker, BROKER resource named by its id);
/// `None` when the key is not listed.
fn broker_key(c: &ReplCluster, id: i32, key: &str) -> Option<(Option<String>, i8)> {
    use kafka_protocol::messages::describe_configs_request::{
        DescribeConfigsRequest, DescribeConfigsResource,
    };
    use kafka_protocol::protocol::StrBytes;
    let node = c.nodes.iter().find(|n| n.id == id).expect("node");
    let mut conn = common::Conn::open_addr(&node.link.address());
    let request =
        DescribeConfigsRequest::default().with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(4)
            .with_resource_name(StrBytes::from_string(id.to_string()))
            .with_configuration_keys(Some(vec![StrBytes::from_string(key.to_owned())]))]);
    let r = conn.call(4, &request);
    let result = &r.results[0];
    assert_eq!(result.error_code, 0, "{result:?}");
    result
        .configs
        .iter()
        .find(|e| e.name.as_str() == key)
        .map(|e| (e.value.as_ref().map(|v| v.to_string()), e.config_source))
}

/// Wait until every broker in `ids` describes `key` as (value, source).
fn wait_broker_key(c: &ReplCluster, ids: &[i32], key: &str, want: (Option<&str>, i8)) {
    for id in ids {
        common::cluster::wait_for(60, &format!("broker {id}'s {key} = {want:?}"), || {
            let got = broker_key(c, *id, key);
            let got = got.as_ref().map(|(v, s)| (v.as_deref(), *s));
            (got == Some(want)).then_some(())
        });
    }
}

/// kafka-configs (Kafka's ConfigCommand) against the cluster; its output,
/// and whether it succeeded.
fn kafka_configs(c: &ReplCluster, args: &[&str]) -> (bool, String) {
    let mut cmd = common::java::kafka_tool("kafka.admin.ConfigCommand");
    cmd.args(["--bootstrap-server", &c.bootstrap()]).args(args);
    let out = cmd.output().expect("run kafka-configs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Dynamic broker configs through ZooKeeper (issue 22), with Kafka's own
/// kafka-configs: a cluster-wide `<default>` `log.retention.ms` lands in
/// `/config/brokers/<default>` in Kafka's layout with a notification,
/// every broker applies it to a topic without overrides (old segments
/// deleted, no restart) and describes it as DYNAMIC_DEFAULT_BROKER_CONFIG;
/// a per-broker value wins on that broker only (DYNAMIC_BROKER_CONFIG); a
/// static key is refused as Kafka refuses it; a restarted broker reads
/// the layers again; deleting the default gives DEFAULT_CONFIG back.
#[test]
fn broker_configs_reach_every_broker_per_broker_and_cluster_wide() {
    const DYN: &str = "dynbroker";
    const DEFAULT_CONFIG: i8 = 5;
    const DYNAMIC_BROKER: i8 = 2;
    const DYNAMIC_DEFAULT: i8 = 3;
    let mut c = ReplCluster::start(
        System::Shardlog,
        3,
        &[
            "zookeeper.session.timeout.ms=3000",
            "log.retention.check.interval.ms=1000",
            "log.segment.delete.delay.ms=0",
        ],
    );
    c.create_topic(DYN, 1, 3, &["segment.bytes=4096"]);
    for _ in 0..8 {
        let r = admin(&["produce", &c.bootstrap(), DYN, "150", "all"]);
        assert_eq!(r["delivered"], 150, "{r}");
    }
    wait_segments_of(&mut c, DYN, "several segments on every replica", |n| n >= 3);
    wait_broker_key(&c, &[1, 2, 3], "log.retention.ms", (None, DEFAULT_CONFIG));

    let brokers = |c: &ReplCluster, args: &str| {
        let mut all = vec!["--entity-type", "brokers"];
        all.extend(args.split(' '));
        kafka_configs(c, &all)
    };
    let (ok, out) = brokers(
        &c,
        "--entity-default --alter --add-config log.retention.ms=1000",
    );
    assert!(
        ok && out.contains("Completed updating default config"),
        "{out}"
    );
    let path = "/config/brokers/<default>";
    let (data, _) = read(&c.zk.address(), &[path])[path]
        .clone()
        .expect("default broker config znode");
    assert_eq!(
        common::cluster::json(&data),
        serde_json::json!({"version": 1, "config": {"log.retention.ms": "1000"}})
    );
    let default_1000 = (Some("1000"), DYNAMIC_DEFAULT);
    wait_broker_key(&c, &[1, 2, 3], "log.retention.ms", default_1000);
    wait_segments_of(
        &mut c,
        DYN,
        "every replica down to its active segment",
        |n| n == 1,
    );

    // Broker 2 alone: a day's retention and a replication throttle.
    let (ok, out) = brokers(
        &c,
        "--entity-name 2 --alter --add-config log.retention.ms=86400000,leader.replication.throttled.rate=10000000",
    );
    assert!(
        ok && out.contains("Completed updating config for broker 2"),
        "{out}"
    );
    let day = (Some("86400000"), DYNAMIC_BROKER);
    wait_broker_key(&c, &[2], "log.retention.ms", day);
    let rate = (Some("10000000"), DYNAMIC_BROKER);
    wait_broker_key(&c, &[2], "leader.replication.throttled.rate", rate);
    wait_broker_key(&c, &[1, 3], "log.retention.ms", default_1000);
    // A static key is refused, as Kafka refuses it.
    let (ok, out) = brokers(&c, "--entity-name 1 --alter --add-config num.partitions=3");
    assert!(
        !ok && out.contains("Cannot update these configs dynamically: Set(num.partitions)"),
        "{out}"
    );
    // A restarted broker reads both layers at start-up.
    c.node(3).stop();
    c.restart(3);
    wait_broker_key(&c, &[3], "log.retention.ms", default_1000);
    // Deleting the default: back to Kafka's default where no layer is left.
    let (ok, out) = brokers(
        &c,
        "--entity-default --alter --delete-config log.retention.ms",
    );
    assert!(ok, "{out}");
    wait_broker_key(&c, &[1, 3], "log.retention.ms", (None, DEFAULT_CONFIG));
    wait_broker_key(&c, &[2], "log.retention.ms", day);
}

/// Two brokers (ZooKeeper mode) hosting one partition at replication
/// factor 2, logging at info: five config changes while an acks=all
/// producer writes between them, then `max.message.bytes` lowered. No
/// broker closes a partition log (Kafka reopens nothing for a topic
/// config), the follower's OffsetForLeaderEpoch and Fetch get no error,
/// every record is delivered, and a record above the new limit is refused
/// with MESSAGE_TOO_LARGE while a small one is still accepted.
#[test]
fn topic_config_changes_apply_to_the_open_logs_without_a_reopen() {
    use common::cluster::{children, wait_for};
    use common::{Broker, Conn};
    use kafka_protocol::records::Compression;
    const T: &str = "cfginplace";
    let zk = common::zookeeper::ZkServer::standalone();
    let addr = zk.address();
    let brokers: Vec<Broker> = (1..=2)
        .map(|id| {
            let o = [
                format!("zookeeper.connect={addr}"),
                "zookeeper.session.timeout.ms=3000".into(),
                format!("broker.id={id}"),
                "shardlog.shards=1".into(),
            ];
            let refs: Vec<&str> = o.iter().map(String::as_str).collect();
            Broker::start_logging(common::new_log_dir(), &refs, Some("info"))
        })
        .collect();
    wait_for(20, "two registrations", || {
        (children(&addr, "/brokers/ids").len() == 2).then_some(())
    });
    let boot = brokers[0].bootstrap();
    admin(&["create", &boot, "confluent", T, "1", "2"]);
    let mut conns: Vec<Conn> = brokers.iter().map(Conn::open).collect();
    let leader = wait_for(30, "a leader with both replicas in the ISR", || {
        let m = conns[0].metadata(Some(&[T]));
        let p = m.topics.first()?.partitions.first()?;
        (p.error_code == 0 && p.isr_nodes.len() == 2).then_some(p.leader_id.0)
    });
    let at = brokers.iter().position(|b| b.broker_id == leader).unwrap();
    // What the brokers logged while the topic was created is not about
    // config changes (the follower may fetch before the leader has applied
    // its LeaderAndIsr: UNKNOWN_TOPIC_ID, backed off); only what follows,
    // once both replicas are in the ISR, is checked below.
    for b in &brokers {
        let _ = b.log_lines();
    }
    for i in 0..5 {
        let retention = format!("retention.ms={}", 86_400_000 + i);
        admin(&["alter_config", &boot, T, &retention, "segment.ms=600000"]);
        let r = admin(&["produce", &boot, T, "20", "all"]);
        assert_eq!(r["delivered"], 20, "{r}");
        assert_eq!(r["errors"], serde_json::json!([]), "{r}");
    }
    admin(&["alter_config", &boot, T, "max.message.bytes=2048"]);
    let big = vec![b'x'; 4096];
    let refused = wait_for(30, "the lowered max.message.bytes in force", || {
        let batch = common::encode_batch(&[(None, &big, common::now_ms())], Compression::None);
        let r = conns[at].produce(T, 0, batch, -1);
        (r.error_code != 0).then_some(r.error_code)
    });
    assert_eq!(refused, 10, "MESSAGE_TOO_LARGE");
    let small = common::encode_batch(&[(None, b"small", common::now_ms())], Compression::None);
    assert_eq!(conns[at].produce(T, 0, small, -1).error_code, 0);
    for b in &brokers {
        let lines: Vec<String> = b
            .log_lines()
            .iter()
            .map(|l| common::plain_log_line(l))
            .collect();
        let bad: Vec<&String> = lines
            .iter()
            .filter(|l| {
                l.contains("closed partition logs")
                    || l.contains("OffsetForLeaderEpoch refused")
                    || l.contains("fetch partition error")
            })
            .collect();
        assert!(bad.is_empty(), "broker {}: {bad:#?}", b.broker_id);
    }
}

/// `topic`'s `key` as broker `id` describes it (DescribeConfigs v4 to that
/// broker, TOPIC resource): (value, source), or the resource's error.
fn topic_key(c: &ReplCluster, id: i32, topic: &str, key: &str) -> Result<(String, i8), i16> {
    use kafka_protocol::messages::describe_configs_request::{
        DescribeConfigsRequest, DescribeConfigsResource,
    };
    use kafka_protocol::protocol::StrBytes;
    let node = c.nodes.iter().find(|n| n.id == id).expect("node");
    let mut conn = common::Conn::open_addr(&node.link.address());
    let request =
        DescribeConfigsRequest::default().with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(StrBytes::from_string(topic.to_owned()))
            .with_configuration_keys(Some(vec![StrBytes::from_string(key.to_owned())]))]);
    let r = conn.call(4, &request);
    let result = &r.results[0];
    if result.error_code != 0 {
        return Err(result.error_code);
    }
    let entry = result
        .configs
        .iter()
        .find(|e| e.name.as_str() == key)
        .unwrap_or_else(|| panic!("{key} not described by broker {id}: {result:?}"));
    Ok((
        entry
            .value
            .as_ref()
            .map(|v| v.to_string())
            .unwrap_or_default(),
        entry.config_source,
    ))
}

/// Four brokers, a topic at RF 3 with one partition: one broker hosts no
/// replica of it, and answers DescribeConfigs for it all the same, from
/// the stored overrides (Kafka 3.9's `ConfigHelper.describeConfigs`: any
/// topic `metadataCache.contains`, its `/config/topics/<t>` through the
/// `ZkConfigRepository`), before and after an alteration; kafka-configs
/// bootstrapped on that broker alone describes it too.
#[test]
fn every_broker_describes_a_topics_configs_even_without_a_replica() {
    const TOPIC: &str = "described";
    const DYNAMIC_TOPIC: i8 = 1;
    let c = ReplCluster::start_beyond_rf(System::Shardlog, 3, &[]);
    c.create_topic(TOPIC, 1, 3, &["retention.ms=3600000"]);
    let state = c.state(TOPIC, 0);
    let outsider = (1..=4)
        .find(|id| !state.isr.contains(id))
        .expect("a broker without a replica");
    eprintln!(
        "[broker {outsider} hosts no replica of {TOPIC}: ISR {:?}]",
        state.isr
    );
    let wait_all = |value: &str| {
        for id in 1..=4 {
            common::cluster::wait_for(30, &format!("broker {id} describes {value}"), || {
                match topic_key(&c, id, TOPIC, "retention.ms") {
                    Ok(got) if got == (value.to_owned(), DYNAMIC_TOPIC) => Some(()),
                    Ok(_) => None,
                    Err(e) => panic!(
                        "broker {id} (ISR {:?}): DescribeConfigs error {e}",
                        state.isr
                    ),
                }
            });
        }
    };
    wait_all("3600000");

    let mut cmd = common::java::kafka_tool("kafka.admin.ConfigCommand");
    let only_outsider = c.nodes[outsider as usize - 1].link.address();
    cmd.args(["--bootstrap-server", &only_outsider]).args([
        "--entity-type",
        "topics",
        "--entity-name",
        TOPIC,
        "--alter",
        "--add-config",
        "retention.ms=7200000",
    ]);
    let out = cmd.output().expect("run kafka-configs");
    assert!(out.status.success(), "{out:?}");
    wait_all("7200000");
    let mut cmd = common::java::kafka_tool("kafka.admin.ConfigCommand");
    cmd.args(["--bootstrap-server", &only_outsider]).args([
        "--entity-type",
        "topics",
        "--entity-name",
        TOPIC,
        "--describe",
    ]);
    let out = cmd.output().expect("run kafka-configs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("retention.ms=7200000"),
        "{out:?}"
    );
}
