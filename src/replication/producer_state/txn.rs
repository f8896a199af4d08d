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

use super::*;

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
        let open = self.ongoing.iter().next().map(|(o, (_, p))| (*o, *p));
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

    /// Open transactions (producer id, first offset), oldest first.
    pub fn open_transactions(&self) -> Vec<(ProducerId, Offset)> {
        self.ongoing.iter().map(|(o, (p, _))| (*p, *o)).collect()
    }
}
