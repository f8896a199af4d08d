//! `[pure]` What the coordinator tells a `/metrics` scrape: the offsets
//! its groups committed (consumer lag is the partition's high watermark
//! minus these, as kafka-exporter computes it from OffsetFetch).

use super::Coordinator;
use crate::metrics::report::CommittedOffset;

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
}
