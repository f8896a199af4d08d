//! Compaction of transactional data (issue 25; Kafka's
//! `CleanedTransactionMetadata`): the cleaner neither maps nor keeps the
//! records of aborted transactions, so an aborted write of a key never
//! shadows its committed value, and a key written only by an aborted
//! transaction disappears; markers stay; the cleaner never cleans past the
//! last stable offset. Raw requests to a real broker; transactions are
//! ended with WriteTxnMarkers as a coordinator ends them.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{Broker, Conn};
use kafka_protocol::records::Compression;

const TOPIC: &str = "txn-compact";

/// One batch of keyed records; `txn`: (producer id, epoch, first sequence).
fn batch(records: &[(&str, &str)], txn: Option<(i64, i16, i32)>) -> Bytes {
    match txn {
        Some((pid, epoch, seq)) => {
            let records: Vec<(Option<&str>, String)> = records
                .iter()
                .map(|(k, v)| (Some(*k), v.to_string()))
                .collect();
            common::txn::producer_batch(pid, epoch, seq, &records, true)
        }
        None => {
            let ts = common::now_ms();
            let records: Vec<common::RawRecord> = records
                .iter()
                .map(|(k, v)| (Some(k.as_bytes()), v.as_bytes(), ts))
                .collect();
            common::encode_batch(&records, Compression::None)
        }
    }
}

fn marker(broker: &Broker, pid: i64, commit: bool) {
    let mut stream = broker.connect();
    let codes = common::txn::write_marker(&mut stream, TOPIC, &[0], (pid, 0), 0, commit);
    assert_eq!(codes, [0]);
}

/// Every data record (key, value) from the log start, read_uncommitted,
/// and the number of control batches.
fn read_all(c: &mut Conn) -> (Vec<(String, String)>, usize) {
    let batches = c.fetch_to_high_watermark(TOPIC, 0, 0);
    let markers = batches
        .iter()
        .filter(|b| {
            shardlog::protocol::record_batch::RecordBatch::new(b)
                .unwrap()
                .is_control()
        })
        .count();
    let records = common::decode_records(&batches)
        .into_iter()
        .filter(|r| !r.control)
        .map(|r| {
            let s = |b: Option<Bytes>| String::from_utf8(b.unwrap_or_default().to_vec()).unwrap();
            (s(r.key), s(r.value))
        })
        .collect();
    (records, markers)
}

fn filler(round: usize) -> Vec<Bytes> {
    (0..40)
        .map(|i| {
            let recs: Vec<(String, String)> = (0..10)
                .map(|j| {
                    (
                        format!("x{}", i * 10 + j),
                        format!("{round}-{}", "f".repeat(60)),
                    )
                })
                .collect();
            let refs: Vec<(&str, &str)> =
                recs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            batch(&refs, None)
        })
        .collect()
}

#[test]
fn the_cleaner_drops_aborted_data_and_keeps_the_committed_values() {
    let broker = Broker::start_with(&["log.cleaner.backoff.ms=100"]);
    let mut c = Conn::open(&broker);
    c.create_topic(
        TOPIC,
        1,
        &[
            ("cleanup.policy", "compact"),
            ("segment.bytes", "8192"),
            ("min.cleanable.dirty.ratio", "0.01"),
        ],
    );
    let produce = |c: &mut Conn, b: Bytes| {
        let r = c.produce_as(TOPIC, 0, b, -1, Some("compaction-test"));
        assert_eq!(r.error_code, 0);
    };
    // Producer 1 commits k = committed; producer 2 then writes k and j in
    // a transaction it aborts; producer 3's transaction stays open.
    produce(&mut c, batch(&[("k", "committed")], Some((1, 0, 0))));
    marker(&broker, 1, true);
    produce(
        &mut c,
        batch(&[("k", "aborted"), ("j", "aborted-only")], Some((2, 0, 0))),
    );
    marker(&broker, 2, false);
    for b in filler(0).into_iter().chain(filler(1)) {
        produce(&mut c, b);
    }
    produce(&mut c, batch(&[("open", "undecided")], Some((3, 0, 0))));
    for b in filler(2) {
        produce(&mut c, b);
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    let (records, markers) = loop {
        let (records, markers) = read_all(&mut c);
        // Rounds 0 and 1 (below the LSO) deduplicated; round 2 (past it) kept.
        let filler_deduped = records.iter().filter(|(k, _)| k == "x0").count() == 2;
        let aborted_gone = !records.iter().any(|(_, v)| v.starts_with("aborted"));
        if filler_deduped && aborted_gone {
            break (records, markers);
        }
        assert!(
            Instant::now() < deadline,
            "not cleaned: {:?}",
            &records[..records.len().min(8)]
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let value_of = |key: &str| -> Vec<&str> {
        records
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect()
    };
    assert_eq!(
        value_of("k"),
        ["committed"],
        "the aborted write does not shadow it"
    );
    assert!(
        value_of("j").is_empty(),
        "written only by an aborted transaction"
    );
    // Past the LSO (producer 3's open transaction) nothing was cleaned.
    assert_eq!(value_of("open"), ["undecided"]);
    assert_eq!(
        value_of("x0"),
        [
            format!("1-{}", "f".repeat(60)),
            format!("2-{}", "f".repeat(60))
        ],
        "round 1's value below the LSO, round 2's past it (not cleaned)"
    );
    assert_eq!(markers, 2, "markers are kept");
    broker.stop();
}
