//! The controller's duties (issue 19) with a real ZooKeeper and three
//! shardlog broker processes: topics created through ZooKeeper by
//! confluent-kafka's and kafka-python's AdminClient get leaders and ISRs
//! exactly as Kafka 3.9 writes them, every broker answers Metadata the
//! same, a non-leader refuses produce; kill -9 of a leader moves its
//! partitions to the ISR; with every ISR member dead a partition stays
//! offline unless unclean election is on; a topic deleted while a replica
//! is down waits for it; CreatePartitions grows a topic under load;
//! SIGTERM moves a broker's leaders away before it exits; AlterPartition
//! changes an ISR through the controller behind Kafka's fences.
//!
//! Most producers here use acks=1 (the controller's part is under test;
//! tests/cluster_replication.rs checks histories); the controlled-shutdown
//! producer is idempotent at acks=all, as issue 19 asks, and its records
//! are counted back on the new leaders.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::cluster::{assignment, children, json, read, states, wait_for};
use common::zookeeper::ZkServer;
use common::{Broker, Conn};
use kafka_protocol::records::Compression;
use shardlog::controller::assignment::{assign_replicas_to_brokers, AssignmentSeed};
use shardlog::types::BrokerId;

/// Short sessions: a dead broker's registration goes within ~2 s.
const SESSION_MS: u64 = 2000;

fn overrides(zk: &str, id: i32, extra: &[&str]) -> Vec<String> {
    let mut o = vec![
        format!("zookeeper.connect={zk}"),
        format!("zookeeper.session.timeout.ms={SESSION_MS}"),
        "zookeeper.connection.timeout.ms=5000".into(),
        format!("broker.id={id}"),
        "shardlog.shards=1".into(),
        // Leaders stay where the scenarios put them (Kafka's default is
        // true; tests/cluster_leader_election.rs covers the rebalance).
        "auto.leader.rebalance.enable=false".into(),
    ];
    o.extend(extra.iter().map(|s| s.to_string()));
    o
}

fn start(zk: &str, id: i32, extra: &[&str]) -> Broker {
    let o = overrides(zk, id, extra);
    Broker::start_with(&o.iter().map(String::as_str).collect::<Vec<_>>())
}

fn restart(zk: &str, id: i32, dir: tempfile::TempDir) -> Broker {
    let o = overrides(zk, id, &[]);
    Broker::start_in(dir, &o.iter().map(String::as_str).collect::<Vec<_>>())
}

/// Three brokers 1–3, all registered.
fn cluster(zk: &str) -> Vec<Broker> {
    let brokers: Vec<Broker> = (1..=3).map(|i| start(zk, i, &[])).collect();
    wait_for(20, "three registrations", || {
        (children(zk, "/brokers/ids").len() == 3).then_some(())
    });
    brokers
}

fn admin(args: &[&str]) -> serde_json::Value {
    common::cluster_admin(args)
}

/// (leader, replicas, isr) per partition, as `b`'s Metadata says.
fn leaders_seen(b: &Broker, topic: &str) -> BTreeMap<i32, (i32, Vec<i32>, Vec<i32>)> {
    let mut conn = Conn::open(b);
    let md = conn.metadata(Some(&[topic]));
    md.topics
        .first()
        .map(|t| {
            t.partitions
                .iter()
                .map(|p| {
                    (
                        p.partition_index,
                        (
                            p.leader_id.0,
                            p.replica_nodes.iter().map(|r| r.0).collect(),
                            p.isr_nodes.iter().map(|r| r.0).collect(),
                        ),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// What the state znodes say, in Metadata's shape.
fn expected_view(zk: &str, topic: &str) -> BTreeMap<i32, (i32, Vec<i32>, Vec<i32>)> {
    let a = assignment(zk, topic);
    let s = states(zk, topic, a.len() as i32);
    a.iter()
        .filter_map(|(p, rs)| {
            s.get(p)
                .map(|st| (*p, (st.leader, rs.clone(), st.isr.clone())))
        })
        .collect()
}

/// Every broker in `brokers` shows the state znodes' leaders, replicas and
/// ISRs for every one of the topic's `partitions`.
fn wait_for_same_view(zk: &str, brokers: &[&Broker], topic: &str, partitions: usize) {
    wait_for(20, "every broker showing the controller's view", || {
        let want = expected_view(zk, topic);
        if want.len() != partitions {
            return None;
        }
        brokers
            .iter()
            .all(|b| leaders_seen(b, topic) == want)
            .then_some(())
    });
}

fn one_record() -> bytes::Bytes {
    common::encode_batch(&[(None, b"x", common::now_ms())], Compression::None)
}

#[test]
fn topics_created_through_zookeeper_get_kafkas_leaders_and_every_broker_agrees() {
    let zk = ZkServer::standalone();
    let addr = zk.address();
    let brokers = cluster(&addr);
    let boot = brokers[0].bootstrap();
    admin(&["create", &boot, "confluent", "t12", "12", "3"]);
    admin(&["create", &boot, "kafka-python", "kp6", "6", "3"]);
    for (topic, n) in [("t12", 12), ("kp6", 6)] {
        // `/brokers/topics/<t>` as Kafka 3.9's AdminZkClient writes it.
        let path = format!("/brokers/topics/{topic}");
        let (data, _) = read(&addr, &[&path])[&path].clone().unwrap();
        let j = json(&data);
        assert_eq!(j["version"], 3, "{data}");
        assert_eq!(j["topic_id"].as_str().unwrap().len(), 22, "{data}");
        assert_eq!(j["adding_replicas"], serde_json::json!({}));
        assert_eq!(j["removing_replicas"], serde_json::json!({}));
        let a = assignment(&addr, topic);
        assert_eq!(a.len(), n);
        // The assignment is Kafka's AdminUtils one for some start index
        // and shift (drawn at random by the creator, as in Kafka).
        let brokers_ids = [BrokerId(1), BrokerId(2), BrokerId(3)];
        let reproduced = (0..3).any(|start| {
            (0..3).any(|shift| {
                let seed = AssignmentSeed {
                    start_index: start,
                    replica_shift: shift,
                };
                let want = assign_replicas_to_brokers(&brokers_ids, n as i32, 3, seed, 0).unwrap();
                want.iter()
                    .all(|(p, rs)| a[p] == rs.iter().map(|b| b.0).collect::<Vec<_>>())
            })
        });
        assert!(reproduced, "{topic}: {a:?} is not an AdminUtils assignment");
        // Every partition's state: first replica leads, ISR = replicas
        // (all live), epoch 0, written by the controller's epoch.
        let epoch: i32 = read(&addr, &["/controller_epoch"])["/controller_epoch"]
            .clone()
            .unwrap()
            .0
            .trim()
            .parse()
            .unwrap();
        let s = states(&addr, topic, n as i32);
        assert_eq!(s.len(), n, "{topic}: every partition has a state znode");
        for (p, st) in &s {
            assert_eq!(
                st.leader, a[p][0],
                "{topic}-{p}: the preferred replica leads"
            );
            assert_eq!(st.isr, a[p], "{topic}-{p}");
            assert_eq!((st.leader_epoch, st.version), (0, 0), "{topic}-{p}");
            assert_eq!(st.controller_epoch, epoch, "{topic}-{p}");
        }
        let all: Vec<&Broker> = brokers.iter().collect();
        wait_for_same_view(&addr, &all, topic, n);
    }
    // The partition folders exist on the three replicas and only there.
    for b in &brokers {
        let dirs = std::fs::read_dir(b.log_dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with("t12-"))
            .count();
        assert_eq!(dirs, 12, "broker {}: one folder per partition", b.broker_id);
    }
    // A non-leader refuses produce with NOT_LEADER_OR_FOLLOWER; the leader
    // takes it.
    let a = assignment(&addr, "t12");
    let leader = a[&0][0];
    let other = brokers.iter().find(|b| b.broker_id != leader).unwrap();
    let owner = brokers.iter().find(|b| b.broker_id == leader).unwrap();
    let refused = Conn::open(other).produce("t12", 0, one_record(), 1);
    assert_eq!(refused.error_code, 6, "{refused:?}");
    let taken = Conn::open(owner).produce("t12", 0, one_record(), 1);
    assert_eq!(taken.error_code, 0, "{taken:?}");
    // A real client follows the leaders of all 12 partitions.
    let out = admin(&["produce", &boot, "t12", "600", "1"]);
    assert_eq!(out["delivered"], 600, "{out}");
    assert_eq!(out["errors"], serde_json::json!([]), "{out}");
    assert_eq!(out["partitions"].as_array().unwrap().len(), 12, "{out}");
    // validate_only writes nothing.
    admin(&["validate", &boot, "vo", "3", "3"]);
    assert!(read(&addr, &["/brokers/topics/vo"])["/brokers/topics/vo"].is_none());
    // Auto-creation (a producer's Metadata names an unknown topic) goes
    // through ZooKeeper too: the controller gives it leaders, the records
    // land once they exist.
    let out = admin(&["produce", &boot, "auto1", "10", "1"]);
    assert_eq!(out["delivered"], 10, "{out}");
    let auto = states(&addr, "auto1", 1);
    assert_eq!(
        auto.len(),
        1,
        "the controller created auto1-0's state: {auto:?}"
    );
    // RF above the live brokers: INVALID_REPLICATION_FACTOR.
    let err = std::panic::catch_unwind(|| admin(&["create", &boot, "confluent", "rf4", "1", "4"]));
    let msg = match err {
        Ok(v) => panic!("RF 4 on 3 brokers was accepted: {v}"),
        Err(e) => e.downcast_ref::<String>().cloned().unwrap_or_default(),
    };
    assert!(msg.contains("INVALID_REPLICATION_FACTOR"), "{msg}");
}

#[test]
fn kill_9_of_a_leader_moves_its_partitions_to_the_isr_and_every_broker_learns_it() {
    let zk = ZkServer::standalone();
    let addr = zk.address();
    let mut brokers = cluster(&addr);
    let boot = brokers[0].bootstrap();
    admin(&["create", &boot, "confluent", "k12", "12", "3"]);
    let all: Vec<&Broker> = brokers.iter().collect();
    wait_for_same_view(&addr, &all, "k12", 12);
    let before = states(&addr, "k12", 12);
    let mut count: BTreeMap<i32, usize> = BTreeMap::new();
    for st in before.values() {
        *count.entry(st.leader).or_default() += 1;
    }
    let (&victim, &led) = count.iter().max_by_key(|(_, n)| **n).unwrap();
    assert_eq!(led, 4, "round-robin leaders: 4 each ({count:?})");
    let i = brokers.iter().position(|b| b.broker_id == victim).unwrap();
    let killed_at = Instant::now();
    let _dir = brokers.remove(i).kill_keeping_dir();
    let after = wait_for(30, "new leaders, and the victim out of every ISR", || {
        let now = states(&addr, "k12", 12);
        now.values()
            .all(|s| s.leader != victim && s.leader >= 0 && !s.isr.contains(&victim))
            .then_some(now)
    });
    let took = killed_at.elapsed();
    eprintln!(
        "kill -9 of broker {victim} (led {led}): every partition led from the ISR after {:.0} ms \
         (session timeout {SESSION_MS} ms)",
        took.as_secs_f64() * 1000.0
    );
    for (p, st) in &after {
        let old = &before[p];
        assert!(
            !st.isr.contains(&victim),
            "k12-{p}: the dead broker left the ISR: {st:?}"
        );
        assert_eq!(
            st.leader_epoch,
            old.leader_epoch + 1,
            "k12-{p}: {old:?} -> {st:?}"
        );
        if old.leader == victim {
            assert!(
                old.isr.contains(&st.leader),
                "k12-{p}: the new leader was in the ISR"
            );
        } else {
            assert_eq!(st.leader, old.leader, "k12-{p}: a live leader stays");
        }
    }
    let survivors: Vec<&Broker> = brokers.iter().collect();
    wait_for_same_view(&addr, &survivors, "k12", 12);
    // Clients follow: everything is produced to the new leaders.
    let boot = brokers[0].bootstrap();
    let out = admin(&["produce", &boot, "k12", "240", "1"]);
    assert_eq!(out["delivered"], 240, "{out}");
}

#[test]
fn with_every_isr_member_dead_a_partition_stays_offline_unless_unclean_election_is_on() {
    let zk = ZkServer::standalone();
    let addr = zk.address();
    // Broker 3 first: it wins the election and stays controller while 1
    // and 2 die (a dead controller's successor would find the leaders
    // dead at failover and keep them in the znodes, as Kafka's does).
    let b3 = start(&addr, 3, &[]);
    wait_for(20, "broker 3 controller", || {
        read(&addr, &["/controller"])["/controller"]
            .clone()
            .map(|_| ())
    });
    let mut brokers: Vec<Broker> = (1..=2).map(|i| start(&addr, i, &[])).collect();
    wait_for(20, "three registrations", || {
        (children(&addr, "/brokers/ids").len() == 3).then_some(())
    });
    // Both topics on brokers 1 and 2 (1 preferred); "u" allows unclean
    // election, "c" keeps the default (false).
    let mut conn = Conn::open(&b3);
    for (topic, unclean) in [("c", "false"), ("u", "true")] {
        use kafka_protocol::messages::create_topics_request::*;
        let req = CreateTopicsRequest::default()
            .with_timeout_ms(30_000)
            .with_topics(vec![CreatableTopic::default()
                .with_name(common::topic_name(topic))
                .with_num_partitions(-1)
                .with_replication_factor(-1)
                .with_assignments(vec![CreatableReplicaAssignment::default()
                    .with_partition_index(0)
                    .with_broker_ids(vec![BrokerId(1).0.into(), BrokerId(2).0.into()])])
                .with_configs(vec![CreatableTopicConfig::default()
                    .with_name("unclean.leader.election.enable".into())
                    .with_value(Some(unclean.into()))])]);
        let resp = conn.call(5, &req);
        assert_eq!(resp.topics[0].error_code, 0, "{resp:?}");
    }
    // Broker 1 (leader) dies: 2 leads, ISR [2].
    let dir1 = brokers.remove(0).kill_keeping_dir();
    wait_for(30, "broker 2 leading both", || {
        ["c", "u"]
            .iter()
            .all(|t| states(&addr, t, 1)[&0].leader == 2)
            .then_some(())
    });
    for t in ["c", "u"] {
        assert_eq!(states(&addr, t, 1)[&0].isr, vec![2]);
    }
    // Broker 2 dies too: no live ISR member, both offline, ISR kept.
    let dir2 = brokers.remove(0).kill_keeping_dir();
    wait_for(30, "both offline", || {
        ["c", "u"]
            .iter()
            .all(|t| states(&addr, t, 1)[&0].leader == -1)
            .then_some(())
    });
    assert_eq!(
        states(&addr, "c", 1)[&0].isr,
        vec![2],
        "Kafka never empties the ISR"
    );
    // Broker 1 returns (not in the ISR): "u" comes back with it as an
    // unclean leader (RECOVERING), "c" stays offline.
    let b1 = restart(&addr, 1, dir1);
    let u = wait_for(30, "u led by broker 1", || {
        let s = states(&addr, "u", 1)[&0].clone();
        (s.leader == 1).then_some(s)
    });
    assert_eq!(u.isr, vec![1]);
    let path = "/brokers/topics/u/partitions/0/state";
    let (data, _) = read(&addr, &[path])[path].clone().unwrap();
    assert_eq!(json(&data)["leader_recovery_state"], 1, "{data}");
    let c = states(&addr, "c", 1)[&0].clone();
    assert_eq!(c.leader, -1, "unclean election is off for c: {c:?}");
    let md = leaders_seen(&b1, "c");
    assert_eq!(md[&0].0, -1, "clients see c-0 without a leader");
    // Broker 3 (the controller) hears of u-0's leader by UpdateMetadata,
    // which it sends after writing the state znode read above.
    wait_for(30, "broker 3's metadata: u-0 led by broker 1", || {
        (leaders_seen(&b3, "u")[&0].0 == 1).then_some(())
    });
    drop(dir2);
}

#[test]
fn a_topic_deleted_while_a_replica_is_down_waits_for_it_then_goes_from_every_broker() {
    let zk = ZkServer::standalone();
    let addr = zk.address();
    let mut brokers = cluster(&addr);
    let boot = brokers[0].bootstrap();
    admin(&["create", &boot, "confluent", "del", "3", "3"]);
    let all: Vec<&Broker> = brokers.iter().collect();
    wait_for_same_view(&addr, &all, "del", 3);
    let folders = |dir: &std::path::Path| {
        std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with("del-"))
            .count()
    };
    let dir3 = brokers.remove(2).kill_keeping_dir();
    wait_for(20, "broker 3 gone", || {
        (children(&addr, "/brokers/ids").len() == 2).then_some(())
    });
    admin(&["delete", &boot, "del"]);
    // The live replicas stop and delete; the topic waits for broker 3.
    wait_for(20, "the live replicas' folders gone", || {
        brokers
            .iter()
            .all(|b| folders(b.log_dir.path()) == 0)
            .then_some(())
    });
    let waiting = read(&addr, &["/brokers/topics/del", "/admin/delete_topics/del"]);
    assert!(
        waiting["/brokers/topics/del"].is_some(),
        "deletion waits for broker 3"
    );
    assert!(waiting["/admin/delete_topics/del"].is_some());
    assert_eq!(
        folders(dir3.path()),
        3,
        "the dead broker's copies are still on disk"
    );
    let b3 = restart(&addr, 3, dir3);
    wait_for(30, "deletion completed", || {
        let r = read(
            &addr,
            &[
                "/brokers/topics/del",
                "/config/topics/del",
                "/admin/delete_topics/del",
            ],
        );
        r.values().all(Option::is_none).then_some(())
    });
    wait_for(20, "broker 3's folders gone", || {
        (folders(b3.log_dir.path()) == 0).then_some(())
    });
    for b in brokers.iter().chain(std::iter::once(&b3)) {
        assert!(
            leaders_seen(b, "del").is_empty(),
            "broker {} still shows del",
            b.broker_id
        );
    }
}

#[test]
fn create_partitions_grows_a_topic_while_clients_produce() {
    let zk = ZkServer::standalone();
    let addr = zk.address();
    let brokers = cluster(&addr);
    let boot = brokers[0].bootstrap();
    admin(&["create", &boot, "confluent", "grow", "12", "3"]);
    let stop = tempfile::NamedTempFile::new().unwrap();
    let stop_path = stop.path().to_path_buf();
    drop(stop);
    let producing = {
        let (boot, stop) = (boot.clone(), stop_path.display().to_string());
        std::thread::spawn(move || admin(&["produce_until", &boot, "grow", "1", &stop]))
    };
    std::thread::sleep(Duration::from_millis(500));
    admin(&["partitions", &boot, "grow", "24"]);
    let all: Vec<&Broker> = brokers.iter().collect();
    wait_for_same_view(&addr, &all, "grow", 24);
    let s = states(&addr, "grow", 24);
    assert_eq!(s.len(), 24);
    let a = assignment(&addr, "grow");
    for p in 12..24 {
        assert_eq!(s[&p].leader, a[&p][0], "grow-{p}");
    }
    // The producer picks the new partitions up (metadata refresh 1 s).
    std::thread::sleep(Duration::from_millis(2500));
    std::fs::write(&stop_path, b"").unwrap();
    let out = producing.join().unwrap();
    assert_eq!(out["errors"], serde_json::json!([]), "{out}");
    assert_eq!(out["delivered"], out["sent"], "{out}");
    let used: BTreeSet<i64> = out["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_i64().unwrap())
        .collect();
    assert!(used.iter().any(|p| *p >= 12), "new partitions used: {out}");
    let _ = std::fs::remove_file(&stop_path);
}

/// Idempotent at acks=all across the leaders' move: each partition's HW
/// on its new leader is exactly the number of records acknowledged to it
/// (nothing lost, nothing written twice).
fn assert_hw_is_what_was_acked(
    brokers: &[Broker],
    leaders: &BTreeMap<i32, (i32, Vec<i32>, Vec<i32>)>,
    out: &serde_json::Value,
) {
    let acked: BTreeMap<i32, i64> = out["per_partition"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(p, n)| (p.parse().unwrap(), n.as_i64().unwrap()))
        .collect();
    assert_eq!(
        acked.values().sum::<i64>(),
        out["delivered"].as_i64().unwrap()
    );
    for (p, (leader, _, _)) in leaders {
        let on = brokers.iter().find(|b| b.broker_id == *leader).unwrap();
        let hw = Conn::open(on).list_offset("cs12", *p, -1).offset;
        assert_eq!(
            hw,
            acked.get(p).copied().unwrap_or(0),
            "cs12-{p} on broker {leader}"
        );
    }
}

#[test]
fn sigterm_moves_the_brokers_leaders_away_before_it_exits_and_it_shuts_down_clean() {
    let zk = ZkServer::standalone();
    let addr = zk.address();
    let mut brokers = cluster(&addr);
    let boot = brokers[0].bootstrap();
    admin(&["create", &boot, "confluent", "cs12", "12", "3"]);
    let all: Vec<&Broker> = brokers.iter().collect();
    wait_for_same_view(&addr, &all, "cs12", 12);
    let before = states(&addr, "cs12", 12);
    // The victim is not the controller (its own controlled shutdown is
    // the same request to itself; here the leaders' move is watched from
    // the controller's side).
    let controller = json(
        &read(&addr, &["/controller"])["/controller"]
            .clone()
            .unwrap()
            .0,
    )["brokerid"]
        .as_i64()
        .unwrap() as i32;
    let victim = brokers
        .iter()
        .map(|b| b.broker_id)
        .find(|id| *id != controller)
        .unwrap();
    let led: Vec<i32> = before
        .iter()
        .filter(|(_, s)| s.leader == victim)
        .map(|(p, _)| *p)
        .collect();
    assert_eq!(led.len(), 4, "a third of the partitions");
    let boot = brokers
        .iter()
        .find(|b| b.broker_id != victim)
        .unwrap()
        .bootstrap();
    let stop = tempfile::NamedTempFile::new().unwrap();
    let stop_path = stop.path().to_path_buf();
    drop(stop);
    let producing = {
        let (boot, stop) = (boot.clone(), stop_path.display().to_string());
        std::thread::spawn(move || admin(&["produce_until", &boot, "cs12", "all", &stop]))
    };
    std::thread::sleep(Duration::from_millis(1000));
    let i = brokers.iter().position(|b| b.broker_id == victim).unwrap();
    let sent_at = Instant::now();
    let stopped = brokers.remove(i).stop_with_logs();
    let took = sent_at.elapsed();
    assert!(stopped.status.success(), "{:?}", stopped.status);
    eprintln!(
        "controlled shutdown of broker {victim} (led {}): SIGTERM -> exit {:.0} ms",
        led.len(),
        took.as_secs_f64() * 1000.0
    );
    assert!(
        stopped
            .log_lines
            .iter()
            .any(|l| l.contains("controlled shutdown: succeeded")),
        "the controller moved the leaders before the exit:\n{}",
        stopped.log_lines.join("\n")
    );
    // Moved with the controlled-shutdown strategy: a new leader from the
    // ISR, the victim out of every ISR.
    let after = states(&addr, "cs12", 12);
    for (p, st) in &after {
        assert_ne!(st.leader, victim, "cs12-{p}");
        assert!(!st.isr.contains(&victim), "cs12-{p}: {st:?}");
    }
    let seen = leaders_seen(&brokers[0], "cs12");
    assert_eq!(seen.len(), 12, "{seen:?}");
    assert!(
        seen.values().all(|(l, _, _)| *l != victim && *l >= 0),
        "{seen:?}"
    );
    // The producer keeps going on the new leaders without a failed record.
    std::thread::sleep(Duration::from_millis(1500));
    std::fs::write(&stop_path, b"").unwrap();
    let out = producing.join().unwrap();
    assert_eq!(out["errors"], serde_json::json!([]), "{out}");
    assert_eq!(out["delivered"], out["sent"], "{out}");
    let _ = std::fs::remove_file(&stop_path);
    assert_hw_is_what_was_acked(&brokers, &seen, &out);
    // A clean shutdown: every partition folder has Kafka's clean-shutdown
    // marker, so the next start recovers nothing.
    let dirs: Vec<_> = std::fs::read_dir(stopped.log_dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("cs12-"))
        .collect();
    assert_eq!(dirs.len(), 12);
    for d in dirs {
        assert!(
            d.path().join(".kafka_cleanshutdown").exists(),
            "{}: no clean-shutdown marker",
            d.path().display()
        );
    }
}

/// One AlterPartition v3 from `leader` (at `broker_epoch`) for `ap`-0.
fn alter_partition(
    to: &Broker,
    leader: i32,
    broker_epoch: i64,
    topic_id: uuid::Uuid,
    leader_epoch: i32,
    isr: &[i32],
    partition_epoch: i32,
) -> kafka_protocol::messages::AlterPartitionResponse {
    use kafka_protocol::messages::alter_partition_request::{
        BrokerState, PartitionData, TopicData,
    };
    use kafka_protocol::messages::{AlterPartitionRequest, BrokerId as Wire};
    let p = PartitionData::default()
        .with_partition_index(0)
        .with_leader_epoch(leader_epoch)
        .with_new_isr_with_epochs(
            isr.iter()
                .map(|b| {
                    BrokerState::default()
                        .with_broker_id(Wire(*b))
                        .with_broker_epoch(-1)
                })
                .collect(),
        )
        .with_partition_epoch(partition_epoch);
    let req = AlterPartitionRequest::default()
        .with_broker_id(Wire(leader))
        .with_broker_epoch(broker_epoch)
        .with_topics(vec![TopicData::default()
            .with_topic_id(topic_id)
            .with_partitions(vec![p])]);
    Conn::open(to).call(3, &req)
}

#[test]
fn alter_partition_changes_an_isr_through_the_controller_with_kafkas_fences() {
    let zk = ZkServer::standalone();
    let addr = zk.address();
    let brokers = cluster(&addr);
    let boot = brokers[0].bootstrap();
    admin(&["create", &boot, "confluent", "ap", "1", "3"]);
    let s = wait_for(20, "ap-0 with three in sync", || {
        states(&addr, "ap", 1)
            .remove(&0)
            .filter(|s| s.isr.len() == 3)
    });
    let controller_id = wait_for(10, "a controller", || {
        read(&addr, &["/controller"])["/controller"]
            .as_ref()
            .map(|(d, _)| json(d)["brokerid"].as_i64().unwrap() as i32)
    });
    let broker = |id: i32| &brokers[(id - 1) as usize];
    let controller = broker(controller_id);
    let other = broker(if controller_id == 1 { 2 } else { 1 });
    let leader_znode = format!("/brokers/ids/{}", s.leader);
    let epoch = read(&addr, &[&leader_znode])[&leader_znode]
        .clone()
        .unwrap()
        .1
        .czxid;
    let topic_path = "/brokers/topics/ap";
    let topic_id = shardlog::zk::paths::kafka_uuid::parse(
        json(&read(&addr, &[topic_path])[topic_path].clone().unwrap().0)["topic_id"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    let shrunk: Vec<i32> = s
        .isr
        .iter()
        .copied()
        .filter(|r| *r == s.leader)
        .chain(s.isr.iter().copied().filter(|r| *r != s.leader).take(1))
        .collect();
    let ask = |to: &Broker, broker_epoch: i64, leader_epoch: i32, isr: &[i32], version: i32| {
        alter_partition(
            to,
            s.leader,
            broker_epoch,
            topic_id,
            leader_epoch,
            isr,
            version,
        )
    };
    // Request-level fences: not the controller, a stale broker epoch.
    let r = ask(other, epoch, s.leader_epoch, &shrunk, s.version);
    if other.broker_id != controller_id {
        assert_eq!(
            r.error_code, 41,
            "NOT_CONTROLLER from a non-controller: {r:?}"
        );
    }
    let r = ask(controller, epoch - 1, s.leader_epoch, &shrunk, s.version);
    assert_eq!(r.error_code, 77, "STALE_BROKER_EPOCH: {r:?}");
    // Partition fences: an old leader epoch.
    let r = ask(controller, epoch, s.leader_epoch - 1, &shrunk, s.version);
    assert_eq!(
        r.topics[0].partitions[0].error_code, 74,
        "FENCED_LEADER_EPOCH: {r:?}"
    );
    // Accepted: the state znode holds the new ISR one version later, the
    // answer carries it, every broker's Metadata shows it.
    let r = ask(controller, epoch, s.leader_epoch, &shrunk, s.version);
    assert_eq!(r.error_code, 0, "{r:?}");
    let p = &r.topics[0].partitions[0];
    assert_eq!(p.error_code, 0, "{r:?}");
    assert_eq!(p.partition_epoch, s.version + 1);
    assert_eq!(p.isr.iter().map(|b| b.0).collect::<Vec<_>>(), shrunk);
    let now = states(&addr, "ap", 1).remove(&0).unwrap();
    assert_eq!(now.isr, shrunk);
    assert_eq!(
        now.leader_epoch, s.leader_epoch,
        "an ISR change keeps the leader epoch"
    );
    assert_eq!(now.version, s.version + 1);
    for b in &brokers {
        wait_for(10, "the new ISR in Metadata", || {
            (leaders_seen(b, "ap")[&0].2 == shrunk).then_some(())
        });
    }
    // A retry of the same change is answered with the state in force;
    // another change on the old partition epoch is INVALID_UPDATE_VERSION.
    let r = ask(controller, epoch, s.leader_epoch, &shrunk, s.version);
    assert_eq!(r.topics[0].partitions[0].error_code, 0, "{r:?}");
    assert_eq!(r.topics[0].partitions[0].partition_epoch, s.version + 1);
    let r = ask(controller, epoch, s.leader_epoch, &s.isr, s.version);
    assert_eq!(
        r.topics[0].partitions[0].error_code, 95,
        "INVALID_UPDATE_VERSION: {r:?}"
    );
    assert_eq!(states(&addr, "ap", 1)[&0].isr, shrunk);
    alter_partition_v0_names_topics(
        controller,
        &addr,
        s.leader,
        epoch,
        s.leader_epoch,
        &s.isr,
        s.version + 1,
    );
}

/// AlterPartition v0 (brokers below IBP 3.3) names topics: the ISR grows
/// back to `isr` on `ap`-0 at `partition_epoch`, and a name the controller
/// does not know gets UNKNOWN_TOPIC_OR_PARTITION.
fn alter_partition_v0_names_topics(
    controller: &Broker,
    zk: &str,
    leader: i32,
    broker_epoch: i64,
    leader_epoch: i32,
    isr: &[i32],
    partition_epoch: i32,
) {
    use kafka_protocol_39::messages::alter_partition_request::{PartitionData, TopicData};
    use kafka_protocol_39::messages::alter_partition_response::AlterPartitionResponse;
    use kafka_protocol_39::messages::{AlterPartitionRequest, BrokerId as Wire, TopicName};
    use kafka_protocol_39::protocol::StrBytes;
    let topic = |name: &str| {
        TopicData::default()
            .with_topic_name(TopicName(StrBytes::from_string(name.to_owned())))
            .with_partitions(vec![PartitionData::default()
                .with_partition_index(0)
                .with_leader_epoch(leader_epoch)
                .with_new_isr(isr.iter().map(|b| Wire(*b)).collect())
                .with_partition_epoch(partition_epoch)])
    };
    let req = AlterPartitionRequest::default()
        .with_broker_id(Wire(leader))
        .with_broker_epoch(broker_epoch)
        .with_topics(vec![topic("ap"), topic("no-such-topic")]);
    let mut stream = controller.connect();
    let r: AlterPartitionResponse = common::call39(&mut stream, 56, 0, &req);
    assert_eq!(r.error_code, 0, "{r:?}");
    let by_name: BTreeMap<String, (i16, i32, Vec<i32>)> = r
        .topics
        .iter()
        .map(|t| {
            let p = &t.partitions[0];
            let isr = p.isr.iter().map(|b| b.0).collect();
            (
                t.topic_name.0.to_string(),
                (p.error_code, p.partition_epoch, isr),
            )
        })
        .collect();
    assert_eq!(
        by_name["ap"],
        (0, partition_epoch + 1, isr.to_vec()),
        "{r:?}"
    );
    assert_eq!(
        by_name["no-such-topic"].0, 3,
        "UNKNOWN_TOPIC_OR_PARTITION: {r:?}"
    );
    assert_eq!(
        states(zk, "ap", 1)[&0].isr,
        isr,
        "the v0 change is in the state znode"
    );
}

/// The broker id in `/controller`, once one is there.
fn controller_id(zk: &str) -> Option<i32> {
    let (data, _) = read(zk, &["/controller"])["/controller"].clone()?;
    json(&data)["brokerid"].as_i64().map(|id| id as i32)
}

/// SIGTERM of the controller: another broker is elected and bumps
/// `/controller_epoch` (Kafka's `KafkaController.elect`), and every broker,
/// the new controller itself included, accepts its first LeaderAndIsr and
/// UpdateMetadata: no broker logs a request refused with
/// STALE_CONTROLLER_EPOCH, and a topic created right after the failover
/// gets its leaders on every remaining broker promptly.
#[test]
fn after_the_controller_is_stopped_every_broker_accepts_the_new_controllers_requests() {
    let zk = ZkServer::standalone();
    let addr = zk.address();
    let mut brokers = cluster(&addr);
    let boot = brokers[0].bootstrap();
    admin(&["create", &boot, "confluent", "fo6", "6", "3"]);
    let all: Vec<&Broker> = brokers.iter().collect();
    wait_for_same_view(&addr, &all, "fo6", 6);
    let old = wait_for(20, "a controller", || controller_id(&addr));
    let epoch_path = "/controller_epoch";
    let epoch = |zk: &str| -> i32 {
        read(zk, &[epoch_path])[epoch_path]
            .clone()
            .unwrap()
            .0
            .parse()
            .unwrap()
    };
    let old_epoch = epoch(&addr);
    let i = brokers.iter().position(|b| b.broker_id == old).unwrap();
    let stopped = brokers.remove(i).stop_with_logs();
    assert!(stopped.status.success(), "{:?}", stopped.status);
    let new = wait_for(20, "a new controller", || {
        controller_id(&addr).filter(|id| *id != old)
    });
    assert_eq!(epoch(&addr), old_epoch + 1, "the new controller's epoch");
    let boot = brokers[0].bootstrap();
    admin(&["create", &boot, "confluent", "fo2", "2", "2"]);
    let left: Vec<&Broker> = brokers.iter().collect();
    wait_for_same_view(&addr, &left, "fo2", 2);
    wait_for_same_view(&addr, &left, "fo6", 6);
    for b in &brokers {
        let stale: Vec<String> = b
            .log_lines()
            .iter()
            .map(|l| common::plain_log_line(l))
            .filter(|l| l.contains("STALE_CONTROLLER_EPOCH"))
            .collect();
        assert!(
            stale.is_empty(),
            "broker {} (new controller {new}):\n{}",
            b.broker_id,
            stale.join("\n")
        );
    }
}
