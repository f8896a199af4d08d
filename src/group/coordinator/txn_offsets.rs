//! `[pure]` Transactional offset commits held for their marker (KIP-98;
//! Kafka's `pendingTransactionalOffsetCommits` of `GroupMetadataManager`):
//! a TxnOffsetCommit is written to `__consumer_offsets` in a transactional
//! batch of the producer and held apart from the group's committed offsets
//! until the transaction's marker reaches that partition — a COMMIT makes
//! the offsets the group's, an ABORT drops them. Loading a partition does
//! the same with the transactional records and markers it replays.
//!
//! [`PendingTxnOffsets`] only holds and hands back; the coordinator
//! (`Coordinator::on_txn_marker`, `load_txn_offset`, `finish_commit`)
//! decides where the offsets go.

use std::collections::{BTreeMap, BTreeSet};

use crate::group::records::OffsetCommitValue;

/// One pending transactional offset: (group, (topic, partition), value).
pub(super) type TxnOffset = (String, (String, i32), OffsetCommitValue);

/// TxnOffsetCommit offsets waiting for their transaction's marker, by
/// producer id.
#[derive(Debug, Default)]
pub(super) struct PendingTxnOffsets(BTreeMap<i64, Vec<TxnOffset>>);

impl PendingTxnOffsets {
    /// Hold `offsets` of `group` until `producer_id`'s marker.
    pub(super) fn hold(
        &mut self,
        producer_id: i64,
        group: &str,
        offsets: impl IntoIterator<Item = ((String, i32), OffsetCommitValue)>,
    ) {
        self.0
            .entry(producer_id)
            .or_default()
            .extend(offsets.into_iter().map(|(tp, v)| (group.to_owned(), tp, v)));
    }

    /// `producer_id`'s marker reached a partition: its offsets of the
    /// groups `here` names, in the order they were held; those of groups
    /// on other partitions stay held for their own markers.
    pub(super) fn take_marked(
        &mut self,
        producer_id: i64,
        here: impl Fn(&str) -> bool,
    ) -> Vec<TxnOffset> {
        let Some(pending) = self.0.remove(&producer_id) else {
            return Vec::new();
        };
        let (marked, elsewhere): (Vec<TxnOffset>, Vec<TxnOffset>) =
            pending.into_iter().partition(|(group, _, _)| here(group));
        if !elsewhere.is_empty() {
            self.0.insert(producer_id, elsewhere);
        }
        marked
    }

    /// Whether `group` has offsets of an open transaction on `tp`.
    pub(super) fn contains(&self, group: &str, tp: &(String, i32)) -> bool {
        self.0
            .values()
            .flatten()
            .any(|(g, t, _)| g == group && t == tp)
    }

    /// Drop the held offsets of `topics` (deleted topics: Kafka's
    /// `GroupMetadata.removeOffsets` clears the pending transactional
    /// commits of the partitions too).
    pub(super) fn drop_topics(&mut self, topics: &BTreeSet<String>) {
        for held in self.0.values_mut() {
            held.retain(|(_, (t, _), _)| !topics.contains(t));
        }
        self.0.retain(|_, held| !held.is_empty());
    }
}
