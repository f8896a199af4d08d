//! What the shard's log cleaner (`storage::cleaner::task`) sees of a
//! partition holding a compacted log (part of the `[drv]` partition).

use std::collections::BTreeMap;

use glommio::sync::RwLock;

use super::Partition;
use crate::storage::cleaner::filter::LastRecord;
use crate::storage::cleaner::task::CleanableLog;
use crate::storage::partition_log::PartitionLog;
use crate::storage::txn_index::AbortedTxn;
use crate::types::TopicPartition;

impl CleanableLog for Partition {
    fn topic_partition(&self) -> &TopicPartition {
        &self.tp
    }
    fn log(&self) -> &RwLock<PartitionLog> {
        Partition::log(self)
    }
    fn is_offline(&self) -> bool {
        Partition::is_offline(self)
    }
    fn last_stable_offset(&self, hw: i64) -> i64 {
        Partition::last_stable_offset(self, hw)
    }
    fn log_dir(&self) -> usize {
        Partition::log_dir(self)
    }
    fn last_records_of_active_producers(&self) -> BTreeMap<i64, LastRecord> {
        Partition::last_records_of_active_producers(self)
    }
    fn aborted_transactions(&self) -> Vec<AbortedTxn> {
        Partition::aborted_transactions(self)
    }
    fn on_segments_cleaned(&self, old: &[i64], base: i64, entries: Vec<AbortedTxn>) {
        Partition::on_segments_cleaned(self, old, base, entries);
    }
}
