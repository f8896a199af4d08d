//! `[pure]` Legacy message sets: magic 0 and magic 1 messages (Kafka's
//! `LegacyRecord`, `AbstractLegacyRecordBatch`), read and written.
//!
//! Every entry of a log or of a `records` field starts with `offset: i64,
//! size: i32` (12 bytes, `Records.LOG_OVERHEAD`); in all three formats the
//! magic byte is byte 16 of the entry. A legacy message, big endian:
//!
//! | field        | v0    | v1    | notes                                       |
//! |--------------|-------|-------|---------------------------------------------|
//! | crc          | u32   | u32   | CRC32 (IEEE) of magic .. end of the message |
//! | magic        | i8 0  | i8 1  |                                             |
//! | attributes   | i8    | i8    | bits 0-2 codec; bit 3 LogAppendTime (v1)    |
//! | timestamp    | —     | i64   | -1 = none                                   |
//! | key_length   | i32   | i32   | -1 = null key                               |
//! | key, value_length, value: the same way                             |
//!
//! A compressed message set is one *wrapper* message whose value is the
//! codec-compressed bytes of an inner message set. Its offset is the
//! absolute offset of the last inner message; inner offsets are relative
//! (0, 1, ...) in v1 and absolute in v0 (`MemoryRecordsBuilder.toInnerOffset`).
//! A v1 wrapper with offset 0 (produce data of some librdkafka versions)
//! takes its inner offsets as they are. A LogAppendTime v1 wrapper gives
//! every inner message its own timestamp (`LegacyRecord` with the wrapper's
//! timestamp and type).
//!
//! Codecs: gzip, snappy in snappy-java's framing, LZ4 frames; the LZ4
//! frame of a magic-0 message carries a header checksum computed over the
//! frame magic too (Kafka's `Lz4BlockOutputStream` with
//! `useBrokenFlagDescriptorChecksum`, KIP-57), magic 1 the correct one.
//! zstd has no legacy form.

mod compress;
pub mod down;
pub mod lazy;
#[cfg(test)]
mod tests;

use bytes::{BufMut, Bytes};

use super::record_batch::{BatchError, Compression, TimestampType, CRC_START, HEADER_LEN};
use super::record_walk::{inflate_legacy_value, InflateScratch};
use super::varint::put_varint;

pub use compress::compress;

/// `offset` + `size`.
pub const LOG_OVERHEAD: usize = 12;
/// Where every format keeps its magic byte in an entry.
pub const MAGIC_OFFSET: usize = 16;
/// crc + magic + attributes + key and value lengths (`RECORD_OVERHEAD_V0`).
pub const RECORD_OVERHEAD_V0: usize = 14;
/// The v0 overhead and the timestamp (`RECORD_OVERHEAD_V1`).
pub const RECORD_OVERHEAD_V1: usize = 22;
/// `RecordBatch.NO_TIMESTAMP`.
pub const NO_TIMESTAMP: i64 = -1;

const CODEC_MASK: u8 = 0x07;
const TIMESTAMP_TYPE_BIT: u8 = 0x08;

/// The magic byte of the first entry of `records`, whatever its format.
pub fn first_magic(records: &[u8]) -> Option<i8> {
    records.get(MAGIC_OFFSET).map(|b| *b as i8)
}

/// The codec of attributes bits 0-2; `None` for ids 5-7, which Kafka does
/// not define.
pub fn compression_of(attributes: u8) -> Option<Compression> {
    match attributes & CODEC_MASK {
        0 => Some(Compression::None),
        1 => Some(Compression::Gzip),
        2 => Some(Compression::Snappy),
        3 => Some(Compression::Lz4),
        4 => Some(Compression::Zstd),
        _ => None,
    }
}

fn codec_id(c: Compression) -> u8 {
    match c {
        Compression::None => 0,
        Compression::Gzip => 1,
        Compression::Snappy => 2,
        Compression::Lz4 => 3,
        Compression::Zstd => 4,
    }
}

fn be_i32(b: &[u8], at: usize) -> Option<i32> {
    let s = b.get(at..at + 4)?;
    Some(i32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

fn be_i64(b: &[u8], at: usize) -> Option<i64> {
    let s = b.get(at..at + 8)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(i64::from_be_bytes(a))
}

/// CRC32 (IEEE, `java.util.zip.CRC32`).
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = flate2::Crc::new();
    crc.update(bytes);
    crc.sum()
}

/// One entry of a records field or log region, not yet parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The entry's offset field (for a wrapper, its last inner offset).
    pub offset: i64,
    pub magic: i8,
    /// The whole entry, log overhead included.
    pub bytes: Bytes,
}

impl Entry {
    /// The message after the log overhead (v0/v1), or the batch (v2) without it.
    pub fn body(&self) -> Bytes {
        self.bytes.slice(LOG_OVERHEAD..)
    }
}

/// The entries of `records` as Kafka's `ByteBufferLogInputStream` walks
/// them: a size below [`RECORD_OVERHEAD_V0`] or a magic outside 0..=2 is
/// corrupt ("Invalid magic found in record"); an entry running past the
/// end ends the walk without error (a trailing partial entry is normal in
/// fetch responses and Kafka trims it from a produce).
pub fn shallow_entries(records: &Bytes) -> Result<Vec<Entry>, BatchError> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    loop {
        let rest = &records[pos..];
        if rest.len() < LOG_OVERHEAD {
            break;
        }
        let (Some(offset), Some(size)) = (be_i64(rest, 0), be_i32(rest, 8)) else {
            break;
        };
        if size < RECORD_OVERHEAD_V0 as i32 {
            return Err(BatchError::Corrupt(
                "Record size is less than the minimum record overhead (14)",
            ));
        }
        let Some(&magic) = rest.get(MAGIC_OFFSET) else {
            break;
        };
        let magic = magic as i8;
        if !(0..=2).contains(&magic) {
            return Err(BatchError::Corrupt("Invalid magic found in record"));
        }
        let total = LOG_OVERHEAD + size as usize;
        if rest.len() < total {
            break;
        }
        out.push(Entry {
            offset,
            magic,
            bytes: records.slice(pos..pos + total),
        });
        pos += total;
    }
    Ok(out)
}

/// One legacy message, parsed (Kafka's `LegacyRecord`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Its offset: the entry's, or for an inner message the absolute one
    /// its wrapper gives it.
    pub offset: i64,
    pub magic: i8,
    pub attributes: u8,
    /// v1: its timestamp, or its LogAppendTime wrapper's; v0: -1.
    pub timestamp: i64,
    /// v1: bit 3 (an inner message takes its wrapper's); v0: none.
    pub timestamp_type: Option<TimestampType>,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    /// Bytes after the log overhead (crc .. end).
    pub size: usize,
    stored_crc: u32,
    computed_crc: u32,
}

impl Message {
    /// Parses the message `body` (the bytes after an entry's log overhead).
    /// Magic 0 has the v0 layout and any other the v1 layout, as
    /// `LegacyRecord` reads them; a length running past the message is
    /// corrupt. Bytes after the value are ignored (and covered by the CRC).
    pub fn parse(offset: i64, body: &Bytes) -> Result<Self, BatchError> {
        if body.len() < RECORD_OVERHEAD_V0 {
            return Err(BatchError::Corrupt(
                "Record size is less than the minimum record overhead (14)",
            ));
        }
        let magic = body[4] as i8;
        let attributes = body[5];
        let (timestamp, timestamp_type, mut pos) = if magic == 0 {
            (NO_TIMESTAMP, None, 6)
        } else {
            let ts = be_i64(body, 6).ok_or(BatchError::Corrupt("v1 message too short"))?;
            let ty = if attributes & TIMESTAMP_TYPE_BIT != 0 {
                TimestampType::LogAppendTime
            } else {
                TimestampType::CreateTime
            };
            (ts, Some(ty), 14)
        };
        let key = Self::sized(body, &mut pos)?;
        let value = Self::sized(body, &mut pos)?;
        let stored_crc = u32::from_be_bytes([body[0], body[1], body[2], body[3]]);
        Ok(Message {
            offset,
            magic,
            attributes,
            timestamp,
            timestamp_type,
            key,
            value,
            size: body.len(),
            stored_crc,
            computed_crc: crc32(&body[4..]),
        })
    }

    /// An int32-length-prefixed field at `pos` (-1 = null).
    fn sized(body: &Bytes, pos: &mut usize) -> Result<Option<Bytes>, BatchError> {
        let short = BatchError::Corrupt("message field runs past the message");
        let len = be_i32(body, *pos).ok_or(short.clone())?;
        *pos += 4;
        if len == -1 {
            return Ok(None);
        }
        let len = usize::try_from(len).map_err(|_| short.clone())?;
        let end = pos
            .checked_add(len)
            .filter(|e| *e <= body.len())
            .ok_or(short)?;
        let field = body.slice(*pos..end);
        *pos = end;
        Ok(Some(field))
    }

    /// Stored CRC32 equals the computed one (`LegacyRecord.isValid`).
    pub fn is_valid(&self) -> bool {
        self.stored_crc == self.computed_crc
    }

    /// `None` for codec ids 5-7.
    pub fn compression(&self) -> Option<Compression> {
        compression_of(self.attributes)
    }

    pub fn is_compressed(&self) -> bool {
        self.attributes & CODEC_MASK != 0
    }

    /// The messages of this compressed wrapper, with absolute offsets and
    /// effective timestamps (Kafka's `AbstractLegacyRecordBatch`
    /// `DeepRecordsIterator`). Refused as Kafka does: a wrapper magic other
    /// than 0/1, zstd, a null value, an empty inner set, and a v1 wrapper
    /// offset below its last inner offset (unless 0) are invalid records;
    /// an inner size below 14 and a value that does not inflate are
    /// corrupt. A trailing partial inner entry ends the set. Inner messages
    /// are returned as read (a compressed one, a magic mismatch and a bad
    /// inner CRC are for the validator to judge, record by record).
    pub fn inner_messages(&self, scratch: &mut InflateScratch) -> Result<Vec<Message>, BatchError> {
        if self.magic != 0 && self.magic != 1 {
            return Err(BatchError::InvalidRecord(
                "Invalid wrapper magic found in legacy deep record iterator",
            ));
        }
        let compression = self
            .compression()
            .ok_or(BatchError::InvalidRecord("unknown compression codec"))?;
        let value = self.value.as_ref().ok_or(BatchError::InvalidRecord(
            "Found invalid compressed record set with null value",
        ))?;
        let inflated = Bytes::from(inflate_legacy_value(
            compression,
            self.magic,
            value,
            scratch,
        )?);
        let mut inner = Vec::new();
        let mut pos = 0usize;
        while inflated.len() - pos >= LOG_OVERHEAD {
            let (Some(offset), Some(size)) = (be_i64(&inflated, pos), be_i32(&inflated, pos + 8))
            else {
                break;
            };
            if size < RECORD_OVERHEAD_V0 as i32 {
                return Err(BatchError::Corrupt(
                    "Record size is less than the minimum record overhead (14)",
                ));
            }
            let end = pos + LOG_OVERHEAD + size as usize;
            if end > inflated.len() {
                break;
            }
            let mut m = Message::parse(offset, &inflated.slice(pos + LOG_OVERHEAD..end))?;
            if m.magic == 1 && self.magic == 1 {
                m.timestamp_type = self.timestamp_type;
                if self.timestamp_type == Some(TimestampType::LogAppendTime) {
                    m.timestamp = self.timestamp;
                }
            }
            inner.push(m);
            pos = end;
        }
        let Some(last) = inner.last() else {
            return Err(BatchError::InvalidRecord(
                "Found invalid compressed record set with no inner records",
            ));
        };
        if self.magic == 1 {
            let base = if self.offset == 0 {
                0
            } else if self.offset < last.offset {
                return Err(BatchError::InvalidRecord(
                    "Found invalid wrapper offset in compressed v1 message set",
                ));
            } else {
                self.offset - last.offset
            };
            for m in &mut inner {
                m.offset = base.wrapping_add(m.offset);
            }
        }
        Ok(inner)
    }
}

/// One record to write in a legacy message set or a v2 batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutRecord<'a> {
    pub offset: i64,
    pub timestamp: i64,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
}

/// Appends one message entry; `timestamp` is written for magic 1 only.
fn put_message(
    out: &mut Vec<u8>,
    offset: i64,
    magic: i8,
    attributes: u8,
    timestamp: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) {
    let overhead = if magic == 0 {
        RECORD_OVERHEAD_V0
    } else {
        RECORD_OVERHEAD_V1
    };
    let size = overhead + key.map_or(0, <[u8]>::len) + value.map_or(0, <[u8]>::len);
    out.reserve(LOG_OVERHEAD + size);
    out.put_i64(offset);
    out.put_i32(size as i32);
    let crc_at = out.len();
    out.put_u32(0);
    out.put_i8(magic);
    out.put_u8(attributes);
    if magic != 0 {
        out.put_i64(timestamp);
    }
    for field in [key, value] {
        match field {
            None => out.put_i32(-1),
            Some(b) => {
                out.put_i32(b.len() as i32);
                out.put_slice(b);
            }
        }
    }
    let crc = crc32(&out[crc_at + 4..]);
    out[crc_at..crc_at + 4].copy_from_slice(&crc.to_be_bytes());
}

/// How a legacy message set is written (Kafka's `MemoryRecordsBuilder` at
/// magic 0 or 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LegacyFormat {
    pub magic: i8,
    pub compression: Compression,
    pub timestamp_type: TimestampType,
    /// The timestamp every message gets under LogAppendTime.
    pub log_append_time: i64,
    /// The offset inner v1 offsets are relative to.
    pub base_offset: i64,
}

/// Appends `records` to `out` as `format` says: one message per record
/// when uncompressed, else one wrapper (offset = the last record's,
/// timestamp = the largest, or the LogAppendTime) whose value is the
/// compressed inner set (v1 offsets relative to `base_offset`, v0
/// absolute). v0 drops timestamps. Inner and plain v1 messages carry the
/// LogAppendTime bit and time under LogAppendTime (`appendLegacyRecord`).
/// zstd is refused (no legacy form).
pub fn write_message_set(
    out: &mut Vec<u8>,
    format: LegacyFormat,
    records: &[OutRecord<'_>],
) -> Result<(), BatchError> {
    let Some(last) = records.last() else {
        return Ok(());
    };
    if format.compression == Compression::Zstd || !(0..=1).contains(&format.magic) {
        return Err(BatchError::InvalidRecord(
            "zstd and magic 2 have no legacy message form",
        ));
    }
    let log_append = format.magic == 1 && format.timestamp_type == TimestampType::LogAppendTime;
    let type_bit = if log_append { TIMESTAMP_TYPE_BIT } else { 0 };
    let ts = |r: &OutRecord<'_>| {
        if log_append {
            format.log_append_time
        } else {
            r.timestamp
        }
    };
    if format.compression == Compression::None {
        for r in records {
            put_message(out, r.offset, format.magic, type_bit, ts(r), r.key, r.value);
        }
        return Ok(());
    }
    let mut inner = Vec::new();
    for r in records {
        let offset = if format.magic == 0 {
            r.offset
        } else {
            r.offset.wrapping_sub(format.base_offset)
        };
        put_message(
            &mut inner,
            offset,
            format.magic,
            type_bit,
            ts(r),
            r.key,
            r.value,
        );
    }
    let value = compress(format.compression, format.magic, &inner)?;
    let wrapper_ts = if log_append {
        format.log_append_time
    } else {
        records
            .iter()
            .map(|r| r.timestamp)
            .max()
            .unwrap_or(NO_TIMESTAMP)
    };
    put_message(
        out,
        last.offset,
        format.magic,
        codec_id(format.compression) | type_bit,
        wrapper_ts,
        None,
        Some(&value),
    );
    Ok(())
}

const V2_ATTRIBUTES: usize = 21;
const V2_CRC: usize = 17;

/// One v2 batch (CreateTime, no producer, offsets `0..n` as deltas from
/// base offset 0, the appender's to assign) holding `records`, its records
/// section compressed with `compression`: the batch Kafka's
/// `MemoryRecordsBuilder` builds when `LogValidator` up-converts legacy
/// messages (`baseTimestamp` = the first record's, `maxTimestamp` the
/// largest; a record's headers are empty).
pub fn build_v2_batch(
    records: &[OutRecord<'_>],
    compression: Compression,
) -> Result<Vec<u8>, BatchError> {
    let base_timestamp = records.first().map_or(NO_TIMESTAMP, |r| r.timestamp);
    let max_timestamp = records
        .iter()
        .map(|r| r.timestamp)
        .max()
        .unwrap_or(NO_TIMESTAMP);
    let mut body = Vec::new();
    let mut record = Vec::new();
    for (delta, r) in records.iter().enumerate() {
        record.clear();
        record.put_i8(0);
        put_varint(&mut record, r.timestamp.wrapping_sub(base_timestamp));
        put_varint(&mut record, delta as i64);
        for field in [r.key, r.value] {
            match field {
                None => put_varint(&mut record, -1),
                Some(b) => {
                    put_varint(&mut record, b.len() as i64);
                    record.put_slice(b);
                }
            }
        }
        put_varint(&mut record, 0);
        put_varint(&mut body, record.len() as i64);
        body.put_slice(&record);
    }
    let body = match compression {
        Compression::None => body,
        c => compress(c, 2, &body)?,
    };
    let count = i32::try_from(records.len())
        .map_err(|_| BatchError::InvalidRecord("too many records for one batch"))?;
    let mut b = Vec::with_capacity(HEADER_LEN + body.len());
    b.put_i64(0);
    b.put_i32((HEADER_LEN - LOG_OVERHEAD + body.len()) as i32);
    b.put_i32(-1); // partitionLeaderEpoch, set on append
    b.put_i8(2);
    b.put_u32(0); // crc
    b.put_i16(i16::from(codec_id(compression)));
    b.put_i32(count - 1);
    b.put_i64(base_timestamp);
    b.put_i64(max_timestamp);
    b.put_i64(-1); // producerId
    b.put_i16(-1); // producerEpoch
    b.put_i32(-1); // baseSequence
    b.put_i32(count);
    b.put_slice(&body);
    debug_assert_eq!(CRC_START, V2_ATTRIBUTES);
    let crc = crc32c::crc32c(&b[V2_ATTRIBUTES..]);
    b[V2_CRC..V2_CRC + 4].copy_from_slice(&crc.to_be_bytes());
    Ok(b)
}
