//! Consumer groups in a four-broker ZooKeeper-mode cluster (issue 21's
//! cluster test): `__consumer_offsets` is replicated (RF=3,
//! min.insync.replicas=2), a confluent-kafka group member commits, the
//! broker leading the group's offsets partition (its coordinator) is
//! killed with kill -9, and a new member of the group finds the new
//! coordinator (the partition's new leader, which loads it), is given the
//! committed offsets and resumes exactly there: every record after the
//! commits is read, none before them.
//!
//! Old clients' offsets: OffsetCommit v0 / OffsetFetch v0 keep them in
//! ZooKeeper, as Kafka 3.9 does in ZooKeeper mode, apart from the group
//! coordinator's (v1+).
//!
//! Both scenarios run against Apache Kafka 3.9 too:
//!   cargo test --test cluster_groups -- --ignored kafka_

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::net::TcpStream;

use kafka_protocol_39::messages::offset_commit_request::{
    OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol_39::messages::offset_commit_response::OffsetCommitResponse;
use kafka_protocol_39::messages::offset_fetch_request::{
    OffsetFetchRequest, OffsetFetchRequestTopic,
};
use kafka_protocol_39::messages::offset_fetch_response::OffsetFetchResponse;
use kafka_protocol_39::messages::{GroupId, TopicName};
use kafka_protocol_39::protocol::StrBytes;

use common::replica_cluster::{ReplCluster, System};
use common::{call39, run_py_script};
use shardlog::group::partition::coordinator_partition;

const OFFSETS_PARTITIONS: i32 = 6;
const TOPIC: &str = "orders";
const PARTITIONS: i32 = 6;
const RECORDS: i64 = 3000;
const GROUP: &str = "billing";

fn script(args: &[&str]) -> serde_json::Value {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    run_py_script(&["confluent_kafka"], "group_failover.py", &args)
}

fn offsets(v: &serde_json::Value) -> BTreeMap<i32, i64> {
    v.as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .iter()
        .map(|(p, o)| (p.parse().unwrap(), o.as_i64().unwrap()))
        .collect()
}

fn coordinator_failover(system: System) {
    let partitions = format!("offsets.topic.num.partitions={OFFSETS_PARTITIONS}");
    let mut c = ReplCluster::start_beyond_rf(
        system,
        3,
        &[
            "zookeeper.session.timeout.ms=3000",
            "min.insync.replicas=2",
            "default.replication.factor=3",
            &partitions,
        ],
    );
    c.create_topic(TOPIC, PARTITIONS, 3, &[]);
    let boot = c.bootstrap();
    let n = RECORDS.to_string();
    let produced = script(&["produce", &boot, TOPIC, &n]);
    assert_eq!(produced["acked"].as_i64(), Some(RECORDS), "{produced}");

    // A member reads about half and commits it.
    let half = (RECORDS / 2).to_string();
    let first = script(&["consume", &boot, GROUP, TOPIC, &half]);
    let committed = offsets(&first["committed"]);
    let total: i64 = committed.values().sum();
    assert!((RECORDS / 2..RECORDS).contains(&total), "{first}");

    // Its coordinator: the leader of the group's offsets partition.
    let p = coordinator_partition(GROUP, OFFSETS_PARTITIONS);
    let offsets_topic = "__consumer_offsets";
    let before = c.state(offsets_topic, p);
    assert_eq!(before.isr.len(), 3, "offsets partition {p}: {before:?}");
    let victim = before.leader;
    eprintln!("[{system:?} group {GROUP}: coordinator broker {victim} ({offsets_topic}-{p})]");
    c.node(victim).kill9();
    let after = c.wait_state(60, "a new coordinator", offsets_topic, p, |s| {
        s.leader >= 0 && s.leader != victim
    });
    eprintln!("[{system:?} coordinator moved to broker {}]", after.leader);

    // A new member, through the surviving brokers only.
    let survivors: Vec<String> = c
        .nodes
        .iter()
        .filter(|node| node.id != victim)
        .map(|node| node.link.address())
        .collect();
    let resumed = script(&["resume", &survivors.join(","), GROUP, TOPIC, &n]);
    assert_eq!(
        offsets(&resumed["committed"]),
        committed,
        "the new coordinator gives the offsets committed before the kill: {resumed}"
    );
    let first_read = offsets(&resumed["first"]);
    for (part, at) in &first_read {
        let want = committed.get(part).copied().unwrap_or(0);
        assert_eq!(
            *at, want,
            "partition {part} resumed at its commit: {resumed}"
        );
    }
    assert_eq!(
        resumed["read"].as_i64(),
        Some(RECORDS - total),
        "every record after the commits, once: {resumed}"
    );
    c.restart(victim);
}

#[test]
fn a_group_resumes_at_its_commits_after_its_coordinators_broker_is_killed() {
    coordinator_failover(System::Shardlog);
}

#[test]
#[ignore = "Kafka 3.9 reference (four JVMs): cargo test --test cluster_groups -- --ignored kafka_"]
fn kafka_a_group_resumes_at_its_commits_after_its_coordinators_broker_is_killed() {
    coordinator_failover(System::Kafka);
}

// --- v0 offsets in ZooKeeper ---------------------------------------------------

const OFFSET_COMMIT: i16 = 8;
const OFFSET_FETCH: i16 = 9;
const FIND_COORDINATOR: i16 = 10;
const NONE: i16 = 0;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;

fn commit(group: &str, version: i16, parts: &[(&str, i32, i64)]) -> OffsetCommitRequest {
    let mut topics: Vec<OffsetCommitRequestTopic> = Vec::new();
    for (topic, p, offset) in parts {
        let part = OffsetCommitRequestPartition::default()
            .with_partition_index(*p)
            .with_committed_offset(*offset)
            .with_commit_timestamp(-1)
            .with_committed_metadata(Some(StrBytes::from_static_str("old")));
        match topics.last_mut() {
            Some(t) if t.name.0.as_str() == *topic => t.partitions.push(part),
            _ => topics.push(
                OffsetCommitRequestTopic::default()
                    .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                    .with_partitions(vec![part]),
            ),
        }
    }
    let r = OffsetCommitRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_owned())))
        .with_topics(topics);
    if version >= 1 {
        r.with_generation_id_or_member_epoch(-1)
            .with_member_id(StrBytes::from_static_str(""))
    } else {
        r
    }
}

fn commit_errors(r: &OffsetCommitResponse) -> Vec<(String, i32, i16)> {
    r.topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (t.name.0.to_string(), p.partition_index, p.error_code))
        })
        .collect()
}

fn fetch(group: &str, parts: &[(&str, &[i32])]) -> OffsetFetchRequest {
    OffsetFetchRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_owned())))
        .with_topics(Some(
            parts
                .iter()
                .map(|(t, ps)| {
                    OffsetFetchRequestTopic::default()
                        .with_name(TopicName(StrBytes::from_string(t.to_string())))
                        .with_partition_indexes(ps.to_vec())
                })
                .collect(),
        ))
}

/// (topic, partition, offset, error) in answer order.
fn fetched(r: &OffsetFetchResponse) -> Vec<(String, i32, i64, i16)> {
    r.topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| {
                (
                    t.name.0.to_string(),
                    p.partition_index,
                    p.committed_offset,
                    p.error_code,
                )
            })
        })
        .collect()
}

fn v0_offsets_live_in_zookeeper(system: System) {
    let mut c = ReplCluster::start(system, 1, &["offsets.topic.num.partitions=1"]);
    c.create_topic("legacy", 2, 1, &[]);
    let addr = c.nodes[0].link.address();
    let mut stream = TcpStream::connect(&addr).expect("connect");
    let zk = c.zk.address();
    let row = |t: &str, p: i32, o: i64, e: i16| (t.to_owned(), p, o, e);

    // v0: two partitions stored, one of a topic with 2 partitions refused.
    let r: OffsetCommitResponse = call39(
        &mut stream,
        OFFSET_COMMIT,
        0,
        &commit(
            "old-group",
            0,
            &[("legacy", 0, 42), ("legacy", 1, 7), ("legacy", 9, 3)],
        ),
    );
    assert_eq!(
        commit_errors(&r),
        // Kafka's order: the refused partition first, then those stored.
        [
            ("legacy".to_owned(), 9, UNKNOWN_TOPIC_OR_PARTITION),
            ("legacy".to_owned(), 0, NONE),
            ("legacy".to_owned(), 1, NONE),
        ],
        "{system:?}"
    );
    let base = "/consumers/old-group/offsets/legacy";
    let (p0, p1, p9) = (
        format!("{base}/0"),
        format!("{base}/1"),
        format!("{base}/9"),
    );
    let znodes = common::cluster::read(&zk, &[&p0, &p1, &p9]);
    let data = |p: &str| znodes[p].as_ref().map(|(d, _)| d.clone());
    assert_eq!(
        (data(&p0), data(&p1), data(&p9)),
        (Some("42".into()), Some("7".into()), None),
        "{system:?}: the offsets in decimal, as Kafka's ConsumerOffset znode"
    );

    // v0 reads them back; no offset, or no such partition or topic:
    // offset -1 with UNKNOWN_TOPIC_OR_PARTITION.
    let r: OffsetFetchResponse = call39(
        &mut stream,
        OFFSET_FETCH,
        0,
        &fetch("old-group", &[("legacy", &[0, 1, 9]), ("nope", &[0])]),
    );
    assert_eq!(
        fetched(&r),
        [
            row("legacy", 0, 42, NONE),
            row("legacy", 1, 7, NONE),
            row("legacy", 9, -1, UNKNOWN_TOPIC_OR_PARTITION),
            row("nope", 0, -1, UNKNOWN_TOPIC_OR_PARTITION),
        ],
        "{system:?}"
    );
    let r: OffsetFetchResponse = call39(
        &mut stream,
        OFFSET_FETCH,
        0,
        &fetch("other", &[("legacy", &[0])]),
    );
    assert_eq!(
        fetched(&r),
        [row("legacy", 0, -1, UNKNOWN_TOPIC_OR_PARTITION)],
        "{system:?}"
    );

    // A second v0 commit overwrites the znode.
    let r: OffsetCommitResponse = call39(
        &mut stream,
        OFFSET_COMMIT,
        0,
        &commit("old-group", 0, &[("legacy", 0, 43)]),
    );
    assert_eq!(
        commit_errors(&r),
        [("legacy".to_owned(), 0, NONE)],
        "{system:?}"
    );
    let znodes = common::cluster::read(&zk, &[&p0]);
    let (now, stat) = znodes[&p0].clone().expect("znode");
    assert_eq!((now.as_str(), stat.version), ("43", 1), "{system:?}");

    coordinator_keeps_its_own_offsets(&mut stream, system);
    drop(stream);
    c.node(1).stop();
}

/// After v0 committed `legacy` 0 → 43: the coordinator (v1+) has none of
/// the v0 offsets, and its own commits do not reach ZooKeeper's.
fn coordinator_keeps_its_own_offsets(stream: &mut TcpStream, system: System) {
    let row = |t: &str, p: i32, o: i64, e: i16| (t.to_owned(), p, o, e);
    // The coordinator (v1+) keeps its own offsets: it has none of these.
    let coordinator = kafka_protocol_39::messages::FindCoordinatorRequest::default()
        .with_key(StrBytes::from_static_str("old-group"));
    common::cluster::wait_for(60, "a coordinator for old-group", || {
        let r: kafka_protocol_39::messages::FindCoordinatorResponse =
            call39(stream, FIND_COORDINATOR, 0, &coordinator);
        (r.error_code == NONE).then_some(())
    });
    let r: OffsetFetchResponse =
        common::cluster::wait_for(60, "the offsets partition loaded", || {
            let r: OffsetFetchResponse = call39(
                stream,
                OFFSET_FETCH,
                1,
                &fetch("old-group", &[("legacy", &[0])]),
            );
            fetched(&r)
                .iter()
                .all(|(_, _, _, e)| *e == NONE)
                .then_some(r)
        });
    assert_eq!(fetched(&r), [row("legacy", 0, -1, NONE)], "{system:?}");

    // v1 goes to the coordinator; v0 still reads ZooKeeper.
    let r: OffsetCommitResponse = call39(
        stream,
        OFFSET_COMMIT,
        1,
        &commit("old-group", 1, &[("legacy", 0, 11)]),
    );
    assert_eq!(
        commit_errors(&r),
        [("legacy".to_owned(), 0, NONE)],
        "{system:?}"
    );
    let r: OffsetFetchResponse = call39(
        stream,
        OFFSET_FETCH,
        1,
        &fetch("old-group", &[("legacy", &[0])]),
    );
    assert_eq!(fetched(&r), [row("legacy", 0, 11, NONE)], "{system:?}");
    let r: OffsetFetchResponse = call39(
        stream,
        OFFSET_FETCH,
        0,
        &fetch("old-group", &[("legacy", &[0])]),
    );
    assert_eq!(fetched(&r), [row("legacy", 0, 43, NONE)], "{system:?}");
}

#[test]
fn v0_offset_commits_and_fetches_use_zookeeper_as_kafka_does() {
    v0_offsets_live_in_zookeeper(System::Shardlog);
}

#[test]
#[ignore = "Kafka 3.9 reference: cargo test --test cluster_groups -- --ignored kafka_"]
fn kafka_v0_offset_commits_and_fetches_use_zookeeper() {
    v0_offsets_live_in_zookeeper(System::Kafka);
}

// --- more brokers than replicas -------------------------------------------------

const SWEEP_GROUPS: usize = 60;
const NOT_COORDINATOR: i16 = 16;
const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
const COORDINATOR_NOT_AVAILABLE: i16 = 15;

/// FindCoordinator v1 for `group` on `stream`: the named broker, or the error.
fn coordinator_of(stream: &mut TcpStream, group: &str) -> Result<i32, i16> {
    let req = kafka_protocol_39::messages::FindCoordinatorRequest::default()
        .with_key(StrBytes::from_string(group.to_owned()));
    let r: kafka_protocol_39::messages::FindCoordinatorResponse =
        call39(stream, FIND_COORDINATOR, 1, &req);
    match r.error_code {
        NONE => Ok(r.node_id.0),
        e => Err(e),
    }
}

/// OffsetCommit v2 (no member, as an admin or a simple consumer) of one
/// offset: the partition's error.
fn commit_one(stream: &mut TcpStream, group: &str, topic: &str, offset: i64) -> i16 {
    let r: OffsetCommitResponse = call39(
        stream,
        OFFSET_COMMIT,
        2,
        &commit(group, 2, &[(topic, 0, offset)]),
    );
    commit_errors(&r)[0].2
}

/// Four brokers, `__consumer_offsets` with 6 partitions at RF 3: each broker
/// hosts 4 or 5 of them, none all 6. Every group id is mapped with the
/// topic's partition count (Kafka's `GroupMetadataManager.partitionFor`
/// over `groupMetadataTopicPartitionCount`) on every broker, so the broker
/// FindCoordinator names (asked of any broker) takes the group's commits,
/// gives them back, and every other broker answers NOT_COORDINATOR.
#[test]
fn every_group_has_exactly_one_coordinator_with_more_brokers_than_replicas() {
    let offsets_partitions = format!("offsets.topic.num.partitions={OFFSETS_PARTITIONS}");
    let c = ReplCluster::start_beyond_rf(System::Shardlog, 3, &[&offsets_partitions]);
    // One partition at RF 3: one broker hosts none of it, and still checks
    // commits against the whole topic (Kafka's `metadataCache.contains`).
    const SWEPT: &str = "swept";
    c.create_topic(SWEPT, 1, 3, &[]);
    let mut streams: BTreeMap<i32, TcpStream> = c
        .nodes
        .iter()
        .map(|n| (n.id, TcpStream::connect(n.link.address()).expect("connect")))
        .collect();
    let ids: Vec<i32> = streams.keys().copied().collect();
    // The first FindCoordinator creates `__consumer_offsets`; wait until
    // every partition is led with its three replicas in sync.
    common::cluster::wait_for(60, "__consumer_offsets created", || {
        let s = streams.get_mut(&1).expect("broker 1");
        coordinator_of(s, "sweep-0").ok()
    });
    let states = common::cluster::wait_for(60, "__consumer_offsets fully in sync", || {
        let s = c.states("__consumer_offsets", OFFSETS_PARTITIONS);
        (s.len() == OFFSETS_PARTITIONS as usize && s.values().all(|st| st.isr.len() == 3))
            .then_some(s)
    });
    for id in &ids {
        let hosted = states.values().filter(|s| s.isr.contains(id)).count();
        eprintln!("[broker {id} hosts {hosted} of {OFFSETS_PARTITIONS} offsets partitions]");
    }

    // Each group asks a different broker for its coordinator and commits
    // there; retriable answers are retried until a shared deadline.
    let groups: Vec<String> = (0..SWEEP_GROUPS).map(|i| format!("sweep-{i}")).collect();
    let offset_of = |i: usize| 1000 + i as i64;
    let mut coordinators: BTreeMap<usize, i32> = BTreeMap::new();
    let mut last_error: BTreeMap<usize, String> = BTreeMap::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while coordinators.len() < SWEEP_GROUPS && std::time::Instant::now() < deadline {
        for (i, group) in groups.iter().enumerate() {
            if coordinators.contains_key(&i) {
                continue;
            }
            let asked = ids[i % ids.len()];
            let named = match coordinator_of(streams.get_mut(&asked).expect("asked"), group) {
                Ok(id) => id,
                Err(e) => {
                    assert_eq!(e, COORDINATOR_NOT_AVAILABLE, "{group} on broker {asked}");
                    last_error.insert(i, format!("FindCoordinator on {asked}: {e}"));
                    continue;
                }
            };
            let stream = streams.get_mut(&named).expect("a broker of the cluster");
            match commit_one(stream, group, SWEPT, offset_of(i)) {
                NONE => {
                    coordinators.insert(i, named);
                }
                e @ (NOT_COORDINATOR | COORDINATOR_LOAD_IN_PROGRESS) => {
                    last_error.insert(i, format!("commit on coordinator {named}: {e}"));
                }
                e => panic!("{group}: commit on coordinator {named}: error {e}"),
            }
        }
        if coordinators.len() < SWEEP_GROUPS {
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }
    let failed: Vec<String> = (0..SWEEP_GROUPS)
        .filter(|i| !coordinators.contains_key(i))
        .map(|i| format!("{} ({})", groups[i], last_error[&i]))
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {SWEEP_GROUPS} groups could not commit on the coordinator FindCoordinator named: {failed:?}",
        failed.len()
    );

    // The coordinator gives the commit back; no other broker takes one.
    for (i, group) in groups.iter().enumerate() {
        let named = coordinators[&i];
        let r: OffsetFetchResponse = call39(
            streams.get_mut(&named).expect("coordinator"),
            OFFSET_FETCH,
            1,
            &fetch(group, &[(SWEPT, &[0])]),
        );
        assert_eq!(
            fetched(&r),
            [(SWEPT.to_owned(), 0, offset_of(i), NONE)],
            "{group} on its coordinator {named}"
        );
        for other in ids.iter().filter(|id| **id != named) {
            let e = commit_one(streams.get_mut(other).expect("broker"), group, SWEPT, 1);
            assert_eq!(
                e, NOT_COORDINATOR,
                "{group} (coordinator {named}): broker {other} took a commit"
            );
        }
    }
}
