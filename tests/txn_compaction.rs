//! Compaction of transactional data (issue 25; Kafka 3.9's
//! `LogCleaner.scala` `CleanedTransactionMetadata`): the cleaner neither
//! maps nor keeps the records of aborted transactions, so an aborted write
//! of a key never shadows its committed value, and a key written only by
//! an aborted transaction disappears; the cleaner never cleans past the
//! last stable offset. A marker stays while data of its transaction is
//! left; once none is, it gets a delete horizon (`delete.retention.ms`)
//! and a clean past the horizon removes it, an ABORT marker together with
//! its aborted-transaction index entry, so read_committed consumers keep
//! reading that producer's later commits, also after a restart. Raw
//! requests to a real broker; transactions are ended with WriteTxnMarkers
//! as a coordinator ends them.
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
    let broker = Broker::start_with(&OVERRIDES);
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
    // Producer 1's marker: its data is kept. Producer 2's: its aborted
    // batch is emptied, not removed (the producer's last, Kafka's
    // RETAIN_EMPTY), so the marker still has data and stays too.
    assert_eq!(markers, 2, "markers are kept");
    broker.stop();
}

const MARKERS_TOPIC: &str = "txn-markers";
/// Short enough for the test, long enough to see the horizon set.
const DELETE_RETENTION_MS: &str = "6000";
/// The cleaner every 100 ms; KIP-890 verification off: these tests write
/// a producer's transactional batches and the coordinator's markers raw,
/// with no transaction coordinator (see `tests/txn_verification.rs`).
const OVERRIDES: [&str; 2] = [
    "log.cleaner.backoff.ms=100",
    "transaction.partition.verification.enable=false",
];

/// A control batch as read from the log.
#[derive(Debug, Clone, PartialEq)]
struct Marker {
    offset: i64,
    producer_id: i64,
    commit: bool,
    delete_horizon: bool,
}

/// The log as a read_uncommitted reader sees it: data values by key and
/// the markers.
#[derive(Debug)]
struct RawLog {
    values: Vec<(String, String)>,
    markers: Vec<Marker>,
}

impl RawLog {
    fn read(c: &mut Conn) -> RawLog {
        use shardlog::protocol::{control_record, record_batch::RecordBatch};
        let batches = c.fetch_to_high_watermark(MARKERS_TOPIC, 0, 0);
        let mut markers = Vec::new();
        for b in &batches {
            let view = RecordBatch::new(b).unwrap();
            if view.is_control() {
                let (commit, _) = control_record::read_marker(b).expect("a whole marker");
                markers.push(Marker {
                    offset: view.base_offset(),
                    producer_id: view.producer_id(),
                    commit,
                    delete_horizon: view.has_delete_horizon(),
                });
            }
        }
        RawLog {
            values: key_values(&batches),
            markers,
        }
    }

    fn has_value(&self, value: &str) -> bool {
        self.values.iter().any(|(_, v)| v == value)
    }

    fn marker_of(&self, pid: i64, commit: bool) -> Vec<&Marker> {
        self.markers
            .iter()
            .filter(|m| m.producer_id == pid && m.commit == commit)
            .collect()
    }
}

/// (key, value) of every data record of `batches`.
fn key_values(batches: &[Bytes]) -> Vec<(String, String)> {
    let s = |b: Option<Bytes>| String::from_utf8(b.unwrap_or_default().to_vec()).unwrap();
    common::decode_records(batches)
        .into_iter()
        .filter(|r| !r.control)
        .map(|r| (s(r.key), s(r.value)))
        .collect()
}

/// A read_committed read: the records a consumer keeps, and the aborted
/// transactions `(producer id, first offset)` the Fetch responses listed.
struct Committed {
    records: Vec<(String, String)>,
    listed: Vec<(i64, i64)>,
}

/// What a read_committed consumer gets from the log start up to the LSO,
/// filtering as Kafka's consumer does (`CompletedFetch.nextFetchedRecord`):
/// per Fetch response, a producer enters the aborted set when a batch
/// reaches the first offset of one of the response's aborted
/// transactions, its transactional batches are skipped while it is there,
/// and its ABORT marker takes it out. Also returns every aborted
/// transaction the responses listed.
fn read_committed(c: &mut Conn) -> Committed {
    use shardlog::protocol::{control_record, record_batch::RecordBatch};
    let mut spec = common::FetchSpec::new(MARKERS_TOPIC, 0, 0);
    spec.max_wait_ms = 10;
    spec.isolation_level = 1;
    let (mut kept, mut listed) = (Vec::new(), Vec::new());
    loop {
        let part = c.fetch(&spec);
        assert_eq!(part.error_code, 0, "{part:?}");
        if spec.fetch_offset >= part.last_stable_offset {
            return Committed {
                records: kept,
                listed,
            };
        }
        let mut aborted: Vec<(i64, i64)> = part
            .aborted_transactions
            .unwrap_or_default()
            .iter()
            .map(|a| (a.first_offset, a.producer_id.0))
            .collect();
        aborted.sort_unstable();
        for &(first, pid) in &aborted {
            if !listed.contains(&(pid, first)) {
                listed.push((pid, first));
            }
        }
        let mut aborted = aborted.into_iter().peekable();
        let mut aborted_pids = std::collections::BTreeSet::new();
        let batches = common::whole_batches(part.records.as_ref());
        assert!(
            !batches.is_empty(),
            "no batch below the LSO at {}",
            spec.fetch_offset
        );
        for b in batches {
            let view = RecordBatch::new(&b).unwrap();
            spec.fetch_offset = view.last_offset() + 1;
            let pid = view.producer_id();
            if pid >= 0 {
                while let Some((_, p)) = aborted.next_if(|&(f, _)| f <= view.last_offset()) {
                    aborted_pids.insert(p);
                }
                if view.is_control() {
                    if control_record::read_marker(&b).is_some_and(|(commit, _)| !commit) {
                        aborted_pids.remove(&pid);
                    }
                    continue;
                }
                if view.is_transactional() && aborted_pids.contains(&pid) {
                    continue;
                }
            }
            kept.extend(key_values(&[b]));
        }
    }
}

/// Every entry of the partition's `.txnindex` files.
fn txn_index_entries(broker: &Broker) -> Vec<shardlog::storage::txn_index::AbortedTxn> {
    let dir = broker.log_dir.path().join(format!("{MARKERS_TOPIC}-0"));
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "txnindex") {
            // A file the cleaner is swapping may vanish under us: skip it.
            if let Ok(bytes) = std::fs::read(&path) {
                out.extend(shardlog::storage::txn_index::AbortedTxn::decode_all(&bytes));
            }
        }
    }
    out
}

/// Poll the log until `done` holds (deadline 120 s), checking on every
/// look that an ABORT marker and its index entry live while its aborted
/// data does, and that the index never lists a transaction whose marker
/// is gone.
fn wait_for(broker: &Broker, c: &mut Conn, what: &str, done: impl Fn(&RawLog) -> bool) -> RawLog {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let log = RawLog::read(c);
        let listed = read_committed(c).listed;
        let abort_marker = !log.marker_of(2, false).is_empty();
        if log.has_value("aborted") {
            assert!(abort_marker, "aborted data without its marker: {log:?}");
            assert!(listed.iter().any(|&(pid, _)| pid == 2), "{listed:?}");
        }
        if !abort_marker {
            assert!(
                !listed.iter().any(|&(pid, _)| pid == 2),
                "a listed abort whose marker is gone: {listed:?}"
            );
            assert!(!txn_index_entries(broker).iter().any(|e| e.producer_id == 2));
        }
        if done(&log) {
            return log;
        }
        assert!(Instant::now() < deadline, "never {what}: {log:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The committed values a read_committed read returns, in order, once
/// `rounds` rounds of filler are written and the overwritten `t1` is gone.
fn committed_values(rounds: usize) -> Vec<String> {
    ["hold", "t2", "after-abort", "plain"]
        .iter()
        .map(|s| s.to_string())
        .chain((0..400 * rounds).map(|i| format!("f{}", i % 10)))
        .collect()
}

/// `read` (a read_committed read) holds exactly [`committed_values`].
fn assert_committed(read: &[(String, String)], rounds: usize) {
    let got: Vec<&str> = read.iter().map(|(_, v)| v.as_str()).collect();
    let want = committed_values(rounds);
    assert!(
        got == want,
        "read_committed read {} values, starting {:?}; want {}, starting {:?}",
        got.len(),
        &got[..got.len().min(6)],
        want.len(),
        &want[..6]
    );
}

/// After a restart: the same log and reads, an empty index, and no file
/// of a clean left behind.
fn check_restarted(broker: &Broker, log: &RawLog, committed: &[(String, String)]) {
    let mut c = Conn::open(broker);
    let again = RawLog::read(&mut c);
    assert_eq!(again.markers, log.markers);
    assert_eq!(again.values, log.values);
    let Committed {
        records: read,
        listed,
    } = read_committed(&mut c);
    assert!(
        read == committed,
        "read_committed differs after the restart"
    );
    assert!(listed.is_empty(), "{listed:?}");
    assert!(txn_index_entries(broker).is_empty());
    let dir = broker.log_dir.path().join(format!("{MARKERS_TOPIC}-0"));
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        assert!(
            !name.ends_with(".swap") && !name.ends_with(".cleaned"),
            "{name}"
        );
    }
}

fn produce_markers_topic(c: &mut Conn, b: Bytes) -> i64 {
    let r = c.produce_as(MARKERS_TOPIC, 0, b, -1, Some("markers-test"));
    assert_eq!(r.error_code, 0);
    r.base_offset
}

fn marker_on(broker: &Broker, pid: i64, commit: bool) {
    let mut stream = broker.connect();
    let codes = common::txn::write_marker(&mut stream, MARKERS_TOPIC, &[0], (pid, 0), 0, commit);
    assert_eq!(codes, [0]);
}

/// Filler of unique keys `y{round}-{n}`, ten records a batch.
fn unique_filler(round: usize) -> Vec<Bytes> {
    (0..40)
        .map(|i| {
            let recs: Vec<(String, String)> = (0..10)
                .map(|j| (format!("y{round}-{}", i * 10 + j), format!("f{j}")))
                .collect();
            let refs: Vec<(&str, &str)> =
                recs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            batch(&refs, None)
        })
        .collect()
}

/// The history: producer 9 holds the LSO at 0 while the rest is written,
/// so the first clean sees all of it at once. Producer 1 commits `k`
/// (later overwritten) then `keep`; producer 2 aborts `a`, then commits
/// `c`. Returns the first offset of producer 2's aborted transaction.
fn markers_history(broker: &Broker, c: &mut Conn) -> i64 {
    let mut p = |b| produce_markers_topic(c, b);
    p(batch(&[("hold", "hold")], Some((9, 0, 0))));
    p(batch(&[("k", "t1")], Some((1, 0, 0))));
    marker_on(broker, 1, true);
    p(batch(&[("keep", "t2")], Some((1, 0, 1))));
    marker_on(broker, 1, true);
    let aborted_first = p(batch(&[("a", "aborted")], Some((2, 0, 0))));
    marker_on(broker, 2, false);
    p(batch(&[("c", "after-abort")], Some((2, 0, 1))));
    marker_on(broker, 2, true);
    p(batch(&[("k", "plain")], None));
    for b in unique_filler(0) {
        p(b);
    }
    marker_on(broker, 9, true);
    aborted_first
}

#[test]
fn markers_get_a_delete_horizon_once_their_data_is_gone_then_go_with_their_index_entries() {
    let broker = Broker::start_with(&OVERRIDES);
    let mut c = Conn::open(&broker);
    c.create_topic(
        MARKERS_TOPIC,
        1,
        &[
            ("cleanup.policy", "compact"),
            ("segment.bytes", "8192"),
            ("min.cleanable.dirty.ratio", "0.01"),
            ("delete.retention.ms", DELETE_RETENTION_MS),
        ],
    );
    let aborted_first = markers_history(&broker, &mut c);

    // First clean: producer 1's first transaction (overwritten) and
    // producer 2's aborted one lose their data. Both markers stay: this
    // clean still read their data. The abort stays listed.
    let log = wait_for(&broker, &mut c, "cleaned once", |l| {
        !l.has_value("t1") && !l.has_value("aborted")
    });
    assert_eq!(log.markers.len(), 5, "{log:?}");
    assert!(log.markers.iter().all(|m| !m.delete_horizon), "{log:?}");
    let abort = log.marker_of(2, false)[0].offset;
    let entry = (2, aborted_first);
    assert_eq!(read_committed(&mut c).listed, vec![entry]);
    let on_disk: Vec<(i64, i64, i64)> = txn_index_entries(&broker)
        .iter()
        .map(|e| (e.producer_id, e.first_offset, e.last_offset))
        .collect();
    assert_eq!(on_disk, vec![(2, aborted_first, abort)]);
    assert_committed(&read_committed(&mut c).records, 1);

    // More data, another clean: now no data of either transaction is
    // read, so both markers get a delete horizon (the others keep their
    // data, and no horizon), and the abort leaves the index at once.
    for b in unique_filler(1) {
        produce_markers_topic(&mut c, b);
    }
    let first_commit = log.marker_of(1, true)[0].offset;
    let log = wait_for(&broker, &mut c, "stamped with a delete horizon", |l| {
        l.markers
            .iter()
            .filter(|m| m.offset == first_commit || m.offset == abort)
            .all(|m| m.delete_horizon)
    });
    let stamped: Vec<i64> = log
        .markers
        .iter()
        .filter(|m| m.delete_horizon)
        .map(|m| m.offset)
        .collect();
    assert_eq!(
        stamped,
        vec![first_commit, abort],
        "both stamped, seen before the horizon ({DELETE_RETENTION_MS} ms) passed: {log:?}"
    );
    assert_eq!(read_committed(&mut c).listed, vec![]);
    assert!(txn_index_entries(&broker).is_empty());

    // Past the horizon a clean removes both. Producer 2's later commit is
    // still read: no index entry is left to wait for its ABORT marker.
    let log = wait_for(&broker, &mut c, "past the delete horizon", |l| {
        l.markers.len() == 3
    });
    let left: Vec<(i64, bool)> = log
        .markers
        .iter()
        .map(|m| (m.producer_id, m.commit))
        .collect();
    assert_eq!(left, vec![(1, true), (2, true), (9, true)]);
    assert!(log.markers.iter().all(|m| !m.delete_horizon), "{log:?}");
    let Committed {
        records: committed,
        listed,
    } = read_committed(&mut c);
    assert_committed(&committed, 2);
    assert!(listed.is_empty());
    assert!(txn_index_entries(&broker).is_empty());

    // Restarts (clean, then kill -9): the same log, index and reads.
    let (status, dir) = broker.stop_keeping_dir();
    assert!(status.success());
    let broker = Broker::start_in(dir, &OVERRIDES);
    check_restarted(&broker, &log, &committed);
    let dir = broker.kill_keeping_dir();
    let broker = Broker::start_in(dir, &OVERRIDES);
    check_restarted(&broker, &log, &committed);
    broker.stop();
}
