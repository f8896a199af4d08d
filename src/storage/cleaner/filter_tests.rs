use super::*;
use bytes::{Bytes, BytesMut};
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

/// One uncompressed v2 batch at `base` of (key, value) records, timestamps
/// 1000 + i, producer `pid` (-1 = none).
fn batch(base: i64, records: &[(Option<&str>, Option<&str>)], pid: i64) -> Vec<u8> {
    let recs: Vec<Record> = records
        .iter()
        .enumerate()
        .map(|(i, (k, v))| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 3,
            producer_id: pid,
            producer_epoch: if pid >= 0 { 1 } else { -1 },
            timestamp_type: TimestampType::Creation,
            offset: base + i as i64,
            sequence: if pid >= 0 {
                10 + i as i32
            } else {
                i as i32 - 1
            },
            timestamp: 1000 + i as i64,
            key: k.map(|s| Bytes::copy_from_slice(s.as_bytes())),
            value: v.map(|s| Bytes::copy_from_slice(s.as_bytes())),
            headers: Default::default(),
        })
        .collect();
    let mut buf = BytesMut::new();
    let opts = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut buf, &recs, &opts).unwrap();
    buf.to_vec()
}

fn decode(b: &[u8]) -> Vec<Record> {
    let mut bytes = Bytes::copy_from_slice(b);
    RecordBatchDecoder::decode(&mut bytes).unwrap().records
}

fn map_of(entries: &[(&str, i64)], latest: i64) -> OffsetMap {
    let mut m = OffsetMap::new(1 << 20);
    for (k, o) in entries {
        m.put(k.as_bytes(), *o);
    }
    m.update_latest_offset(latest);
    m
}

/// Active producers at epoch 1 whose last data batch ends at the offset.
fn last_data(producers: &BTreeMap<i64, i64>) -> BTreeMap<i64, LastRecord> {
    producers
        .iter()
        .map(|(&pid, &offset)| {
            let last = LastRecord {
                last_data_offset: Some(offset),
                producer_epoch: 1,
            };
            (pid, last)
        })
        .collect()
}

fn run(b: &[u8], map: &OffsetMap, now: i64, producers: &BTreeMap<i64, i64>) -> Filtered {
    let last_records = last_data(producers);
    let rules = RetainRules {
        map,
        now_ms: now,
        delete_retention_ms: 500,
        last_records: &last_records,
    };
    filter_batch(b, &b[HEADER_LEN..], &rules).unwrap()
}

/// A COMMIT (or ABORT) marker of producer `pid` at epoch 1, offset `at`,
/// timestamp 1000.
fn marker(at: i64, pid: i64, commit: bool) -> Vec<u8> {
    let mut b = crate::protocol::control_record::end_txn_marker_batch(pid, 1, 4, commit, 1000);
    // The base offset lies outside the CRC.
    b[..8].copy_from_slice(&at.to_be_bytes());
    b
}

fn run_marker(
    b: &[u8],
    now: i64,
    last_records: &BTreeMap<i64, LastRecord>,
    can_discard: bool,
) -> Filtered {
    let map = map_of(&[], 100);
    let rules = RetainRules {
        map: &map,
        now_ms: now,
        delete_retention_ms: 500,
        last_records,
    };
    filter_marker(b, &b[HEADER_LEN..], &rules, can_discard).unwrap()
}

fn rewritten(b: &[u8], f: &Filtered) -> Vec<u8> {
    match &f.outcome {
        Outcome::Rewrite(r) => encode_batch(b, r, &r.records),
        other => panic!("expected a rewrite, got {other:?}"),
    }
}

#[test]
fn keeps_the_latest_record_per_key_and_drops_older_and_keyless_ones() {
    let b = batch(
        10,
        &[
            (Some("a"), Some("1")),
            (Some("b"), Some("2")),
            (None, Some("x")),
            (Some("a"), Some("3")),
        ],
        -1,
    );
    let map = map_of(&[("a", 13), ("b", 11)], 13);
    let f = run(&b, &map, 0, &BTreeMap::new());
    assert_eq!((f.records_read, f.records_kept), (4, 2));
    let out = rewritten(&b, &f);
    let recs = decode(&out);
    let got: Vec<(i64, &[u8])> = recs
        .iter()
        .map(|r| (r.offset, r.value.as_deref().unwrap()))
        .collect();
    assert_eq!(got, vec![(11, &b"2"[..]), (13, &b"3"[..])]);
    // Offsets, the last offset (for the producer's sequence) and epoch stay.
    assert_eq!(RecordBatch::new(&out).unwrap().base_offset(), 10);
    assert_eq!(RecordBatch::new(&out).unwrap().last_offset(), 13);
    assert_eq!(RecordBatch::new(&out).unwrap().partition_leader_epoch(), 3);
    // Timestamps survive the new base timestamp.
    assert_eq!(recs[0].timestamp, 1001);
    assert_eq!(recs[1].timestamp, 1003);
    assert_eq!(RecordBatch::new(&out).unwrap().max_timestamp(), 1003);
}

#[test]
fn records_past_the_maps_latest_offset_are_kept() {
    let b = batch(20, &[(Some("a"), Some("1")), (Some("a"), Some("2"))], -1);
    // The map ends at 15 (full), even though it saw "a" at 14.
    let map = map_of(&[("a", 14)], 15);
    let f = run(&b, &map, 0, &BTreeMap::new());
    assert_eq!(f.outcome, Outcome::KeepOriginal);
    assert_eq!(f.records_kept, 2);
}

#[test]
fn keys_the_dirty_part_never_saw_are_kept() {
    let b = batch(0, &[(Some("old"), Some("1"))], -1);
    let map = map_of(&[("other", 5)], 5);
    assert_eq!(
        run(&b, &map, 0, &BTreeMap::new()).outcome,
        Outcome::KeepOriginal
    );
}

#[test]
fn a_tombstone_gets_a_delete_horizon_then_goes_after_it() {
    let b = batch(0, &[(Some("a"), Some("1")), (Some("b"), None)], -1);
    let map = map_of(&[("a", 0), ("b", 1)], 1);
    let first = run(&b, &map, 10_000, &BTreeMap::new());
    assert_eq!(first.records_kept, 2);
    assert_eq!(first.pending_delete_horizon_ms, Some(10_500));
    let out = rewritten(&b, &first);
    let view = RecordBatch::new(&out).unwrap();
    assert!(view.has_delete_horizon());
    assert_eq!(
        view.base_timestamp(),
        10_500,
        "KIP-534: the base timestamp holds the horizon"
    );
    let recs = decode(&out);
    assert_eq!(recs[0].timestamp, 1000);
    assert_eq!(recs[1].timestamp, 1001);
    assert!(recs[1].value.is_none());
    // Before the horizon the tombstone stays (original bytes now).
    let again = run(&out, &map, 10_499, &BTreeMap::new());
    assert_eq!(again.outcome, Outcome::KeepOriginal);
    // At the horizon it goes; the horizon stays on the batch.
    let late = run(&out, &map, 10_500, &BTreeMap::new());
    assert_eq!(late.records_kept, 1);
    assert_eq!(late.pending_delete_horizon_ms, None);
    let out2 = rewritten(&out, &late);
    let recs = decode(&out2);
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0].key.as_deref(), Some(&b"a"[..]));
    assert_eq!(recs[0].timestamp, 1000);
}

#[test]
fn an_emptied_batch_goes_unless_it_is_an_active_producers_last() {
    let b = batch(5, &[(Some("a"), Some("1")), (Some("a"), Some("2"))], 77);
    let map = map_of(&[("a", 9)], 9);
    assert_eq!(run(&b, &map, 0, &BTreeMap::new()).outcome, Outcome::Drop);
    let other = BTreeMap::from([(77, 9)]);
    assert_eq!(run(&b, &map, 0, &other).outcome, Outcome::Drop);
    let last = BTreeMap::from([(77, 6)]);
    let Outcome::Empty(h) = run(&b, &map, 0, &last).outcome else {
        panic!("expected an empty batch");
    };
    let view = RecordBatch::new(&h).unwrap();
    assert_eq!(h.len(), HEADER_LEN);
    assert_eq!((view.base_offset(), view.last_offset()), (5, 6));
    assert_eq!(
        (
            view.producer_id(),
            view.producer_epoch(),
            view.base_sequence()
        ),
        (77, 1, 10)
    );
    assert_eq!(view.record_count(), 0);
    assert_eq!(view.base_timestamp(), view.max_timestamp());
    assert!(decode(&h).is_empty());
}

#[test]
fn producer_fields_survive_a_rewrite() {
    let b = batch(0, &[(Some("a"), Some("1")), (Some("b"), Some("2"))], 42);
    let map = map_of(&[("a", 5), ("b", 1)], 5);
    let f = run(&b, &map, 0, &BTreeMap::new());
    let out = rewritten(&b, &f);
    let v = RecordBatch::new(&out).unwrap();
    assert_eq!(
        (v.producer_id(), v.producer_epoch(), v.base_sequence()),
        (42, 1, 10)
    );
    assert_eq!(v.last_offset_delta(), 1);
    assert_eq!(
        decode(&out)[0].sequence,
        11,
        "the kept record's own sequence"
    );
}

#[test]
fn a_marker_that_may_go_gets_a_delete_horizon_then_goes_after_it() {
    let none = BTreeMap::new();
    let b = marker(20, 9, true);
    let first = run_marker(&b, 10_000, &none, true);
    assert_eq!((first.records_read, first.records_kept), (1, 1));
    assert_eq!(first.pending_delete_horizon_ms, Some(10_500));
    let out = rewritten(&b, &first);
    let view = RecordBatch::new(&out).expect("a valid batch, CRC included");
    assert!(view.has_delete_horizon() && view.is_control() && view.is_transactional());
    assert_eq!(
        view.base_timestamp(),
        10_500,
        "KIP-534: the base timestamp holds the horizon"
    );
    assert_eq!((view.base_offset(), view.last_offset()), (20, 20));
    assert_eq!((view.producer_id(), view.producer_epoch()), (9, 1));
    assert_eq!(view.max_timestamp(), 1000);
    assert_eq!(decode(&out)[0].timestamp, 1000, "the record's time stays");
    assert_eq!(
        crate::protocol::control_record::read_marker(&out),
        Some((true, 4)),
        "still a COMMIT of coordinator epoch 4"
    );
    // Before the horizon the marker stays as it is, still pending.
    let again = run_marker(&out, 10_499, &none, true);
    assert_eq!(again.outcome, Outcome::KeepOriginal);
    assert_eq!(again.pending_delete_horizon_ms, Some(10_500));
    // At the horizon it goes.
    let late = run_marker(&out, 10_500, &none, true);
    assert_eq!(late.outcome, Outcome::Drop);
    assert_eq!((late.records_read, late.records_kept), (1, 0));
    assert_eq!(late.pending_delete_horizon_ms, None);
}

#[test]
fn a_marker_whose_transaction_still_has_data_is_kept_as_it_is() {
    let none = BTreeMap::new();
    let b = marker(20, 9, false);
    let f = run_marker(&b, 10_000, &none, false);
    assert_eq!(f.outcome, Outcome::KeepOriginal);
    assert_eq!(f.pending_delete_horizon_ms, None);
    // Even one already stamped with a passed horizon: only the tracker's
    // word lets a marker go.
    let stamped = rewritten(&b, &run_marker(&b, 0, &none, true));
    let f = run_marker(&stamped, 10_000, &none, false);
    assert_eq!(f.outcome, Outcome::KeepOriginal);
    // A data-batch filter keeps markers too.
    let map = map_of(&[], 100);
    let no_producers = BTreeMap::new();
    assert_eq!(
        run(&b, &map, 10_000, &no_producers).outcome,
        Outcome::KeepOriginal
    );
}

#[test]
fn a_passed_marker_that_is_its_producers_last_entry_keeps_an_empty_header() {
    let b = marker(20, 9, true);
    let stamped = rewritten(&b, &run_marker(&b, 0, &BTreeMap::new(), true));
    let at_epoch = |epoch: i16, last_data_offset: Option<i64>| {
        let last = LastRecord {
            last_data_offset,
            producer_epoch: epoch,
        };
        BTreeMap::from([(9, last)])
    };
    // Producer 9's last entry is a marker of epoch 1: this one.
    let Outcome::Empty(h) = run_marker(&stamped, 10_000, &at_epoch(1, None), true).outcome else {
        panic!("expected an empty control batch");
    };
    let view = RecordBatch::new(&h).unwrap();
    assert_eq!(h.len(), HEADER_LEN);
    assert!(view.is_control() && view.is_transactional() && !view.has_delete_horizon());
    assert_eq!((view.base_offset(), view.record_count()), (20, 0));
    assert_eq!((view.producer_id(), view.producer_epoch()), (9, 1));
    // A marker of an older epoch, or a producer whose last entry is data.
    let older = run_marker(&stamped, 10_000, &at_epoch(2, None), true);
    assert_eq!(older.outcome, Outcome::Drop);
    let data_last = run_marker(&stamped, 10_000, &at_epoch(1, Some(19)), true);
    assert_eq!(data_last.outcome, Outcome::Drop);
    // An emptied control batch goes at once (no horizon needed), unless it
    // is still the producer's last entry.
    let none = BTreeMap::new();
    assert_eq!(run_marker(&h, 0, &none, true).outcome, Outcome::Drop);
    assert!(matches!(
        run_marker(&h, 0, &at_epoch(1, None), true).outcome,
        Outcome::Empty(_)
    ));
}

proptest::proptest! {
    #[test]
    fn arbitrary_record_bytes_never_panic(
        body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
        count in -2i32..50,
    ) {
        let _ = parse_records(&body, count, 0, 0);
    }
}
