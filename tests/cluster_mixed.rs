//! Mixed clusters (issue 24): Apache Kafka 3.9 brokers and shardlog brokers
//! in one ZooKeeper cluster (tests/common/replica_cluster.rs starts Kafka
//! from the cached jars and shardlog processes against one real
//! ZooKeeper).
//!
//! (a) Two Kafka brokers and one shardlog broker, a Kafka broker the
//!     controller: Kafka's kafka-topics creates a 6-partition RF=3 topic
//!     (min.insync.replicas=2), so shardlog leads the partitions it is
//!     preferred for and follows the others; an acks=all idempotent
//!     producer (tests/py/history.py, confluent-kafka) runs while each
//!     broker in turn — shardlog included — is killed with kill -9 and
//!     restarted, and every partition's ISR is whole again before the
//!     next. Then every acked record is read back once and in order, and
//!     after a clean stop the replicas' logs are identical batch for batch
//!     (offsets, leader epochs, CRCs) up to the HW across both
//!     implementations.
//! (b) The same with shardlog as the controller (started first): a topic
//!     created through shardlog alone (CreateTopics to its address) gets
//!     its LeaderAndIsr to the Kafka brokers, which lead and follow it;
//!     the Kafka brokers get their producer-id blocks from it
//!     (AllocateProducerIds); the Kafka brokers are killed first, then
//!     shardlog (a Kafka broker takes over the controller), with the same
//!     history and replica checks.
//!
//! Every wait has a deadline; timeouts are shortened through config.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod java_support;
#[path = "common/replica_cluster.rs"]
mod replica_cluster;

use std::collections::BTreeMap;

use replica_cluster::{
    assert_history_ok, assert_replicas_identical, check, drain, HistoryProducer, ReplCluster,
    System,
};

const TOPIC: &str = "mixed";
const PARTITIONS: i32 = 6;
const SHARDLOG: i32 = 3;

fn settings() -> Vec<&'static str> {
    vec![
        "zookeeper.session.timeout.ms=6000",
        "replica.lag.time.max.ms=6000",
        "min.insync.replicas=2",
        "default.replication.factor=3",
        "controlled.shutdown.retry.backoff.ms=500",
        "offsets.topic.replication.factor=3",
    ]
}

/// Kafka's kafka-topics creates the topic (to any broker; Kafka's admin
/// client picks one).
fn kafka_topics_create(c: &ReplCluster) {
    let mut cmd = java_support::kafka_tool("org.apache.kafka.tools.TopicCommand");
    cmd.args(["--bootstrap-server", &c.bootstrap(), "--create"])
        .args(["--topic", TOPIC, "--partitions", &PARTITIONS.to_string()])
        .args(["--replication-factor", "3"]);
    let out = java_support::run_ok(&mut cmd, "kafka-topics --create");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("Created topic {TOPIC}.")), "{text}");
    common::cluster::wait_for(120, "every partition led with a full ISR", || {
        let s = c.states(TOPIC, PARTITIONS);
        (s.len() == PARTITIONS as usize && s.values().all(|st| st.leader >= 0 && st.isr.len() == 3))
            .then_some(())
    });
}

#[test]
fn kafka_controls_two_kafka_brokers_and_a_shardlog_broker_through_kill9_of_each() {
    let mut c = ReplCluster::start_mixed(
        &[System::Kafka, System::Kafka, System::Shardlog],
        &settings(),
    );
    let controller = c.controller();
    assert!(
        controller != SHARDLOG,
        "a Kafka broker started first and should be the controller, not {controller}"
    );
    kafka_topics_create(&c);
    let states = c.states(TOPIC, PARTITIONS);
    let led = states.values().filter(|s| s.leader == SHARDLOG).count();
    assert!(
        led > 0 && led < PARTITIONS as usize,
        "shardlog should lead some partitions and follow others: {states:?}"
    );

    history_through_kills(&mut c, &[SHARDLOG, 1, 2]);
}

/// An acks=all idempotent producer runs while each of `victims` in turn is
/// killed with kill -9 and restarted (every ISR whole again before the
/// next); then every acked record is read once and in order, and after a
/// clean stop the replicas are identical batch for batch up to the HW.
fn history_through_kills(c: &mut ReplCluster, victims: &[i32]) {
    let mut producer = HistoryProducer::spawn(
        &c.bootstrap(),
        TOPIC,
        PARTITIONS,
        c.dir.path(),
        &["--acks=all", "--idempotence=1", "--rate=300"],
    );
    producer.wait_acks(90, 200, "the first 200 acks");
    for &victim in victims {
        c.node(victim).kill9();
        eprintln!("[mixed: broker {victim} killed]");
        producer.wait_acks(120, 200, "200 acks with a broker down");
        c.restart(victim);
        for p in 0..PARTITIONS {
            c.wait_state(180, "the restarted broker back in the ISR", TOPIC, p, |s| {
                s.isr.contains(&victim)
            });
        }
        producer.wait_acks(120, 100, "100 acks after the restart");
    }
    let acked_file = producer.acked_file.clone();
    let report = producer.finish(180);
    eprintln!("[mixed producer: {report}]");
    assert_eq!(
        report["failed"], 0,
        "acks=all idempotent records failed: {report}"
    );
    let read_file = drain(&c.bootstrap(), TOPIC, PARTITIONS, c.dir.path());
    let h = check(&acked_file, &read_file);
    eprintln!("[mixed history: acked {} read {}]", h["acked"], h["read"]);
    assert_history_ok(System::Kafka, "mixed cluster, kill -9 of each broker", &h);
    let hws = assert_replicas_identical(c, TOPIC, PARTITIONS);
    let per: BTreeMap<String, u64> =
        serde_json::from_value(h["per_partition_read"].clone()).unwrap();
    for (p, hw) in hws.iter().enumerate() {
        assert_eq!(
            per.get(&p.to_string()).copied().unwrap_or(0),
            *hw as u64,
            "{TOPIC}-{p}: HW {hw} after the clean stop vs records read"
        );
    }
}

/// A Kafka 3.9 broker allocates producer ids through the controller
/// (AllocateProducerIds, KIP-730): without shardlog's controller answering
/// it, an idempotent producer whose InitProducerId lands on a Kafka broker
/// gets no id ("The node does not support ALLOCATE_PRODUCER_IDS" in
/// Kafka's log; this test failed 3 runs in 4 then).
#[test]
fn shardlog_controls_two_kafka_brokers_through_kill9_of_each() {
    let mut c = ReplCluster::start_mixed(
        &[System::Shardlog, System::Kafka, System::Kafka],
        &settings(),
    );
    assert_eq!(
        c.controller(),
        1,
        "shardlog started first and should control"
    );
    // CreateTopics to shardlog alone.
    let shardlog = c.nodes[0].link.address();
    let r = common::cluster_admin(&[
        "create",
        &shardlog,
        "confluent",
        TOPIC,
        &PARTITIONS.to_string(),
        "3",
    ]);
    eprintln!("[mixed create through shardlog: {r}]");
    common::cluster::wait_for(120, "every partition led with a full ISR", || {
        let s = c.states(TOPIC, PARTITIONS);
        (s.len() == PARTITIONS as usize && s.values().all(|st| st.leader >= 0 && st.isr.len() == 3))
            .then_some(())
    });
    let states = c.states(TOPIC, PARTITIONS);
    let by_kafka = states.values().filter(|s| s.leader != 1).count();
    assert!(
        by_kafka > 0,
        "Kafka brokers should lead some partitions: {states:?}"
    );
    // Each Kafka broker hands out a producer id: from a block it got from
    // shardlog's controller (AllocateProducerIds).
    for n in &c.nodes[1..] {
        let id = init_producer_id(&n.link.address());
        eprintln!("[mixed: Kafka broker {} gave producer id {id}]", n.id);
    }
    history_through_kills(&mut c, &[2, 3, 1]);
}

/// InitProducerId (v4, idempotent) to the broker at `address`, retried
/// while it has no id to give (COORDINATOR_LOAD_IN_PROGRESS and the like);
/// the producer id.
fn init_producer_id(address: &str) -> i64 {
    use kafka_protocol::messages::InitProducerIdRequest;
    let last = std::cell::Cell::new(0i16);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let id = std::iter::repeat_with(|| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let mut conn = common::Conn::open_addr(address);
        // No transactional id (the codec's default is an empty one, which
        // Kafka refuses with INVALID_REQUEST).
        let r = conn.call(
            4,
            &InitProducerIdRequest::default()
                .with_transactional_id(None)
                .with_transaction_timeout_ms(60_000)
                .with_producer_id(kafka_protocol::messages::ProducerId(-1))
                .with_producer_epoch(-1),
        );
        last.set(r.error_code);
        (r.error_code == 0 && r.producer_id.0 >= 0).then_some(r.producer_id.0)
    })
    .find(|r| r.is_some() || std::time::Instant::now() > deadline)
    .flatten();
    id.unwrap_or_else(|| {
        panic!(
            "no producer id from {address} in 60 s: last error code {}",
            last.get()
        )
    })
}
