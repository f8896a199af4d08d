//! Preferred leaders (issue 22): with a real ZooKeeper and three broker
//! processes (tests/common/replica_cluster.rs), a broker stopped and
//! restarted leaves its partitions led elsewhere; then
//! (a) ElectLeaders PREFERRED (confluent-kafka's `AdminClient.elect_leaders`,
//!     i.e. librdkafka, to the controller) gives them back, answering per
//!     partition NONE / ELECTION_NOT_NEEDED / UNKNOWN_TOPIC_OR_PARTITION,
//!     and UNCLEAN where the leader lives is ELECTION_NOT_NEEDED;
//! (b) the `/admin/preferred_replica_election` znode does the same and is
//!     deleted by the controller;
//! (c) with `auto.leader.rebalance.enable=true` and a 1 s
//!     `leader.imbalance.check.interval.seconds`, the controller does it by
//!     itself.
//!
//! `kafka_*` runs (a) against Apache Kafka 3.9 in ZooKeeper mode, the
//! reference (ignored by default: three JVMs on 2 cores):
//!   cargo test --test cluster_leader_election -- --ignored kafka_
//! Every wait has a deadline; timeouts are shortened through config.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;

use common::cluster::{json, read, wait_for, with_zk};
use common::replica_cluster::{ReplCluster, System};
use shardlog::zk::store::{CreateMode, MetadataStore};

const TOPIC: &str = "elect";
const PARTITIONS: i32 = 6;

fn settings(extra: &[&str]) -> Vec<String> {
    let mut s: Vec<String> = [
        "zookeeper.session.timeout.ms=3000",
        "replica.lag.time.max.ms=3000",
        "controlled.shutdown.retry.backoff.ms=500",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    s.extend(extra.iter().map(|s| s.to_string()));
    s
}

fn start(system: System, extra: &[&str]) -> ReplCluster {
    let s = settings(extra);
    let refs: Vec<&str> = s.iter().map(String::as_str).collect();
    let c = ReplCluster::start(system, 3, &refs);
    c.create_topic(TOPIC, PARTITIONS, 3, &[]);
    c
}

/// Each partition's assignment from `/brokers/topics/<t>` (first = preferred).
fn assignment(c: &ReplCluster) -> BTreeMap<i32, Vec<i32>> {
    let path = format!("/brokers/topics/{TOPIC}");
    let (data, _) = read(&c.zk.address(), &[&path])[&path]
        .clone()
        .expect("topic znode");
    json(&data)["partitions"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(p, rs)| {
            let rs = rs
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r.as_i64().unwrap() as i32);
            (p.parse().unwrap(), rs.collect())
        })
        .collect()
}

/// Partition → leader, from the state znodes.
fn leaders(c: &ReplCluster) -> BTreeMap<i32, i32> {
    c.states(TOPIC, PARTITIONS)
        .into_iter()
        .map(|(p, s)| (p, s.leader))
        .collect()
}

fn preferred_leaders(c: &ReplCluster) -> BTreeMap<i32, i32> {
    assignment(c)
        .into_iter()
        .map(|(p, rs)| (p, rs[0]))
        .collect()
}

/// Stop a broker that is not the controller (controlled shutdown moves
/// its leaders), start it again and wait until it is back in every ISR:
/// its preferred partitions are then led by others (checked unless
/// `rebalancing`: the auto rebalance may have moved them back already).
/// Returns its id.
fn bounce_a_broker(c: &mut ReplCluster, rebalancing: bool) -> i32 {
    let controller = c.controller();
    let victim = (1..=3).find(|b| *b != controller).unwrap();
    let prefers: Vec<i32> = preferred_leaders(c)
        .into_iter()
        .filter(|(_, l)| *l == victim)
        .map(|(p, _)| p)
        .collect();
    assert!(
        !prefers.is_empty(),
        "broker {victim} is nobody's preferred leader: {:?}",
        assignment(c)
    );
    c.node(victim).stop();
    wait_for(60, "the stopped broker's leaders moved", || {
        (!leaders(c).values().any(|l| *l == victim)).then_some(())
    });
    c.restart(victim);
    wait_for(120, "the restarted broker back in every ISR", || {
        c.states(TOPIC, PARTITIONS)
            .values()
            .all(|s| s.isr.len() == 3)
            .then_some(())
    });
    let now = leaders(c);
    for p in prefers.iter().filter(|_| !rebalancing) {
        assert_ne!(
            now[p], victim,
            "partition {p} is led by the restarted broker already"
        );
    }
    victim
}

fn elect(c: &ReplCluster, kind: &str, parts: &[String]) -> serde_json::Value {
    let boot = c.bootstrap();
    let mut args = vec!["elect", boot.as_str(), kind, "30"];
    args.extend(parts.iter().map(String::as_str));
    common::cluster_admin(&args)
}

fn preferred_election_by_admin_client(system: System) {
    let mut c = start(system, &[]);
    let victim = bounce_a_broker(&mut c, false);
    let preferred = preferred_leaders(&c);
    let before = c.states(TOPIC, PARTITIONS);
    let mut names: Vec<String> = (0..PARTITIONS).map(|p| format!("{TOPIC}:{p}")).collect();
    names.push(format!("{TOPIC}:99"));
    let r = elect(&c, "preferred", &names);
    for p in 0..PARTITIONS {
        let want = if preferred[&p] == victim {
            "NONE"
        } else {
            "ELECTION_NOT_NEEDED"
        };
        assert_eq!(
            r[format!("{TOPIC}:{p}")],
            want,
            "{system:?} partition {p}: {r}"
        );
    }
    assert_eq!(
        r[format!("{TOPIC}:99")],
        "UNKNOWN_TOPIC_OR_PART",
        "{system:?}: {r}"
    );
    // The answer came once the new leaders were known: the state znodes
    // name the preferred replicas, in a new epoch where one moved.
    let after = c.states(TOPIC, PARTITIONS);
    for p in 0..PARTITIONS {
        assert_eq!(after[&p].leader, preferred[&p], "{system:?} partition {p}");
        let bumped = after[&p].leader_epoch > before[&p].leader_epoch;
        assert_eq!(
            bumped,
            preferred[&p] == victim,
            "{system:?} partition {p}: {before:?} → {after:?}"
        );
    }
    // Metadata shows them too.
    let md = c.describe(&c.bootstrap(), TOPIC);
    for p in 0..PARTITIONS {
        assert_eq!(
            md["partitions"][p.to_string()]["leader"],
            preferred[&p],
            "{system:?}: {md}"
        );
    }
    // Again: nothing to do. For all partitions (null list) Kafka leaves the
    // not-needed ones out of the answer.
    let again = elect(&c, "preferred", &names[..2]);
    assert_eq!(
        again[format!("{TOPIC}:0")],
        "ELECTION_NOT_NEEDED",
        "{system:?}: {again}"
    );
    let all = elect(&c, "preferred", &[]);
    assert_eq!(
        all,
        serde_json::json!({}),
        "{system:?}: every partition led by its preferred replica"
    );
    // UNCLEAN where the leader is live: not needed either.
    let unclean = elect(&c, "unclean", &names[..1]);
    assert_eq!(
        unclean[format!("{TOPIC}:0")],
        "ELECTION_NOT_NEEDED",
        "{system:?}: {unclean}"
    );
    assert_eq!(leaders(&c), preferred, "{system:?}");
}

#[test]
fn elect_leaders_preferred_gives_a_restarted_broker_its_partitions_back() {
    preferred_election_by_admin_client(System::Shardlog);
}

#[test]
#[ignore = "Kafka 3.9 reference: three JVMs; run with --ignored"]
fn kafka_elect_leaders_preferred() {
    preferred_election_by_admin_client(System::Kafka);
}

#[test]
fn the_preferred_replica_election_znode_moves_leaders_back_and_is_deleted() {
    let mut c = start(System::Shardlog, &[]);
    bounce_a_broker(&mut c, false);
    let preferred = preferred_leaders(&c);
    let partitions: Vec<serde_json::Value> = (0..PARTITIONS)
        .map(|p| serde_json::json!({"topic": TOPIC, "partition": p}))
        .collect();
    let body = serde_json::json!({"version": 1, "partitions": partitions}).to_string();
    with_zk(&c.zk.address(), move |s| async move {
        s.create(
            "/admin/preferred_replica_election",
            body.as_bytes(),
            CreateMode::Persistent,
        )
        .await
        .expect("create /admin/preferred_replica_election");
    });
    wait_for(60, "every partition led by its preferred replica", || {
        (leaders(&c) == preferred).then_some(())
    });
    wait_for(30, "the controller deleted the znode", || {
        let path = "/admin/preferred_replica_election";
        read(&c.zk.address(), &[path])[path].is_none().then_some(())
    });
}

#[test]
fn the_auto_leader_rebalance_moves_leaders_back_by_itself() {
    let mut c = start(
        System::Shardlog,
        &[
            "auto.leader.rebalance.enable=true",
            "leader.imbalance.check.interval.seconds=1",
        ],
    );
    // While the broker is away its partitions are no candidates (the
    // preferred replica is not live, then not in the ISR); once it is back
    // in the ISR a check within the second moves them.
    bounce_a_broker(&mut c, true);
    let preferred = preferred_leaders(&c);
    wait_for(
        60,
        "the rebalance gave every partition its preferred leader",
        || (leaders(&c) == preferred).then_some(()),
    );
}

/// Kafka's own `kafka-leader-election` (the Java AdminClient's
/// `electLeaders`, ElectLeaders v2) for every partition, then for one
/// that does not exist.
#[test]
fn kafka_leader_election_tool_elects_the_preferred_replicas() {
    const TOOL: &str = "org.apache.kafka.tools.LeaderElectionCommand";
    let mut c = start(System::Shardlog, &[]);
    let victim = bounce_a_broker(&mut c, false);
    let preferred = preferred_leaders(&c);
    let boot = c.bootstrap();
    let out = common::java::run_ok(
        common::java::kafka_tool(TOOL).args([
            "--bootstrap-server",
            &boot,
            "--election-type",
            "PREFERRED",
            "--all-topic-partitions",
        ]),
        TOOL,
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    // "Successfully completed leader election (PREFERRED) for partitions
    // elect-1, elect-4" names exactly the victim's preferred partitions.
    let line = text
        .lines()
        .find(|l| {
            l.starts_with("Successfully completed leader election (PREFERRED) for partitions")
        })
        .unwrap_or_else(|| panic!("no success line in:\n{text}"));
    let mut named: Vec<String> = line
        .rsplit_once("partitions ")
        .unwrap()
        .1
        .split(", ")
        .map(|s| s.trim().to_string())
        .collect();
    named.sort();
    let mut want: Vec<String> = preferred
        .iter()
        .filter(|(_, l)| **l == victim)
        .map(|(p, _)| format!("{TOPIC}-{p}"))
        .collect();
    want.sort();
    assert_eq!(named, want, "{text}");
    assert_eq!(leaders(&c), preferred);
    // A partition that does not exist: the tool reports it and fails.
    let out = common::java::kafka_tool(TOOL)
        .args([
            "--bootstrap-server",
            &boot,
            "--election-type",
            "PREFERRED",
            "--topic",
            TOPIC,
            "--partition",
            "99",
        ])
        .output()
        .expect(TOOL);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains(&format!("{TOPIC}-99")) && text.contains("does not exist"),
        "{text}"
    );
}
