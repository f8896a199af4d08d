//! `[pure]` What the cleaner keeps of one batch, and the rewritten batch
//! (Kafka 3.9 `LogCleaner.cleanInto`'s `RecordFilter`, `shouldRetainRecord`,
//! and `MemoryRecords.filterTo` / `buildRetainedRecordsInto`).
//!
//! Per record (`shouldRetainRecord`): a record past the offset map's latest
//! offset is kept (the dirty part this round did not map); a record
//! without a key is dropped (a compacted topic refuses them on produce); a
//! keyed record is kept when its offset is at least the map's offset for
//! its key, and, if it is a tombstone (null value), only while its batch
//! has no delete horizon or the horizon is still ahead of now.
//!
//! Per batch (`checkBatchRetention`, `filterTo`):
//! - a control batch ([`filter_marker`]) is kept as it is while the
//!   transaction tracker (`txn::CleanedTxnMetadata`) says data of its
//!   transaction is left. Once it may go (`canDiscardBatch`), it first gets
//!   a delete horizon (`containsMarkerForEmptyTxn`: now +
//!   `delete.retention.ms`, as tombstones do) so that consumers reading the
//!   log meanwhile still see it, and a clean past the horizon drops it; an
//!   emptied control batch goes at once. The data of aborted transactions
//!   is dropped by the driver, on the tracker's word, before this filter;
//! - every record kept and no delete horizon to set: the original bytes;
//! - some records kept: a new batch with the same base offset,
//!   lastOffsetDelta (`overrideLastOffset`: the producer's last sequence
//!   stays), partition leader epoch, producer id/epoch, base sequence,
//!   attributes and codec; its base timestamp is the first kept record's
//!   timestamp, or the delete horizon when one is set (KIP-534: a batch
//!   keeping tombstones and lacking a horizon gets now +
//!   `delete.retention.ms`, marked by attribute bit 6);
//! - nothing kept, and the batch is the last one of a producer that is
//!   still active (`isBatchLastRecordOfProducer`: the batch holding its
//!   last data offset, or, when its last entry is a marker, a control batch
//!   of its epoch): an empty batch of header only
//!   (`DefaultRecordBatch.writeEmptyHeader`), so the producer's sequence
//!   and epoch survive for idempotence and fencing;
//! - nothing kept otherwise: the batch goes.

use std::collections::BTreeMap;

use super::offset_map::OffsetMap;
use crate::protocol::record_batch::{BatchError, RecordBatch, CRC_START, HEADER_LEN};
use crate::protocol::varint::{put_varint, read_varint};

/// Attribute bits (Kafka `DefaultRecordBatch`).
const COMPRESSION_MASK: i16 = 0x07;
const TIMESTAMP_TYPE_BIT: i16 = 0x08;
const TRANSACTIONAL_BIT: i16 = 0x10;
const CONTROL_BIT: i16 = 0x20;
const DELETE_HORIZON_BIT: i16 = 0x40;

/// One record of an uncompressed records section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordView<'a> {
    pub offset: i64,
    /// `baseTimestamp + timestampDelta`.
    pub timestamp: i64,
    pub offset_delta: i64,
    pub attributes: u8,
    pub key: Option<&'a [u8]>,
    pub has_value: bool,
    /// Key length through the headers: copied unchanged when rewritten.
    pub tail: &'a [u8],
}

fn corrupt(what: &'static str) -> BatchError {
    BatchError::Corrupt(what)
}

fn varint_at(b: &[u8], at: &mut usize) -> Result<i64, BatchError> {
    let (v, n) = read_varint(b.get(*at..).unwrap_or(&[])).ok_or(corrupt("cut-off varint"))?;
    *at += n;
    Ok(v)
}

/// Bytes `[at, at + len)` of `b` for a length read from a varint (-1 = null).
fn bytes_at<'a>(b: &'a [u8], at: &mut usize, len: i64) -> Result<Option<&'a [u8]>, BatchError> {
    if len < 0 {
        return Ok(None);
    }
    let end = at
        .checked_add(usize::try_from(len).map_err(|_| corrupt("field length"))?)
        .ok_or(corrupt("field length"))?;
    let out = b.get(*at..end).ok_or(corrupt("field past the record"))?;
    *at = end;
    Ok(Some(out))
}

/// Parse `count` records (Kafka `DefaultRecord`: length, attributes,
/// timestampDelta, offsetDelta, key, value, headers) from `body`.
pub fn parse_records(
    body: &[u8],
    count: i32,
    base_offset: i64,
    base_timestamp: i64,
) -> Result<Vec<RecordView<'_>>, BatchError> {
    let mut out = Vec::with_capacity(usize::try_from(count).unwrap_or(0).min(body.len()));
    let mut at = 0usize;
    for _ in 0..count.max(0) {
        let len = varint_at(body, &mut at)?;
        let record = bytes_at(body, &mut at, len)?.ok_or(corrupt("negative record length"))?;
        let mut r = 0usize;
        let attributes = *record.first().ok_or(corrupt("empty record"))?;
        r += 1;
        let ts_delta = varint_at(record, &mut r)?;
        let offset_delta = varint_at(record, &mut r)?;
        let tail = &record[r..];
        let key_len = varint_at(record, &mut r)?;
        let key = bytes_at(record, &mut r, key_len)?;
        let value_len = varint_at(record, &mut r)?;
        let value = bytes_at(record, &mut r, value_len)?;
        out.push(RecordView {
            offset: base_offset.wrapping_add(offset_delta),
            timestamp: base_timestamp.wrapping_add(ts_delta),
            offset_delta,
            attributes,
            key,
            has_value: value.is_some(),
            tail,
        });
    }
    if at != body.len() {
        return Err(corrupt("bytes after the last record"));
    }
    Ok(out)
}

/// An active producer's last entry in the log (Kafka's `LastRecord`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastRecord {
    /// Last offset of its last data batch; `None` when a marker of a new
    /// epoch came after it (the epoch change cleared its batches).
    pub last_data_offset: Option<i64>,
    pub producer_epoch: i16,
}

/// What decides a record's fate in one cleaning round.
#[derive(Debug, Clone, Copy)]
pub struct RetainRules<'a> {
    pub map: &'a OffsetMap,
    pub now_ms: i64,
    pub delete_retention_ms: i64,
    /// Each active producer's last entry (Kafka's
    /// `lastRecordsOfActiveProducers`).
    pub last_records: &'a BTreeMap<i64, LastRecord>,
}

impl RetainRules<'_> {
    /// Kafka's `isBatchLastRecordOfProducer`: the batch an active
    /// producer's state needs kept, even emptied. The one holding its last
    /// data offset (its last sequence), or, when its last entry is a
    /// marker, a control batch of its epoch (for fencing).
    pub fn is_last_batch_of_producer(&self, view: &RecordBatch<'_>) -> bool {
        if view.producer_id() < 0 {
            return false;
        }
        self.last_records
            .get(&view.producer_id())
            .is_some_and(|last| match last.last_data_offset {
                Some(offset) => view.last_offset() == offset,
                None => view.is_control() && view.producer_epoch() == last.producer_epoch,
            })
    }
}

/// The batch-level facts the record rule needs.
#[derive(Debug, Clone, Copy)]
struct BatchFacts {
    delete_horizon_ms: Option<i64>,
}

/// Kafka's `Cleaner.shouldRetainRecord`.
fn should_retain(rules: &RetainRules<'_>, batch: BatchFacts, r: &RecordView<'_>) -> bool {
    if r.offset > rules.map.latest_offset() {
        return true;
    }
    let Some(key) = r.key else {
        return false;
    };
    let latest_for_key = r.offset >= rules.map.get(key);
    let retain_deletes = batch.delete_horizon_ms.is_none_or(|h| rules.now_ms < h);
    latest_for_key && (r.has_value || retain_deletes)
}

/// A batch rewritten with fewer records; its records section is still
/// uncompressed (the caller compresses it with the batch's codec, then
/// calls [`encode_batch`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewrite {
    pub records: Vec<u8>,
    pub count: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub delete_horizon: bool,
}

/// One batch's fate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Write the batch as it was.
    KeepOriginal,
    Rewrite(Rewrite),
    /// Write only a header (the last batch of an active producer).
    Empty(Vec<u8>),
    Drop,
}

/// [`filter_batch`]'s answer: the fate and what it kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filtered {
    pub outcome: Outcome,
    pub records_read: u64,
    pub records_kept: u64,
    /// The delete horizon of the written batch when it keeps tombstones or
    /// a marker that may go: a later round can drop them once it passes.
    pub pending_delete_horizon_ms: Option<i64>,
}

/// Decide a control batch (Kafka's `checkBatchRetention` for a control
/// batch, and `filterTo` with `containsMarkerForEmptyTxn`). `can_discard`
/// is the transaction tracker's answer (`canDiscardBatch`): no data of the
/// marker's transaction is left.
pub fn filter_marker(
    batch: &[u8],
    body: &[u8],
    rules: &RetainRules<'_>,
    can_discard: bool,
) -> Result<Filtered, BatchError> {
    let view = RecordBatch::new_unchecked_crc(batch)?;
    let count = view.record_count().max(0) as u64;
    let horizon = view.has_delete_horizon().then(|| view.base_timestamp());
    let mut out = Filtered {
        outcome: Outcome::KeepOriginal,
        records_read: count,
        records_kept: count,
        pending_delete_horizon_ms: None,
    };
    // Kafka's `discardBatchRecords` for a control batch: it may go and its
    // horizon has passed. An emptied control batch keeps no record either.
    if (can_discard && horizon.is_some_and(|h| h <= rules.now_ms)) || count == 0 {
        out.records_kept = 0;
        out.outcome = if rules.is_last_batch_of_producer(&view) {
            Outcome::Empty(empty_header(batch))
        } else {
            Outcome::Drop
        };
        return Ok(out);
    }
    if !can_discard {
        return Ok(out);
    }
    if let Some(h) = horizon {
        out.pending_delete_horizon_ms = Some(h);
        return Ok(out);
    }
    let h = rules.now_ms.saturating_add(rules.delete_retention_ms);
    let records = parse_records(
        body,
        view.record_count(),
        view.base_offset(),
        view.base_timestamp(),
    )?;
    let kept: Vec<&RecordView<'_>> = records.iter().collect();
    out.outcome = Outcome::Rewrite(rewrite(&view, &kept, Some(h), body.len()));
    out.pending_delete_horizon_ms = Some(h);
    Ok(out)
}

/// Decide a data `batch` (a stored v2 batch; `body` its records,
/// decompressed). A control batch is kept ([`filter_marker`] decides
/// those with the transaction tracker's answer).
pub fn filter_batch(
    batch: &[u8],
    body: &[u8],
    rules: &RetainRules<'_>,
) -> Result<Filtered, BatchError> {
    let view = RecordBatch::new_unchecked_crc(batch)?;
    let count = view.record_count();
    if view.is_control() {
        return filter_marker(batch, body, rules, false);
    }
    let facts = BatchFacts {
        delete_horizon_ms: view.has_delete_horizon().then(|| view.base_timestamp()),
    };
    let records = parse_records(body, count, view.base_offset(), view.base_timestamp())?;
    let kept: Vec<&RecordView<'_>> = records
        .iter()
        .filter(|r| should_retain(rules, facts, r))
        .collect();
    let tombstones = kept.iter().any(|r| !r.has_value);
    let mut out = Filtered {
        outcome: Outcome::Drop,
        records_read: records.len() as u64,
        records_kept: kept.len() as u64,
        pending_delete_horizon_ms: None,
    };
    if kept.is_empty() {
        if rules.is_last_batch_of_producer(&view) {
            out.outcome = Outcome::Empty(empty_header(batch));
        }
        return Ok(out);
    }
    let set_horizon = tombstones && facts.delete_horizon_ms.is_none();
    let horizon = if set_horizon {
        Some(rules.now_ms.saturating_add(rules.delete_retention_ms))
    } else {
        facts.delete_horizon_ms
    };
    if tombstones {
        out.pending_delete_horizon_ms = horizon;
    }
    if kept.len() == records.len() && !set_horizon {
        out.outcome = Outcome::KeepOriginal;
        return Ok(out);
    }
    out.outcome = Outcome::Rewrite(rewrite(&view, &kept, horizon, body.len()));
    Ok(out)
}

/// The kept records of `view` re-encoded (Kafka's
/// `buildRetainedRecordsInto`): the base timestamp is the delete horizon
/// when there is one (KIP-534), else the first kept record's; each
/// record's timestamp delta follows it. `kept` is not empty.
fn rewrite(
    view: &RecordBatch<'_>,
    kept: &[&RecordView<'_>],
    horizon: Option<i64>,
    body_len: usize,
) -> Rewrite {
    let base_timestamp = horizon.unwrap_or_else(|| kept.first().map_or(-1, |r| r.timestamp));
    let log_append_time = view.attributes() & TIMESTAMP_TYPE_BIT != 0;
    let max_timestamp = if log_append_time {
        view.max_timestamp()
    } else {
        kept.iter().map(|r| r.timestamp).max().unwrap_or(-1)
    };
    let mut body_out = Vec::with_capacity(body_len);
    let mut inner = Vec::with_capacity(64);
    for r in kept {
        inner.clear();
        inner.push(r.attributes);
        put_varint(&mut inner, r.timestamp.wrapping_sub(base_timestamp));
        put_varint(&mut inner, r.offset_delta);
        inner.extend_from_slice(r.tail);
        put_varint(&mut body_out, inner.len() as i64);
        body_out.extend_from_slice(&inner);
    }
    Rewrite {
        records: body_out,
        count: kept.len() as i32,
        base_timestamp,
        max_timestamp,
        delete_horizon: horizon.is_some(),
    }
}

fn put_at(buf: &mut [u8], at: usize, bytes: &[u8]) {
    buf[at..at + bytes.len()].copy_from_slice(bytes);
}

fn finish_crc(buf: &mut [u8]) {
    let crc = crc32c::crc32c(&buf[CRC_START..]);
    put_at(buf, 17, &crc.to_be_bytes());
}

/// The new batch: `original`'s header with `rewrite`'s count, timestamps
/// and delete-horizon bit, then `records` (already compressed with the
/// original's codec when it has one), with batchLength and CRC computed.
pub fn encode_batch(original: &[u8], rewrite: &Rewrite, records: &[u8]) -> Vec<u8> {
    reseal(original, records, |header| {
        let mut attrs = i16::from_be_bytes([header[21], header[22]]) & !DELETE_HORIZON_BIT;
        if rewrite.delete_horizon {
            attrs |= DELETE_HORIZON_BIT;
        }
        put_at(header, 21, &attrs.to_be_bytes());
        put_at(header, 27, &rewrite.base_timestamp.to_be_bytes());
        put_at(header, 35, &rewrite.max_timestamp.to_be_bytes());
        put_at(header, 57, &rewrite.count.to_be_bytes());
    })
}

/// `original`'s header over `records`: `edit` changes the header's other
/// fields, then batchLength and the CRC are computed for the new batch.
pub fn reseal(original: &[u8], records: &[u8], edit: impl FnOnce(&mut [u8])) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + records.len());
    out.extend_from_slice(&original[..HEADER_LEN]);
    out.extend_from_slice(records);
    let batch_length = (out.len() - 12) as i32;
    put_at(&mut out, 8, &batch_length.to_be_bytes());
    edit(&mut out[..HEADER_LEN]);
    finish_crc(&mut out);
    out
}

/// Kafka's `DefaultRecordBatch.writeEmptyHeader` for `original`: no
/// records, no codec, no delete horizon; both timestamps are the
/// original's max timestamp; offsets, producer fields, epoch and the
/// timestamp-type, transactional and control bits stay.
pub fn empty_header(original: &[u8]) -> Vec<u8> {
    let mut out = original[..HEADER_LEN].to_vec();
    put_at(&mut out, 8, &((HEADER_LEN - 12) as i32).to_be_bytes());
    let attrs = i16::from_be_bytes([original[21], original[22]])
        & (TIMESTAMP_TYPE_BIT | TRANSACTIONAL_BIT | CONTROL_BIT);
    put_at(&mut out, 21, &attrs.to_be_bytes());
    let max_ts = [
        original[35],
        original[36],
        original[37],
        original[38],
        original[39],
        original[40],
        original[41],
        original[42],
    ];
    put_at(&mut out, 27, &max_ts);
    put_at(&mut out, 57, &0i32.to_be_bytes());
    finish_crc(&mut out);
    out
}

/// The codec id of a batch (attributes bits 0-2).
pub fn codec_of(batch: &[u8]) -> i16 {
    i16::from_be_bytes([batch[21], batch[22]]) & COMPRESSION_MASK
}

#[cfg(test)]
#[path = "filter_tests.rs"]
mod tests;
