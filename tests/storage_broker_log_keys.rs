//! Broker keys that shape a partition log, each set in `server.properties`
//! text and followed through the topic defaults of a topic without
//! overrides (`ServerConfig::broker_topic_defaults` →
//! `TopicConfig::resolve` → `LogConfig::for_topic`) to a real
//! `PartitionLog` on a real file system, as Kafka 3.9's `LogConfig`
//! synonyms do: the segment rolls (`log.roll.jitter.hours`,
//! `log.index.size.max.bytes`), the flush (`log.flush.scheduler.interval.ms`)
//! and the cleaner's offset map (`log.cleaner.dedupe.buffer.size`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use common::executor::run;
use common::partition_log::{open, tp};
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use shardlog::config::topic::TopicConfig;
use shardlog::config::{ConfigError, ServerConfig};
use shardlog::io::clock::SystemClock;
use shardlog::protocol::record_batch::build_test_batch;
use shardlog::storage::cleaner::driver::{CleanJob, CleanStats, CleanerConfig, IoBudget};
use shardlog::storage::cleaner::select::{CompactionConfig, LogStat, LogToClean};
use shardlog::storage::policy::roll_jitter_ms;
use shardlog::storage::{LogConfig, PartitionLog};

const HOUR: i64 = 3_600_000;
/// A record timestamp (any fixed time: the rolls compare timestamps).
const T: i64 = 1_700_000_000_000;

fn server(properties: &str) -> ServerConfig {
    ServerConfig::from_properties(properties, &[])
        .expect("server.properties")
        .config
}

/// The log config of a topic with `overrides` on a broker started with
/// `properties`; the DMA buffers and pre-allocation kept small for a test.
fn topic_log(properties: &str, overrides: &[(&str, &str)]) -> LogConfig {
    let server = server(properties);
    let overrides: BTreeMap<String, String> = overrides
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let topic = TopicConfig::resolve(&overrides, &server.broker_topic_defaults()).unwrap();
    LogConfig {
        write_buffer_bytes: 64 << 10,
        preallocate_step_bytes: 1 << 20,
        ..LogConfig::for_topic(&topic, &server)
    }
}

/// One 100-byte-payload record stamped `ts`.
fn stamped(ts: i64) -> Vec<u8> {
    build_test_batch(0, 1, ts, ts, 100, 1)
}

/// Whether each of the three appends (stamped T, then `second`, `third`
/// ms later) found the segments as they are: the segment count after each.
async fn segments_after_appends(config: LogConfig, second: i64, third: i64) -> Vec<usize> {
    let tmp = tempfile::tempdir().unwrap();
    let mut log = open(tmp.path(), config, 1 << 20).await;
    let mut counts = Vec::new();
    for ts in [T, T + second, T + third] {
        log.append(stamped(ts), 0, ts, false).await.unwrap();
        counts.push(log.segment_count());
    }
    log.close().await.unwrap();
    counts
}

#[test]
fn log_roll_jitter_hours_rolls_a_segment_up_to_an_hour_early() {
    // Kafka: `log.roll.jitter.hours` is `segment.jitter.ms`'s default
    // (unless `log.roll.jitter.ms` is set); each segment draws its share
    // in [0, min(jitter, segment.ms)) and rolls that much early.
    let jittered = topic_log("log.roll.hours=2\nlog.roll.jitter.hours=1\n", &[]);
    assert_eq!(
        (jittered.segment_ms, jittered.segment_jitter_ms),
        (2 * HOUR, HOUR)
    );
    let share = roll_jitter_ms(&jittered, &tp().topic, tp().partition, 0);
    assert!((1..HOUR).contains(&share), "{share}");
    let early = 2 * HOUR - share;
    run(move || async move {
        // Up to segment.ms - share the first segment takes records; past
        // it the next record opens a new one.
        assert_eq!(
            segments_after_appends(jittered, early, early + 1).await,
            vec![1, 1, 2]
        );
        // Without the jitter the same records stay in one segment.
        let plain = topic_log("log.roll.hours=2\n", &[]);
        assert_eq!(plain.segment_jitter_ms, 0);
        assert_eq!(
            segments_after_appends(plain, early, early + 1).await,
            vec![1, 1, 1]
        );
        // `log.roll.jitter.ms` wins over the hours.
        let ms = topic_log("log.roll.jitter.hours=1\nlog.roll.jitter.ms=5\n", &[]);
        assert_eq!(ms.segment_jitter_ms, 5);
    });
}

#[test]
fn log_index_size_max_bytes_rolls_the_segment_when_its_offset_index_is_full() {
    // `log.index.size.max.bytes` is `segment.index.bytes`'s default: 240
    // bytes hold 30 offset-index entries (8 bytes each; Kafka's
    // `LogSegment.shouldRoll` rolls when `offsetIndex.isFull`). With
    // `log.index.interval.bytes=0` every record after a segment's first
    // adds an entry; equal timestamps add a single time-index entry.
    let small = topic_log(
        "log.index.size.max.bytes=240\nlog.index.interval.bytes=0\n",
        &[],
    );
    assert_eq!(small.segment_index_bytes, 240);
    assert_eq!(small.max_offset_index_entries(), 30);
    let plain = topic_log("log.index.interval.bytes=0\n", &[]);
    run(move || async move {
        for (config, bases) in [(small, vec![0, 31, 62]), (plain, vec![0])] {
            let tmp = tempfile::tempdir().unwrap();
            let mut log = open(tmp.path(), config, 1 << 20).await;
            for _ in 0..70 {
                log.append(stamped(T), 0, T, false).await.unwrap();
            }
            assert_eq!(log.segment_base_offsets(), bases);
            assert_eq!(log.log_end_offset(), 70);
            log.close().await.unwrap();
        }
    });
}

#[test]
fn log_flush_scheduler_interval_ms_is_the_flush_ms_of_topics_without_override() {
    // Kafka's `KafkaConfig.logFlushIntervalMs`: `log.flush.interval.ms`,
    // else `log.flush.scheduler.interval.ms`; the log flusher fsyncs a log
    // whose last flush is `flush.ms` old.
    let config = topic_log("log.flush.scheduler.interval.ms=5000\n", &[]);
    assert_eq!(config.flush_ms, 5000);
    let explicit = topic_log(
        "log.flush.scheduler.interval.ms=5000\nlog.flush.interval.ms=100\n",
        &[],
    );
    assert_eq!(explicit.flush_ms, 100);
    run(move || async move {
        let tmp = tempfile::tempdir().unwrap();
        let mut log = open(tmp.path(), config, 1 << 20).await;
        log.append(stamped(T), 0, 1_000, false).await.unwrap();
        assert!(!log.maybe_flush(5_999).await.unwrap());
        assert_eq!(log.recovery_point(), 0, "not flushed before flush.ms");
        assert!(log.maybe_flush(6_000).await.unwrap());
        assert_eq!(log.recovery_point(), 1, "flushed through the log end");
        log.close().await.unwrap();
        // Without the key (Long.MAX_VALUE) the flusher never fsyncs.
        let tmp = tempfile::tempdir().unwrap();
        let mut log = open(tmp.path(), topic_log("", &[]), 1 << 20).await;
        log.append(stamped(T), 0, 1_000, false).await.unwrap();
        assert!(!log.maybe_flush(i64::MAX / 2).await.unwrap());
        assert_eq!(log.recovery_point(), 0);
        log.close().await.unwrap();
    });
}

/// Keys in the dedupe test; each is written twice in a row.
const KEYS: usize = 60_000;
/// Records per batch (`KEYS * 2 / RECORDS_PER_BATCH` batches).
const RECORDS_PER_BATCH: usize = 1000;

/// Batch `n`: records `n * RECORDS_PER_BATCH ..`, record `r` with key
/// `k{r / 2}` and value `v{r}`.
fn keyed_batch(n: usize) -> BytesMut {
    let recs: Vec<Record> = (0..RECORDS_PER_BATCH)
        .map(|i| {
            let r = n * RECORDS_PER_BATCH + i;
            Record {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: 0,
                producer_id: -1,
                producer_epoch: -1,
                timestamp_type: TimestampType::Creation,
                offset: i as i64,
                // offset - sequence constant: one batch (kafka-protocol's
                // encoder splits where it changes).
                sequence: i as i32 - 1,
                timestamp: T,
                key: Some(Bytes::from(format!("k{}", r / 2))),
                value: Some(Bytes::from(format!("v{r}"))),
                headers: Default::default(),
            }
        })
        .collect();
    let mut buf = BytesMut::new();
    let opts = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut buf, &recs, &opts).unwrap();
    buf
}

/// (records in the log, key → its last value), reading every batch.
fn fold(log: &PartitionLog) -> (usize, BTreeMap<String, String>) {
    let (mut records, mut latest) = (0, BTreeMap::new());
    let mut offset = log.log_start_offset();
    while let Some(bytes) = log.read_batches(offset, 1 << 20).unwrap() {
        let mut at = 0;
        while at + 27 <= bytes.len() {
            let base = i64::from_be_bytes(bytes[at..at + 8].try_into().unwrap());
            let len = i32::from_be_bytes(bytes[at + 8..at + 12].try_into().unwrap());
            let delta = i32::from_be_bytes(bytes[at + 23..at + 27].try_into().unwrap());
            offset = base + i64::from(delta) + 1;
            at += 12 + len as usize;
        }
        let mut buf = bytes.clone();
        for set in RecordBatchDecoder::decode_all(&mut buf).unwrap() {
            for r in set.records {
                records += 1;
                let k = String::from_utf8(r.key.unwrap().to_vec()).unwrap();
                latest.insert(k, String::from_utf8(r.value.unwrap().to_vec()).unwrap());
            }
        }
    }
    (records, latest)
}

/// What a clean from `checkpoint` takes of `log` now.
fn to_clean(log: &PartitionLog, checkpoint: Option<i64>) -> LogToClean {
    let view = log.cleaner_view();
    LogStat {
        log_start_offset: view.log_start_offset,
        log_end_offset: view.log_end_offset,
        last_stable_offset: view.high_watermark,
        segments: view.segments.iter().map(|s| s.stat).collect(),
        active_base_offset: view.active_base_offset,
        checkpoint,
        pending_delete_horizon_ms: None,
        config: CompactionConfig::of(&view.config),
    }
    .to_clean(T)
}

/// One pass of the cleaner from `checkpoint`: the offset map, then every
/// group written and swapped in (`write` false: the map only).
async fn clean_pass(
    log: &mut PartitionLog,
    checkpoint: Option<i64>,
    cleaner: &CleanerConfig,
    write: bool,
) -> (LogToClean, CleanStats) {
    let mut io = IoBudget::new(Rc::new(SystemClock::new()), f64::MAX);
    let plan = to_clean(log, checkpoint);
    let mut job = CleanJob::new(
        log.cleaner_view(),
        plan,
        BTreeMap::new(),
        Vec::new(),
        T,
        cleaner,
    );
    job.build_offset_map(&mut io).await.unwrap();
    for group in job.groups().into_iter().filter(|_| write) {
        let cleaned = job.write_group(group, &mut io).await.unwrap();
        assert!(log
            .replace_segments(&cleaned.old, cleaned.base_offset, Duration::ZERO)
            .await
            .unwrap());
    }
    (plan, job.stats)
}

#[test]
fn log_cleaner_dedupe_buffer_size_at_or_below_one_mib_is_refused_as_kafka_does() {
    // KafkaConfig.validateValues: "log.cleaner.dedupe.buffer.size must be
    // at least 1MB per cleaner thread" (strictly more than 1 MiB).
    for value in ["1048576", "1000"] {
        match ServerConfig::from_properties(
            &format!("log.cleaner.dedupe.buffer.size={value}\n"),
            &[],
        ) {
            Err(ConfigError::InvalidValue { key, reason, .. }) => {
                assert_eq!(key, "log.cleaner.dedupe.buffer.size");
                assert!(reason.contains("1MB"), "{reason}");
            }
            other => panic!("{value}: {:?}", other.map(|l| l.warnings)),
        }
    }
    assert!(ServerConfig::from_properties("log.cleaner.dedupe.buffer.size=1048577\n", &[]).is_ok());
}

#[test]
fn log_cleaner_dedupe_buffer_size_bounds_the_offset_map_so_a_clean_takes_several_passes() {
    // Two data shards share `log.cleaner.dedupe.buffer.size` as two Kafka
    // cleaner threads do: 1 MiB each, 24 bytes per entry at the 0.9 load
    // factor (`SkimpyOffsetMap`) = 39321 keys per pass.
    let small = CleanerConfig::for_shard(&server("log.cleaner.dedupe.buffer.size=2097152\n"), 2);
    assert_eq!(small.dedupe_buffer_bytes, 1 << 20);
    let default = CleanerConfig::for_shard(&server(""), 2);
    let config = topic_log(
        "",
        &[("cleanup.policy", "compact"), ("segment.bytes", "262144")],
    );
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        let mut log = open(&dir, config, 1 << 20).await;
        for n in 0..KEYS * 2 / RECORDS_PER_BATCH {
            log.append(keyed_batch(n), 0, T, false).await.unwrap();
        }
        log.roll(T).await.unwrap();
        log.flush().await.unwrap();
        log.set_high_watermark(log.log_end_offset());
        let end = (KEYS * 2) as i64;
        // Kafka's default buffer maps the whole dirty section at once.
        let (plan, stats) = clean_pass(&mut log, None, &default, false).await;
        assert_eq!(
            (plan.first_uncleanable_offset, stats.end_offset),
            (end, end)
        );
        // The small one is full after 39321 keys: the map stops after the
        // last whole batch it mapped (Kafka's `buildOffsetMap`), offset
        // 78000, and this pass cleans only below it.
        let (plan, stats) = clean_pass(&mut log, None, &small, true).await;
        assert_eq!(plan.first_uncleanable_offset, end);
        assert_eq!((stats.map_entries, stats.end_offset), (39_321, 78_000));
        let (records, latest) = fold(&log);
        assert_eq!(
            records,
            39_000 + (KEYS * 2 - 78_000),
            "deduplicated below 78000 only"
        );
        assert_eq!(latest.len(), KEYS);
        // The next pass starts at the checkpointed end and finishes.
        let (plan, stats) = clean_pass(&mut log, Some(stats.end_offset), &small, true).await;
        assert_eq!(plan.first_dirty_offset, 78_000);
        assert_eq!((stats.map_entries, stats.end_offset), (21_000, end));
        let (records, latest) = fold(&log);
        assert_eq!(records, KEYS, "one record per key");
        assert!((0..KEYS).all(|k| latest[&format!("k{k}")] == format!("v{}", 2 * k + 1)));
        log.close().await.unwrap();
    });
}
