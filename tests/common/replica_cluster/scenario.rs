//! The replication scenarios' set-up and checks (tests/cluster_replication.rs):
//! a 3-broker cluster with short timeouts through config, probed for
//! replication before a scenario waits on acks=all; foreground
//! `history.py produce`; the ISR as Metadata reports it; a refused acks=all
//! write that must leave the leader's log alone; the kill -9 of leaders in
//! turn under an acks=all idempotent history producer.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{
    assert_history_ok, assert_replicas_identical, check, drain, stored_batches, HistoryProducer,
    ReplCluster, System,
};
use crate::common::cluster::wait_for;
use crate::common::run_py_script;

/// ZooKeeper session: a dead or isolated broker is noticed within ~3 s.
pub const SESSION_MS: u64 = 3000;

pub fn settings(min_isr: i32, unclean: bool, lag_ms: u64, session_ms: u64) -> Vec<String> {
    vec![
        format!("zookeeper.session.timeout.ms={session_ms}"),
        format!("replica.lag.time.max.ms={lag_ms}"),
        format!("min.insync.replicas={min_isr}"),
        format!("unclean.leader.election.enable={unclean}"),
        "default.replication.factor=3".into(),
        "controlled.shutdown.retry.backoff.ms=500".into(),
    ]
}

/// The cluster, after [`probe_replication`] passed on it.
pub fn start(system: System, min_isr: i32, unclean: bool, lag_ms: u64) -> ReplCluster {
    start_with(system, min_isr, unclean, lag_ms, SESSION_MS)
}

pub fn start_with(
    system: System,
    min_isr: i32,
    unclean: bool,
    lag_ms: u64,
    session_ms: u64,
) -> ReplCluster {
    let s = settings(min_isr, unclean, lag_ms, session_ms);
    let refs: Vec<&str> = s.iter().map(String::as_str).collect();
    let c = ReplCluster::start(system, 3, &refs);
    probe_replication(&c);
    c
}

/// Fails fast and clearly where replication is missing (before any
/// scenario waits on acks=all): 10 acks=1 records to a topic of its own
/// (acks=1 answers without followers), then every replica must hold them.
pub fn probe_replication(c: &ReplCluster) {
    // flush.messages=1: what a replica holds is in its files at once
    // (shardlog's appender writes a partial buffer only when it flushes).
    c.create_topic("probe", 1, 3, &["flush.messages=1"]);
    let acked = c.path("acked-probe.txt");
    let r = run_py_script(
        &["confluent_kafka"],
        "history.py",
        &[
            "produce".into(),
            c.bootstrap(),
            "probe".into(),
            "1".into(),
            acked.display().to_string(),
            "--count=10".into(),
            "--acks=1".into(),
            "--idempotence=0".into(),
            "--timeout-ms=20000".into(),
        ],
    );
    assert_eq!(
        r["acked"], 10,
        "{:?}: acks=1 to the probe topic: {r}",
        c.system
    );
    assert_replicating(c, "probe", 0, 30);
}

pub fn sorted(v: &[i32]) -> Vec<i32> {
    let mut v = v.to_vec();
    v.sort();
    v
}

/// Fails fast and clearly where replication is missing: within `secs`
/// every replica of `topic-p` has a batch on disk after acks arrived.
pub fn assert_replicating(c: &ReplCluster, topic: &str, p: i32, secs: u64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let missing: Vec<i32> = c
            .nodes
            .iter()
            .filter(|n| n.is_running())
            .filter(|n| {
                let dir = n.log_dir().join(format!("{topic}-{p}"));
                !dir.is_dir() || stored_batches(&n.log_dir(), topic, p).is_empty()
            })
            .map(|n| n.id)
            .collect();
        if missing.is_empty() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{:?}: brokers {missing:?} hold no batch of {topic}-{p} {secs} s after acknowledged \
             writes: followers are not replicating (issue 20's fetchers missing?)",
            c.system
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One file with the lines of several acked files (one check over them).
pub fn concat(c: &ReplCluster, name: &str, files: &[&Path]) -> PathBuf {
    let out = c.path(name);
    let mut text = String::new();
    for f in files {
        text.push_str(&std::fs::read_to_string(f).unwrap_or_default());
    }
    std::fs::write(&out, text).expect("write");
    out
}

/// `history.py produce --count=N` in the foreground.
pub fn produce(
    c: &ReplCluster,
    topic: &str,
    p: i32,
    name: &str,
    count: u64,
    opts: &[&str],
) -> (serde_json::Value, PathBuf) {
    let acked = c.path(&format!("acked-{name}.txt"));
    let mut args: Vec<String> = vec![
        "produce".into(),
        c.bootstrap(),
        topic.into(),
        "1".into(),
        acked.display().to_string(),
        format!("--count={count}"),
        format!("--producer={name}"),
        format!("--partition={p}"),
    ];
    args.extend(opts.iter().map(|s| s.to_string()));
    (
        run_py_script(&["confluent_kafka", "kafka"], "history.py", &args),
        acked,
    )
}

pub fn isr_in_metadata(c: &ReplCluster, via: i32, topic: &str, p: i32) -> Vec<i32> {
    let node = c.nodes.iter().find(|n| n.id == via).unwrap();
    let d = c.describe(&node.link.address(), topic);
    let isr: Vec<i32> =
        serde_json::from_value(d["partitions"][p.to_string()]["isr"].clone()).unwrap_or_default();
    sorted(&isr)
}

/// With the ISR below min.insync.replicas, acks=all records are refused
/// with NOT_ENOUGH_REPLICAS and the leader's log does not change.
pub fn assert_refused_and_not_appended(c: &ReplCluster, topic: &str, p: i32, leader: i32) {
    let system = c.system;
    let leader_dir = c.nodes.iter().find(|n| n.id == leader).unwrap().log_dir();
    let before = stored_batches(&leader_dir, topic, p);
    // No retries: the broker's own answer reaches the test.
    let (r, _) = produce(
        c,
        topic,
        p,
        "refused",
        20,
        &[
            "--acks=all",
            "--idempotence=0",
            "--retries=0",
            "--timeout-ms=20000",
        ],
    );
    assert_eq!(
        r["acked"], 0,
        "{system:?}: acks=all acknowledged with 1 of 3 (min ISR 2): {r}"
    );
    assert_eq!(
        r["errors"]["NOT_ENOUGH_REPLICAS"], 20,
        "{system:?}: every record refused with NOT_ENOUGH_REPLICAS: {r}"
    );
    let after = stored_batches(&leader_dir, topic, p);
    assert_eq!(
        after, before,
        "{system:?}: refused records were appended to the leader's log"
    );
}

/// `SHARDLOG_LONG=1`: the long forms (more records, more kills).
pub fn long() -> bool {
    std::env::var_os("SHARDLOG_LONG").is_some()
}

/// Leaders kill -9'd in turn (and restarted) while an acks=all idempotent
/// producer writes `topic` (RF=3, min.insync.replicas=2, already created on
/// `c`): every acked record read exactly once, in order, nothing read that
/// was never acked, and every replica's batches identical up to the HW
/// after a clean stop. `label` names the scenario in messages ("kill -9 of
/// leaders", "kill -9 of leaders, SSL inter-broker").
pub fn kill_leaders_with_history(
    c: &mut ReplCluster,
    system: System,
    label: &str,
    topic: &str,
    partitions: i32,
) {
    let kills = if long() { 20 } else { 3 };
    let rate = if long() { "0" } else { "400" };
    let mut producer = HistoryProducer::spawn(
        &c.bootstrap(),
        topic,
        partitions,
        c.dir.path(),
        &["--acks=all", "--idempotence=1", &format!("--rate={rate}")],
    );
    producer.wait_acks(60, 100, &format!("the first 100 acks ({label})"));
    for k in 0..kills {
        let p = k % partitions;
        let before = c.state(topic, p);
        let victim = before.leader;
        c.node(victim).kill9();
        let after = c.wait_state(60, "a new leader", topic, p, |s| {
            s.leader >= 0 && s.leader != victim && s.leader_epoch > before.leader_epoch
        });
        eprintln!(
            "[{system:?} {label}: kill {k}: broker {victim} killed, {topic}-{p} now {after:?}]"
        );
        producer.wait_acks(60, 100, "100 acks after the kill");
        c.restart(victim);
        for q in 0..partitions {
            c.wait_state(120, "the restarted broker back in the ISR", topic, q, |s| {
                s.isr.contains(&victim)
            });
        }
    }
    if long() {
        wait_for(3600, "1 M acks", || {
            (producer.acked_so_far() >= 1_000_000).then_some(())
        });
    }
    let acked_file = producer.acked_file.clone();
    let report = producer.finish(180);
    eprintln!("[{system:?} {label}: producer: {report}]");
    assert_eq!(
        report["failed"], 0,
        "{system:?} {label}: acks=all idempotent records failed: {report}"
    );
    let read_file = drain(&c.bootstrap(), topic, partitions, c.dir.path());
    let h = check(&acked_file, &read_file);
    eprintln!(
        "[{system:?} {label}: history: acked {} read {}]",
        h["acked"], h["read"]
    );
    assert_history_ok(system, label, &h);
    assert_eq!(
        h["unacked_read_count"], 0,
        "{system:?} {label}: records read that were never acked (the producer saw every outcome): {h}"
    );
    let hws = assert_replicas_identical(c, topic, partitions);
    let per: BTreeMap<String, u64> =
        serde_json::from_value(h["per_partition_read"].clone()).unwrap();
    for (p, hw) in hws.iter().enumerate() {
        assert_eq!(
            per.get(&p.to_string()).copied().unwrap_or(0),
            *hw as u64,
            "{system:?} {label}: {topic}-{p}: HW {hw} after the clean stop vs records read"
        );
    }
}
