//! The group APIs on the wire, version by version, and bad input: every
//! version of JoinGroup (v0–v9) runs a whole generation with the matching
//! SyncGroup / Heartbeat / OffsetCommit / OffsetFetch / DescribeGroups /
//! ListGroups / LeaveGroup versions; client mistakes get Kafka's error and
//! change nothing else.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use bytes::Bytes;
use common::{Broker, Conn};
use kafka_protocol::messages::describe_groups_request::DescribeGroupsRequest;
use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_protocol::messages::heartbeat_request::HeartbeatRequest;
use kafka_protocol::messages::join_group_request::{JoinGroupRequest, JoinGroupRequestProtocol};
use kafka_protocol::messages::join_group_response::JoinGroupResponse;
use kafka_protocol::messages::leave_group_request::{LeaveGroupRequest, MemberIdentity};
use kafka_protocol::messages::list_groups_request::ListGroupsRequest;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::sync_group_request::{SyncGroupRequest, SyncGroupRequestAssignment};
use kafka_protocol::messages::{GroupId, TopicName};
use kafka_protocol::protocol::StrBytes;

const NONE: i16 = 0;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const ILLEGAL_GENERATION: i16 = 22;
const UNKNOWN_MEMBER_ID: i16 = 25;
const INVALID_SESSION_TIMEOUT: i16 = 26;
const REBALANCE_IN_PROGRESS: i16 = 27;
const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;
const UNKNOWN_SERVER_ERROR: i16 = -1;
const MEMBER_ID_REQUIRED: i16 = 79;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_owned())
}

fn start() -> (Broker, Conn) {
    let broker = Broker::start_with(&["group.initial.rebalance.delay.ms=0", "num.partitions=2"]);
    let mut conn = Conn::open(&broker);
    // Creates __consumer_offsets (and answers this broker).
    let r = conn.call(
        3,
        &FindCoordinatorRequest::default()
            .with_key(s("any"))
            .with_key_type(0),
    );
    assert_eq!(r.error_code, NONE, "{r:?}");
    // A topic to commit offsets for.
    let create = kafka_protocol::messages::create_topics_request::CreateTopicsRequest::default()
        .with_topics(vec![
            kafka_protocol::messages::create_topics_request::CreatableTopic::default()
                .with_name(TopicName(s("t")))
                .with_num_partitions(2)
                .with_replication_factor(1),
        ])
        .with_timeout_ms(10_000);
    let r = conn.call(4, &create);
    assert_eq!(r.topics[0].error_code, NONE, "{r:?}");
    (broker, conn)
}

fn join(conn: &mut Conn, v: i16, group: &str, member: &str, metadata: Bytes) -> JoinGroupResponse {
    let req = JoinGroupRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(if v >= 1 { 10_000 } else { -1 })
        .with_member_id(s(member))
        .with_protocol_type(s("consumer"))
        .with_protocols(vec![JoinGroupRequestProtocol::default()
            .with_name(s("range"))
            .with_metadata(metadata)]);
    conn.call(v, &req)
}

/// Join as a new member at version `v` (MEMBER_ID_REQUIRED first from v4).
fn join_new(conn: &mut Conn, v: i16, group: &str, metadata: Bytes) -> JoinGroupResponse {
    let first = join(conn, v, group, "", metadata.clone());
    if v < 4 {
        return first;
    }
    assert_eq!(first.error_code, MEMBER_ID_REQUIRED, "v{v}: {first:?}");
    assert!(!first.member_id.is_empty());
    join(conn, v, group, first.member_id.as_str(), metadata)
}

fn sync(
    conn: &mut Conn,
    v: i16,
    group: &str,
    generation: i32,
    member: &str,
    assignment: &[u8],
) -> (i16, Bytes) {
    let mut req = SyncGroupRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_generation_id(generation)
        .with_member_id(s(member))
        .with_assignments(vec![SyncGroupRequestAssignment::default()
            .with_member_id(s(member))
            .with_assignment(Bytes::copy_from_slice(assignment))]);
    if v >= 5 {
        req = req
            .with_protocol_type(Some(s("consumer")))
            .with_protocol_name(Some(s("range")));
    }
    let r = conn.call(v, &req);
    (r.error_code, r.assignment)
}

fn heartbeat(conn: &mut Conn, v: i16, group: &str, generation: i32, member: &str) -> i16 {
    let req = HeartbeatRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_generation_id(generation)
        .with_member_id(s(member));
    conn.call(v, &req).error_code
}

#[allow(clippy::too_many_arguments)]
fn commit(
    conn: &mut Conn,
    v: i16,
    group: &str,
    generation: i32,
    member: &str,
    topic: &str,
    partition: i32,
    offset: i64,
) -> i16 {
    let req = OffsetCommitRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_generation_id_or_member_epoch(generation)
        .with_member_id(s(member))
        .with_retention_time_ms(-1)
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(TopicName(s(topic)))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(partition)
                .with_committed_offset(offset)
                .with_committed_leader_epoch(-1)
                .with_committed_metadata(Some(s("meta")))])]);
    let r = conn.call(v, &req);
    r.topics[0].partitions[0].error_code
}

/// (error, offset) of one committed partition.
fn fetch(conn: &mut Conn, v: i16, group: &str, topic: &str, partition: i32) -> (i16, i64) {
    if v >= 8 {
        let req =
            OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
                .with_group_id(GroupId(s(group)))
                .with_topics(Some(vec![OffsetFetchRequestTopics::default()
                    .with_name(TopicName(s(topic)))
                    .with_partition_indexes(vec![partition])]))]);
        let r = conn.call(v, &req);
        let g = &r.groups[0];
        let p = &g.topics[0].partitions[0];
        (g.error_code.max(p.error_code), p.committed_offset)
    } else {
        let req = OffsetFetchRequest::default()
            .with_group_id(GroupId(s(group)))
            .with_topics(Some(vec![OffsetFetchRequestTopic::default()
                .with_name(TopicName(s(topic)))
                .with_partition_indexes(vec![partition])]));
        let r = conn.call(v, &req);
        let p = &r.topics[0].partitions[0];
        (r.error_code.max(p.error_code), p.committed_offset)
    }
}

fn describe(conn: &mut Conn, v: i16, group: &str) -> (String, usize) {
    let r = conn.call(
        v,
        &DescribeGroupsRequest::default().with_groups(vec![GroupId(s(group))]),
    );
    let g = &r.groups[0];
    assert_eq!(g.error_code, NONE, "{g:?}");
    (g.group_state.to_string(), g.members.len())
}

#[test]
fn every_join_group_version_runs_a_whole_generation() {
    let (_broker, mut conn) = start();
    for v in 0..=9i16 {
        let group = format!("gv{v}");
        let j = join_new(&mut conn, v, &group, Bytes::from_static(b"sub"));
        assert_eq!(j.error_code, NONE, "join v{v}: {j:?}");
        assert_eq!(j.generation_id, 1, "v{v}");
        assert_eq!(j.leader, j.member_id, "the only member leads (v{v})");
        assert_eq!(j.members.len(), 1, "v{v}");
        assert_eq!(j.members[0].metadata.as_ref(), b"sub");
        let member = j.member_id.to_string();
        let (e, a) = sync(&mut conn, v.min(5), &group, 1, &member, b"asg");
        assert_eq!((e, a.as_ref()), (NONE, &b"asg"[..]), "sync v{}", v.min(5));
        assert_eq!(
            heartbeat(&mut conn, v.min(4), &group, 1, &member),
            NONE,
            "heartbeat"
        );
        let cv = v.clamp(2, 9);
        assert_eq!(
            commit(&mut conn, cv, &group, 1, &member, "t", 1, 40 + i64::from(v)),
            NONE,
            "commit v{cv}"
        );
        let fv = v.clamp(1, 9);
        assert_eq!(
            fetch(&mut conn, fv, &group, "t", 1),
            (NONE, 40 + i64::from(v)),
            "fetch v{fv}"
        );
        assert_eq!(
            describe(&mut conn, v.min(5), &group),
            ("Stable".into(), 1),
            "describe"
        );
        let listed = conn.call(v.min(5), &ListGroupsRequest::default());
        assert_eq!(listed.error_code, NONE);
        assert!(
            listed.groups.iter().any(|g| g.group_id.as_str() == group),
            "list v{}: {listed:?}",
            v.min(5)
        );
        let lv = v.min(5);
        let leave = if lv >= 3 {
            LeaveGroupRequest::default()
                .with_group_id(GroupId(s(&group)))
                .with_members(vec![MemberIdentity::default().with_member_id(s(&member))])
        } else {
            LeaveGroupRequest::default()
                .with_group_id(GroupId(s(&group)))
                .with_member_id(s(&member))
        };
        let r = conn.call(lv, &leave);
        assert_eq!(r.error_code, NONE, "leave v{lv}: {r:?}");
        // The rebalance without members ends at once: Empty, offsets kept.
        assert_eq!(
            describe(&mut conn, v.min(5), &group),
            ("Empty".into(), 0),
            "after leave"
        );
        assert_eq!(fetch(&mut conn, fv, &group, "t", 1).1, 40 + i64::from(v));
    }
}

#[test]
fn client_mistakes_get_kafkas_errors_and_change_nothing() {
    let (_broker, mut conn) = start();
    let j = join_new(&mut conn, 9, "bad", Bytes::from_static(b"sub"));
    let member = j.member_id.to_string();
    assert_eq!(sync(&mut conn, 5, "bad", 1, &member, b"asg").0, NONE);
    // Wrong generation.
    assert_eq!(
        sync(&mut conn, 5, "bad", 7, &member, b"x").0,
        ILLEGAL_GENERATION
    );
    assert_eq!(
        heartbeat(&mut conn, 4, "bad", 7, &member),
        ILLEGAL_GENERATION
    );
    assert_eq!(
        commit(&mut conn, 9, "bad", 7, &member, "t", 0, 5),
        ILLEGAL_GENERATION
    );
    // Unknown member.
    assert_eq!(
        heartbeat(&mut conn, 4, "bad", 1, "nobody"),
        UNKNOWN_MEMBER_ID
    );
    assert_eq!(
        commit(&mut conn, 9, "bad", 1, "nobody", "t", 0, 5),
        UNKNOWN_MEMBER_ID
    );
    // A partition or topic that does not exist.
    assert_eq!(
        commit(&mut conn, 9, "bad", 1, &member, "t", 99, 5),
        UNKNOWN_TOPIC_OR_PARTITION
    );
    assert_eq!(
        commit(&mut conn, 9, "bad", 1, &member, "missing", 0, 5),
        UNKNOWN_TOPIC_OR_PARTITION
    );
    // Session timeout outside group.{min,max}.session.timeout.ms.
    let r = conn.call(
        9,
        &JoinGroupRequest::default()
            .with_group_id(GroupId(s("bad")))
            .with_session_timeout_ms(1)
            .with_rebalance_timeout_ms(1000)
            .with_member_id(s(&member))
            .with_protocol_type(s("consumer"))
            .with_protocols(vec![
                JoinGroupRequestProtocol::default().with_name(s("range"))
            ]),
    );
    assert_eq!(r.error_code, INVALID_SESSION_TIMEOUT);
    // A protocol no member speaks.
    let r = conn.call(
        9,
        &JoinGroupRequest::default()
            .with_group_id(GroupId(s("bad")))
            .with_session_timeout_ms(10_000)
            .with_rebalance_timeout_ms(1000)
            .with_member_id(s(""))
            .with_protocol_type(s("consumer"))
            .with_protocols(vec![
                JoinGroupRequestProtocol::default().with_name(s("roundrobin"))
            ]),
    );
    assert_eq!(r.error_code, INCONSISTENT_GROUP_PROTOCOL);
    // Nothing changed: the same generation, member and commits.
    assert_eq!(describe(&mut conn, 5, "bad"), ("Stable".into(), 1));
    assert_eq!(heartbeat(&mut conn, 4, "bad", 1, &member), NONE);
    assert_eq!(fetch(&mut conn, 9, "bad", "t", 0), (NONE, -1));
    assert_eq!(fetch(&mut conn, 9, "bad", "t", 99), (NONE, -1));
}

#[test]
fn oversize_member_metadata_fails_the_store_not_the_broker() {
    let (_broker, mut conn) = start();
    // Larger than the offsets topic's max.message.bytes (1048588): the
    // group's record cannot be stored. Kafka's storeGroup maps
    // MESSAGE_TOO_LARGE to UNKNOWN_SERVER_ERROR for the SyncGroup, and the
    // group rebalances.
    let big = Bytes::from(vec![7u8; 1_200_000]);
    let j = join_new(&mut conn, 9, "huge", big);
    assert_eq!(j.error_code, NONE, "{j:?}");
    let member = j.member_id.to_string();
    assert_eq!(
        sync(&mut conn, 5, "huge", 1, &member, b"asg").0,
        UNKNOWN_SERVER_ERROR
    );
    assert_eq!(
        heartbeat(&mut conn, 4, "huge", 1, &member),
        REBALANCE_IN_PROGRESS
    );
    // Rejoining with small metadata works.
    let j = join(&mut conn, 9, "huge", &member, Bytes::from_static(b"small"));
    assert_eq!(j.error_code, NONE, "{j:?}");
    let (e, a) = sync(&mut conn, 5, "huge", j.generation_id, &member, b"asg");
    assert_eq!((e, a.as_ref()), (NONE, &b"asg"[..]));
}

/// Without ZooKeeper, OffsetCommit v0 / OffsetFetch v0 keep offsets in
/// the embedded metadata store the same way (Kafka 3.9's ZooKeeper-mode
/// paths), and they survive a restart; the coordinator's (v1+) stay apart.
#[test]
fn v0_offsets_live_in_the_embedded_store_across_a_restart() {
    use kafka_protocol_39::messages::offset_commit_request as commit39;
    use kafka_protocol_39::messages::offset_commit_response::OffsetCommitResponse as CommitAnswer;
    use kafka_protocol_39::messages::offset_fetch_request as fetch39;
    use kafka_protocol_39::messages::offset_fetch_response::OffsetFetchResponse as FetchAnswer;
    use kafka_protocol_39::messages::{GroupId as G, TopicName as T};
    use kafka_protocol_39::protocol::StrBytes as S;

    let (broker, _conn) = start();
    let commit = commit39::OffsetCommitRequest::default()
        .with_group_id(G(S::from_static_str("legacy")))
        .with_topics(vec![commit39::OffsetCommitRequestTopic::default()
            .with_name(T(S::from_static_str("t")))
            .with_partitions(vec![
                commit39::OffsetCommitRequestPartition::default()
                    .with_partition_index(1)
                    .with_committed_offset(17),
            ])]);
    let mut stream = broker.connect();
    let r: CommitAnswer = common::call39(&mut stream, 8, 0, &commit);
    assert_eq!(r.topics[0].partitions[0].error_code, NONE, "{r:?}");
    let fetch = fetch39::OffsetFetchRequest::default()
        .with_group_id(G(S::from_static_str("legacy")))
        .with_topics(Some(vec![fetch39::OffsetFetchRequestTopic::default()
            .with_name(T(S::from_static_str("t")))
            .with_partition_indexes(vec![0, 1])]));
    let answer = |stream: &mut std::net::TcpStream, v: i16| {
        let r: FetchAnswer = common::call39(stream, 9, v, &fetch);
        r.topics[0]
            .partitions
            .iter()
            .map(|p| (p.partition_index, p.committed_offset, p.error_code))
            .collect::<Vec<_>>()
    };
    let v0 = [(0, -1, UNKNOWN_TOPIC_OR_PARTITION), (1, 17, NONE)];
    assert_eq!(answer(&mut stream, 0), v0);
    assert_eq!(
        answer(&mut stream, 1),
        [(0, -1, NONE), (1, -1, NONE)],
        "v1 asks the coordinator"
    );
    drop(stream);
    let (_, dir) = broker.stop_keeping_dir();
    let broker = Broker::start_in(
        dir,
        &["group.initial.rebalance.delay.ms=0", "num.partitions=2"],
    );
    let mut stream = broker.connect();
    assert_eq!(answer(&mut stream, 0), v0, "after a restart");
    broker.stop();
}

/// One broker with Kafka's default `offsets.topic.replication.factor=3`
/// (and `transaction.state.log.replication.factor=3`) cannot create the
/// internal topics: FindCoordinator keeps answering
/// COORDINATOR_NOT_AVAILABLE, as Kafka's does, and the broker's log names
/// the config key and the value that would work.
#[test]
fn an_internal_topic_replication_factor_above_the_live_brokers_is_logged_with_its_config_key() {
    const COORDINATOR_NOT_AVAILABLE: i16 = 15;
    let broker = Broker::start_logging(
        common::new_log_dir(),
        &[
            "offsets.topic.replication.factor=3",
            "transaction.state.log.replication.factor=3",
        ],
        Some("warn"),
    );
    let mut conn = Conn::open(&broker);
    for (key_type, key) in [(0, "group"), (1, "transactional-id")] {
        let r = conn.call(
            3,
            &FindCoordinatorRequest::default()
                .with_key(s(key))
                .with_key_type(key_type),
        );
        assert_eq!(r.error_code, COORDINATOR_NOT_AVAILABLE, "{r:?}");
    }
    let (_, lines) = broker.stop_collect();
    let lines: Vec<String> = lines.iter().map(|l| common::plain_log_line(l)).collect();
    for (topic, config_key) in [
        ("__consumer_offsets", "offsets.topic.replication.factor"),
        (
            "__transaction_state",
            "transaction.state.log.replication.factor",
        ),
    ] {
        let want = format!(
            "cannot create {topic}: INVALID_REPLICATION_FACTOR(38): {config_key}=3 but 1 live \
             broker; set it to 1 for a single broker"
        );
        assert!(
            lines.iter().any(|l| l.contains(&want)),
            "no {want:?} in the broker's log:\n{}",
            lines.join("\n")
        );
    }
}
