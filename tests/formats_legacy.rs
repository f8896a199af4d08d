//! Old message formats with real old clients, one broker for all checks:
//! kafka-python pinned to `api_version=(0, 10, 0)` (Produce v2, magic 1)
//! and `(0, 9)` (Produce v1, magic 0) produces with every codec; the
//! broker up-converts to v2 batches that keep the producer's codec
//! (Kafka 3.9's `LogValidator` with `compression.type=producer`), and a
//! modern consumer (confluent-kafka) reads every record back. Then the
//! other way: what confluent-kafka (v2 batches) wrote is read by the same
//! pinned kafka-python consumers (Fetch v2 gets magic 1, Fetch v1 magic 0,
//! down-converted as Kafka 3.9 does), and a topic with
//! `message.downconversion.enable=false` answers old fetches
//! UNSUPPORTED_VERSION. librdkafka without ApiVersions on its 0.9.0 table
//! (magic 0, every codec) produces and reads back its own records.
//! Needs `bash tests/run.sh` (kafka-python with python-snappy, lz4 and
//! xxhash in the test venv).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::ffi::OsStr;
use std::net::TcpStream;

use common::clients::run_python_with_env;
use common::{batch_compression, call39, run_python, venv_python_with, Broker, Conn};
use kafka_protocol_39::messages::fetch_request::{FetchPartition, FetchRequest, FetchTopic};
use kafka_protocol_39::messages::{BrokerId, FetchResponse, TopicName};
use kafka_protocol_39::protocol::StrBytes;

const CODECS: [(&str, i16); 4] = [("none", 0), ("gzip", 1), ("snappy", 2), ("lz4", 3)];
/// (kafka-python `api_version`, the magic it then writes).
const OLD_CLIENTS: [(&str, i8); 2] = [("(0, 10, 0)", 1), ("(0, 9)", 0)];
const RECORDS: usize = 40;

fn topic(magic: i8, codec: &str) -> String {
    format!("legacy-m{magic}-{codec}")
}

/// Record `i` of a topic: every third without a key.
fn expected(topic: &str, i: usize) -> String {
    let key = if i.is_multiple_of(3) {
        "None".to_owned()
    } else {
        format!("k{i}")
    };
    format!("{topic} {key} {topic}-v{i}-{}", "x".repeat(50))
}

const PRODUCE: &str = r#"
import os, sys
from kafka import KafkaProducer
for api, magic in [((0, 10, 0), 1), ((0, 9), 0)]:
    for codec in ["none", "gzip", "snappy", "lz4"]:
        topic = f"legacy-m{magic}-{codec}"
        p = KafkaProducer(bootstrap_servers=os.environ["BOOTSTRAP"], api_version=api,
                          compression_type=None if codec == "none" else codec,
                          linger_ms=200, batch_size=1 << 20, retries=0)
        futures = [p.send(topic, partition=0,
                          key=None if i % 3 == 0 else f"k{i}".encode(),
                          value=f"{topic}-v{i}-".encode() + b"x" * 50)
                   for i in range(40)]
        p.flush()
        offsets = [f.get(timeout=30).offset for f in futures]
        assert offsets == list(range(40)), (topic, offsets)
        p.close()
print("produced")
"#;

const CONSUME: &str = r#"
import os
from confluent_kafka import Consumer, TopicPartition
c = Consumer({"bootstrap.servers": os.environ["BOOTSTRAP"], "group.id": "legacy-check",
              "enable.auto.commit": False})
topics = os.environ["TOPICS"].split(",")
c.assign([TopicPartition(t, 0, 0) for t in topics])
want = 40 * len(topics)
got = []
while len(got) < want:
    m = c.poll(10)
    assert m is not None, f"timed out after {len(got)} records"
    assert m.error() is None, m.error()
    key = "None" if m.key() is None else m.key().decode()
    got.append(f"{m.topic()} {key} {m.value().decode()}")
c.close()
print("\n".join(got))
"#;

#[test]
fn old_kafka_python_clients_produce_and_fetch_through_up_and_down_conversion() {
    venv_python_with(&["kafka", "snappy", "lz4.frame", "xxhash", "confluent_kafka"]);
    let broker = Broker::start();
    let mut conn = Conn::open(&broker);
    let mut topics = Vec::new();
    for (_, magic) in OLD_CLIENTS {
        for (codec, _) in CODECS {
            let t = topic(magic, codec);
            conn.create_topic(&t, 1, &[]);
            topics.push(t);
        }
    }
    assert!(run_python(&broker, PRODUCE).contains("produced"));

    for (_, magic) in OLD_CLIENTS {
        for (codec, id) in CODECS {
            let t = topic(magic, codec);
            let batches = conn.fetch_to_high_watermark(&t, 0, 0);
            assert!(!batches.is_empty(), "{t}: nothing stored");
            for b in &batches {
                assert_eq!(b[16], 2, "{t}: stored as a v2 batch");
                assert_eq!(
                    batch_compression(b),
                    id,
                    "{t}: stored with the producer's codec"
                );
            }
        }
    }

    let out = run_python_with_env(
        &broker,
        CONSUME,
        &[("TOPICS", OsStr::new(&topics.join(",")))],
    );
    for t in &topics {
        let prefix = format!("{t} ");
        let got: Vec<&str> = out.lines().filter(|l| l.starts_with(&prefix)).collect();
        let want: Vec<String> = (0..RECORDS).map(|i| expected(t, i)).collect();
        assert_eq!(got, want, "{t}: records in produce order");
    }

    old_consumers_read_what_a_v2_producer_wrote(&broker, &mut conn, &topics);
}

const PRODUCE_V2: &str = r#"
import os
from confluent_kafka import Producer
for codec in ["none", "gzip", "snappy", "lz4"]:
    topic = f"v2-{codec}"
    p = Producer({"bootstrap.servers": os.environ["BOOTSTRAP"], "compression.type": codec,
                  "linger.ms": 200})
    for i in range(40):
        p.produce(topic, partition=0, key=None if i % 3 == 0 else f"k{i}".encode(),
                  value=f"{topic}-v{i}-".encode() + b"x" * 50, headers=[("h", b"lost below v2")])
    assert p.flush(30) == 0
print("produced")
"#;

/// kafka-python pinned old: assign, seek to 0 (no ListOffsets), read
/// `TOPICS` whole; prints "topic key value" lines.
const CONSUME_OLD: &str = r#"
import os, time
from kafka import KafkaConsumer, TopicPartition
topics = os.environ["TOPICS"].split(",")
api = tuple(int(x) for x in os.environ["API"].split("."))
c = KafkaConsumer(bootstrap_servers=os.environ["BOOTSTRAP"], api_version=api, group_id=None,
                  enable_auto_commit=False, fetch_max_wait_ms=100)
tps = [TopicPartition(t, 0) for t in topics]
c.assign(tps)
for tp in tps:
    c.seek(tp, 0)
want = 40 * len(topics)
got = []
deadline = time.time() + 60
while len(got) < want and time.time() < deadline:
    for tp, msgs in c.poll(timeout_ms=500).items():
        for m in msgs:
            key = "None" if m.key is None else m.key.decode()
            got.append(f"{m.topic} {key} {m.value.decode()} {m.offset}")
c.close()
print("\n".join(got))
"#;

fn old_consumers_read_what_a_v2_producer_wrote(
    broker: &Broker,
    conn: &mut Conn,
    legacy: &[String],
) {
    let mut topics: Vec<String> = CODECS.iter().map(|(c, _)| format!("v2-{c}")).collect();
    for t in &topics {
        conn.create_topic(t, 1, &[]);
    }
    conn.create_topic(
        "v2-nodown",
        1,
        &[("message.downconversion.enable", "false")],
    );
    assert!(run_python(broker, PRODUCE_V2).contains("produced"));
    topics.extend(legacy.iter().cloned());
    for (api, magic) in [("0.10.0", 1), ("0.9", 0)] {
        let out = run_python_with_env(
            broker,
            CONSUME_OLD,
            &[
                ("TOPICS", OsStr::new(&topics.join(","))),
                ("API", OsStr::new(api)),
            ],
        );
        for t in &topics {
            let prefix = format!("{t} ");
            let got: Vec<&str> = out.lines().filter(|l| l.starts_with(&prefix)).collect();
            let want: Vec<String> = (0..RECORDS)
                .map(|i| format!("{} {i}", expected(t, i)))
                .collect();
            assert_eq!(got, want, "api_version {api} (magic {magic}): {t}");
        }
    }

    // The bytes themselves: Fetch v0 gets magic 0, v3 magic 1, each a
    // wrapper with the stored codec; a topic refusing down-conversion
    // answers UNSUPPORTED_VERSION (35) with no records.
    let mut stream = TcpStream::connect(broker.bootstrap()).unwrap();
    for (version, magic) in [(0i16, 0u8), (1, 0), (2, 1), (3, 1)] {
        for (topic, codec) in [("v2-gzip", 1u8), ("v2-lz4", 3), ("v2-nodown", 0)] {
            let p = fetch(&mut stream, version, topic);
            let records = p.records.clone().unwrap_or_default();
            if topic == "v2-nodown" {
                assert_eq!((p.error_code, records.len()), (35, 0), "v{version} {topic}");
                continue;
            }
            assert_eq!(p.error_code, 0, "v{version} {topic}");
            assert!(
                records.len() > 26,
                "v{version} {topic}: {} bytes",
                records.len()
            );
            assert_eq!(records[16], magic, "v{version} {topic}: magic");
            assert_eq!(records[17] & 7, codec, "v{version} {topic}: codec");
        }
    }
}

/// One partition's answer to a Fetch of `topic` partition 0 from offset 0.
fn fetch(
    stream: &mut TcpStream,
    version: i16,
    topic: &str,
) -> kafka_protocol_39::messages::fetch_response::PartitionData {
    let req = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(0)
        .with_min_bytes(0)
        .with_topics(vec![FetchTopic::default()
            .with_topic(TopicName(StrBytes::from_string(topic.to_owned())))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(0)
                .with_partition_max_bytes(1 << 20)])]);
    let r: FetchResponse = call39(stream, 1, version, &req);
    r.responses[0].partitions[0].clone()
}

/// librdkafka (confluent-kafka) without ApiVersions, on its built-in table
/// for `broker.version.fallback=0.9.0` (librdkafka's `rdkafka_feature.c`):
/// Produce v0–1 with magic 0 messages, Fetch v0–1, Metadata v0. Each codec
/// it offers for magic 0 (gzip, snappy, lz4 with the 0.8/0.9 framing whose
/// header checksum covers the magic byte too) is produced, then read back
/// by the same pinned client; what a pinned producer wrote must be
/// stored as v2 batches with its codec, as Kafka 3.9's `LogValidator`
/// up-converts with `compression.type=producer`.
const RDKAFKA_PINNED: &str = r#"
import os, time
from confluent_kafka import Consumer, Producer, TopicPartition
pinned = {"bootstrap.servers": os.environ["BOOTSTRAP"], "api.version.request": False,
          "broker.version.fallback": "0.9.0"}
topics = os.environ["TOPICS"].split(",")
for topic in topics:
    codec = topic.rsplit("-", 1)[1]
    p = Producer(dict(pinned, **{"compression.type": codec, "linger.ms": 200, "acks": 1}))
    acked = []
    def done(err, msg, acked=acked):
        assert err is None, err
        acked.append(msg.offset())
    for i in range(40):
        p.produce(topic, partition=0, key=None if i % 3 == 0 else f"k{i}".encode(),
                  value=f"{topic}-v{i}-".encode() + b"x" * 50, on_delivery=done)
    assert p.flush(30) == 0
    assert sorted(acked) == list(range(40)), (topic, acked)
c = Consumer(dict(pinned, **{"group.id": "rdk-pinned", "enable.auto.commit": False}))
c.assign([TopicPartition(t, 0, 0) for t in topics])
got = []
deadline = time.time() + 60
while len(got) < 40 * len(topics) and time.time() < deadline:
    m = c.poll(1)
    if m is None:
        continue
    assert m.error() is None, m.error()
    key = "None" if m.key() is None else m.key().decode()
    got.append(f"{m.topic()} {key} {m.value().decode()} {m.offset()}")
c.close()
print("\n".join(got))
"#;

#[test]
fn librdkafka_pinned_to_0_9_produces_magic_0_with_every_codec_and_reads_it_back() {
    venv_python_with(&["confluent_kafka"]);
    let metrics_port = common::ports::reserved_port();
    let listener = format!("shardlog.metrics.listener=127.0.0.1:{metrics_port}");
    let broker = Broker::start_with(&[&listener]);
    let mut conn = Conn::open(&broker);
    let topics: Vec<String> = CODECS
        .iter()
        .map(|(codec, _)| format!("rdk-m0-{codec}"))
        .collect();
    for t in &topics {
        conn.create_topic(t, 1, &[]);
    }
    let before = request_counts(metrics_port);
    let out = run_python_with_env(
        &broker,
        RDKAFKA_PINNED,
        &[("TOPICS", OsStr::new(&topics.join(",")))],
    );
    // The client really was pinned: the Produce and Fetch requests the
    // broker counted while it ran (RequestMetrics' RequestsPerSec by
    // version) are of versions 0–1 only.
    let after = request_counts(metrics_port);
    let used: Vec<(String, i16)> = after
        .iter()
        .filter(|(k, n)| before.get(*k).is_none_or(|b| b < n))
        .map(|(k, _)| k.clone())
        .collect();
    for api in ["Produce", "Fetch"] {
        let seen: Vec<i16> = used
            .iter()
            .filter(|(a, _)| a == api)
            .map(|(_, v)| *v)
            .collect();
        assert!(
            !seen.is_empty() && seen.iter().all(|v| *v <= 1),
            "{api} versions the pinned client used: {seen:?} (all: {used:?})"
        );
    }
    for (t, (_, id)) in topics.iter().zip(CODECS) {
        let batches = conn.fetch_to_high_watermark(t, 0, 0);
        assert!(!batches.is_empty(), "{t}: nothing stored");
        for b in &batches {
            assert_eq!(b[16], 2, "{t}: stored as a v2 batch");
            assert_eq!(batch_compression(b), id, "{t}: stored with the codec");
        }
        let prefix = format!("{t} ");
        let got: Vec<&str> = out.lines().filter(|l| l.starts_with(&prefix)).collect();
        let want: Vec<String> = (0..RECORDS)
            .map(|i| format!("{} {i}", expected(t, i)))
            .collect();
        assert_eq!(got, want, "{t}: read back by the pinned consumer");
    }
}

/// `RequestsPerSec` counts by `(request, version)` on the broker's
/// `/metrics`.
fn request_counts(port: u16) -> std::collections::BTreeMap<(String, i16), f64> {
    use std::io::{Read, Write};
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    let prefix = "kafka_network_requestmetrics_requests_total{request=\"";
    body.lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .filter_map(|rest| {
            let (request, rest) = rest.split_once('"')?;
            let (_, rest) = rest.split_once("version=\"")?;
            let (version, rest) = rest.split_once('"')?;
            let count: f64 = rest.rsplit(' ').next()?.parse().ok()?;
            Some(((request.to_owned(), version.parse().ok()?), count))
        })
        .collect()
}
