//! Issue 21, log compaction (`cleanup.policy=compact`): a real broker
//! process cleans a compacted topic to the latest value per key and drops
//! tombstones after `delete.retention.ms`; a kill -9 during a clean leaves
//! a readable, correct log; a null-key record is refused with
//! INVALID_RECORD. Times are shortened through config (`log.cleaner.backoff.ms`,
//! `delete.retention.ms`, `min.cleanable.dirty.ratio`); the test polls for
//! the cleaner's result with a deadline.
//!
//! `SHARDLOG_COMPACTION_RECORDS` sets the record count (CI: 100 000; the
//! issue's long form: 1 000 000). Consumers: the raw Kafka client of
//! `tests/common` and kcat (`bash tests/run.sh` installs it).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use shardlog::storage::cleaner::codec::compress_batch;

use common::{
    decodable_region, decode_records, error_code, kcat, now_ms, Broker, Conn, LATEST_TIMESTAMP,
};

const KEYS: usize = 1000;
const TOMBSTONED: usize = 100;
/// Guard against a cleaner that never finishes (not a speed assertion).
const DEADLINE: Duration = Duration::from_secs(120);
const INVALID_RECORD: i16 = 87;

fn record_count() -> usize {
    std::env::var("SHARDLOG_COMPACTION_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000)
}

fn key(i: usize) -> String {
    format!("key-{:04}", i % KEYS)
}

/// One batch of (key, value) records; `None` values are tombstones.
fn batch(records: &[(Option<String>, Option<String>)], compression: Compression) -> Bytes {
    let ts = now_ms();
    let recs: Vec<Record> = records
        .iter()
        .enumerate()
        .map(|(i, (k, v))| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: i as i32 - 1,
            timestamp: ts,
            key: k.clone().map(Bytes::from),
            value: v.clone().map(Bytes::from),
            headers: Default::default(),
        })
        .collect();
    // LZ4 through the broker's cleaner codec: kafka-protocol's LZ4 is the
    // C `lz4` crate, which the build leaves out.
    let lz4 = matches!(compression, Compression::Lz4);
    let mut buf = BytesMut::new();
    let opts = RecordEncodeOptions {
        version: 2,
        compression: if lz4 { Compression::None } else { compression },
    };
    RecordBatchEncoder::encode(&mut buf, &recs, &opts).unwrap();
    if lz4 {
        return Bytes::from(compress_batch(&buf, 3).unwrap());
    }
    buf.freeze()
}

/// What a consumer must end with: key → latest value, tombstoned keys absent.
type Expected = BTreeMap<String, String>;

fn produce(conn: &mut Conn, topic: &str, records: Vec<(Option<String>, Option<String>)>) {
    for chunk in records.chunks(500) {
        // Every other batch compressed: rewritten batches keep their codec.
        let codec = if chunk[0].0.as_deref().is_some_and(|k| k.ends_with('1')) {
            Compression::Lz4
        } else {
            Compression::None
        };
        let resp = conn.produce(topic, 0, batch(chunk, codec), -1);
        assert_eq!(resp.error_code, error_code::NONE, "produce: {resp:?}");
    }
}

/// `n` records over [`KEYS`] keys, then tombstones for the first
/// [`TOMBSTONED`] keys, then `tail` more records for the other keys (so the
/// tombstones leave the active segment). Returns what a consumer must see.
fn produce_workload(conn: &mut Conn, topic: &str, n: usize, tail: usize) -> Expected {
    let mut expected = Expected::new();
    let mut records = Vec::with_capacity(n);
    for i in 0..n {
        let v = format!("value-{i:08}-{}", "x".repeat(80));
        expected.insert(key(i), v.clone());
        records.push((Some(key(i)), Some(v)));
    }
    produce(conn, topic, records);
    let tombstones: Vec<_> = (0..TOMBSTONED).map(|i| (Some(key(i)), None)).collect();
    for i in 0..TOMBSTONED {
        expected.remove(&key(i));
    }
    produce(conn, topic, tombstones);
    let mut more = Vec::new();
    for j in 0..tail {
        let i = TOMBSTONED + j % (KEYS - TOMBSTONED);
        // As large as the others: the tail outgrows one segment.bytes, so
        // the tombstones always leave the active segment.
        let v = format!("tail-{j:08}-{}", "y".repeat(80));
        expected.insert(key(i), v.clone());
        more.push((Some(key(i)), Some(v)));
    }
    produce(conn, topic, more);
    expected
}

fn partition_dir(broker_dir: &Path, topic: &str) -> PathBuf {
    broker_dir.join(format!("{topic}-0"))
}

/// The `.log` files of a partition dir, by base offset.
fn segment_files(dir: &Path) -> Vec<(i64, PathBuf)> {
    let mut v: Vec<(i64, PathBuf)> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            let name = p.file_name()?.to_str()?.to_string();
            let base = name.strip_suffix(".log")?.parse().ok()?;
            Some((base, p))
        })
        .collect();
    v.sort();
    v
}

/// What the segments outside the active one hold, read from the files:
/// (distinct keys with a live value, tombstones, records).
fn outside_active(dir: &Path) -> (usize, usize, usize) {
    // The cleaner may swap segments while they are listed and read here:
    // a file gone since the listing means list again.
    loop {
        if let Some(found) = try_outside_active(dir) {
            return found;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// True while a clean's swap is under way in `dir`: its old segments may
/// be gone before the `.swap` file takes their name, so a listing then
/// misses an offset range.
fn swapping(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().any(|e| {
        let name = e.unwrap().file_name();
        let name = name.to_string_lossy();
        name.ends_with(".swap") || name.ends_with(".cleaned")
    })
}

fn try_outside_active(dir: &Path) -> Option<(usize, usize, usize)> {
    if swapping(dir) {
        return None;
    }
    let segs = segment_files(dir);
    let mut latest: BTreeMap<Vec<u8>, bool> = BTreeMap::new();
    let (mut tombstones, mut records) = (0, 0);
    for (_, path) in &segs[..segs.len().saturating_sub(1)] {
        let bytes = match std::fs::read(path) {
            Ok(b) => Bytes::from(b),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => panic!("read {}: {e}", path.display()),
        };
        let mut bytes = decodable_region(&bytes);
        for set in RecordBatchDecoder::decode_all(&mut bytes).unwrap() {
            for r in set.records {
                records += 1;
                tombstones += usize::from(r.value.is_none());
                latest.insert(r.key.unwrap().to_vec(), r.value.is_some());
            }
        }
    }
    // Read across a swap (or a roll): list and read again.
    if swapping(dir) || segment_files(dir) != segs {
        return None;
    }
    Some((
        latest.values().filter(|&&live| live).count(),
        tombstones,
        records,
    ))
}

/// Poll `cond` until it holds or the deadline passes (then panic with `what`).
fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < DEADLINE, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Everything a consumer reading from the start sees, with the raw client.
fn consume_all(broker: &Broker, topic: &str) -> Vec<Record> {
    let mut conn = Conn::open(broker);
    // After a restart the partition opens (and, after kill -9, recovers)
    // once the broker has its metadata: until then it is unknown (3).
    wait_for("the partition to be served", || {
        conn.list_offset(topic, 0, LATEST_TIMESTAMP).error_code == error_code::NONE
    });
    let batches = conn.fetch_to_high_watermark(topic, 0, 0);
    decode_records(&batches)
}

/// Key → value as a consumer folds the log (a tombstone removes the key).
fn fold(records: &[Record]) -> Expected {
    let mut m = Expected::new();
    for r in records {
        let k = String::from_utf8(r.key.clone().unwrap().to_vec()).unwrap();
        match &r.value {
            Some(v) => m.insert(k, String::from_utf8(v.to_vec()).unwrap()),
            None => m.remove(&k),
        };
    }
    m
}

/// The same through kcat (librdkafka): `key\tvalue` lines, NULL for tombstones.
fn kcat_fold(broker: &Broker, topic: &str) -> (Expected, BTreeSet<String>) {
    let out = Command::new(kcat())
        .args([
            "-C",
            "-b",
            &broker.bootstrap(),
            "-t",
            topic,
            "-o",
            "beginning",
            "-e",
            "-q",
        ])
        .args(["-Z", "-f", "%k\t%s\n"])
        .output()
        .expect("run kcat");
    assert!(
        out.status.success(),
        "kcat: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut m = Expected::new();
    let mut seen = BTreeSet::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let (k, v) = line.split_once('\t').expect("key\\tvalue");
        seen.insert(k.to_string());
        if v == "NULL" {
            m.remove(k);
        } else {
            m.insert(k.to_string(), v.to_string());
        }
    }
    (m, seen)
}

fn compacted_topic(conn: &mut Conn, topic: &str) {
    conn.create_topic(
        topic,
        1,
        &[
            ("cleanup.policy", "compact"),
            ("segment.bytes", "262144"),
            ("min.cleanable.dirty.ratio", "0.01"),
            ("delete.retention.ms", "2000"),
        ],
    );
}

#[test]
fn compaction_keeps_the_latest_value_per_key_and_drops_old_tombstones() {
    let n = record_count();
    let broker = Broker::start_with(&["log.cleaner.backoff.ms=200"]);
    let mut conn = Conn::open(&broker);
    let topic = "compacted";
    compacted_topic(&mut conn, topic);
    let started = Instant::now();
    let expected = produce_workload(&mut conn, topic, n, 3000);
    let produced_in = started.elapsed();
    let dir = partition_dir(broker.log_dir.path(), topic);
    let segments_before = segment_files(&dir).len();
    // Cleaned: at most 900 live keys and no tombstone outside the active
    // segment (delete.retention.ms has passed by then).
    let mut last = (0, 0, 0);
    wait_for("the cleaner to compact and drop tombstones", || {
        last = outside_active(&dir);
        let (live, tombstones, records) = last;
        live <= KEYS - TOMBSTONED && tombstones == 0 && records <= 2 * KEYS
    });
    let (live, tombstones, records) = last;
    eprintln!(
        "compaction: {n} records produced in {produced_in:?}; {segments_before} segments \
         before, {} after; outside the active segment: {live} live keys, {tombstones} \
         tombstones, {records} records; cleaned within {:?} of the end of produce",
        segment_files(&dir).len(),
        started.elapsed() - produced_in
    );
    assert!(live <= 900, "{live} live keys outside the active segment");
    let records = consume_all(&broker, topic);
    assert_eq!(fold(&records), expected, "raw consumer from the start");
    let tombstoned: BTreeSet<String> = (0..TOMBSTONED).map(key).collect();
    assert!(
        records
            .iter()
            .all(|r| !tombstoned.contains(std::str::from_utf8(r.key.as_ref().unwrap()).unwrap())),
        "a tombstoned key is still readable after delete.retention.ms"
    );
    let (kcat_view, kcat_keys) = kcat_fold(&broker, topic);
    assert_eq!(kcat_view, expected, "kcat consumer from the start");
    assert!(kcat_keys.is_disjoint(&tombstoned));
    // Offsets were kept: the log end is what was produced.
    let leo = conn.list_offset(topic, 0, LATEST_TIMESTAMP).offset;
    assert_eq!(leo, (n + TOMBSTONED + 3000) as i64);
    assert!(
        broker
            .log_dir
            .path()
            .join("cleaner-offset-checkpoint")
            .exists(),
        "cleaner-offset-checkpoint written"
    );
    // A clean restart reads the cleaned log back the same.
    let (status, dir_kept) = broker.stop_keeping_dir();
    assert!(status.success());
    let broker = Broker::start_in(dir_kept, &["log.cleaner.backoff.ms=200"]);
    assert_eq!(
        fold(&consume_all(&broker, topic)),
        expected,
        "after restart"
    );
    broker.stop();
}

#[test]
fn kill_dash_nine_during_a_clean_leaves_a_readable_correct_log() {
    let n = record_count() / 4;
    // Every append durable, so kill -9 loses nothing acknowledged. The
    // workload goes in with the cleaner off, so every kill below lands in
    // the middle of cleaning it.
    let broker = Broker::start_with(&[
        "log.cleaner.enable=false",
        "shardlog.flush.every.append=true",
    ]);
    let mut conn = Conn::open(&broker);
    let topic = "compacted-kill";
    compacted_topic(&mut conn, topic);
    let expected = produce_workload(&mut conn, topic, n, 3000);
    let (status, mut kept) = broker.stop_keeping_dir();
    assert!(status.success());
    let dir = partition_dir(kept.path(), topic);
    let has = |suffix: &str| {
        std::fs::read_dir(&dir)
            .unwrap()
            .any(|e| e.unwrap().file_name().to_string_lossy().ends_with(suffix))
    };
    let check = |broker: &Broker, round: &str| {
        assert!(!has(".cleaned"), "no .cleaned file after open ({round})");
        assert!(!has(".swap"), "no .swap file after open ({round})");
        assert_eq!(
            fold(&consume_all(broker, topic)),
            expected,
            "consumer after kill -9 ({round})"
        );
    };
    // Twice: the cleaner pauses with its `.swap` files durable, before the
    // old segments go (`shardlog.cleaner.swap.delay.ms`); kill -9 there.
    let paused = [
        "log.cleaner.backoff.ms=100",
        "shardlog.flush.every.append=true",
        "shardlog.cleaner.swap.delay.ms=3000",
    ];
    for round in 0..2 {
        let broker = Broker::start_in(kept, &paused);
        let round = format!("swap round {round}");
        check(&broker, &format!("{round}, before"));
        wait_for(&format!("a .swap file ({round})"), || has(".swap"));
        kept = broker.kill_keeping_dir();
    }
    // Then kill -9 at arbitrary points of a clean running at full speed.
    let running = [
        "log.cleaner.backoff.ms=100",
        "shardlog.flush.every.append=true",
    ];
    for delay_ms in [0u64, 150, 400] {
        let broker = Broker::start_in(kept, &running);
        check(&broker, &format!("kill at +{delay_ms} ms, before"));
        std::thread::sleep(Duration::from_millis(delay_ms));
        kept = broker.kill_keeping_dir();
    }
    let broker = Broker::start_in(kept, &running);
    check(&broker, "final open");
    // Compacted again: one record per key at most outside the active
    // segment. (Tombstones may stay: the cleaner learns delete horizons as
    // it sets them, so after a restart they go with the log's next clean,
    // as in Kafka, which needs new dirty data.)
    wait_for("the cleaner to finish after the kills", || {
        let (live, _, records) = outside_active(&dir);
        live <= KEYS - TOMBSTONED && records <= KEYS
    });
    assert_eq!(
        fold(&consume_all(&broker, topic)),
        expected,
        "final consumer"
    );
    broker.stop();
}

#[test]
fn a_null_key_record_to_a_compacted_topic_is_refused_with_invalid_record() {
    let broker = Broker::start();
    let mut conn = Conn::open(&broker);
    conn.create_topic("compacted-keys", 1, &[("cleanup.policy", "compact,delete")]);
    conn.create_topic("plain-keys", 1, &[]);
    let keyless = vec![(None, Some("v".to_string()))];
    let mixed = vec![
        (Some("k".to_string()), Some("v".to_string())),
        (None, Some("v".to_string())),
    ];
    // Kafka's `LogValidator.validateKey` message per keyless record, by
    // its index in the batch (Produce v8+ `record_errors`, KIP-467), and
    // `processRecordErrors`' message listing the first three.
    let key_error =
        "Compacted topic cannot accept message without key in topic partition compacted-keys-0";
    for codec in [Compression::None, Compression::Gzip] {
        for (records, index) in [(&keyless, 0), (&mixed, 1)] {
            let resp = conn.produce("compacted-keys", 0, batch(records, codec), -1);
            assert_eq!(resp.error_code, INVALID_RECORD, "{codec:?}: {resp:?}");
            let errors: Vec<(i32, Option<&str>)> = resp
                .record_errors
                .iter()
                .map(|e| (e.batch_index, e.batch_index_error_message.as_deref()))
                .collect();
            assert_eq!(errors, [(index, Some(key_error))], "{codec:?}: {resp:?}");
            assert_eq!(
                resp.error_message.as_deref(),
                Some(
                    format!(
                        "One or more records have been rejected due to 1 record errors in \
                         total, and only showing the first three errors at most: \
                         [RecordError(batchIndex={index}, message='{key_error}')]"
                    )
                    .as_str()
                ),
                "{codec:?}"
            );
        }
    }
    assert_eq!(
        conn.list_offset("compacted-keys", 0, LATEST_TIMESTAMP)
            .offset,
        0,
        "nothing appended"
    );
    let keyed = vec![(Some("k".to_string()), None)];
    let resp = conn.produce("compacted-keys", 0, batch(&keyed, Compression::None), -1);
    assert_eq!(
        resp.error_code,
        error_code::NONE,
        "a keyed tombstone is fine"
    );
    let resp = conn.produce("plain-keys", 0, batch(&keyless, Compression::None), -1);
    assert_eq!(
        resp.error_code,
        error_code::NONE,
        "other topics take null keys"
    );
    broker.stop();
}
