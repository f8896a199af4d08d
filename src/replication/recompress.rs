//! `[pure]` A topic's `compression.type` applied to a produced v2 batch, as
//! Kafka 3.9's `LogValidator.validateMessagesAndAssignOffsetsCompressed`
//! and `buildRecordsAndAssignOffsets` do:
//!
//! - `producer` keeps the producer's codec; so does a target equal to the
//!   batch's codec (Kafka assigns offsets in place then, whatever the
//!   level the producer used). Those batches stay on the zero-copy path.
//! - Any other target (`uncompressed`, `gzip`, `snappy`, `lz4`, `zstd`)
//!   rebuilds the batch: its records are inflated and written again with
//!   the target codec at the topic's `compression.<codec>.level`
//!   (KIP-390), through Kafka's `MemoryRecordsBuilder` rules: offset
//!   deltas 0..n-1 (`appendWithOffset` with a running counter),
//!   `baseTimestamp` = the first record's timestamp, `maxTimestamp` = the
//!   largest record timestamp, the first batch's producer id, epoch, base
//!   sequence and transactional bit, no delete horizon, a new CRC-32C.
//!   Keys, values, headers and each record's timestamp stay as they were.
//!   LogAppendTime is stamped afterwards by the append, as on every path.
//! - An uncompressed control batch is never compressed ("Do not compress
//!   control records unless they are written compressed"). Clients may
//!   not write control batches at all (`validateBatch`), and the broker's
//!   own markers are uncompressed, so control batches are left alone.
//!
//! Kafka's builder would also drop a control bit; no control batch reaches
//! the rebuild here, so that case does not arise.

use crate::config::topic::{BrokerCompressionType, TopicConfig};
use crate::protocol::record_batch::{BatchError, Compression, RecordBatch, TimestampType};
use crate::protocol::record_walk::{records_section, InflateScratch};
use crate::protocol::varint::{put_varint, read_varint};
use crate::storage::cleaner::codec::compress_at_level;
use crate::storage::cleaner::filter::reseal;

/// The codec (attributes bits 0-2) and level a topic's batches must carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetCompression {
    pub codec: i16,
    /// None: the codec has no level (snappy, none) or uses its default.
    pub level: Option<i32>,
}

impl TargetCompression {
    /// The target of `config`, None for `compression.type=producer`.
    pub fn of(config: &TopicConfig) -> Option<Self> {
        let (codec, level) = match config.compression_type {
            BrokerCompressionType::Producer => return None,
            BrokerCompressionType::Uncompressed => (0, None),
            BrokerCompressionType::Gzip => (1, Some(config.compression_gzip_level)),
            BrokerCompressionType::Snappy => (2, None),
            // Only Kafka's default level 9 is accepted (see `codec`).
            BrokerCompressionType::Lz4 => (3, None),
            BrokerCompressionType::Zstd => (4, Some(config.compression_zstd_level)),
        };
        Some(Self { codec, level })
    }

    /// Whether the batch at the start of `batch` must be rebuilt for this
    /// target (false for a batch whose header cannot be read: the append's
    /// own checks refuse it).
    pub fn needs_conversion(self, batch: &[u8]) -> bool {
        let Ok(view) = RecordBatch::new_unchecked_crc(batch) else {
            return false;
        };
        let Some(source) = view.compression() else {
            return false;
        };
        if view.is_control() {
            return false;
        }
        codec_id(source) != self.codec
    }
}

/// Attributes bits 0-2 of `c`.
pub fn codec_id(c: Compression) -> i16 {
    match c {
        Compression::None => 0,
        Compression::Gzip => 1,
        Compression::Snappy => 2,
        Compression::Lz4 => 3,
        Compression::Zstd => 4,
    }
}

/// The v2 `batch` rebuilt with `target`'s codec and level (see the module
/// text). Records that do not match the header's `recordCount` (too few,
/// or bytes left after the last) are INVALID_RECORD, as Kafka's record
/// iterator refuses them; a body that does not inflate is CORRUPT_MESSAGE.
/// An LZ4 body is inflated in `scratch`.
pub fn recompress(
    batch: &[u8],
    target: TargetCompression,
    scratch: &mut InflateScratch,
) -> Result<Vec<u8>, BatchError> {
    let view = RecordBatch::new_unchecked_crc(batch)?;
    let count = view.record_count();
    let log_append_time = view.timestamp_type() == TimestampType::LogAppendTime;
    let records = records_section(batch, scratch)?;
    let rebuilt = renumber(&records, count, view.base_timestamp())?;
    let squeezed = compress_at_level(target.codec, target.level, &rebuilt.records)?;
    let transactional = view.is_transactional();
    Ok(reseal(batch, &squeezed, |header| {
        // Kafka's builder: codec, timestamp type, transactional; no
        // control bit, no delete horizon.
        let mut attributes = target.codec;
        if log_append_time {
            attributes |= 0x08;
        }
        if transactional {
            attributes |= 0x10;
        }
        header[21..23].copy_from_slice(&attributes.to_be_bytes());
        header[23..27].copy_from_slice(&(count - 1).to_be_bytes());
        header[27..35].copy_from_slice(&rebuilt.base_timestamp.to_be_bytes());
        if !log_append_time {
            header[35..43].copy_from_slice(&rebuilt.max_timestamp.to_be_bytes());
        }
        header[57..61].copy_from_slice(&count.to_be_bytes());
    }))
}

/// Records written again with offset deltas 0..n-1 and timestamp deltas
/// from the first record's timestamp.
struct Renumbered {
    records: Vec<u8>,
    base_timestamp: i64,
    max_timestamp: i64,
}

/// `records` (an uncompressed records section holding `count` records,
/// whose timestamps count from `base_timestamp`) renumbered.
fn renumber(records: &[u8], count: i32, base_timestamp: i64) -> Result<Renumbered, BatchError> {
    let short = BatchError::InvalidRecord("records end before the batch's record count");
    let mut parsed = Vec::with_capacity(usize::try_from(count).unwrap_or(0).min(records.len()));
    let mut at = 0usize;
    for _ in 0..count {
        let (len, prefix) = read_varint(&records[at..]).ok_or(short.clone())?;
        let len =
            usize::try_from(len).map_err(|_| BatchError::Corrupt("negative record length"))?;
        let start = at + prefix;
        let end = start
            .checked_add(len)
            .filter(|&e| e <= records.len())
            .ok_or(short.clone())?;
        let body = &records[start..end];
        // attributes (int8), timestampDelta (varlong), offsetDelta (varint), rest.
        let attributes = *body.first().ok_or(short.clone())?;
        let (ts_delta, ts_len) = read_varint(&body[1..]).ok_or(short.clone())?;
        let (_, off_len) = read_varint(&body[1 + ts_len..]).ok_or(short.clone())?;
        let rest = &body[1 + ts_len + off_len..];
        parsed.push((attributes, base_timestamp.wrapping_add(ts_delta), rest));
        at = end;
    }
    if at != records.len() {
        return Err(BatchError::InvalidRecord(
            "Incorrect declared batch size, records still remaining",
        ));
    }
    let first = parsed.first().map_or(base_timestamp, |r| r.1);
    let max_timestamp = parsed.iter().map(|r| r.1).max().unwrap_or(-1);
    let mut out = Vec::with_capacity(records.len() + parsed.len() * 4);
    let mut body = Vec::new();
    for (delta, (attributes, timestamp, rest)) in parsed.into_iter().enumerate() {
        body.clear();
        body.push(attributes);
        put_varint(&mut body, timestamp.wrapping_sub(first));
        put_varint(&mut body, delta as i64);
        body.extend_from_slice(rest);
        put_varint(&mut out, body.len() as i64);
        out.extend_from_slice(&body);
    }
    Ok(Renumbered {
        records: out,
        base_timestamp: first,
        max_timestamp,
    })
}

#[cfg(test)]
mod tests;
