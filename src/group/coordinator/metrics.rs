//! `[pure]` What the coordinator tells a `/metrics` scrape: the offsets
//! its groups committed (consumer lag is the partition's high watermark
//! minus these, as kafka-exporter computes it from OffsetFetch), and
//! Kafka's `GroupMetadataManager` gauges (`NumGroups`, per state,
//! `NumOffsets`).

use super::Coordinator;
use crate::group::state::GroupState;
use crate::metrics::report::{CommittedOffset, GroupCounts};

impl Coordinator {
    /// Every committed offset of every loaded group, by group, topic and
    /// partition.
    pub fn committed_offsets(&self) -> Vec<CommittedOffset> {
        self.groups
            .iter()
            .flat_map(|(group, entry)| {
                entry
                    .offsets
                    .iter()
                    .map(move |((topic, partition), v)| CommittedOffset {
                        group: group.clone(),
                        topic: topic.clone(),
                        partition: *partition,
                        offset: v.offset,
                    })
            })
            .collect()
    }

    /// `GroupMetadataManager`'s gauges over the loaded groups.
    pub fn group_counts(&self) -> GroupCounts {
        let mut g = GroupCounts::default();
        for entry in self.groups.values() {
            g.groups += 1;
            g.offsets += entry.offsets.len() as u64;
            match entry.group.state() {
                GroupState::PreparingRebalance => g.preparing_rebalance += 1,
                GroupState::CompletingRebalance => g.completing_rebalance += 1,
                GroupState::Stable => g.stable += 1,
                GroupState::Empty => g.empty += 1,
                GroupState::Dead => g.dead += 1,
            }
        }
        g
    }
}
