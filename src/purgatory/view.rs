//! `[pure]` What a delayed operation may look at: the latest known state of
//! each partition (leader role, LEO/HW/LSO with their log positions, ISR size,
//! `min.insync.replicas`), held per shard.
//!
//! For partitions this shard owns the snapshot is written by the partition
//! itself; for partitions owned elsewhere it is the last "partition advanced"
//! note received from the owner (see `notes`). Delayed operations never read
//! the log: they compare against this view, as Kafka's `tryComplete` compares
//! against `LogOffsetMetadata`.

use std::collections::HashMap;

use crate::types::{LeaderEpoch, Offset, TopicPartition};

/// An offset with its physical position, Kafka's `LogOffsetMetadata`:
/// the segment it falls in (by base offset) and its byte position inside it.
/// Two positions in the same segment give the bytes between two offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LogOffsetMetadata {
    pub offset: Offset,
    pub segment_base_offset: Offset,
    pub relative_position: i64,
}

impl LogOffsetMetadata {
    pub fn new(offset: Offset, segment_base_offset: Offset, relative_position: i64) -> Self {
        Self {
            offset,
            segment_base_offset,
            relative_position,
        }
    }

    /// True if `self` lies in a segment older than `other`'s.
    pub fn on_older_segment(&self, other: &LogOffsetMetadata) -> bool {
        self.segment_base_offset < other.segment_base_offset
    }

    /// Bytes from `from` to `self`, valid only within one segment; 0 when
    /// `from` is ahead (never negative).
    pub fn position_diff(&self, from: &LogOffsetMetadata) -> i64 {
        (self.relative_position - from.relative_position).max(0)
    }
}

/// This broker's role for a partition, as the owner shard last saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionRole {
    Leader,
    Follower,
    /// Deleted or never known (UNKNOWN_TOPIC_OR_PARTITION).
    Unknown,
    /// In an offline log directory (KAFKA_STORAGE_ERROR).
    Offline,
}

/// The state of one partition that delayed operations test against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionSnapshot {
    pub role: PartitionRole,
    pub leader_epoch: LeaderEpoch,
    pub log_start_offset: Offset,
    pub log_end_offset: LogOffsetMetadata,
    pub high_watermark: LogOffsetMetadata,
    pub last_stable_offset: LogOffsetMetadata,
    /// Kafka's `maximalIsr` size (ISR including pending additions).
    pub isr_size: u32,
    /// Topic config `min.insync.replicas` (Kafka default 1).
    pub min_insync_replicas: u32,
}

impl PartitionSnapshot {
    /// A leader whose LEO, HW and LSO are all `offset` at byte `position` of
    /// segment 0: handy for tests and fresh partitions.
    pub fn leader_at(offset: Offset, position: i64) -> Self {
        let at = LogOffsetMetadata::new(offset, 0, position);
        Self {
            role: PartitionRole::Leader,
            leader_epoch: LeaderEpoch(0),
            log_start_offset: 0,
            log_end_offset: at,
            high_watermark: at,
            last_stable_offset: at,
            isr_size: 1,
            min_insync_replicas: 1,
        }
    }
}

/// The per-shard map of partition snapshots.
#[derive(Debug, Default, Clone)]
pub struct PartitionView {
    partitions: HashMap<TopicPartition, PartitionSnapshot>,
}

impl PartitionView {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn get(&self, tp: &TopicPartition) -> Option<&PartitionSnapshot> {
        self.partitions.get(tp)
    }

    /// Records the latest snapshot of `tp` (newest note wins).
    pub fn update(&mut self, tp: TopicPartition, snapshot: PartitionSnapshot) {
        self.partitions.insert(tp, snapshot);
    }

    pub fn remove(&mut self, tp: &TopicPartition) -> Option<PartitionSnapshot> {
        self.partitions.remove(tp)
    }

    pub fn len(&self) -> usize {
        self.partitions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.partitions.is_empty()
    }
}
