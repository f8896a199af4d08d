//! A partition's files on disk, in Kafka's formats (both systems write
//! them): the stored batches, `replication-offset-checkpoint`,
//! `leader-epoch-checkpoint`, and the comparison of the replicas' batches.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::ReplCluster;

/// Stop every broker cleanly, then compare each partition's stored batches
/// across the replicas up to the lowest checkpointed HW; returns that HW
/// per partition.
pub fn assert_replicas_identical(c: &mut ReplCluster, topic: &str, partitions: i32) -> Vec<i64> {
    for n in &mut c.nodes {
        n.stop();
    }
    let mut hws = Vec::new();
    for p in 0..partitions {
        let per: Vec<(i32, i64, Vec<StoredBatch>)> = c
            .nodes
            .iter()
            .map(|n| {
                let hw = hw_checkpoint(&n.log_dir())
                    .get(&(topic.to_string(), p))
                    .copied()
                    .unwrap_or_else(|| {
                        panic!(
                            "{:?}: broker {} wrote no HW for {topic}-{p} in its \
                             replication-offset-checkpoint",
                            c.system, n.id
                        )
                    });
                (n.id, hw, stored_batches(&n.log_dir(), topic, p))
            })
            .collect();
        let hw = per.iter().map(|x| x.1).min().unwrap();
        let upto = |b: &[StoredBatch]| {
            b.iter()
                .filter(|b| b.last_offset < hw)
                .copied()
                .collect::<Vec<_>>()
        };
        let first = upto(&per[0].2);
        for (id, _, batches) in &per[1..] {
            assert_eq!(
                upto(batches),
                first,
                "{:?}: {topic}-{p}: broker {id}'s batches below HW {hw} differ from broker {}'s",
                c.system,
                per[0].0
            );
        }
        assert!(
            first.last().map(|b| b.last_offset + 1) == Some(hw) || hw == 0,
            "{:?}: {topic}-{p}: HW {hw} is not a batch boundary of the replicas' logs",
            c.system
        );
        hws.push(hw);
    }
    hws
}

/// One record batch as stored: (base offset, last offset, leader epoch, CRC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoredBatch {
    pub base_offset: i64,
    pub last_offset: i64,
    pub leader_epoch: i32,
    pub crc: u32,
}

/// Every batch in `<log_dir>/<topic>-<p>/*.log`, in offset order. Stops at
/// a zero length (preallocated or padded tail) or a torn batch.
pub fn stored_batches(log_dir: &Path, topic: &str, p: i32) -> Vec<StoredBatch> {
    let dir = log_dir.join(format!("{topic}-{p}"));
    let mut segments: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    segments.sort();
    let mut out = Vec::new();
    for seg in segments {
        let bytes = std::fs::read(&seg).expect("read segment");
        let mut at = 0usize;
        while at + 61 <= bytes.len() {
            let base = i64::from_be_bytes(bytes[at..at + 8].try_into().unwrap());
            let len = i32::from_be_bytes(bytes[at + 8..at + 12].try_into().unwrap());
            if len <= 0 || at + 12 + len as usize > bytes.len() {
                break;
            }
            let epoch = i32::from_be_bytes(bytes[at + 12..at + 16].try_into().unwrap());
            let crc = u32::from_be_bytes(bytes[at + 17..at + 21].try_into().unwrap());
            let delta = i32::from_be_bytes(bytes[at + 23..at + 27].try_into().unwrap());
            out.push(StoredBatch {
                base_offset: base,
                last_offset: base + delta as i64,
                leader_epoch: epoch,
                crc,
            });
            at += 12 + len as usize;
        }
    }
    out
}

/// `replication-offset-checkpoint`: (topic, partition) → high watermark.
pub fn hw_checkpoint(log_dir: &Path) -> BTreeMap<(String, i32), i64> {
    let path = log_dir.join("replication-offset-checkpoint");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    text.lines()
        .skip(2)
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let (t, p, hw) = (it.next()?, it.next()?, it.next()?);
            Some(((t.to_string(), p.parse().ok()?), hw.parse().ok()?))
        })
        .collect()
}

/// `<topic>-<p>/leader-epoch-checkpoint`: (epoch, start offset) entries.
pub fn leader_epochs(log_dir: &Path, topic: &str, p: i32) -> Vec<(i32, i64)> {
    let path = log_dir
        .join(format!("{topic}-{p}"))
        .join("leader-epoch-checkpoint");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    text.lines()
        .skip(2)
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
        })
        .collect()
}
