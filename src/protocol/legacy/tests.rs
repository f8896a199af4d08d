use super::*;
use crate::protocol::lz4_frame::Lz4Frame;
use crate::protocol::record_batch::RecordBatch;
use crate::protocol::record_walk::records_section;
use proptest::prelude::*;
use std::io::Read;

/// A v0 message at offset 5, key "k", value "v1", laid out by hand from
/// `LegacyRecord`'s table; the CRC32 was computed with Python's
/// `zlib.crc32` over magic..value.
const GOLDEN_V0: &[u8] = &[
    0, 0, 0, 0, 0, 0, 0, 5, // offset
    0, 0, 0, 17, // size: crc 4 + magic 1 + attributes 1 + 4 + 1 + 4 + 2
    0x61, 0x50, 0x54, 0x27, // crc
    0,    // magic
    0,    // attributes
    0, 0, 0, 1, b'k', // key
    0, 0, 0, 2, b'v', b'1', // value
];

/// A v1 message at offset 9, CreateTime 1_700_000_000_000, null key,
/// value "abc"; CRC32 from `zlib.crc32`.
const GOLDEN_V1: &[u8] = &[
    0, 0, 0, 0, 0, 0, 0, 9, // offset
    0, 0, 0, 25, // size
    0x1c, 0xff, 0x7d, 0xfc, // crc
    1,    // magic
    0,    // attributes
    0, 0, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00, // timestamp
    0xff, 0xff, 0xff, 0xff, // null key
    0, 0, 0, 3, b'a', b'b', b'c', // value
];

fn rec(
    offset: i64,
    timestamp: i64,
    key: Option<&'static [u8]>,
    value: &'static [u8],
) -> OutRecord<'static> {
    OutRecord {
        offset,
        timestamp,
        key,
        value: Some(value),
    }
}

fn format(magic: i8, compression: Compression) -> LegacyFormat {
    LegacyFormat {
        magic,
        compression,
        timestamp_type: TimestampType::CreateTime,
        log_append_time: -1,
        base_offset: 0,
    }
}

fn only_message(set: &[u8]) -> Message {
    let entries = shallow_entries(&Bytes::copy_from_slice(set)).unwrap();
    assert_eq!(entries.len(), 1);
    Message::parse(entries[0].offset, &entries[0].body()).unwrap()
}

#[test]
fn golden_v0_and_v1_messages_parse_and_are_written_byte_for_byte() {
    let m = only_message(GOLDEN_V0);
    assert!(m.is_valid());
    assert_eq!((m.offset, m.magic, m.attributes), (5, 0, 0));
    assert_eq!((m.timestamp, m.timestamp_type), (NO_TIMESTAMP, None));
    assert_eq!(m.key.as_deref(), Some(&b"k"[..]));
    assert_eq!(m.value.as_deref(), Some(&b"v1"[..]));
    let mut out = Vec::new();
    write_message_set(
        &mut out,
        format(0, Compression::None),
        &[rec(5, 77, Some(b"k"), b"v1")],
    )
    .unwrap();
    assert_eq!(out, GOLDEN_V0, "v0 drops the timestamp");

    let m = only_message(GOLDEN_V1);
    assert!(m.is_valid());
    assert_eq!((m.offset, m.magic), (9, 1));
    assert_eq!(m.timestamp, 1_700_000_000_000);
    assert_eq!(m.timestamp_type, Some(TimestampType::CreateTime));
    assert_eq!(m.key, None);
    assert_eq!(m.value.as_deref(), Some(&b"abc"[..]));
    let mut out = Vec::new();
    let r = OutRecord {
        offset: 9,
        timestamp: 1_700_000_000_000,
        key: None,
        value: Some(b"abc"),
    };
    write_message_set(&mut out, format(1, Compression::None), &[r]).unwrap();
    assert_eq!(out, GOLDEN_V1);
}

#[test]
fn a_flipped_byte_fails_the_crc32_and_a_null_value_parses() {
    let mut bad = GOLDEN_V1.to_vec();
    bad[36] ^= 1;
    assert!(!only_message(&bad).is_valid());
    let mut out = Vec::new();
    let r = OutRecord {
        offset: 0,
        timestamp: 3,
        key: Some(b"tomb"),
        value: None,
    };
    write_message_set(&mut out, format(1, Compression::None), &[r]).unwrap();
    let m = only_message(&out);
    assert!(m.is_valid());
    assert_eq!((m.key.as_deref(), m.value), (Some(&b"tomb"[..]), None));
}

#[test]
fn shallow_walk_refuses_tiny_sizes_and_bad_magic_and_stops_at_a_partial_entry() {
    let mut two = GOLDEN_V0.to_vec();
    two.extend_from_slice(GOLDEN_V1);
    two.extend_from_slice(&GOLDEN_V1[..20]);
    let entries = shallow_entries(&Bytes::from(two)).unwrap();
    assert_eq!(
        entries
            .iter()
            .map(|e| (e.offset, e.magic))
            .collect::<Vec<_>>(),
        [(5, 0), (9, 1)]
    );
    let mut tiny = GOLDEN_V0.to_vec();
    tiny[11] = 13;
    assert!(matches!(
        shallow_entries(&Bytes::from(tiny)),
        Err(BatchError::Corrupt(_))
    ));
    let mut magic = GOLDEN_V0.to_vec();
    magic[16] = 3;
    assert!(matches!(
        shallow_entries(&Bytes::from(magic)),
        Err(BatchError::Corrupt(_))
    ));
    assert_eq!(first_magic(GOLDEN_V1), Some(1));
}

#[test]
fn wrappers_of_every_codec_and_magic_round_trip_with_absolute_offsets() {
    let records = [
        rec(100, 1_000, Some(b"a"), b"one"),
        rec(101, 3_000, None, b"two"),
        rec(103, 2_000, Some(b"c"), b"three"),
    ];
    for magic in [0i8, 1] {
        for c in [Compression::Gzip, Compression::Snappy, Compression::Lz4] {
            let mut out = Vec::new();
            let mut f = format(magic, c);
            f.base_offset = 100;
            write_message_set(&mut out, f, &records).unwrap();
            let w = only_message(&out);
            assert!(w.is_valid() && w.is_compressed(), "{magic} {c:?}");
            assert_eq!(w.offset, 103, "the wrapper carries the last offset");
            assert_eq!(w.key, None);
            let want_ts = if magic == 0 { NO_TIMESTAMP } else { 3_000 };
            assert_eq!(w.timestamp, want_ts, "{magic} {c:?}");
            let inner = w.inner_messages(&mut InflateScratch::default()).unwrap();
            let got: Vec<_> = inner
                .iter()
                .map(|m| {
                    (
                        m.offset,
                        m.timestamp,
                        m.key.clone(),
                        m.value.clone(),
                        m.is_valid(),
                    )
                })
                .collect();
            let want: Vec<_> = records
                .iter()
                .map(|r| {
                    let ts = if magic == 0 {
                        NO_TIMESTAMP
                    } else {
                        r.timestamp
                    };
                    let b = |x: Option<&[u8]>| x.map(Bytes::copy_from_slice);
                    (r.offset, ts, b(r.key), b(r.value), true)
                })
                .collect();
            assert_eq!(got, want, "{magic} {c:?}");
        }
    }
}

/// The inner set of a v1 wrapper holds offsets 0, 1, 2 whatever the
/// absolute ones are; a v0 wrapper's are absolute.
#[test]
fn inner_offsets_are_relative_in_v1_and_absolute_in_v0() {
    let records = [rec(40, 1, None, b"x"), rec(41, 2, None, b"y")];
    for (magic, want) in [(0i8, [40i64, 41]), (1, [0, 1])] {
        let mut out = Vec::new();
        let mut f = format(magic, Compression::Gzip);
        f.base_offset = 40;
        write_message_set(&mut out, f, &records).unwrap();
        let w = only_message(&out);
        let raw = inflate_legacy_value(
            Compression::Gzip,
            magic,
            w.value.as_ref().unwrap(),
            &mut InflateScratch::default(),
        )
        .unwrap();
        let inner = shallow_entries(&Bytes::from(raw)).unwrap();
        assert_eq!(inner.iter().map(|e| e.offset).collect::<Vec<_>>(), want);
    }
}

/// A v1 wrapper written with offset 0 (some librdkafka versions'
/// produce data) takes its inner offsets as they are; a wrapper offset
/// below the last inner one, when not 0, is refused.
#[test]
fn v1_wrapper_offset_zero_and_too_small_offsets() {
    let records = [
        rec(0, 1, None, b"x"),
        rec(1, 2, None, b"y"),
        rec(2, 3, None, b"z"),
    ];
    let mut out = Vec::new();
    write_message_set(&mut out, format(1, Compression::Snappy), &records).unwrap();
    let with_offset = |o: i64| {
        let mut b = out.clone();
        b[..8].copy_from_slice(&o.to_be_bytes());
        only_message(&b)
    };
    let s = &mut InflateScratch::default();
    let offsets = |m: Message, s: &mut InflateScratch| {
        m.inner_messages(s)
            .map(|v| v.iter().map(|m| m.offset).collect::<Vec<_>>())
    };
    assert_eq!(offsets(with_offset(0), s).unwrap(), [0, 1, 2]);
    assert_eq!(offsets(with_offset(500), s).unwrap(), [498, 499, 500]);
    assert!(matches!(
        offsets(with_offset(1), s),
        Err(BatchError::InvalidRecord(_))
    ));
}

#[test]
fn a_log_append_time_wrapper_gives_its_time_to_every_inner_message() {
    let records = [rec(0, 1, None, b"x"), rec(1, 2, None, b"y")];
    let mut out = Vec::new();
    let mut f = format(1, Compression::Gzip);
    f.timestamp_type = TimestampType::LogAppendTime;
    f.log_append_time = 9_999;
    write_message_set(&mut out, f, &records).unwrap();
    let w = only_message(&out);
    assert_eq!(
        (w.timestamp, w.timestamp_type),
        (9_999, Some(TimestampType::LogAppendTime))
    );
    // Rewrite the wrapper's time (as a broker appending it would) and
    // recompute its CRC: readers use the wrapper's, not the inner bytes'.
    let mut b = out.clone();
    b[18..26].copy_from_slice(&5_555i64.to_be_bytes());
    let crc = crc32(&b[16..]);
    b[12..16].copy_from_slice(&crc.to_be_bytes());
    let w = only_message(&b);
    assert!(w.is_valid());
    let inner = w.inner_messages(&mut InflateScratch::default()).unwrap();
    assert!(inner
        .iter()
        .all(|m| m.timestamp == 5_555 && m.timestamp_type == Some(TimestampType::LogAppendTime)));
}

/// Magic 0 LZ4 frames carry Kafka's broken header checksum (over the
/// frame magic too), which a strict reader refuses and the legacy reader
/// ignores; magic 1 frames carry the correct one.
#[test]
fn lz4_header_checksum_is_broken_for_magic_0_and_correct_for_magic_1() {
    let data = b"hello hello hello hello".repeat(20);
    let v0 = compress(Compression::Lz4, 0, &data).unwrap();
    let v1 = compress(Compression::Lz4, 1, &data).unwrap();
    assert_eq!(
        v0[6],
        (twox_hash::XxHash32::oneshot(0, &v0[..6]) >> 8) as u8
    );
    assert_eq!(
        v1[6],
        (twox_hash::XxHash32::oneshot(0, &v1[4..6]) >> 8) as u8
    );
    let mut scratch = Vec::new();
    assert!(Lz4Frame::new(&v0, &mut scratch).is_err());
    let mut back = Vec::new();
    Lz4Frame::new(&v1, &mut scratch)
        .unwrap()
        .read_to_end(&mut back)
        .unwrap();
    assert_eq!(back, data);
    let s = &mut InflateScratch::default();
    assert_eq!(
        inflate_legacy_value(Compression::Lz4, 0, &v0, s).unwrap(),
        data
    );
    assert!(inflate_legacy_value(Compression::Lz4, 1, &v0, s).is_err());
}

#[test]
fn bad_wrappers_are_refused_as_kafka_refuses_them() {
    let s = &mut InflateScratch::default();
    let wrapper = |attributes: u8, value: Option<&[u8]>| {
        let mut out = Vec::new();
        put_message(&mut out, 0, 1, attributes, 0, None, value);
        only_message(&out)
    };
    let empty_gzip = compress(Compression::Gzip, 1, &[]).unwrap();
    for (name, m) in [
        ("zstd", wrapper(4, Some(b"x"))),
        ("null value", wrapper(1, None)),
        ("empty inner set", wrapper(1, Some(&empty_gzip))),
        ("codec 6", wrapper(6, Some(b"x"))),
    ] {
        assert!(
            matches!(m.inner_messages(s), Err(BatchError::InvalidRecord(_))),
            "{name}"
        );
    }
    assert!(matches!(
        wrapper(1, Some(b"not gzip")).inner_messages(s),
        Err(BatchError::Corrupt(_))
    ));
    let mut tiny = Vec::new();
    tiny.extend_from_slice(&0i64.to_be_bytes());
    tiny.extend_from_slice(&5i32.to_be_bytes());
    tiny.extend_from_slice(&[0; 5]);
    let gz = compress(Compression::Gzip, 1, &tiny).unwrap();
    assert!(matches!(
        wrapper(1, Some(&gz)).inner_messages(s),
        Err(BatchError::Corrupt(_))
    ));
    let mut out = Vec::new();
    assert!(write_message_set(
        &mut out,
        format(1, Compression::Zstd),
        &[rec(0, 0, None, b"x")]
    )
    .is_err());
}

#[test]
fn up_converted_v2_batches_hold_the_records_in_every_codec() {
    use kafka_protocol::records::RecordBatchDecoder;
    let records = [
        rec(0, 10, Some(b"k0"), b"v0"),
        OutRecord {
            offset: 1,
            timestamp: 30,
            key: None,
            value: None,
        },
        rec(2, 20, Some(b"k2"), b"v2"),
    ];
    let plain = build_v2_batch(&records, Compression::None).unwrap();
    let plain_records = records_section(&plain, &mut InflateScratch::default())
        .unwrap()
        .into_owned();
    for c in [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let b = build_v2_batch(&records, c).unwrap();
        let view = RecordBatch::new(&b).unwrap();
        view.validate_for_append().unwrap();
        assert_eq!(view.compression(), Some(c));
        assert_eq!(
            (
                view.base_timestamp(),
                view.max_timestamp(),
                view.record_count()
            ),
            (10, 30, 3)
        );
        assert_eq!(view.producer_id(), -1);
        let section = records_section(&b, &mut InflateScratch::default()).unwrap();
        assert_eq!(&*section, &plain_records[..], "{c:?}");
    }
    let decoded = RecordBatchDecoder::decode(&mut Bytes::from(plain))
        .unwrap()
        .records;
    let got: Vec<_> = decoded
        .iter()
        .map(|r| {
            (
                r.offset,
                r.timestamp,
                r.key.clone(),
                r.value.clone(),
                r.headers.len(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (
                0,
                10,
                Some(Bytes::from_static(b"k0")),
                Some(Bytes::from_static(b"v0")),
                0
            ),
            (1, 30, None, None, 0),
            (
                2,
                20,
                Some(Bytes::from_static(b"k2")),
                Some(Bytes::from_static(b"v2")),
                0
            ),
        ]
    );
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let b = Bytes::from(bytes);
        if let Ok(entries) = shallow_entries(&b) {
            for e in entries {
                if let Ok(m) = Message::parse(e.offset, &e.body()) {
                    let _ = m.inner_messages(&mut InflateScratch::default());
                }
            }
        }
        let _ = Message::parse(0, &b).map(|m| m.inner_messages(&mut InflateScratch::default()));
    }

    #[test]
    fn mutated_wrappers_never_panic(flips in proptest::collection::vec((0usize..400, any::<u8>()), 1..6), codec in 1u8..4) {
        let records = [rec(7, 1, Some(b"key"), b"value value"), rec(8, 2, None, b"v")];
        let mut out = Vec::new();
        let c = compression_of(codec).unwrap();
        write_message_set(&mut out, format(1, c), &records).unwrap();
        for (at, v) in flips { let n = out.len(); out[at % n] = v; }
        let b = Bytes::from(out);
        if let Ok(entries) = shallow_entries(&b) {
            for e in entries {
                if let Ok(m) = Message::parse(e.offset, &e.body()) {
                    let _ = m.inner_messages(&mut InflateScratch::default());
                }
            }
        }
    }
}
