//! `[drv]` The gauges of a shard's partitions for a `/metrics` scrape
//! (Kafka's `ReplicaManager`, `Partition` and `Log` gauges, read per
//! partition by `shard::metrics`).

use std::rc::Rc;

use super::ReplicaManager;
use crate::metrics::report::{FollowerLag, PartitionGauges};
use crate::replication::partition::Partition;

impl ReplicaManager {
    /// Every partition this shard hosts, as of `now_ms` (wall clock;
    /// `max_txn_timeout_ms`: `transaction.max.timeout.ms`).
    pub async fn partition_gauges(
        &self,
        now_ms: i64,
        max_txn_timeout_ms: i64,
    ) -> Vec<PartitionGauges> {
        let parts: Vec<Rc<Partition>> = self.partitions.borrow().values().cloned().collect();
        let mut out = Vec::with_capacity(parts.len());
        for p in parts {
            out.push(p.gauges(now_ms, max_txn_timeout_ms).await);
        }
        out
    }

    /// The lag of every partition this shard follows.
    pub fn follower_lags(&self) -> Vec<FollowerLag> {
        self.fetchers.lags()
    }

    /// The least Fetch request rate over this shard's fetchers (`None`:
    /// none), for `ReplicaFetcherManager` `MinFetchRate`.
    pub fn min_fetch_rate(&self) -> Option<f64> {
        self.fetchers.min_fetch_rate()
    }

    /// Bytes this shard's fetchers appended from leaders since start, and
    /// the part of them for partitions being reassigned to this broker
    /// (Kafka's `ReplicationBytesInPerSec`, `ReassignmentBytesInPerSec`).
    pub fn replication_bytes_in(&self) -> (u64, u64) {
        self.fetchers.bytes_in()
    }
}
