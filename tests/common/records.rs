//! Record batches as the tests build and inspect them: encode with
//! kafka-protocol, split a fetched region into whole batches, read a v2
//! batch header's fields, decode records.

use bytes::{Bytes, BytesMut};
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use shardlog::storage::cleaner::codec::{compress_batch, inflate_batch};

/// (key, value, timestamp_ms) of a record to encode.
pub type RawRecord<'a> = (Option<&'a [u8]>, &'a [u8], i64);

/// Encode one magic-v2 batch of (key, value, timestamp_ms) records with
/// `compression`, no producer id (non-idempotent), base offset 0. LZ4 is
/// written by the broker's cleaner codec (kafka-protocol's LZ4 is the C
/// `lz4` crate, which the build leaves out).
pub fn encode_batch(records: &[RawRecord], compression: Compression) -> Bytes {
    let records: Vec<Record> = records
        .iter()
        .enumerate()
        .map(|(i, (key, value, timestamp))| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            // kafka-protocol starts a new batch whenever offset - sequence
            // changes; this keeps one batch with baseSequence -1 (none).
            sequence: i as i32 - 1,
            timestamp: *timestamp,
            key: key.map(Bytes::copy_from_slice),
            value: Some(Bytes::copy_from_slice(value)),
            headers: Default::default(),
        })
        .collect();
    if matches!(compression, Compression::Lz4) {
        let plain = encode_batch_with(&records, Compression::None);
        return Bytes::from(compress_batch(&plain, 3).expect("compress LZ4 batch"));
    }
    encode_batch_with(&records, compression)
}

fn encode_batch_with(records: &[Record], compression: Compression) -> Bytes {
    let mut buf = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression,
    };
    RecordBatchEncoder::encode(&mut buf, records, &options).expect("encode batch");
    buf.freeze()
}

/// Milliseconds since the epoch (for record timestamps, not for timing).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as i64
}

/// Split a fetched records region into whole batches, dropping a partial
/// trailing batch (Kafka may cut the region mid-batch at `max_bytes`).
pub fn whole_batches(records: Option<&Bytes>) -> Vec<Bytes> {
    let Some(records) = records else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut pos = 0usize;
    // Batch header: baseOffset i64, batchLength i32 (bytes after this field).
    while records.len() - pos >= 12 {
        let len = i32::from_be_bytes(records[pos + 8..pos + 12].try_into().unwrap());
        assert!(len >= 49, "batch length {len} at byte {pos}");
        let end = pos + 12 + len as usize;
        if end > records.len() {
            break;
        }
        out.push(records.slice(pos..end));
        pos = end;
    }
    out
}

pub fn batch_base_offset(batch: &[u8]) -> i64 {
    i64::from_be_bytes(batch[0..8].try_into().unwrap())
}

/// baseOffset + lastOffsetDelta (the i32 at byte 23 of a v2 batch).
pub fn batch_last_offset(batch: &[u8]) -> i64 {
    batch_base_offset(batch) + i32::from_be_bytes(batch[23..27].try_into().unwrap()) as i64
}

/// The compression codec in a v2 batch's attributes (low 3 bits, byte 21).
pub fn batch_compression(batch: &[u8]) -> i16 {
    i16::from_be_bytes(batch[21..23].try_into().unwrap()) & 0x7
}

/// Decode every record of whole batches (checks each batch's CRC).
pub fn decode_records(batches: &[Bytes]) -> Vec<Record> {
    let mut out = Vec::new();
    for batch in batches {
        let mut buf = decodable_batch(batch);
        let set = RecordBatchDecoder::decode(&mut buf).expect("decode fetched batch");
        out.extend(set.records);
    }
    out
}

/// `batch` as kafka-protocol's decoder reads it: its LZ4 codec is the C
/// `lz4` crate, which the build leaves out, so an LZ4 batch is inflated
/// first (by the broker's own reader; the CRC is checked before); other
/// batches are returned as they are.
pub fn decodable_batch(batch: &Bytes) -> Bytes {
    if batch.len() < 23 || batch_compression(batch) != 3 {
        return batch.clone();
    }
    assert!(
        shardlog::protocol::record_batch::RecordBatch::new(batch).is_ok(),
        "LZ4 batch with a bad CRC or header"
    );
    let scratch = &mut shardlog::protocol::record_walk::InflateScratch::default();
    Bytes::from(inflate_batch(batch, scratch).expect("inflate LZ4 batch"))
}

/// Every batch of `region` (a segment file or a produced records field),
/// each made [`decodable_batch`], back to back; stops at a zero length (a
/// preallocated tail). A partial batch fails the test.
pub fn decodable_region(region: &Bytes) -> Bytes {
    let mut out = BytesMut::new();
    let mut pos = 0usize;
    while region.len() - pos >= 12 {
        let len = i32::from_be_bytes(region[pos + 8..pos + 12].try_into().unwrap());
        if len == 0 {
            break;
        }
        let end = pos + 12 + usize::try_from(len).expect("negative batch length");
        assert!(end <= region.len(), "partial batch at byte {pos}");
        out.extend_from_slice(&decodable_batch(&region.slice(pos..end)));
        pos = end;
    }
    assert!(
        region[pos..].iter().all(|&b| b == 0),
        "partial batch at byte {pos}"
    );
    out.freeze()
}
