//! Unit tests of `loadgen::producer`.

use super::*;
use crate::loadgen::accumulator::AccumulatorConfig;
use crate::loadgen::wire::read_payload_header;
use kafka_protocol::records::RecordBatchDecoder;

fn batch_of(n: usize, base_sequence: Option<i32>) -> ProducerBatch<RecordMeta> {
    let mut acc = Accumulator::new(AccumulatorConfig::default(), &[0], 1);
    for i in 0..n {
        let mut v = vec![7u8; 64];
        write_payload_header(&mut v, 1_000 + i as u64, 3, i as u64);
        let rec = PendingRecord {
            key: (i % 2 == 0).then(|| Bytes::from(format!("key-{i}"))),
            value: Bytes::from(v),
            timestamp_ms: 1_700_000_000_000 + i as i64,
            meta: RecordMeta {
                intended_ns: 0,
                send_ns: 0,
            },
        };
        acc.on_append(0, 0, rec).unwrap();
    }
    acc.begin_flush();
    let mut b = acc.on_drain(0).pop().unwrap().batches.pop().unwrap();
    b.base_sequence = base_sequence;
    b
}

#[test]
fn payload_header_round_trips() {
    let mut v = vec![0u8; 32];
    assert!(write_payload_header(&mut v, 123_456_789, 7, 42));
    assert_eq!(read_payload_header(&v), Some((123_456_789, 7, 42)));
    assert_eq!(read_payload_header(&v[..19]), None);
    assert!(!write_payload_header(&mut [0u8; 10], 1, 1, 1));
}

#[test]
fn encoded_batch_is_one_v2_batch_for_every_codec() {
    for codec in [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        for (pid, seq) in [(-1i64, None), (9, Some(100))] {
            let b = batch_of(5, seq);
            let epoch = if pid < 0 { -1 } else { 0 };
            let seq0 = b.base_sequence.unwrap_or(-1);
            let raw = encode_batch(&b.records, pid, epoch, seq0, codec).unwrap();
            // kafka-protocol reads LZ4 only once inflated (its LZ4 codec
            // is left out of the build); the codec bits are checked raw.
            let mut bytes = crate::loadgen::wire::decodable_batch(
                raw.clone(),
                &mut crate::protocol::record_walk::InflateScratch::default(),
            )
            .unwrap();
            let sets = RecordBatchDecoder::decode_all(&mut bytes).unwrap();
            assert_eq!(sets.len(), 1, "{codec:?}: one batch");
            let recs = &sets[0].records;
            assert_eq!(recs.len(), 5);
            if codec == Compression::Lz4 {
                assert_eq!(raw[22] & 0x7, 3, "Lz4: codec bits");
                assert_eq!(sets[0].compression, Compression::None);
            } else {
                assert_eq!(sets[0].compression, codec);
            }
            for (i, r) in recs.iter().enumerate() {
                assert_eq!(r.offset, i as i64);
                assert_eq!(r.producer_id, pid);
                let want_seq = seq.map_or(-1 + i as i32, |s| s + i as i32);
                assert_eq!(r.sequence, want_seq);
                let v = r.value.as_ref().unwrap();
                assert_eq!(
                    read_payload_header(v),
                    Some((1_000 + i as u64, 3, i as u64))
                );
                assert_eq!(r.key.is_some(), i % 2 == 0);
            }
        }
    }
}
