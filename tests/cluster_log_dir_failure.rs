//! A failed log dir in a cluster (ZooKeeper mode, as Kafka 3.9): broker 1
//! has two log dirs, the second on a fault-injecting FUSE mount
//! (`tests/common/faultfs.rs`); its fsyncs start failing under a running
//! acks=all idempotent producer. Broker 1 takes that dir offline, writes
//! `/log_dir_event_notification/log_dir_event_<seq>`; the controller sends
//! it LeaderAndIsr, takes the replicas it answers KAFKA_STORAGE_ERROR for
//! offline (new leaders on broker 2, broker 1 out of their ISRs) and
//! deletes the notification, while broker 1 keeps its other dir's
//! replicas in sync; its `/metrics` shows the dir offline (Kafka's
//! `LogManager` gauges). Restarted with the dir healthy, broker 1 catches
//! up and rejoins every ISR. The history: every acknowledged record read back
//! once, in order per partition.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use common::cluster::{children, wait_for};
use common::faultfs::FaultFs;
use common::partitions_in;
use common::replica_cluster::{
    assert_history_ok, check, drain, HistoryProducer, ReplCluster, System,
};

// Three defects this test found (2026-12-05), now fixed:
// - a poisoned log answered pipelined idempotent batches
//   OUT_OF_ORDER_SEQUENCE_NUMBER before KAFKA_STORAGE_ERROR; librdkafka's
//   epoch bump then duplicated a batch the follower held (a test of its
//   own in storage_log_dir_failure);
// - an offline replica kept fetching, and the leader took it back into
//   the ISR (the ISR checks here);
// - a parked acks=all produce was not looked at again when a LeaderAndIsr
//   shrank the ISR or moved the leader, and waited out its timeout
//   (cluster_replication `parked_produce`).
#[test]
fn a_failed_log_dir_moves_its_replicas_to_the_other_broker_and_the_rest_stays_in_sync() {
    let fs = FaultFs::mount();
    let settings = [
        "zookeeper.session.timeout.ms=6000",
        "replica.lag.time.max.ms=3000",
        "min.insync.replicas=1",
        // Every append is flushed: a write to the failing dir meets a
        // failed fsync at once, on the leader and on the follower.
        "log.flush.interval.messages=1",
    ];
    let mut c = ReplCluster::start(System::Shardlog, 2, &settings);
    let own = c.node(1).log_dir();
    let faulty = fs.log_dir();
    c.node(1).stop();
    c.node(1)
        .add_setting(&format!("log.dirs={},{}", own.display(), faulty.display()));
    let metrics = format!("127.0.0.1:{}", common::ports::reserved_port());
    c.node(1)
        .add_setting(&format!("shardlog.metrics.listener={metrics}"));
    c.restart(1);
    let faulty_label = faulty.display().to_string();
    assert_eq!(
        offline_dirs(&metrics, &faulty_label),
        Some((0, 0)),
        "no dir offline at the start"
    );
    let (topic, partitions) = ("dirs", 8);
    c.create_topic(topic, partitions, 2, &[]);
    let bad = partitions_in(&faulty, topic);
    assert_eq!(
        bad.len(),
        4,
        "broker 1 spreads its 8 replicas over its two dirs: {bad:?} on the mount"
    );
    let mut producer = HistoryProducer::spawn(
        &c.bootstrap(),
        topic,
        partitions,
        c.dir.path(),
        &["--acks=all", "--idempotence=1", "--rate=400"],
    );
    producer.wait_acks(60, 200, "the first 200 acks");

    fs.fail_fsync(true);
    for &p in &bad {
        let s = c.wait_state(60, "broker 1's replica out", topic, p, |s| {
            s.leader == 2 && !s.isr.contains(&1)
        });
        eprintln!("[{topic}-{p} in the failed dir: {s:?}]");
    }
    let zk = c.zk.address();
    wait_for(30, "the controller deleted the log dir event", || {
        children(&zk, "/log_dir_event_notification")
            .is_empty()
            .then_some(())
    });
    // Kafka's LogManager gauges (Strimzi's offline-log-directory alert).
    wait_for(
        30,
        "OfflineLogDirectoryCount 1, the failed dir's gauge 1",
        || (offline_dirs(&metrics, &faulty_label) == Some((1, 1))).then_some(()),
    );
    producer.wait_acks(60, 400, "400 acks after the failure");
    assert!(
        c.node(1).is_running(),
        "broker 1 keeps running with one dir left"
    );
    for p in (0..partitions).filter(|p| !bad.contains(p)) {
        let s = c.state(topic, p);
        assert!(
            s.isr.contains(&1) && s.isr.contains(&2),
            "{topic}-{p} is in broker 1's healthy dir: both replicas stay in sync: {s:?}"
        );
    }

    // The dir healthy again and broker 1 restarted: it catches up and is
    // back in every ISR.
    fs.fail_fsync(false);
    c.node(1).stop();
    c.restart(1);
    for p in 0..partitions {
        c.wait_state(120, "broker 1 back in the ISR", topic, p, |s| {
            s.isr.contains(&1)
        });
    }
    producer.wait_acks(60, 200, "200 acks after the restart");
    assert_eq!(
        offline_dirs(&metrics, &faulty_label),
        Some((0, 0)),
        "the dir is online again after the restart"
    );
    let acked_file = producer.acked_file.clone();
    let report = producer.finish(180);
    eprintln!("[producer: {report}]");
    assert_eq!(
        report["failed"], 0,
        "acks=all idempotent records failed: {report}"
    );
    let read_file = drain(&c.bootstrap(), topic, partitions, c.dir.path());
    let h = check(&acked_file, &read_file);
    eprintln!("[history: acked {} read {}]", h["acked"], h["read"]);
    assert_history_ok(System::Shardlog, "a failed log dir", &h);
}

/// From the broker's `/metrics` at `addr`: `OfflineLogDirectoryCount` and
/// the `LogDirectoryOffline` gauge of the dir whose label ends in `dir`
/// (`None`: no answer, or either series missing).
fn offline_dirs(addr: &str, dir: &str) -> Option<(u64, u64)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .ok()?;
    let req = format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let value = |prefix: &str| -> Option<u64> {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
    };
    let count = value("kafka_log_logmanager_offlinelogdirectorycount ")?;
    let labelled = text
        .lines()
        .filter(|l| l.starts_with("kafka_log_logmanager_logdirectoryoffline{"))
        .find(|l| l.contains(&format!("{dir}\"}}")))?;
    let one = labelled.rsplit(' ').next()?.parse().ok()?;
    Some((count, one))
}
