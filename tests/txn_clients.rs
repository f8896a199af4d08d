//! Transactions with real clients (issue 25; KIP-98): confluent-kafka's
//! (librdkafka's) transactional producer against the transaction
//! coordinator, with `tests/py/txn_confluent.py`.
//!
//! - Commit and abort loops over 6 partitions of two topics, with the
//!   group's offsets committed inside each transaction
//!   (send_offsets_to_transaction → AddOffsetsToTxn + TxnOffsetCommit): a
//!   read_committed consumer reads exactly the committed records, in order,
//!   none of the aborted; a read_uncommitted consumer reads both; the
//!   group's committed offsets are the last committed transaction's;
//!   ListOffsets latest at read_committed answers the LSO while a
//!   transaction is open.
//! - Fencing: a second producer with the same transactional.id fences the
//!   first, whose open transaction is aborted and whose commit fails with
//!   the fatal `_FENCED`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use common::{run_py_script, unique_topic, Broker, Conn, FetchSpec};
use serde_json::{json, Value};

const TXNS: usize = 6;
const PER_PARTITION: usize = 4;

fn broker() -> Broker {
    Broker::start_with(&[
        "transaction.state.log.num.partitions=4",
        "offsets.topic.num.partitions=4",
    ])
}

/// The values transaction `n` wrote to partition `p`.
fn written(n: usize, p: usize) -> Vec<String> {
    (0..PER_PARTITION).map(|i| format!("{n}:{p}:{i}")).collect()
}

#[test]
fn read_committed_sees_exactly_the_committed_transactions_and_their_offsets() {
    let broker = broker();
    let (a, b) = (unique_topic("txn-a"), unique_topic("txn-b"));
    let mut c = Conn::open(&broker);
    c.create_topic(&a, 3, &[]);
    c.create_topic(&b, 3, &[]);
    let r: Value = run_py_script(
        &["confluent_kafka"],
        "txn_confluent.py",
        &[
            "loops".into(),
            broker.bootstrap(),
            a.clone(),
            b.clone(),
            TXNS.to_string(),
            PER_PARTITION.to_string(),
        ],
    );
    for topic in [&a, &b] {
        for p in 0..3 {
            let key = format!("{topic}-{p}");
            let committed: Vec<String> = (0..TXNS).step_by(2).flat_map(|n| written(n, p)).collect();
            let all: Vec<String> = (0..TXNS).flat_map(|n| written(n, p)).collect();
            assert_eq!(r["committed"][&key], json!(committed), "{key}: {r}");
            assert_eq!(r["uncommitted"][&key], json!(all), "{key}: {r}");
        }
    }
    // The last committed transaction is 4 (5 aborted): offsets 1004.
    for p in 0..3 {
        assert_eq!(r["group_offsets"][format!("{a}-{p}")], 1004, "{r}");
        // While transaction 0 was open: the LSO at its first offset, the
        // HW past its records.
        let p = p.to_string();
        assert_eq!(r["open_lso"][&p], 0, "{r}");
        assert_eq!(r["open_hw"][&p], PER_PARTITION, "{r}");
    }
    broker.stop();
}

#[test]
fn a_second_producer_fences_the_first_and_aborts_its_transaction() {
    let broker = broker();
    let topic = unique_topic("txn-fence");
    Conn::open(&broker).create_topic(&topic, 3, &[]);
    let r: Value = run_py_script(
        &["confluent_kafka"],
        "txn_confluent.py",
        &["fence".into(), broker.bootstrap(), topic],
    );
    assert_eq!(
        r,
        json!({"second_init": "ok", "first_commit": "_FENCED", "first_fatal": true, "read_committed": ["from-2"]})
    );
    broker.stop();
}

/// A transaction whose producer went away is aborted by the coordinator
/// once `transaction.timeout.ms` (1 s here) passed, checked every
/// `transaction.abort.timed.out.transaction.cleanup.interval.ms` (200 ms):
/// the LSO reaches the HW and read_committed reads none of its records.
#[test]
fn an_abandoned_transaction_is_aborted_after_its_timeout() {
    let broker = Broker::start_with(&[
        "transaction.state.log.num.partitions=4",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms=200",
    ]);
    let topic = unique_topic("txn-abandon");
    let mut c = Conn::open(&broker);
    c.create_topic(&topic, 1, &[]);
    let r: Value = run_py_script(
        &["confluent_kafka"],
        "txn_confluent.py",
        &[
            "abandon".into(),
            broker.bootstrap(),
            topic.clone(),
            "1000".into(),
        ],
    );
    assert_eq!(r["written"], 5);
    // Wait (bounded) for the abort marker: the LSO moves from 0 to the HW.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut spec = FetchSpec::new(&topic, 0, 0);
    spec.isolation_level = 1;
    spec.max_wait_ms = 500;
    let part = loop {
        let part = c.fetch(&spec);
        assert_eq!(part.error_code, 0);
        if part.last_stable_offset == part.high_watermark {
            break part;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never aborted: {part:?}"
        );
    };
    // Five records and the ABORT marker.
    assert_eq!(part.high_watermark, 6);
    // The read returns the aborted data and its marker, with the aborted
    // list naming the transaction from offset 0: the client drops them.
    let records = common::decode_records(&common::whole_batches(part.records.as_ref()));
    let data = records.iter().filter(|r| !r.control).count();
    let markers = records.iter().filter(|r| r.control).count();
    assert_eq!((data, markers), (5, 1), "{part:?}");
    let aborted = part.aborted_transactions.clone().unwrap_or_default();
    assert_eq!(aborted.len(), 1, "{part:?}");
    assert_eq!(aborted[0].first_offset, 0);
    broker.stop();
}
