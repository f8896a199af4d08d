//! `compression.type` applied on append, as Kafka 3.9's `LogValidator`
//! does: confluent-kafka produces gzip and uncompressed batches to topics
//! with different targets, the stored batches (read with a raw Fetch,
//! which returns them as stored) carry the topic's codec, the records read
//! back equal what was produced, and a `compression.type` changed with the
//! AdminClient applies to the batches produced after it. One broker.
//! Needs `bash tests/run.sh` (the venv).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use bytes::Bytes;
use common::{batch_compression, decode_records, encode_batch, now_ms, run_python, Broker, Conn};
use kafka_protocol::records::{Compression, Record};

/// Records each producer sends to each topic.
const PER_PRODUCER: usize = 300;

/// (topic, its compression.type override, the codecs its stored batches
/// may carry).
const TOPICS: &[(&str, Option<&str>, &[i16])] = &[
    ("to-zstd", Some("zstd"), &[4]),
    ("to-none", Some("uncompressed"), &[0]),
    ("to-lz4", Some("lz4"), &[3]),
    // `producer` keeps gzip batches gzip and plain ones plain.
    ("as-produced", None, &[0, 1]),
];

const PRODUCE: &str = r#"
import json, os, sys
from confluent_kafka import Producer
boot = os.environ["BOOTSTRAP"]
topics = json.loads(os.environ["TOPICS"])
n = int(os.environ["PER_PRODUCER"])
out = {}
def report(err, msg):
    key = "ok" if err is None else err.name()
    out[key] = out.get(key, 0) + 1
for codec in ["gzip", "none"]:
    p = Producer({"bootstrap.servers": boot, "compression.type": codec, "linger.ms": 20,
                  "batch.num.messages": 50, "acks": "all"})
    for t in topics:
        for i in range(n):
            p.produce(t, key=f"{codec}-{i}".encode(), value=(f"value {i} " * 20).encode(),
                      headers=[("h", f"{i}".encode())], timestamp=1_700_000_000_000 + i,
                      on_delivery=report)
    p.flush(30)
print(json.dumps(out))
"#;

const ALTER: &str = r#"
import json, os
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigEntry, AlterConfigOpType, ResourceType
a = AdminClient({"bootstrap.servers": os.environ["BOOTSTRAP"]})
r = ConfigResource(ResourceType.TOPIC, "as-produced", incremental_configs=[
    ConfigEntry("compression.type", "snappy", incremental_operation=AlterConfigOpType.SET)])
for f in a.incremental_alter_configs([r]).values():
    f.result(30)
print(json.dumps({"altered": True}))
"#;

/// (key, value, headers, timestamp, offset) of a record: what a consumer
/// sees, whatever the codec.
type Seen = (Option<Bytes>, Option<Bytes>, String, i64, i64);

fn seen(records: &[Record]) -> Vec<Seen> {
    records
        .iter()
        .map(|r| {
            (
                r.key.clone(),
                r.value.clone(),
                format!("{:?}", r.headers),
                r.timestamp,
                r.offset,
            )
        })
        .collect()
}

#[test]
fn stored_batches_carry_the_topics_compression_type_and_read_back_equal() {
    let broker = Broker::start();
    let mut conn = Conn::open(&broker);
    for (topic, target, _) in TOPICS {
        let configs: Vec<(&str, &str)> = target.iter().map(|t| ("compression.type", *t)).collect();
        conn.create_topic(topic, 1, &configs);
    }
    conn.create_topic(
        "zstd-append-time",
        1,
        &[
            ("compression.type", "zstd"),
            ("message.timestamp.type", "LogAppendTime"),
        ],
    );
    let started = now_ms();
    let names: Vec<&str> = TOPICS
        .iter()
        .map(|t| t.0)
        .chain(["zstd-append-time"])
        .collect();
    let code = format!(
        "import os\nos.environ['TOPICS'] = {:?}\nos.environ['PER_PRODUCER'] = '{PER_PRODUCER}'\n{PRODUCE}",
        serde_json::to_string(&names).unwrap()
    );
    let out = run_python(&broker, &code);
    let report: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(
        report["ok"].as_u64(),
        Some((2 * PER_PRODUCER * names.len()) as u64),
        "{report}"
    );

    let reference = seen(&decode_records(&conn.fetch_to_high_watermark(
        "as-produced",
        0,
        0,
    )));
    assert_eq!(reference.len(), 2 * PER_PRODUCER);
    for (topic, _, codecs) in TOPICS {
        let batches = conn.fetch_to_high_watermark(topic, 0, 0);
        let stored: Vec<i16> = batches.iter().map(|b| batch_compression(b)).collect();
        assert!(
            stored.iter().all(|c| codecs.contains(c)),
            "{topic}: stored codecs {stored:?}, expected only {codecs:?}"
        );
        assert_eq!(seen(&decode_records(&batches)), reference, "{topic}");
    }
    // The producer's codec is kept: its gzip batches are still gzip.
    let kept = conn.fetch_to_high_watermark("as-produced", 0, 0);
    assert!(kept.iter().any(|b| batch_compression(b) == 1));
    assert!(kept.iter().any(|b| batch_compression(b) == 0));

    // LogAppendTime over a rebuilt batch: zstd, the timestamp-type bit,
    // and the broker's time as maxTimestamp (not the producer's 2023).
    let stamped = conn.fetch_to_high_watermark("zstd-append-time", 0, 0);
    for b in &stamped {
        assert_eq!(batch_compression(b), 4);
        let attributes = i16::from_be_bytes([b[21], b[22]]);
        assert_eq!(attributes & 0x08, 0x08, "LogAppendTime bit");
        let max_ts = i64::from_be_bytes(b[35..43].try_into().unwrap());
        assert!(max_ts >= started - 60_000, "max timestamp {max_ts}");
    }
    assert_eq!(decode_records(&stamped).len(), 2 * PER_PRODUCER);

    compression_type_altered_applies_to_the_next_batches(&broker, &mut conn);
}

/// `compression.type` altered with the AdminClient: batches produced after
/// the change reaches the partition are stored with the new codec.
fn compression_type_altered_applies_to_the_next_batches(broker: &Broker, conn: &mut Conn) {
    let out = run_python(broker, ALTER);
    assert!(out.contains("\"altered\": true"), "{out}");
    let value = vec![b'x'; 2000];
    let batch = || {
        let records: Vec<common::RawRecord> = (0..20)
            .map(|_| (Some(&b"k"[..]), &value[..], now_ms()))
            .collect();
        encode_batch(&records, Compression::Gzip)
    };
    // The change reaches the partition asynchronously (as in Kafka, through
    // the config-change notification): produce until a batch is stored
    // with snappy, then every later one must be.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut last = None;
    while std::time::Instant::now() < deadline {
        let resp = conn.produce("as-produced", 0, batch(), -1);
        assert_eq!(resp.error_code, 0, "{resp:?}");
        let stored = conn.fetch_to_high_watermark("as-produced", 0, resp.base_offset);
        last = stored.first().map(|b| batch_compression(b));
        if last == Some(2) {
            break;
        }
        assert_eq!(last, Some(1), "before the change applies, gzip stays gzip");
    }
    assert_eq!(last, Some(2), "compression.type=snappy never applied");
    let sent = batch();
    let resp = conn.produce("as-produced", 0, sent.clone(), -1);
    let stored = conn.fetch_to_high_watermark("as-produced", 0, resp.base_offset);
    assert_eq!(stored.len(), 1);
    assert_eq!(batch_compression(&stored[0]), 2);
    let values = |rs: Vec<Record>| {
        rs.into_iter()
            .map(|r| (r.key, r.value, r.timestamp))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        values(decode_records(&stored)),
        values(decode_records(&[sent]))
    );
}

/// The broker-level defaults of the topic keys (`server.properties`, as
/// Kafka's `LogConfig` takes them for a topic without overrides):
/// `compression.type=gzip` recompresses a plain batch,
/// `log.message.timestamp.type=LogAppendTime` stamps it with the broker's
/// time, `log.message.timestamp.before.max.ms` / `after.max.ms` refuse
/// CreateTime batches outside the window (INVALID_TIMESTAMP) on a topic
/// that overrides only the type, and `log.message.downconversion.enable=false`
/// refuses an old consumer (Fetch v3: UNSUPPORTED_VERSION) unless the
/// topic turns it back on.
#[test]
fn broker_level_topic_defaults_apply_to_topics_without_overrides() {
    let broker = Broker::start_with(&[
        "compression.type=gzip",
        "log.message.timestamp.type=LogAppendTime",
        "log.message.timestamp.before.max.ms=3600000",
        "log.message.timestamp.after.max.ms=60000",
        "log.message.downconversion.enable=false",
    ]);
    let mut conn = Conn::open(&broker);
    conn.create_topic("defaults", 1, &[]);
    conn.create_topic(
        "create-time",
        1,
        &[("message.timestamp.type", "CreateTime")],
    );
    conn.create_topic(
        "old-readers",
        1,
        &[("message.downconversion.enable", "true")],
    );
    let value = vec![b'v'; 500];
    let batch = |ts: i64| {
        let records: Vec<common::RawRecord> = (0..10).map(|_| (None, &value[..], ts)).collect();
        encode_batch(&records, Compression::None)
    };

    let before = now_ms();
    let resp = conn.produce("defaults", 0, batch(1_000), -1);
    assert_eq!(resp.error_code, 0, "{resp:?}");
    assert!(resp.log_append_time_ms >= before, "{resp:?}");
    let stored = conn.fetch_to_high_watermark("defaults", 0, 0);
    assert_eq!(stored.len(), 1);
    let b = &stored[0];
    assert_eq!(batch_compression(b), 1, "compression.type=gzip");
    assert_eq!(
        i16::from_be_bytes([b[21], b[22]]) & 0x08,
        0x08,
        "LogAppendTime bit"
    );
    let max_ts = i64::from_be_bytes(b[35..43].try_into().unwrap());
    assert_eq!(
        max_ts, resp.log_append_time_ms,
        "the broker's time, not 1000"
    );
    assert_eq!(decode_records(&stored).len(), 10);

    // CreateTime on the topic; the window is the broker's.
    const INVALID_TIMESTAMP: i16 = 32;
    for (ts, want) in [
        (now_ms() - 2 * 3_600_000, INVALID_TIMESTAMP),
        (now_ms() + 600_000, INVALID_TIMESTAMP),
        (now_ms() - 60_000, 0),
    ] {
        let resp = conn.produce("create-time", 0, batch(ts), -1);
        assert_eq!(resp.error_code, want, "timestamp {ts}: {resp:?}");
    }
    let stored = conn.fetch_to_high_watermark("create-time", 0, 0);
    assert_eq!(stored.len(), 1, "only the batch inside the window");
    assert_eq!(batch_compression(&stored[0]), 1);
    assert_eq!(i16::from_be_bytes([stored[0][21], stored[0][22]]) & 0x08, 0);

    // An old consumer: refused by the broker default, served by the override.
    for topic in ["defaults", "old-readers"] {
        let resp = conn.produce(topic, 0, batch(now_ms()), -1);
        assert_eq!(resp.error_code, 0, "{resp:?}");
    }
    let mut stream = broker.connect();
    let v3 = |stream: &mut std::net::TcpStream, topic: &str| {
        use kafka_protocol_39::messages::fetch_request::{FetchPartition, FetchTopic};
        use kafka_protocol_39::messages::{BrokerId, FetchRequest, FetchResponse, TopicName};
        use kafka_protocol_39::protocol::StrBytes;
        let req = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_bytes(1 << 20)
            .with_topics(vec![FetchTopic::default()
                .with_topic(TopicName(StrBytes::from_string(topic.to_owned())))
                .with_partitions(vec![FetchPartition::default()
                    .with_partition(0)
                    .with_fetch_offset(0)
                    .with_partition_max_bytes(1 << 20)])]);
        let r: FetchResponse = common::call39(stream, 1, 3, &req);
        r.responses[0].partitions[0].clone()
    };
    let refused = v3(&mut stream, "defaults");
    assert_eq!(refused.error_code, 35, "UNSUPPORTED_VERSION: {refused:?}");
    assert_eq!(refused.records, None);
    let served = v3(&mut stream, "old-readers");
    assert_eq!(served.error_code, 0, "{served:?}");
    let records = served.records.unwrap_or_default();
    assert!(records.len() > 26, "{} bytes", records.len());
    assert_eq!(records[16], 1, "magic 1 for Fetch v3");
    assert_eq!(
        records[17] & 7,
        1,
        "one gzip wrapper, the stored batch's codec"
    );
    broker.stop();
}
