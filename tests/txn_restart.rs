//! A transaction open across a broker restart (issue 25): the transaction
//! coordinator's state comes back from `__transaction_state`, the
//! partition's open transaction from its producer state, so the producer
//! commits after the restart and read_committed then reads its records —
//! after a clean stop and after kill -9 (`shardlog.flush.every.append`, so
//! every acknowledged append is on disk). Raw requests, retried as a
//! client retries NOT_COORDINATOR and COORDINATOR_LOAD_IN_PROGRESS.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{call39, Broker, Conn, FetchSpec};
use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_protocol::messages::init_producer_id_request::InitProducerIdRequest;
use kafka_protocol::messages::TransactionalId;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol_39::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnTopic,
};
use kafka_protocol_39::messages::add_partitions_to_txn_response::AddPartitionsToTxnResponse;
use kafka_protocol_39::messages::end_txn_request::EndTxnRequest;
use kafka_protocol_39::messages::end_txn_response::EndTxnResponse;
use kafka_protocol_39::messages::{ProducerId, TopicName};
use kafka_protocol_39::protocol::StrBytes as StrBytes39;

const TOPIC: &str = "txn-restart";
const TXN_ID: &str = "restart-txn";
const BROKER: &[&str] = &[
    "transaction.state.log.num.partitions=2",
    "shardlog.flush.every.append=true",
];

fn txn_id39() -> kafka_protocol_39::messages::TransactionalId {
    kafka_protocol_39::messages::TransactionalId(StrBytes39::from_static_str(TXN_ID))
}

fn batch(pid: i64, epoch: i16, first_seq: i32) -> Bytes {
    let records: Vec<(Option<&str>, String)> = (first_seq..first_seq + 5)
        .map(|seq| (None, format!("v{seq}")))
        .collect();
    common::txn::producer_batch(pid, epoch, first_seq, &records, true)
}

/// Call `f` until its error code is not a retriable coordinator error.
fn retried(what: &str, mut f: impl FnMut() -> i16) -> i16 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let code = f();
        // NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
        // CONCURRENT_TRANSACTIONS: a client retries these.
        if ![16, 14, 15, 51].contains(&code) {
            return code;
        }
        assert!(Instant::now() < deadline, "{what}: still {code}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Open a transaction with 5 records on partition 0; (pid, epoch).
fn open_transaction(broker: &Broker) -> (i64, i16) {
    let mut c = Conn::open(broker);
    c.create_topic(TOPIC, 1, &[]);
    let find = FindCoordinatorRequest::default()
        .with_key(StrBytes::from_static_str(TXN_ID))
        .with_key_type(1);
    assert_eq!(
        retried("FindCoordinator", || c.call(3, &find).error_code),
        0
    );
    let init = InitProducerIdRequest::default()
        .with_transactional_id(Some(TransactionalId(StrBytes::from_static_str(TXN_ID))))
        .with_transaction_timeout_ms(600_000)
        .with_producer_id(kafka_protocol::messages::ProducerId(-1))
        .with_producer_epoch(-1);
    let mut ids = (-1, -1);
    assert_eq!(
        retried("InitProducerId", || {
            let r = c.call(4, &init);
            ids = (r.producer_id.0, r.producer_epoch);
            r.error_code
        }),
        0
    );
    let add = AddPartitionsToTxnRequest::default()
        .with_v3_and_below_transactional_id(txn_id39())
        .with_v3_and_below_producer_id(ProducerId(ids.0))
        .with_v3_and_below_producer_epoch(ids.1)
        .with_v3_and_below_topics(vec![AddPartitionsToTxnTopic::default()
            .with_name(TopicName(StrBytes39::from_static_str(TOPIC)))
            .with_partitions(vec![0])]);
    let r: AddPartitionsToTxnResponse = call39(&mut c.stream, 24, 3, &add);
    assert_eq!(
        r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code,
        0
    );
    let p = c.produce_as(TOPIC, 0, batch(ids.0, ids.1, 0), -1, Some(TXN_ID));
    assert_eq!(p.error_code, 0);
    ids
}

/// read_committed from 0: (LSO, HW, values read).
fn committed(broker: &Broker) -> (i64, i64, Vec<String>) {
    let mut c = Conn::open(broker);
    let mut spec = FetchSpec::new(TOPIC, 0, 0);
    spec.isolation_level = 1;
    spec.max_wait_ms = 10;
    let part = c.fetch(&spec);
    assert_eq!(part.error_code, 0);
    let values = common::decode_records(&common::whole_batches(part.records.as_ref()))
        .into_iter()
        .filter(|r| !r.control)
        .map(|r| String::from_utf8(r.value.unwrap().to_vec()).unwrap())
        .collect();
    (part.last_stable_offset, part.high_watermark, values)
}

/// After the restart: still open (LSO 0), then committed by the producer.
fn commit_after_restart(broker: &Broker, (pid, epoch): (i64, i16)) {
    let (lso, hw, values) = committed(broker);
    assert_eq!((lso, hw), (0, 5), "the transaction is still open");
    assert!(values.is_empty());
    let end = EndTxnRequest::default()
        .with_transactional_id(txn_id39())
        .with_producer_id(ProducerId(pid))
        .with_producer_epoch(epoch)
        .with_committed(true);
    let code = retried("EndTxn", || {
        let mut s = broker.connect();
        let r: EndTxnResponse = call39(&mut s, 26, 3, &end);
        r.error_code
    });
    assert_eq!(code, 0, "the restarted coordinator knows the transaction");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (lso, hw, values) = committed(broker);
        if lso == hw && hw == 6 {
            assert_eq!(values, ["v0", "v1", "v2", "v3", "v4"]);
            return;
        }
        assert!(
            Instant::now() < deadline,
            "never committed: LSO {lso} HW {hw}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn an_open_transaction_commits_after_a_clean_restart() {
    let broker = Broker::start_with(BROKER);
    let ids = open_transaction(&broker);
    let (status, dir) = broker.stop_keeping_dir();
    assert!(status.success());
    let broker = Broker::start_in(dir, BROKER);
    commit_after_restart(&broker, ids);
    broker.stop();
}

#[test]
fn an_open_transaction_commits_after_kill_9() {
    let broker = Broker::start_with(BROKER);
    let ids = open_transaction(&broker);
    let dir = broker.kill_keeping_dir();
    let broker = Broker::start_in(dir, BROKER);
    commit_after_restart(&broker, ids);
    broker.stop();
}
