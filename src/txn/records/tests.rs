//! `[pure]` tests of the `__transaction_state` record formats. The golden
//! vectors are worked out by hand from Kafka 3.9's `TransactionLogKey.json`
//! and `TransactionLogValue.json`; each shows its layout field by field.

use super::*;

fn hex(s: &str) -> Vec<u8> {
    s.split_whitespace()
        .filter(|t| *t != "|")
        .map(|t| u8::from_str_radix(t, 16).unwrap())
        .collect()
}

/// Transactional id "tx", producer 1000 epoch 5, 60 s timeout, Ongoing on
/// t-0 and t-1, started at 1699999999000, last updated 1700000000000.
fn ongoing() -> TxnLogValue {
    TxnLogValue {
        producer_id: 1000,
        producer_epoch: 5,
        transaction_timeout_ms: 60_000,
        state: TxnState::Ongoing,
        partitions: vec![("t".into(), vec![0, 1])],
        last_update_timestamp_ms: 1_700_000_000_000,
        start_timestamp_ms: 1_699_999_999_000,
    }
}

#[test]
fn key_matches_kafkas_bytes() {
    // version 0 | "tx": int16 length 2, 't' 'x'
    let want = hex("00 00 | 00 02 74 78");
    assert_eq!(encode_key("tx"), want);
    assert_eq!(decode_key(&want), Ok("tx".to_owned()));
    assert_eq!(decode_key(&hex("00 00 | 00 00")), Ok(String::new()));
}

#[test]
fn keys_of_unknown_versions_or_with_a_null_id_are_refused() {
    assert_eq!(
        decode_key(&hex("00 01 | 00 02 74 78")),
        Err(RecordError::UnknownVersion {
            what: "transaction log key",
            version: 1
        })
    );
    assert!(matches!(
        decode_key(&hex("00 00 | ff ff")),
        Err(RecordError::Malformed { .. })
    ));
    assert!(decode_key(&hex("00 00 | 00 01 ff")).is_err(), "not UTF-8");
    assert!(decode_key(&hex("00 00 | 00 01 74 00")).is_err(), "trailing");
}

#[test]
fn value_v0_matches_kafkas_bytes() {
    let want = hex("00 00 \
         | 00 00 00 00 00 00 03 e8 \
         | 00 05 \
         | 00 00 ea 60 \
         | 01 \
         | 00 00 00 01 \
         |   00 01 74 \
         |   00 00 00 02 | 00 00 00 00 | 00 00 00 01 \
         | 00 00 01 8b cf e5 68 00 \
         | 00 00 01 8b cf e5 64 18");
    // version | ProducerId 1000 | ProducerEpoch 5 | TransactionTimeoutMs
    // 60000 | TransactionStatus Ongoing | TransactionPartitions: 1 entry,
    // Topic "t", PartitionIds [0, 1] | LastUpdateTimestamp | StartTimestamp
    assert_eq!(encode_value(&ongoing()), want);
    assert_eq!(decode_value(&want), Ok(ongoing()));
}

#[test]
fn value_v1_matches_kafkas_bytes() {
    let want = hex("00 01 \
         | 00 00 00 00 00 00 03 e8 \
         | 00 05 \
         | 00 00 ea 60 \
         | 01 \
         | 02 \
         |   02 74 \
         |   03 | 00 00 00 00 | 00 00 00 01 \
         |   00 \
         | 00 00 01 8b cf e5 68 00 \
         | 00 00 01 8b cf e5 64 18 \
         | 00");
    // As v0, with compact lengths (n + 1 as an unsigned varint): 1 entry
    // → 02, "t" → 02, two ids → 03; an empty tag section (00) closes the
    // partition entry and the record.
    assert_eq!(encode_value_with(&ongoing(), true), want);
    assert_eq!(decode_value(&want), Ok(ongoing()));
}

#[test]
fn an_empty_transaction_writes_null_partitions() {
    let empty = TxnLogValue {
        producer_id: 7,
        producer_epoch: 0,
        transaction_timeout_ms: 1000,
        state: TxnState::Empty,
        partitions: Vec::new(),
        last_update_timestamp_ms: 1,
        start_timestamp_ms: -1,
    };
    // ... | status 00 | partitions null: int32 -1 | 1 | -1
    let v0 = hex(
        "00 00 | 00 00 00 00 00 00 00 07 | 00 00 | 00 00 03 e8 | 00 \
         | ff ff ff ff \
         | 00 00 00 00 00 00 00 01 | ff ff ff ff ff ff ff ff",
    );
    assert_eq!(encode_value(&empty), v0);
    assert_eq!(decode_value(&v0), Ok(empty.clone()));
    // v1: a null compact array is 00.
    let v1 = hex(
        "00 01 | 00 00 00 00 00 00 00 07 | 00 00 | 00 00 03 e8 | 00 \
         | 00 \
         | 00 00 00 00 00 00 00 01 | ff ff ff ff ff ff ff ff | 00",
    );
    assert_eq!(encode_value_with(&empty, true), v1);
    assert_eq!(decode_value(&v1), Ok(empty));
}

#[test]
fn a_completed_transaction_writes_an_empty_partition_list() {
    let done = TxnLogValue {
        state: TxnState::CompleteCommit,
        partitions: Vec::new(),
        ..ongoing()
    };
    let bytes = encode_value(&done);
    // 2 version + 8 + 2 + 4 + 1 status, then the int32 count 0.
    assert_eq!(bytes[16], 4, "CompleteCommit's id");
    assert_eq!(&bytes[17..21], &[0, 0, 0, 0]);
    assert_eq!(bytes.len(), 21 + 16);
    assert_eq!(decode_value(&bytes), Ok(done));
}

#[test]
fn tagged_fields_of_a_newer_kafka_are_skipped() {
    // Kafka 4.0's v1 adds tagged fields PreviousProducerId (tag 0) and
    // NextProducerId (tag 1): two tags, each tag | size 8 | int64. The
    // partition entry carries an unknown tag 5 of 1 byte.
    let bytes = hex("00 01 \
         | 00 00 00 00 00 00 03 e8 | 00 05 | 00 00 ea 60 | 01 \
         | 02 | 02 74 | 03 00 00 00 00 00 00 00 01 | 01 05 01 aa \
         | 00 00 01 8b cf e5 68 00 | 00 00 01 8b cf e5 64 18 \
         | 02 | 00 08 00 00 00 00 00 00 03 e7 | 01 08 00 00 00 00 00 00 03 e9");
    assert_eq!(decode_value(&bytes), Ok(ongoing()));
}

#[test]
fn a_null_partition_list_reads_as_none_in_any_state() {
    let mut bytes = encode_value(&TxnLogValue {
        state: TxnState::Empty,
        ..ongoing()
    });
    bytes[16] = TxnState::PrepareAbort.id() as u8;
    let v = decode_value(&bytes).unwrap();
    assert_eq!(v.state, TxnState::PrepareAbort);
    assert!(v.partitions.is_empty());
}

#[test]
fn malformed_values_are_refused() {
    let good = encode_value(&ongoing());
    let with = |at: usize, b: &[u8]| {
        let mut v = good.clone();
        v[at..at + b.len()].copy_from_slice(b);
        v
    };
    let rows: Vec<(&str, Vec<u8>)> = vec![
        ("version 2", with(0, &[0, 2])),
        ("version -1", with(0, &[0xff, 0xff])),
        ("state id 8", with(16, &[8])),
        ("state id -1", with(16, &[0xff])),
        ("2^31-1 topics", with(17, &[0x7f, 0xff, 0xff, 0xff])),
        ("-2 topics", with(17, &[0xff, 0xff, 0xff, 0xfe])),
        ("null topic", with(21, &[0xff, 0xff])),
        ("null ids", with(24, &[0xff, 0xff, 0xff, 0xff])),
        ("3 ids for 2", with(24, &[0, 0, 0, 3])),
        ("trailing byte", [good.clone(), vec![0]].concat()),
    ];
    for (what, bytes) in rows {
        assert!(decode_value(&bytes).is_err(), "{what}");
    }
    assert!(matches!(
        decode_value(&with(0, &[0, 2])),
        Err(RecordError::UnknownVersion { version: 2, .. })
    ));
}

/// A xorshift64 generator: deterministic, no crates.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn random_value(rng: &mut XorShift) -> TxnLogValue {
    let state = TxnState::ALL[rng.below(8) as usize];
    let partitions = if state == TxnState::Empty {
        Vec::new()
    } else {
        (0..rng.below(4))
            .map(|t| {
                let topic = format!("topic-{t}-{}", "é".repeat(rng.below(3) as usize));
                let ids = (0..rng.below(5)).map(|_| rng.next() as i32).collect();
                (topic, ids)
            })
            .collect()
    };
    TxnLogValue {
        producer_id: rng.next() as i64,
        producer_epoch: rng.next() as i16,
        transaction_timeout_ms: rng.next() as i32,
        state,
        partitions,
        last_update_timestamp_ms: rng.next() as i64,
        start_timestamp_ms: rng.next() as i64,
    }
}

#[test]
fn values_round_trip_in_both_versions() {
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    for _ in 0..500 {
        let v = random_value(&mut rng);
        for flexible in [false, true] {
            let bytes = encode_value_with(&v, flexible);
            assert_eq!(decode_value(&bytes), Ok(v.clone()), "{v:?} {flexible}");
        }
    }
    for id in ["", "tx", "ключ", &"x".repeat(300)] {
        assert_eq!(decode_key(&encode_key(id)).as_deref(), Ok(id));
    }
}

#[test]
fn every_truncation_is_an_error() {
    let mut rng = XorShift(42);
    let mut samples = Vec::new();
    for _ in 0..20 {
        let v = random_value(&mut rng);
        samples.push(encode_value_with(&v, false));
        samples.push(encode_value_with(&v, true));
    }
    samples.push(encode_value(&ongoing()));
    for bytes in &samples {
        for cut in 0..bytes.len() {
            assert!(decode_value(&bytes[..cut]).is_err(), "value cut at {cut}");
        }
    }
    let key = encode_key("tx");
    for cut in 0..key.len() {
        assert!(decode_key(&key[..cut]).is_err(), "key cut at {cut}");
    }
}

#[test]
fn arbitrary_bytes_never_panic() {
    let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
    for _ in 0..20_000 {
        let len = rng.below(80) as usize;
        let mut bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        // Mostly plausible headers, so the fields behind them are reached.
        if len >= 2 && rng.below(4) != 0 {
            bytes[0] = 0;
            bytes[1] = rng.below(2) as u8;
        }
        let _ = decode_key(&bytes);
        let _ = decode_value(&bytes);
    }
    // Valid encodings with one byte changed.
    let good = encode_value_with(&ongoing(), true);
    for at in 0..good.len() {
        for b in [0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff] {
            let mut bad = good.clone();
            bad[at] = b;
            let _ = decode_value(&bad);
        }
    }
}
