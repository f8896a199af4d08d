//! Transaction coordinator failover in a four-broker ZooKeeper-mode
//! cluster (issue 25): `__transaction_state` is replicated (RF 3,
//! min.insync.replicas 2). A raw transactional producer writes to three
//! partitions led by different brokers and commits; while the coordinator
//! is writing the markers, one data leader's Kafka port is blackholed so
//! its marker cannot be written, and the coordinator is killed with
//! kill -9 right then — mid-commit: PrepareCommit is in the log, some
//! markers are written, one is not. The new coordinator (the partition's
//! new leader, which loads PrepareCommit) writes the markers again once
//! the link heals; every partition then shows the transaction committed,
//! none half: each read_committed read holds all of the transaction's
//! records, and DescribeTransactions answers CompleteCommit.
//!
//! The same scenario runs against Apache Kafka 3.9:
//!   cargo test --test cluster_transactions -- --ignored kafka_

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol_39::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnTopic,
};
use kafka_protocol_39::messages::add_partitions_to_txn_response::AddPartitionsToTxnResponse;
use kafka_protocol_39::messages::describe_transactions_request::DescribeTransactionsRequest;
use kafka_protocol_39::messages::describe_transactions_response::DescribeTransactionsResponse;
use kafka_protocol_39::messages::end_txn_request::EndTxnRequest;
use kafka_protocol_39::messages::end_txn_response::EndTxnResponse;
use kafka_protocol_39::messages::{ProducerId, TopicName};
use kafka_protocol_39::protocol::StrBytes as StrBytes39;

use common::replica_cluster::{ReplCluster, System};
use common::{call39, Conn, FetchSpec};

const TOPIC: &str = "txn-fo";
const TXN_ID: &str = "failover-txn";
const STATE_TOPIC: &str = "__transaction_state";
const PER_PARTITION: i32 = 20;

fn txn_batch(pid: i64, epoch: i16, p: i32) -> Bytes {
    let records: Vec<(Option<&str>, String)> = (0..PER_PARTITION)
        .map(|i| (None, format!("p{p}-{i}")))
        .collect();
    common::txn::producer_batch(pid, epoch, 0, &records, true)
}

fn address(c: &ReplCluster, id: i32) -> String {
    c.nodes
        .iter()
        .find(|n| n.id == id)
        .map(|n| n.link.address())
        .unwrap()
}

/// read_committed from the partition's current leader: (LSO, HW, data
/// records read from offset 0 that are not aborted).
fn committed_read(c: &ReplCluster, p: i32) -> (i64, i64, usize) {
    let leader = c.state(TOPIC, p).leader;
    let mut conn = Conn::open_addr(&address(c, leader));
    let mut spec = FetchSpec::new(TOPIC, p, 0);
    spec.isolation_level = 1;
    spec.max_wait_ms = 10;
    let part = conn.fetch(&spec);
    assert_eq!(part.error_code, 0, "partition {p}: {part:?}");
    let aborted = part.aborted_transactions.clone().unwrap_or_default();
    assert!(aborted.is_empty(), "nothing was aborted: {part:?}");
    let records = common::decode_records(&common::whole_batches(part.records.as_ref()));
    let data = records.iter().filter(|r| !r.control).count();
    (part.last_stable_offset, part.high_watermark, data)
}

fn describe_state(addr: &str, txn_id: &str) -> Option<String> {
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let req = DescribeTransactionsRequest::default().with_transactional_ids(vec![
        kafka_protocol_39::messages::TransactionalId(StrBytes39::from_string(txn_id.to_owned())),
    ]);
    let r: DescribeTransactionsResponse = call39(&mut s, 65, 0, &req);
    let t = r.transaction_states.first()?;
    (t.error_code == 0).then(|| t.transaction_state.as_str().to_owned())
}

/// InitProducerId, retried as a client retries COORDINATOR_LOAD_IN_PROGRESS
/// and CONCURRENT_TRANSACTIONS.
fn init_producer(co: &mut Conn, txn_id: &str, timeout_ms: i32) -> (i64, i16) {
    common::txn::init_producer(co, txn_id, timeout_ms, &[14, 51])
}

fn add_partitions(co: &mut Conn, txn_id: &str, pid: i64, epoch: i16) {
    let add = AddPartitionsToTxnRequest::default()
        .with_v3_and_below_transactional_id(kafka_protocol_39::messages::TransactionalId(
            StrBytes39::from_string(txn_id.to_owned()),
        ))
        .with_v3_and_below_producer_id(ProducerId(pid))
        .with_v3_and_below_producer_epoch(epoch)
        .with_v3_and_below_topics(vec![AddPartitionsToTxnTopic::default()
            .with_name(TopicName(StrBytes39::from_static_str(TOPIC)))
            .with_partitions(vec![0, 1, 2])]);
    let added: AddPartitionsToTxnResponse = call39(&mut co.stream, 24, 3, &add);
    for t in &added.results_by_topic_v3_and_below {
        for p in &t.results_by_partition {
            assert_eq!(p.partition_error_code, 0, "{added:?}");
        }
    }
}

/// Wait (bounded) until partition `p` shows the transaction committed:
/// LSO = HW and all its records readable at read_committed.
fn wait_committed(c: &ReplCluster, p: i32, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (lso, hw, data) = committed_read(c, p);
        if lso == hw && data == PER_PARTITION as usize {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "partition {p} never got {what}: LSO {lso} HW {hw}, {data} committed records"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// On the new coordinator: a transaction left open past its
/// `transaction.timeout.ms` (2 s) is aborted by the coordinator's timer
/// (`transaction.abort.timed.out.transaction.cleanup.interval.ms`, 500 ms
/// here): DescribeTransactions says CompleteAbort, the ABORT marker frees
/// partition 0's LSO, and read_committed still holds only the committed
/// transaction's records there.
fn expired_transaction_is_aborted(c: &ReplCluster, coordinator: i32) {
    const EXPIRING: &str = "expiring-txn";
    // Partition 0's leader now (the killed coordinator may have led it).
    let leader0 = c.state(TOPIC, 0).leader;
    let mut co = Conn::open_addr(&address(c, coordinator));
    let (pid, epoch) = init_producer(&mut co, EXPIRING, 2_000);
    add_partitions(&mut co, EXPIRING, pid, epoch);
    let mut leader = Conn::open_addr(&address(c, leader0));
    let r = leader.produce_as(TOPIC, 0, txn_batch(pid, epoch, 0), -1, Some(EXPIRING));
    assert_eq!(r.error_code, 0, "{r:?}");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let state = describe_state(&address(c, coordinator), EXPIRING);
        let mut conn = Conn::open_addr(&address(c, leader0));
        let mut spec = FetchSpec::new(TOPIC, 0, 0);
        spec.isolation_level = 1;
        spec.max_wait_ms = 10;
        let part = conn.fetch(&spec);
        if state.as_deref() == Some("CompleteAbort")
            && part.last_stable_offset == part.high_watermark
        {
            let aborted = part.aborted_transactions.clone().unwrap_or_default();
            assert_eq!(
                aborted.len(),
                1,
                "the expired transaction is listed aborted: {part:?}"
            );
            assert_eq!(aborted[0].producer_id.0, pid);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the expired transaction was never aborted: {state:?}, LSO {} HW {}",
            part.last_stable_offset,
            part.high_watermark
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn coordinator_failover(system: System) {
    let mut c = ReplCluster::start_beyond_rf(
        system,
        3,
        &[
            "zookeeper.session.timeout.ms=3000",
            "transaction.state.log.num.partitions=1",
            "transaction.state.log.replication.factor=3",
            "transaction.state.log.min.isr=2",
            "min.insync.replicas=2",
            "transaction.abort.timed.out.transaction.cleanup.interval.ms=500",
        ],
    );
    c.create_topic(TOPIC, 3, 3, &[]);
    let first = c.nodes[0].link.address();
    let coordinator = common::txn::find_coordinator(&first, TXN_ID, 1);
    let state = c.wait_state(60, "a replicated transaction log", STATE_TOPIC, 0, |s| {
        s.isr.len() == 3
    });
    assert_eq!(state.leader, coordinator);
    let leaders: Vec<i32> = (0..3).map(|p| c.state(TOPIC, p).leader).collect();
    let isolated_p = (0..3)
        .find(|p| leaders[*p as usize] != coordinator)
        .expect("a data partition led by another broker");
    let isolated = leaders[isolated_p as usize];
    eprintln!(
        "[{system:?} coordinator {coordinator}, data leaders {leaders:?}, isolating {isolated}]"
    );

    // InitProducerId, AddPartitionsToTxn, the data, on the coordinator and leaders.
    let mut co = Conn::open_addr(&address(&c, coordinator));
    let (pid, epoch) = init_producer(&mut co, TXN_ID, 120_000);
    add_partitions(&mut co, TXN_ID, pid, epoch);
    for p in 0..3 {
        let mut leader = Conn::open_addr(&address(&c, leaders[p as usize]));
        let r = leader.produce_as(TOPIC, p, txn_batch(pid, epoch, p), -1, Some(TXN_ID));
        assert_eq!(r.error_code, 0, "partition {p}: {r:?}");
    }

    // Mid-commit: the isolated leader cannot get its marker.
    c.node(isolated).isolate_kafka_port();
    let end = EndTxnRequest::default()
        .with_transactional_id(kafka_protocol_39::messages::TransactionalId(
            StrBytes39::from_static_str(TXN_ID),
        ))
        .with_producer_id(ProducerId(pid))
        .with_producer_epoch(epoch)
        .with_committed(true);
    let ended: EndTxnResponse = call39(&mut co.stream, 26, 3, &end);
    assert_eq!(ended.error_code, 0, "PrepareCommit written: {ended:?}");
    // The reachable partitions get their markers.
    for p in (0..3).filter(|p| *p != isolated_p) {
        wait_committed(&c, p, "its marker");
    }
    c.node(coordinator).kill9();
    let moved = c.wait_state(60, "a new transaction coordinator", STATE_TOPIC, 0, |s| {
        s.leader >= 0 && s.leader != coordinator
    });
    eprintln!("[{system:?} coordinator moved to {}]", moved.leader);
    c.node(isolated).heal();

    // The new coordinator completes the commit: every partition committed.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let done =
            describe_state(&address(&c, moved.leader), TXN_ID).as_deref() == Some("CompleteCommit");
        if done {
            break;
        }
        assert!(Instant::now() < deadline, "the commit never completed");
        std::thread::sleep(Duration::from_millis(200));
    }
    for p in 0..3 {
        wait_committed(&c, p, "the new coordinator's marker");
    }
    expired_transaction_is_aborted(&c, moved.leader);
    c.restart(coordinator);
}

#[test]
fn a_new_coordinator_completes_a_commit_its_predecessor_died_in() {
    coordinator_failover(System::Shardlog);
}

#[test]
#[ignore = "Kafka 3.9 reference (four JVMs): cargo test --test cluster_transactions -- --ignored kafka_"]
fn kafka_a_new_coordinator_completes_a_commit_its_predecessor_died_in() {
    coordinator_failover(System::Kafka);
}
