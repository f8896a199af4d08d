//! `[drv]` The gauges of a shard's partitions for a `/metrics` scrape
//! (Kafka's `ReplicaManager`, `Partition` and `Log` gauges, read per
//! partition by `shard::metrics`).

use std::rc::Rc;

use super::ReplicaManager;
use crate::metrics::report::{FollowerLag, PartitionGauges};
use crate::replication::partition::Partition;

impl ReplicaManager {
    /// Every partition this shard hosts, as of now.
    pub async fn partition_gauges(&self) -> Vec<PartitionGauges> {
        let parts: Vec<Rc<Partition>> = self.partitions.borrow().values().cloned().collect();
        let mut out = Vec::with_capacity(parts.len());
        for p in parts {
            out.push(p.gauges().await);
        }
        out
    }

    /// The lag of every partition this shard follows.
    pub fn follower_lags(&self) -> Vec<FollowerLag> {
        self.fetchers.lags()
    }
}
