//! PartitionLog end to end on a real file system: round trips through the
//! cache and file paths, clean vs unclean reopen, retention, truncation,
//! lookups, rejected input.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::os::unix::fs::FileExt;

use bytes::BytesMut;
use common::executor::run;
use common::partition_log::{batch, expected, open, region_bytes, seg_path, small_config, tp};
use proptest::prelude::*;
use shardlog::protocol::record_batch::{
    build_test_batch, set_base_offset, set_partition_leader_epoch, RecordBatch,
};
use shardlog::storage::batch_cache::ENTRY_OVERHEAD;
use shardlog::storage::log_dir::{LogDir, PartitionOffsets};
use shardlog::storage::{BatchCache, LogConfig, PartitionLog, StorageError};
use shardlog::types::TopicPartition;

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
