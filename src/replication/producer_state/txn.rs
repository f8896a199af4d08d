//! `[pure]` The transactional part of a partition's producer state
//! (KIP-98; Kafka's `ProducerAppendInfo.appendEndTxnMarker` and
//! `ProducerStateManager`'s ongoing / unreplicated transactions; seed
//! 000's LSO): which transactions are open here, where the last stable
//! offset (LSO) stands, and what a COMMIT or ABORT marker completes.
//!
//! LSO = min(first offset of every open transaction, first offset of every
//! ended transaction whose marker the HW has not passed, HW): a
//! read_committed consumer never reads past an undecided record, nor past
//! a decision that could still be lost with an unreplicated marker.

use super::{
    CompletedTxn, ProducerBatch, ProducerEntry, ProducerError, ProducerStateManager, TxnMarker,
};
use crate::types::mutation::{self, Mutation};
use crate::types::{Offset, ProducerEpoch, ProducerId};

/// A started KIP-890 verification of a producer's next transaction here
/// (Kafka's `VerificationStateEntry`): its guard (unique per start, so a
/// stale "verified" answer from before an abort marker cannot open a new
/// transaction: the ABA case Kafka's `VerificationGuard` prevents), the
/// lowest sequence and the epoch seen while it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verification {
    pub guard: u64,
    pub lowest_seq: i32,
    pub epoch: ProducerEpoch,
    pub started_ms: i64,
}

impl ProducerStateManager {
    /// Kafka's checks of a marker from a client-facing append
    /// (WriteTxnMarkers): an older producer epoch is INVALID_PRODUCER_EPOCH,
    /// an older coordinator epoch TRANSACTION_COORDINATOR_FENCED.
    pub fn check_marker(
        &self,
        producer_id: ProducerId,
        epoch: ProducerEpoch,
        coordinator_epoch: i32,
    ) -> Result<(), ProducerError> {
        let Some(entry) = self.producers.get(&producer_id) else {
            return Ok(());
        };
        if epoch < entry.epoch {
            return Err(ProducerError::InvalidProducerEpoch);
        }
        if coordinator_epoch < entry.coordinator_epoch {
            return Err(ProducerError::CoordinatorFenced);
        }
        Ok(())
    }

    /// A marker appended at `offset` (no checks: the caller ran
    /// [`Self::check_marker`], or replays the log). The producer takes
    /// the marker's epoch (a new one clears its batches, as any epoch
    /// change does) and coordinator epoch; its open transaction, if any,
    /// ends and is returned. The ended transaction keeps the LSO until
    /// the HW passes the marker ([`Self::on_high_watermark`]).
    pub fn on_marker(
        &mut self,
        producer_id: ProducerId,
        epoch: ProducerEpoch,
        marker: TxnMarker,
        offset: Offset,
        now_ms: i64,
    ) -> Option<CompletedTxn> {
        if producer_id < 0 {
            return None;
        }
        let entry = self
            .producers
            .entry(producer_id)
            .or_insert_with(|| ProducerEntry::new(epoch, now_ms));
        if entry.epoch != epoch {
            entry.epoch = epoch;
            entry.batches.clear();
        }
        entry.coordinator_epoch = marker.coordinator_epoch;
        // A marker ends any verification of the producer (Kafka's
        // `updateProducers` clears it for every transactional batch).
        self.verifications.remove(&producer_id);
        entry.last_timestamp_ms = now_ms;
        let first = entry.current_txn_first_offset.take()?;
        let position = self.ongoing.remove(&first).and_then(|(_, p)| p);
        self.unreplicated.insert(first, (offset, position));
        Some(CompletedTxn {
            producer_id,
            first_offset: first,
            last_offset: offset,
            is_aborted: !marker.commit,
        })
    }

    /// The LSO to record with an aborted transaction (Kafka's
    /// `lastStableOffset(completedTxn)`): the first offset of the oldest
    /// transaction still open, else the offset after the marker.
    pub fn last_stable_offset_after(&self, completed: &CompletedTxn) -> Offset {
        self.ongoing
            .keys()
            .next()
            .copied()
            .unwrap_or(completed.last_offset + 1)
    }

    /// The HW moved to `hw`: ended transactions whose marker lies below it
    /// no longer hold the LSO back.
    pub fn on_high_watermark(&mut self, hw: Offset) {
        self.unreplicated.retain(|_, (marker, _)| *marker >= hw);
    }

    /// The first offset that may not be stable yet (Kafka's
    /// `firstUnstableOffset`) with its logical byte position when known;
    /// `None` when every transaction has ended and its marker is below
    /// `hw`. The LSO is `min(this, hw)`.
    pub fn first_unstable_offset(&self, hw: Offset) -> Option<(Offset, Option<i64>)> {
        let open = self
            .ongoing
            .iter()
            .next()
            .map(|(o, (_, p))| (*o, *p))
            .filter(|_| !mutation::active(Mutation::LsoPastOpenTxn));
        let ended = self
            .unreplicated
            .iter()
            .find(|(_, (marker, _))| *marker >= hw)
            .map(|(o, (_, p))| (*o, *p));
        match (open, ended) {
            (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
            (a, b) => a.or(b),
        }
    }

    /// Whether `producer_id` has a transaction open here.
    pub fn has_open_txn(&self, producer_id: ProducerId) -> bool {
        self.producers
            .get(&producer_id)
            .is_some_and(|e| e.current_txn_first_offset.is_some())
    }

    /// Kafka's `maybeStartTransactionVerification`: `None` when the
    /// producer's transaction is already open here (no verification
    /// needed), else the guard of its verification, started now with
    /// `fresh_guard` unless one is running (whose lowest sequence and
    /// epoch then follow `seq` and `epoch`, as `VerificationStateEntry.
    /// maybeUpdateLowestSequenceAndEpoch`).
    pub fn start_verification(
        &mut self,
        producer_id: ProducerId,
        seq: i32,
        epoch: ProducerEpoch,
        now_ms: i64,
        fresh_guard: u64,
    ) -> Option<u64> {
        if self.has_open_txn(producer_id) {
            return None;
        }
        let v = self
            .verifications
            .entry(producer_id)
            .or_insert(Verification {
                guard: fresh_guard,
                lowest_seq: seq,
                epoch,
                started_ms: now_ms,
            });
        if epoch == v.epoch && seq < v.lowest_seq {
            v.lowest_seq = seq;
        }
        if epoch > v.epoch {
            v.epoch = epoch;
            v.lowest_seq = seq;
        }
        Some(v.guard)
    }

    /// Kafka's `batchMissingRequiredVerification` (with verification
    /// enabled): a transactional batch that opens a transaction here must
    /// carry the guard of the verification running for its producer;
    /// otherwise INVALID_TXN_STATE ("Record was not part of an ongoing
    /// transaction").
    pub fn check_verified(
        &self,
        batch: &ProducerBatch,
        guard: Option<u64>,
    ) -> Result<(), ProducerError> {
        if !batch.is_transactional || batch.producer_id < 0 || self.has_open_txn(batch.producer_id)
        {
            return Ok(());
        }
        match (self.verifications.get(&batch.producer_id), guard) {
            (Some(v), Some(g)) if v.guard == g => Ok(()),
            _ => Err(ProducerError::InvalidTxnState),
        }
    }

    /// Kafka's `ProducerAppendInfo.checkSequence`: while a verification
    /// runs, a batch past the lowest sequence it saw is out of order (the
    /// earlier batch has not been written yet).
    pub(super) fn check_verification_sequence(
        &self,
        batch: &ProducerBatch,
    ) -> Result<(), ProducerError> {
        match self.verifications.get(&batch.producer_id) {
            Some(v) if batch.first_seq > v.lowest_seq => Err(ProducerError::OutOfOrderSequence),
            _ => Ok(()),
        }
    }

    /// The running verification of `producer_id`, if any.
    pub fn verification(&self, producer_id: ProducerId) -> Option<&Verification> {
        self.verifications.get(&producer_id)
    }

    /// Open transactions (producer id, first offset), oldest first.
    pub fn open_transactions(&self) -> Vec<(ProducerId, Offset)> {
        self.ongoing.iter().map(|(o, (p, _))| (*p, *o)).collect()
    }
}
