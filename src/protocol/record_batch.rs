//! `[pure]` Record batch (magic v2) view: validate, read header fields, patch offsets.
//!
//! Layout (Kafka `DefaultRecordBatch`, 61-byte header, big endian):
//!
//! | pos | field                | type |
//! |-----|----------------------|------|
//! | 0   | baseOffset           | i64  |
//! | 8   | batchLength          | i32  | bytes after this field
//! | 12  | partitionLeaderEpoch | i32  |
//! | 16  | magic                | i8   | = 2
//! | 17  | crc                  | u32  | CRC-32C of bytes 21..end
//! | 21  | attributes           | i16  |
//! | 23  | lastOffsetDelta      | i32  |
//! | 27  | baseTimestamp        | i64  |
//! | 35  | maxTimestamp         | i64  |
//! | 43  | producerId           | i64  |
//! | 51  | producerEpoch        | i16  |
//! | 53  | baseSequence         | i32  |
//! | 57  | recordCount          | i32  |
//!
//! The broker rewrites only `baseOffset` and `partitionLeaderEpoch`, which sit
//! before the CRC'd range, so offset assignment never recomputes the CRC. The
//! one exception is LogAppendTime (`message.timestamp.type`), where Kafka
//! overwrites `maxTimestamp` and the attributes and must recompute it.
//! Individual records are never parsed here.

use std::ops::Range;

/// Bytes before the records: the fixed v2 header.
pub const HEADER_LEN: usize = 61;
/// `baseOffset` + `batchLength`: the prefix not counted by `batchLength`.
pub const LOG_OVERHEAD: usize = 12;
/// Smallest legal `batchLength` (header without the 12-byte prefix).
pub const MIN_BATCH_LENGTH: i32 = (HEADER_LEN - LOG_OVERHEAD) as i32;
/// First byte covered by the CRC (the attributes field).
pub const CRC_START: usize = 21;
pub const MAGIC_V2: i8 = 2;

const BASE_OFFSET: usize = 0;
const BATCH_LENGTH: usize = 8;
const PARTITION_LEADER_EPOCH: usize = 12;
const MAGIC: usize = 16;
const CRC: usize = 17;
const ATTRIBUTES: usize = 21;
const LAST_OFFSET_DELTA: usize = 23;
const BASE_TIMESTAMP: usize = 27;
const MAX_TIMESTAMP: usize = 35;
const PRODUCER_ID: usize = 43;
const PRODUCER_EPOCH: usize = 51;
const BASE_SEQUENCE: usize = 53;
const RECORD_COUNT: usize = 57;

const COMPRESSION_MASK: i16 = 0x07;
const TIMESTAMP_TYPE_BIT: i16 = 0x08;
const TRANSACTIONAL_BIT: i16 = 0x10;
const CONTROL_BIT: i16 = 0x20;
const DELETE_HORIZON_BIT: i16 = 0x40;

/// Why a batch was refused. Mapping to Kafka error codes (done at the
/// protocol edge, see [`BatchError::kafka_error_code`]):
/// - `Corrupt`  → CORRUPT_MESSAGE (2): bad CRC, short buffer, length mismatch.
/// - `InvalidRecord` → INVALID_RECORD (87): well-formed bytes that break a
///   v2 rule (unknown magic, bad record count, unknown compression codec).
/// - `UnsupportedForMessageFormat` → UNSUPPORTED_FOR_MESSAGE_FORMAT (43):
///   legacy magic 0/1 message sets, which we do not store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    #[error("corrupt record batch: {0}")]
    Corrupt(&'static str),
    #[error("invalid record batch: {0}")]
    InvalidRecord(&'static str),
    #[error("unsupported message format (magic {0})")]
    UnsupportedForMessageFormat(i8),
}

impl BatchError {
    /// Kafka error code for this failure.
    pub fn kafka_error_code(&self) -> i16 {
        match self {
            BatchError::Corrupt(_) => 2,
            BatchError::InvalidRecord(_) => 87,
            BatchError::UnsupportedForMessageFormat(_) => 43,
        }
    }
}

/// `attributes` bits 0..2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

/// `attributes` bit 3 (`message.timestamp.type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampType {
    CreateTime,
    LogAppendTime,
}

fn be_i64(b: &[u8], at: usize) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    i64::from_be_bytes(a)
}
fn be_i32(b: &[u8], at: usize) -> i32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    i32::from_be_bytes(a)
}
fn be_u32(b: &[u8], at: usize) -> u32 {
    be_i32(b, at) as u32
}
fn be_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}

/// Total size (12 + batchLength) announced by a header prefix, if at least
/// 12 bytes are present and the length is plausible. Used by scanners to know
/// how many bytes to wait for.
pub fn peek_total_len(buf: &[u8]) -> Result<Option<usize>, BatchError> {
    if buf.len() < LOG_OVERHEAD {
        return Ok(None);
    }
    let len = be_i32(buf, BATCH_LENGTH);
    if len < MIN_BATCH_LENGTH {
        return Err(BatchError::Corrupt("batchLength below the v2 header size"));
    }
    Ok(Some(LOG_OVERHEAD + len as usize))
}

/// Read-only view over exactly one validated v2 batch.
#[derive(Debug, Clone, Copy)]
pub struct RecordBatch<'a> {
    buf: &'a [u8],
}

impl<'a> RecordBatch<'a> {
    /// Validate `buf` as exactly one batch: length, magic, CRC-32C.
    pub fn new(buf: &'a [u8]) -> Result<Self, BatchError> {
        let total = peek_total_len(buf)?.ok_or(BatchError::Corrupt("shorter than log overhead"))?;
        if buf.len() < HEADER_LEN {
            return Err(BatchError::Corrupt("shorter than the v2 header"));
        }
        if total != buf.len() {
            return Err(BatchError::Corrupt("batchLength does not match the buffer"));
        }
        Self::check_magic(buf[MAGIC] as i8)?;
        let batch = RecordBatch { buf };
        if crc32c::crc32c(&buf[CRC_START..]) != batch.crc() {
            return Err(BatchError::Corrupt("CRC-32C mismatch"));
        }
        Ok(batch)
    }

    /// Header-only view: length and magic checked, CRC not. For scans of
    /// bytes this broker already validated (read path walking a segment).
    pub fn new_unchecked_crc(buf: &'a [u8]) -> Result<Self, BatchError> {
        let total = peek_total_len(buf)?.ok_or(BatchError::Corrupt("shorter than log overhead"))?;
        if buf.len() < HEADER_LEN || total != buf.len() {
            return Err(BatchError::Corrupt("batchLength does not match the buffer"));
        }
        Self::check_magic(buf[MAGIC] as i8)?;
        Ok(RecordBatch { buf })
    }

    fn check_magic(magic: i8) -> Result<(), BatchError> {
        match magic {
            MAGIC_V2 => Ok(()),
            0 | 1 => Err(BatchError::UnsupportedForMessageFormat(magic)),
            _ => Err(BatchError::InvalidRecord("unknown magic")),
        }
    }

    /// Extra rules Kafka's LogValidator applies to batches from clients:
    /// a known codec, at least one record, and `recordCount` consistent
    /// with `lastOffsetDelta`.
    pub fn validate_for_append(&self) -> Result<(), BatchError> {
        if self.compression().is_none() {
            return Err(BatchError::InvalidRecord("unknown compression codec"));
        }
        let count = self.record_count();
        if count <= 0 {
            return Err(BatchError::InvalidRecord("record batch holds no records"));
        }
        if self.last_offset_delta() < 0
            || i64::from(self.last_offset_delta()) + 1 != i64::from(count)
        {
            return Err(BatchError::InvalidRecord(
                "recordCount disagrees with lastOffsetDelta",
            ));
        }
        Ok(())
    }

    pub fn as_bytes(&self) -> &'a [u8] {
        self.buf
    }
    pub fn total_len(&self) -> usize {
        self.buf.len()
    }
    pub fn base_offset(&self) -> i64 {
        be_i64(self.buf, BASE_OFFSET)
    }
    pub fn batch_length(&self) -> i32 {
        be_i32(self.buf, BATCH_LENGTH)
    }
    pub fn partition_leader_epoch(&self) -> i32 {
        be_i32(self.buf, PARTITION_LEADER_EPOCH)
    }
    pub fn magic(&self) -> i8 {
        self.buf[MAGIC] as i8
    }
    pub fn crc(&self) -> u32 {
        be_u32(self.buf, CRC)
    }
    pub fn attributes(&self) -> i16 {
        be_i16(self.buf, ATTRIBUTES)
    }
    /// `None` for codec ids 5..7, which Kafka does not define.
    pub fn compression(&self) -> Option<Compression> {
        match self.attributes() & COMPRESSION_MASK {
            0 => Some(Compression::None),
            1 => Some(Compression::Gzip),
            2 => Some(Compression::Snappy),
            3 => Some(Compression::Lz4),
            4 => Some(Compression::Zstd),
            _ => None,
        }
    }
    pub fn timestamp_type(&self) -> TimestampType {
        if self.attributes() & TIMESTAMP_TYPE_BIT != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }
    pub fn is_transactional(&self) -> bool {
        self.attributes() & TRANSACTIONAL_BIT != 0
    }
    pub fn is_control(&self) -> bool {
        self.attributes() & CONTROL_BIT != 0
    }
    pub fn has_delete_horizon(&self) -> bool {
        self.attributes() & DELETE_HORIZON_BIT != 0
    }
    pub fn last_offset_delta(&self) -> i32 {
        be_i32(self.buf, LAST_OFFSET_DELTA)
    }
    /// `baseOffset + lastOffsetDelta` (saturating: arbitrary bytes may hold anything).
    pub fn last_offset(&self) -> i64 {
        self.base_offset()
            .saturating_add(i64::from(self.last_offset_delta()))
    }
    pub fn base_timestamp(&self) -> i64 {
        be_i64(self.buf, BASE_TIMESTAMP)
    }
    pub fn max_timestamp(&self) -> i64 {
        be_i64(self.buf, MAX_TIMESTAMP)
    }
    pub fn producer_id(&self) -> i64 {
        be_i64(self.buf, PRODUCER_ID)
    }
    pub fn producer_epoch(&self) -> i16 {
        be_i16(self.buf, PRODUCER_EPOCH)
    }
    pub fn base_sequence(&self) -> i32 {
        be_i32(self.buf, BASE_SEQUENCE)
    }
    pub fn record_count(&self) -> i32 {
        be_i32(self.buf, RECORD_COUNT)
    }
}

/// Write `baseOffset` in place (outside the CRC'd range). Callers pass
/// validated batches; a buffer shorter than a header is left untouched.
pub fn set_base_offset(buf: &mut [u8], base_offset: i64) {
    if buf.len() < HEADER_LEN {
        return;
    }
    buf[BASE_OFFSET..BASE_OFFSET + 8].copy_from_slice(&base_offset.to_be_bytes());
}

/// Write `partitionLeaderEpoch` in place (outside the CRC'd range).
pub fn set_partition_leader_epoch(buf: &mut [u8], epoch: i32) {
    if buf.len() < HEADER_LEN {
        return;
    }
    buf[PARTITION_LEADER_EPOCH..PARTITION_LEADER_EPOCH + 4].copy_from_slice(&epoch.to_be_bytes());
}

/// LogAppendTime (`message.timestamp.type=LogAppendTime`): set the timestamp
/// type bit and `maxTimestamp`, both covered by the CRC, so recompute it.
pub fn set_log_append_time(buf: &mut [u8], timestamp_ms: i64) {
    if buf.len() < HEADER_LEN {
        return;
    }
    let attrs = be_i16(buf, ATTRIBUTES) | TIMESTAMP_TYPE_BIT;
    buf[ATTRIBUTES..ATTRIBUTES + 2].copy_from_slice(&attrs.to_be_bytes());
    buf[MAX_TIMESTAMP..MAX_TIMESTAMP + 8].copy_from_slice(&timestamp_ms.to_be_bytes());
    let crc = crc32c::crc32c(&buf[CRC_START..]);
    buf[CRC..CRC + 4].copy_from_slice(&crc.to_be_bytes());
}

/// Iterates consecutive validated batches in a buffer (a produce request's
/// `records` field may hold several). Yields `(byte range, batch)`; after the
/// first error it yields that error once and stops.
pub struct BatchIter<'a> {
    buf: &'a [u8],
    pos: usize,
    failed: bool,
}

impl<'a> BatchIter<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        BatchIter {
            buf,
            pos: 0,
            failed: false,
        }
    }
}

impl<'a> Iterator for BatchIter<'a> {
    type Item = Result<(Range<usize>, RecordBatch<'a>), BatchError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.buf.len() {
            return None;
        }
        let rest = &self.buf[self.pos..];
        let total = match peek_total_len(rest) {
            Ok(Some(t)) if t <= rest.len() => t,
            Ok(_) => {
                self.failed = true;
                return Some(Err(BatchError::Corrupt("truncated record batch")));
            }
            Err(e) => {
                self.failed = true;
                return Some(Err(e));
            }
        };
        let range = self.pos..self.pos + total;
        match RecordBatch::new(&self.buf[range.clone()]) {
            Ok(b) => {
                self.pos = range.end;
                Some(Ok((range, b)))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// Summary of one validated batch, for the append path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchSummary {
    pub range: Range<usize>,
    pub record_count: i32,
    pub last_offset_delta: i32,
    pub max_timestamp: i64,
}

/// Validate every batch in a produce request's `records` (structure, CRC and
/// Kafka's client-origin rules) before anything is appended.
pub fn validate_all_for_append(buf: &[u8]) -> Result<Vec<BatchSummary>, BatchError> {
    if buf.is_empty() {
        return Err(BatchError::Corrupt("empty records"));
    }
    let mut out = Vec::new();
    for item in BatchIter::new(buf) {
        let (range, batch) = item?;
        batch.validate_for_append()?;
        out.push(BatchSummary {
            range,
            record_count: batch.record_count(),
            last_offset_delta: batch.last_offset_delta(),
            max_timestamp: batch.max_timestamp(),
        });
    }
    Ok(out)
}

/// Which of Kafka's `BrokerTopicMetrics` meters a refusal of produced
/// records marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalMeter {
    /// `InvalidMessageCrcRecordsPerSec` (`UnifiedLog.analyzeAndValidateRecords`
    /// checks every batch's CRC first).
    InvalidMessageCrc,
    /// `InvalidOffsetOrSequenceRecordsPerSec` (`LogValidator.validateBatch`:
    /// an offset range of no records, a record count of none, or the two
    /// disagreeing).
    InvalidOffsetOrSequence,
}

/// The meter `buf`'s refusal by [`validate_all_for_append`] marks, if any:
/// a whole v2 batch whose CRC-32C does not match, else one whose record
/// count and offset range disagree. Bytes that are no whole batches
/// (Kafka's `CorruptRecordException` from reading them) and unknown codecs
/// mark nothing.
pub fn refusal_meter(buf: &[u8]) -> Option<RefusalMeter> {
    let mut batches = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let rest = &buf[pos..];
        let total = match peek_total_len(rest) {
            Ok(Some(t)) if t <= rest.len() => t,
            _ => break,
        };
        let Ok(batch) = RecordBatch::new_unchecked_crc(&rest[..total]) else {
            break;
        };
        if crc32c::crc32c(&rest[CRC_START..total]) != batch.crc() {
            return Some(RefusalMeter::InvalidMessageCrc);
        }
        batches.push(batch);
        pos += total;
    }
    batches
        .iter()
        .any(|b| {
            b.record_count() <= 0
                || i64::from(b.last_offset_delta()) + 1 != i64::from(b.record_count())
        })
        .then_some(RefusalMeter::InvalidOffsetOrSequence)
}

/// Build a valid v2 batch with `record_count` opaque records payload (test
/// and benchmark helper: records are not parsed by the broker, so the payload
/// is `payload_len` filler bytes).
pub fn build_test_batch(
    base_offset: i64,
    record_count: i32,
    base_timestamp: i64,
    max_timestamp: i64,
    payload_len: usize,
    fill: u8,
) -> Vec<u8> {
    let total = HEADER_LEN + payload_len;
    let mut b = vec![0u8; total];
    b[BASE_OFFSET..8].copy_from_slice(&base_offset.to_be_bytes());
    b[BATCH_LENGTH..12].copy_from_slice(&((total - LOG_OVERHEAD) as i32).to_be_bytes());
    b[PARTITION_LEADER_EPOCH..16].copy_from_slice(&(-1i32).to_be_bytes());
    b[MAGIC] = MAGIC_V2 as u8;
    b[LAST_OFFSET_DELTA..27].copy_from_slice(&(record_count - 1).to_be_bytes());
    b[BASE_TIMESTAMP..35].copy_from_slice(&base_timestamp.to_be_bytes());
    b[MAX_TIMESTAMP..43].copy_from_slice(&max_timestamp.to_be_bytes());
    b[PRODUCER_ID..51].copy_from_slice(&(-1i64).to_be_bytes());
    b[PRODUCER_EPOCH..53].copy_from_slice(&(-1i16).to_be_bytes());
    b[BASE_SEQUENCE..57].copy_from_slice(&(-1i32).to_be_bytes());
    b[RECORD_COUNT..61].copy_from_slice(&record_count.to_be_bytes());
    for (i, x) in b[HEADER_LEN..].iter_mut().enumerate() {
        *x = fill.wrapping_add(i as u8);
    }
    let crc = crc32c::crc32c(&b[CRC_START..]);
    b[CRC..CRC + 4].copy_from_slice(&crc.to_be_bytes());
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_refusal_marks_the_crc_meter_before_the_offsets_one() {
        let good = build_test_batch(0, 3, 1000, 1002, 40, 7);
        assert_eq!(refusal_meter(&good), None);
        let mut bad_crc = good.clone();
        bad_crc[HEADER_LEN + 1] ^= 1;
        assert_eq!(
            refusal_meter(&bad_crc),
            Some(RefusalMeter::InvalidMessageCrc)
        );
        // recordCount 4 with lastOffsetDelta 2, its CRC recomputed.
        let mut count = good.clone();
        count[RECORD_COUNT..RECORD_COUNT + 4].copy_from_slice(&4i32.to_be_bytes());
        let crc = crc32c::crc32c(&count[CRC_START..]);
        count[CRC..CRC + 4].copy_from_slice(&crc.to_be_bytes());
        assert!(validate_all_for_append(&count).is_err());
        assert_eq!(
            refusal_meter(&count),
            Some(RefusalMeter::InvalidOffsetOrSequence)
        );
        // A second batch with a bad CRC wins over the first one's count.
        let mut both = count.clone();
        both.extend_from_slice(&bad_crc);
        assert_eq!(refusal_meter(&both), Some(RefusalMeter::InvalidMessageCrc));
        // Bytes that are no batch mark nothing.
        assert_eq!(refusal_meter(&good[..20]), None);
    }

    #[test]
    fn built_batch_validates_and_exposes_header_fields() {
        let b = build_test_batch(5, 3, 1000, 1002, 40, 7);
        let v = RecordBatch::new(&b).unwrap();
        assert_eq!(v.base_offset(), 5);
        assert_eq!(v.last_offset(), 7);
        assert_eq!(v.record_count(), 3);
        assert_eq!(v.batch_length() as usize, b.len() - 12);
        assert_eq!(v.magic(), 2);
        assert_eq!(v.base_timestamp(), 1000);
        assert_eq!(v.max_timestamp(), 1002);
        assert_eq!(v.producer_id(), -1);
        assert_eq!(v.producer_epoch(), -1);
        assert_eq!(v.base_sequence(), -1);
        assert_eq!(v.partition_leader_epoch(), -1);
        assert_eq!(v.compression(), Some(Compression::None));
        assert_eq!(v.timestamp_type(), TimestampType::CreateTime);
        assert!(!v.is_transactional() && !v.is_control() && !v.has_delete_horizon());
        v.validate_for_append().unwrap();
    }

    #[test]
    fn patching_offset_and_epoch_keeps_crc_valid() {
        let mut b = build_test_batch(0, 2, 1, 2, 10, 1);
        set_base_offset(&mut b, 1234);
        set_partition_leader_epoch(&mut b, 9);
        let v = RecordBatch::new(&b).unwrap();
        assert_eq!((v.base_offset(), v.partition_leader_epoch()), (1234, 9));
    }

    #[test]
    fn log_append_time_sets_type_and_max_timestamp_and_recomputes_crc() {
        let mut b = build_test_batch(0, 2, 1, 2, 10, 1);
        set_log_append_time(&mut b, 99_999);
        let v = RecordBatch::new(&b).unwrap();
        assert_eq!(v.timestamp_type(), TimestampType::LogAppendTime);
        assert_eq!(v.max_timestamp(), 99_999);
    }

    fn corrupt(mutate: fn(&mut Vec<u8>)) -> BatchError {
        let mut b = build_test_batch(0, 2, 1, 2, 20, 3);
        mutate(&mut b);
        match RecordBatch::new(&b) {
            Ok(v) => v.validate_for_append().unwrap_err(),
            Err(e) => e,
        }
    }

    #[test]
    fn corrupt_inputs_map_to_kafka_errors() {
        type Mutation = fn(&mut Vec<u8>);
        let table: Vec<(&str, Mutation, i16)> = vec![
            ("bad crc", |b| b[70] ^= 1, 2),
            ("short buffer", |b| b.truncate(40), 2),
            ("length says more", |b| b.truncate(b.len() - 1), 2),
            ("length says less", |b| b.push(0), 2),
            (
                "tiny batchLength",
                |b| b[8..12].copy_from_slice(&10i32.to_be_bytes()),
                2,
            ),
            ("magic 1", |b| b[16] = 1, 43),
            ("magic 7", |b| b[16] = 7, 87),
            (
                "zero records",
                |b| {
                    b[57..61].copy_from_slice(&0i32.to_be_bytes());
                    let c = crc32c::crc32c(&b[21..]);
                    b[17..21].copy_from_slice(&c.to_be_bytes());
                },
                87,
            ),
            (
                "count disagrees",
                |b| {
                    b[57..61].copy_from_slice(&5i32.to_be_bytes());
                    let c = crc32c::crc32c(&b[21..]);
                    b[17..21].copy_from_slice(&c.to_be_bytes());
                },
                87,
            ),
            (
                "codec 6",
                |b| {
                    b[22] |= 6;
                    let c = crc32c::crc32c(&b[21..]);
                    b[17..21].copy_from_slice(&c.to_be_bytes());
                },
                87,
            ),
        ];
        for (name, m, code) in table {
            assert_eq!(corrupt(m).kafka_error_code(), code, "{name}");
        }
    }

    #[test]
    fn iterates_consecutive_batches_and_stops_at_first_error() {
        let mut buf = build_test_batch(0, 1, 1, 1, 5, 0);
        buf.extend(build_test_batch(0, 4, 1, 1, 50, 0));
        let all = validate_all_for_append(&buf).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[1].record_count, 4);
        assert_eq!(all[1].range.end, buf.len());
        buf.extend_from_slice(&[0, 0, 0]);
        assert_eq!(
            validate_all_for_append(&buf)
                .unwrap_err()
                .kafka_error_code(),
            2
        );
        let items: Vec<_> = BatchIter::new(&buf).collect();
        assert_eq!(items.len(), 3);
        assert!(items[2].is_err());
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = RecordBatch::new(&bytes).map(|b| (b.last_offset(), b.compression(), b.validate_for_append()));
            let _ = RecordBatch::new_unchecked_crc(&bytes).map(|b| b.last_offset());
            let _ = validate_all_for_append(&bytes);
            let _ = peek_total_len(&bytes);
        }

        #[test]
        fn mutated_valid_batch_never_panics(seed in any::<u64>(), flips in proptest::collection::vec((0usize..200, any::<u8>()), 0..8)) {
            let mut b = build_test_batch(seed as i64, 3, 0, 0, (seed % 120) as usize, seed as u8);
            for (at, v) in flips { let n = b.len(); b[at % n] = v; }
            let _ = validate_all_for_append(&b);
        }
    }
}
