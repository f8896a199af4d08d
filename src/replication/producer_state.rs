//! `[pure]` Idempotent producer state for one partition (Kafka's
//! ProducerStateManager / ProducerAppendInfo, non-transactional part).
//!
//! For each producer id the owner shard keeps the epoch and the metadata of
//! the last [`BATCHES_KEPT`] batches (sequence range → offsets), which is what
//! Kafka keeps (`ProducerStateEntry.NumBatchesToRetain = 5`, matching the
//! client's `max.in.flight.requests.per.connection` ≤ 5 for idempotence).
//! The rules, checked before anything is appended:
//! - a batch whose epoch and sequence range equal one of the cached batches is
//!   a retried duplicate: answered with its original offsets, not appended;
//! - an epoch older than the producer's current one → INVALID_PRODUCER_EPOCH
//!   (KIP-588: produce requests get this, not PRODUCER_FENCED);
//! - a new epoch must start at sequence 0 → OUT_OF_ORDER_SEQUENCE_NUMBER
//!   otherwise (unless the producer had no state: KIP-360 lets a producer whose
//!   state expired or was deleted continue with any sequence);
//! - within an epoch the first sequence must follow the last one
//!   (`last + 1`, wrapping from i32::MAX to 0) → OUT_OF_ORDER_SEQUENCE_NUMBER.
//!   Like Kafka ≥ 2.5 we never answer UNKNOWN_PRODUCER_ID to a produce.
//!
//! State is snapshotted in Kafka's `<offset>.snapshot` layout (version 1,
//! CRC-32C, one entry per producer with its last batch) and rebuilt after a
//! crash by replaying the batches appended since the snapshot. This module
//! holds the pure parts of that: the snapshot's contents and the replay of
//! logged batch headers ([`ProducerStateManager::on_replay`]); the files
//! (naming, which to load, atomic writes) are `storage::producer_snapshot`'s,
//! and `replication::partition` joins the two.

use crate::storage::cleaner::filter::LastRecord;
use crate::types::mutation::{self, Mutation};
use crate::types::{Offset, ProducerEpoch, ProducerId};
use std::collections::{BTreeMap, VecDeque};

/// Batches remembered per producer for duplicate detection.
pub const BATCHES_KEPT: usize = 5;
/// Kafka default of `producer.id.expiration.ms` (1 day).
pub const DEFAULT_PRODUCER_ID_EXPIRATION_MS: i64 = 86_400_000;
/// Bytes of one producer entry in a version-1 snapshot.
const SNAPSHOT_ENTRY_LEN: usize = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8;

/// A batch header read back from the log, for rebuilding state (the
/// fields Kafka's `ProducerStateManager` reads during log recovery).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoggedBatch {
    pub base_offset: Offset,
    pub last_offset_delta: i32,
    pub max_timestamp: i64,
    pub producer_id: ProducerId,
    pub producer_epoch: ProducerEpoch,
    pub base_sequence: i32,
    pub is_control: bool,
    /// Attribute bit 4: the batch belongs to a transaction.
    pub is_transactional: bool,
    /// A control batch's end-transaction marker (`None` for data batches,
    /// and for a control batch emptied by the cleaner).
    pub marker: Option<TxnMarker>,
}

/// An end-transaction marker (Kafka's `EndTransactionMarker`): the one
/// record of a control batch, COMMIT or ABORT, with the epoch of the
/// coordinator that wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnMarker {
    pub commit: bool,
    pub coordinator_epoch: i32,
}

/// A transaction ended by a marker (Kafka's `CompletedTxn`): its data
/// lies in `[first_offset, last_offset)`, the marker at `last_offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompletedTxn {
    pub producer_id: ProducerId,
    pub first_offset: Offset,
    pub last_offset: Offset,
    pub is_aborted: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchMetadata {
    pub first_seq: i32,
    pub last_seq: i32,
    pub first_offset: Offset,
    pub last_offset: Offset,
    pub max_timestamp: i64,
}

/// One producer of DescribeProducers' `active_producers`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActiveProducer {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub last_sequence: i32,
    pub last_timestamp: i64,
    pub coordinator_epoch: i32,
    pub current_txn_start_offset: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerEntry {
    pub epoch: ProducerEpoch,
    pub batches: VecDeque<BatchMetadata>,
    pub last_timestamp_ms: i64,
    /// The epoch of the transaction coordinator whose marker came last
    /// (-1 before any); older coordinators' markers are fenced.
    pub coordinator_epoch: i32,
    /// The first offset of the producer's open transaction here.
    pub current_txn_first_offset: Option<Offset>,
}

impl ProducerEntry {
    fn new(epoch: ProducerEpoch, now_ms: i64) -> Self {
        Self {
            epoch,
            batches: VecDeque::new(),
            last_timestamp_ms: now_ms,
            coordinator_epoch: -1,
            current_txn_first_offset: None,
        }
    }

    fn last_seq(&self) -> Option<i32> {
        self.batches.back().map(|b| b.last_seq)
    }
}

/// Why a batch was refused; mapped to Kafka codes at the protocol edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProducerError {
    /// OUT_OF_ORDER_SEQUENCE_NUMBER (45).
    OutOfOrderSequence,
    /// INVALID_PRODUCER_EPOCH (47).
    InvalidProducerEpoch,
    /// INVALID_TXN_STATE (48): a non-transactional batch while the
    /// producer's transaction is open here.
    InvalidTxnState,
    /// TRANSACTION_COORDINATOR_FENCED (52): a marker from an older
    /// coordinator than the last one seen.
    CoordinatorFenced,
}

impl ProducerError {
    pub fn error_code(self) -> i16 {
        match self {
            ProducerError::OutOfOrderSequence => 45,
            ProducerError::InvalidProducerEpoch => 47,
            ProducerError::InvalidTxnState => 48,
            ProducerError::CoordinatorFenced => 52,
        }
    }
}

/// The identity and sequence range of an incoming batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerBatch {
    pub producer_id: ProducerId,
    pub epoch: ProducerEpoch,
    pub first_seq: i32,
    /// `first_seq + last_offset_delta`, wrapping past i32::MAX.
    pub last_seq: i32,
    pub is_transactional: bool,
}

/// Result of checking a batch against the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqCheck {
    /// Not idempotent (producer id -1) or in sequence: append it.
    Append,
    /// A retry of a batch already in the log: answer with these offsets.
    Duplicate(BatchMetadata),
}

fn in_sequence(last_seq: i32, next_seq: i32) -> bool {
    next_seq == last_seq.wrapping_add(1) || (next_seq == 0 && last_seq == i32::MAX)
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProducerStateManager {
    producers: BTreeMap<ProducerId, ProducerEntry>,
    /// Open transactions by first offset (Kafka's `ongoingTxns`), with
    /// the logical byte position of that first batch when known.
    ongoing: BTreeMap<Offset, (ProducerId, Option<i64>)>,
    /// Ended transactions whose marker the HW has not passed yet (Kafka's
    /// `unreplicatedTxns`): first offset → (marker offset, position).
    unreplicated: BTreeMap<Offset, (Offset, Option<i64>)>,
    /// KIP-890 verifications started and not yet used (Kafka's
    /// `verificationStates`); not snapshotted, as in Kafka.
    verifications: BTreeMap<ProducerId, Verification>,
}

impl ProducerStateManager {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn entry(&self, producer_id: ProducerId) -> Option<&ProducerEntry> {
        self.producers.get(&producer_id)
    }

    pub fn len(&self) -> usize {
        self.producers.len()
    }

    /// Each producer's last data offset (Kafka's
    /// `ProducerStateEntry.lastDataOffset`; none once a marker of a new
    /// epoch cleared its batches) and epoch, as Kafka's
    /// `UnifiedLog.lastRecordsOfActiveProducers`: the log cleaner keeps the
    /// batch holding that offset, or a marker of that epoch, even when
    /// compaction empties it.
    pub fn last_records(&self) -> BTreeMap<ProducerId, LastRecord> {
        self.producers
            .iter()
            .map(|(pid, e)| {
                let last = LastRecord {
                    last_data_offset: e.batches.back().map(|b| b.last_offset),
                    producer_epoch: e.epoch,
                };
                (*pid, last)
            })
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }

    /// Kafka's `ProducerStateManager.hasLateTransaction`: the producer of
    /// the oldest open transaction last appended more than
    /// `max_timeout_ms` (`transaction.max.timeout.ms`) plus
    /// `LATE_TRANSACTION_BUFFER_MS` (5 minutes) before `now_ms`; such a
    /// transaction holds the LSO back and the coordinator should have
    /// aborted it.
    pub fn has_late_transaction(&self, now_ms: i64, max_timeout_ms: i64) -> bool {
        const LATE_TRANSACTION_BUFFER_MS: i64 = 5 * 60 * 1000;
        let Some((_, (producer_id, _))) = self.ongoing.first_key_value() else {
            return false;
        };
        let last = self
            .producers
            .get(producer_id)
            .map_or(-1, |e| e.last_timestamp_ms);
        last > 0 && now_ms - last > max_timeout_ms + LATE_TRANSACTION_BUFFER_MS
    }

    /// Every producer with state here, as Kafka's
    /// `UnifiedLog.activeProducers` lists them for DescribeProducers
    /// (KIP-664): last sequence -1 and last timestamp -1 before any data
    /// batch of the current epoch, current transaction start -1 outside a
    /// transaction. The last timestamp is the last batch's max timestamp
    /// (Kafka's `ProducerStateEntry.lastTimestamp`).
    pub fn active_producers(&self) -> Vec<ActiveProducer> {
        self.producers
            .iter()
            .map(|(pid, e)| ActiveProducer {
                producer_id: *pid,
                producer_epoch: e.epoch,
                last_sequence: e.last_seq().unwrap_or(-1),
                last_timestamp: e
                    .batches
                    .back()
                    .map_or(e.last_timestamp_ms, |b| b.max_timestamp),
                coordinator_epoch: e.coordinator_epoch,
                current_txn_start_offset: e.current_txn_first_offset.unwrap_or(-1),
            })
            .collect()
    }

    /// Checks `batch` without changing state.
    pub fn check(&self, batch: &ProducerBatch) -> Result<SeqCheck, ProducerError> {
        if batch.producer_id < 0 {
            return Ok(SeqCheck::Append);
        }
        let Some(entry) = self.producers.get(&batch.producer_id) else {
            // No state (new producer, or expired): KIP-360 accepts any sequence.
            self.check_verification_sequence(batch)?;
            return Ok(SeqCheck::Append);
        };
        if let Some(dup) = entry.batches.iter().find(|b| {
            entry.epoch == batch.epoch
                && b.first_seq == batch.first_seq
                && b.last_seq == batch.last_seq
        }) {
            if !mutation::active(Mutation::RetryAppendedAgain) {
                return Ok(SeqCheck::Duplicate(*dup));
            }
            return Ok(SeqCheck::Append);
        }
        if batch.epoch < entry.epoch {
            return Err(ProducerError::InvalidProducerEpoch);
        }
        self.check_verification_sequence(batch)?;
        if batch.epoch > entry.epoch {
            if batch.first_seq != 0 {
                return Err(ProducerError::OutOfOrderSequence);
            }
            Self::check_txn(entry, batch)?;
            return Ok(SeqCheck::Append);
        }
        if let Some(last) = entry.last_seq() {
            if !in_sequence(last, batch.first_seq) {
                return Err(ProducerError::OutOfOrderSequence);
            }
        }
        Self::check_txn(entry, batch)?;
        Ok(SeqCheck::Append)
    }

    /// A coordinator's append (Kafka's `AppendOrigin.COORDINATOR`): only
    /// an older producer epoch is refused.
    pub fn check_epoch(&self, batch: &ProducerBatch) -> Result<(), ProducerError> {
        match self.producers.get(&batch.producer_id) {
            Some(e) if batch.producer_id >= 0 && batch.epoch < e.epoch => {
                Err(ProducerError::InvalidProducerEpoch)
            }
            _ => Ok(()),
        }
    }

    /// Kafka's `ProducerAppendInfo.appendDataBatch`: while the producer's
    /// transaction is open here, a non-transactional batch is refused.
    fn check_txn(entry: &ProducerEntry, batch: &ProducerBatch) -> Result<(), ProducerError> {
        if entry.current_txn_first_offset.is_some() && !batch.is_transactional {
            return Err(ProducerError::InvalidTxnState);
        }
        Ok(())
    }

    /// Records an appended batch (also used to replay the log on
    /// recovery). A transactional batch of a producer with no open
    /// transaction here opens one at its first offset, whose logical
    /// byte position is `position` when known.
    pub fn on_append(
        &mut self,
        batch: &ProducerBatch,
        meta: BatchMetadata,
        now_ms: i64,
        position: Option<i64>,
    ) {
        if batch.producer_id < 0 {
            return;
        }
        let entry = self
            .producers
            .entry(batch.producer_id)
            .or_insert_with(|| ProducerEntry::new(batch.epoch, now_ms));
        if batch.is_transactional {
            // Kafka's `updateProducers`: the transaction now has a first
            // offset here, so its verification is used up.
            self.verifications.remove(&batch.producer_id);
        }
        if batch.is_transactional && entry.current_txn_first_offset.is_none() {
            entry.current_txn_first_offset = Some(meta.first_offset);
            self.ongoing
                .insert(meta.first_offset, (batch.producer_id, position));
        }
        if batch.epoch != entry.epoch {
            entry.epoch = batch.epoch;
            entry.batches.clear();
        }
        if entry.batches.len() == BATCHES_KEPT {
            entry.batches.pop_front();
        }
        entry.batches.push_back(meta);
        // Idle time counts from our append clock, not client timestamps.
        entry.last_timestamp_ms = now_ms;
        self.check_invariants();
    }

    /// Replays one batch found in the log (recovery after a crash, or the
    /// batches appended after the loaded snapshot). No checks: the log is
    /// the truth, as in Kafka's recovery (`loadProducersFromRecords`). The
    /// batch's max timestamp stands in for its append time, which is what
    /// Kafka records as the producer's last timestamp.
    ///
    /// Returns the transaction a replayed marker ended, so the caller can
    /// index it when aborted.
    pub fn on_replay(&mut self, logged: &LoggedBatch) -> Option<CompletedTxn> {
        if logged.is_control {
            // Markers carry no sequence; an emptied control batch is
            // nothing (Kafka: the cleaner removed the whole transaction).
            let marker = logged.marker?;
            return self.on_marker(
                logged.producer_id,
                logged.producer_epoch,
                marker,
                logged.base_offset,
                logged.max_timestamp,
            );
        }
        if logged.producer_id < 0 || logged.last_offset_delta < 0 {
            return None;
        }
        let batch = ProducerBatch {
            producer_id: logged.producer_id,
            epoch: logged.producer_epoch,
            first_seq: logged.base_sequence,
            last_seq: logged.base_sequence.wrapping_add(logged.last_offset_delta),
            is_transactional: logged.is_transactional,
        };
        let meta = BatchMetadata {
            first_seq: batch.first_seq,
            last_seq: batch.last_seq,
            first_offset: logged.base_offset,
            last_offset: logged
                .base_offset
                .saturating_add(i64::from(logged.last_offset_delta)),
            max_timestamp: logged.max_timestamp,
        };
        self.on_append(&batch, meta, logged.max_timestamp, None);
        None
    }

    /// Drops producers idle longer than `producer.id.expiration.ms`.
    pub fn remove_expired(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        let before = self.producers.len();
        // Kafka's `isProducerExpired`: never a producer with an open
        // transaction (its data must stay below the LSO until its marker).
        self.producers.retain(|_, e| {
            e.current_txn_first_offset.is_some()
                || now_ms.saturating_sub(e.last_timestamp_ms) < expiration_ms
        });
        // Kafka's `removeExpiredProducers` drops lingering verifications too.
        self.verifications
            .retain(|_, v| now_ms.saturating_sub(v.started_ms) < expiration_ms);
        before - self.producers.len()
    }

    /// Forgets batches at or past `offset` (log truncation).
    pub fn truncate_to(&mut self, offset: Offset) {
        for e in self.producers.values_mut() {
            e.batches.retain(|b| b.last_offset < offset);
            if e.current_txn_first_offset.is_some_and(|f| f >= offset) {
                e.current_txn_first_offset = None;
            }
        }
        self.producers
            .retain(|_, e| !e.batches.is_empty() || e.current_txn_first_offset.is_some());
        self.ongoing.retain(|first, _| *first < offset);
        self.unreplicated.retain(|first, _| *first < offset);
    }

    pub fn check_invariants(&self) {
        if cfg!(debug_assertions) {
            for e in self.producers.values() {
                debug_assert!(e.batches.len() <= BATCHES_KEPT);
                debug_assert!(e.batches.iter().all(|b| b.first_offset <= b.last_offset));
            }
        }
    }

    /// Encodes a snapshot in Kafka's producer snapshot layout (version 1):
    /// `version i16, crc u32 (CRC-32C of what follows), count i32`, then per
    /// producer `id i64, epoch i16, last_seq i32, last_offset i64,
    /// offset_delta i32, timestamp i64, coordinator_epoch i32,
    /// txn_first_offset i64`. Like Kafka, only the last batch is kept.
    pub fn encode_snapshot(&self) -> Vec<u8> {
        // A producer whose batches a marker's new epoch cleared is kept
        // too (its epoch fences older ones), as Kafka writes it: last
        // sequence and last offset -1, delta 0.
        let none = BatchMetadata {
            first_seq: -1,
            last_seq: -1,
            first_offset: -1,
            last_offset: -1,
            max_timestamp: -1,
        };
        let entries: Vec<(&ProducerId, &ProducerEntry, &BatchMetadata)> = self
            .producers
            .iter()
            .map(|(id, e)| (id, e, e.batches.back().unwrap_or(&none)))
            .collect();
        let mut body = Vec::with_capacity(4 + entries.len() * SNAPSHOT_ENTRY_LEN);
        body.extend_from_slice(&(entries.len() as i32).to_be_bytes());
        for (id, e, last) in entries {
            body.extend_from_slice(&id.to_be_bytes());
            body.extend_from_slice(&e.epoch.to_be_bytes());
            body.extend_from_slice(&last.last_seq.to_be_bytes());
            body.extend_from_slice(&last.last_offset.to_be_bytes());
            let delta = (last.last_offset - last.first_offset) as i32;
            body.extend_from_slice(&delta.to_be_bytes());
            body.extend_from_slice(&e.last_timestamp_ms.to_be_bytes());
            body.extend_from_slice(&e.coordinator_epoch.to_be_bytes());
            let txn_first = e.current_txn_first_offset.unwrap_or(-1);
            body.extend_from_slice(&txn_first.to_be_bytes());
        }
        let mut out = Vec::with_capacity(6 + body.len());
        out.extend_from_slice(&1i16.to_be_bytes());
        out.extend_from_slice(&crc32c::crc32c(&body).to_be_bytes());
        out.extend_from_slice(&body);
        out
    }

    /// Decodes [`Self::encode_snapshot`]'s bytes; `None` if damaged (the
    /// caller then rebuilds from an older snapshot or the log).
    pub fn decode_snapshot(bytes: &[u8]) -> Option<Self> {
        let rd = |b: &[u8], at: usize, n: usize| b.get(at..at + n).map(<[u8]>::to_vec);
        let version = i16::from_be_bytes(rd(bytes, 0, 2)?.try_into().ok()?);
        let crc = u32::from_be_bytes(rd(bytes, 2, 4)?.try_into().ok()?);
        let body = bytes.get(6..)?;
        if version != 1 || crc32c::crc32c(body) != crc {
            return None;
        }
        let count = i32::from_be_bytes(rd(body, 0, 4)?.try_into().ok()?);
        const ENTRY: usize = SNAPSHOT_ENTRY_LEN;
        let count_len = usize::try_from(count).ok()?.checked_mul(ENTRY)?;
        if body.len() != 4 + count_len {
            return None;
        }
        let mut producers = BTreeMap::new();
        let mut ongoing = BTreeMap::new();
        for i in 0..count as usize {
            let e = &body[4 + i * ENTRY..4 + (i + 1) * ENTRY];
            let id = i64::from_be_bytes(e[0..8].try_into().ok()?);
            let epoch = i16::from_be_bytes(e[8..10].try_into().ok()?);
            let last_seq = i32::from_be_bytes(e[10..14].try_into().ok()?);
            let last_offset = i64::from_be_bytes(e[14..22].try_into().ok()?);
            let delta = i32::from_be_bytes(e[22..26].try_into().ok()?);
            let ts = i64::from_be_bytes(e[26..34].try_into().ok()?);
            let coordinator_epoch = i32::from_be_bytes(e[34..38].try_into().ok()?);
            let txn_first = i64::from_be_bytes(e[38..46].try_into().ok()?);
            // Our own file, but a damaged one must not break an invariant.
            if delta < 0 || (last_offset < 0 && (last_offset != -1 || delta != 0)) {
                return None;
            }
            let batches = if last_offset < 0 {
                VecDeque::new()
            } else {
                VecDeque::from([BatchMetadata {
                    first_seq: last_seq.wrapping_sub(delta),
                    last_seq,
                    first_offset: last_offset.checked_sub(i64::from(delta))?,
                    last_offset,
                    max_timestamp: ts,
                }])
            };
            let current_txn_first_offset = (txn_first >= 0).then_some(txn_first);
            if let Some(first) = current_txn_first_offset {
                ongoing.insert(first, (id, None));
            }
            producers.insert(
                id,
                ProducerEntry {
                    epoch,
                    batches,
                    last_timestamp_ms: ts,
                    coordinator_epoch,
                    current_txn_first_offset,
                },
            );
        }
        let state = Self {
            producers,
            ongoing,
            unreplicated: BTreeMap::new(),
            verifications: BTreeMap::new(),
        };
        state.check_invariants();
        Some(state)
    }
}

mod txn;
pub use txn::Verification;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod txn_tests;
