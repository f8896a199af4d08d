//! Transactional offset commits (KIP-98; Kafka's
//! `GroupMetadataManager.storeOffsets` with a producer id and
//! `handleTxnCompletion`): a TxnOffsetCommit is written to
//! `__consumer_offsets` in a transactional batch of the producer and held
//! apart from the group's committed offsets until the transaction's
//! marker reaches that partition — a COMMIT makes the offsets the group's,
//! an ABORT drops them. Loading a partition does the same with the
//! transactional records and markers it replays.

use super::{Coordinator, TxnOffset};
use crate::group::records::OffsetCommitValue;

impl Coordinator {
    /// The marker of `producer_id`'s transaction reached `__consumer_offsets`
    /// partition `partition`: its offsets of groups there become committed
    /// (COMMIT) or are dropped (ABORT).
    pub fn on_txn_marker(&mut self, partition: i32, producer_id: i64, commit: bool) {
        let Some(pending) = self.txn_offsets.remove(&producer_id) else {
            return;
        };
        let (here, elsewhere): (Vec<TxnOffset>, Vec<TxnOffset>) = pending
            .into_iter()
            .partition(|(group, _, _)| self.partition_of(group) == partition);
        if !elsewhere.is_empty() {
            self.txn_offsets.insert(producer_id, elsewhere);
        }
        if !commit {
            return;
        }
        for (group, tp, value) in here {
            let entry = self.entry_or_new(&group, partition, value.commit_timestamp_ms);
            entry.offsets.insert(tp, value);
        }
    }

    /// Loading: an offset commit record in a transactional batch of
    /// `producer_id` (held until its marker is replayed).
    pub fn load_txn_offset(
        &mut self,
        producer_id: i64,
        key: &super::super::records::OffsetCommitKey,
        value: &[u8],
    ) {
        match OffsetCommitValue::decode(value) {
            Ok(v) => self.txn_offsets.entry(producer_id).or_default().push((
                key.group.clone(),
                (key.topic.clone(), key.partition),
                v,
            )),
            Err(e) => {
                tracing::warn!(group = %key.group, error = %e, "transactional offset record skipped")
            }
        }
    }

    /// Whether `group` has offsets of an open transaction on `tp`
    /// (OffsetFetch v7+ `require_stable` answers UNSTABLE_OFFSET_COMMIT).
    pub fn has_pending_txn_offset(&self, group: &str, tp: &(String, i32)) -> bool {
        self.txn_offsets
            .values()
            .flatten()
            .any(|(g, t, _)| g == group && t == tp)
    }
}
