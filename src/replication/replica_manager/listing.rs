//! Every partition of the shard, for DescribeLogDirs (Kafka's
//! `LogManager.allLogs`, which `ReplicaManager.describeLogDirs` groups by
//! dir).

use std::rc::Rc;

use super::ReplicaManager;
use crate::io::clock::Clock;
use crate::replication::partition::Partition;

impl ReplicaManager {
    /// The open partitions, in partition order.
    pub fn hosted(&self) -> Vec<Rc<Partition>> {
        let mut v: Vec<Rc<Partition>> = self.partitions.borrow().values().cloned().collect();
        v.sort_by(|a, b| a.tp.cmp(&b.tp));
        v
    }

    /// The shard's clock (the log-dir moves' appends).
    pub fn clock(&self) -> &Rc<dyn Clock> {
        &self.clock
    }
}
