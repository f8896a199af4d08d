//! `[pure]` The offset and timestamp of each record of one stored v2 batch,
//! read without decoding keys, values or headers.
//!
//! ListOffsets by timestamp (Kafka `FileRecords.searchForTimestamp`) and
//! KIP-734's max-timestamp lookup need each record's `offsetDelta` and
//! `timestampDelta`. Produce checks a batch's header and CRC but not its
//! records, so the records of a stored batch are whatever a client sent:
//! a general decoder that pre-sizes from counts in those bytes (a header
//! count of 2^31-1, a record count of 2^31-1) or inflates a compressed body
//! whole (a zstd body of a few hundred KiB can inflate to tens of GB) can be
//! made to exhaust the broker's memory. This walker keeps nothing but the
//! current record's position: it reads each record's length, its two deltas,
//! and skips the rest, streaming compressed bodies through the codec, and it
//! stops with an error after [`MAX_WALKED_BYTES`] of records.
//!
//! Record layout (Kafka `DefaultRecord`): length (varint), attributes (i8),
//! timestampDelta (varlong), offsetDelta (varint), key, value, headers.

use std::io::{self, BufRead, BufReader, Read};
use std::ops::ControlFlow;

use super::lz4_frame::Lz4Frame;
use super::record_batch::{BatchError, Compression, RecordBatch, TimestampType, HEADER_LEN};
use super::varint::zigzag_decode;

/// Uncompressed record bytes one walk reads at most: 256 times what a
/// default broker accepts in one batch (`message.max.bytes` 1 MiB,
/// compressed), and it bounds the time one lookup can be made to spend
/// inflating a body (about a second of a shard).
pub const MAX_WALKED_BYTES: u64 = 256 << 20;

/// The buffer an LZ4 body is inflated in ([`Lz4Frame`]: up to 4 MiB plus a
/// 64 KiB window), zero-filled only when it grows. Its owner keeps it
/// across the batches it walks (the shard's storage, a load-generator
/// consumer) instead of allocating and zeroing it per batch, as Kafka's
/// `KafkaLZ4BlockInputStream` takes its buffers from the caller's
/// `BufferSupplier`. No walk reads what an earlier one left in it.
#[derive(Default)]
pub struct InflateScratch(Vec<u8>);

/// Calls `visit(offset, timestamp)` for each record of the batch at the
/// start of `batch`, in order, until it returns `Break` or the records end.
/// Timestamps are `baseTimestamp + timestampDelta`, or for a LogAppendTime
/// batch its max timestamp (Kafka `DefaultRecordBatch` overrides every
/// record's with it). The CRC is not checked here (stored batches were
/// checked on append).
/// An LZ4 body is inflated in `scratch`.
pub fn for_each_record(
    batch: &[u8],
    scratch: &mut InflateScratch,
    visit: impl FnMut(i64, i64) -> ControlFlow<()>,
) -> Result<(), BatchError> {
    for_each_record_limited(batch, MAX_WALKED_BYTES, scratch, visit)
}

/// [`for_each_record`] with the byte limit as a parameter (tests).
pub fn for_each_record_limited(
    batch: &[u8],
    max_bytes: u64,
    scratch: &mut InflateScratch,
    visit: impl FnMut(i64, i64) -> ControlFlow<()>,
) -> Result<(), BatchError> {
    let view = RecordBatch::new_unchecked_crc(batch)?;
    let body = &batch[HEADER_LEN..view.total_len()];
    let walk = Walk {
        base_offset: view.base_offset(),
        base_timestamp: view.base_timestamp(),
        log_append_time: (view.timestamp_type() == TimestampType::LogAppendTime)
            .then(|| view.max_timestamp()),
        count: view.record_count().max(0) as u64,
        max_bytes,
    };
    // One byte past the limit is read from a codec, so a body that inflates
    // beyond it ends in "too large", not in a short-record error.
    let cap = max_bytes.saturating_add(1);
    let inflate_error = |_| BatchError::Corrupt("cannot decompress the records");
    match view.compression() {
        Some(Compression::None) => walk.run(body, visit),
        Some(Compression::Gzip) => walk.run(
            BufReader::new(flate2::read::GzDecoder::new(body).take(cap)),
            visit,
        ),
        Some(Compression::Snappy) => walk.run(BufReader::new(Snappy::new(body, cap)), visit),
        Some(Compression::Lz4) => walk.run(
            BufReader::new(
                Lz4Frame::new(body, &mut scratch.0)
                    .map_err(inflate_error)?
                    .take(cap),
            ),
            visit,
        ),
        Some(Compression::Zstd) => {
            let decoder = zstd::stream::read::Decoder::with_buffer(body).map_err(inflate_error)?;
            walk.run(BufReader::new(decoder.take(cap)), visit)
        }
        None => Err(BatchError::InvalidRecord("unknown compression codec")),
    }
}

/// Kafka's `LogValidator` check for a compacted topic ("Compacted topic
/// cannot accept message without key", `validateKey`): the index in the
/// batch of each record at the start of `batch` without a key (a key
/// length of -1 is a null key; an empty key is a key). Produce runs it
/// only for compacted topics. Streams like [`for_each_record`] and within
/// the same limit; its own loop, so the timestamp lookups' walk stays as
/// it was. An LZ4 body is inflated in `scratch`.
pub fn keyless_records(batch: &[u8], scratch: &mut InflateScratch) -> Result<Vec<i32>, BatchError> {
    let view = RecordBatch::new_unchecked_crc(batch)?;
    let body = &batch[HEADER_LEN..view.total_len()];
    let count = view.record_count().max(0) as u64;
    let cap = MAX_WALKED_BYTES.saturating_add(1);
    let inflate_error = |_| BatchError::Corrupt("cannot decompress the records");
    match view.compression() {
        Some(Compression::None) => keyless(body, count),
        Some(Compression::Gzip) => keyless(
            BufReader::new(flate2::read::GzDecoder::new(body).take(cap)),
            count,
        ),
        Some(Compression::Snappy) => keyless(BufReader::new(Snappy::new(body, cap)), count),
        Some(Compression::Lz4) => keyless(
            BufReader::new(
                Lz4Frame::new(body, &mut scratch.0)
                    .map_err(inflate_error)?
                    .take(cap),
            ),
            count,
        ),
        Some(Compression::Zstd) => {
            let decoder = zstd::stream::read::Decoder::with_buffer(body).map_err(inflate_error)?;
            keyless(BufReader::new(decoder.take(cap)), count)
        }
        None => Err(BatchError::InvalidRecord("unknown compression codec")),
    }
}

/// Reads each record's key length, skipping the rest; the indexes of the
/// null keys.
fn keyless<R: BufRead>(mut records: R, count: u64) -> Result<Vec<i32>, BatchError> {
    let short = BatchError::Corrupt("records end before the record count");
    let mut walked: u64 = 0;
    let mut found = Vec::new();
    for index in 0..count {
        let (len, prefix) = read_varint(&mut records, 5)?.ok_or(short.clone())?;
        let len = u64::try_from(len).map_err(|_| BatchError::Corrupt("negative record length"))?;
        walked = walked.saturating_add(prefix).saturating_add(len);
        if walked > MAX_WALKED_BYTES {
            return Err(too_large());
        }
        let mut record = (&mut records).take(len);
        let mut attributes = [0u8; 1];
        record
            .read_exact(&mut attributes)
            .map_err(|e| io_error(e, &short))?;
        read_varint(&mut record, 10)?.ok_or(short.clone())?;
        read_varint(&mut record, 5)?.ok_or(short.clone())?;
        let (key_len, _) = read_varint(&mut record, 5)?.ok_or(short.clone())?;
        if key_len < 0 {
            found.push(i32::try_from(index).unwrap_or(i32::MAX));
        }
        let rest = record.limit();
        let skipped = io::copy(&mut record, &mut io::sink()).map_err(|e| io_error(e, &short))?;
        if skipped != rest {
            return Err(short);
        }
    }
    Ok(found)
}

/// The records section of the batch at the start of `batch`, inflated
/// when compressed (the log cleaner rewrites records; Kafka's
/// `RecordBatch.streamingIterator`). At most [`MAX_WALKED_BYTES`]
/// inflated; an uncompressed section is borrowed. An LZ4 body is inflated
/// in `scratch` on its way to the returned buffer.
pub fn records_section<'b>(
    batch: &'b [u8],
    scratch: &mut InflateScratch,
) -> Result<std::borrow::Cow<'b, [u8]>, BatchError> {
    use std::borrow::Cow;
    let view = RecordBatch::new_unchecked_crc(batch)?;
    let body = &batch[HEADER_LEN..view.total_len()];
    match view.compression() {
        Some(Compression::None) => Ok(Cow::Borrowed(body)),
        Some(c) => inflate(c, body, true, scratch).map(Cow::Owned),
        None => Err(BatchError::InvalidRecord("unknown compression codec")),
    }
}

/// The value of a compressed legacy (magic 0/1) wrapper message inflated,
/// at most [`MAX_WALKED_BYTES`] (Kafka's `AbstractLegacyRecordBatch`
/// deep iterator). LZ4 values of magic-0 messages are read without their
/// frame's header checksum, which Kafka wrote wrongly for that magic
/// (`Lz4BlockInputStream`'s `ignoreFlagDescriptorChecksum`, KIP-57); zstd
/// has no legacy form ("Invalid wrapper compressionType").
pub fn inflate_legacy_value(
    compression: Compression,
    magic: i8,
    value: &[u8],
    scratch: &mut InflateScratch,
) -> Result<Vec<u8>, BatchError> {
    match compression {
        Compression::None => Ok(value.to_vec()),
        Compression::Zstd => Err(BatchError::InvalidRecord(
            "Invalid wrapper compressionType found in legacy deep record iterator",
        )),
        c => inflate(c, value, magic != 0, scratch),
    }
}

/// `body` inflated with `compression`, at most [`MAX_WALKED_BYTES`].
fn inflate(
    compression: Compression,
    body: &[u8],
    check_lz4_hc: bool,
    scratch: &mut InflateScratch,
) -> Result<Vec<u8>, BatchError> {
    let cap = MAX_WALKED_BYTES.saturating_add(1);
    let mut out = Vec::new();
    let inflate_error = |_| BatchError::Corrupt("cannot decompress the records");
    let read = match compression {
        Compression::None => {
            out.extend_from_slice(body);
            Ok(body.len())
        }
        Compression::Gzip => flate2::read::GzDecoder::new(body)
            .take(cap)
            .read_to_end(&mut out),
        Compression::Snappy => Snappy::new(body, cap).read_to_end(&mut out),
        Compression::Lz4 if check_lz4_hc => Lz4Frame::new(body, &mut scratch.0)
            .map_err(inflate_error)?
            .take(cap)
            .read_to_end(&mut out),
        Compression::Lz4 => Lz4Frame::ignoring_descriptor_checksum(body, &mut scratch.0)
            .map_err(inflate_error)?
            .take(cap)
            .read_to_end(&mut out),
        Compression::Zstd => zstd::stream::read::Decoder::with_buffer(body)
            .map_err(inflate_error)?
            .take(cap)
            .read_to_end(&mut out),
    };
    read.map_err(|e| io_error(e, &BatchError::Corrupt("cannot decompress the records")))?;
    if out.len() as u64 > MAX_WALKED_BYTES {
        return Err(too_large());
    }
    Ok(out)
}

struct Walk {
    base_offset: i64,
    base_timestamp: i64,
    /// The timestamp of every record, for a LogAppendTime batch.
    log_append_time: Option<i64>,
    count: u64,
    max_bytes: u64,
}

impl Walk {
    fn run<R: BufRead>(
        &self,
        mut records: R,
        mut visit: impl FnMut(i64, i64) -> ControlFlow<()>,
    ) -> Result<(), BatchError> {
        let short = BatchError::Corrupt("records end before the record count");
        // Bytes of the record stream read so far, length prefixes included,
        // so the walk stops before the stream reaches a codec's cap.
        let mut walked: u64 = 0;
        for _ in 0..self.count {
            let (len, prefix) = read_varint(&mut records, 5)?.ok_or(short.clone())?;
            let len =
                u64::try_from(len).map_err(|_| BatchError::Corrupt("negative record length"))?;
            walked = walked.saturating_add(prefix).saturating_add(len);
            if walked > self.max_bytes {
                return Err(too_large());
            }
            let mut record = (&mut records).take(len);
            let mut attributes = [0u8; 1];
            record
                .read_exact(&mut attributes)
                .map_err(|e| io_error(e, &short))?;
            let (timestamp_delta, _) = read_varint(&mut record, 10)?.ok_or(short.clone())?;
            let (offset_delta, _) = read_varint(&mut record, 5)?.ok_or(short.clone())?;
            let rest = record.limit();
            let skipped =
                io::copy(&mut record, &mut io::sink()).map_err(|e| io_error(e, &short))?;
            if skipped != rest {
                return Err(short);
            }
            let offset = self.base_offset.wrapping_add(offset_delta);
            let timestamp = self
                .log_append_time
                .unwrap_or(self.base_timestamp.wrapping_add(timestamp_delta));
            if visit(offset, timestamp).is_break() {
                break;
            }
        }
        Ok(())
    }
}

fn too_large() -> BatchError {
    BatchError::Corrupt("records larger than a lookup reads")
}

/// Marks the snappy reader's refusal of a block past the limit.
#[derive(Debug)]
struct TooLarge;

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("snappy block past the walk's limit")
    }
}

impl std::error::Error for TooLarge {}

/// A read error: the limit, a cut-off record (`short`), or a bad body.
fn io_error(e: io::Error, short: &BatchError) -> BatchError {
    if e.get_ref().is_some_and(|inner| inner.is::<TooLarge>()) {
        too_large()
    } else if e.kind() == io::ErrorKind::UnexpectedEof {
        short.clone()
    } else {
        BatchError::Corrupt("cannot decompress the records")
    }
}

/// A zig-zag varint of at most `max_len` bytes (5 for an int, 10 for a
/// long) and how many bytes it took; `None` at the end of the input.
fn read_varint<R: Read>(r: &mut R, max_len: usize) -> Result<Option<(i64, u64)>, BatchError> {
    let mut raw: u64 = 0;
    let mut i = 0;
    while i < max_len {
        let mut b = [0u8; 1];
        match r.read(&mut b) {
            Ok(0) => return Ok(None),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_error(e, &BatchError::Corrupt("cut-off varint"))),
        }
        raw |= u64::from(b[0] & 0x7f) << (7 * i);
        i += 1;
        if b[0] & 0x80 == 0 {
            return Ok(Some((zigzag_decode(raw), i as u64)));
        }
    }
    Err(BatchError::Corrupt("varint too long"))
}

/// Snappy as Kafka stores it: snappy-java's framing (`\x82SNAPPY\0`, two
/// version ints, then blocks each prefixed by its big-endian length), or
/// one raw snappy block when the magic is absent (snappy-java's
/// `SnappyInputStream` accepts both). Each block is inflated only after
/// its announced length was checked against what is left of the limit.
struct Snappy<'a> {
    input: &'a [u8],
    framed: bool,
    left: u64,
    block: Vec<u8>,
    at: usize,
}

const SNAPPY_MAGIC: &[u8] = b"\x82SNAPPY\x00";
const SNAPPY_HEADER_LEN: usize = 16;

impl<'a> Snappy<'a> {
    fn new(input: &'a [u8], limit: u64) -> Self {
        let framed = input.starts_with(SNAPPY_MAGIC);
        Snappy {
            input: if framed {
                input.get(SNAPPY_HEADER_LEN..).unwrap_or_default()
            } else {
                input
            },
            framed,
            left: limit,
            block: Vec::new(),
            at: 0,
        }
    }

    /// Inflates the next block into `self.block`; false at the end.
    fn next_block(&mut self) -> io::Result<bool> {
        if self.input.is_empty() {
            return Ok(false);
        }
        let block = if self.framed {
            let Some(len_bytes) = self.input.get(..4) else {
                return Err(invalid("snappy block length cut off"));
            };
            let len = u32::from_be_bytes([len_bytes[0], len_bytes[1], len_bytes[2], len_bytes[3]]);
            let end = 4usize.saturating_add(len as usize);
            let Some(block) = self.input.get(4..end) else {
                return Err(invalid("snappy block cut off"));
            };
            self.input = &self.input[end..];
            block
        } else {
            std::mem::take(&mut self.input)
        };
        let len = snap::raw::decompress_len(block).map_err(|_| invalid("bad snappy block"))?;
        if !snappy_len_possible(len, block.len()) {
            // Refused before allocating: a forged header would otherwise
            // make us allocate up to the limit for a few input bytes.
            self.input = &[];
            return Err(invalid("bad snappy block"));
        }
        if len as u64 > self.left {
            self.input = &[];
            return Err(io::Error::other(TooLarge));
        }
        self.left -= len as u64;
        self.block.resize(len, 0);
        snap::raw::Decoder::new()
            .decompress(block, &mut self.block)
            .map_err(|_| invalid("bad snappy block"))?;
        self.at = 0;
        Ok(true)
    }
}

/// Whether a snappy block of `block_len` bytes can inflate to `claimed`
/// bytes. Snappy's densest element is a copy with a 2-byte offset: 3 bytes
/// that write 64 (snappy's format_description.txt), so no valid block grows
/// more than 64/3 < 22 times.
fn snappy_len_possible(claimed: usize, block_len: usize) -> bool {
    claimed as u64 <= (block_len as u64).saturating_mul(22)
}

fn invalid(what: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

impl Read for Snappy<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.block.len() {
            if !self.next_block()? {
                return Ok(0);
            }
        }
        let n = buf.len().min(self.block.len() - self.at);
        buf[..n].copy_from_slice(&self.block[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::test_records::record;
    use bytes::{BufMut, Bytes, BytesMut};
    use kafka_protocol::protocol::StrBytes;
    use kafka_protocol::records::{
        Compression as Codec, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions,
    };

    fn records(n: usize, value_len: usize) -> Vec<Record> {
        (0..n)
            .map(|i| {
                // Out of order on purpose: deltas may be negative.
                let timestamp = 1_700_000_000_000 + ((i * 7919) % 50) as i64;
                let key = (i % 2 == 0).then(|| Bytes::from(format!("key-{i}")));
                let mut r = record(
                    100 + i as i64,
                    timestamp,
                    key,
                    Some(Bytes::from(vec![b'x'; value_len])),
                );
                r.headers.insert(
                    StrBytes::from_static_str("h"),
                    Some(Bytes::from_static(b"v")),
                );
                r
            })
            .collect()
    }

    fn encode(recs: &[Record], compression: Codec) -> Bytes {
        if matches!(compression, Codec::Lz4) {
            return lz4(&encode(recs, Codec::None));
        }
        let mut buf = BytesMut::new();
        RecordBatchEncoder::encode(
            &mut buf,
            recs,
            &RecordEncodeOptions {
                version: 2,
                compression,
            },
        )
        .expect("encode");
        buf.freeze()
    }

    /// The plain batch with its records section in an LZ4 frame of
    /// independent blocks (Kafka's `KafkaLZ4BlockOutputStream`), written
    /// by `lz4_flex`: kafka-protocol's LZ4 codec is the C `lz4` crate,
    /// which the build leaves out.
    fn lz4(plain: &[u8]) -> Bytes {
        use std::io::Write;
        let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
        e.write_all(&plain[HEADER_LEN..]).expect("lz4");
        let mut b = plain[..HEADER_LEN].to_vec();
        b.extend_from_slice(&e.finish().expect("lz4"));
        let len = (b.len() - 12) as i32;
        b[8..12].copy_from_slice(&len.to_be_bytes());
        b[22] |= 3;
        let crc = crc32c::crc32c(&b[crate::protocol::record_batch::CRC_START..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        Bytes::from(b)
    }

    fn walk(batch: &[u8], limit: u64) -> Result<Vec<(i64, i64)>, BatchError> {
        let mut out = Vec::new();
        for_each_record_limited(batch, limit, &mut InflateScratch::default(), |o, t| {
            out.push((o, t));
            ControlFlow::Continue(())
        })?;
        Ok(out)
    }

    #[test]
    fn every_null_key_in_the_batch_is_found_by_its_index_for_every_codec() {
        let mut keyed = records(40, 10);
        for r in &mut keyed {
            r.key = Some(Bytes::from_static(b"k"));
        }
        let mut one_null = keyed.clone();
        one_null[37].key = None;
        for codec in [
            Codec::None,
            Codec::Gzip,
            Codec::Snappy,
            Codec::Lz4,
            Codec::Zstd,
        ] {
            let scratch = &mut InflateScratch::default();
            assert_eq!(
                keyless_records(&encode(&keyed, codec), scratch).unwrap(),
                Vec::<i32>::new()
            );
            assert_eq!(
                keyless_records(&encode(&one_null, codec), scratch).unwrap(),
                [37]
            );
        }
        // Every null key is named, in order.
        let mut three_null = keyed.clone();
        for i in [0, 5, 39] {
            three_null[i].key = None;
        }
        let scratch = &mut InflateScratch::default();
        assert_eq!(
            keyless_records(&encode(&three_null, Codec::Gzip), scratch).unwrap(),
            [0, 5, 39]
        );
        // An empty key is a key (Kafka checks `hasKey`, i.e. not null).
        keyed[0].key = Some(Bytes::new());
        assert_eq!(
            keyless_records(&encode(&keyed, Codec::None), scratch).unwrap(),
            Vec::<i32>::new()
        );
    }

    #[test]
    fn every_codec_gives_the_offsets_and_timestamps_the_full_decoder_gives() {
        let recs = records(300, 700);
        for codec in [
            Codec::None,
            Codec::Gzip,
            Codec::Snappy,
            Codec::Lz4,
            Codec::Zstd,
        ] {
            let batch = encode(&recs, codec);
            // kafka-protocol decodes no LZ4 here: its answer for the plain
            // batch of the same records stands in.
            let mut decodable = if matches!(codec, Codec::Lz4) {
                encode(&recs, Codec::None)
            } else {
                batch.clone()
            };
            let expected: Vec<(i64, i64)> = RecordBatchDecoder::decode(&mut decodable)
                .expect("decode")
                .records
                .iter()
                .map(|r| (r.offset, r.timestamp))
                .collect();
            assert_eq!(expected.len(), 300);
            assert_eq!(
                walk(&batch, MAX_WALKED_BYTES).expect("walk"),
                expected,
                "{codec:?}"
            );
        }
    }

    #[test]
    fn the_walk_stops_where_the_visitor_breaks() {
        let batch = encode(&records(50, 10), Codec::Lz4);
        let mut seen = 0;
        for_each_record(&batch, &mut InflateScratch::default(), |o, _| {
            seen += 1;
            if o == 104 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .expect("walk");
        assert_eq!(seen, 5);
    }

    #[test]
    fn a_snappy_length_no_block_can_reach_is_refused_before_allocating() {
        // The densest real block (long runs of one byte) stays in bounds.
        let run = vec![7u8; 1 << 20];
        let block = snap::raw::Encoder::new()
            .compress_vec(&run)
            .expect("snappy");
        assert!(snappy_len_possible(run.len(), block.len()));
        assert!(
            run.len() > block.len() * 20,
            "the bound is near snappy's limit"
        );
        // A 6-byte block claiming 100 MB cannot be real.
        assert!(!snappy_len_possible(100 << 20, 6));
        let mut forged = Vec::new();
        let mut n: u64 = 100 << 20;
        while n >= 0x80 {
            forged.push((n as u8) | 0x80);
            n >>= 7;
        }
        forged.push(n as u8);
        forged.extend_from_slice(&[0, 1]);
        let mut r = Snappy::new(&forged, u64::MAX);
        let e = r.read(&mut [0u8; 16]).expect_err("forged");
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(r.block.capacity() < 1 << 20, "nothing allocated for it");
    }

    #[test]
    fn raw_snappy_without_the_java_framing_is_read_too() {
        let plain = encode(&records(20, 100), Codec::None);
        let body = &plain[HEADER_LEN..];
        let mut batch = BytesMut::from(&plain[..HEADER_LEN]);
        batch.put_slice(
            &snap::raw::Encoder::new()
                .compress_vec(body)
                .expect("snappy"),
        );
        set_codec_and_length(&mut batch, 2);
        assert_eq!(
            walk(&batch, MAX_WALKED_BYTES).expect("walk"),
            walk(&plain, MAX_WALKED_BYTES).expect("walk")
        );
    }

    /// Sets the codec bits and batchLength of a hand-built batch.
    fn set_codec_and_length(batch: &mut BytesMut, codec: i16) {
        let attributes = (i16::from_be_bytes([batch[21], batch[22]]) & !7) | codec;
        batch[21..23].copy_from_slice(&attributes.to_be_bytes());
        let len = (batch.len() - 12) as i32;
        batch[8..12].copy_from_slice(&len.to_be_bytes());
    }

    /// A record whose header count claims 2^31-1 headers: a decoder that
    /// pre-sizes from it reserves tens of GiB; the walk never reads headers.
    #[test]
    fn a_huge_header_count_is_skipped_not_allocated() {
        let plain = encode(&records(1, 4), Codec::None);
        let mut batch = BytesMut::from(&plain[..HEADER_LEN]);
        // attributes, timestampDelta 3, offsetDelta 0, key null, value "abcd",
        // header count 2^31-1 (zig-zag varint of 2147483647).
        let mut record = vec![0u8, 6, 0, 1, 8];
        record.extend_from_slice(b"abcd");
        record.extend_from_slice(&[0xfe, 0xff, 0xff, 0xff, 0x0f]);
        batch.put_u8((record.len() as u8) << 1);
        batch.put_slice(&record);
        set_codec_and_length(&mut batch, 0);
        let base_ts = RecordBatch::new_unchecked_crc(&batch)
            .expect("view")
            .base_timestamp();
        assert_eq!(
            walk(&batch, MAX_WALKED_BYTES).expect("walk"),
            vec![(100, base_ts + 3)]
        );
    }

    /// A small compressed body that inflates past the limit is refused
    /// after the limit, for every codec, without inflating the rest.
    #[test]
    fn a_body_inflating_past_the_limit_is_refused() {
        let recs = records(2000, 1000);
        for codec in [Codec::Gzip, Codec::Snappy, Codec::Lz4, Codec::Zstd] {
            let batch = encode(&recs, codec);
            assert!(
                batch.len() < 200_000,
                "{codec:?} compressed to {}",
                batch.len()
            );
            assert_eq!(
                walk(&batch, 1 << 20),
                Err(BatchError::Corrupt("records larger than a lookup reads")),
                "{codec:?}"
            );
            assert_eq!(
                walk(&batch, 4 << 20).expect("walk").len(),
                2000,
                "{codec:?}"
            );
        }
    }

    #[test]
    fn a_record_count_beyond_the_records_is_corrupt() {
        let mut batch = BytesMut::from(&encode(&records(3, 10), Codec::None)[..]);
        batch[57..61].copy_from_slice(&i32::MAX.to_be_bytes());
        assert_eq!(
            walk(&batch, MAX_WALKED_BYTES),
            Err(BatchError::Corrupt("records end before the record count"))
        );
        // A record cut short is corrupt too.
        let mut cut = BytesMut::from(&encode(&records(3, 10), Codec::None)[..]);
        let len = cut.len();
        cut.truncate(len - 5);
        set_codec_and_length(&mut cut, 0);
        assert_eq!(
            walk(&cut, MAX_WALKED_BYTES),
            Err(BatchError::Corrupt("records end before the record count"))
        );
    }

    #[test]
    fn garbage_compressed_bodies_are_errors_not_panics() {
        for codec in 1..=4 {
            let plain = encode(&records(1, 10), Codec::None);
            let mut batch = BytesMut::from(&plain[..HEADER_LEN]);
            batch.put_slice(&[
                0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1,
            ]);
            batch.put_slice(&[0xff; 64]);
            set_codec_and_length(&mut batch, codec);
            assert!(walk(&batch, MAX_WALKED_BYTES).is_err(), "codec {codec}");
        }
    }
}
