//! A `PartitionLog` on a real file system, as the storage_log tests open
//! it: the partition, deterministic batches and what the log must hold for
//! them, a small segment config, and a read's regions as bytes.

use std::os::unix::fs::FileExt;
use std::path::Path;

use shardlog::io::zerocopy::OutPart;
use shardlog::protocol::record_batch::{
    build_test_batch, set_base_offset, set_partition_leader_epoch,
};
use shardlog::storage::{BatchCache, LogConfig, PartitionLog, ShardStorage};
use shardlog::types::TopicPartition;

pub fn tp() -> TopicPartition {
    TopicPartition::new("orders", 3)
}

/// Deterministic batch `i`: records, timestamp, payload derive from `i`.
pub fn batch(i: u64) -> Vec<u8> {
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
pub fn expected(i: u64, base_offset: i64, epoch: i32) -> Vec<u8> {
    let mut b = batch(i);
    set_base_offset(&mut b, base_offset);
    set_partition_leader_epoch(&mut b, epoch);
    b
}

pub fn region_bytes(regions: &[OutPart]) -> (Vec<u8>, usize, usize) {
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
            OutPart::Lazy(_) => panic!("a log read gives no lazy parts"),
        }
    }
    (out, cached, file)
}

pub async fn open(dir: &Path, config: LogConfig, cache_bytes: usize) -> PartitionLog {
    shardlog::io::dma::prime_iopoll_probe(dir)
        .await
        .expect("prime");
    PartitionLog::open(
        dir,
        &tp(),
        Some(uuid::Uuid::from_bytes([7; 16])),
        config,
        ShardStorage::standalone(BatchCache::shared(cache_bytes)),
    )
    .await
    .expect("open")
}

pub fn small_config() -> LogConfig {
    LogConfig {
        segment_bytes: 256 << 10,
        write_buffer_bytes: 64 << 10,
        preallocate_step_bytes: 1 << 20,
        retention_ms: -1,
        // Deleted files go at once (tests wait for the delete thread).
        file_delete_delay_ms: 0,
        ..LogConfig::default()
    }
}

/// The segment file of `base` in partition dir `dir`.
pub fn seg_path(dir: &Path, base: i64) -> std::path::PathBuf {
    dir.join(format!("{base:020}.log"))
}
