//! PartitionLog end to end on a real file system: round trips through the
//! cache and file paths, clean vs unclean reopen, retention, truncation,
//! lookups, rejected input.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::os::unix::fs::FileExt;
use std::path::Path;

use bytes::BytesMut;
use common::executor::run;
use proptest::prelude::*;
use shardlog::io::zerocopy::OutPart;
use shardlog::protocol::record_batch::{
    build_test_batch, set_base_offset, set_partition_leader_epoch, RecordBatch, HEADER_LEN,
};
use shardlog::storage::batch_cache::ENTRY_OVERHEAD;
use shardlog::storage::log_dir::{LogDir, PartitionOffsets};
use shardlog::storage::{BatchCache, LogConfig, PartitionLog, StorageError};
use shardlog::types::TopicPartition;

fn tp() -> TopicPartition {
    TopicPartition::new("orders", 3)
}

/// Deterministic batch `i`: records, timestamp, payload derive from `i`.
fn batch(i: u64) -> Vec<u8> {
    let count = 1 + (i % 4) as i32;
    let payload = ((i * 7919) % 1500) as usize;
    build_test_batch(
        0,
        count,
        1_000 + i as i64,
        1_000 + i as i64,
        payload,
        i as u8,
    )
}

/// What the log must hold for batch `i` at `base_offset`.
fn expected(i: u64, base_offset: i64, epoch: i32) -> Vec<u8> {
    let mut b = batch(i);
    set_base_offset(&mut b, base_offset);
    set_partition_leader_epoch(&mut b, epoch);
    b
}

fn region_bytes(regions: &[OutPart]) -> (Vec<u8>, usize, usize) {
    let (mut out, mut cached, mut file) = (Vec::new(), 0, 0);
    for r in regions {
        match r {
            OutPart::Bytes(b) => {
                cached += 1;
                out.extend_from_slice(b);
            }
            OutPart::File {
                file: f,
                position,
                len,
            } => {
                file += 1;
                let mut v = vec![0u8; *len];
                f.read_exact_at(&mut v, *position).expect("pread");
                out.extend_from_slice(&v);
            }
        }
    }
    (out, cached, file)
}

async fn open(dir: &Path, config: LogConfig, cache_bytes: usize) -> PartitionLog {
    shardlog::io::dma::prime_iopoll_probe(dir)
        .await
        .expect("prime");
    PartitionLog::open(
        dir,
        &tp(),
        Some(uuid::Uuid::from_bytes([7; 16])),
        config,
        BatchCache::shared(cache_bytes),
    )
    .await
    .expect("open")
}

fn small_config() -> LogConfig {
    LogConfig {
        segment_bytes: 256 << 10,
        write_buffer_bytes: 64 << 10,
        preallocate_step_bytes: 1 << 20,
        retention_ms: -1,
        ..LogConfig::default()
    }
}

#[test]
fn hundred_thousand_batches_round_trip_through_cache_and_file_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        let mut log = open(&dir, small_config(), 2 << 20).await;
        let n = 100_000u64;
        let mut bases = Vec::with_capacity(n as usize);
        for i in 0..n {
            let info = log
                .append(BytesMut::from(&batch(i)[..]), 5, 2_000, false)
                .await
                .unwrap();
            bases.push(info.first_offset);
        }
        assert!(
            log.segment_count() > 50,
            "segments: {}",
            log.segment_count()
        );
        let leo = log.log_end_offset();
        let (mut via_cache, mut via_file) = (0, 0);
        for (i, &base) in bases.iter().enumerate() {
            let r = log.read(base, 1, leo, true).unwrap();
            let (bytes, c, f) = region_bytes(&r.regions);
            assert_eq!(bytes, expected(i as u64, base, 5), "batch {i}");
            assert_eq!(r.bytes, bytes.len());
            via_cache += c.min(1);
            via_file += f.min(1);
        }
        assert!(
            via_cache > 100 && via_file > 10_000,
            "cache {via_cache} file {via_file}"
        );
        // Multi-batch reads from the file path concatenate whole batches.
        let r = log.read(bases[10], 20_000, leo, true).unwrap();
        let (bytes, _, _) = region_bytes(&r.regions);
        let mut pos = 0;
        let mut i = 10u64;
        while pos < bytes.len() {
            let b = RecordBatch::new(&bytes[pos..pos + expected(i, bases[i as usize], 5).len()])
                .unwrap();
            assert_eq!(b.base_offset(), bases[i as usize]);
            pos += b.total_len();
            i += 1;
        }
        assert!(bytes.len() <= 20_000 && i > 11);
        log.close().await.unwrap();

        // After a clean reopen the cache is empty: every read is from the file.
        let log = open(&dir, small_config(), 2 << 20).await;
        assert_eq!(log.log_end_offset(), leo);
        for (i, &base) in bases.iter().enumerate().step_by(7) {
            // An offset inside a multi-record batch returns the whole batch.
            let last = bases.get(i + 1).copied().unwrap_or(leo) - 1;
            let r = log.read(last, 1, leo, true).unwrap();
            let (bytes, cached, _) = region_bytes(&r.regions);
            assert_eq!(cached, 0);
            assert_eq!(bytes, expected(i as u64, base, 5));
        }
        log.close().await.unwrap();
    });
}

/// Batches larger than half a write buffer mostly span two buffers; the
/// cache keeps a slice of each (no joined copy), and fetches send them back
/// to back.
#[test]
fn batches_spanning_write_buffers_are_cached_in_pieces_and_read_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        let config = LogConfig {
            segment_bytes: 4 << 20,
            write_buffer_bytes: 64 << 10,
            ..small_config()
        };
        let big = |i: u64| build_test_batch(0, 3, 1_000 + i as i64, 1_000, 40_000, i as u8);
        let mut log = open(&dir, config.clone(), 64 << 20).await;
        let mut bases = Vec::new();
        for i in 0..40u64 {
            let info = log
                .append(BytesMut::from(&big(i)[..]), 4, 2_000, false)
                .await
                .unwrap();
            bases.push(info.first_offset);
        }
        let leo = log.log_end_offset();
        let mut split = 0;
        for (i, &base) in bases.iter().enumerate() {
            let r = log.read(base, 1, leo, true).unwrap();
            let (bytes, cached, file) = region_bytes(&r.regions);
            let mut want = big(i as u64);
            set_base_offset(&mut want, base);
            set_partition_leader_epoch(&mut want, 4);
            assert_eq!(bytes, want, "batch {i}");
            assert_eq!((file, r.bytes), (0, want.len()), "batch {i} from the cache");
            if cached > 1 {
                split += 1;
            }
        }
        // 40 kB batches in 64 KiB buffers: well over half cross a boundary.
        assert!(split >= 20, "batches cached in pieces: {split}");
        // A multi-batch read is whole batches back to back.
        let r = log.read(bases[3], 200_000, leo, true).unwrap();
        let (bytes, _, _) = region_bytes(&r.regions);
        let n = big(0).len();
        assert!(bytes.len() >= 2 * n && bytes.len() <= 200_000);
        let first = RecordBatch::new(&bytes[..n]).unwrap();
        assert_eq!(first.base_offset(), bases[3]);
        let second = RecordBatch::new(&bytes[n..2 * n]).unwrap();
        assert_eq!(second.base_offset(), bases[4]);
        log.close().await.unwrap();

        // The file holds the same bytes.
        let log = open(&dir, config, 64 << 20).await;
        for (i, &base) in bases.iter().enumerate() {
            let r = log.read(base, 1, leo, true).unwrap();
            let (bytes, cached, _) = region_bytes(&r.regions);
            let mut want = big(i as u64);
            set_base_offset(&mut want, base);
            set_partition_leader_epoch(&mut want, 4);
            assert_eq!((cached, bytes), (0, want), "batch {i} from the file");
        }
        log.close().await.unwrap();
    });
}

/// A flush after every append (flush.messages=1, what group commit does)
/// writes the partly filled buffer in place and goes on in a new one:
/// after each flush the segment file holds exactly the log, zeros past its
/// end, and cached batches (slices of the flushed buffers) stay intact.
#[test]
fn flushing_after_every_append_leaves_the_file_exact_and_the_cache_intact() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        let config = LogConfig {
            segment_bytes: 8 << 20,
            write_buffer_bytes: 64 << 10,
            flush_messages: 1,
            ..small_config()
        };
        let mut log = open(&dir, config.clone(), 64 << 20).await;
        let mut want = Vec::new();
        let mut bases = Vec::new();
        for i in 0..300u64 {
            // 1.5 kB to 40 kB: flushes land mid-page, at page ends and
            // across buffer boundaries.
            let b = build_test_batch(
                0,
                2,
                1_000,
                1_000,
                1_500 + ((i * 7_919) % 38_000) as usize,
                i as u8,
            );
            let info = log
                .append(BytesMut::from(&b[..]), 3, 2_000, false)
                .await
                .unwrap();
            assert_eq!(
                log.recovery_point(),
                log.log_end_offset(),
                "flushed after batch {i}"
            );
            let mut e = b.clone();
            set_base_offset(&mut e, info.first_offset);
            set_partition_leader_epoch(&mut e, 3);
            want.extend_from_slice(&e);
            bases.push((info.first_offset, e));
            // The file holds every byte of the log, then only zeros up to
            // the page end.
            let file = std::fs::read(seg_path(log.dir(), 0)).unwrap();
            assert_eq!(&file[..want.len()], &want[..], "file after batch {i}");
            let page_end = want.len().div_ceil(4096) * 4096;
            assert!(
                file[want.len()..page_end.min(file.len())]
                    .iter()
                    .all(|&b| b == 0),
                "bytes past the end of batch {i} are zeros"
            );
        }
        let leo = log.log_end_offset();
        for (base, e) in &bases {
            let r = log.read(*base, 1, leo, true).unwrap();
            let (bytes, cached, file) = region_bytes(&r.regions);
            assert_eq!((file, &bytes), (0, e), "cached batch at {base}");
            assert!(cached >= 1);
        }
        log.close().await.unwrap();
        let log = open(&dir, config, 64 << 20).await;
        assert_eq!(log.log_end_offset(), leo);
        for (base, e) in &bases {
            let r = log.read(*base, 1, leo, true).unwrap();
            let (bytes, _, _) = region_bytes(&r.regions);
            assert_eq!(&bytes, e, "batch at {base} after reopen");
        }
        log.close().await.unwrap();
    });
}

#[test]
fn first_read_of_a_freshly_created_segment_works_in_a_new_executor() {
    // PLATFORM.md: glommio's IOPOLL probe makes DMA reads fail with
    // EOPNOTSUPP unless `prime_iopoll_probe` ran first on this thread.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let seg_path = run(move || async move {
        let mut log = open(&dir, small_config(), 1 << 20).await;
        log.append(BytesMut::from(&batch(1)[..]), 0, 1, false)
            .await
            .unwrap();
        log.flush().await.unwrap();
        let p = log.dir().join("00000000000000000000.log");
        let f = glommio::io::DmaFile::open(&p).await.unwrap();
        let r = f
            .read_at(0, batch(1).len())
            .await
            .expect("DMA read of fresh segment");
        assert_eq!(&r[..], &expected(1, 0, 0)[..]);
        f.close().await.unwrap();
        drop(log); // unclean: next open must rescan with DMA reads
        dir
    });
    let reopened = run(move || async move {
        let log = open(&seg_path, small_config(), 1 << 20).await;
        let stats = log.recovery_stats();
        let r = log.read(0, 1 << 20, i64::MAX, true).unwrap();
        (stats.segments_scanned, region_bytes(&r.regions).0)
    });
    assert_eq!(reopened.0, 1);
    assert_eq!(reopened.1, expected(1, 0, 0));
}

#[test]
fn clean_shutdown_reopen_does_not_rescan_but_unclean_does() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        let mut log = open(&dir, small_config(), 1 << 20).await;
        for i in 0..2_000 {
            log.append(BytesMut::from(&batch(i)[..]), 1, 5, false)
                .await
                .unwrap();
        }
        let leo = log.log_end_offset();
        let segments = log.segment_count();
        log.close().await.unwrap();

        let log = open(&dir, small_config(), 1 << 20).await;
        let s = log.recovery_stats();
        assert!(s.clean_shutdown);
        assert_eq!((s.segments_scanned, s.bytes_scanned), (0, 0));
        assert_eq!((log.log_end_offset(), log.segment_count()), (leo, segments));
        let r = log.read(leo - 1, 1, leo, true).unwrap();
        assert_eq!(
            region_bytes(&r.regions).0,
            expected(1_999, leo - 1 - (1_999 % 4) as i64, 1)
        );
        drop(log); // no close: the marker was consumed by open

        let log = open(&dir, small_config(), 1 << 20).await;
        let s = log.recovery_stats();
        assert!(!s.clean_shutdown);
        // No recovery-point checkpoint was written: every segment is rescanned.
        assert_eq!(s.segments_scanned as usize, segments);
        assert_eq!(log.log_end_offset(), leo);

        // With a recovery point checkpoint only the tail is rescanned.
        let ld = LogDir::open(&dir, 1, None).unwrap();
        ld.write_checkpoints(&[PartitionOffsets::of(&log, 0)])
            .unwrap();
        drop(log);
        let log = open(&dir, small_config(), 1 << 20).await;
        assert_eq!(log.recovery_stats().segments_scanned, 1);
        assert_eq!(log.log_end_offset(), leo);
        log.close().await.unwrap();
    });
}

#[test]
fn retention_deletes_exactly_the_expired_segments() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        let config = LogConfig {
            retention_ms: 10_000,
            ..small_config()
        };
        let mut log = open(&dir, config, 1 << 20).await;
        // Segment k holds timestamps k*1000 .. k*1000+999; rolls forced.
        let mut seg_bases = Vec::new();
        for k in 0..6i64 {
            seg_bases.push(log.log_end_offset());
            for j in 0..10 {
                let ts = k * 1_000 + j * 99;
                let b = build_test_batch(0, 2, ts, ts, 100, 1);
                log.append(BytesMut::from(&b[..]), 0, ts, false)
                    .await
                    .unwrap();
            }
            log.roll(k * 1_000 + 999).await.unwrap();
        }
        let leo = log.log_end_offset();
        log.set_high_watermark(leo);
        // now = 13_500: segments whose largest timestamp < 3_500 expire (k = 0..=2).
        assert_eq!(log.apply_retention(13_500).unwrap(), 3);
        assert_eq!(log.log_start_offset(), seg_bases[3]);
        assert_eq!(log.segment_base_offsets()[0], seg_bases[3]);
        assert!(matches!(
            log.read(0, 100, leo, true),
            Err(StorageError::OffsetOutOfRange { .. })
        ));
        for base in &seg_bases[..3] {
            assert!(!log.dir().join(format!("{base:020}.log")).exists());
        }
        assert_eq!(log.apply_retention(13_500).unwrap(), 0);
        log.close().await.unwrap();

        // Size retention: segments 3..=5 hold equal bytes (the active one is
        // empty); a budget of two segments deletes exactly the oldest one.
        let reopen = |bytes: i64| {
            let dir = dir.clone();
            async move {
                let config = LogConfig {
                    retention_ms: -1,
                    retention_bytes: bytes,
                    ..small_config()
                };
                let mut log = open(&dir, config, 1 << 20).await;
                log.set_high_watermark(i64::MAX);
                log
            }
        };
        let log = reopen(0).await;
        let per_segment = log.size_bytes() as i64 / 3;
        log.close().await.unwrap();
        let mut log = reopen(2 * per_segment).await;
        assert_eq!(log.apply_retention(0).unwrap(), 1);
        assert_eq!(log.log_start_offset(), seg_bases[4]);
        log.close().await.unwrap();
        // Retention never deletes past the high watermark nor the active segment.
        let mut log = reopen(0).await;
        log.set_high_watermark(seg_bases[4]);
        assert_eq!(log.apply_retention(0).unwrap(), 0);
        log.set_high_watermark(leo);
        assert_eq!(log.apply_retention(0).unwrap(), 2);
        assert_eq!((log.segment_count(), log.log_start_offset()), (1, leo));
        log.close().await.unwrap();
    });
}

#[test]
fn truncation_and_delete_records_move_the_right_offsets() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        let mut log = open(&dir, small_config(), 1 << 20).await;
        let mut bases = Vec::new();
        for i in 0..1_000 {
            bases.push(
                log.append(BytesMut::from(&batch(i)[..]), (i / 300) as i32, 5, false)
                    .await
                    .unwrap()
                    .first_offset,
            );
        }
        let leo = log.log_end_offset();
        log.set_high_watermark(leo + 100);
        assert_eq!(log.high_watermark(), leo, "HW clamps to LEO");
        assert_eq!(
            log.leader_epochs(),
            &[(0, 0), (1, bases[300]), (2, bases[600]), (3, bases[900])]
        );

        // Truncate into the middle of batch 703 (4 records): the whole batch goes.
        assert_eq!(bases[704] - bases[703], 4);
        log.truncate_to(bases[703] + 2).await.unwrap();
        let new_leo = bases[703];
        assert_eq!(log.log_end_offset(), new_leo);
        assert_eq!(log.high_watermark(), new_leo);
        assert_eq!(
            log.leader_epochs(),
            &[(0, 0), (1, bases[300]), (2, bases[600])]
        );
        let r = log.read(bases[702], 1 << 20, i64::MAX, true).unwrap();
        assert_eq!(region_bytes(&r.regions).0, expected(702, bases[702], 2));
        // Appends continue from the new end.
        let info = log
            .append(BytesMut::from(&batch(5)[..]), 4, 5, false)
            .await
            .unwrap();
        assert_eq!(info.first_offset, new_leo);
        let r = log.read(new_leo, 1 << 20, i64::MAX, true).unwrap();
        assert_eq!(region_bytes(&r.regions).0, expected(5, new_leo, 4));

        // DeleteRecords beyond HW is refused; below it advances log start.
        log.set_high_watermark(bases[500]);
        assert!(matches!(
            log.delete_records_before(bases[500] + 1),
            Err(StorageError::OffsetOutOfRange { .. })
        ));
        let segs_before = log.segment_count();
        assert_eq!(log.delete_records_before(bases[400]).unwrap(), bases[400]);
        assert_eq!(log.log_start_offset(), bases[400]);
        assert!(log.segment_count() < segs_before);
        assert!(log.segment_base_offsets()[0] <= bases[400]);
        assert!(matches!(
            log.read(bases[399], 1, i64::MAX, true),
            Err(StorageError::OffsetOutOfRange { .. })
        ));
        let r = log.read(bases[400], 1, i64::MAX, true).unwrap();
        assert_eq!(region_bytes(&r.regions).0, expected(400, bases[400], 1));

        // Truncating below the log start offset empties the log at that offset.
        log.truncate_to(bases[10]).await.unwrap();
        assert_eq!(
            (
                log.log_start_offset(),
                log.log_end_offset(),
                log.segment_count()
            ),
            (bases[10], bases[10], 1)
        );
        log.close().await.unwrap();
        let log = open(&dir, small_config(), 1 << 20).await;
        assert_eq!(log.log_end_offset(), bases[10]);
        log.close().await.unwrap();
    });
}

#[test]
fn reads_honour_upper_bound_max_bytes_kip74_and_range_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        for cache_bytes in [1 << 20, 0] {
            let d = dir.join(format!("c{cache_bytes}"));
            let mut log = open(&d, small_config(), cache_bytes).await;
            let mut bases = Vec::new();
            for i in 0..10 {
                let b = build_test_batch(0, 2, i, i, 1_000, 0);
                bases.push(
                    log.append(BytesMut::from(&b[..]), 0, 0, false)
                        .await
                        .unwrap()
                        .first_offset,
                );
            }
            let len = 1_061;
            let rows: Vec<(i64, usize, i64, bool, usize)> = vec![
                (0, 10 * len, 20, true, 10 * len),
                (3, 10 * len, 20, true, 9 * len), // offset 3 is inside batch 2..3
                (0, 3 * len + 5, 20, true, 3 * len),
                (0, 10, 20, true, len), // KIP-74: one batch anyway
                (0, 10, 20, false, 0),
                (0, 10 * len, 6, true, 3 * len), // upper bound (HW) = 6
                (0, 10 * len, 1, true, 0),       // batch 0..1 reaches the bound
                (20, 10 * len, 20, true, 0),     // at LEO: empty
            ];
            for (start, max, upper, min_one, want) in rows {
                let r = log.read(start, max, upper, min_one).unwrap();
                assert_eq!(
                    r.bytes, want,
                    "start {start} max {max} upper {upper} cache {cache_bytes}"
                );
                assert_eq!(region_bytes(&r.regions).0.len(), want);
            }
            assert_eq!(
                log.read(21, 100, 100, true).unwrap_err().kafka_error_code(),
                1
            );
            assert_eq!(
                log.read(-1, 100, 100, true).unwrap_err().kafka_error_code(),
                1
            );
            log.close().await.unwrap();
        }
    });
}

#[test]
fn corrupt_batches_are_rejected_and_nothing_is_appended() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        let mut log = open(&dir, small_config(), 1 << 20).await;
        log.append(BytesMut::from(&batch(0)[..]), 0, 0, false)
            .await
            .unwrap();
        let leo = log.log_end_offset();
        let good = batch(1);
        let mut bad_crc = good.clone();
        bad_crc[80] ^= 1;
        let mut wrong_magic = good.clone();
        wrong_magic[16] = 1;
        let mut two = good.clone();
        two.extend_from_slice(&bad_crc); // second batch bad: first must not land
        let cases: Vec<(&str, Vec<u8>, i16)> = vec![
            ("bad crc", bad_crc, 2),
            ("short", good[..50].to_vec(), 2),
            ("length mismatch", good[..good.len() - 3].to_vec(), 2),
            ("wrong magic", wrong_magic, 43),
            ("good then bad", two, 2),
            ("empty", Vec::new(), 2),
        ];
        for (name, bytes, code) in cases {
            let e = log
                .append(BytesMut::from(&bytes[..]), 0, 0, false)
                .await
                .unwrap_err();
            assert_eq!(e.kafka_error_code(), code, "{name}");
            assert_eq!(log.log_end_offset(), leo, "{name}");
        }
        let big = build_test_batch(0, 1, 0, 0, 2 << 20, 0);
        assert_eq!(
            log.append(BytesMut::from(&big[..]), 0, 0, false)
                .await
                .unwrap_err()
                .kafka_error_code(),
            10
        );
        // LogAppendTime: stamped, CRC recomputed, reported back.
        let info = log
            .append(BytesMut::from(&good[..]), 0, 777_000, true)
            .await
            .unwrap();
        assert_eq!(info.log_append_time_ms, 777_000);
        let r = log
            .read(info.first_offset, 1 << 20, i64::MAX, true)
            .unwrap();
        let bytes = region_bytes(&r.regions).0;
        let b = RecordBatch::new(&bytes).unwrap();
        assert_eq!(b.max_timestamp(), 777_000);
        log.close().await.unwrap();
    });
}

fn lookup_case(timestamps: Vec<i64>, probes: Vec<i64>) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        let config = LogConfig {
            segment_bytes: 16 << 10,
            index_interval_bytes: 512,
            ..small_config()
        };
        let mut log = open(&dir, config, 0).await; // no cache: file path only
        let mut all = Vec::new(); // (base, last, max_ts)
        for (i, ts) in timestamps.iter().enumerate() {
            let b = build_test_batch(0, 1 + (i % 3) as i32, *ts, *ts, (i * 131) % 700, 0);
            let info = log
                .append(BytesMut::from(&b[..]), 0, 0, false)
                .await
                .unwrap();
            all.push((info.first_offset, info.last_offset, *ts));
        }
        let leo = log.log_end_offset();
        for p in probes {
            let want = all.iter().find(|b| b.2 >= p).map(|b| (b.0, b.2));
            assert_eq!(log.offset_for_timestamp(p).unwrap(), want, "ts {p}");
            let off = p.rem_euclid(leo);
            let want = all.iter().find(|b| b.1 >= off).unwrap();
            let r = log.read(off, 1, leo, true).unwrap();
            let bytes = region_bytes(&r.regions).0;
            assert_eq!(
                RecordBatch::new(&bytes).unwrap().base_offset(),
                want.0,
                "offset {off}"
            );
        }
        let max = all.iter().map(|b| b.2).max().unwrap();
        let first_with_max = all.iter().find(|b| b.2 == max).unwrap().0;
        assert_eq!(log.max_timestamp_and_offset(), Some((max, first_with_max)));
        log.close().await.unwrap();
    });
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]
    #[test]
    fn offset_and_timestamp_lookups_agree_with_linear_scan(
        timestamps in proptest::collection::vec(0i64..5_000, 1..400),
        probes in proptest::collection::vec(-10i64..5_100, 1..40),
    ) {
        lookup_case(timestamps, probes);
    }
}

#[test]
fn log_dir_writes_meta_properties_and_kafka_checkpoints() {
    let tmp = tempfile::tempdir().unwrap();
    let ld = LogDir::open(tmp.path(), 7, Some("cluster-x")).unwrap();
    let entries = vec![PartitionOffsets {
        tp: tp(),
        recovery_point: 10,
        high_watermark: 8,
        log_start_offset: 2,
        log_dir: 0,
    }];
    ld.write_checkpoints(&entries).unwrap();
    assert_eq!(ld.read_checkpoints().unwrap(), entries);
    let text =
        std::fs::read_to_string(tmp.path().join("recovery-point-offset-checkpoint")).unwrap();
    assert_eq!(text, "0\n1\norders 3 10\n");
    assert_eq!(ld.meta_properties().unwrap().broker_id, 7);
    assert!(
        LogDir::open(tmp.path(), 8, None).is_err(),
        "another broker's dir"
    );
}

#[test]
fn closing_or_dropping_a_log_releases_its_cache_share() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        shardlog::io::dma::prime_iopoll_probe(&dir).await.unwrap();
        let cache = BatchCache::shared(1 << 20);
        let mut a = PartitionLog::open(&dir, &tp(), None, small_config(), cache.clone())
            .await
            .unwrap();
        let other = TopicPartition::new("orders", 4);
        let mut b = PartitionLog::open(&dir, &other, None, small_config(), cache.clone())
            .await
            .unwrap();
        a.append(BytesMut::from(&batch(1)[..]), 0, 0, false)
            .await
            .unwrap();
        b.append(BytesMut::from(&batch(2)[..]), 0, 0, false)
            .await
            .unwrap();
        // Each cached batch is charged its bytes and its bookkeeping.
        let charge = |n| batch(n).len() + ENTRY_OVERHEAD;
        assert_eq!(cache.borrow().used_bytes(), charge(1) + charge(2));
        a.close().await.unwrap();
        assert_eq!(cache.borrow().used_bytes(), charge(2));
        drop(b);
        assert_eq!(cache.borrow().used_bytes(), 0);
        cache.borrow().check_invariants();
    });
}

#[test]
fn flush_policy_follows_flush_messages_and_flush_ms() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        let config = LogConfig {
            flush_messages: 10,
            flush_ms: 100,
            ..small_config()
        };
        let mut log = open(&dir, config, 1 << 20).await;
        // batch(0) holds 1 record, batch(3) holds 4.
        log.append(BytesMut::from(&batch(0)[..]), 0, 0, false)
            .await
            .unwrap();
        assert_eq!(log.recovery_point(), 0, "1 message < flush.messages");
        assert!(!log.maybe_flush(50).await.unwrap());
        assert!(log.maybe_flush(100).await.unwrap(), "flush.ms elapsed");
        assert_eq!(log.recovery_point(), log.log_end_offset());
        assert!(!log.maybe_flush(500).await.unwrap(), "nothing new to flush");
        for _ in 0..2 {
            log.append(BytesMut::from(&batch(3)[..]), 0, 110, false)
                .await
                .unwrap();
        }
        assert_eq!(log.recovery_point(), 1, "8 messages < flush.messages");
        log.append(BytesMut::from(&batch(3)[..]), 0, 120, false)
            .await
            .unwrap();
        assert_eq!(
            log.recovery_point(),
            log.log_end_offset(),
            "12 messages >= 10"
        );
        log.close().await.unwrap();
    });
}

#[test]
fn uncached_reads_of_unwritten_bytes_come_from_the_dma_buffers() {
    // No cache, 64 KiB DMA buffers, no flush: recent batches sit in the
    // in-flight or the filling buffer, never past what the file holds.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        let mut log = open(&dir, small_config(), 0).await;
        let mut bases = Vec::new();
        for i in 0..150u64 {
            bases.push(
                log.append(BytesMut::from(&batch(i)[..]), 0, 0, false)
                    .await
                    .unwrap()
                    .first_offset,
            );
            let leo = log.log_end_offset();
            let r = log.read(bases[i as usize], 1, leo, true).unwrap();
            assert_eq!(
                region_bytes(&r.regions).0,
                expected(i, bases[i as usize], 0),
                "right after append {i}"
            );
        }
        let leo = log.log_end_offset();
        let r = log.read(0, 1 << 20, leo, true).unwrap();
        let (all, _, files) = region_bytes(&r.regions);
        let want: Vec<u8> = (0..150u64)
            .flat_map(|i| expected(i, bases[i as usize], 0))
            .collect();
        assert_eq!(all, want);
        assert_eq!(
            files, 0,
            "nothing awaited a write yet: all bytes are buffered"
        );
        log.flush().await.unwrap();
        let r = log.read(0, 1 << 20, leo, true).unwrap();
        let (all, cached, files) = region_bytes(&r.regions);
        assert_eq!(
            (all == want, cached, files),
            (true, 0, 1),
            "after flush the file holds it all"
        );
        log.close().await.unwrap();
    });
}

#[test]
fn recovery_cuts_at_a_corrupt_batch_and_drops_later_segments() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        let mut log = open(&dir, small_config(), 1 << 20).await;
        let mut bases = Vec::new();
        for i in 0..1_500 {
            bases.push(
                log.append(BytesMut::from(&batch(i)[..]), 0, 0, false)
                    .await
                    .unwrap()
                    .first_offset,
            );
        }
        log.flush().await.unwrap();
        let segs = log.segment_base_offsets();
        assert!(segs.len() >= 4);
        let victim_seg = segs[1];
        let log_dir = log.dir().to_path_buf();
        drop(log); // unclean, no recovery point: everything is rescanned

        // Flip one payload byte of the 5th batch of the second segment.
        let victim = bases.iter().position(|&b| b == victim_seg).unwrap() + 4;
        let path = log_dir.join(format!("{victim_seg:020}.log"));
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let pos: usize = (0..4).map(|k| batch((victim - 4 + k) as u64).len()).sum();
        let mut byte = [0u8; 1];
        f.read_exact_at(&mut byte, (pos + 70) as u64).unwrap();
        f.write_all_at(&[byte[0] ^ 0xff], (pos + 70) as u64)
            .unwrap();
        drop(f);

        let log = open(&dir, small_config(), 1 << 20).await;
        let s = log.recovery_stats();
        assert_eq!(log.log_end_offset(), bases[victim]);
        assert_eq!(log.segment_base_offsets(), segs[..2].to_vec());
        assert_eq!(s.segments_dropped as usize, segs.len() - 2);
        assert_eq!(s.segments_scanned, 2);
        assert!(!log_dir.join(format!("{:020}.log", segs[2])).exists());
        let r = log
            .read(bases[victim - 1], 1 << 20, i64::MAX, true)
            .unwrap();
        assert_eq!(
            region_bytes(&r.regions).0,
            expected((victim - 1) as u64, bases[victim - 1], 0)
        );
        log.close().await.unwrap();
    });
}

/// Pages of `path` in the page cache, by 4 KiB page (mincore of a mapping).
fn resident_pages(path: &Path) -> Vec<bool> {
    let file = std::fs::File::open(path).expect("open segment");
    let len = file.metadata().expect("stat").len() as usize;
    use std::os::unix::io::AsRawFd;
    // SAFETY: a private read-only mapping of a file we keep open for the
    // call; only mincore looks at it, nothing dereferences it.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    assert_ne!(addr, libc::MAP_FAILED, "mmap");
    let mut vec = vec![0u8; len.div_ceil(4096)];
    // SAFETY: `vec` has one byte per page of the mapping.
    let rc = unsafe { libc::mincore(addr, len, vec.as_mut_ptr()) };
    // SAFETY: unmapping what we mapped above.
    unsafe { libc::munmap(addr, len) };
    assert_eq!(rc, 0, "mincore");
    vec.iter().map(|b| b & 1 == 1).collect()
}

/// Wait (on the executor, so the shard's read-ahead thread's work can
/// land) until `pred` holds or `secs` pass; returns whether it held.
async fn eventually(secs: u64, mut pred: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < deadline {
        if pred() {
            return true;
        }
        glommio::timer::sleep(std::time::Duration::from_millis(10)).await;
    }
    pred()
}

#[test]
fn a_read_from_a_cold_segment_file_reads_ahead_into_the_page_cache() {
    // Segments are written with O_DIRECT, so nothing of them is in the page
    // cache; a read served from the file asks the kernel (off the shard) to
    // read `readahead_bytes` past it. With 0 it asks for nothing.
    const MIB: usize = 1 << 20;
    for window in [4 * MIB as u64, 0] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        run(move || async move {
            let config = LogConfig {
                segment_bytes: 64 << 20,
                write_buffer_bytes: MIB,
                preallocate_step_bytes: 16 << 20,
                readahead_bytes: window,
                retention_ms: -1,
                ..LogConfig::default()
            };
            let mut log = open(&dir, config, 0).await;
            let mut i = 0u8;
            while log.size_bytes() < 8 * MIB as u64 {
                let b = build_test_batch(0, 1, 1_000, 1_000, 16_000, i);
                log.append(BytesMut::from(&b[..]), 0, 0, false)
                    .await
                    .unwrap();
                i = i.wrapping_add(1);
            }
            log.flush().await.unwrap();
            let seg = log.dir().join("00000000000000000000.log");
            let page = |at: usize| resident_pages(&seg)[at / 4096];
            assert!(
                !page(3 * MIB),
                "O_DIRECT writes left the segment out of the page cache"
            );
            let leo = log.log_end_offset();
            let r = log.read(0, MIB, leo, true).unwrap();
            // Not read here (a pread would start the kernel's own
            // read-ahead): only the log's request may bring pages in.
            assert!(
                matches!(r.regions[..], [OutPart::File { position: 0, .. }]),
                "served from the file"
            );
            // The read covers about 1 MiB; read-ahead goes 4 MiB past it.
            if window > 0 {
                let ahead = eventually(5, || page(3 * MIB) && page(4 * MIB + 512 * 1024)).await;
                assert!(ahead, "bytes 3-4.5 MiB were read ahead");
                assert!(!page(7 * MIB), "nothing past the window was asked for");
            } else {
                glommio::timer::sleep(std::time::Duration::from_millis(200)).await;
                assert!(
                    !page(4 * MIB + 512 * 1024),
                    "no read-ahead with a zero window"
                );
            }
            log.close().await.unwrap();
        });
    }
}

fn pool_names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".recycle"))
        .collect();
    v.sort();
    v
}

fn seg_path(dir: &Path, base: i64) -> std::path::PathBuf {
    dir.join(format!("{base:020}.log"))
}

/// Batch `i` of exactly one page (4096 bytes), so a tail of them ends on a
/// page boundary where an old batch may start intact.
fn page_batch(i: u64) -> Vec<u8> {
    let ts = 1_000 + i as i64;
    build_test_batch(0, 1 + (i % 4) as i32, ts, ts, 4096 - HEADER_LEN, i as u8)
}

fn page_expected(i: u64, base_offset: i64) -> Vec<u8> {
    let mut b = page_batch(i);
    set_base_offset(&mut b, base_offset);
    set_partition_leader_epoch(&mut b, 0);
    b
}

/// Appends page batches `from..to` and returns the offset of each.
async fn append_range(log: &mut PartitionLog, from: u64, to: u64) -> Vec<i64> {
    let mut offsets = Vec::new();
    for i in from..to {
        let info = log
            .append(BytesMut::from(&page_batch(i)[..]), 0, 5, false)
            .await
            .unwrap();
        offsets.push(info.first_offset);
    }
    offsets
}

#[test]
fn retired_segment_files_are_reused_and_their_old_batches_never_come_back() {
    use std::os::unix::fs::MetadataExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let d = dir.clone();
    let (new_base, tail_offsets) = run(move || async move {
        let mut log = open(&d, small_config(), 1 << 20).await;
        let mut bases = Vec::new();
        for k in 0..4u64 {
            bases.push(log.log_end_offset());
            append_range(&mut log, k * 50, k * 50 + 50).await;
            log.roll(0).await.unwrap();
        }
        let leo = log.log_end_offset();
        log.set_high_watermark(leo);
        // DeleteRecords drops segments 0 and 1: both files go to the pool,
        // named after the offset each segment ended at.
        assert_eq!(log.delete_records_before(bases[2]).unwrap(), bases[2]);
        let dir = log.dir().to_path_buf();
        assert_eq!(
            pool_names(&dir),
            vec![
                format!("{:020}.recycle", bases[1]),
                format!("{:020}.recycle", bases[2])
            ]
        );
        assert!(!seg_path(&dir, bases[0]).exists());
        let oldest = dir.join(format!("{:020}.recycle", bases[1]));
        let (inode, old_len) = {
            let m = std::fs::metadata(&oldest).unwrap();
            (m.ino(), m.len())
        };
        assert_eq!(old_len, 50 * 4096, "segment 0's bytes are in the file");

        // The next roll writes into the oldest pooled file.
        append_range(&mut log, 200, 210).await;
        log.roll(0).await.unwrap();
        let new_base = log.log_end_offset();
        assert_eq!(
            std::fs::metadata(seg_path(&dir, new_base)).unwrap().ino(),
            inode
        );
        assert_eq!(pool_names(&dir), vec![format!("{:020}.recycle", bases[2])]);
        // Two page-sized batches, written out, then a crash: the file still
        // holds segment 0's batches from the third page on, the first of
        // them whole right after the new ones (its CRC is good; only its
        // offset, below the segment's base, tells it is old).
        let tail_offsets = append_range(&mut log, 300, 302).await;
        log.flush().await.unwrap();
        let f = std::fs::File::open(seg_path(&dir, new_base)).unwrap();
        let mut stale = vec![0u8; 4096];
        f.read_exact_at(&mut stale, 2 * 4096).unwrap();
        assert_eq!(
            stale,
            page_expected(2, bases[0] + 1 + 2),
            "old batch 2 intact"
        );
        drop(log);
        (new_base, tail_offsets)
    });
    run(move || async move {
        let log = open(&dir, small_config(), 1 << 20).await;
        assert!(!log.recovery_stats().clean_shutdown);
        let want: Vec<u8> = (0..2)
            .flat_map(|j| page_expected(300 + j, tail_offsets[j as usize]))
            .collect();
        let leo = tail_offsets[1] + 1 + (301 % 4) as i64;
        assert_eq!(
            log.log_end_offset(),
            leo,
            "recovery stopped at the old batches"
        );
        let r = log.read(new_base, 1 << 20, i64::MAX, true).unwrap();
        assert_eq!(region_bytes(&r.regions).0, want);
        // The old bytes past the tail were cut (what the appender allocates
        // again reads as zeros).
        let f = std::fs::File::open(seg_path(log.dir(), new_base)).unwrap();
        let mut past = vec![0xffu8; 16 << 10];
        f.read_exact_at(&mut past, want.len() as u64).unwrap();
        assert!(
            past.iter().all(|&b| b == 0),
            "stale bytes survived recovery"
        );
        // The pool survives the restart and serves the next roll.
        assert_eq!(pool_names(log.dir()).len(), 1);
        let mut log = log;
        append_range(&mut log, 400, 401).await;
        log.roll(0).await.unwrap();
        assert!(pool_names(log.dir()).is_empty());
        log.close().await.unwrap();
    });
}

#[test]
fn a_segment_a_fetch_still_reads_is_neither_recycled_nor_shrunk() {
    held_segment_survives_retention(false);
}

/// A fetch answered for a connection on another shard sends from another
/// thread: the regions it holds there (the segment's own `Arc<File>`, not
/// a dup of the fd) must keep retention's hands off the file all the same.
#[test]
fn a_segment_read_for_another_shard_is_neither_recycled_nor_shrunk() {
    held_segment_survives_retention(true);
}

fn held_segment_survives_retention(held_on_another_thread: bool) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        // A cache too small for the segments: reads come from the files.
        let mut log = open(&dir, small_config(), 64 << 10).await;
        let mut bases = Vec::new();
        for k in 0..3u64 {
            bases.push(log.log_end_offset());
            append_range(&mut log, k * 50, k * 50 + 50).await;
            log.roll(0).await.unwrap();
        }
        log.set_high_watermark(log.log_end_offset());
        let held = log.read(bases[0], 1 << 20, bases[1], true).unwrap();
        let (before, _, from_file) = region_bytes(&held.regions);
        assert!(from_file > 0, "the read must hold the segment file");
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let mut holder = None;
        let mut held = Some(held);
        if held_on_another_thread {
            let regions = held.take().unwrap().regions;
            holder = Some(std::thread::spawn(move || {
                wait.recv().unwrap();
                region_bytes(&regions).0
            }));
        }
        assert_eq!(log.delete_records_before(bases[2]).unwrap(), bases[2]);
        // Segment 1 (not held) went to the pool; segment 0 was deleted.
        assert_eq!(
            pool_names(log.dir()),
            vec![format!("{:020}.recycle", bases[2])]
        );
        // The delete thread removes the file's name last (after any
        // shrinking): once it is gone, read the held regions.
        let deleted = log.dir().join(format!("{:020}.log.deleted", bases[0]));
        assert!(
            eventually(10, || !deleted.exists()).await,
            "the delete thread never removed {}",
            deleted.display()
        );
        let after = match (held.take(), holder) {
            (Some(held), _) => region_bytes(&held.regions).0,
            (None, Some(thread)) => {
                go.send(()).unwrap();
                thread.join().unwrap()
            }
            (None, None) => unreachable!("the regions are held somewhere"),
        };
        assert_eq!(after, before);
        log.close().await.unwrap();
    });
}

#[test]
fn with_recycling_off_retired_segments_are_deleted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        let config = LogConfig {
            recycle_segments: false,
            ..small_config()
        };
        let mut log = open(&dir, config, 1 << 20).await;
        let mut bases = Vec::new();
        for k in 0..3u64 {
            bases.push(log.log_end_offset());
            append_range(&mut log, k * 50, k * 50 + 50).await;
            log.roll(0).await.unwrap();
        }
        log.set_high_watermark(log.log_end_offset());
        assert_eq!(log.delete_records_before(bases[2]).unwrap(), bases[2]);
        assert!(pool_names(log.dir()).is_empty());
        assert!(!seg_path(log.dir(), bases[0]).exists());
        log.close().await.unwrap();
    });
}

#[test]
fn a_rolled_segment_reads_its_tail_from_memory_until_the_background_close_wrote_it() {
    use shardlog::storage::segment::{PendingTail, Segment};
    use std::cell::Cell;
    use std::rc::Rc;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        shardlog::io::dma::prime_iopoll_probe(&dir).await.unwrap();
        let config = small_config(); // 64 KiB write buffers
        let mut seg = Segment::create_empty(&dir, 0, &config, 0, None)
            .await
            .unwrap();
        seg.activate(&config).await.unwrap();
        // 40 pages: full buffers in flight or written, a partial one filling.
        let mut want = Vec::new();
        for i in 0..40u64 {
            let b = page_expected(i, i as i64);
            seg.appender.as_mut().unwrap().append(&b).await.unwrap();
            want.extend_from_slice(&b);
        }
        // What a roll does: take the appender, keep its unwritten bytes.
        let mut appender = seg.appender.take().unwrap();
        let done = Rc::new(Cell::new(false));
        let written = appender.written_end();
        assert!(written < want.len() as u64, "part of the tail is unwritten");
        seg.set_closing(
            want.len() as u64,
            PendingTail {
                written,
                parts: appender.unwritten_parts(),
                done: done.clone(),
            },
        );
        assert!(seg.is_closing());
        assert_eq!(seg.file_end(), written);
        let mut got = vec![0u8; want.len()];
        seg.read_exact_at(0, &mut got).unwrap();
        assert_eq!(got, want, "read while the close has not run");
        // The close writes everything; reads then come from the file.
        let (end, _file) = appender.close_unsynced().await.unwrap();
        assert_eq!(end, want.len() as u64);
        done.set(true);
        assert!(!seg.is_closing());
        assert_eq!(seg.file_end(), end);
        seg.reap_tail();
        let mut got = vec![0u8; want.len()];
        seg.read_exact_at(0, &mut got).unwrap();
        assert_eq!(got, want, "read from the file after the close");
    });
}

#[test]
fn reads_right_after_each_roll_and_after_reopen_return_every_batch() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        let mut log = open(&dir, small_config(), 0).await;
        let mut offsets = Vec::new();
        for k in 0..5u64 {
            offsets.extend(append_range(&mut log, k * 30, k * 30 + 30).await);
            log.roll(0).await.unwrap();
            // No cache: the just-closed segment's bytes come from its kept
            // tail or its file, whichever holds them now.
            let from = offsets[(k * 30) as usize];
            let r = log.read(from, 1 << 20, i64::MAX, true).unwrap();
            let want: Vec<u8> = (k * 30..k * 30 + 30)
                .flat_map(|i| page_expected(i, offsets[i as usize]))
                .collect();
            assert_eq!(region_bytes(&r.regions).0, want, "segment {k}");
        }
        let leo = log.log_end_offset();
        log.close().await.unwrap();
        let log = open(&dir, small_config(), 0).await;
        assert_eq!(log.log_end_offset(), leo);
        for (i, &o) in offsets.iter().enumerate() {
            let r = log.read(o, 1, i64::MAX, true).unwrap();
            assert_eq!(region_bytes(&r.regions).0, page_expected(i as u64, o));
        }
        log.close().await.unwrap();
    });
}

/// Open fds of this process on `path` (the read fd and, while the segment
/// is active, the appender's O_DIRECT one).
fn fds_on(path: &Path) -> usize {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target == path)
        .count()
}

fn active_log_file(log: &PartitionLog) -> std::path::PathBuf {
    let base = *log.segment_base_offsets().last().unwrap();
    log.dir().join(format!("{base:020}.log"))
}

#[test]
fn an_idle_active_segment_closes_its_appender_and_the_next_append_reopens_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        let config = LogConfig {
            idle_close_ms: 1_000,
            ..small_config()
        };
        let idle = config.idle_close_ms as i64;
        let mut log = open(&dir, config.clone(), 1 << 20).await;
        for i in 0..10 {
            log.append(BytesMut::from(&batch(i)[..]), 1, 5, false)
                .await
                .unwrap();
        }
        let file = active_log_file(&log);
        let data = log.size_bytes();
        assert!(
            std::fs::metadata(&file).unwrap().len() > data,
            "pre-allocated"
        );
        assert_eq!(fds_on(&file), 2, "read fd and appender fd");
        // The first look only notes the log end offset; it must then stay
        // put for the whole idle time.
        assert!(!log.close_if_idle(10_000).await.unwrap());
        assert!(!log.close_if_idle(10_000 + idle - 1).await.unwrap());
        assert!(log.close_if_idle(10_000 + idle).await.unwrap());
        assert_eq!(fds_on(&file), 1, "the appender's fd is closed");
        assert_eq!(std::fs::metadata(&file).unwrap().len(), data, "trimmed");
        assert_eq!(log.recovery_point(), log.log_end_offset(), "flushed");
        assert!(!log.close_if_idle(10_000 + 2 * idle).await.unwrap());
        // The next append reopens it and everything reads back.
        log.append(BytesMut::from(&batch(10)[..]), 1, 5, false)
            .await
            .unwrap();
        assert_eq!(fds_on(&file), 2);
        let leo = log.log_end_offset();
        let r = log.read(0, 1 << 20, leo, true).unwrap();
        let (bytes, _, _) = region_bytes(&r.regions);
        let mut want = Vec::new();
        let mut next = 0;
        for i in 0..11 {
            want.extend(expected(i, next, 1));
            next += 1 + (i % 4) as i64;
        }
        assert_eq!(bytes, want);
        log.close().await.unwrap();
    });
}

#[test]
fn a_clean_reopen_opens_no_appender_until_the_first_append_and_a_crash_then_rescans() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        let mut log = open(&dir, small_config(), 1 << 20).await;
        for i in 0..10 {
            log.append(BytesMut::from(&batch(i)[..]), 1, 5, false)
                .await
                .unwrap();
        }
        let leo = log.log_end_offset();
        let file = active_log_file(&log);
        log.close().await.unwrap();
        let closed_len = std::fs::metadata(&file).unwrap().len();

        let mut log = open(&dir, small_config(), 1 << 20).await;
        assert!(log.recovery_stats().clean_shutdown);
        assert!(!log.dir().join(".kafka_cleanshutdown").exists(), "consumed");
        assert_eq!(fds_on(&file), 1, "no appender before the first append");
        assert_eq!(std::fs::metadata(&file).unwrap().len(), closed_len);
        log.append(BytesMut::from(&batch(10)[..]), 1, 5, false)
            .await
            .unwrap();
        log.flush().await.unwrap();
        assert_eq!(fds_on(&file), 2);
        assert!(std::fs::metadata(&file).unwrap().len() > log.size_bytes());
        drop(log); // a crash: the file is pre-allocated past its data

        // The marker stays gone, so this open rescans instead of trusting
        // the pre-allocated file's size.
        let log = open(&dir, small_config(), 1 << 20).await;
        let s = log.recovery_stats();
        assert!(!s.clean_shutdown);
        assert!(s.segments_scanned >= 1);
        assert_eq!(log.log_end_offset(), leo + 1 + (10 % 4));
        log.close().await.unwrap();
    });
}
