//! Consumer groups in a three-broker ZooKeeper-mode cluster (issue 21's
//! cluster test): `__consumer_offsets` is replicated (RF=3,
//! min.insync.replicas=2), a confluent-kafka group member commits, the
//! broker leading the group's offsets partition (its coordinator) is
//! killed with kill -9, and a new member of the group finds the new
//! coordinator (the partition's new leader, which loads it), is given the
//! committed offsets and resumes exactly there: every record after the
//! commits is read, none before them.
//!
//! The same scenario runs against Apache Kafka 3.9 (three JVMs):
//!   cargo test --test cluster_groups -- --ignored kafka_

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod java_support;
#[path = "common/replica_cluster.rs"]
mod replica_cluster;

use std::collections::BTreeMap;

use common::run_py_script;
use replica_cluster::{ReplCluster, System};
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
    let mut c = ReplCluster::start(
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
#[ignore = "Kafka 3.9 reference (three JVMs): cargo test --test cluster_groups -- --ignored kafka_"]
fn kafka_a_group_resumes_at_its_commits_after_its_coordinators_broker_is_killed() {
    coordinator_failover(System::Kafka);
}
