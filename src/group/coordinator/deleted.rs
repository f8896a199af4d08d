//! `[pure]` Deleted topics lose their committed offsets (Kafka's
//! `GroupCoordinator.onPartitionsDeleted` →
//! `GroupMetadataManager.cleanupGroupMetadata` with
//! `GroupMetadata.removeAllOffsets`, `core/.../GroupMetadataManager.scala`):
//! every loaded group's offsets of the topics go, with a tombstone in
//! `__consumer_offsets` each; a group left `Empty` without offsets
//! becomes `Dead` and its metadata is tombstoned too (generation > 0,
//! as Kafka does).

use std::collections::BTreeMap;
use std::collections::BTreeSet;

use super::{offset_key, Action, Coordinator, PendingAppend, Records};
use crate::group::records::encode_group_metadata_key;
use crate::group::state::GroupState;
use crate::protocol::ErrorCode;

impl Coordinator {
    /// `topics` were deleted: their offsets are removed from every group
    /// of a loaded partition (OffsetFetch answers -1 for them), including
    /// commits whose append is still in flight (Kafka's
    /// `pendingOffsetCommits`) and open transactions' offsets; the
    /// tombstones come out as one [`Action::Append`] per
    /// `__consumer_offsets` partition.
    pub fn on_topics_deleted(&mut self, topics: &BTreeSet<String>, now_ms: i64) -> Vec<Action> {
        let mut out = Vec::new();
        if topics.is_empty() {
            return out;
        }
        drop_in_flight(&mut self.pending_appends, topics);
        self.txn_offsets.drop_topics(topics);
        let mut by_partition: BTreeMap<i32, Records> = BTreeMap::new();
        let mut dead = Vec::new();
        for (group_id, entry) in &mut self.groups {
            if !self.partitions.contains_key(&entry.partition) {
                continue;
            }
            let gone: Vec<(String, i32)> = entry
                .offsets
                .keys()
                .filter(|(t, _)| topics.contains(t))
                .cloned()
                .collect();
            if gone.is_empty() {
                continue;
            }
            let records = by_partition.entry(entry.partition).or_default();
            for tp in gone {
                entry.offsets.remove(&tp);
                records.push((offset_key(group_id, &tp.0, tp.1), None));
            }
            if entry.group.state() == GroupState::Empty
                && entry.offsets.is_empty()
                && entry.pending.is_empty()
            {
                let _ = entry.group.transition_to(GroupState::Dead, now_ms);
                if entry.group.generation > 0 {
                    records.push((encode_group_metadata_key(group_id), None));
                }
                dead.push(group_id.clone());
            }
        }
        for g in dead {
            self.groups.remove(&g);
        }
        for (partition, records) in by_partition {
            self.append(partition, records, PendingAppend::Quiet, &mut out);
        }
        out
    }
}

/// Commits still being appended keep their answer (the append succeeded
/// or not) but no longer become the group's offsets for `topics` (Kafka's
/// `onOffsetCommitAppend` only keeps partitions still pending).
fn drop_in_flight(pending: &mut BTreeMap<u64, PendingAppend>, topics: &BTreeSet<String>) {
    for p in pending.values_mut() {
        if let PendingAppend::Commit {
            offsets, refused, ..
        } = p
        {
            let (gone, kept): (Vec<_>, Vec<_>) = std::mem::take(offsets)
                .into_iter()
                .partition(|((t, _), _)| topics.contains(t));
            *offsets = kept;
            refused.extend(gone.into_iter().map(|((t, p), _)| (t, p, ErrorCode::NONE)));
        }
    }
}
