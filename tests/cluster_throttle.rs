//! Replication throttles (issue 22; Kafka's `ReplicationQuotaManager`,
//! KIP-73) with a real ZooKeeper and four shardlog broker processes
//! (tests/common/replica_cluster.rs). A 3-partition RF=3 topic on brokers
//! [1,2,3] holds 80 MB per partition; each partition in turn gets a
//! replica on broker 4 under a 10 MB/s throttle, and the rate at which
//! broker 4's copy grows (its high watermark in its offset checkpoint,
//! written every 100 ms, times the 64 KiB records; sampled every 100 ms)
//! is measured past the burst the quota window allows
//! (`replication.quota.window.num=3` samples of 1 s: 2 s × 10 MB/s):
//! (a) leader side only: `leader.replication.throttled.rate` on the
//!     partition's leader and `leader.replication.throttled.replicas`
//!     naming it (set with Kafka's kafka-configs and IncrementalAlterConfigs);
//! (b) follower side only: `follower.replication.throttled.rate` on
//!     broker 4 and `follower.replication.throttled.replicas` naming it;
//! (c) Kafka's kafka-reassign-partitions `--execute --throttle 10000000`,
//!     which sets both; its `--verify` then removes every throttle config
//!     (broker rates and topic lists are gone from ZooKeeper).
//! Each measured rate must be within ±20% of 10 MB/s, and the move
//! unthrottled (a fourth partition-sized copy with no throttle) must be
//! faster than that, so the bound is the throttle's and not the host's.
//!
//! Every wait has a deadline; timeouts are shortened through config.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::cluster::{json, read, wait_for};

use common::replica_cluster::{hw_checkpoint, ReplCluster, System};
use common::run_py_script;

const TOPIC: &str = "throttled";
const PARTITIONS: i32 = 3;
const MEGABYTES: u64 = 80;
const RATE: f64 = 10_000_000.0;
/// What the 3 × 1 s window lets through before the rate reads over the
/// bound (2 s at the bound), plus a margin; measuring starts past it.
const BURST_BYTES: u64 = 25_000_000;
/// The value size tests/py/cluster_admin.py `fill` writes.
const RECORD_BYTES: u64 = 64 * 1024;
const REASSIGN_COMMAND: &str = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand";

fn admin(args: &[&str]) -> serde_json::Value {
    common::cluster_admin(args)
}

/// kafka-configs against the cluster; fails the test unless it succeeds.
fn kafka_configs(c: &ReplCluster, args: &[&str]) -> String {
    let mut cmd = common::java::kafka_tool("kafka.admin.ConfigCommand");
    cmd.args(["--bootstrap-server", &c.bootstrap()]).args(args);
    let out = common::java::run_ok(&mut cmd, "kafka-configs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `/brokers/topics/<topic>` as JSON.
fn topic_znode(c: &ReplCluster) -> serde_json::Value {
    let path = format!("/brokers/topics/{TOPIC}");
    let (data, _) = read(&c.zk.address(), &[&path])[&path]
        .clone()
        .expect("topic znode");
    json(&data)
}

fn replicas(c: &ReplCluster, p: i32) -> Vec<i32> {
    topic_znode(c)["partitions"][p.to_string()]
        .as_array()
        .expect("replica list")
        .iter()
        .map(|v| v.as_i64().expect("broker id") as i32)
        .collect()
}

/// Bytes of broker 4's copy of partition `p`: its high watermark (a
/// follower out of the ISR has it at its log end) from its
/// `replication-offset-checkpoint`, written every 100 ms here, times the
/// 64 KiB every record holds (segment files grow in preallocated steps,
/// so their sizes say little).
fn copied_bytes(c: &mut ReplCluster, p: i32) -> u64 {
    let hws = hw_checkpoint(&c.node(4).log_dir());
    let hw = hws.get(&(TOPIC.to_owned(), p)).copied().unwrap_or(0);
    u64::try_from(hw).unwrap_or(0) * RECORD_BYTES
}

/// Partition `p`'s replicas with one follower swapped for broker 4 (the
/// leader keeps serving the copy).
fn target_with_4(c: &ReplCluster, p: i32) -> Vec<i32> {
    let leader = c.state(TOPIC, p).leader;
    let mut target = replicas(c, p);
    let out = target
        .iter()
        .position(|b| *b != leader)
        .expect("a follower to replace");
    target[out] = 4;
    target
}

/// Start moving partition `p` to `target` (KIP-455, kafka-python).
fn start_move(c: &ReplCluster, p: i32, target: &[i32]) {
    let spec = format!(
        "{p}={}",
        target
            .iter()
            .map(i32::to_string)
            .collect::<Vec<_>>()
            .join(",")
    );
    let r = run_py_script(
        &["kafka"],
        "reassign.py",
        &["alter".into(), c.bootstrap(), TOPIC.into(), spec],
    );
    assert!(r[p.to_string()].is_null(), "reassignment refused: {r}");
}

/// Sample broker 4's copy of `p` until the move to `target` completes:
/// the copy rate (bytes/s) between `BURST_BYTES` and 95% of the data
/// (`None` when that took under a second: too fast to measure), and the
/// whole copy's seconds.
fn measure_copy(c: &mut ReplCluster, p: i32, target: &[i32], total: u64) -> (Option<f64>, f64) {
    let started = Instant::now();
    let mut samples: Vec<(f64, u64)> = Vec::new();
    loop {
        let bytes = copied_bytes(c, p);
        samples.push((started.elapsed().as_secs_f64(), bytes));
        let z = topic_znode(c);
        let moving = z["adding_replicas"]
            .as_object()
            .is_some_and(|m| m.contains_key(&p.to_string()));
        if !moving && replicas(c, p) == target && bytes * 100 >= total * 95 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the move of partition {p} did not finish in 120 s: {} bytes copied of {total}",
            bytes
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let end_mark = total * 95 / 100;
    let first = samples.iter().find(|(_, b)| *b >= BURST_BYTES);
    let last = samples.iter().rev().find(|(_, b)| *b <= end_mark);
    let whole = samples.last().map_or(0.0, |s| s.0);
    let steady = match (first, last) {
        (Some(&(t1, b1)), Some(&(t2, b2))) if t2 - t1 >= 1.0 => {
            let rate = (b2 - b1) as f64 / (t2 - t1);
            eprintln!(
                "partition {p}: {:.2} MB/s from {b1} to {b2} bytes over {:.2} s ({} samples, whole copy {whole:.1} s)",
                rate / 1e6,
                t2 - t1,
                samples.len(),
            );
            Some(rate)
        }
        _ => None,
    };
    (steady, whole)
}

fn assert_near_rate(what: &str, (steady, whole): (Option<f64>, f64)) {
    let Some(rate) = steady else {
        panic!("{what}: the copy took {whole:.1} s in all, too fast to be throttled");
    };
    assert!(
        (RATE * 0.8..=RATE * 1.2).contains(&rate),
        "{what}: {:.2} MB/s is not within 20% of {:.0} MB/s",
        rate / 1e6,
        RATE / 1e6
    );
}

fn start() -> (ReplCluster, u64) {
    let mut c = ReplCluster::start(
        System::Shardlog,
        4,
        &[
            "zookeeper.session.timeout.ms=3000",
            "replica.lag.time.max.ms=3000",
            "replication.quota.window.num=3",
            "replica.high.watermark.checkpoint.interval.ms=100",
            // A throttled follower with nothing to fetch waits this long
            // (Kafka's fetcher does the same); 1 s is a third of the window.
            "replica.fetch.backoff.ms=100",
        ],
    );
    // The topic goes on [1,2,3]: broker 4 is away while it is created.
    c.node(4).stop();
    c.create_topic(TOPIC, PARTITIONS + 1, 3, &[]);
    c.restart(4);
    let mut total = u64::MAX;
    for p in 0..=PARTITIONS {
        let r = admin(&[
            "fill",
            &c.bootstrap(),
            TOPIC,
            &p.to_string(),
            &MEGABYTES.to_string(),
        ]);
        assert_eq!(r["errors"], serde_json::json!([]), "{r}");
        total = total.min(r["bytes"].as_u64().expect("bytes"));
    }
    let zk = c.zk.address();
    wait_for(60, "broker 4 registered", || {
        read(&zk, &["/brokers/ids/4"])["/brokers/ids/4"]
            .is_some()
            .then_some(())
    });
    (c, total)
}

#[test]
fn reassignment_traffic_keeps_to_the_replication_throttle() {
    let (mut c, total) = start();

    // The host's own pace: partition 3 moved with no throttle at all.
    let target = target_with_4(&c, 3);
    start_move(&c, 3, &target);
    let (_, whole) = measure_copy(&mut c, 3, &target, total);
    let free = total as f64 / whole.max(0.1);
    assert!(
        free > RATE * 1.5,
        "unthrottled copy at {:.2} MB/s: this host cannot show a 10 MB/s throttle",
        free / 1e6
    );

    // (a) Leader side only.
    let leader = c.state(TOPIC, 0).leader;
    kafka_configs(
        &c,
        &[
            "--entity-type",
            "brokers",
            "--entity-name",
            &leader.to_string(),
            "--alter",
            "--add-config",
            "leader.replication.throttled.rate=10000000",
        ],
    );
    let set = format!("leader.replication.throttled.replicas=0:{leader}");
    admin(&["alter_config", &c.bootstrap(), TOPIC, &set]);
    let target = target_with_4(&c, 0);
    start_move(&c, 0, &target);
    assert_near_rate(
        "leader-side throttle",
        measure_copy(&mut c, 0, &target, total),
    );

    // (b) Follower side only (the leader's throttle names partition 0 only).
    kafka_configs(
        &c,
        &[
            "--entity-type",
            "brokers",
            "--entity-name",
            "4",
            "--alter",
            "--add-config",
            "follower.replication.throttled.rate=10000000",
        ],
    );
    admin(&[
        "alter_config",
        &c.bootstrap(),
        TOPIC,
        "follower.replication.throttled.replicas=1:4",
    ]);
    let target = target_with_4(&c, 1);
    start_move(&c, 1, &target);
    assert_near_rate(
        "follower-side throttle",
        measure_copy(&mut c, 1, &target, total),
    );

    // (c) Kafka's tool sets both and --verify takes them away.
    let target = target_with_4(&c, 2);
    reassign_with_kafkas_tool(&mut c, &target, total);
    eprintln!("unthrottled copy: {:.2} MB/s", free / 1e6);
}

/// kafka-reassign-partitions `--execute --throttle` for partition 2, the
/// rate measured, then `--verify` until completed: it clears the
/// throttles, which leaves no rate in any `/config/brokers/<id>` and no
/// throttled replica list on the topic.
fn reassign_with_kafkas_tool(c: &mut ReplCluster, target: &[i32], total: u64) {
    let file = c.path("reassign.json");
    std::fs::write(
        &file,
        format!(r#"{{"version":1,"partitions":[{{"topic":"{TOPIC}","partition":2,"replicas":{target:?}}}]}}"#),
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
    let out = tool("--execute", &["--throttle", "10000000"]);
    assert!(
        out.contains("The inter-broker throttle limit was set to 10000000 B/s"),
        "{out}"
    );
    assert_near_rate(
        "kafka-reassign-partitions --throttle",
        measure_copy(c, 2, target, total),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = tool("--verify", &[]);
        if out.contains(&format!("Reassignment of partition {TOPIC}-2 is completed"))
            && out.contains("Clearing broker-level throttles on brokers 1,2,3,4")
            && out.contains(&format!("Clearing topic-level throttles on topic {TOPIC}"))
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "kafka-reassign-partitions --verify never reported completion and the throttle removed:\n{out}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let zk = c.zk.address();
    for id in 1..=4 {
        let path = format!("/config/brokers/{id}");
        if let Some((data, _)) = read(&zk, &[&path])[&path].clone() {
            let config = json(&data)["config"].clone();
            for key in [
                "leader.replication.throttled.rate",
                "follower.replication.throttled.rate",
            ] {
                assert!(
                    config.get(key).is_none(),
                    "{path} still has {key}: {config}"
                );
            }
        }
    }
    let path = format!("/config/topics/{TOPIC}");
    let (data, _) = read(&zk, &[&path])[&path].clone().expect("topic config");
    let config = json(&data)["config"].clone();
    for key in [
        "leader.replication.throttled.replicas",
        "follower.replication.throttled.replicas",
    ] {
        assert!(
            config.get(key).is_none(),
            "{path} still has {key}: {config}"
        );
    }
}
