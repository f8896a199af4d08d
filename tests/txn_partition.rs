//! Transactions on the partition side (issue 25; KIP-98, seed 000's LSO),
//! over raw requests to a real broker: transactional batches hold the last
//! stable offset (LSO) back until a coordinator's WriteTxnMarkers commits
//! or aborts them; read_committed Fetch and ListOffsets stop at the LSO
//! and a read_committed fetch returns the aborted transactions; the
//! aborted-transaction index (`.txnindex`) and open transactions come back
//! after a clean restart and after `kill -9` (rebuilt from the log when the
//! index file is gone). Errors are Kafka's: INVALID_TXN_STATE (48),
//! TRANSACTION_COORDINATOR_FENCED (52), INVALID_PRODUCER_EPOCH (47),
//! INVALID_RECORD (87) for a client's control batch.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use bytes::Bytes;
use common::{Broker, Conn, FetchSpec};
use kafka_protocol::records::Compression;

/// These tests write a producer's transactional batches and the
/// coordinator's markers raw, with no transaction coordinator: KIP-890's
/// verification (on by default, as in Kafka 3.9) is switched off, as it
/// must be for any writer that bypasses the coordinator.
/// `tests/txn_verification.rs` covers verification itself.
const NO_VERIFY: &[&str] = &["transaction.partition.verification.enable=false"];

const TOPIC: &str = "txn-part";

/// One v2 batch of `count` records from a producer; transactional or not.
fn batch(pid: i64, epoch: i16, first_seq: i32, count: i32, transactional: bool) -> Bytes {
    let records: Vec<(Option<&str>, String)> = (first_seq..first_seq + count)
        .map(|seq| (None, format!("p{pid}-{seq}")))
        .collect();
    common::txn::producer_batch(pid, epoch, first_seq, &records, transactional)
}

/// WriteTxnMarkers v1 for one marker on `TOPIC` partitions; their codes.
fn marker(
    broker: &Broker,
    pid: i64,
    epoch: i16,
    coordinator_epoch: i32,
    commit: bool,
    partitions: &[i32],
) -> Vec<i16> {
    let mut stream = broker.connect();
    common::txn::write_marker(
        &mut stream,
        TOPIC,
        partitions,
        (pid, epoch),
        coordinator_epoch,
        commit,
    )
}

/// A read_committed (or not) fetch of partition 0 from `offset`:
/// (LSO, HW, record offsets, aborted transactions or None).
struct Read {
    lso: i64,
    hw: i64,
    offsets: Vec<i64>,
    aborted: Option<Vec<(i64, i64)>>,
}

fn read(conn: &mut Conn, offset: i64, committed: bool) -> Read {
    let mut spec = FetchSpec::new(TOPIC, 0, offset);
    spec.max_wait_ms = 10;
    spec.isolation_level = i8::from(committed);
    let part = conn.fetch(&spec);
    assert_eq!(part.error_code, 0, "{part:?}");
    let mut offsets = Vec::new();
    for b in common::whole_batches(part.records.as_ref()) {
        let mut bytes = b.clone();
        let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut bytes).unwrap();
        // Markers come back as control records; clients skip them.
        offsets.extend(set.records.iter().filter(|r| !r.control).map(|r| r.offset));
    }
    Read {
        lso: part.last_stable_offset,
        hw: part.high_watermark,
        offsets,
        aborted: part.aborted_transactions.map(|list| {
            list.iter()
                .map(|a| (a.producer_id.0, a.first_offset))
                .collect()
        }),
    }
}

/// ListOffsets latest at read_committed (isolation 1).
fn latest_committed(conn: &mut Conn) -> i64 {
    use kafka_protocol::messages::list_offsets_request::{
        ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic,
    };
    use kafka_protocol::messages::BrokerId;
    let req = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_isolation_level(1)
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(common::topic_name(TOPIC))
            .with_partitions(vec![ListOffsetsPartition::default()
                .with_partition_index(0)
                .with_current_leader_epoch(-1)
                .with_timestamp(-1)])]);
    let resp = conn.call(7, &req);
    let p = &resp.topics[0].partitions[0];
    assert_eq!(p.error_code, 0, "{p:?}");
    p.offset
}

fn produce_code(conn: &mut Conn, records: Bytes) -> (i16, i64) {
    let p = conn.produce_as(TOPIC, 0, records, -1, Some("txn-partition-test"));
    (p.error_code, p.base_offset)
}

/// The scripted history before any restart; returns the log end.
fn history(broker: &Broker) -> i64 {
    let mut c = Conn::open(broker);
    c.create_topic(TOPIC, 1, &[]);
    // Producer 1000's transaction: offsets 0..=2. A plain record at 3.
    assert_eq!(produce_code(&mut c, batch(1000, 0, 0, 3, true)), (0, 0));
    assert_eq!(
        produce_code(
            &mut c,
            common::encode_batch(&[(None, b"plain", 1)], Compression::None)
        )
        .0,
        0
    );
    let r = read(&mut c, 0, false);
    assert_eq!(
        (r.hw, r.lso, r.offsets.len()),
        (4, 0, 4),
        "read_uncommitted sees all, LSO 0"
    );
    assert!(r.aborted.is_none(), "read_uncommitted: null aborted list");
    let r = read(&mut c, 0, true);
    assert_eq!(
        (r.lso, r.offsets.len()),
        (0, 0),
        "read_committed stops at the LSO"
    );
    assert_eq!(latest_committed(&mut c), 0);

    // Abort it (marker at 4): everything up to the HW is stable.
    assert_eq!(marker(broker, 1000, 0, 3, false, &[0]), vec![0]);
    let r = read(&mut c, 0, true);
    assert_eq!((r.hw, r.lso), (5, 5));
    assert_eq!(
        r.offsets,
        vec![0, 1, 2, 3],
        "data and plain record, not the marker"
    );
    assert_eq!(r.aborted, Some(vec![(1000, 0)]));
    assert_eq!(latest_committed(&mut c), 5);

    // Producer 2000 commits 5..=6 (marker 7): no aborted transaction there.
    assert_eq!(produce_code(&mut c, batch(2000, 0, 0, 2, true)), (0, 5));
    assert_eq!(marker(broker, 2000, 0, 3, true, &[0]), vec![0]);
    let r = read(&mut c, 5, true);
    assert_eq!((r.lso, r.offsets.clone()), (8, vec![5, 6]));
    assert_eq!(r.aborted, Some(vec![]));

    // Errors. A non-transactional batch while the transaction is open.
    assert_eq!(produce_code(&mut c, batch(3000, 0, 0, 1, true)), (0, 8));
    assert_eq!(
        produce_code(&mut c, batch(3000, 0, 1, 1, false)).0,
        48,
        "INVALID_TXN_STATE"
    );
    // An older coordinator epoch; an older producer epoch.
    assert_eq!(marker(broker, 1000, 0, 2, false, &[0]), vec![52]);
    assert_eq!(produce_code(&mut c, batch(4000, 3, 0, 1, true)), (0, 9));
    assert_eq!(marker(broker, 4000, 2, 3, false, &[0]), vec![47]);
    // A client may not write control batches; unknown partitions.
    let control = Bytes::from(shardlog::protocol::control_record::end_txn_marker_batch(
        5000, 0, 0, true, 1,
    ));
    assert_eq!(produce_code(&mut c, control).0, 87, "INVALID_RECORD");
    assert_eq!(marker(broker, 1000, 0, 3, false, &[7]), vec![3]);
    // Producer 4000 aborts (marker 10); producer 3000's transaction at 8
    // stays open and holds the LSO.
    assert_eq!(marker(broker, 4000, 3, 3, false, &[0]), vec![0]);
    let r = read(&mut c, 0, true);
    assert_eq!((r.hw, r.lso), (11, 8));
    assert_eq!(
        r.aborted,
        Some(vec![(1000, 0)]),
        "4000's abort lies past the LSO"
    );
    11
}

/// What must hold after any restart.
fn check_after_restart(broker: &Broker, end: i64) {
    let mut c = Conn::open(broker);
    let r = read(&mut c, 0, false);
    assert_eq!(
        (r.hw, r.lso),
        (end, 8),
        "producer 3000's transaction is still open"
    );
    // Producer 3000 commits (marker 11): the LSO reaches the HW.
    assert_eq!(marker(broker, 3000, 0, 3, true, &[0]), vec![0]);
    let r = read(&mut c, 0, true);
    assert_eq!((r.hw, r.lso), (end + 1, end + 1));
    assert_eq!(r.aborted, Some(vec![(1000, 0), (4000, 9)]));
    assert_eq!(r.offsets, vec![0, 1, 2, 3, 5, 6, 8, 9]);
    assert_eq!(latest_committed(&mut c), end + 1);
}

#[test]
fn markers_move_the_lso_and_read_committed_gets_the_aborted_transactions_across_a_clean_restart() {
    let broker = Broker::start_with(NO_VERIFY);
    let end = history(&broker);
    let (status, dir) = broker.stop_keeping_dir();
    assert!(status.success());
    let index = dir
        .path()
        .join(format!("{TOPIC}-0"))
        .join("00000000000000000000.txnindex");
    assert_eq!(
        std::fs::metadata(&index).unwrap().len(),
        2 * 34,
        "two aborts of 34 bytes"
    );
    let broker = Broker::start_in(dir, NO_VERIFY);
    check_after_restart(&broker, end);
}

#[test]
fn after_kill_9_without_the_index_file_recovery_rebuilds_it_from_the_markers() {
    let broker = Broker::start_with(&[NO_VERIFY[0], "shardlog.flush.every.append=true"]);
    let end = history(&broker);
    let dir = broker.kill_keeping_dir();
    let index = dir
        .path()
        .join(format!("{TOPIC}-0"))
        .join("00000000000000000000.txnindex");
    std::fs::remove_file(&index).unwrap();
    let broker = Broker::start_in(dir, &[NO_VERIFY[0], "shardlog.flush.every.append=true"]);
    check_after_restart(&broker, end);
}

/// A read_committed long-poll Fetch parked at the LSO (seed 000: the
/// DelayedFetch of a read_committed consumer is woken by LSO growth) is
/// answered when the COMMIT marker moves the LSO, long before its
/// `max_wait_ms` (10 minutes here; the socket's read timeout of 60 s makes
/// a fetch that was never woken fail the test instead of hanging).
#[test]
fn a_parked_read_committed_fetch_wakes_when_the_commit_marker_moves_the_lso() {
    let broker = Broker::start_with(NO_VERIFY);
    let mut c = Conn::open(&broker);
    c.create_topic(TOPIC, 1, &[]);
    assert_eq!(produce_code(&mut c, batch(7000, 0, 0, 2, true)), (0, 0));
    let mut waiter = Conn::open(&broker);
    waiter
        .stream
        .set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    let mut spec = FetchSpec::new(TOPIC, 0, 0);
    spec.isolation_level = 1;
    spec.max_wait_ms = 600_000;
    let id = waiter.send(common::FETCH_VERSION, &spec.request());
    // Not answered yet: nothing is stable. (The marker below is what
    // answers it; an early answer would carry no records.)
    assert_eq!(marker(&broker, 7000, 0, 0, true, &[0]), vec![0]);
    let part = waiter.recv_fetch(id, &spec);
    assert_eq!(part.error_code, 0);
    assert_eq!(part.last_stable_offset, 3);
    let batches = common::whole_batches(part.records.as_ref());
    assert!(
        !batches.is_empty(),
        "woken with the committed records: {part:?}"
    );
    assert_eq!(common::batch_base_offset(&batches[0]), 0);
}

/// Kafka's `handleProduceRequest`: transactional records in a request
/// without a transactional id are refused whole with
/// TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53); nothing is appended.
#[test]
fn transactional_records_without_a_transactional_id_are_refused() {
    let broker = Broker::start_with(NO_VERIFY);
    let mut c = Conn::open(&broker);
    c.create_topic(TOPIC, 1, &[]);
    let r = c.produce(TOPIC, 0, batch(8000, 0, 0, 2, true), -1);
    assert_eq!(r.error_code, 53);
    assert_eq!(read(&mut c, 0, false).hw, 0, "nothing appended");
}
