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
//! - A `transaction.timeout.ms` above `transaction.max.timeout.ms` fails
//!   `init_transactions` at once with the fatal INVALID_TRANSACTION_TIMEOUT
//!   (librdkafka's 0103_transactions `do_test_misuse_txn`), answered by any
//!   broker before a coordinator exists.
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
    check_loops(&broker.bootstrap(), &a, &b);
    broker.stop();
}

/// The same against Apache Kafka 3.9 (one ZooKeeper-mode broker, the
/// reference peer): the script's expectations are Kafka's behaviour.
#[test]
#[ignore = "Kafka 3.9 reference (a JVM): cargo test --test txn_clients -- --ignored kafka_"]
fn kafka_read_committed_sees_exactly_the_committed_transactions_and_their_offsets() {
    let c = common::replica_cluster::ReplCluster::start(
        common::replica_cluster::System::Kafka,
        1,
        &[
            "transaction.state.log.num.partitions=4",
            "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1",
            "offsets.topic.num.partitions=4",
            "offsets.topic.replication.factor=1",
        ],
    );
    let (a, b) = (unique_topic("txn-a"), unique_topic("txn-b"));
    c.create_topic(&a, 3, 1, &[]);
    c.create_topic(&b, 3, 1, &[]);
    check_loops(&c.bootstrap(), &a, &b);
}

fn check_loops(bootstrap: &str, a: &str, b: &str) {
    let (a, b) = (a.to_owned(), b.to_owned());
    let r: Value = run_py_script(
        &["confluent_kafka"],
        "txn_confluent.py",
        &[
            "loops".into(),
            bootstrap.to_owned(),
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
}

#[test]
fn a_second_producer_fences_the_first_and_aborts_its_transaction() {
    let broker = broker();
    let topic = unique_topic("txn-fence");
    Conn::open(&broker).create_topic(&topic, 3, &[]);
    check_fence(&broker.bootstrap(), &topic);
    broker.stop();
}

#[test]
#[ignore = "Kafka 3.9 reference (a JVM): cargo test --test txn_clients -- --ignored kafka_"]
fn kafka_a_second_producer_fences_the_first_and_aborts_its_transaction() {
    let c = common::replica_cluster::ReplCluster::start(
        common::replica_cluster::System::Kafka,
        1,
        &[
            "transaction.state.log.num.partitions=4",
            "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1",
        ],
    );
    let topic = unique_topic("txn-fence");
    c.create_topic(&topic, 3, 1, &[]);
    check_fence(&c.bootstrap(), &topic);
}

fn check_fence(bootstrap: &str, topic: &str) {
    let r: Value = run_py_script(
        &["confluent_kafka"],
        "txn_confluent.py",
        &["fence".into(), bootstrap.to_owned(), topic.to_owned()],
    );
    assert_eq!(
        r,
        json!({"second_init": "ok", "first_commit": "_FENCED", "first_fatal": true, "read_committed": ["from-2"]})
    );
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

/// Run tests/py/txn_copier.py: with `kill_after`, stepped, until it is
/// inside a transaction (records flushed, not committed) that reaches
/// `kill_after` records, and kill -9 it there; else to its end.
fn run_copier(broker: &Broker, input: &str, output: &str, kill_after: Option<usize>) -> String {
    use std::io::{BufRead, Write};
    let python = common::venv_python_with(&["confluent_kafka"]);
    let script =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py/txn_copier.py");
    let mut child = std::process::Command::new(python)
        .arg(script)
        .args([
            &broker.bootstrap(),
            input,
            output,
            "copier-group",
            "copier-txn",
        ])
        .args(kill_after.map(|_| "--stepped"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("start the copier");
    let stdout = child.stdout.take().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut last = String::new();
    for line in std::io::BufReader::new(stdout).lines() {
        let line = line.unwrap();
        last = line.clone();
        let Some(n) = line
            .strip_prefix("in-txn ")
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        if kill_after.is_some_and(|k| n >= k) {
            child.kill().unwrap(); // SIGKILL inside the transaction
            break;
        }
        let _ = stdin.write_all(b"go\n");
    }
    let status = child.wait().unwrap();
    if kill_after.is_none() {
        assert!(
            status.success() && last == "done",
            "copier: {status} {last}"
        );
    }
    last
}

/// Consume-transform-produce, exactly once: a copier (consumer +
/// transactional producer committing its offsets in each transaction) is
/// killed with kill -9 three times inside a transaction whose records
/// reached the broker, and restarted; the output topic, read
/// read_committed as a client does (dropping aborted transactions), equals
/// the input: every record once, in order.
#[test]
fn a_copier_killed_and_restarted_copies_every_record_exactly_once() {
    let broker = broker();
    let (input, output) = (unique_topic("eos-in"), unique_topic("eos-out"));
    let mut c = Conn::open(&broker);
    c.create_topic(&input, 3, &[]);
    c.create_topic(&output, 3, &[]);
    let mut want: Vec<Vec<String>> = vec![Vec::new(); 3];
    for p in 0..3 {
        for chunk in 0..10 {
            let values: Vec<String> = (0..100)
                .map(|i| format!("in-{p}-{}", chunk * 100 + i))
                .collect();
            let records: Vec<common::RawRecord> = values
                .iter()
                .map(|v| (None, v.as_bytes(), common::now_ms()))
                .collect();
            let batch = common::encode_batch(&records, kafka_protocol::records::Compression::None);
            assert_eq!(c.produce(&input, p, batch, -1).error_code, 0);
            want[p as usize].extend(values);
        }
    }
    for kill_after in [200, 900, 1700] {
        let last = run_copier(&broker, &input, &output, Some(kill_after));
        assert!(
            last.starts_with("in-txn"),
            "killed inside a transaction: {last}"
        );
    }
    run_copier(&broker, &input, &output, None);
    let mut total_aborted = 0usize;
    for p in 0..3 {
        let mut spec = FetchSpec::new(&output, p, 0);
        spec.isolation_level = 1;
        spec.max_wait_ms = 10;
        let mut got: Vec<String> = Vec::new();
        let mut aborted_seen = 0usize;
        loop {
            let part = c.fetch(&spec);
            assert_eq!(part.error_code, 0);
            let batches = common::whole_batches(part.records.as_ref());
            if batches.is_empty() {
                break;
            }
            let aborted: Vec<(i64, i64)> = part
                .aborted_transactions
                .iter()
                .flatten()
                .map(|a| (a.producer_id.0, a.first_offset))
                .collect();
            // The client's rule (Kafka's `CompletedFetch`): from an aborted
            // transaction's first offset, its producer's batches are
            // dropped until that producer's ABORT marker.
            let mut aborting: Vec<i64> = Vec::new();
            let mut pending = aborted.clone();
            for b in &batches {
                spec.fetch_offset = common::batch_last_offset(b) + 1;
                let view = shardlog::protocol::record_batch::RecordBatch::new(b).unwrap();
                let pid = view.producer_id();
                pending.retain(|(id, first)| {
                    let starts = *id == pid && view.base_offset() >= *first;
                    if starts {
                        aborting.push(pid);
                    }
                    !starts
                });
                if view.is_control() {
                    let marker = shardlog::protocol::control_record::read_marker(b);
                    if marker.is_some_and(|(commit, _)| !commit) {
                        aborted_seen += 1;
                        aborting.retain(|id| *id != pid);
                    }
                    continue;
                }
                if view.is_transactional() && aborting.contains(&pid) {
                    continue;
                }
                for r in common::decode_records(std::slice::from_ref(b)) {
                    got.push(String::from_utf8(r.value.unwrap().to_vec()).unwrap());
                }
            }
        }
        total_aborted += aborted_seen;
        assert_eq!(got.len(), want[p as usize].len(), "partition {p}");
        assert_eq!(
            got, want[p as usize],
            "partition {p}: every record once, in order"
        );
    }
    // Each kill left an open transaction whose records reached the log;
    // the next copier's init_transactions aborted it.
    assert!(total_aborted >= 3, "{total_aborted} aborted transactions");
    broker.stop();
}

/// InitProducerId's own checks come first (Kafka's
/// `TransactionCoordinator.handleInitProducerId`): on a broker where no
/// `__transaction_state` exists yet, a timeout above
/// `transaction.max.timeout.ms` (or not positive) is
/// INVALID_TRANSACTION_TIMEOUT and an empty transactional id
/// INVALID_REQUEST, not NOT_COORDINATOR (which sends a client looking for
/// a coordinator again). confluent-kafka's `init_transactions` then fails
/// at once with the fatal INVALID_TRANSACTION_TIMEOUT.
#[test]
fn init_transactions_with_a_timeout_above_the_maximum_fails_at_once() {
    use kafka_protocol::messages::{InitProducerIdRequest, TransactionalId};
    use kafka_protocol::protocol::StrBytes;
    let broker = Broker::start_with(&[
        "transaction.state.log.num.partitions=4",
        "transaction.max.timeout.ms=60000",
    ]);
    let mut c = Conn::open(&broker);
    let init = |c: &mut Conn, id: &str, timeout_ms: i32| {
        let req = InitProducerIdRequest::default()
            .with_transactional_id(Some(TransactionalId(StrBytes::from_string(id.into()))))
            .with_transaction_timeout_ms(timeout_ms);
        c.call(4, &req).error_code
    };
    const INVALID_REQUEST: i16 = 42;
    const INVALID_TRANSACTION_TIMEOUT: i16 = 50;
    assert_eq!(init(&mut c, "misuse", 60_001), INVALID_TRANSACTION_TIMEOUT);
    assert_eq!(
        init(&mut c, "misuse", i32::MAX),
        INVALID_TRANSACTION_TIMEOUT
    );
    assert_eq!(init(&mut c, "misuse", 0), INVALID_TRANSACTION_TIMEOUT);
    assert_eq!(init(&mut c, "", 60_000), INVALID_REQUEST);
    let r: Value = run_py_script(
        &["confluent_kafka"],
        "txn_confluent.py",
        &[
            "bad_timeout".into(),
            broker.bootstrap(),
            unique_topic("misuse"),
            i32::MAX.to_string(),
        ],
    );
    assert_eq!(r["error"], "INVALID_TRANSACTION_TIMEOUT", "{r}");
    assert_eq!(r["fatal"], true, "{r}");
    // init_transactions waits up to 30 s; the refusal is the first answer.
    assert!(r["seconds"].as_f64().unwrap() < 10.0, "{r}");
    broker.stop();
}
