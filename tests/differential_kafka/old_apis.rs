//! The differential checks of Kafka 3.9's old request versions and the
//! APIs added with them (FORMATS.md §9–§10, KIP-584, KIP-664): the whole
//! ApiVersions table and its feature tags, ListOffsets v0, CreateTopics
//! v0–v1, DeleteTopics v0, DescribeConfigs v0, DescribeProducers,
//! DescribeLogDirs v0–v4 and UpdateFeatures, on the main test's brokers and topics (`diff` holds
//! three records, `diff-idem` one idempotent batch). They keep their own
//! list of known differences so the main list stays the main checks'.

use std::collections::BTreeMap;

use kafka_protocol::messages::describe_producers_request::TopicRequest;
use kafka_protocol::messages::update_features_request::FeatureUpdateKey;
use kafka_protocol::messages::{
    ApiVersionsRequest, DescribeProducersRequest, DescribeProducersResponse, UpdateFeaturesRequest,
    UpdateFeaturesResponse,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol_39::messages as m39;
use kafka_protocol_39::protocol::StrBytes as Str39;

use super::common::{call39, topic_name};
use super::{Diffs, Pair};

/// Differences that stay, each with why (keys: the check names below).
const KNOWN: &[(&str, &str)] = &[
    (
        "api_versions.api_3",
        "Metadata: shardlog serves v13 too (Kafka 4's REBOOTSTRAP_REQUIRED answer, KIP-1102); \
         Kafka 3.9 stops at v12. Clients pick the highest common version",
    ),
    (
        "api_versions.api_2",
        "ListOffsets v9 (KIP-1005: earliest-local / latest-tiered timestamps) is tiered \
         storage, which shardlog does not have",
    ),
    (
        "api_versions.api_38",
        "CreateDelegationToken: shardlog has no delegation tokens",
    ),
    (
        "api_versions.api_39",
        "RenewDelegationToken: shardlog has no delegation tokens",
    ),
    (
        "api_versions.api_40",
        "ExpireDelegationToken: shardlog has no delegation tokens",
    ),
    (
        "api_versions.api_41",
        "DescribeDelegationToken: shardlog has no delegation tokens",
    ),
    (
        "api_versions.api_58",
        "Envelope: only for ZooKeeper→KRaft migration forwarding, which shardlog does not do",
    ),
    (
        "api_versions.api_68",
        "ConsumerGroupHeartbeat (KIP-848): a Kafka 3.9 ZooKeeper-mode broker lists it and \
         answers UNSUPPORTED_VERSION; shardlog does not list it",
    ),
    (
        "api_versions.api_69",
        "ConsumerGroupDescribe (KIP-848): as ConsumerGroupHeartbeat",
    ),
    (
        "describe_configs_v0.message.format.version",
        "not in shardlog's topic config table; deprecated (KIP-724), Kafka 3.9 still lists it",
    ),
    (
        "describe_configs_v0.remote.log.copy.disable",
        "not in shardlog's topic config table: tiered storage (KIP-405/950)",
    ),
    (
        "describe_configs_v0.remote.log.delete.on.disable",
        "not in shardlog's topic config table: tiered storage (KIP-405/950)",
    ),
    (
        "produce_v2_value_past_end",
        "a magic 1 message whose value length runs past its end under a right CRC: Kafka 3.9 answers UNKNOWN_SERVER_ERROR (-1, an uncaught buffer underflow in LegacyRecord), shardlog CORRUPT_MESSAGE (2) as for every other corrupt message (LogValidator's answer to a record that fails ensureValid)",
    ),
];

/// Every check of this module; [`assert_only_known`] judges what differs.
pub fn check_old_apis(p: &mut Pair) -> Diffs {
    let mut d = Diffs::default();
    api_versions(p, &mut d);
    list_offsets_v0(p, &mut d);
    describe_configs_v0(p, &mut d);
    create_and_delete_old_versions(p, &mut d);
    describe_producers(p, &mut d);
    describe_log_dirs(p, &mut d);
    update_features(p, &mut d);
    super::legacy_formats::check_legacy_formats(p, &mut d);
    d
}

pub fn assert_only_known(d: &Diffs) {
    let known: BTreeMap<&str, &str> = KNOWN.iter().copied().collect();
    let mut report = String::new();
    for (name, (ours, theirs)) in &d.0 {
        if !known.contains_key(name.as_str()) {
            report += &format!(
                "\n=== {name}: not in old_apis::KNOWN\n--- shardlog:\n{ours}\n--- Kafka 3.9:\n{theirs}\n"
            );
        }
    }
    for name in known.keys() {
        if !d.0.contains_key(*name) {
            report += &format!("\n=== {name}: listed but no longer differs: remove it\n");
        }
    }
    assert!(
        report.is_empty(),
        "shardlog vs Kafka 3.9 (old APIs):{report}"
    );
}

/// ApiVersions v3: every API's range (by key), the error and the feature
/// tags (KIP-584).
fn api_versions(p: &mut Pair, d: &mut Diffs) {
    let req = ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("shardlog-test"))
        .with_client_software_version(StrBytes::from_static_str("1"));
    let (a, b) = p.call(3, &req);
    let table = |r: &kafka_protocol::messages::ApiVersionsResponse| {
        r.api_keys
            .iter()
            .map(|k| (k.api_key, (k.min_version, k.max_version)))
            .collect::<BTreeMap<i16, (i16, i16)>>()
    };
    let (ta, tb) = (table(&a), table(&b));
    let keys: std::collections::BTreeSet<i16> = ta.keys().chain(tb.keys()).copied().collect();
    for k in keys {
        d.check(&format!("api_versions.api_{k}"), &ta.get(&k), &tb.get(&k));
    }
    let tags = |r: &kafka_protocol::messages::ApiVersionsResponse| {
        (
            r.error_code,
            r.supported_features.clone(),
            r.finalized_features_epoch,
            r.finalized_features.clone(),
            r.zk_migration_ready,
        )
    };
    d.check("api_versions.tags", &tags(&a), &tags(&b));
}

fn call_both<Q, R>(p: &mut Pair, api_key: i16, version: i16, req: &Q) -> (R, R)
where
    Q: kafka_protocol_39::protocol::Encodable,
    R: kafka_protocol_39::protocol::Decodable,
{
    let ours: R = call39(&mut p.shardlog.stream, api_key, version, req);
    let theirs: R = call39(&mut p.kafka.stream, api_key, version, req);
    (ours, theirs)
}

/// ListOffsets v0 (old_style_offsets by segment time): latest with one
/// and several offsets, earliest, a time before any segment, one after
/// every segment, -3 (UNSUPPORTED_VERSION below -2), an unknown
/// partition, and the debugging replica id.
fn list_offsets_v0(p: &mut Pair, d: &mut Diffs) {
    use m39::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    for (name, replica_id, timestamp, max, partition) in [
        ("list_offsets_v0_latest", -1, -1, 1, 0),
        ("list_offsets_v0_latest_many", -1, -1, 10, 0),
        ("list_offsets_v0_earliest", -1, -2, 10, 0),
        ("list_offsets_v0_before_all", -1, 0, 10, 0),
        ("list_offsets_v0_after_all", -1, i64::MAX, 10, 0),
        ("list_offsets_v0_max_timestamp", -1, -3, 1, 0),
        ("list_offsets_v0_unknown_partition", -1, -1, 1, 7),
        ("list_offsets_v0_debug_replica", -2, -1, 10, 0),
    ] {
        let req = m39::ListOffsetsRequest::default()
            .with_replica_id(m39::BrokerId(replica_id))
            .with_topics(vec![ListOffsetsTopic::default()
                .with_name(m39::TopicName(Str39::from_static_str("diff")))
                .with_partitions(vec![ListOffsetsPartition::default()
                    .with_partition_index(partition)
                    .with_timestamp(timestamp)
                    .with_max_num_offsets(max)])]);
        let (a, b): (m39::ListOffsetsResponse, m39::ListOffsetsResponse) = call_both(p, 2, 0, &req);
        d.check(name, &a, &b);
    }
}

/// DescribeConfigs v0 of topic `diff`: per config (value, read-only,
/// is_default, sensitive).
fn describe_configs_v0(p: &mut Pair, d: &mut Diffs) {
    use m39::describe_configs_request::DescribeConfigsResource;
    let req = m39::DescribeConfigsRequest::default().with_resources(vec![
        DescribeConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(Str39::from_static_str("diff"))
            .with_configuration_keys(None),
        DescribeConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(Str39::from_static_str("no-such-topic"))
            .with_configuration_keys(None),
    ]);
    let (mut a, mut b): (m39::DescribeConfigsResponse, m39::DescribeConfigsResponse) =
        call_both(p, 32, 0, &req);
    a.throttle_time_ms = 0;
    b.throttle_time_ms = 0;
    let table = |r: &m39::DescribeConfigsResponse| {
        let mut map = BTreeMap::new();
        for c in &r.results[0].configs {
            map.insert(
                c.name.to_string(),
                format!(
                    "value={:?} read_only={} is_default={} sensitive={}",
                    c.value, c.read_only, c.is_default, c.is_sensitive
                ),
            );
        }
        map
    };
    let (ta, tb) = (table(&a), table(&b));
    let names: std::collections::BTreeSet<&String> = ta.keys().chain(tb.keys()).collect();
    for name in names {
        d.check(
            &format!("describe_configs_v0.{name}"),
            &ta.get(name),
            &tb.get(name),
        );
    }
    let heads = |r: &m39::DescribeConfigsResponse| {
        r.results
            .iter()
            .map(|x| (x.error_code, x.resource_type, x.resource_name.to_string()))
            .collect::<Vec<_>>()
    };
    d.check("describe_configs_v0.results", &heads(&a), &heads(&b));
}

/// CreateTopics v0 and v1 (a new topic each, a duplicate, an invalid
/// name), then DeleteTopics v0 of both and of an unknown topic.
fn create_and_delete_old_versions(p: &mut Pair, d: &mut Diffs) {
    use m39::create_topics_request::CreatableTopic;
    let topic = |name: &str| {
        CreatableTopic::default()
            .with_name(m39::TopicName(Str39::from_string(name.to_owned())))
            .with_num_partitions(1)
            .with_replication_factor(1)
    };
    for (name, version, topics) in [
        ("create_topics_v0", 0, vec![topic("diff-v0"), topic("diff")]),
        (
            "create_topics_v1",
            1,
            vec![topic("diff-v1"), topic("bad/name")],
        ),
    ] {
        let req = m39::CreateTopicsRequest::default()
            .with_timeout_ms(30_000)
            .with_topics(topics);
        let (a, b): (m39::CreateTopicsResponse, m39::CreateTopicsResponse) =
            call_both(p, 19, version, &req);
        d.check(name, &a, &b);
    }
    let req = m39::DeleteTopicsRequest::default()
        .with_timeout_ms(30_000)
        .with_topic_names(
            ["diff-v0", "diff-v1", "no-such-topic"]
                .iter()
                .map(|t| m39::TopicName(Str39::from_static_str(t)))
                .collect(),
        );
    let (a, b): (m39::DeleteTopicsResponse, m39::DeleteTopicsResponse) = call_both(p, 20, 0, &req);
    d.check("delete_topics_v0", &a, &b);
}

/// DescribeProducers of `diff-idem` (one idempotent producer; its id
/// masked), of `diff` (none), of an unknown partition, an unknown topic
/// and an invalid name.
fn describe_producers(p: &mut Pair, d: &mut Diffs) {
    let ask = |name: &str, partitions: Vec<i32>| {
        TopicRequest::default()
            .with_name(topic_name(name))
            .with_partition_indexes(partitions)
    };
    let req = DescribeProducersRequest::default().with_topics(vec![
        ask("diff-idem", vec![0, 7]),
        ask("diff", vec![0]),
        ask("no-such-topic", vec![0]),
        ask("bad/name", vec![0]),
    ]);
    let (mut a, mut b): (DescribeProducersResponse, DescribeProducersResponse) = p.call(0, &req);
    for r in [&mut a, &mut b] {
        r.throttle_time_ms = 0;
        for t in &mut r.topics {
            for part in &mut t.partitions {
                for producer in &mut part.active_producers {
                    producer.producer_id = Default::default();
                }
            }
        }
    }
    d.check("describe_producers", &a, &b);
}

/// DescribeLogDirs v0–v4 (KIP-113; v4 adds the disk's total and usable
/// bytes) of `diff` and `diff-idem` with a partition neither broker has,
/// and of an unknown topic: per dir its error and each replica's size,
/// offset lag and future flag. Masked: the dir's path and the disk's byte
/// counts (each broker's own disk); topics and partitions sorted (Kafka
/// groups them through hash maps).
fn describe_log_dirs(p: &mut Pair, d: &mut Diffs) {
    use m39::describe_log_dirs_request::DescribableLogDirTopic;
    let ask = |name: &'static str, partitions: Vec<i32>| {
        DescribableLogDirTopic::default()
            .with_topic(m39::TopicName(Str39::from_static_str(name)))
            .with_partitions(partitions)
    };
    let req = m39::DescribeLogDirsRequest::default().with_topics(Some(vec![
        ask("diff", vec![0]),
        ask("diff-idem", vec![0, 7]),
        ask("no-such-topic", vec![0]),
    ]));
    for version in 0..=4 {
        let (mut a, mut b): (m39::DescribeLogDirsResponse, m39::DescribeLogDirsResponse) =
            call_both(p, 35, version, &req);
        for r in [&mut a, &mut b] {
            r.throttle_time_ms = 0;
            for dir in &mut r.results {
                dir.log_dir = Default::default();
                dir.total_bytes = 0;
                dir.usable_bytes = 0;
                dir.topics.sort_by(|x, y| x.name.cmp(&y.name));
                for t in &mut dir.topics {
                    t.partitions.sort_by_key(|x| x.partition_index);
                }
            }
        }
        d.check(&format!("describe_log_dirs_v{version}"), &a, &b);
    }
}

/// UpdateFeatures v0 and v1: every update refused per feature.
fn update_features(p: &mut Pair, d: &mut Diffs) {
    let key = |name: &'static str, level: i16| {
        FeatureUpdateKey::default()
            .with_feature(StrBytes::from_static_str(name))
            .with_max_version_level(level)
    };
    let v0 = UpdateFeaturesRequest::default()
        .with_timeout_ms(30_000)
        .with_feature_updates(vec![
            key("group.version", 1),
            key("metadata.version", 0).with_allow_downgrade(true),
        ]);
    let v1 = UpdateFeaturesRequest::default()
        .with_timeout_ms(30_000)
        .with_feature_updates(vec![
            key("group.version", 1).with_upgrade_type(1),
            key("metadata.version", 0).with_upgrade_type(2),
            key("transaction.version", 0).with_upgrade_type(1),
            key("kraft.version", 1).with_upgrade_type(9),
            key("", 1).with_upgrade_type(1),
        ]);
    for (name, version, req) in [("update_features_v0", 0, v0), ("update_features_v1", 1, v1)] {
        let (mut a, mut b): (UpdateFeaturesResponse, UpdateFeaturesResponse) =
            p.call(version, &req);
        for r in [&mut a, &mut b] {
            r.throttle_time_ms = 0;
            // Kafka's ZooKeeper controller answers from a map: order by name.
            r.results.sort_by(|x, y| x.feature.cmp(&y.feature));
        }
        d.check(name, &a, &b);
    }
}
