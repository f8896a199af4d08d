//! `[drv]` The partition's producer state as DescribeProducers (KIP-664)
//! shows it: Kafka's `Partition.activeProducerState`, answered from the
//! local log's producer state by leaders and followers alike.

use super::Partition;
use crate::replication::producer_state::ActiveProducer;

impl Partition {
    /// Kafka's `UnifiedLog.activeProducers`.
    pub fn active_producers(&self) -> Vec<ActiveProducer> {
        self.producers.borrow().active_producers()
    }
}
