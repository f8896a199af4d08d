//! The group coordinator's broker keys, each set on a real broker and
//! seen on the wire (Kafka 3.9's `GroupConfig` / `OffsetConfig`, as
//! `KafkaConfig` documents the keys):
//! - `group.max.session.timeout.ms`: a JoinGroup asking for a longer
//!   session gets INVALID_SESSION_TIMEOUT (`GroupCoordinator.handleJoinGroup`);
//! - `group.max.size`: a full group refuses a new member with
//!   GROUP_MAX_SIZE_REACHED (KIP-389, `acceptJoiningMember`);
//! - `offset.metadata.max.bytes`: an OffsetCommit partition whose metadata
//!   is longer gets OFFSET_METADATA_TOO_LARGE, the others are committed
//!   (`GroupMetadataManager.validateOffsetMetadataLength`, and v0's
//!   `commitOffsetsToZookeeper`);
//! - `offsets.topic.segment.bytes`: `__consumer_offsets` is created with
//!   it as its `segment.bytes` (`GroupCoordinator.offsetsTopicConfigs`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use bytes::Bytes;
use common::{Broker, Conn};
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreateTopicsRequest};
use kafka_protocol::messages::describe_configs_request::{
    DescribeConfigsRequest, DescribeConfigsResource,
};
use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_protocol::messages::heartbeat_request::HeartbeatRequest;
use kafka_protocol::messages::join_group_request::{JoinGroupRequest, JoinGroupRequestProtocol};
use kafka_protocol::messages::join_group_response::JoinGroupResponse;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{OffsetFetchRequest, OffsetFetchRequestTopic};
use kafka_protocol::messages::sync_group_request::{SyncGroupRequest, SyncGroupRequestAssignment};
use kafka_protocol::messages::{GroupId, TopicName};
use kafka_protocol::protocol::StrBytes;

const NONE: i16 = 0;
const OFFSET_METADATA_TOO_LARGE: i16 = 12;
const INVALID_SESSION_TIMEOUT: i16 = 26;
const MEMBER_ID_REQUIRED: i16 = 79;
const GROUP_MAX_SIZE_REACHED: i16 = 81;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_owned())
}

/// A broker with `keys` (and no initial rebalance delay), its
/// `__consumer_offsets` created by a FindCoordinator, and a topic `t` of
/// two partitions.
fn start(keys: &[&str]) -> (Broker, Conn) {
    let mut all = vec!["group.initial.rebalance.delay.ms=0"];
    all.extend_from_slice(keys);
    let broker = Broker::start_with(&all);
    let mut conn = Conn::open(&broker);
    let r = conn.call(
        3,
        &FindCoordinatorRequest::default()
            .with_key(s("any"))
            .with_key_type(0),
    );
    assert_eq!(r.error_code, NONE, "{r:?}");
    let create = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(TopicName(s("t")))
            .with_num_partitions(2)
            .with_replication_factor(1)])
        .with_timeout_ms(10_000);
    let r = conn.call(4, &create);
    assert_eq!(r.topics[0].error_code, NONE, "{r:?}");
    (broker, conn)
}

/// JoinGroup v9 of `member` ("" for a new one) with `session_timeout_ms`.
fn join(conn: &mut Conn, group: &str, member: &str, session_timeout_ms: i32) -> JoinGroupResponse {
    let req = JoinGroupRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_session_timeout_ms(session_timeout_ms)
        .with_rebalance_timeout_ms(10_000)
        .with_member_id(s(member))
        .with_protocol_type(s("consumer"))
        .with_protocols(vec![JoinGroupRequestProtocol::default()
            .with_name(s("range"))
            .with_metadata(Bytes::from_static(b"sub"))]);
    conn.call(9, &req)
}

#[test]
fn a_join_above_group_max_session_timeout_ms_is_invalid_session_timeout() {
    let (_broker, mut conn) = start(&["group.max.session.timeout.ms=20000"]);
    // One millisecond over the broker's maximum (the default, 1800000,
    // would take it).
    let r = join(&mut conn, "g", "", 20_001);
    assert_eq!(r.error_code, INVALID_SESSION_TIMEOUT, "{r:?}");
    assert!(r.member_id.is_empty(), "no member id handed out: {r:?}");
    // At the maximum the join proceeds (KIP-394: the new member gets its
    // id first), and the member completes its join.
    let r = join(&mut conn, "g", "", 20_000);
    assert_eq!(r.error_code, MEMBER_ID_REQUIRED, "{r:?}");
    let member = r.member_id.to_string();
    let r = join(&mut conn, "g", &member, 20_000);
    assert_eq!((r.error_code, r.generation_id), (NONE, 1), "{r:?}");
    // A known member asking for too long a session is refused too.
    let r = join(&mut conn, "g", &member, 20_001);
    assert_eq!(r.error_code, INVALID_SESSION_TIMEOUT, "{r:?}");
}

#[test]
fn a_group_at_group_max_size_refuses_another_member() {
    let (_broker, mut conn) = start(&["group.max.size=1"]);
    // The first member joins and the group becomes Stable with it.
    let first = join(&mut conn, "full", "", 10_000);
    assert_eq!(first.error_code, MEMBER_ID_REQUIRED, "{first:?}");
    let member = first.member_id.to_string();
    let j = join(&mut conn, "full", &member, 10_000);
    assert_eq!((j.error_code, j.generation_id), (NONE, 1), "{j:?}");
    let sync = SyncGroupRequest::default()
        .with_group_id(GroupId(s("full")))
        .with_generation_id(1)
        .with_member_id(s(&member))
        .with_protocol_type(Some(s("consumer")))
        .with_protocol_name(Some(s("range")))
        .with_assignments(vec![SyncGroupRequestAssignment::default()
            .with_member_id(s(&member))
            .with_assignment(Bytes::from_static(b"asg"))]);
    assert_eq!(conn.call(5, &sync).error_code, NONE);
    // A second member: the group is full (with the default,
    // Integer.MAX_VALUE, it would get MEMBER_ID_REQUIRED).
    let second = join(&mut conn, "full", "", 10_000);
    assert_eq!(second.error_code, GROUP_MAX_SIZE_REACHED, "{second:?}");
    // The refusal changed nothing: the member's generation stands.
    let hb = HeartbeatRequest::default()
        .with_group_id(GroupId(s("full")))
        .with_generation_id(1)
        .with_member_id(s(&member));
    assert_eq!(conn.call(4, &hb).error_code, NONE);
    // Another group is not limited by this one's members.
    let other = join(&mut conn, "other", "", 10_000);
    assert_eq!(other.error_code, MEMBER_ID_REQUIRED, "{other:?}");
}

/// A simple commit (no generation, OffsetCommit v8) of `t` partitions
/// with (partition, offset, metadata); the error code per partition.
fn commit(conn: &mut Conn, group: &str, parts: &[(i32, i64, &str)]) -> Vec<i16> {
    let req = OffsetCommitRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_generation_id_or_member_epoch(-1)
        .with_member_id(s(""))
        .with_retention_time_ms(-1)
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(TopicName(s("t")))
            .with_partitions(
                parts
                    .iter()
                    .map(|(p, offset, metadata)| {
                        OffsetCommitRequestPartition::default()
                            .with_partition_index(*p)
                            .with_committed_offset(*offset)
                            .with_committed_leader_epoch(-1)
                            .with_committed_metadata(Some(s(metadata)))
                    })
                    .collect(),
            )]);
    let r = conn.call(8, &req);
    r.topics[0]
        .partitions
        .iter()
        .map(|p| p.error_code)
        .collect()
}

/// OffsetFetch v7 of `t` 0 and 1: (offset, metadata) each.
fn fetch(conn: &mut Conn, group: &str) -> Vec<(i64, Option<String>)> {
    let req = OffsetFetchRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_topics(Some(vec![OffsetFetchRequestTopic::default()
            .with_name(TopicName(s("t")))
            .with_partition_indexes(vec![0, 1])]));
    let r = conn.call(7, &req);
    r.topics[0]
        .partitions
        .iter()
        .map(|p| {
            (
                p.committed_offset,
                p.metadata.as_ref().map(|m| m.to_string()),
            )
        })
        .collect()
}

/// OffsetCommit v0 (Kafka 4 dropped it: the 3.9 codec) of `t` partitions
/// with (partition, offset, metadata); the error code per partition.
fn commit_v0(conn: &mut Conn, group: &str, parts: &[(i32, i64, &str)]) -> Vec<i16> {
    use kafka_protocol_39::messages::offset_commit_request as c;
    let req = c::OffsetCommitRequest::default()
        .with_group_id(kafka_protocol_39::messages::GroupId(s39(group)))
        .with_topics(vec![c::OffsetCommitRequestTopic::default()
            .with_name(kafka_protocol_39::messages::TopicName(s39("t")))
            .with_partitions(
                parts
                    .iter()
                    .map(|(p, offset, metadata)| {
                        c::OffsetCommitRequestPartition::default()
                            .with_partition_index(*p)
                            .with_committed_offset(*offset)
                            .with_committed_metadata(Some(s39(metadata)))
                    })
                    .collect(),
            )]);
    let r: kafka_protocol_39::messages::OffsetCommitResponse =
        common::call39(&mut conn.stream, 8, 0, &req);
    r.topics[0]
        .partitions
        .iter()
        .map(|p| p.error_code)
        .collect()
}

/// OffsetFetch v0 (the metadata store's offsets) of `t` 0 and 1.
fn fetch_v0(conn: &mut Conn, group: &str) -> Vec<i64> {
    use kafka_protocol_39::messages::offset_fetch_request as f;
    let req = f::OffsetFetchRequest::default()
        .with_group_id(kafka_protocol_39::messages::GroupId(s39(group)))
        .with_topics(Some(vec![f::OffsetFetchRequestTopic::default()
            .with_name(kafka_protocol_39::messages::TopicName(s39("t")))
            .with_partition_indexes(vec![0, 1])]));
    let r: kafka_protocol_39::messages::OffsetFetchResponse =
        common::call39(&mut conn.stream, 9, 0, &req);
    r.topics[0]
        .partitions
        .iter()
        .map(|p| p.committed_offset)
        .collect()
}

fn s39(v: &str) -> kafka_protocol_39::protocol::StrBytes {
    kafka_protocol_39::protocol::StrBytes::from_string(v.to_owned())
}

#[test]
fn metadata_over_offset_metadata_max_bytes_is_refused_for_its_partition_only() {
    let (_broker, mut conn) = start(&["offset.metadata.max.bytes=8"]);
    // The group coordinator's commits (v1+): 8 bytes pass, 9 do not (the
    // default, 4096, would take both).
    assert_eq!(
        commit(&mut conn, "g", &[(0, 5, "12345678"), (1, 6, "123456789")]),
        vec![NONE, OFFSET_METADATA_TOO_LARGE]
    );
    let fetched = fetch(&mut conn, "g");
    assert_eq!(fetched[0], (5, Some("12345678".into())), "{fetched:?}");
    assert_eq!(fetched[1].0, -1, "not committed: {fetched:?}");
    // v0 keeps offsets in the metadata store (ZooKeeper in Kafka) and
    // checks the same limit.
    assert_eq!(
        commit_v0(&mut conn, "old", &[(0, 7, "123456789"), (1, 8, "1234")]),
        vec![OFFSET_METADATA_TOO_LARGE, NONE]
    );
    assert_eq!(fetch_v0(&mut conn, "old"), vec![-1, 8]);
}

#[test]
fn consumer_offsets_is_created_with_offsets_topic_segment_bytes() {
    let (_broker, mut conn) = start(&["offsets.topic.segment.bytes=1048576"]);
    let req =
        DescribeConfigsRequest::default().with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(s("__consumer_offsets"))
            .with_configuration_keys(Some(vec![s("segment.bytes"), s("cleanup.policy")]))]);
    let r = conn.call(1, &req);
    let result = &r.results[0];
    assert_eq!(result.error_code, NONE, "{r:?}");
    let configs: Vec<(String, Option<String>)> = result
        .configs
        .iter()
        .map(|c| (c.name.to_string(), c.value.as_ref().map(|v| v.to_string())))
        .collect();
    assert!(
        configs.contains(&("segment.bytes".into(), Some("1048576".into()))),
        "the topic's own segment.bytes (the default would be 104857600): {configs:?}"
    );
    assert!(
        configs.contains(&("cleanup.policy".into(), Some("compact".into()))),
        "{configs:?}"
    );
}
