//! Issue 5, data path end to end with the Python clients: confluent-kafka
//! (librdkafka 2.16: Produce v10, Fetch v16 with topic ids), kafka-python
//! (Produce v9, Fetch v12 with fetch sessions) and aiokafka (Produce v7,
//! Fetch v11) produce and then read back every message (tests/py/*.py; they
//! report, these tests assert). Needs `bash tests/run.sh` (the venv).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use common::{
    assert_complete_round_trip, batch_compression, decode_records, run_py_script, run_python,
    Broker, Conn, RoundTrip,
};

fn round_trip(
    modules: &[&str],
    script: &str,
    broker: &Broker,
    topic: &str,
    count: u64,
    partitions: i32,
    size: usize,
) -> serde_json::Value {
    let args = RoundTrip {
        topic,
        count,
        partitions,
        size,
    }
    .args(broker, "both");
    run_py_script(modules, script, &args)
}

#[test]
fn confluent_kafka_reads_back_a_million_1kib_messages_produced_with_acks_all() {
    const COUNT: u64 = 1_000_000;
    const PARTITIONS: i32 = 4;
    let broker = Broker::start();
    Conn::open(&broker).create_topic("confluent-1m", PARTITIONS, &[]);
    let report = round_trip(
        &["confluent_kafka"],
        "confluent_roundtrip.py",
        &broker,
        "confluent-1m",
        COUNT,
        PARTITIONS,
        1024,
    );
    assert_complete_round_trip(&report, COUNT, PARTITIONS);
}

#[test]
fn kafka_python_reads_back_10k_messages_it_produced_without_idempotence() {
    const COUNT: u64 = 10_000;
    const PARTITIONS: i32 = 3;
    let broker = Broker::start();
    Conn::open(&broker).create_topic("kafka-python-10k", PARTITIONS, &[]);
    let report = round_trip(
        &["kafka"],
        "kafka_python_roundtrip.py",
        &broker,
        "kafka-python-10k",
        COUNT,
        PARTITIONS,
        200,
    );
    assert_complete_round_trip(&report, COUNT, PARTITIONS);
}

#[test]
fn aiokafka_reads_back_10k_messages_it_produced() {
    const COUNT: u64 = 10_000;
    const PARTITIONS: i32 = 3;
    let broker = Broker::start();
    Conn::open(&broker).create_topic("aiokafka-10k", PARTITIONS, &[]);
    let report = round_trip(
        &["aiokafka"],
        "aiokafka_roundtrip.py",
        &broker,
        "aiokafka-10k",
        COUNT,
        PARTITIONS,
        200,
    );
    assert_complete_round_trip(&report, COUNT, PARTITIONS);
}

#[test]
fn confluent_kafka_consumer_tailing_a_live_producer_reads_every_message() {
    const PARTITIONS: i32 = 3;
    let trip = RoundTrip {
        topic: "confluent-tail",
        count: 200_000,
        partitions: PARTITIONS,
        size: 512,
    };
    let broker = Broker::start();
    Conn::open(&broker).create_topic(trip.topic, PARTITIONS, &[]);
    // The consumer assigns first and long-polls the empty partitions; the
    // producer then runs while it reads from the tail (the batch cache).
    let args = trip.args(&broker, "concurrent");
    let report = run_py_script(&["confluent_kafka"], "confluent_roundtrip.py", &args);
    assert_complete_round_trip(&report, trip.count, PARTITIONS);
}

/// confluent-kafka (librdkafka 2.16) compresses with every codec against
/// the broker and reads everything back; the stored batches carry the
/// codec. LZ4 depends on FindCoordinator being advertised (librdkafka's
/// feature map ties RD_KAFKA_FEATURE_LZ4 to it); gzip and snappy need no
/// feature. (kcat's librdkafka 2.0.2 cannot do gzip/snappy/lz4 here: see
/// tests/datapath_kcat.rs.)
#[test]
fn confluent_kafka_round_trips_with_every_codec_and_the_batches_stay_compressed() {
    const COUNT: u64 = 20_000;
    const PARTITIONS: i32 = 2;
    let broker = Broker::start();
    let mut conn = Conn::open(&broker);
    // (compression.type, attributes codec id)
    for (codec, codec_id) in [("gzip", 1i16), ("snappy", 2), ("lz4", 3), ("zstd", 4)] {
        let topic = format!("confluent-{codec}");
        conn.create_topic(&topic, PARTITIONS, &[]);
        let mut args = RoundTrip {
            topic: &topic,
            count: COUNT,
            partitions: PARTITIONS,
            size: 200,
        }
        .args(&broker, "both");
        args.push(format!("--compression={codec}"));
        let report = run_py_script(&["confluent_kafka"], "confluent_roundtrip.py", &args);
        assert_complete_round_trip(&report, COUNT, PARTITIONS);
        for partition in 0..PARTITIONS {
            // librdkafka sends a batch uncompressed when compressing does
            // not shrink it (a lone record with incompressible filler), so
            // every batch carries the codec or none, and nearly every
            // record travels compressed.
            let batches = conn.fetch_to_high_watermark(&topic, partition, 0);
            let stored: Vec<(i16, usize)> = batches
                .iter()
                .map(|b| {
                    (
                        batch_compression(b),
                        decode_records(std::slice::from_ref(b)).len(),
                    )
                })
                .collect();
            let total: usize = stored.iter().map(|(_, n)| n).sum();
            let compressed: usize = stored
                .iter()
                .filter(|(c, _)| *c == codec_id)
                .map(|(_, n)| n)
                .sum();
            assert!(
                stored.iter().all(|(c, _)| *c == codec_id || *c == 0)
                    && compressed * 10 >= total * 9,
                "{codec}: partition {partition}: {compressed} of {total} records compressed; \
                 (codec, records) per batch {stored:?}, expected codec {codec_id}"
            );
        }
    }
    timestamps_are_checked_and_log_append_time_is_applied(&broker, &mut conn);
}

/// Kafka's `LogValidator` with confluent-kafka: a record two days old
/// against `message.timestamp.before.max.ms` = one day is INVALID_TIMESTAMP
/// (a current one passes); a LogAppendTime topic gives the consumer the
/// broker's time and timestamp type LogAppendTime, not the producer's
/// timestamp; on the wire, `record_errors` names the bad record of a
/// batch. Runs on the codec test's broker.
fn timestamps_are_checked_and_log_append_time_is_applied(broker: &Broker, conn: &mut Conn) {
    conn.create_topic(
        "ts-window",
        1,
        &[("message.timestamp.before.max.ms", "86400000")],
    );
    conn.create_topic(
        "ts-append",
        1,
        &[("message.timestamp.type", "LogAppendTime")],
    );
    let out = run_python(
        broker,
        r#"
import json, os, time
from confluent_kafka import Producer, Consumer, TopicPartition, TIMESTAMP_LOG_APPEND_TIME
boot = os.environ["BOOTSTRAP"]
p = Producer({"bootstrap.servers": boot, "linger.ms": 0, "acks": "all"})
out = {}
def report(key):
    def cb(err, msg):
        out[key] = "OK" if err is None else err.name()
    return cb
now = int(time.time() * 1000)
p.produce("ts-window", b"old", timestamp=now - 2 * 86400000, on_delivery=report("old"))
p.flush(20)
p.produce("ts-window", b"fresh", timestamp=now, on_delivery=report("fresh"))
p.produce("ts-append", b"a", timestamp=1000, on_delivery=report("append"))
p.flush(20)
c = Consumer({"bootstrap.servers": boot, "group.id": "ts-check", "enable.auto.commit": False})
c.assign([TopicPartition("ts-append", 0, 0)])
m = None
for _ in range(30):
    m = c.poll(1)
    if m is not None and not m.error():
        break
    m = None
kind, ts = m.timestamp()
out["append_type_is_log_append_time"] = kind == TIMESTAMP_LOG_APPEND_TIME
out["append_ts"] = ts
out["produced_at"] = now
c.close()
print(json.dumps(out))
"#,
    );
    let line = out.lines().last().unwrap_or_default();
    let out: serde_json::Value =
        serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(out["old"], "INVALID_TIMESTAMP", "{out}");
    assert_eq!(out["fresh"], "OK", "{out}");
    assert_eq!(out["append"], "OK", "{out}");
    assert_eq!(out["append_type_is_log_append_time"], true, "{out}");
    // The broker's clock, not the producer's timestamp of 1000.
    let ts = out["append_ts"].as_i64().unwrap();
    let produced_at = out["produced_at"].as_i64().unwrap();
    assert!(ts >= produced_at - 60_000, "{out}");

    // The wire (Produce v9, KIP-467): one batch of three records whose
    // second is two days old is refused whole with INVALID_TIMESTAMP, and
    // `record_errors` names that record by its index in the batch, with a
    // message, so a client can fail only it (Kafka's `LogValidator`
    // collects an `ApiRecordError` per bad record).
    let now = common::records::now_ms();
    let batch = common::records::encode_batch(
        &[
            (None, b"a", now),
            (None, b"b", now - 2 * 86_400_000),
            (None, b"c", now),
        ],
        kafka_protocol::records::Compression::None,
    );
    let resp = conn.produce("ts-window", 0, batch, -1);
    assert_eq!(resp.error_code, 32, "INVALID_TIMESTAMP: {resp:?}");
    let errors: Vec<(i32, bool)> = resp
        .record_errors
        .iter()
        .map(|e| {
            let message = e.batch_index_error_message.as_deref().unwrap_or("");
            (e.batch_index, !message.is_empty())
        })
        .collect();
    assert_eq!(errors, [(1, true)], "record_errors: {resp:?}");
    assert!(
        resp.error_message.as_deref().is_some_and(|m| !m.is_empty()),
        "error_message: {resp:?}"
    );
}
