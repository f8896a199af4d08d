//! `[pure]` The producer's hot-path encoders: an uncompressed v2 record
//! batch written straight from the pending records, and a Produce request
//! frame whose record batches are left out of the frame buffer (they are
//! sent from their own buffers with `writev`). Both produce exactly the
//! bytes `kafka_protocol`'s encoders produce (unit-tested against them);
//! they exist because the generic path built a `Record` per message and
//! copied every batch a second time into the request buffer, ~10% of the
//! client core at 1.5 GB/s.
//!
//! Also here: the generic batch encoder they are measured against (any
//! codec), and the 20-byte payload header the producer writes into every
//! record value and the consumer reads back for end-to-end latency.

use anyhow::{anyhow, Result};
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

use super::accumulator::{record_body_size, varint_size, PendingRecord};
use crate::protocol::record_walk::InflateScratch;
use crate::protocol::varint::{put_unsigned_varint, put_varint};
use crate::storage::cleaner::codec::{compress_batch, inflate_batch};

/// Bytes of a v2 batch header (`DefaultRecordBatch.RECORD_BATCH_OVERHEAD`).
const BATCH_HEADER: usize = 61;
/// The CRC covers the batch from the attributes field on.
const CRC_FROM: usize = 21;

/// One uncompressed v2 batch of `records` (offset deltas from 0, base
/// offset 0 for the broker to assign), with the producer fields given;
/// without idempotence `base_sequence` is -1.
pub fn encode_plain_batch<M>(
    records: &[PendingRecord<M>],
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
) -> Bytes {
    // The smallest timestamp, as kafka_protocol's encoder (Java's producer
    // takes the first record's; the loadgen's are non-decreasing anyway).
    let base_ts = records.iter().map(|r| r.timestamp_ms).min().unwrap_or(-1);
    let max_ts = records.iter().map(|r| r.timestamp_ms).max().unwrap_or(-1);
    let body_of = |i: usize, r: &PendingRecord<M>| {
        record_body_size(
            i as i64,
            r.timestamp_ms - base_ts,
            r.key.as_ref().map(|k| k.len()),
            r.value.len(),
        )
    };
    let mut body = 0usize;
    for (i, r) in records.iter().enumerate() {
        let n = body_of(i, r);
        body += varint_size(n as i64) + n;
    }
    let mut buf = BytesMut::with_capacity(BATCH_HEADER + body);
    buf.put_i64(0); // base offset
    buf.put_i32((BATCH_HEADER - 12 + body) as i32); // batch length
    buf.put_i32(-1); // partition leader epoch
    buf.put_i8(2); // magic
    buf.put_u32(0); // crc, below
    buf.put_i16(0); // attributes: no compression, create time
    buf.put_i32(records.len() as i32 - 1); // last offset delta
    buf.put_i64(base_ts);
    buf.put_i64(max_ts);
    buf.put_i64(producer_id);
    buf.put_i16(producer_epoch);
    buf.put_i32(base_sequence);
    buf.put_i32(records.len() as i32);
    for (i, r) in records.iter().enumerate() {
        put_varint(&mut buf, body_of(i, r) as i64);
        buf.put_i8(0); // record attributes
        put_varint(&mut buf, r.timestamp_ms - base_ts);
        put_varint(&mut buf, i as i64);
        match &r.key {
            Some(k) => {
                put_varint(&mut buf, k.len() as i64);
                buf.put_slice(k);
            }
            None => put_varint(&mut buf, -1),
        }
        put_varint(&mut buf, r.value.len() as i64);
        buf.put_slice(&r.value);
        put_varint(&mut buf, 0); // headers
    }
    let crc = crc32c::crc32c(&buf[CRC_FROM..]);
    buf[17..21].copy_from_slice(&crc.to_be_bytes());
    buf.freeze()
}

/// A piece of a Produce frame: bytes of the frame buffer, or the record
/// batch of the `n`th partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece {
    Frame(usize, usize),
    Batch(usize),
}

/// The fixed fields of a Produce request.
#[derive(Debug, Clone, Copy)]
pub struct ProduceFields<'a> {
    pub version: i16,
    pub correlation_id: i32,
    pub client_id: &'a str,
    pub acks: i16,
    pub timeout_ms: i32,
}

/// Writes a Produce request frame (size prefix, request header, body)
/// for one topic into `frame`, except the record batches of `partitions`
/// (`(index, batch)`): returns the pieces that, concatenated, make the
/// frame. Versions 3-12 (topic names; flexible from 9).
pub fn encode_produce_frame(
    frame: &mut Vec<u8>,
    f: ProduceFields<'_>,
    topic: &str,
    partitions: &[(i32, Bytes)],
) -> Vec<Piece> {
    let ProduceFields {
        version,
        correlation_id,
        client_id,
        acks,
        timeout_ms,
    } = f;
    let flexible = version >= 9;
    frame.clear();
    frame.extend_from_slice(&[0; 4]);
    frame.extend_from_slice(&0i16.to_be_bytes()); // api key: Produce
    frame.extend_from_slice(&version.to_be_bytes());
    frame.extend_from_slice(&correlation_id.to_be_bytes());
    // Header v1/v2: client_id is a (non-compact) nullable string.
    frame.extend_from_slice(&(client_id.len() as i16).to_be_bytes());
    frame.extend_from_slice(client_id.as_bytes());
    if flexible {
        frame.push(0); // header tagged fields
        frame.push(0); // transactional_id: null compact string
    } else {
        frame.extend_from_slice(&(-1i16).to_be_bytes());
    }
    frame.extend_from_slice(&acks.to_be_bytes());
    frame.extend_from_slice(&timeout_ms.to_be_bytes());
    if flexible {
        put_unsigned_varint(frame, 2); // one topic
        put_unsigned_varint(frame, topic.len() as u64 + 1);
        frame.extend_from_slice(topic.as_bytes());
        put_unsigned_varint(frame, partitions.len() as u64 + 1);
    } else {
        frame.extend_from_slice(&1i32.to_be_bytes());
        frame.extend_from_slice(&(topic.len() as i16).to_be_bytes());
        frame.extend_from_slice(topic.as_bytes());
        frame.extend_from_slice(&(partitions.len() as i32).to_be_bytes());
    }
    let mut pieces = Vec::with_capacity(partitions.len() * 2 + 1);
    let mut start = 0;
    let mut batches = 0usize;
    for (n, (index, batch)) in partitions.iter().enumerate() {
        if n > 0 && flexible {
            frame.push(0); // previous partition's tagged fields
        }
        frame.extend_from_slice(&index.to_be_bytes());
        if flexible {
            put_unsigned_varint(frame, batch.len() as u64 + 1);
        } else {
            frame.extend_from_slice(&(batch.len() as i32).to_be_bytes());
        }
        pieces.push(Piece::Frame(start, frame.len()));
        pieces.push(Piece::Batch(n));
        start = frame.len();
        batches += batch.len();
    }
    if flexible {
        if !partitions.is_empty() {
            frame.push(0); // last partition's tagged fields
        }
        frame.push(0); // topic tagged fields
        frame.push(0); // request tagged fields
    }
    if frame.len() > start {
        pieces.push(Piece::Frame(start, frame.len()));
    }
    let size = (frame.len() - 4 + batches) as i32;
    frame[..4].copy_from_slice(&size.to_be_bytes());
    pieces
}

/// Payload header: wall-clock send timestamp (ns), producer index, sequence.
pub const PAYLOAD_HEADER_BYTES: usize = 20;

/// Writes the payload header into the first 20 bytes of `value`.
pub fn write_payload_header(value: &mut [u8], send_wall_ns: u64, producer: u32, seq: u64) -> bool {
    let Some(h) = value.get_mut(..PAYLOAD_HEADER_BYTES) else {
        return false;
    };
    h[..8].copy_from_slice(&send_wall_ns.to_le_bytes());
    h[8..12].copy_from_slice(&producer.to_le_bytes());
    h[12..20].copy_from_slice(&seq.to_le_bytes());
    true
}

/// Reads `(send_wall_ns, producer, seq)` from a payload.
pub fn read_payload_header(value: &[u8]) -> Option<(u64, u32, u64)> {
    let h = value.get(..PAYLOAD_HEADER_BYTES)?;
    let ts = u64::from_le_bytes(h[..8].try_into().ok()?);
    let producer = u32::from_le_bytes(h[8..12].try_into().ok()?);
    let seq = u64::from_le_bytes(h[12..20].try_into().ok()?);
    Some((ts, producer, seq))
}

/// Encodes one v2 record batch. Offsets are 0-based deltas; without
/// idempotence the base sequence is -1 (records carry `-1 + i` so the
/// encoder keeps them in one batch: it splits where offset - sequence
/// changes).
///
/// The generic path (any codec); `wire::encode_plain_batch` writes the
/// same bytes for uncompressed batches without a `Record` per message.
pub fn encode_batch<M>(
    pending: &[PendingRecord<M>],
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    compression: Compression,
) -> Result<Bytes> {
    let records: Vec<Record> = pending
        .iter()
        .enumerate()
        .map(|(i, r)| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id,
            producer_epoch,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: base_sequence.wrapping_add(i as i32),
            timestamp: r.timestamp_ms,
            key: r.key.clone(),
            value: Some(r.value.clone()),
            headers: Default::default(),
        })
        .collect();
    let estimate: usize = pending.iter().map(|r| r.value.len() + 32).sum();
    let mut buf = BytesMut::with_capacity(estimate + 64);
    // LZ4 is written by the cleaner's frame writer: kafka-protocol's needs
    // the C `lz4` crate, which the build leaves out.
    let lz4 = matches!(compression, Compression::Lz4);
    RecordBatchEncoder::encode(
        &mut buf,
        records.iter(),
        &RecordEncodeOptions {
            version: 2,
            compression: if lz4 { Compression::None } else { compression },
        },
    )?;
    if lz4 {
        let squeezed = compress_batch(&buf, LZ4_CODEC).map_err(|e| anyhow!("lz4 batch: {e}"))?;
        return Ok(Bytes::from(squeezed));
    }
    Ok(buf.freeze())
}

/// The LZ4 codec id (attributes bits 0-2).
const LZ4_CODEC: i16 = 3;

/// `batch` ready for kafka-protocol's `RecordBatchDecoder`, which reads
/// every codec but LZ4 (its LZ4 reader is the C `lz4` crate, left out of
/// the build): an LZ4 batch comes back inflated (in `scratch` on the way);
/// any other as it is.
pub fn decodable_batch(batch: Bytes, scratch: &mut InflateScratch) -> Result<Bytes> {
    let codec = batch
        .get(21..23)
        .map_or(0, |a| i16::from_be_bytes([a[0], a[1]]) & 0x7);
    if codec != LZ4_CODEC {
        return Ok(batch);
    }
    let inflated = inflate_batch(&batch, scratch).map_err(|e| anyhow!("lz4 batch: {e}"))?;
    Ok(Bytes::from(inflated))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::produce_request::{
        PartitionProduceData, ProduceRequest, TopicProduceData,
    };
    use kafka_protocol::messages::{RequestHeader, TopicName};
    use kafka_protocol::protocol::{Encodable, HeaderVersion, Request, StrBytes};

    fn rec(key: Option<&str>, len: usize, ts: i64, fill: u8) -> PendingRecord<()> {
        PendingRecord {
            key: key.map(|k| Bytes::copy_from_slice(k.as_bytes())),
            value: Bytes::from(vec![fill; len]),
            timestamp_ms: ts,
            meta: (),
        }
    }

    #[test]
    fn plain_batches_match_kafka_protocols_encoder() {
        let cases: Vec<(Vec<PendingRecord<()>>, i64, i16, i32)> = vec![
            (vec![rec(None, 1024, 1_700_000_000_000, 1)], -1, -1, -1),
            (
                (0..300)
                    .map(|i| rec(None, 1024, 1_700_000_000_000 + i / 7, i as u8))
                    .collect(),
                -1,
                -1,
                -1,
            ),
            (
                vec![
                    rec(Some("key-1"), 10, 5_000, 2),
                    rec(None, 0, 4_000, 3),
                    rec(Some(""), 200, 9_000, 4),
                ],
                42,
                3,
                1000,
            ),
        ];
        for (records, pid, epoch, seq) in cases {
            let ours = encode_plain_batch(&records, pid, epoch, seq);
            // The producer's generic (kafka_protocol) path.
            let reference = encode_batch(&records, pid, epoch, seq, Compression::None).unwrap();
            assert_eq!(ours, reference);
        }
    }

    #[test]
    fn produce_frames_match_kafka_protocols_encoder_for_every_version() {
        let batches: Vec<(i32, Bytes)> = vec![
            (0, Bytes::from(vec![7u8; 300])),
            (5, Bytes::from(vec![8u8; 70_000])),
            (2, Bytes::from(vec![9u8; 1])),
        ];
        for version in 3..=12i16 {
            for parts in [&batches[..], &batches[..1]] {
                let mut frame = Vec::new();
                let fields = ProduceFields {
                    version,
                    correlation_id: 77,
                    client_id: "lg-1",
                    acks: -1,
                    timeout_ms: 30_000,
                };
                let pieces = encode_produce_frame(&mut frame, fields, "p1", parts);
                let mut ours = Vec::new();
                for p in &pieces {
                    match *p {
                        Piece::Frame(a, b) => ours.extend_from_slice(&frame[a..b]),
                        Piece::Batch(n) => ours.extend_from_slice(&parts[n].1),
                    }
                }
                let mut td = TopicProduceData::default();
                td.name = TopicName(StrBytes::from_static_str("p1"));
                td.partition_data = parts
                    .iter()
                    .map(|(i, b)| {
                        let mut pd = PartitionProduceData::default();
                        pd.index = *i;
                        pd.records = Some(b.clone());
                        pd
                    })
                    .collect();
                let mut req = ProduceRequest::default();
                req.acks = -1;
                req.timeout_ms = 30_000;
                req.topic_data = vec![td];
                let mut header = RequestHeader::default();
                header.request_api_key = ProduceRequest::KEY;
                header.request_api_version = version;
                header.correlation_id = 77;
                header.client_id = Some(StrBytes::from_static_str("lg-1"));
                let mut want = BytesMut::new();
                want.put_i32(0);
                header
                    .encode(&mut want, ProduceRequest::header_version(version))
                    .unwrap();
                req.encode(&mut want, version).unwrap();
                let len = (want.len() - 4) as i32;
                want[..4].copy_from_slice(&len.to_be_bytes());
                assert_eq!(
                    ours,
                    want.to_vec(),
                    "version {version}, {} partitions",
                    parts.len()
                );
            }
        }
    }
}
