//! The log cleaner against a real `PartitionLog` on a real file system:
//! a cleaned log (offset gaps, emptied batches) reads back the latest value
//! per key and survives unclean and clean reopens without losing a
//! segment; a swap is refused when the log changed while it was cleaned.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use common::executor::run;
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use shardlog::io::clock::SystemClock;
use shardlog::io::zerocopy::OutPart;
use shardlog::storage::cleaner::driver::{CleanJob, CleanerConfig, IoBudget};
use shardlog::storage::cleaner::select::{CompactionConfig, LogStat, LogToClean};
use shardlog::storage::{BatchCache, LogConfig, PartitionLog, ShardStorage};
use shardlog::types::TopicPartition;

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 64 << 10,
        write_buffer_bytes: 64 << 10,
        preallocate_step_bytes: 1 << 20,
        retention_ms: -1,
        compact: true,
        delete: false,
        ..LogConfig::default()
    }
}

async fn open(dir: &Path) -> PartitionLog {
    shardlog::io::dma::prime_iopoll_probe(dir).await.unwrap();
    PartitionLog::open(
        dir,
        &TopicPartition::new("compacted", 0),
        None,
        config(),
        ShardStorage::standalone(BatchCache::shared(1 << 20)),
    )
    .await
    .unwrap()
}

/// Batch `n`: 20 records of keys `(n * 20 + i) % 100`, value `n-i`.
fn batch(n: usize) -> BytesMut {
    let recs: Vec<Record> = (0..20)
        .map(|i| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: i,
            sequence: i as i32 - 1,
            timestamp: 1_000 + n as i64,
            key: Some(format!("key-{}", (n * 20 + i as usize) % 100).into()),
            value: Some(Bytes::from(format!("{n}-{i}-{}", "v".repeat(100)))),
            headers: Default::default(),
        })
        .collect();
    let mut buf = BytesMut::new();
    let codec = if n.is_multiple_of(3) {
        Compression::Gzip
    } else {
        Compression::None
    };
    let opts = RecordEncodeOptions {
        version: 2,
        compression: codec,
    };
    RecordBatchEncoder::encode(&mut buf, &recs, &opts).unwrap();
    buf
}

/// Key → value of every record from the log start (file and cache reads).
fn fold(log: &PartitionLog) -> (BTreeMap<String, String>, usize) {
    let mut out = BTreeMap::new();
    let mut records = 0;
    let (mut offset, end) = (log.log_start_offset(), log.log_end_offset());
    while offset < end {
        let r = log.read(offset, 1 << 20, end, true).unwrap();
        if r.bytes == 0 {
            break;
        }
        let mut buf = shardlog::io::parts::gather(&r.regions).unwrap();
        for set in RecordBatchDecoder::decode_all(&mut buf).unwrap() {
            for r in set.records {
                records += 1;
                let k = String::from_utf8(r.key.unwrap().to_vec()).unwrap();
                out.insert(k, String::from_utf8(r.value.unwrap().to_vec()).unwrap());
            }
        }
        // The next read starts past the last (whole) batch returned.
        offset = last_offset_in(&r.regions).max(offset + 1);
    }
    (out, records)
}

/// The offset after the last whole batch of a read.
fn last_offset_in(regions: &[OutPart]) -> i64 {
    let bytes = shardlog::io::parts::gather(regions).unwrap();
    let (mut at, mut next) = (0usize, 0i64);
    while at + 27 <= bytes.len() {
        let base = i64::from_be_bytes(bytes[at..at + 8].try_into().unwrap());
        let len = i32::from_be_bytes(bytes[at + 8..at + 12].try_into().unwrap());
        let delta = i32::from_be_bytes(bytes[at + 23..at + 27].try_into().unwrap());
        next = base + i64::from(delta) + 1;
        at += 12 + len as usize;
    }
    next
}

fn to_clean(log: &PartitionLog) -> LogToClean {
    let view = log.cleaner_view();
    LogStat {
        log_start_offset: view.log_start_offset,
        log_end_offset: view.log_end_offset,
        last_stable_offset: view.high_watermark,
        segments: view.segments.iter().map(|s| s.stat).collect(),
        active_base_offset: view.active_base_offset,
        checkpoint: None,
        pending_delete_horizon_ms: None,
        config: CompactionConfig {
            min_cleanable_dirty_ratio: 0.5,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
        },
    }
    .to_clean(10_000)
}

fn cleaner() -> CleanerConfig {
    CleanerConfig {
        dedupe_buffer_bytes: 1 << 20,
        io_max_bytes_per_second: f64::MAX,
        swap_delay_ms: 0,
    }
}

/// Append `batches` batches and roll, so all of it is cleanable.
async fn fill(log: &mut PartitionLog, batches: usize) -> BTreeMap<String, String> {
    let mut expected = BTreeMap::new();
    for n in 0..batches {
        for i in 0..20usize {
            let k = format!("key-{}", (n * 20 + i) % 100);
            expected.insert(k, format!("{n}-{i}-{}", "v".repeat(100)));
        }
        log.append(batch(n), 0, 1_000 + n as i64, false)
            .await
            .unwrap();
    }
    log.roll(2_000).await.unwrap();
    log.flush().await.unwrap();
    log.set_high_watermark(log.log_end_offset());
    expected
}

#[test]
fn a_cleaned_log_reads_the_latest_value_per_key_and_survives_reopens() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        let mut log = open(&dir).await;
        let expected = fill(&mut log, 300).await;
        let (segments_before, bytes_before) = (log.segment_count(), log.size_bytes());
        assert!(segments_before > 5, "{segments_before} segments");
        let leo = log.log_end_offset();

        let mut io = IoBudget::new(Rc::new(SystemClock::new()), f64::MAX);
        let mut job = CleanJob::new(
            log.cleaner_view(),
            to_clean(&log),
            BTreeMap::new(),
            Vec::new(),
            10_000,
            &cleaner(),
        );
        job.build_offset_map(&mut io).await.unwrap();
        for group in job.groups() {
            let cleaned = job.write_group(group, &mut io).await.unwrap();
            let swapped = log
                .replace_segments(&cleaned.old, cleaned.base_offset, Duration::ZERO)
                .await
                .unwrap();
            assert!(swapped);
        }
        assert_eq!(
            job.stats.records_kept, 100,
            "one record per key: {:?}",
            job.stats
        );
        // Groups are sized by the segments' sizes before cleaning (Kafka's
        // groupSegmentsBySize): full segments stay one per group.
        assert!(log.segment_count() <= segments_before);
        assert!(
            log.size_bytes() * 10 < bytes_before,
            "{} of {bytes_before} bytes left",
            log.size_bytes()
        );
        let (seen, records) = fold(&log);
        assert_eq!(seen, expected);
        assert_eq!(records, 100);
        assert_eq!(log.log_end_offset(), leo, "offsets kept");
        assert!(!std::fs::read_dir(dir.join("compacted-0"))
            .unwrap()
            .any(|e| {
                let n = e.unwrap().file_name().to_string_lossy().to_string();
                n.ends_with(".cleaned") || n.ends_with(".swap")
            }));

        let view = log.cleaner_view();
        assert!(
            view.segments
                .windows(2)
                .any(|w| w[0].next_offset < w[1].base_offset),
            "some cleaned segment ends short of the next one (an offset gap)"
        );
        // Unclean reopen: every segment rescanned, none dropped although
        // cleaned segments end short of the next base offset.
        drop(log);
        let log = open(&dir).await;
        let stats = log.recovery_stats();
        assert!(!stats.clean_shutdown);
        assert_eq!(stats.segments_dropped, 0, "{stats:?}");
        assert_eq!(log.log_end_offset(), leo);
        assert_eq!(fold(&log), (expected.clone(), 100));
        log.close().await.unwrap();
        // Clean reopen trusts the cleaned segments' rebuilt indexes.
        let log = open(&dir).await;
        assert!(log.recovery_stats().clean_shutdown);
        assert_eq!(log.recovery_stats().segments_scanned, 0);
        assert_eq!(fold(&log), (expected, 100));
        log.close().await.unwrap();
    });
}

#[test]
fn a_swap_is_refused_when_the_log_changed_while_it_was_cleaned() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        let mut log = open(&dir).await;
        fill(&mut log, 100).await;
        let mut io = IoBudget::new(Rc::new(SystemClock::new()), f64::MAX);
        let mut job = CleanJob::new(
            log.cleaner_view(),
            to_clean(&log),
            BTreeMap::new(),
            Vec::new(),
            10_000,
            &cleaner(),
        );
        job.build_offset_map(&mut io).await.unwrap();
        let group = job.groups().into_iter().next().unwrap();
        let cleaned = job.write_group(group, &mut io).await.unwrap();
        // A follower's truncation into the group meanwhile.
        let cut = cleaned.old[0].next_offset - 5;
        log.truncate_to(cut).await.unwrap();
        let swapped = log
            .replace_segments(&cleaned.old, cleaned.base_offset, Duration::ZERO)
            .await
            .unwrap();
        assert!(!swapped);
        cleaned.discard();
        let part = dir.join("compacted-0");
        assert!(!std::fs::read_dir(&part).unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".cleaned")));
        assert!(log.log_end_offset() <= cut);
        log.close().await.unwrap();
    });
}
