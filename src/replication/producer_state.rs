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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchMetadata {
    pub first_seq: i32,
    pub last_seq: i32,
    pub first_offset: Offset,
    pub last_offset: Offset,
    pub max_timestamp: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerEntry {
    pub epoch: ProducerEpoch,
    pub batches: VecDeque<BatchMetadata>,
    pub last_timestamp_ms: i64,
}

impl ProducerEntry {
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
}

impl ProducerError {
    pub fn error_code(self) -> i16 {
        match self {
            ProducerError::OutOfOrderSequence => 45,
            ProducerError::InvalidProducerEpoch => 47,
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
    /// `ProducerStateEntry.lastDataOffset`): the log cleaner keeps the
    /// batch holding it even when compaction empties it.
    pub fn last_data_offsets(&self) -> BTreeMap<ProducerId, Offset> {
        self.producers
            .iter()
            .filter_map(|(pid, e)| e.batches.back().map(|b| (*pid, b.last_offset)))
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }

    /// Checks `batch` without changing state.
    pub fn check(&self, batch: &ProducerBatch) -> Result<SeqCheck, ProducerError> {
        if batch.producer_id < 0 {
            return Ok(SeqCheck::Append);
        }
        let Some(entry) = self.producers.get(&batch.producer_id) else {
            // No state (new producer, or expired): KIP-360 accepts any sequence.
            return Ok(SeqCheck::Append);
        };
        if let Some(dup) = entry.batches.iter().find(|b| {
            entry.epoch == batch.epoch
                && b.first_seq == batch.first_seq
                && b.last_seq == batch.last_seq
        }) {
            return Ok(SeqCheck::Duplicate(*dup));
        }
        if batch.epoch < entry.epoch {
            return Err(ProducerError::InvalidProducerEpoch);
        }
        if batch.epoch > entry.epoch {
            return if batch.first_seq == 0 {
                Ok(SeqCheck::Append)
            } else {
                Err(ProducerError::OutOfOrderSequence)
            };
        }
        match entry.last_seq() {
            Some(last) if !in_sequence(last, batch.first_seq) => {
                Err(ProducerError::OutOfOrderSequence)
            }
            _ => Ok(SeqCheck::Append),
        }
    }

    /// Records an appended batch (also used to replay the log on recovery).
    pub fn on_append(&mut self, batch: &ProducerBatch, meta: BatchMetadata, now_ms: i64) {
        if batch.producer_id < 0 {
            return;
        }
        let entry = self
            .producers
            .entry(batch.producer_id)
            .or_insert_with(|| ProducerEntry {
                epoch: batch.epoch,
                batches: VecDeque::new(),
                last_timestamp_ms: now_ms,
            });
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
    pub fn on_replay(&mut self, logged: &LoggedBatch) {
        // Control batches (transaction markers) carry no sequence.
        if logged.is_control || logged.producer_id < 0 || logged.last_offset_delta < 0 {
            return;
        }
        let batch = ProducerBatch {
            producer_id: logged.producer_id,
            epoch: logged.producer_epoch,
            first_seq: logged.base_sequence,
            last_seq: logged.base_sequence.wrapping_add(logged.last_offset_delta),
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
        self.on_append(&batch, meta, logged.max_timestamp);
    }

    /// Drops producers idle longer than `producer.id.expiration.ms`.
    pub fn remove_expired(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        let before = self.producers.len();
        self.producers
            .retain(|_, e| now_ms.saturating_sub(e.last_timestamp_ms) < expiration_ms);
        before - self.producers.len()
    }

    /// Forgets batches at or past `offset` (log truncation).
    pub fn truncate_to(&mut self, offset: Offset) {
        for e in self.producers.values_mut() {
            e.batches.retain(|b| b.last_offset < offset);
        }
        self.producers.retain(|_, e| !e.batches.is_empty());
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
        let entries: Vec<(&ProducerId, &ProducerEntry, &BatchMetadata)> = self
            .producers
            .iter()
            .filter_map(|(id, e)| e.batches.back().map(|last| (id, e, last)))
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
            body.extend_from_slice(&(-1i32).to_be_bytes());
            body.extend_from_slice(&(-1i64).to_be_bytes());
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
        for i in 0..count as usize {
            let e = &body[4 + i * ENTRY..4 + (i + 1) * ENTRY];
            let id = i64::from_be_bytes(e[0..8].try_into().ok()?);
            let epoch = i16::from_be_bytes(e[8..10].try_into().ok()?);
            let last_seq = i32::from_be_bytes(e[10..14].try_into().ok()?);
            let last_offset = i64::from_be_bytes(e[14..22].try_into().ok()?);
            let delta = i32::from_be_bytes(e[22..26].try_into().ok()?);
            let ts = i64::from_be_bytes(e[26..34].try_into().ok()?);
            // Our own file, but a damaged one must not break an invariant.
            if delta < 0 || last_offset < 0 {
                return None;
            }
            let meta = BatchMetadata {
                first_seq: last_seq.wrapping_sub(delta),
                last_seq,
                first_offset: last_offset.checked_sub(i64::from(delta))?,
                last_offset,
                max_timestamp: ts,
            };
            producers.insert(
                id,
                ProducerEntry {
                    epoch,
                    batches: VecDeque::from([meta]),
                    last_timestamp_ms: ts,
                },
            );
        }
        let state = Self { producers };
        state.check_invariants();
        Some(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(pid: i64, epoch: i16, first: i32, count: i32) -> ProducerBatch {
        ProducerBatch {
            producer_id: pid,
            epoch,
            first_seq: first,
            last_seq: first.wrapping_add(count - 1),
        }
    }

    fn meta(batch: &ProducerBatch, first_offset: i64) -> BatchMetadata {
        BatchMetadata {
            first_seq: batch.first_seq,
            last_seq: batch.last_seq,
            first_offset,
            last_offset: first_offset + batch.last_seq.wrapping_sub(batch.first_seq) as i64,
            max_timestamp: 1_000,
        }
    }

    /// State: producer 7 at epoch 2 has appended seq 0..=9 (offsets 100..=109)
    /// and 10..=14 (offsets 110..=114).
    fn state() -> ProducerStateManager {
        let mut s = ProducerStateManager::new();
        let b1 = b(7, 2, 0, 10);
        s.on_append(&b1, meta(&b1, 100), 1_000);
        let b2 = b(7, 2, 10, 5);
        s.on_append(&b2, meta(&b2, 110), 1_000);
        s
    }

    #[test]
    fn sequence_and_epoch_rules_follow_kafka() {
        let dup1 = meta(&b(7, 2, 0, 10), 100);
        let dup2 = meta(&b(7, 2, 10, 5), 110);
        // (case, batch, expected) — each row cites the Kafka behaviour.
        let table: Vec<(&str, ProducerBatch, Result<SeqCheck, ProducerError>)> = vec![
            (
                "non-idempotent batches (pid -1) skip all checks",
                b(-1, -1, -1, 3),
                Ok(SeqCheck::Append),
            ),
            (
                "next in sequence appends (ProducerAppendInfo.checkSequence)",
                b(7, 2, 15, 3),
                Ok(SeqCheck::Append),
            ),
            (
                "retry of the last batch is a duplicate (findDuplicateBatch)",
                b(7, 2, 10, 5),
                Ok(SeqCheck::Duplicate(dup2)),
            ),
            (
                "retry of an older cached batch is a duplicate too",
                b(7, 2, 0, 10),
                Ok(SeqCheck::Duplicate(dup1)),
            ),
            (
                "gap in sequence is OUT_OF_ORDER_SEQUENCE_NUMBER",
                b(7, 2, 16, 1),
                Err(ProducerError::OutOfOrderSequence),
            ),
            (
                "overlap that is not an exact retry is out of order",
                b(7, 2, 12, 5),
                Err(ProducerError::OutOfOrderSequence),
            ),
            (
                "older epoch is INVALID_PRODUCER_EPOCH (KIP-588)",
                b(7, 1, 15, 1),
                Err(ProducerError::InvalidProducerEpoch),
            ),
            (
                "new epoch starting at 0 appends (epoch bump)",
                b(7, 3, 0, 1),
                Ok(SeqCheck::Append),
            ),
            (
                "new epoch not starting at 0 is out of order",
                b(7, 3, 5, 1),
                Err(ProducerError::OutOfOrderSequence),
            ),
            (
                "unknown producer with any sequence appends (KIP-360)",
                b(8, 0, 42, 1),
                Ok(SeqCheck::Append),
            ),
        ];
        let s = state();
        for (case, batch, want) in table {
            assert_eq!(s.check(&batch), want, "{case}");
        }
    }

    #[test]
    fn sequence_wraps_from_max_to_zero() {
        let mut s = ProducerStateManager::new();
        let last = ProducerBatch {
            producer_id: 1,
            epoch: 0,
            first_seq: i32::MAX - 1,
            last_seq: i32::MAX,
        };
        s.on_append(&last, meta(&last, 0), 0);
        assert_eq!(s.check(&b(1, 0, 0, 1)), Ok(SeqCheck::Append));
    }

    #[test]
    fn only_the_last_five_batches_are_remembered() {
        let mut s = ProducerStateManager::new();
        for i in 0..7 {
            let x = b(1, 0, i, 1);
            s.on_append(&x, meta(&x, i as i64), 0);
        }
        assert_eq!(s.entry(1).map(|e| e.batches.len()), Some(BATCHES_KEPT));
        assert_eq!(
            s.check(&b(1, 0, 6, 1)),
            Ok(SeqCheck::Duplicate(meta(&b(1, 0, 6, 1), 6)))
        );
        // Batch seq 0 fell out of the window: no longer a duplicate.
        assert_eq!(
            s.check(&b(1, 0, 0, 1)),
            Err(ProducerError::OutOfOrderSequence)
        );
    }

    #[test]
    fn epoch_bump_resets_the_batch_window() {
        let mut s = state();
        let x = b(7, 3, 0, 2);
        s.on_append(&x, meta(&x, 200), 2_000);
        let e = s.entry(7).expect("entry");
        assert_eq!((e.epoch, e.batches.len()), (3, 1));
    }

    #[test]
    fn expiration_drops_idle_producers() {
        let mut s = state();
        assert_eq!(
            s.remove_expired(
                1_000 + DEFAULT_PRODUCER_ID_EXPIRATION_MS - 1,
                DEFAULT_PRODUCER_ID_EXPIRATION_MS
            ),
            0
        );
        assert_eq!(
            s.remove_expired(
                1_000 + DEFAULT_PRODUCER_ID_EXPIRATION_MS,
                DEFAULT_PRODUCER_ID_EXPIRATION_MS
            ),
            1
        );
        assert!(s.is_empty());
    }

    #[test]
    fn truncation_forgets_batches_past_the_offset() {
        let mut s = state();
        s.truncate_to(110);
        assert_eq!(
            s.check(&b(7, 2, 10, 5)),
            Ok(SeqCheck::Append),
            "seq 10 is next again"
        );
        s.truncate_to(50);
        assert!(s.is_empty());
    }

    #[test]
    fn snapshot_round_trips_the_last_batch_per_producer() {
        let s = state();
        let bytes = s.encode_snapshot();
        let back = ProducerStateManager::decode_snapshot(&bytes).expect("decode");
        assert_eq!(
            back.check(&b(7, 2, 10, 5)),
            Ok(SeqCheck::Duplicate(meta(&b(7, 2, 10, 5), 110)))
        );
        assert_eq!(back.check(&b(7, 2, 15, 1)), Ok(SeqCheck::Append));
    }

    #[test]
    fn damaged_snapshot_is_rejected() {
        let mut bytes = state().encode_snapshot();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        assert!(ProducerStateManager::decode_snapshot(&bytes).is_none());
        assert!(ProducerStateManager::decode_snapshot(&bytes[..3]).is_none());
        assert!(ProducerStateManager::decode_snapshot(&[]).is_none());
    }

    fn logged(pid: i64, epoch: i16, first_seq: i32, count: i32, base: i64) -> LoggedBatch {
        LoggedBatch {
            base_offset: base,
            last_offset_delta: count - 1,
            max_timestamp: 5_000,
            producer_id: pid,
            producer_epoch: epoch,
            base_sequence: first_seq,
            is_control: false,
        }
    }

    #[test]
    fn replaying_the_log_rebuilds_duplicate_detection() {
        let log = [
            logged(7, 0, 0, 3, 0),
            logged(-1, -1, -1, 2, 3),
            logged(8, 1, 0, 1, 5),
            logged(7, 0, 3, 2, 6),
            LoggedBatch {
                is_control: true,
                ..logged(8, 1, -1, 1, 8)
            },
        ];
        let mut s = ProducerStateManager::new();
        for l in &log {
            s.on_replay(l);
        }
        assert_eq!(s.len(), 2, "control and non-idempotent batches add nobody");
        let retry = s.check(&b(7, 0, 3, 2));
        let Ok(SeqCheck::Duplicate(m)) = retry else {
            panic!("retry of a replayed batch must be a duplicate: {retry:?}");
        };
        assert_eq!((m.first_offset, m.last_offset), (6, 7));
        assert_eq!(s.check(&b(7, 0, 5, 1)), Ok(SeqCheck::Append));
        assert_eq!(
            s.check(&b(7, 0, 6, 1)),
            Err(ProducerError::OutOfOrderSequence)
        );
        assert_eq!(s.check(&b(8, 1, 1, 1)), Ok(SeqCheck::Append));
        assert_eq!(
            s.check(&b(8, 0, 1, 1)),
            Err(ProducerError::InvalidProducerEpoch)
        );
        assert_eq!(s.entry(7).map(|e| e.last_timestamp_ms), Some(5_000));
    }

    /// A producer's appends: (producer id, epoch bump?, record count).
    fn appends() -> impl proptest::strategy::Strategy<Value = Vec<(i64, bool, i32)>> {
        proptest::collection::vec((1i64..4, proptest::bool::weighted(0.1), 1i32..20), 1..40)
    }

    proptest::proptest! {
        #[test]
        fn snapshot_plus_replay_of_the_tail_equals_the_live_state(
            ops in appends(),
            cut_at in 0usize..40,
        ) {
            // Live: every batch goes through check + on_append. Log: the
            // same batches as headers. Rebuilt: snapshot of the first
            // `cut` batches, decoded, then the rest replayed.
            let mut live = ProducerStateManager::new();
            let mut log = Vec::new();
            let mut next: BTreeMap<i64, (i16, i32)> = BTreeMap::new();
            let mut offset = 0i64;
            for (pid, bump, count) in ops {
                let (epoch, seq) = next.entry(pid).or_insert((0, 0));
                if bump {
                    *epoch += 1;
                    *seq = 0;
                }
                let l = LoggedBatch { max_timestamp: offset, ..logged(pid, *epoch, *seq, count, offset) };
                let batch = b(pid, *epoch, *seq, count);
                proptest::prop_assert_eq!(live.check(&batch), Ok(SeqCheck::Append));
                live.on_append(&batch, BatchMetadata { max_timestamp: offset, ..meta(&batch, offset) }, offset);
                log.push(l);
                *seq += count;
                offset += i64::from(count);
            }
            let cut = cut_at.min(log.len());
            let mut head = ProducerStateManager::new();
            log[..cut].iter().for_each(|l| head.on_replay(l));
            let mut rebuilt = ProducerStateManager::decode_snapshot(&head.encode_snapshot())
                .expect("own snapshot decodes");
            log[cut..].iter().for_each(|l| rebuilt.on_replay(l));
            proptest::prop_assert_eq!(rebuilt.len(), live.len());
            for (pid, (epoch, seq)) in &next {
                let entry = live.entry(*pid).expect("live entry");
                let last = *entry.batches.back().expect("a batch");
                let again = ProducerBatch { producer_id: *pid, epoch: *epoch, first_seq: last.first_seq, last_seq: last.last_seq };
                proptest::prop_assert_eq!(rebuilt.check(&again), Ok(SeqCheck::Duplicate(last)));
                proptest::prop_assert_eq!(rebuilt.check(&b(*pid, *epoch, *seq, 1)), Ok(SeqCheck::Append));
                proptest::prop_assert_eq!(rebuilt.check(&b(*pid, *epoch, seq + 1, 1)), Err(ProducerError::OutOfOrderSequence));
                proptest::prop_assert_eq!(rebuilt.entry(*pid).map(|e| (e.epoch, e.last_timestamp_ms)), Some((entry.epoch, entry.last_timestamp_ms)));
            }
        }
    }

    #[test]
    fn snapshot_with_an_impossible_entry_is_rejected() {
        let mut s = ProducerStateManager::new();
        let x = b(3, 0, 0, 2);
        s.on_append(&x, meta(&x, 10), 0);
        let mut bytes = s.encode_snapshot();
        // offset_delta at body offset 4 + 22: make it negative, fix the CRC.
        bytes[6 + 4 + 22..6 + 4 + 26].copy_from_slice(&(-5i32).to_be_bytes());
        let crc = crc32c::crc32c(&bytes[6..]);
        bytes[2..6].copy_from_slice(&crc.to_be_bytes());
        assert!(ProducerStateManager::decode_snapshot(&bytes).is_none());
    }

    proptest::proptest! {
        #[test]
        fn snapshot_decoder_never_panics(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            let _ = ProducerStateManager::decode_snapshot(&data);
        }
    }
}
