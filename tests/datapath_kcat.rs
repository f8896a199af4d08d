//! Issue 5, data path end to end with kcat (Debian's, librdkafka 2.0.2):
//! 100k keyed messages into a 6-partition topic with each compression codec
//! come back byte-identical, every key's messages in produce order, offsets
//! contiguous per partition, stored with the codec kcat was given
//! (librdkafka before 2.11.1 compresses gzip, snappy and lz4 only for a
//! broker that lists Produce v0 and, for lz4, FindCoordinator v0; see
//! the comment above `expected` in `round_trip_with_codec`).
//! Needs `bash tests/run.sh` (kcat from apt).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{batch_compression, kcat, Broker, Conn};
use shardlog::storage::cleaner::codec::compress;

/// Issue 5 asks for 100k messages per codec.
const MESSAGES: usize = 100_000;
/// Keys spread over the partitions by librdkafka's consistent_random
/// partitioner (CRC32 of the key); each key stays in one partition.
const KEYS: usize = 1000;
const PARTITIONS: i32 = 6;

/// `(key, value)` lines in produce order. Values carry the per-key sequence
/// number (so order is checkable per key) and a variable-length filler (so
/// the codecs have something to compress). No ':' in keys (kcat's -K
/// delimiter) and no newlines anywhere (kcat's message delimiter).
fn keyed_messages() -> Vec<(String, String)> {
    let mut next_seq = vec![0u32; KEYS];
    (0..MESSAGES)
        .map(|i| {
            // A stride coprime with KEYS visits keys in a scrambled order.
            let k = (i * 7919) % KEYS;
            let seq = next_seq[k];
            next_seq[k] += 1;
            let filler: String = (0..(i % 97))
                .map(|j| char::from(b'a' + ((i + j) % 26) as u8))
                .collect();
            (format!("key{k:04}"), format!("seq{seq:06}-{filler}"))
        })
        .collect()
}

fn kcat_produce(kcat: &Path, broker: &Broker, topic: &str, codec: &str, input: &[u8]) {
    let out = common::output_with_stdin(
        Command::new(kcat)
            .args([
                "-P",
                "-b",
                &broker.bootstrap(),
                "-t",
                topic,
                "-K:",
                "-z",
                codec,
            ])
            .args(["-X", "linger.ms=5"]),
        input,
        "kcat -P",
    );
    assert!(
        out.status.success(),
        "kcat -P -z {codec} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `(offset, key, value)` of one partition, read from the beginning to the
/// end with kcat.
fn kcat_consume(
    kcat: &Path,
    broker: &Broker,
    topic: &str,
    partition: i32,
) -> Vec<(i64, String, String)> {
    let out = Command::new(kcat)
        .args(["-C", "-b", &broker.bootstrap(), "-t", topic])
        .args(["-p", &partition.to_string(), "-o", "beginning", "-e", "-q"])
        .args(["-f", "%o %k:%s\\n"])
        .stdin(Stdio::null())
        .output()
        .expect("run kcat -C");
    let stdout = String::from_utf8(out.stdout).expect("utf-8 from kcat");
    assert!(
        out.status.success(),
        "kcat -C -p {partition} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .map(|line| {
            let (offset, rest) = line.split_once(' ').expect("offset field");
            let (key, value) = rest.split_once(':').expect("key:value");
            (
                offset.parse().expect("offset"),
                key.to_owned(),
                value.to_owned(),
            )
        })
        .collect()
}

fn round_trip_with_codec(codec: &str, codec_id: i16) {
    let kcat = kcat();
    let broker = Broker::start();
    let mut conn = Conn::open(&broker);
    let topic = format!("kcat-{codec}");
    conn.create_topic(&topic, PARTITIONS, &[]);

    let messages = keyed_messages();
    let input: String = messages.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();
    kcat_produce(&kcat, &broker, &topic, codec, input.as_bytes());

    let mut produced_by_key: HashMap<&str, Vec<&str>> = HashMap::new();
    for (k, v) in &messages {
        produced_by_key.entry(k).or_default().push(v);
    }
    let mut consumed_by_key: HashMap<String, Vec<String>> = HashMap::new();
    let mut partition_of_key: HashMap<String, i32> = HashMap::new();
    let mut total = 0;
    for partition in 0..PARTITIONS {
        let records = kcat_consume(&kcat, &broker, &topic, partition);
        assert!(
            !records.is_empty(),
            "{codec}: partition {partition} is empty"
        );
        let offsets: Vec<i64> = records.iter().map(|r| r.0).collect();
        let expected: Vec<i64> = (0..records.len() as i64).collect();
        assert!(
            offsets == expected,
            "{codec}: partition {partition} offsets not 0..{}",
            records.len()
        );
        total += records.len();
        for (_, key, value) in records {
            let first = *partition_of_key.entry(key.clone()).or_insert(partition);
            assert_eq!(first, partition, "{codec}: key {key} in two partitions");
            consumed_by_key.entry(key).or_default().push(value);
        }
    }
    assert_eq!(total, MESSAGES, "{codec}: consumed count");
    assert_eq!(consumed_by_key.len(), KEYS, "{codec}: distinct keys");
    for (key, produced) in &produced_by_key {
        let consumed = &consumed_by_key[*key];
        assert!(
            consumed == produced,
            "{codec}: key {key}: consumed values differ from produced (order or bytes); \
             first consumed {:?}, first produced {:?}",
            consumed.first(),
            produced.first()
        );
    }
    // The codec kcat was given. Before librdkafka 2.11.1 (its "Fix
    // feature version ranges", #5130, issue #4956), gzip, snappy and lz4
    // require the broker to list Produce v0 (`rd_kafka_msgset_writer_select_caps`
    // checks Produce 0..0) and lz4 FindCoordinator v0 too; against a
    // broker listing neither it sends uncompressed batches ("Broker does
    // not support compression type gzip: not compressing batch"). Kafka 3.9
    // lists and serves Produce v0–v11, and so does shardlog. Kafka 4.0
    // dropped v0–v2 (KIP-896) but still lists them in ApiVersions,
    // refusing them otherwise, for exactly these librdkafka versions
    // (KAFKA-18659), so it does not lose their compression either.
    let expected = codec_id;
    let librdkafka = librdkafka_version(&kcat);
    for partition in 0..PARTITIONS {
        // The broker stores batches as received, so the stored batches show
        // whether kcat really compressed.
        let batches = conn.fetch_to_high_watermark(&topic, partition, 0);
        let codecs: Vec<i16> = batches.iter().map(|b| batch_compression(b)).collect();
        assert!(
            batches
                .iter()
                .all(|b| stored_as_librdkafka_sends(b, expected)),
            "{codec}: partition {partition} stored batch codecs {codecs:?}, expected all {expected} (or 0 where \
             compressing could not shrink the batch; run kcat with -d feature,msg to see why librdkafka {librdkafka:?} \
             did not compress)"
        );
    }
}

/// Size of a v2 batch header; the records section follows it.
const BATCH_HEADER: usize = 61;
/// Frame-format leeway between librdkafka's encoders and this crate's
/// (headers, content-size and checksum flags) when judging whether
/// compression could have helped a batch.
const FRAME_SLACK: usize = 16;

/// Whether `batch` is stored as librdkafka would send it with codec
/// `expected`: compressed with it, or uncompressed because compressing
/// did not make it smaller. `rd_kafka_msgset_writer_compress` throws the
/// compressed copy away and sends the records uncompressed when "the
/// compressed data is larger than the uncompressed size" (a batch of one
/// short message under zstd, say).
fn stored_as_librdkafka_sends(batch: &[u8], expected: i16) -> bool {
    let codec = batch_compression(batch);
    if codec == expected {
        return true;
    }
    if codec != 0 {
        return false;
    }
    let records = &batch[BATCH_HEADER..];
    let compressed = compress(expected, records).expect("compress a stored batch");
    compressed.len() + FRAME_SLACK >= records.len()
}

/// The librdkafka version `kcat -V` reports, as (major, minor, patch).
fn librdkafka_version(kcat: &Path) -> (u32, u32, u32) {
    let out = Command::new(kcat).arg("-V").output().expect("kcat -V");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let version = text
        .split("librdkafka ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no librdkafka version in kcat -V: {text}"));
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let mut next = || parts.next().unwrap_or(0);
    (next(), next(), next())
}

#[test]
fn kcat_round_trips_100k_keyed_messages_uncompressed() {
    round_trip_with_codec("none", 0);
}

#[test]
fn kcat_round_trips_100k_keyed_messages_gzip() {
    round_trip_with_codec("gzip", 1);
}

#[test]
fn kcat_round_trips_100k_keyed_messages_snappy() {
    round_trip_with_codec("snappy", 2);
}

#[test]
fn kcat_round_trips_100k_keyed_messages_lz4() {
    round_trip_with_codec("lz4", 3);
}

#[test]
fn kcat_round_trips_100k_keyed_messages_zstd() {
    round_trip_with_codec("zstd", 4);
}
