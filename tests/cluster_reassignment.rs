//! Partition reassignment (issue 22; KIP-455, seed 000's RS/OAR/RAR steps)
//! with a real ZooKeeper and four shardlog broker processes
//! (tests/common/replica_cluster.rs):
//! (a) a 6-partition RF=3 topic on brokers [1,2,3] is moved to [2,3,4]
//!     with kafka-python's `alter_partition_reassignments` while an
//!     acks=all idempotent producer runs. Broker 4's port is cut
//!     first, so the move stays mid-way: ListPartitionReassignments and
//!     `/brokers/topics/<t>` show RS = [2,3,4,1], AR = [4], RR = [1] (the
//!     CLUSTER.md layout); the controller is killed with kill -9; the new
//!     controller resumes from the znode; broker 4 is healed, joins every
//!     ISR and the new controller finishes: assignment [2,3,4], nothing
//!     listed, no AR/RR, leaders in [2,3,4], and the history check finds
//!     every acked record once and in order. Kafka's errors for a
//!     duplicate, a dead broker, an unknown partition and a cancellation
//!     with nothing moving are checked on the way.
//! (b) the legacy `/admin/reassign_partitions` znode moves a partition and
//!     is deleted when done; a cancellation (null replicas) of a move that
//!     cannot finish puts the origin replicas back; Kafka's
//!     kafka-reassign-partitions `--execute` then `--verify` moves it.
//!
//! Every wait has a deadline; timeouts are shortened through config.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::cluster::{json, read, wait_for, with_zk};
use common::replica_cluster::{check, drain, HistoryProducer, ReplCluster, System};
use common::run_py_script;
use shardlog::zk::store::{CreateMode, MetadataStore};

const PARTITIONS: i32 = 6;
/// kafka-reassign-partitions in Kafka 3.9.
const REASSIGN_COMMAND: &str = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand";

fn start() -> ReplCluster {
    let mut c = ReplCluster::start(
        System::Shardlog,
        4,
        &[
            "zookeeper.session.timeout.ms=3000",
            "replica.lag.time.max.ms=3000",
            "controlled.shutdown.retry.backoff.ms=500",
        ],
    );
    // The topic goes on [1,2,3]: broker 4 is away while it is created.
    c.node(4).stop();
    c
}

/// `/brokers/topics/<t>` as JSON.
fn topic_znode(c: &ReplCluster, topic: &str) -> serde_json::Value {
    let path = format!("/brokers/topics/{topic}");
    let (data, _) = read(&c.zk.address(), &[&path])[&path]
        .clone()
        .expect("topic znode");
    json(&data)
}

fn ids(v: &serde_json::Value) -> Vec<i32> {
    v.as_array()
        .map(|a| a.iter().map(|x| x.as_i64().unwrap() as i32).collect())
        .unwrap_or_default()
}

fn list(c: &ReplCluster) -> serde_json::Value {
    run_py_script(&["kafka"], "reassign.py", &["list".into(), c.bootstrap()])
}

/// Bootstrap through the brokers other than `but` (a cut broker only
/// slows the clients' first connection down).
fn bootstrap_without(c: &ReplCluster, but: &[i32]) -> String {
    c.nodes
        .iter()
        .filter(|n| !but.contains(&n.id))
        .map(|n| n.link.address())
        .collect::<Vec<_>>()
        .join(",")
}

/// Kafka's refusals: a duplicate, a dead broker, a cancellation with
/// nothing moving, an unknown partition; nothing changes.
fn assert_refusals(c: &ReplCluster, boot_ok: &str, topic: &str, before: &serde_json::Value) {
    let refusals = run_py_script(
        &["kafka"],
        "reassign.py",
        &[
            "alter".into(),
            boot_ok.into(),
            topic.into(),
            "0=2,2,3".into(),
            "1=2,3,9".into(),
            "2=cancel".into(),
            "77=1,2,3".into(),
        ],
    );
    assert_eq!(
        refusals["0"], "InvalidReplicationAssignmentError",
        "{refusals}"
    );
    assert_eq!(
        refusals["1"], "InvalidReplicationAssignmentError",
        "{refusals}"
    );
    assert_eq!(refusals["2"], "NoReassignmentInProgressError", "{refusals}");
    assert_eq!(refusals["77"], "UnknownTopicOrPartitionError", "{refusals}");
    assert_eq!(topic_znode(c, topic), *before, "refusals changed nothing");
}

/// RS = [2,3,4,1], AR = [4], RR = [1] in the topic znode and in
/// ListPartitionReassignments.
fn assert_mid_way(c: &ReplCluster, boot_ok: &str, topic: &str) {
    let mid = topic_znode(c, topic);
    for p in 0..PARTITIONS {
        let k = p.to_string();
        let rs = ids(&mid["partitions"][&k]);
        assert_eq!(&rs[..3], [2, 3, 4], "RS = TRS first, then OAR: {mid}");
        assert!(rs.contains(&1) && rs.len() == 4, "{mid}");
        assert_eq!(ids(&mid["adding_replicas"][&k]), [4], "{mid}");
        assert_eq!(ids(&mid["removing_replicas"][&k]), [1], "{mid}");
    }
    assert_eq!(mid["version"], 3);
    let listed = run_py_script(&["kafka"], "reassign.py", &["list".into(), boot_ok.into()]);
    assert_eq!(
        listed.as_object().unwrap().len(),
        PARTITIONS as usize,
        "{listed}"
    );
    let l0 = &listed[format!("{topic}:0")];
    assert_eq!(ids(&l0["adding_replicas"]), [4], "{listed}");
    assert_eq!(ids(&l0["removing_replicas"]), [1], "{listed}");
}

/// Every partition settled on [2,3,4] (that order), led there, broker 1
/// out of every ISR, nothing listed.
fn wait_completed(c: &ReplCluster, topic: &str) {
    wait_for(180, "every reassignment completed", || {
        let z = topic_znode(c, topic);
        let done = (0..PARTITIONS).all(|p| {
            let mut rs = ids(&z["partitions"][p.to_string()]);
            rs.sort();
            rs == [2, 3, 4]
        });
        let empty = z["adding_replicas"]
            .as_object()
            .is_some_and(|m| m.is_empty())
            && z["removing_replicas"]
                .as_object()
                .is_some_and(|m| m.is_empty());
        (done && empty).then_some(())
    });
    let end = topic_znode(c, topic);
    for p in 0..PARTITIONS {
        assert_eq!(
            ids(&end["partitions"][p.to_string()]),
            [2, 3, 4],
            "the target order is the final assignment: {end}"
        );
    }
    let states = c.states(topic, PARTITIONS);
    for (p, s) in &states {
        assert!([2, 3, 4].contains(&s.leader), "partition {p}: {s:?}");
        assert!(
            !s.isr.contains(&1),
            "the removed replica left the ISR: {p} {s:?}"
        );
    }
    assert_eq!(list(c), serde_json::json!({}), "nothing listed at the end");
}

#[test]
fn api_reassignment_survives_a_controller_kill_and_loses_no_acked_record() {
    let mut c = start();
    let topic = "moving";
    c.create_topic(topic, PARTITIONS, 3, &["min.insync.replicas=2"]);
    c.restart(4);
    let before = topic_znode(&c, topic);
    for p in 0..PARTITIONS {
        let mut rs = ids(&before["partitions"][p.to_string()]);
        rs.sort();
        assert_eq!(rs, [1, 2, 3], "partition {p} starts on [1,2,3]: {before}");
    }
    let mut producer = HistoryProducer::spawn(
        &bootstrap_without(&c, &[4]),
        topic,
        PARTITIONS,
        c.dir.path(),
        &["--acks=all", "--idempotence=1", "--rate=300"],
    );
    producer.wait_acks(60, 200, "the first acks");

    // Kafka's refusals, before anything moves.
    let boot_ok = bootstrap_without(&c, &[4]);
    assert_refusals(&c, &boot_ok, topic, &before);

    // Broker 4 cannot be reached: the move starts and stays mid-way.
    // Cut, not blackholed: connections are refused at once, so clients
    // move on to another broker while the controller's channel retries.
    c.node(4).link.cut();
    let specs: Vec<String> = (0..PARTITIONS).map(|p| format!("{p}=2,3,4")).collect();
    let mut args = vec!["alter".to_string(), boot_ok.clone(), topic.to_string()];
    args.extend(specs.iter().cloned());
    let started = run_py_script(&["kafka"], "reassign.py", &args);
    for p in 0..PARTITIONS {
        assert!(started[p.to_string()].is_null(), "partition {p}: {started}");
    }
    assert_mid_way(&c, &boot_ok, topic);
    producer.wait_acks(60, 200, "acks while the move is pending");

    // Kill the controller mid-way; another one takes over.
    let old = c.controller();
    assert_ne!(old, 4, "broker 4 cannot have won: it started last");
    c.node(old).kill9();
    let new = wait_for(60, "a new controller", || {
        let r = read(&c.zk.address(), &["/controller"]);
        let (data, _) = r["/controller"].clone()?;
        let id = json(&data)["brokerid"].as_i64()? as i32;
        (id != old).then_some(id)
    });
    eprintln!("[controller {old} killed, {new} took over]");
    producer.wait_acks(90, 200, "acks after the controller kill");
    let still = topic_znode(&c, topic);
    assert_eq!(
        ids(&still["adding_replicas"]["0"]),
        [4],
        "the new controller keeps the pending move: {still}"
    );

    // The old controller back (so its removed replicas can be deleted),
    // then broker 4 reachable again: it catches up and the new controller
    // finishes every partition.
    c.restart(old);
    c.node(4).heal();
    wait_completed(&c, topic);
    producer.wait_acks(90, 200, "acks after the move");

    let acked_file = producer.acked_file.clone();
    let report = producer.finish(180);
    assert_eq!(
        report["failed"], 0,
        "acks=all idempotent records failed: {report}"
    );
    let read_file = drain(&c.bootstrap(), topic, PARTITIONS, c.dir.path());
    let h = check(&acked_file, &read_file);
    eprintln!("[history: acked {} read {}]", h["acked"], h["read"]);
    assert!(
        h["ok"] == true,
        "history check failed (lost {}, duplicates {}, reordered {}):\n{h:#}",
        h["lost_count"],
        h["duplicate_count"],
        h["reordered_count"]
    );
    // Broker 1 no longer hosts the partitions (StopReplica with delete).
    wait_for(60, "broker 1's copies deleted", || {
        let dir = c.node(1).log_dir();
        (0..PARTITIONS)
            .all(|p| !dir.join(format!("{topic}-{p}")).exists())
            .then_some(())
    });
}

#[test]
fn legacy_znode_moves_a_partition_and_a_cancellation_restores_the_origin() {
    let mut c = start();
    let topic = "legacy";
    c.create_topic(topic, 2, 3, &[]);
    c.restart(4);

    // (1) /admin/reassign_partitions, as kafka-reassign-partitions of old
    // wrote it.
    let znode = format!(
        r#"{{"version":1,"partitions":[{{"topic":"{topic}","partition":0,"replicas":[4,3,2]}}]}}"#
    );
    with_zk(&c.zk.address(), |s| async move {
        s.create(
            "/admin/reassign_partitions",
            znode.as_bytes(),
            CreateMode::Persistent,
        )
        .await
        .expect("create the reassignment znode");
    });
    wait_for(120, "the znode's move done and the znode deleted", || {
        let z = topic_znode(&c, topic);
        let gone = read(&c.zk.address(), &["/admin/reassign_partitions"])
            ["/admin/reassign_partitions"]
            .is_none();
        (ids(&z["partitions"]["0"]) == [4, 3, 2] && gone).then_some(())
    });
    let s = c.wait_state(60, "a target replica leads", topic, 0, |s| {
        [4, 3, 2].contains(&s.leader)
    });
    assert!(!s.isr.contains(&1), "{s:?}");
    assert_eq!(
        topic_znode(&c, topic)["adding_replicas"],
        serde_json::json!({})
    );

    // (2) A move that cannot finish (its new replica unreachable), then
    // cancelled: back to the origin, nothing listed.
    let origin = ids(&topic_znode(&c, topic)["partitions"]["1"]);
    let outsider = (1..=4).find(|b| !origin.contains(b)).unwrap();
    let controller = c.controller();
    assert_ne!(
        outsider, controller,
        "the only broker off partition 1 leads the cluster"
    );
    c.node(outsider).link.cut();
    let boot_ok = bootstrap_without(&c, &[outsider]);
    let mut target = origin.clone();
    target[2] = outsider;
    let spec = format!(
        "1={}",
        target
            .iter()
            .map(i32::to_string)
            .collect::<Vec<_>>()
            .join(",")
    );
    let r = run_py_script(
        &["kafka"],
        "reassign.py",
        &["alter".into(), boot_ok.clone(), topic.into(), spec],
    );
    assert!(r["1"].is_null(), "{r}");
    let mid = topic_znode(&c, topic);
    assert_eq!(ids(&mid["adding_replicas"]["1"]), [outsider], "{mid}");
    let r = run_py_script(
        &["kafka"],
        "reassign.py",
        &[
            "alter".into(),
            boot_ok.clone(),
            topic.into(),
            "1=cancel".into(),
        ],
    );
    assert!(r["1"].is_null(), "cancel accepted: {r}");
    let end = topic_znode(&c, topic);
    assert_eq!(ids(&end["partitions"]["1"]), origin, "{end}");
    assert_eq!(end["adding_replicas"], serde_json::json!({}), "{end}");
    assert_eq!(end["removing_replicas"], serde_json::json!({}), "{end}");
    let listed = run_py_script(&["kafka"], "reassign.py", &["list".into(), boot_ok]);
    assert_eq!(listed, serde_json::json!({}));
    c.node(outsider).heal();

    // (3) Kafka's own tool moves it.
    reassign_with_kafkas_tool(&c, topic, &target);
}

/// kafka-reassign-partitions (Java AdminClient): `--execute` moves
/// partition 1 of `topic` to `target`, `--verify` until it reports the
/// move completed; the znode then holds the target.
fn reassign_with_kafkas_tool(c: &ReplCluster, topic: &str, target: &[i32]) {
    let file = c.path("reassign.json");
    std::fs::write(
        &file,
        format!(r#"{{"version":1,"partitions":[{{"topic":"{topic}","partition":1,"replicas":{target:?}}}]}}"#),
    )
    .expect("write the reassignment file");
    let boot = c.bootstrap();
    let file = file.display().to_string();
    let tool = |mode: &str, extra: &[&str]| {
        let mut cmd = common::java::kafka_tool(REASSIGN_COMMAND);
        cmd.args([
            "--bootstrap-server",
            &boot,
            mode,
            "--reassignment-json-file",
            &file,
        ]);
        cmd.args(extra);
        let out = common::java::run_ok(&mut cmd, "kafka-reassign-partitions");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let out = tool("--execute", &[]);
    assert!(
        out.contains(&format!(
            "Successfully started partition reassignment for {topic}-1"
        )),
        "{out}"
    );
    // --verify also clears the (absent) throttles on every broker and the
    // topic (IncrementalAlterConfigs DELETE; tests/cluster_throttle.rs).
    wait_for(120, "kafka-reassign-partitions --verify: completed", || {
        let out = tool("--verify", &[]);
        out.contains(&format!("Reassignment of partition {topic}-1 is completed"))
            .then_some(())
    });
    assert_eq!(ids(&topic_znode(c, topic)["partitions"]["1"]), target);
}

fn long() -> bool {
    std::env::var_os("SHARDLOG_LONG").is_some()
}

/// Every partition of `topic` settled on the replicas `target` (any order),
/// nothing adding or removing.
fn wait_settled(c: &ReplCluster, topic: &str, target: &[i32], what: &str) {
    wait_for(180, what, || {
        let z = topic_znode(c, topic);
        let done = (0..PARTITIONS).all(|p| {
            let mut rs = ids(&z["partitions"][p.to_string()]);
            rs.sort();
            rs == target
        });
        let idle = z["adding_replicas"]
            .as_object()
            .is_some_and(|m| m.is_empty())
            && z["removing_replicas"]
                .as_object()
                .is_some_and(|m| m.is_empty());
        (done && idle).then_some(())
    });
}

/// Moves round the four brokers (each round leaves a different one out),
/// the controller killed with kill -9 right after each move is asked for
/// and started again; the acks=all idempotent producer runs throughout and
/// the history is checked at the end. Two rounds in CI; ten with
/// `SHARDLOG_LONG=1`.
#[test]
fn moves_round_the_brokers_through_controller_kills_keep_every_acked_record() {
    let mut c = ReplCluster::start(
        System::Shardlog,
        4,
        &[
            "zookeeper.session.timeout.ms=3000",
            "replica.lag.time.max.ms=3000",
            "controlled.shutdown.retry.backoff.ms=500",
        ],
    );
    let topic = "round";
    c.create_topic(topic, PARTITIONS, 3, &["min.insync.replicas=2"]);
    let mut producer = HistoryProducer::spawn(
        &c.bootstrap(),
        topic,
        PARTITIONS,
        c.dir.path(),
        &["--acks=all", "--idempotence=1", "--rate=300"],
    );
    producer.wait_acks(60, 200, "the first acks");
    let rounds = if long() { 10 } else { 2 };
    for round in 0..rounds {
        let left_out = round % 4 + 1;
        let target: Vec<i32> = (1..=4).filter(|b| *b != left_out).collect();
        let list = target
            .iter()
            .map(i32::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let specs: Vec<String> = (0..PARTITIONS).map(|p| format!("{p}={list}")).collect();
        let mut args = vec!["alter".to_string(), c.bootstrap(), topic.to_string()];
        args.extend(specs);
        let r = run_py_script(&["kafka"], "reassign.py", &args);
        assert!(
            (0..PARTITIONS).all(|p| r[p.to_string()].is_null()),
            "round {round}: {r}"
        );
        let controller = c.controller();
        c.node(controller).kill9();
        // Its session expires first: then another broker controls, and
        // the killed one can register its id again.
        let next = wait_for(60, "a new controller", || {
            let r = read(&c.zk.address(), &["/controller"]);
            let (data, _) = r["/controller"].clone()?;
            let id = json(&data)["brokerid"].as_i64()? as i32;
            (id != controller).then_some(id)
        });
        eprintln!(
            "[round {round}: target {target:?}, controller {controller} killed, {next} took over]"
        );
        c.restart(controller);
        wait_settled(
            &c,
            topic,
            &target,
            &format!("round {round} settled on {target:?}"),
        );
        for p in 0..PARTITIONS {
            c.wait_state(120, "the target replicas in the ISR", topic, p, |s| {
                target.iter().all(|r| s.isr.contains(r)) && target.contains(&s.leader)
            });
        }
        producer.wait_acks(90, 100, "acks after the round");
    }
    let acked_file = producer.acked_file.clone();
    let report = producer.finish(180);
    assert_eq!(
        report["failed"], 0,
        "acks=all idempotent records failed: {report}"
    );
    let read_file = drain(&c.bootstrap(), topic, PARTITIONS, c.dir.path());
    let h = check(&acked_file, &read_file);
    eprintln!(
        "[{rounds} rounds; history: acked {} read {}]",
        h["acked"], h["read"]
    );
    assert!(
        h["ok"] == true,
        "history check failed (lost {}, duplicates {}, reordered {}):\n{h:#}",
        h["lost_count"],
        h["duplicate_count"],
        h["reordered_count"]
    );
}
