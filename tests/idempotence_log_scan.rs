//! `PartitionLog::scan_batches_from`, the header scan producer-state
//! recovery replays: every batch at or past an offset, across rolled
//! segments and the active segment's unwritten DMA buffer, with the
//! producer fields exactly as appended.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::path::Path;

use bytes::BytesMut;
use common::executor::run;
use common::idempotence::idempotent_batch;
use shardlog::protocol::record_batch::{build_test_batch, RecordBatch};
use shardlog::storage::partition_log::BatchHeaderInfo;
use shardlog::storage::{BatchCache, LogConfig, PartitionLog};
use shardlog::types::TopicPartition;

async fn open(dir: &Path) -> PartitionLog {
    shardlog::io::dma::prime_iopoll_probe(dir)
        .await
        .expect("prime");
    let config = LogConfig {
        segment_bytes: 16 << 10,
        write_buffer_bytes: 64 << 10,
        preallocate_step_bytes: 1 << 20,
        retention_ms: -1,
        ..LogConfig::default()
    };
    PartitionLog::open(
        dir,
        &TopicPartition::new("scan", 0),
        None,
        config,
        BatchCache::shared(1 << 20),
    )
    .await
    .expect("open")
}

fn scan(log: &PartitionLog, from: i64) -> Vec<BatchHeaderInfo> {
    let mut out = Vec::new();
    let n = log.scan_batches_from(from, |h| out.push(*h)).expect("scan");
    assert_eq!(n, out.len() as u64);
    out
}

#[test]
fn scan_returns_every_batch_header_from_an_offset_across_segments_and_the_buffer() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tmp");
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        let mut log = open(&dir).await;
        let mut expected = Vec::new();
        for i in 0..40i32 {
            // Two idempotent producers and, every 7th, a plain batch.
            let bytes = if i % 7 == 6 {
                build_test_batch(0, 3, 1_000, 1_000 + i64::from(i), 500, 9).into()
            } else {
                idempotent_batch(100 + i64::from(i % 2), 3, i * 10, 10, 200, "s")
            };
            let view = RecordBatch::new(&bytes).expect("valid batch");
            let info = log
                .append(BytesMut::from(&bytes[..]), 0, 1, false)
                .await
                .expect("append");
            expected.push(BatchHeaderInfo {
                base_offset: info.first_offset,
                last_offset_delta: view.last_offset_delta(),
                max_timestamp: view.max_timestamp(),
                producer_id: view.producer_id(),
                producer_epoch: view.producer_epoch(),
                base_sequence: view.base_sequence(),
                is_control: false,
                is_transactional: false,
                marker: None,
            });
        }
        assert!(log.segment_count() > 3, "segments rolled");
        let leo = log.log_end_offset();
        assert_eq!(scan(&log, 0), expected, "whole log");
        // From inside a batch: the batch holding the offset comes first.
        let k = 23;
        let inside = expected[k].base_offset + 1;
        assert_eq!(scan(&log, inside), expected[k..].to_vec());
        // From a segment boundary (a roll point).
        let second_segment = log.segment_base_offsets()[1];
        let at = expected
            .iter()
            .position(|h| h.base_offset == second_segment)
            .expect("a batch starts each segment");
        assert_eq!(scan(&log, second_segment), expected[at..].to_vec());
        assert!(scan(&log, leo).is_empty());
        assert_eq!(
            log.active_segment_base_offset(),
            *log.segment_base_offsets().last().unwrap()
        );

        // The same headers from the files alone after a clean reopen.
        log.close().await.expect("close");
        let log = open(&dir).await;
        assert_eq!(scan(&log, 0), expected);
        assert_eq!(log.log_end_offset(), leo);
    });
}
