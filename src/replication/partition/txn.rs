//! `[drv]` Transactions on one partition (KIP-98, the LSO): the
//! last stable offset the purgatory and read_committed readers see, the
//! aborted transactions a read_committed fetch returns, and appending a
//! COMMIT / ABORT marker sent by a transaction coordinator
//! (WriteTxnMarkers; Kafka's `Partition.appendRecordsToLeader` with
//! `AppendOrigin.COORDINATOR`).

use std::cell::Cell;
use std::rc::Rc;

use bytes::Bytes;

use super::{Partition, ProduceResult};
use crate::protocol::{control_record, ErrorCode};
use crate::purgatory::view::{LogOffsetMetadata, PartitionRole};
use crate::replication::producer_state::{
    CompletedTxn, ProducerBatch, ProducerStateManager, TxnMarker,
};
use crate::storage::partition_log::{PartitionLog, ValidatedRecords};
use crate::storage::txn_index::AbortedTxn;

/// One marker to append (a WriteTxnMarkers entry for one partition).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MarkerSpec {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub coordinator_epoch: i32,
    pub commit: bool,
}

/// The segment base offset holding `offset` among `bases` (ascending).
pub(super) fn segment_of(bases: &[i64], offset: i64) -> i64 {
    match bases.binary_search(&offset) {
        Ok(i) => bases[i],
        Err(0) => bases.first().copied().unwrap_or(0),
        Err(i) => bases[i - 1],
    }
}

/// The aborted-index entry of a completed transaction, if it aborted.
pub(super) fn aborted_entry(
    producers: &ProducerStateManager,
    done: &CompletedTxn,
) -> Option<AbortedTxn> {
    done.is_aborted.then(|| AbortedTxn {
        producer_id: done.producer_id,
        first_offset: done.first_offset,
        last_offset: done.last_offset,
        last_stable_offset: producers.last_stable_offset_after(done),
    })
}

/// Where one shard's KIP-890 verification guards come from (Kafka's
/// `VerificationGuard`, there an object compared by identity): a counter
/// the shard's replica manager owns and hands to every partition it
/// opens. A partition lives on one shard (`shard_of`) and the counter
/// outlives every partition there, so a guard from a partition that was
/// closed and opened again never matches the reopened one's. The shard's
/// partitions share it on one thread: a `Cell`, no atomic.
#[derive(Debug, Clone)]
pub struct VerificationGuards(Rc<Cell<u64>>);

impl Default for VerificationGuards {
    fn default() -> Self {
        Self(Rc::new(Cell::new(1)))
    }
}

impl VerificationGuards {
    /// A guard no earlier call on this shard returned.
    fn next(&self) -> u64 {
        let guard = self.0.get();
        self.0.set(guard + 1);
        guard
    }
}

impl Partition {
    /// Kafka's `maybeStartTransactionVerification` on the leader: `None`
    /// when no verification is needed (disabled, or the producer's
    /// transaction is already open here), else the guard of its running
    /// verification; not the leader: the code to answer.
    pub fn start_txn_verification(
        &self,
        producer_id: i64,
        seq: i32,
        epoch: i16,
        now_ms: i64,
    ) -> Result<Option<u64>, ErrorCode> {
        if self.role() != PartitionRole::Leader {
            return Err(self.not_serving());
        }
        if !self.verify_txns {
            return Ok(None);
        }
        let fresh = self.verification_guards.next();
        Ok(self
            .producers
            .borrow_mut()
            .start_verification(producer_id, seq, epoch, now_ms, fresh))
    }

    /// The KIP-890 check of an append (Kafka's
    /// `batchMissingRequiredVerification`, client and coordinator
    /// origins): `Some(INVALID_TXN_STATE)` for a transactional batch that
    /// would open a transaction here without its verification's guard.
    pub(super) fn check_verified(
        &self,
        batch: &ProducerBatch,
        guard: Option<u64>,
    ) -> Option<ProduceResult> {
        if !self.verify_txns {
            return None;
        }
        let checked = self.producers.borrow().check_verified(batch, guard);
        checked.err().map(|e| {
            tracing::debug!(tp = %self.tp, producer_id = batch.producer_id, "transactional batch not verified");
            ProduceResult::error(ErrorCode(e.error_code()))
        })
    }

    /// The LSO as the purgatory sees it: the first unstable offset when
    /// below the HW (with its byte position when known, else the HW's: a
    /// larger count only wakes a fetch early, which then reads up to the
    /// LSO), else the HW.
    pub(super) fn last_stable(&self, hw: LogOffsetMetadata) -> LogOffsetMetadata {
        match self.producers.borrow().first_unstable_offset(hw.offset) {
            Some((offset, position)) if offset < hw.offset => LogOffsetMetadata::new(
                offset,
                hw.segment_base_offset,
                position.unwrap_or(hw.relative_position),
            ),
            _ => hw,
        }
    }

    /// The LSO offset for a log whose HW is `hw`.
    pub(crate) fn last_stable_offset(&self, hw: i64) -> i64 {
        match self.producers.borrow().first_unstable_offset(hw) {
            Some((offset, _)) => offset.min(hw),
            None => hw,
        }
    }

    /// The aborted transactions a read_committed read of `[from, upper)`
    /// may hold data of: `(producer_id, first_offset)`.
    pub(super) fn aborted_in(&self, from: i64, upper: i64) -> Vec<(i64, i64)> {
        self.txn_index.borrow().index().collect(from, upper)
    }

    /// Every aborted transaction of the log (the cleaner drops their data).
    pub(crate) fn aborted_transactions(&self) -> Vec<AbortedTxn> {
        self.txn_index.borrow().index().all()
    }

    /// Index an aborted transaction the log just completed.
    pub(super) fn index_abort(&self, log: &PartitionLog, entry: AbortedTxn) {
        let segment = segment_of(&log.segment_base_offsets(), entry.last_offset);
        if let Err(e) = self.txn_index.borrow_mut().add(segment, entry) {
            // The marker is in the log: recovery indexes it again.
            tracing::warn!(tp = %self.tp, error = %e, "cannot write the aborted-transaction index");
        }
    }

    /// The log cleaner swapped the segment at `base` in for the segments at
    /// `old`, with its own `.txnindex` (Kafka's cleaned segment index):
    /// the index now lists `entries` for it and nothing for the others.
    /// Called under the log's write lock, with the swap, so no
    /// read_committed fetch sees the cleaned segment with the old entries
    /// (an entry whose ABORT marker the clean removed would hide the
    /// producer's later committed batches).
    pub(crate) fn on_segments_cleaned(&self, old: &[i64], base: i64, entries: Vec<AbortedTxn>) {
        self.txn_index
            .borrow_mut()
            .replace_segments(old, base, entries);
    }

    /// Segments deleted under the index (retention, DeleteRecords,
    /// truncation) leave it; truncation also drops entries past the end.
    pub(super) fn trim_txn_index(&self, log: &PartitionLog) {
        let mut ix = self.txn_index.borrow_mut();
        ix.retain_segments(&log.segment_base_offsets());
        if let Err(e) = ix.truncate_to(log.log_end_offset()) {
            tracing::warn!(tp = %self.tp, error = %e, "cannot truncate the aborted-transaction index");
        }
    }

    /// Append one transaction marker as the leader, in the partition's
    /// append order. Errors as Kafka answers WriteTxnMarkers:
    /// NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR, INVALID_PRODUCER_EPOCH
    /// for an older producer epoch, TRANSACTION_COORDINATOR_FENCED for an
    /// older coordinator epoch. The caller waits for the HW (Kafka appends
    /// markers with acks=all).
    pub async fn append_marker(&self, spec: MarkerSpec, now_ms: i64) -> ProduceResult {
        let ticket = self.queue_append();
        if self.role() != PartitionRole::Leader {
            return ProduceResult::error(self.not_serving());
        }
        ticket.turn().await;
        let Ok(mut log) = self.log.write().await else {
            return ProduceResult::error(ErrorCode::NOT_LEADER_OR_FOLLOWER);
        };
        if self.role() != PartitionRole::Leader {
            return ProduceResult::error(self.not_serving());
        }
        if log.is_poisoned() {
            return ProduceResult::error(ErrorCode::KAFKA_STORAGE_ERROR);
        }
        let checked = self.producers.borrow().check_marker(
            spec.producer_id,
            spec.producer_epoch,
            spec.coordinator_epoch,
        );
        if let Err(e) = checked {
            return ProduceResult::error(ErrorCode(e.error_code()));
        }
        let batch = control_record::end_txn_marker_batch(
            spec.producer_id,
            spec.producer_epoch,
            spec.coordinator_epoch,
            spec.commit,
            now_ms,
        );
        let records = match ValidatedRecords::new(Bytes::from(batch)) {
            Ok(r) => r,
            Err(e) => return ProduceResult::error(ErrorCode(e.kafka_error_code())),
        };
        let active_before = log.active_segment_base_offset();
        let info = match log
            .append_validated(records, self.leader_epoch.get().0, now_ms, false)
            .await
        {
            Ok(info) => info,
            Err(e) => return ProduceResult::error(ErrorCode(e.kafka_error_code())),
        };
        self.maybe_snapshot_on_roll(&log, active_before);
        let marker = TxnMarker {
            commit: spec.commit,
            coordinator_epoch: spec.coordinator_epoch,
        };
        let aborted = {
            let mut producers = self.producers.borrow_mut();
            producers.on_high_watermark(log.high_watermark());
            let done = producers.on_marker(
                spec.producer_id,
                spec.producer_epoch,
                marker,
                info.first_offset,
                now_ms,
            );
            done.and_then(|d| aborted_entry(&producers, &d))
        };
        if let Some(entry) = aborted {
            self.index_abort(&log, entry);
        }
        self.finish_leader_append(log, info, now_ms).await
    }
}

#[cfg(test)]
mod tests {
    use super::VerificationGuards;

    #[test]
    fn guards_are_unique_across_every_holder_of_the_shards_counter() {
        let shard = VerificationGuards::default();
        let first_partition = shard.clone();
        let a = first_partition.next();
        drop(first_partition);
        // The same partition opened again gets the shard's counter anew.
        let reopened = shard.clone();
        let b = reopened.next();
        let c = shard.next();
        assert!(a < b && b < c, "{a} {b} {c}");
    }
}
