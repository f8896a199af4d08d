//! `[drv]` The fetchers' lag for a `/metrics` scrape (Kafka's
//! `FetcherLagMetrics` per partition of each `ReplicaFetcherThread`, whose
//! maximum is `ReplicaFetcherManager`'s `MaxLag`), and the bytes they
//! appended (`BrokerTopicMetrics` `ReplicationBytesInPerSec` and
//! `ReassignmentBytesInPerSec`).

use std::cell::Cell;

use super::FetcherManager;
use crate::metrics::report::FollowerLag;

/// Bytes a shard's fetchers appended from leaders since start, and the
/// part of them for partitions reassigned to this broker. Plain counters
/// of the shard, read by a scrape.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BytesIn {
    pub replication: u64,
    pub reassignment: u64,
}

/// A fetch answer's `bytes` of records were appended (Kafka's
/// `ReplicaFetcherThread.processPartitionData` marks the whole records
/// field, after the append; the reassignment meter too while the
/// partition is reassigning and this broker is an adding replica).
pub(super) fn count_bytes_in(counts: &Cell<BytesIn>, adding: bool, bytes: usize) {
    let mut c = counts.get();
    c.replication += bytes as u64;
    if adding {
        c.reassignment += bytes as u64;
    }
    counts.set(c);
}

impl FetcherManager {
    /// Every followed partition's lag as of its last fetch answer.
    pub fn lags(&self) -> Vec<FollowerLag> {
        let mut out = Vec::new();
        for ((leader, fetcher_id), f) in self.fetchers.borrow().iter() {
            for (tp, s) in f.state.borrow().partitions() {
                out.push(FollowerLag {
                    topic: tp.topic.to_string(),
                    partition: tp.partition,
                    leader: leader.0,
                    fetcher_id: *fetcher_id,
                    lag: s.lag,
                });
            }
        }
        out
    }

    /// Bytes appended from leaders since start, and those of partitions
    /// reassigned to this broker.
    pub fn bytes_in(&self) -> (u64, u64) {
        let c = self.bytes_in.get();
        (c.replication, c.reassignment)
    }
}
