//! Apache Kafka 3.9's Java client (kafka-clients) against the broker binary
//! (issue 23): the producer with Kafka 3.x defaults (idempotence on,
//! acks=all), with acks 0 / 1 / all and each compression codec, the
//! consumer with `assign` reading everything back (count, order, offsets,
//! keys, values, headers checked record by record in
//! tests/java/src/shardlog/ClientCheck.java), the AdminClient through one
//! scripted sequence (AdminCheck.java), and a transactional producer's
//! documented failure. The stored batches are also read raw, so a claimed
//! codec or producer id is checked on the broker's side too.
//! Needs `bash tests/run.sh` (JDK, Kafka jars).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use common::java::run_program;
use common::{batch_compression, decode_records, unique_topic, Broker, Conn};
use serde_json::{json, Value};

/// Produce `count` records over `partitions` with `props`, read them back
/// with `assign`; check the report and return it.
fn round_trip(broker: &Broker, topic: &str, partitions: i32, count: u64, props: &[&str]) -> Value {
    let bootstrap = broker.bootstrap();
    let (p, c) = (partitions.to_string(), count.to_string());
    let mut args = vec!["roundtrip", &bootstrap, topic, &p, &c];
    args.extend_from_slice(props);
    let report = run_program("ClientCheck", &args);
    let produce = &report["produce"];
    assert_eq!(produce["delivered"], count, "{report}");
    assert_eq!(produce["errors"], json!([]), "{report}");
    let consume = &report["consume"];
    for field in [
        "missing",
        "duplicates",
        "out_of_order",
        "offset_gaps",
        "wrong_partition",
        "bad_content",
        "unknown",
    ] {
        assert_eq!(consume[field], 0, "{field}: {report}");
    }
    assert_eq!(consume["consumed"], count, "{report}");
    let per_partition = count / partitions as u64;
    assert_eq!(
        consume["end_offsets"],
        json!(vec![per_partition; partitions as usize]),
        "log end offsets (no duplicates in the log): {report}"
    );
    report
}

/// Every stored batch of `topic`/`partition`, read raw.
fn stored_batches(broker: &Broker, topic: &str, partition: i32) -> Vec<bytes::Bytes> {
    Conn::open(broker).fetch_to_high_watermark(topic, partition, 0)
}

#[test]
fn producer_with_kafka_3_defaults_is_idempotent_with_acks_all() {
    let broker = Broker::start();
    let topic = unique_topic("java-defaults");
    let report = round_trip(&broker, &topic, 3, 3000, &[]);
    assert_eq!(report["produce"]["acks"], "-1", "{report}");
    assert_eq!(report["produce"]["enable_idempotence"], true, "{report}");
    assert_eq!(report["produce"]["acked_offsets_contiguous_from_0"], true);
    // On the broker: every batch carries the producer id InitProducerId
    // gave, and sequences run 0, 1, 2 ... per partition.
    for partition in 0..3 {
        let records = decode_records(&stored_batches(&broker, &topic, partition));
        assert_eq!(records.len(), 1000);
        let pid = records[0].producer_id;
        assert!(pid >= 0, "no producer id in partition {partition}");
        for (i, r) in records.iter().enumerate() {
            assert_eq!((r.producer_id, r.sequence), (pid, i as i32), "record {i}");
        }
    }
    broker.stop();
}

fn acks_round_trip(acks: &str, expected: &str) {
    let broker = Broker::start();
    let topic = unique_topic(&format!("java-acks{acks}"));
    let acks_prop = format!("acks={acks}");
    // acks 0 and 1 are refused with idempotence on (Kafka 3.x): turn it off.
    let report = round_trip(
        &broker,
        &topic,
        2,
        2000,
        &[&acks_prop, "enable.idempotence=false"],
    );
    assert_eq!(report["produce"]["acks"], expected, "{report}");
    // acks=0 gets no offsets back (the callback sees -1); with acks the
    // broker's offsets come back contiguous from 0 per partition.
    assert_eq!(
        report["produce"]["acked_offsets_contiguous_from_0"],
        acks != "0",
        "{report}"
    );
    broker.stop();
}

#[test]
fn producer_acks_0_round_trip() {
    acks_round_trip("0", "0");
}

#[test]
fn producer_acks_1_round_trip() {
    acks_round_trip("1", "1");
}

#[test]
fn producer_acks_all_round_trip() {
    acks_round_trip("all", "-1");
}

/// A codec end to end, and the batches stored with it (attribute bits).
fn compression_round_trip(codec: &str, attribute: i16) {
    let broker = Broker::start();
    let topic = unique_topic(&format!("java-{codec}"));
    let prop = format!("compression.type={codec}");
    let report = round_trip(&broker, &topic, 2, 2000, &[&prop]);
    assert_eq!(report["produce"]["compression_type"], codec, "{report}");
    for partition in 0..2 {
        let batches = stored_batches(&broker, &topic, partition);
        assert!(!batches.is_empty());
        for b in &batches {
            assert_eq!(batch_compression(b), attribute, "{codec} batch stored");
        }
        assert_eq!(decode_records(&batches).len(), 1000);
    }
    broker.stop();
}

#[test]
fn producer_gzip_round_trip() {
    compression_round_trip("gzip", 1);
}

#[test]
fn producer_snappy_round_trip() {
    compression_round_trip("snappy", 2);
}

#[test]
fn producer_lz4_round_trip() {
    compression_round_trip("lz4", 3);
}

#[test]
fn producer_zstd_round_trip() {
    compression_round_trip("zstd", 4);
}

fn config(report: &Value, step: &str, name: &str) -> (String, String) {
    let e = &report[step][name];
    (
        e["value"]
            .as_str()
            .unwrap_or_else(|| panic!("{step}.{name}: {report}"))
            .to_owned(),
        e["source"].as_str().unwrap().to_owned(),
    )
}

#[test]
fn admin_client_topics_cluster_configs_and_offsets() {
    let broker = Broker::start();
    let topic = unique_topic("java-admin");
    let r = run_program("AdminCheck", &[&broker.bootstrap(), &topic]);

    assert_eq!(r["create"], "ok", "{r}");
    assert_eq!(
        r["create_again"]["error"],
        format!("TopicExistsException: Topic '{topic}' already exists."),
        "{r}"
    );
    let rf = r["create_rf_too_big"]["error"].as_str().unwrap_or_default();
    assert!(rf.starts_with("InvalidReplicationFactorException"), "{r}");
    assert_eq!(r["list_contains"], true, "{r}");

    let d = &r["describe"];
    assert_eq!(d["name"], topic.as_str(), "{r}");
    assert_eq!(d["internal"], false);
    assert_eq!(d["topic_id_set"], true, "{r}");
    let id = broker.broker_id;
    let partitions: Vec<Value> = (0..3)
        .map(|p| json!({"partition": p, "leader": id, "replicas": [id], "isr": [id]}))
        .collect();
    assert_eq!(d["partitions"], json!(partitions), "{r}");

    assert_eq!(
        r["cluster"]["cluster_id"],
        broker.cluster_id.as_str(),
        "{r}"
    );
    assert_eq!(r["cluster"]["controller"], id, "{r}");
    assert_eq!(
        r["cluster"]["nodes"],
        json!([{"id": id, "host": broker.host, "port": broker.port}]),
        "{r}"
    );

    // describeConfigs: the create's config is dynamic, the rest defaults.
    assert_eq!(
        config(&r, "configs", "retention.ms"),
        ("3600000".into(), "DYNAMIC_TOPIC_CONFIG".into())
    );
    assert_eq!(
        config(&r, "configs", "cleanup.policy"),
        ("delete".into(), "DEFAULT_CONFIG".into())
    );
    assert_eq!(
        config(&r, "configs", "segment.bytes"),
        ("1073741824".into(), "DEFAULT_CONFIG".into())
    );
    assert_eq!(
        config(&r, "broker_configs", "broker.id"),
        (id.to_string(), "STATIC_BROKER_CONFIG".into())
    );
    // incrementalAlterConfigs SET, then DELETE back to the default.
    assert_eq!(
        config(&r, "incremental_alter", "retention.ms"),
        ("7200000".into(), "DYNAMIC_TOPIC_CONFIG".into())
    );
    assert_eq!(
        config(&r, "incremental_alter", "max.message.bytes"),
        ("500000".into(), "DYNAMIC_TOPIC_CONFIG".into())
    );
    assert_eq!(
        config(&r, "incremental_delete", "max.message.bytes"),
        ("1048588".into(), "DEFAULT_CONFIG".into())
    );
    assert_eq!(
        config(&r, "incremental_delete", "retention.ms"),
        ("7200000".into(), "DYNAMIC_TOPIC_CONFIG".into())
    );
    let invalid = r["incremental_invalid"]["error"]
        .as_str()
        .unwrap_or_default();
    assert!(
        invalid.starts_with("InvalidConfigurationException: Invalid value not-a-number"),
        "{r}"
    );

    assert_eq!(
        r["create_partitions"]["partitions"]
            .as_array()
            .map(Vec::len),
        Some(5),
        "{r}"
    );

    // Records at offsets 0, 1, 2 with timestamps 1000, 3000, 2000.
    let lo = &r["list_offsets"];
    assert_eq!(lo["earliest"]["offset"], 0, "{r}");
    assert_eq!(lo["latest"]["offset"], 3, "{r}");
    assert_eq!(
        lo["max_timestamp"],
        json!({"offset": 1, "timestamp": 3000}),
        "{r}"
    );
    assert_eq!(
        lo["for_timestamp_1500"],
        json!({"offset": 1, "timestamp": 3000}),
        "{r}"
    );
    assert_eq!(lo["for_timestamp_9999"]["offset"], -1, "{r}");

    assert_eq!(r["delete"], "ok", "{r}");
    let gone = r["describe_after_delete"]["error"]
        .as_str()
        .unwrap_or_default();
    assert!(gone.starts_with("UnknownTopicOrPartitionException"), "{r}");
    broker.stop();
}

/// On one broker with `transaction.state.log.replication.factor=3` (Kafka's
/// default; the sample server.properties sets 1), `__transaction_state`
/// cannot be created: FindCoordinator (key type 1) answers
/// COORDINATOR_NOT_AVAILABLE, which the Java client retries, so
/// `initTransactions()` gives up after `max.block.ms` (3000 in
/// ClientCheck.transactional) with this TimeoutException and nothing is
/// written — what a single Kafka 3.9 broker with defaults does too.
#[test]
fn transactional_producer_times_out_when_the_state_topic_cannot_be_created() {
    let broker = Broker::start_with(&["transaction.state.log.replication.factor=3"]);
    let topic = unique_topic("java-tx");
    let r = run_program(
        "ClientCheck",
        &["transactional", &broker.bootstrap(), &topic],
    );
    assert_eq!(
        r,
        json!({"error": "TimeoutException: Timeout expired after 3000ms while awaiting InitProducerId"})
    );
    broker.stop();
}

/// The Java transactional producer (issue 25) against the transaction
/// coordinator: commit, abort (its record reached the log), a
/// read_committed consumer reads only committed records up to the LSO,
/// and a second producer with the same transactional.id fences the first
/// (its commit fails; its open transaction is aborted).
#[test]
fn transactional_producer_commits_aborts_and_is_fenced() {
    let broker = Broker::start_with(&["transaction.state.log.num.partitions=4"]);
    let topic = unique_topic("java-tx");
    let mut c = Conn::open(&broker);
    c.create_topic(&topic, 1, &[]);
    let r = run_program(
        "ClientCheck",
        &["transactional", &broker.bootstrap(), &topic],
    );
    assert_eq!(r["init_transactions"], "ok", "{r}");
    assert_eq!(r["commit"], "ok", "{r}");
    assert_eq!(r["abort"], "ok", "{r}");
    assert_eq!(r["read_committed"], json!([0, 2]), "{r}");
    assert_eq!(r["second_init"], "ok", "{r}");
    let fenced = r["fenced_commit"].as_str().unwrap_or_default();
    assert!(fenced.starts_with("ProducerFencedException"), "{r}");
    assert_eq!(r["read_committed_after_fence"], json!([0, 2, 4]), "{r}");
    assert!(r.get("error").is_none(), "{r}");
    broker.stop();
}

fn subscribe_round_trip(assignor: &str) {
    let broker = Broker::start();
    let topic = unique_topic("java-subscribe");
    let group = format!("{topic}-group");
    let r = run_program(
        "ClientCheck",
        &[
            "subscribe",
            &broker.bootstrap(),
            &topic,
            "3",
            "3000",
            assignor,
            &group,
        ],
    );
    assert_eq!(r["produce"]["delivered"], 3000, "{r}");
    let c = &r["consume"];
    for field in [
        "missing",
        "duplicates",
        "out_of_order",
        "offset_gaps",
        "bad_content",
    ] {
        assert_eq!(c[field], 0, "{field}: {r}");
    }
    assert_eq!(c["consumed"], 3000, "{r}");
    let assigned = json!([
        format!("{topic}-0"),
        format!("{topic}-1"),
        format!("{topic}-2")
    ]);
    assert_eq!(c["assigned"], assigned, "{r}");
    assert_eq!(c["committed"], json!([1000, 1000, 1000]), "{r}");
    broker.stop();
}

#[test]
fn consumer_subscribe_with_range_assignor() {
    subscribe_round_trip("org.apache.kafka.clients.consumer.RangeAssignor");
}

#[test]
fn consumer_subscribe_with_cooperative_sticky_assignor() {
    subscribe_round_trip("org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
}
