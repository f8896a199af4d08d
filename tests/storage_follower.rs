//! PartitionLog::append_as_follower on a real file system: a follower's log
//! built from a leader's read bytes is byte-identical to the leader's
//! (offsets and partition leader epochs kept), its epoch cache matches,
//! out-of-order responses append nothing, a partial trailing batch is
//! ignored, and a full truncation restarts the log at the leader's start.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::path::Path;

use bytes::{Bytes, BytesMut};
use common::executor::run;
use shardlog::io::zerocopy::OutPart;
use shardlog::protocol::record_batch::{build_test_batch, RecordBatch};
use shardlog::storage::partition_log::{FollowerAppendError, ValidatedRecords};
use shardlog::storage::{BatchCache, LogConfig, PartitionLog, ShardStorage, StorageError};
use shardlog::types::TopicPartition;

fn small_config() -> LogConfig {
    LogConfig {
        segment_bytes: 64 << 10,
        write_buffer_bytes: 64 << 10,
        preallocate_step_bytes: 1 << 20,
        retention_ms: -1,
        ..LogConfig::default()
    }
}

async fn open(dir: &Path, topic: &str) -> PartitionLog {
    shardlog::io::dma::prime_iopoll_probe(dir)
        .await
        .expect("prime");
    PartitionLog::open(
        dir,
        &TopicPartition::new(topic, 0),
        None,
        small_config(),
        ShardStorage::standalone(BatchCache::shared(1 << 20)),
    )
    .await
    .expect("open")
}

fn batch(i: u64) -> Vec<u8> {
    let count = 1 + (i % 3) as i32;
    build_test_batch(
        0,
        count,
        1_000 + i as i64,
        1_000 + i as i64,
        200 + (i as usize % 900),
        i as u8,
    )
}

fn bytes_of(regions: &[OutPart]) -> Vec<u8> {
    shardlog::io::parts::gather(regions)
        .expect("pread")
        .to_vec()
}

/// Every batch from the log start to the LEO (a read stops at a segment's
/// end, so read on from the offset after the last batch returned).
fn all_bytes(log: &PartitionLog) -> Vec<u8> {
    let leo = log.log_end_offset();
    let mut out = Vec::new();
    let mut offset = log.log_start_offset();
    while offset < leo {
        let r = log.read(offset, usize::MAX >> 1, leo, true).unwrap();
        let got = bytes_of(&r.regions);
        assert!(!got.is_empty(), "read at {offset} returned nothing");
        let mut pos = 0;
        while pos < got.len() {
            let len = 12 + u32::from_be_bytes(got[pos + 8..pos + 12].try_into().unwrap()) as usize;
            let batch = RecordBatch::new(&got[pos..pos + len]).unwrap();
            offset = batch.last_offset() + 1;
            pos += len;
        }
        out.extend_from_slice(&got);
    }
    out
}

/// A leader log with 300 batches over epochs 0, 2, 5.
async fn leader_log(dir: &Path) -> PartitionLog {
    let mut leader = open(dir, "leader").await;
    for i in 0..300u64 {
        let epoch = match i {
            0..=99 => 0,
            100..=199 => 2,
            _ => 5,
        };
        leader
            .append(BytesMut::from(&batch(i)[..]), epoch, 10, false)
            .await
            .unwrap();
    }
    leader
}

#[test]
fn follower_log_is_byte_identical_to_the_leader_with_epochs_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        let leader = leader_log(&dir).await;
        let leader_bytes = all_bytes(&leader);
        let mut follower = open(&dir, "follower").await;
        // Fetch in ~8 KiB responses cut anywhere (a partial trailing batch
        // is dropped and fetched again from the new LEO), as a follower does.
        let whole = Bytes::from(leader_bytes.clone());
        let mut pos = 0usize;
        let mut rounds = 0;
        while follower.log_end_offset() < leader.log_end_offset() {
            rounds += 1;
            assert!(rounds < 10_000, "no progress");
            let end = (pos + 8_000).min(whole.len());
            let chunk = whole.slice(pos..end);
            let records = ValidatedRecords::from_leader(chunk)
                .unwrap()
                .expect("a whole batch");
            let appended = records.bytes().len();
            follower.append_as_follower(records, 20).await.unwrap();
            pos += appended;
        }
        assert_eq!(follower.log_end_offset(), leader.log_end_offset());
        assert_eq!(follower.leader_epochs(), leader.leader_epochs());
        assert_eq!(follower.leader_epochs().len(), 3);
        assert!(
            all_bytes(&follower) == leader_bytes,
            "follower bytes differ from the leader's"
        );
        assert!(
            follower.segment_count() > 1,
            "the follower rolled segments too"
        );

        // Reopen: the same bytes and epochs come back from disk.
        let epochs = follower.leader_epochs().to_vec();
        follower.close().await.unwrap();
        let follower = open(&dir, "follower").await;
        assert_eq!(follower.leader_epochs(), &epochs[..]);
        assert!(all_bytes(&follower) == leader_bytes);
    });
}

#[test]
fn out_of_order_and_partial_responses_append_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        let leader = leader_log(&dir).await;
        let whole = Bytes::from(all_bytes(&leader));
        let mut follower = open(&dir, "follower").await;
        let first = ValidatedRecords::from_leader(whole.slice(..5_000))
            .unwrap()
            .unwrap();
        let again = first.clone();
        follower.append_as_follower(first, 1).await.unwrap();
        let leo = follower.log_end_offset();
        assert!(leo > 0);
        // The same response once more: below the LEO, refused.
        let err = follower.append_as_follower(again, 1).await.unwrap_err();
        assert!(
            matches!(
                err,
                StorageError::Follower(FollowerAppendError::OutOfOrder { .. })
            ),
            "{err:?}"
        );
        assert_eq!(follower.log_end_offset(), leo);
        // Fewer bytes than one batch: no whole batch, nothing to append.
        assert!(ValidatedRecords::from_leader(whole.slice(..40))
            .unwrap()
            .is_none());
        // A corrupted batch is refused before anything is written.
        let mut bad = whole.to_vec();
        bad[70] ^= 0xff;
        assert!(ValidatedRecords::from_leader(Bytes::from(bad)).is_err());
        // An epoch cache and producer-free log truncate and restart at a
        // leader's log start past our LEO.
        follower
            .truncate_fully_and_start_at_offset(leo + 50)
            .await
            .unwrap();
        assert_eq!(follower.log_start_offset(), leo + 50);
        assert_eq!(follower.log_end_offset(), leo + 50);
    });
}

#[test]
fn follower_takes_the_leaders_log_start_offset() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        let leader = leader_log(&dir).await;
        let whole = Bytes::from(all_bytes(&leader));
        let mut follower = open(&dir, "follower").await;
        let mut pos = 0;
        while pos < whole.len() {
            let chunk = whole.slice(pos..(pos + 8_000).min(whole.len()));
            let records = ValidatedRecords::from_leader(chunk).unwrap().unwrap();
            pos += records.bytes().len();
            follower.append_as_follower(records, 1).await.unwrap();
        }
        let segments = follower.segment_count();
        let target = follower.segment_base_offsets()[1] + 1;
        let start = follower.maybe_increment_log_start_offset(target).unwrap();
        assert_eq!(start, target);
        // Whole segments below it go (a just-rolled one still closing
        // waits for the next retention pass, as the leader's DeleteRecords).
        assert!(follower.segment_count() <= segments);
        assert_eq!(follower.log_start_offset(), target);
        assert!(
            follower
                .read(target - 1, 1 << 20, target + 10, true)
                .is_err(),
            "below the start"
        );
        // Never backwards.
        assert_eq!(
            follower.maybe_increment_log_start_offset(3).unwrap(),
            target
        );
    });
}
