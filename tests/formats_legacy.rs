//! Old message formats with real old clients, one broker for all checks:
//! kafka-python pinned to `api_version=(0, 10, 0)` (Produce v2, magic 1)
//! and `(0, 9)` (Produce v1, magic 0) produces with every codec; the
//! broker up-converts to v2 batches that keep the producer's codec
//! (Kafka 3.9's `LogValidator` with `compression.type=producer`), and a
//! modern consumer (confluent-kafka) reads every record back.
//! Needs `bash tests/run.sh` (kafka-python with python-snappy, lz4 and
//! xxhash in the test venv).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use common::{batch_compression, run_python, venv_python_with, Broker, Conn};

const CODECS: [(&str, i16); 4] = [("none", 0), ("gzip", 1), ("snappy", 2), ("lz4", 3)];
/// (kafka-python `api_version`, the magic it then writes).
const OLD_CLIENTS: [(&str, i8); 2] = [("(0, 10, 0)", 1), ("(0, 9)", 0)];
const RECORDS: usize = 40;

fn topic(magic: i8, codec: &str) -> String {
    format!("legacy-m{magic}-{codec}")
}

/// Record `i` of a topic: every third without a key.
fn expected(topic: &str, i: usize) -> String {
    let key = if i % 3 == 0 {
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
fn old_kafka_python_producers_are_up_converted_with_their_codec_and_read_back() {
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

    let out = common::clients::run_python_with_env(
        &broker,
        CONSUME,
        &[("TOPICS", std::ffi::OsStr::new(&topics.join(",")))],
    );
    for t in &topics {
        let prefix = format!("{t} ");
        let got: Vec<&str> = out.lines().filter(|l| l.starts_with(&prefix)).collect();
        let want: Vec<String> = (0..RECORDS).map(|i| expected(t, i)).collect();
        assert_eq!(got, want, "{t}: records in produce order");
    }
}
