use super::*;
use crate::config::topic::BrokerTopicDefaults;
use crate::storage::cleaner::codec::compress_batch;
use bytes::{Bytes, BytesMut};
use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression as KCompression, Record, RecordBatchDecoder, RecordBatchEncoder,
    RecordEncodeOptions, TimestampType as KTimestampType,
};

const PRODUCER_ID: i64 = 4242;

fn record(i: i64, offset: i64, transactional: bool) -> Record {
    let mut headers = IndexMap::new();
    headers.insert(
        StrBytes::from_static_str("h"),
        Some(Bytes::from(format!("header-{i}"))),
    );
    Record {
        transactional,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: 0,
        producer_id: PRODUCER_ID,
        producer_epoch: 7,
        timestamp_type: KTimestampType::Creation,
        offset,
        sequence: 100 + i as i32,
        // Not monotonic: maxTimestamp is the largest, not the last.
        timestamp: 1_700_000_000_000 + (i * 37) % 11,
        key: (i % 3 != 0).then(|| Bytes::from(format!("key-{i}"))),
        value: Some(Bytes::from(vec![b'a' + (i % 26) as u8; 200])),
        headers,
    }
}

/// An uncompressed v2 batch of `n` records with consecutive offsets.
fn plain_batch(n: i64, transactional: bool) -> Vec<u8> {
    let recs: Vec<Record> = (0..n).map(|i| record(i, i, transactional)).collect();
    encode(&recs)
}

fn encode(recs: &[Record]) -> Vec<u8> {
    let mut buf = BytesMut::new();
    let opts = RecordEncodeOptions {
        version: 2,
        compression: KCompression::None,
    };
    RecordBatchEncoder::encode(&mut buf, recs, &opts).unwrap();
    buf.to_vec()
}

fn decode(batch: &[u8]) -> Vec<Record> {
    RecordBatchDecoder::decode(&mut Bytes::copy_from_slice(batch))
        .unwrap()
        .records
}

fn target(codec: i16) -> TargetCompression {
    TargetCompression { codec, level: None }
}

fn config(compression_type: &str) -> TopicConfig {
    let d = BrokerTopicDefaults {
        compression_type: compression_type.to_string(),
        ..Default::default()
    };
    TopicConfig::from_broker_defaults(&d)
}

#[test]
fn the_topic_config_names_the_target_and_producer_keeps_every_codec() {
    assert_eq!(TargetCompression::of(&config("producer")), None);
    assert_eq!(
        TargetCompression::of(&config("uncompressed")),
        Some(target(0))
    );
    assert_eq!(TargetCompression::of(&config("snappy")), Some(target(2)));
    assert_eq!(TargetCompression::of(&config("lz4")), Some(target(3)));
    let mut zstd = config("zstd");
    zstd.compression_zstd_level = 9;
    assert_eq!(
        TargetCompression::of(&zstd),
        Some(TargetCompression {
            codec: 4,
            level: Some(9)
        })
    );
    assert_eq!(
        TargetCompression::of(&config("gzip")),
        Some(TargetCompression {
            codec: 1,
            level: Some(-1)
        })
    );
}

#[test]
fn only_a_batch_whose_codec_differs_from_the_target_is_converted() {
    let plain = plain_batch(5, false);
    let gzip = compress_batch(&plain, 1).unwrap();
    assert!(target(4).needs_conversion(&gzip));
    assert!(target(0).needs_conversion(&gzip));
    assert!(
        !target(1).needs_conversion(&gzip),
        "same codec, any level: in place"
    );
    assert!(target(1).needs_conversion(&plain));
    assert!(!target(0).needs_conversion(&plain));
    // A control batch (a transaction marker) is never compressed.
    let mut control = plain.clone();
    control[22] |= 0x20;
    assert!(!target(4).needs_conversion(&control));
    assert!(!target(4).needs_conversion(b"short"));
}

#[test]
fn every_codec_converts_to_every_other_and_the_records_read_back_equal() {
    let plain = plain_batch(40, false);
    let expected = decode(&plain);
    for from in 0..=4i16 {
        let source = if from == 0 {
            plain.clone()
        } else {
            compress_batch(&plain, from).unwrap()
        };
        for to in 0..=4i16 {
            let out = recompress(&source, target(to), &mut InflateScratch::default()).unwrap();
            let view = RecordBatch::new(&out).expect("a valid CRC-32C");
            assert_eq!(view.compression().map(codec_id), Some(to), "{from}->{to}");
            let got = if to == 3 {
                // kafka-protocol's LZ4 decoder is left out of the build.
                decode(
                    &crate::storage::cleaner::codec::inflate_batch(
                        &out,
                        &mut InflateScratch::default(),
                    )
                    .unwrap(),
                )
            } else {
                decode(&out)
            };
            assert_eq!(got, expected, "{from}->{to}");
        }
    }
}

#[test]
fn producer_fields_and_the_transactional_bit_survive_a_conversion() {
    let plain = plain_batch(10, true);
    let gzip = compress_batch(&plain, 1).unwrap();
    let out = recompress(&gzip, target(4), &mut InflateScratch::default()).unwrap();
    let (a, b) = (
        RecordBatch::new(&gzip).unwrap(),
        RecordBatch::new(&out).unwrap(),
    );
    assert!(b.is_transactional());
    assert!(!b.is_control());
    assert_eq!(b.producer_id(), PRODUCER_ID);
    assert_eq!(b.producer_epoch(), a.producer_epoch());
    assert_eq!(b.base_sequence(), 100);
    assert_eq!(b.base_offset(), a.base_offset());
    assert_eq!(b.partition_leader_epoch(), a.partition_leader_epoch());
    assert_eq!(b.record_count(), 10);
    assert_eq!(b.last_offset_delta(), 9);
    assert_eq!(b.timestamp_type(), TimestampType::CreateTime);
    let max = (0..10).map(|i| record(i, i, true).timestamp).max().unwrap();
    assert_eq!(b.max_timestamp(), max);
    assert_eq!(b.base_timestamp(), record(0, 0, true).timestamp);
}

#[test]
fn offset_deltas_are_renumbered_as_kafkas_builder_assigns_them() {
    // Offsets 0, 2, 5 (a compacted batch's shape): Kafka's
    // `appendWithOffset` with a running counter gives 0, 1, 2.
    let recs: Vec<Record> = [0, 2, 5].iter().map(|&o| record(o, o, false)).collect();
    let out = recompress(&encode(&recs), target(2), &mut InflateScratch::default()).unwrap();
    let view = RecordBatch::new(&out).unwrap();
    assert_eq!(view.last_offset_delta(), 2);
    let offsets: Vec<i64> = decode(&out).iter().map(|r| r.offset).collect();
    assert_eq!(offsets, [0, 1, 2]);
    let timestamps: Vec<i64> = decode(&out).iter().map(|r| r.timestamp).collect();
    assert_eq!(
        timestamps,
        recs.iter().map(|r| r.timestamp).collect::<Vec<_>>()
    );
}

#[test]
fn a_record_count_the_records_do_not_match_is_an_invalid_record() {
    let plain = plain_batch(3, false);
    let mut more = plain.clone();
    more[57..61].copy_from_slice(&4i32.to_be_bytes());
    let mut fewer = plain.clone();
    fewer[57..61].copy_from_slice(&2i32.to_be_bytes());
    for bad in [more, fewer] {
        let bad = compress_batch(&bad, 1).unwrap();
        assert!(matches!(
            recompress(&bad, target(4), &mut InflateScratch::default()),
            Err(BatchError::InvalidRecord(_))
        ));
    }
    // A gzip body that is not gzip.
    let mut garbage = compress_batch(&plain, 1).unwrap();
    let len = garbage.len();
    garbage[70..len].fill(0x55);
    assert!(matches!(
        recompress(&garbage, target(4), &mut InflateScratch::default()),
        Err(BatchError::Corrupt(_))
    ));
}

#[test]
fn arbitrary_record_bytes_never_panic() {
    let plain = plain_batch(3, false);
    for cut in 61..plain.len() {
        for byte in [0x00u8, 0x7f, 0x80, 0xff] {
            let mut b = plain.clone();
            b[cut] = byte;
            let _ = recompress(&b, target(4), &mut InflateScratch::default());
        }
    }
}

#[test]
fn the_topic_levels_reach_the_encoder() {
    let plain = plain_batch(40, false);
    let at = |codec, level| {
        recompress(
            &plain,
            TargetCompression { codec, level },
            &mut InflateScratch::default(),
        )
        .unwrap()
    };
    // gzip's header records the level class (XFL 2 = best, 4 = fastest).
    assert_eq!(at(1, Some(9))[61 + 8], 2);
    assert_eq!(at(1, Some(1))[61 + 8], 4);
    assert_ne!(at(4, Some(1)), at(4, Some(19)));
    for b in [
        at(1, Some(9)),
        at(1, Some(-1)),
        at(4, Some(-5)),
        at(4, Some(22)),
    ] {
        assert_eq!(decode(&b), decode(&plain));
    }
}
