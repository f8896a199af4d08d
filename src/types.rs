//! `[pure]` Small vocabulary types shared by every layer.
//!
//! Numeric Kafka quantities are plain aliases (they cross the wire as the
//! same integer types and are compared and added constantly); identities that
//! must not be mixed up are structs.

use std::fmt;
use std::sync::Arc;

/// A position in a partition's log (Kafka `int64` offset).
pub type Offset = i64;
/// A leader epoch (KIP-101); `-1` means unknown.
pub type LeaderEpoch = i32;
/// A broker id (`broker.id`).
pub type BrokerId = i32;
/// A partition index within a topic.
pub type PartitionId = i32;
/// An idempotent producer id; `-1` means none.
pub type ProducerId = i64;
/// An idempotent producer epoch; `-1` means none.
pub type ProducerEpoch = i16;
/// Milliseconds, either wall-clock (timestamps) or monotonic (timeouts);
/// the field name says which.
pub type Millis = i64;

/// Index of a data shard (one per pinned core).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShardId(pub u16);

impl ShardId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for ShardId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "shard-{}", self.0)
    }
}

/// A topic partition. Cheap to clone (the name is shared).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicPartition {
    pub topic: Arc<str>,
    pub partition: PartitionId,
}

impl TopicPartition {
    pub fn new(topic: impl Into<Arc<str>>, partition: PartitionId) -> Self {
        Self {
            topic: topic.into(),
            partition,
        }
    }

    /// Kafka's directory name for this partition: `<topic>-<partition>`.
    pub fn dir_name(&self) -> String {
        format!("{}-{}", self.topic, self.partition)
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_partition_dir_name_follows_kafka_layout() {
        let tp = TopicPartition::new("orders", 7);
        assert_eq!(tp.dir_name(), "orders-7");
        assert_eq!(tp.to_string(), "orders-7");
        assert_eq!(ShardId(3).to_string(), "shard-3");
    }
}
