//! `offsets.commit.timeout.ms` in a two-broker ZooKeeper-mode cluster:
//! an offset commit is appended to `__consumer_offsets` with acks=all
//! (`offsets.commit.required.acks` -1) and waits for every in-sync
//! replica at most that long (Kafka's `GroupMetadataManager.storeOffsets`
//! hands it to `ReplicaManager.appendRecords` as the timeout). Past it the
//! append's REQUEST_TIMED_OUT reaches the client as it is (`storeOffsets`
//! maps only NOT_ENOUGH_REPLICAS and the like to COORDINATOR_NOT_AVAILABLE;
//! the consumer retries after rediscovering the coordinator).
//!
//! The follower of the offsets partition is kept in the ISR but unable to
//! fetch: the leader's link is a blackhole (the follower reaches the
//! leader through it), while the test talks to the leader on its own port
//! and both brokers keep their ZooKeeper sessions.
//!
//! The same scenario runs against Apache Kafka 3.9:
//!   cargo test --test cluster_offsets_commit_timeout -- --ignored kafka_

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::cluster::wait_for;
use common::replica_cluster::{ReplCluster, System};
use common::Conn;
use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{OffsetFetchRequest, OffsetFetchRequestTopic};
use kafka_protocol::messages::{GroupId, TopicName};
use kafka_protocol::protocol::StrBytes;

const NONE: i16 = 0;
const REQUEST_TIMED_OUT: i16 = 7;
const GROUP: &str = "slow-commits";
const TOPIC: &str = "t";
/// `offsets.commit.timeout.ms`, above its default (5000): a commit that
/// gave up sooner did not wait for this key.
const COMMIT_TIMEOUT: Duration = Duration::from_millis(8000);

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_owned())
}

/// A simple commit (no generation) of `t` 0 at `offset`; its error code.
fn commit(conn: &mut Conn, offset: i64) -> i16 {
    let req = OffsetCommitRequest::default()
        .with_group_id(GroupId(s(GROUP)))
        .with_generation_id_or_member_epoch(-1)
        .with_member_id(s(""))
        .with_retention_time_ms(-1)
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(TopicName(s(TOPIC)))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(offset)
                .with_committed_leader_epoch(-1)])]);
    conn.call(8, &req).topics[0].partitions[0].error_code
}

fn committed(conn: &mut Conn) -> i64 {
    let req = OffsetFetchRequest::default()
        .with_group_id(GroupId(s(GROUP)))
        .with_topics(Some(vec![OffsetFetchRequestTopic::default()
            .with_name(TopicName(s(TOPIC)))
            .with_partition_indexes(vec![0])]));
    conn.call(7, &req).topics[0].partitions[0].committed_offset
}

fn a_commit_waits_offsets_commit_timeout_ms_for_the_replicas(system: System) {
    let timeout = format!("offsets.commit.timeout.ms={}", COMMIT_TIMEOUT.as_millis());
    let mut c = ReplCluster::start(
        system,
        2,
        &[
            "offsets.topic.num.partitions=1",
            "offsets.topic.replication.factor=2",
            &timeout,
        ],
    );
    c.create_topic(TOPIC, 1, 2, &[]);
    // FindCoordinator creates __consumer_offsets; its one partition's
    // leader coordinates the group.
    let mut conn = Conn::open_addr(&c.nodes[0].address());
    wait_for(60, "a coordinator", || {
        let req = FindCoordinatorRequest::default()
            .with_key(s(GROUP))
            .with_key_type(0);
        (conn.call(3, &req).error_code == NONE).then_some(())
    });
    let st = c.wait_state(
        60,
        "both replicas in the ISR",
        "__consumer_offsets",
        0,
        |s| s.leader >= 0 && s.isr.len() == 2,
    );
    let leader = st.leader;
    let port = c.node(leader).real_port();
    let mut direct = Conn::open_addr(&format!("127.0.0.1:{port}"));
    // Both replicas fetching: the commit is acknowledged (once the
    // partition is loaded).
    wait_for(60, "a first acknowledged commit", || {
        (commit(&mut direct, 1) == NONE).then_some(())
    });
    assert_eq!(committed(&mut direct), 1, "{system:?}");

    // The follower can no longer fetch; it stays in the ISR
    // (replica.lag.time.max.ms, 30 s, is far off).
    c.node(leader).isolate_kafka_port();
    let started = Instant::now();
    let code = commit(&mut direct, 2);
    let waited = started.elapsed();
    eprintln!("[{system:?}: the commit answered {code} after {waited:?}]");
    assert_eq!(
        code, REQUEST_TIMED_OUT,
        "{system:?}: the commit's wait for the follower timed out"
    );
    assert!(
        waited >= COMMIT_TIMEOUT,
        "{system:?}: answered after {waited:?}, before offsets.commit.timeout.ms"
    );
    assert_eq!(
        c.state("__consumer_offsets", 0).isr.len(),
        2,
        "{system:?}: the follower stayed in the ISR throughout"
    );

    // Healed: commits are acknowledged again.
    c.node(leader).heal();
    wait_for(60, "a commit acknowledged after the heal", || {
        (commit(&mut direct, 3) == NONE).then_some(())
    });
    assert_eq!(committed(&mut direct), 3, "{system:?}");
}

#[test]
fn a_commit_waits_offsets_commit_timeout_ms_then_request_timed_out() {
    a_commit_waits_offsets_commit_timeout_ms_for_the_replicas(System::Shardlog);
}

#[test]
#[ignore = "Kafka 3.9 reference (two JVMs): cargo test --test cluster_offsets_commit_timeout -- --ignored kafka_"]
fn kafka_a_commit_waits_offsets_commit_timeout_ms_then_request_timed_out() {
    a_commit_waits_offsets_commit_timeout_ms_for_the_replicas(System::Kafka);
}
