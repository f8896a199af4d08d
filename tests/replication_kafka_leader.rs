//! A shardlog broker as the follower of an Apache Kafka 3.9 leader
//! (ZooKeeper mode; `perf/kafka_peer.sh` starts Kafka broker 0 with its
//! own ZooKeeper, and Kafka is the controller). shardlog broker 1 joins
//! that ZooKeeper; an RF-2 topic is created on Kafka with replicas [0, 1],
//! so Kafka's controller sends shardlog LeaderAndIsr/UpdateMetadata and
//! shardlog's replica fetcher fetches from Kafka (ApiVersions, then
//! OffsetForLeaderEpoch v4 and Fetch v17 with ReplicaState and topic
//! ids). Records produced to Kafka appear in shardlog's log byte for byte,
//! and Kafka's leader takes shardlog into the ISR (it accepts the
//! follower's fetch positions as caught up), all over a KIP-227 fetch
//! session Kafka granted (one session, incremental fetches never refused,
//! the live tail followed). Then KIP-101 against Kafka:
//! shardlog, stopped, gets an unreplicated tail at the old epoch written
//! into its log; Kafka's leader epoch moves on (the controller's ISR
//! shrink) and takes other records; restarted, shardlog asks Kafka
//! (OffsetForLeaderEpoch v4) where its epoch ends, truncates its tail and
//! copies Kafka's history byte for byte.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{topic_name, Broker, Conn};
use kafka_protocol::messages::create_topics_request::{
    CreatableReplicaAssignment, CreatableTopic, CreateTopicsRequest,
};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{BrokerId, MetadataRequest};
use kafka_protocol::records::Compression;

const TOPIC: &str = "from-kafka";

struct KafkaPeer {
    dir: tempfile::TempDir,
    bootstrap: String,
    zk_port: u16,
}

fn peer_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("perf/kafka_peer.sh")
}

impl KafkaPeer {
    fn start() -> KafkaPeer {
        common::java::kafka_jars();
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("peer dir");
        let out = Command::new("bash")
            .arg(peer_script())
            .args(["start", "--dir"])
            .arg(dir.path())
            .args(["--partitions", "1", "--kafka-sizes"])
            .output()
            .expect("run perf/kafka_peer.sh");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "perf/kafka_peer.sh start failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let bootstrap = stdout
            .split_whitespace()
            .find_map(|w| w.strip_prefix("bootstrap="))
            .expect("bootstrap=")
            .to_owned();
        let env = std::fs::read_to_string(dir.path().join("peer.env")).expect("peer.env");
        let zk_port = env
            .split_whitespace()
            .find_map(|w| w.strip_prefix("ZK_PORT="))
            .expect("ZK_PORT=")
            .parse()
            .expect("port");
        KafkaPeer {
            dir,
            bootstrap,
            zk_port,
        }
    }
}

impl Drop for KafkaPeer {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(peer_script())
            .args(["stop", "--dir"])
            .arg(self.dir.path())
            .status();
    }
}

fn wait_for<T>(secs: u64, what: &str, mut cond: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = cond() {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {secs} s waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// p0 of TOPIC: (leader, isr) as Kafka's Metadata says.
fn kafka_partition(kafka: &str) -> Option<(i32, Vec<i32>)> {
    kafka_partition_epoch(kafka).map(|(l, isr, _)| (l, isr))
}

/// p0 of TOPIC: (leader, isr, leader epoch).
fn kafka_partition_epoch(kafka: &str) -> Option<(i32, Vec<i32>, i32)> {
    let req = MetadataRequest::default()
        .with_allow_auto_topic_creation(false)
        .with_topics(Some(vec![
            MetadataRequestTopic::default().with_name(Some(topic_name(TOPIC)))
        ]));
    let resp = Conn::open_addr(kafka).call(9, &req);
    let p = resp.topics.first()?.partitions.first()?;
    (p.error_code == 0).then(|| {
        (
            p.leader_id.0,
            p.isr_nodes.iter().map(|b| b.0).collect(),
            p.leader_epoch,
        )
    })
}

fn batches(addr: &str) -> Vec<Bytes> {
    Conn::open_addr(addr).fetch_to_high_watermark(TOPIC, 0, 0)
}

fn shardlog_overrides(zk_port: u16) -> Vec<String> {
    vec![
        format!("zookeeper.connect=127.0.0.1:{zk_port}"),
        "zookeeper.session.timeout.ms=6000".into(),
        "broker.id=1".into(),
        "replica.fetch.backoff.ms=200".into(),
        // KIP-227 sessions with Kafka's leader (off by default).
        "shardlog.replica.fetch.session.enable=true".into(),
    ]
}

fn start_shardlog(zk_port: u16, dir: Option<tempfile::TempDir>) -> Broker {
    let o = shardlog_overrides(zk_port);
    let o: Vec<&str> = o.iter().map(String::as_str).collect();
    let dir = dir.unwrap_or_else(common::new_log_dir);
    Broker::start_logging(dir, &o, Some("warn,shardlog::replication::fetcher=info"))
}

/// Create TOPIC on Kafka with p0 on brokers [0, 1] once Kafka's
/// controller knows broker 1, and wait for Kafka to lead it.
fn create_topic(kafka: &KafkaPeer) {
    // Kafka's controller learns of broker 1 from ZooKeeper; until then a
    // manual assignment naming it is refused.
    wait_for(
        60,
        "Kafka to accept an assignment on brokers 0 and 1",
        || {
            let req = CreateTopicsRequest::default()
                .with_timeout_ms(30_000)
                .with_topics(vec![CreatableTopic::default()
                    .with_name(topic_name(TOPIC))
                    .with_num_partitions(-1)
                    .with_replication_factor(-1)
                    .with_assignments(vec![CreatableReplicaAssignment::default()
                        .with_partition_index(0)
                        .with_broker_ids(vec![BrokerId(0), BrokerId(1)])])]);
            let resp = Conn::open_addr(&kafka.bootstrap).call(5, &req);
            let code = resp.topics[0].error_code;
            // 36: TOPIC_ALREADY_EXISTS (a retry after a slow answer).
            (code == 0 || code == 36).then_some(())
        },
    );
    wait_for(60, "a leader for p0", || {
        kafka_partition(&kafka.bootstrap).filter(|(leader, _)| *leader == 0)
    });
}

fn produce_to(addr: &str, values: std::ops::Range<u32>) {
    let mut conn = Conn::open_addr(addr);
    for i in values {
        let value = format!("kafka-{i}-{}", "y".repeat((i as usize * 53) % 400));
        let batch = common::encode_batch(
            &[(None, value.as_bytes(), common::now_ms())],
            Compression::None,
        );
        let r = conn.produce(TOPIC, 0, batch, 1);
        assert_eq!(r.error_code, 0, "produce {i} to {addr}: {r:?}");
    }
}

fn wait_for_high_watermark(addr: &str, hw: i64) {
    wait_for(60, &format!("shardlog's HW to reach {hw}"), || {
        (Conn::open_addr(addr).high_watermark(TOPIC, 0) == hw).then_some(())
    });
}

#[test]
fn shardlog_follows_a_kafka_3_9_leader_byte_for_byte() {
    let kafka = KafkaPeer::start();
    let shardlog = start_shardlog(kafka.zk_port, None);
    create_topic(&kafka);
    produce_to(&kafka.bootstrap, 0..30);
    let shardlog_addr = shardlog.bootstrap();
    wait_for_high_watermark(&shardlog_addr, 30);
    let (from_kafka, from_shardlog) = (batches(&kafka.bootstrap), batches(&shardlog_addr));
    assert_eq!(from_kafka.len(), 30);
    assert!(
        from_kafka == from_shardlog,
        "shardlog's copy differs from Kafka's batches"
    );
    // Kafka's leader saw shardlog's fetch positions reach its log end.
    wait_for(60, "Kafka to add shardlog to the ISR", || {
        kafka_partition(&kafka.bootstrap).filter(|(_, isr)| isr.contains(&1))
    });
    // The live tail, then the session: Kafka's leader granted one on the
    // first full fetch and took every incremental fetch after it (a wrong
    // epoch or an unknown id would have logged a reset).
    produce_to(&kafka.bootstrap, 30..45);
    wait_for_high_watermark(&shardlog_addr, 45);
    assert!(
        batches(&kafka.bootstrap) == batches(&shardlog_addr),
        "shardlog's copy of the tail differs from Kafka's batches"
    );
    let lines = common::fetcher_lines(&shardlog);
    // (Kafka closes a session its follower emptied, e.g. by forgetting a
    // partition backing off at the start: a second one is then opened.)
    let granted = lines
        .iter()
        .filter(|l| l.contains("fetch session established"))
        .count();
    assert!(granted >= 1, "Kafka granted a session: {lines:#?}");
    assert!(
        !lines.iter().any(|l| l.contains("fetch session reset")),
        "Kafka refused no session: {lines:#?}"
    );
    shardlog.stop();
}

/// Append `n` batches at leader epoch `epoch` to TOPIC-0's log under
/// `log_dir` (the broker is stopped): records no leader ever had.
fn write_unreplicated_tail(log_dir: &std::path::Path, epoch: i32, n: u32) -> i64 {
    let dir = log_dir.to_path_buf();
    glommio::LocalExecutorBuilder::default()
        .io_memory(512 << 10)
        .spawn(move || async move {
            shardlog::io::dma::prime_iopoll_probe(&dir).await.unwrap();
            let mut log = shardlog::storage::PartitionLog::open(
                &dir,
                &shardlog::types::TopicPartition::new(TOPIC, 0),
                None,
                shardlog::storage::LogConfig::default(),
                shardlog::storage::ShardStorage::standalone(shardlog::storage::BatchCache::shared(
                    1 << 20,
                )),
            )
            .await
            .unwrap();
            for i in 0..n {
                let value = format!("unreplicated-{i}");
                let batch = common::encode_batch(
                    &[(None, value.as_bytes(), common::now_ms())],
                    Compression::None,
                );
                log.append(
                    bytes::BytesMut::from(&batch[..]),
                    epoch,
                    common::now_ms(),
                    false,
                )
                .await
                .unwrap();
            }
            let leo = log.log_end_offset();
            log.close().await.unwrap();
            leo
        })
        .unwrap()
        .join()
        .unwrap()
}

#[test]
fn shardlog_truncates_an_unreplicated_tail_by_kafkas_leader_epochs() {
    let kafka = KafkaPeer::start();
    let shardlog = start_shardlog(kafka.zk_port, None);
    create_topic(&kafka);
    produce_to(&kafka.bootstrap, 0..10);
    wait_for_high_watermark(&shardlog.bootstrap(), 10);
    let (_, epoch_before, _) = {
        let (l, isr, e) = kafka_partition_epoch(&kafka.bootstrap).unwrap();
        (l, e, isr)
    };
    let (_, dir) = shardlog.stop_keeping_dir();
    // Kafka's controller drops broker 1 from the ISR, which in ZooKeeper
    // mode bumps the leader epoch.
    let epoch_after = wait_for(60, "Kafka's ISR to shrink to the leader", || {
        kafka_partition_epoch(&kafka.bootstrap)
            .filter(|(_, isr, e)| *isr == [0] && *e > epoch_before)
            .map(|(_, _, e)| e)
    });
    let leo = write_unreplicated_tail(dir.path(), epoch_before, 3);
    assert_eq!(leo, 13);
    produce_to(&kafka.bootstrap, 10..15);
    let shardlog = start_shardlog(kafka.zk_port, Some(dir));
    let addr = shardlog.bootstrap();
    wait_for_high_watermark(&addr, 15);
    let (from_kafka, from_shardlog) = (batches(&kafka.bootstrap), batches(&addr));
    assert_eq!(from_kafka.len(), 15);
    assert!(
        from_kafka == from_shardlog,
        "shardlog kept its unreplicated tail or copied Kafka's history wrongly"
    );
    let checkpoint = std::fs::read_to_string(
        shardlog
            .log_dir
            .path()
            .join(format!("{TOPIC}-0"))
            .join("leader-epoch-checkpoint"),
    )
    .unwrap();
    assert!(
        checkpoint.ends_with(&format!("{epoch_after} 10\n")),
        "{checkpoint}"
    );
    shardlog.stop();
}
