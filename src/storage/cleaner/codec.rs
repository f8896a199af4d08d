//! Compression of a rewritten batch's records with the batch's own codec
//! (Kafka's `buildRetainedRecordsInto` keeps `originalBatch.compressionType`).
//! Inflating is `protocol::record_walk::records_section`.
//!
//! In-memory only, but not marked pure: the encoders are `std::io::Write`
//! sinks, which the pure-module rule (tests/foundation_style.rs) leaves out.
//!
//! Formats, as Kafka's producers write them: gzip (RFC 1952), snappy in
//! snappy-java's framing (`\x82SNAPPY\0`, version 1, compatible 1, then
//! big-endian-length-prefixed raw blocks of at most 32 KiB, what
//! `SnappyOutputStream` writes and `record_walk` reads), the LZ4 frame
//! format with independent blocks (`KafkaLZ4BlockOutputStream`), zstd
//! frames at level 3 (Kafka's default `compression.zstd.level`).

use std::io::Write;

use super::filter::reseal;
use crate::protocol::record_batch::{BatchError, Compression, RecordBatch, HEADER_LEN};
use crate::protocol::record_walk::{records_section, InflateScratch};

/// snappy-java's `SnappyOutputStream` block size.
const SNAPPY_BLOCK: usize = 32 * 1024;
const SNAPPY_HEADER: &[u8] = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01";
const ZSTD_LEVEL: i32 = 3;

fn failed(_: impl std::fmt::Debug) -> BatchError {
    BatchError::Corrupt("cannot compress the records")
}

/// `records` compressed with codec id `codec` (attributes bits 0-2) at
/// the codec's default level.
pub fn compress(codec: i16, records: &[u8]) -> Result<Vec<u8>, BatchError> {
    compress_at_level(codec, None, records)
}

/// `records` compressed with codec id `codec` at `level` (KIP-390's
/// `compression.gzip.level` / `compression.zstd.level`; None or gzip's -1
/// = the codec's default: gzip 6 as `Deflater.DEFAULT_COMPRESSION`, zstd
/// 3). Snappy has no level. LZ4 is written in LZ4's fast mode only, which
/// is Kafka's default level 9 (`KafkaLZ4BlockOutputStream` uses
/// lz4-java's `fastCompressor` for level 9 and `highCompressor` for the
/// others); the topic config refuses other `compression.lz4.level`s.
pub fn compress_at_level(
    codec: i16,
    level: Option<i32>,
    records: &[u8],
) -> Result<Vec<u8>, BatchError> {
    match codec {
        0 => Ok(records.to_vec()),
        1 => {
            let gzip_level = match level {
                Some(l @ 1..=9) => flate2::Compression::new(l as u32),
                _ => flate2::Compression::default(),
            };
            let mut e = flate2::write::GzEncoder::new(Vec::new(), gzip_level);
            e.write_all(records).map_err(failed)?;
            e.finish().map_err(failed)
        }
        2 => {
            let mut out = SNAPPY_HEADER.to_vec();
            let mut enc = snap::raw::Encoder::new();
            for block in records.chunks(SNAPPY_BLOCK) {
                let c = enc.compress_vec(block).map_err(failed)?;
                out.extend_from_slice(&(c.len() as u32).to_be_bytes());
                out.extend_from_slice(&c);
            }
            Ok(out)
        }
        3 => {
            let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
            e.write_all(records).map_err(failed)?;
            e.finish().map_err(failed)
        }
        4 => zstd::bulk::compress(records, level.unwrap_or(ZSTD_LEVEL)).map_err(failed),
        _ => Err(BatchError::InvalidRecord("unknown compression codec")),
    }
}

/// The uncompressed v2 `batch` with its records section compressed with
/// codec id `codec` (attributes bits 0-2), batchLength and CRC updated:
/// the batch a producer writes with that `compression.type`. The load
/// generator and tests build compressed batches this way, so the LZ4 frame
/// writer is the cleaner's (kafka-protocol's own needs the C `lz4`).
pub fn compress_batch(batch: &[u8], codec: i16) -> Result<Vec<u8>, BatchError> {
    let view = RecordBatch::new_unchecked_crc(batch)?;
    if view.compression() != Some(Compression::None) {
        return Err(BatchError::InvalidRecord("batch already compressed"));
    }
    let records = compress(codec, &batch[HEADER_LEN..view.total_len()])?;
    Ok(with_records(batch, codec, &records))
}

/// `batch` with its records section inflated and codec bits cleared, for
/// a decoder that reads only uncompressed batches; an uncompressed batch
/// comes back as it is. An LZ4 body is inflated in `scratch`.
pub fn inflate_batch(batch: &[u8], scratch: &mut InflateScratch) -> Result<Vec<u8>, BatchError> {
    let records = records_section(batch, scratch)?;
    Ok(with_records(batch, 0, &records))
}

/// `batch`'s header over `records` with codec `codec`.
fn with_records(batch: &[u8], codec: i16, records: &[u8]) -> Vec<u8> {
    reseal(batch, records, |header| {
        let attributes = (i16::from_be_bytes([header[21], header[22]]) & !0x7) | codec;
        header[21..23].copy_from_slice(&attributes.to_be_bytes());
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use kafka_protocol::records::{
        Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions,
        TimestampType,
    };

    fn batch(compression: Compression) -> Vec<u8> {
        let recs: Vec<Record> = (0..50)
            .map(|i| Record {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: 0,
                producer_id: -1,
                producer_epoch: -1,
                timestamp_type: TimestampType::Creation,
                offset: i,
                sequence: i as i32 - 1,
                timestamp: 5,
                key: Some(bytes::Bytes::from(format!("key-{i}"))),
                value: Some(bytes::Bytes::from(vec![b'v'; 100])),
                headers: Default::default(),
            })
            .collect();
        let mut buf = BytesMut::new();
        let opts = RecordEncodeOptions {
            version: 2,
            compression,
        };
        RecordBatchEncoder::encode(&mut buf, &recs, &opts).unwrap();
        buf.to_vec()
    }

    #[test]
    fn every_codec_round_trips_through_the_broker_inflater() {
        let plain = batch(Compression::None);
        let records = records_section(&plain, &mut InflateScratch::default())
            .unwrap()
            .into_owned();
        for codec in 0..=4i16 {
            let squeezed = compress(codec, &records).unwrap();
            let mut b = plain[..61].to_vec();
            let attrs = i16::from_be_bytes([b[21], b[22]]) | codec;
            b[21..23].copy_from_slice(&attrs.to_be_bytes());
            b.extend_from_slice(&squeezed);
            let len = (b.len() - 12) as i32;
            b[8..12].copy_from_slice(&len.to_be_bytes());
            assert_eq!(
                &*records_section(&b, &mut InflateScratch::default()).unwrap(),
                &records[..],
                "codec {codec}"
            );
        }
    }

    #[test]
    fn client_compressed_batches_inflate() {
        let plain = records_section(&batch(Compression::None), &mut InflateScratch::default())
            .unwrap()
            .into_owned();
        for c in [Compression::Gzip, Compression::Snappy, Compression::Zstd] {
            assert_eq!(
                &*records_section(&batch(c), &mut InflateScratch::default()).unwrap(),
                &plain[..],
                "{c:?}"
            );
        }
        // LZ4: kafka-protocol's LZ4 codec is the C `lz4` crate, left out of
        // the build; the Java and librdkafka clients' LZ4 batches are read
        // back in tests/java_clients.rs and tests/datapath_kcat.rs.
        let lz4 = compress_batch(&batch(Compression::None), 3).unwrap();
        assert_eq!(
            &*records_section(&lz4, &mut InflateScratch::default()).unwrap(),
            &plain[..],
            "Lz4"
        );
    }

    #[test]
    fn a_batch_compressed_then_inflated_decodes_to_the_same_records() {
        let plain = batch(Compression::None);
        let records = |b: &[u8]| {
            RecordBatchDecoder::decode(&mut bytes::Bytes::copy_from_slice(b))
                .unwrap()
                .records
        };
        for codec in 0..=4i16 {
            let squeezed = compress_batch(&plain, codec).unwrap();
            assert_eq!(i16::from_be_bytes([squeezed[21], squeezed[22]]) & 7, codec);
            assert!(RecordBatch::new(&squeezed).is_ok(), "codec {codec}: CRC");
            let inflated = inflate_batch(&squeezed, &mut InflateScratch::default()).unwrap();
            assert_eq!(inflated, plain, "codec {codec}");
            assert_eq!(records(&inflated), records(&plain));
        }
        assert!(compress_batch(&compress_batch(&plain, 1).unwrap(), 3).is_err());
    }
}
