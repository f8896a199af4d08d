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

use common::{run_py_script, unique_topic, Broker, Conn};
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
