//! `[pure]` Transaction markers as Kafka stores them (KIP-98; Kafka's
//! `EndTransactionMarker`, `ControlRecordType`,
//! `MemoryRecords.withEndTransactionMarker`): a control batch
//! (attributes: transactional + control, no compression, base sequence
//! -1) holding one record whose key is `version i16 (0), type i16 (0 ABORT,
//! 1 COMMIT)` and whose value is `version i16 (0), coordinator_epoch i32`.

use bytes::BufMut;

use super::record_batch::{RecordBatch, HEADER_LEN, LOG_OVERHEAD, MAGIC_V2};
use super::varint::{put_varint, read_varint};

/// Kafka's `ControlRecordType` ids.
pub const ABORT: i16 = 0;
pub const COMMIT: i16 = 1;
const ATTRIBUTES: i16 = 0x10 | 0x20;

/// The marker of a control batch: `(commit, coordinator_epoch)`, or
/// `None` when `batch` is not a control batch, is compressed, is empty (the
/// cleaner emptied it) or its record is not a marker (a newer control type
/// Kafka's readers also skip).
pub fn read_marker(batch: &[u8]) -> Option<(bool, i32)> {
    let view = RecordBatch::new_unchecked_crc(batch).ok()?;
    if !view.is_control() || view.compression() != Some(super::record_batch::Compression::None) {
        return None;
    }
    if view.record_count() < 1 {
        return None;
    }
    let body = batch.get(HEADER_LEN..view.total_len())?;
    let mut at = 0usize;
    let varint = |at: &mut usize| {
        let (v, n) = read_varint(body.get(*at..)?)?;
        *at += n;
        Some(v)
    };
    let _len = varint(&mut at)?;
    at += 1; // attributes
    let _ts_delta = varint(&mut at)?;
    let _offset_delta = varint(&mut at)?;
    let key_len = usize::try_from(varint(&mut at)?).ok()?;
    let key = body.get(at..at.checked_add(key_len)?)?;
    at += key_len;
    if key.len() < 4 {
        return None;
    }
    let kind = i16::from_be_bytes([key[2], key[3]]);
    let value_len = usize::try_from(varint(&mut at)?).ok()?;
    let value = body.get(at..at.checked_add(value_len)?)?;
    if value.len() < 6 {
        return None;
    }
    let coordinator_epoch = i32::from_be_bytes([value[2], value[3], value[4], value[5]]);
    match kind {
        ABORT => Some((false, coordinator_epoch)),
        COMMIT => Some((true, coordinator_epoch)),
        _ => None,
    }
}

/// The control batch of one marker, base offset 0 (the log assigns it) and
/// partition leader epoch -1 (the leader stamps its own).
pub fn end_txn_marker_batch(
    producer_id: i64,
    producer_epoch: i16,
    coordinator_epoch: i32,
    commit: bool,
    timestamp_ms: i64,
) -> Vec<u8> {
    let mut record = Vec::with_capacity(24);
    record.put_i8(0); // attributes
    put_varint(&mut record, 0); // timestamp delta
    put_varint(&mut record, 0); // offset delta
    put_varint(&mut record, 4);
    record.put_i16(0);
    record.put_i16(if commit { COMMIT } else { ABORT });
    put_varint(&mut record, 6);
    record.put_i16(0);
    record.put_i32(coordinator_epoch);
    put_varint(&mut record, 0); // headers
    let mut b = Vec::with_capacity(HEADER_LEN + record.len() + 2);
    b.put_i64(0);
    b.put_i32(0); // batch length, below
    b.put_i32(-1);
    b.put_i8(MAGIC_V2);
    b.put_u32(0); // crc, below
    b.put_i16(ATTRIBUTES);
    b.put_i32(0); // last offset delta
    b.put_i64(timestamp_ms);
    b.put_i64(timestamp_ms);
    b.put_i64(producer_id);
    b.put_i16(producer_epoch);
    b.put_i32(-1);
    b.put_i32(1);
    put_varint(&mut b, record.len() as i64);
    b.extend_from_slice(&record);
    let batch_len = (b.len() - LOG_OVERHEAD) as i32;
    b[8..12].copy_from_slice(&batch_len.to_be_bytes());
    let crc = crc32c::crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_batch_validates_and_reads_back() {
        for commit in [true, false] {
            let b = end_txn_marker_batch(7, 3, 11, commit, 1_000);
            let v = RecordBatch::new(&b).unwrap();
            assert!(v.is_control() && v.is_transactional());
            assert_eq!((v.producer_id(), v.producer_epoch()), (7, 3));
            assert_eq!((v.base_sequence(), v.record_count()), (-1, 1));
            assert_eq!(v.total_len(), b.len());
            assert_eq!(read_marker(&b), Some((commit, 11)));
        }
    }

    #[test]
    fn kafka_decodes_our_marker_record() {
        // The same marker through the kafka-protocol crate's decoder
        // (an independent reading of Kafka's record format).
        let b = end_txn_marker_batch(9, 1, 4, true, 5);
        let mut buf = bytes::Bytes::from(b);
        let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut buf).unwrap();
        let r = &set.records[0];
        assert!(r.control && r.transactional);
        assert_eq!(r.key.as_deref(), Some(&[0u8, 0, 0, 1][..]));
        assert_eq!(r.value.as_deref(), Some(&[0u8, 0, 0, 0, 0, 4][..]));
    }

    #[test]
    fn data_batches_and_cut_bytes_are_no_marker() {
        let data = super::super::record_batch::build_test_batch(0, 1, 0, 0, 10, 1);
        assert_eq!(read_marker(&data), None);
        let b = end_txn_marker_batch(7, 3, 11, false, 1_000);
        for cut in 0..b.len() {
            let _ = read_marker(&b[..cut]);
        }
    }
}
