//! A shardlog broker as the follower of an Apache Kafka 3.9 leader
//! (ZooKeeper mode; `perf/kafka_peer.sh` starts Kafka broker 0 with its
//! own ZooKeeper, and Kafka is the controller). shardlog broker 1 joins
//! that ZooKeeper; an RF-2 topic is created on Kafka with replicas [0, 1],
//! so Kafka's controller sends shardlog LeaderAndIsr/UpdateMetadata and
//! shardlog's replica fetcher fetches from Kafka (ApiVersions, then
//! OffsetForLeaderEpoch v4 and Fetch v17 with ReplicaState and topic
//! ids). Records produced to Kafka appear in shardlog's log byte for byte,
//! and Kafka's leader takes shardlog into the ISR (it accepts the
//! follower's fetch positions as caught up).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;
mod java_support;

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
        java_support::kafka_jars();
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
    let req = MetadataRequest::default()
        .with_allow_auto_topic_creation(false)
        .with_topics(Some(vec![
            MetadataRequestTopic::default().with_name(Some(topic_name(TOPIC)))
        ]));
    let resp = Conn::open_addr(kafka).call(9, &req);
    let p = resp.topics.first()?.partitions.first()?;
    (p.error_code == 0).then(|| (p.leader_id.0, p.isr_nodes.iter().map(|b| b.0).collect()))
}

fn batches(addr: &str) -> Vec<Bytes> {
    Conn::open_addr(addr).fetch_to_high_watermark(TOPIC, 0, 0)
}

#[test]
fn shardlog_follows_a_kafka_3_9_leader_byte_for_byte() {
    let kafka = KafkaPeer::start();
    let shardlog = Broker::start_with(&[
        &format!("zookeeper.connect=127.0.0.1:{}", kafka.zk_port),
        "zookeeper.session.timeout.ms=6000",
        "broker.id=1",
        "replica.fetch.backoff.ms=200",
    ]);
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
    let mut conn = Conn::open_addr(&kafka.bootstrap);
    for i in 0..30u32 {
        let value = format!("kafka-{i}-{}", "y".repeat((i as usize * 53) % 400));
        let batch = common::encode_batch(
            &[(None, value.as_bytes(), common::now_ms())],
            Compression::None,
        );
        let r = conn.produce(TOPIC, 0, batch, 1);
        assert_eq!(r.error_code, 0, "produce {i} to Kafka: {r:?}");
    }
    let shardlog_addr = shardlog.bootstrap();
    wait_for(60, "shardlog to copy Kafka's log", || {
        let hw = Conn::open_addr(&shardlog_addr).list_offset(TOPIC, 0, -1);
        (hw.error_code == 0 && hw.offset == 30).then_some(())
    });
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
    shardlog.stop();
}
