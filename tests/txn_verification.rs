//! KIP-890 part 1, transaction verification (issue 25; Kafka 3.9's
//! `transaction.partition.verification.enable`, on by default): a
//! partition leader asks the producer's transaction coordinator
//! (AddPartitionsToTxn v4+, `verify_only`) before a transactional batch
//! opens a transaction on the partition, so a batch of a partition that
//! is not in the transaction, or a late batch arriving after the
//! transaction ended, is refused (INVALID_TXN_STATE) instead of opening a
//! "hanging" transaction that holds the LSO back forever.
//!
//! - `single_broker`: one broker; the refusals, the verify-only answers
//!   per partition, and TxnOffsetCommit without AddOffsetsToTxn. The
//!   same script runs against Apache Kafka 3.9 (`--ignored kafka_`).
//! - `mixed_cluster`: a shardlog broker and an Apache Kafka 3.9 broker in
//!   one ZooKeeper-mode cluster, each leading one data partition and one
//!   `__transaction_state` partition: each system's leaders verify with
//!   the other system's coordinator (Kafka sends shardlog AddPartitionsToTxn
//!   v5, shardlog sends Kafka the same) and with their own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::produce_response::PartitionProduceResponse;
use kafka_protocol_39::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kafka_protocol_39::messages::add_partitions_to_txn_response::AddPartitionsToTxnResponse;
use kafka_protocol_39::messages::end_txn_request::EndTxnRequest;
use kafka_protocol_39::messages::end_txn_response::EndTxnResponse;
use kafka_protocol_39::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequest, TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol_39::messages::txn_offset_commit_response::TxnOffsetCommitResponse;
use kafka_protocol_39::messages::{GroupId, ProducerId, TopicName, TransactionalId};
use kafka_protocol_39::protocol::StrBytes as StrBytes39;

use common::replica_cluster::{ReplCluster, System};
use common::txn::find_coordinator;
use common::{call39, Conn, FetchSpec};

const INVALID_TXN_STATE: i16 = 48;
const INVALID_PRODUCER_ID_MAPPING: i16 = 49;
const PRODUCER_FENCED: i16 = 90;
const TRANSACTION_ABORTABLE: i16 = 120;

fn s39(s: &str) -> StrBytes39 {
    StrBytes39::from_string(s.to_owned())
}

fn address(c: &ReplCluster, id: i32) -> String {
    c.nodes
        .iter()
        .find(|n| n.id == id)
        .map(|n| n.link.address())
        .unwrap()
}

/// Kafka's `Utils.abs(transactionalId.hashCode) % partitions`.
fn coordinator_partition(txn_id: &str, partitions: i32) -> i32 {
    let h = txn_id.encode_utf16().fold(0i32, |h, c| {
        h.wrapping_mul(31).wrapping_add(i32::from(c as i16))
    });
    let abs = if h == i32::MIN { 0 } else { h.abs() };
    abs % partitions
}

/// InitProducerId at `addr`, retried while the coordinator loads or moves
/// (COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
/// NOT_COORDINATOR) or a transaction ends (CONCURRENT_TRANSACTIONS).
fn init_producer(addr: &str, txn_id: &str) -> (i64, i16) {
    let mut co = Conn::open_addr(addr);
    common::txn::init_producer(&mut co, txn_id, 120_000, &[14, 15, 16, 51])
}

fn topics(topic: &str, parts: &[i32]) -> Vec<AddPartitionsToTxnTopic> {
    vec![AddPartitionsToTxnTopic::default()
        .with_name(TopicName(s39(topic)))
        .with_partitions(parts.to_vec())]
}

/// A client's AddPartitionsToTxn (v3); the per-partition codes.
fn add_partitions(
    addr: &str,
    txn_id: &str,
    (pid, epoch): (i64, i16),
    topic: &str,
    parts: &[i32],
) -> Vec<i16> {
    let mut co = Conn::open_addr(addr);
    let add = AddPartitionsToTxnRequest::default()
        .with_v3_and_below_transactional_id(TransactionalId(s39(txn_id)))
        .with_v3_and_below_producer_id(ProducerId(pid))
        .with_v3_and_below_producer_epoch(epoch)
        .with_v3_and_below_topics(topics(topic, parts));
    let r: AddPartitionsToTxnResponse = call39(&mut co.stream, 24, 3, &add);
    r.results_by_topic_v3_and_below
        .iter()
        .flat_map(|t| {
            t.results_by_partition
                .iter()
                .map(|p| p.partition_error_code)
        })
        .collect()
}

/// A broker's verify-only AddPartitionsToTxn (v5): (top-level code,
/// per-partition codes).
fn verify_only(
    addr: &str,
    txn_id: &str,
    (pid, epoch): (i64, i16),
    topic: &str,
    parts: &[i32],
) -> (i16, Vec<i16>) {
    let mut co = Conn::open_addr(addr);
    let req = AddPartitionsToTxnRequest::default().with_transactions(vec![
        AddPartitionsToTxnTransaction::default()
            .with_transactional_id(TransactionalId(s39(txn_id)))
            .with_producer_id(ProducerId(pid))
            .with_producer_epoch(epoch)
            .with_verify_only(true)
            .with_topics(topics(topic, parts)),
    ]);
    let r: AddPartitionsToTxnResponse = call39(&mut co.stream, 24, 5, &req);
    // In partition order (Kafka answers in its map's order).
    let mut codes: Vec<(i32, i16)> = r
        .results_by_transaction
        .iter()
        .flat_map(|t| &t.topic_results)
        .flat_map(|t| {
            t.results_by_partition
                .iter()
                .map(|p| (p.partition_index, p.partition_error_code))
        })
        .collect();
    codes.sort_unstable();
    (r.error_code, codes.into_iter().map(|(_, c)| c).collect())
}

fn batch(pid: i64, epoch: i16, first_seq: i32, tag: &str) -> Bytes {
    let records: Vec<(Option<&str>, String)> =
        (0..3).map(|i| (None, format!("{tag}-{i}"))).collect();
    common::txn::producer_batch(pid, epoch, first_seq, &records, true)
}

/// A transactional produce, retried while the answer is retriable
/// (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, and
/// NOT_ENOUGH_REPLICAS: what a verification the coordinator could not
/// answer yet becomes for Produce v3–v10).
fn produce(
    addr: &str,
    txn_id: &str,
    topic: &str,
    p: i32,
    records: Bytes,
) -> PartitionProduceResponse {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut conn = Conn::open_addr(addr);
        let r = conn.produce_as(topic, p, records.clone(), -1, Some(txn_id));
        if ![3, 6, 19].contains(&r.error_code) || Instant::now() > deadline {
            return r;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn end_txn(addr: &str, txn_id: &str, (pid, epoch): (i64, i16), commit: bool) -> i16 {
    let mut co = Conn::open_addr(addr);
    let end = EndTxnRequest::default()
        .with_transactional_id(TransactionalId(s39(txn_id)))
        .with_producer_id(ProducerId(pid))
        .with_producer_epoch(epoch)
        .with_committed(commit);
    let r: EndTxnResponse = call39(&mut co.stream, 26, 3, &end);
    r.error_code
}

/// read_committed from `addr` (the leader): (LSO, HW, data values).
fn read_committed(addr: &str, topic: &str, p: i32) -> (i64, i64, Vec<String>) {
    let mut c = Conn::open_addr(addr);
    let mut spec = FetchSpec::new(topic, p, 0);
    spec.isolation_level = 1;
    spec.max_wait_ms = 10;
    let part = c.fetch(&spec);
    assert_eq!(part.error_code, 0, "{part:?}");
    // A client's filtering: a producer's records from an aborted
    // transaction's first offset up to its ABORT marker are skipped.
    let mut aborted: Vec<(i64, i64)> = part
        .aborted_transactions
        .clone()
        .unwrap_or_default()
        .iter()
        .map(|a| (a.first_offset, a.producer_id.0))
        .collect();
    aborted.sort_unstable();
    let mut skipping: Vec<i64> = Vec::new();
    let mut values = Vec::new();
    for r in common::decode_records(&common::whole_batches(part.records.as_ref())) {
        while aborted.first().is_some_and(|(first, _)| *first <= r.offset) {
            skipping.push(aborted.remove(0).1);
        }
        if r.control {
            // Control record key: version i16, type i16 (0 = ABORT).
            let key = r.key.clone().unwrap_or_default();
            if key.len() >= 4 && key[2..4] == [0, 0] {
                skipping.retain(|p| *p != r.producer_id);
            }
        } else if !skipping.contains(&r.producer_id) {
            values.push(String::from_utf8(r.value.unwrap().to_vec()).unwrap());
        }
    }
    (part.last_stable_offset, part.high_watermark, values)
}

/// Wait (bounded) until no transaction holds partition `p` back.
fn wait_stable(addr: &str, topic: &str, p: i32) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (lso, hw, values) = read_committed(addr, topic, p);
        if lso == hw {
            return values;
        }
        assert!(
            Instant::now() < deadline,
            "{topic}-{p}: LSO {lso} < HW {hw}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn txn_offset_commit(
    addr: &str,
    txn_id: &str,
    group: &str,
    (pid, epoch): (i64, i16),
    version: i16,
) -> i16 {
    let mut co = Conn::open_addr(addr);
    let req = TxnOffsetCommitRequest::default()
        .with_transactional_id(TransactionalId(s39(txn_id)))
        .with_group_id(GroupId(s39(group)))
        .with_producer_id(ProducerId(pid))
        .with_producer_epoch(epoch)
        .with_generation_id(-1)
        .with_member_id(s39(""))
        .with_topics(vec![TxnOffsetCommitRequestTopic::default()
            .with_name(TopicName(s39("input")))
            .with_partitions(vec![TxnOffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(5)])]);
    let r: TxnOffsetCommitResponse = call39(&mut co.stream, 28, version, &req);
    r.topics[0].partitions[0].error_code
}

fn single_broker(system: System) {
    let c = ReplCluster::start(
        system,
        1,
        &[
            "transaction.state.log.num.partitions=1",
            "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1",
            "offsets.topic.num.partitions=1",
            "offsets.topic.replication.factor=1",
        ],
    );
    let (topic, txn_id) = ("verified", "verify-1");
    c.create_topic(topic, 2, 1, &[]);
    c.create_topic("input", 1, 1, &[]);
    let addr = address(&c, c.nodes[0].id);
    find_coordinator(&addr, txn_id, 1);
    let ids = init_producer(&addr, txn_id);
    let (pid, epoch) = ids;

    // The coordinator's verify-only answers: per partition, nothing added.
    assert_eq!(
        verify_only(&addr, "nobody", ids, topic, &[0]),
        (0, vec![INVALID_PRODUCER_ID_MAPPING])
    );
    assert_eq!(add_partitions(&addr, txn_id, ids, topic, &[0]), vec![0]);
    assert_eq!(
        verify_only(&addr, txn_id, ids, topic, &[0, 1]),
        (0, vec![0, TRANSACTION_ABORTABLE]),
        "partition 1 is not in the transaction"
    );
    assert_eq!(
        verify_only(&addr, txn_id, (pid, epoch + 1), topic, &[0]),
        (0, vec![PRODUCER_FENCED])
    );

    // Partition 0 was added: its batch is verified and appended.
    let r = produce(&addr, txn_id, topic, 0, batch(pid, epoch, 0, "in"));
    assert_eq!(r.error_code, 0, "{r:?}");
    // Partition 1 was not: refused, nothing appended, nothing held open.
    let r = produce(&addr, txn_id, topic, 1, batch(pid, epoch, 0, "stray"));
    assert_eq!(r.error_code, INVALID_TXN_STATE, "{r:?}");
    assert_eq!(read_committed(&addr, topic, 1), (0, 0, vec![]));
    // The group's offsets partition was not added (no AddOffsetsToTxn):
    // TxnOffsetCommit is refused, v3 with INVALID_TXN_STATE and v4 with
    // TRANSACTION_ABORTABLE.
    find_coordinator(&addr, "verify-group", 0);
    assert_eq!(
        txn_offset_commit(&addr, txn_id, "verify-group", ids, 3),
        INVALID_TXN_STATE
    );
    assert_eq!(
        txn_offset_commit(&addr, txn_id, "verify-group", ids, 4),
        TRANSACTION_ABORTABLE
    );

    // Abort; a late batch of the ended transaction must not open a new one.
    assert_eq!(end_txn(&addr, txn_id, ids, false), 0);
    assert!(
        wait_stable(&addr, topic, 0).is_empty(),
        "the aborted records"
    );
    let r = produce(&addr, txn_id, topic, 0, batch(pid, epoch, 3, "late"));
    assert_eq!(r.error_code, INVALID_TXN_STATE, "a late batch: {r:?}");
    let (lso, hw, _) = read_committed(&addr, topic, 0);
    assert_eq!(lso, hw, "no hanging transaction holds the LSO");

    // The next transaction, added properly, commits.
    let ended = Instant::now() + Duration::from_secs(30);
    while add_partitions(&addr, txn_id, ids, topic, &[0, 1]) != vec![0, 0] {
        assert!(Instant::now() < ended, "the abort never completed");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Partition 1 never acknowledged a batch: its next sequence is still 0
    // (a later one would be out of order: the refused batch's verification
    // saw sequence 0, Kafka's `VerificationStateEntry.lowestSequence`).
    for (p, seq) in [(0, 3), (1, 0)] {
        let r = produce(
            &addr,
            txn_id,
            topic,
            p,
            batch(pid, epoch, seq, &format!("ok{p}")),
        );
        assert_eq!(r.error_code, 0, "partition {p}: {r:?}");
    }
    assert_eq!(end_txn(&addr, txn_id, ids, true), 0);
    assert_eq!(wait_stable(&addr, topic, 0), ["ok0-0", "ok0-1", "ok0-2"]);
    assert_eq!(wait_stable(&addr, topic, 1), ["ok1-0", "ok1-1", "ok1-2"]);
}

#[test]
fn single_broker_refuses_batches_outside_the_transaction() {
    single_broker(System::Shardlog);
}

#[test]
#[ignore = "Kafka 3.9 reference (a JVM): cargo test --test txn_verification -- --ignored kafka_"]
fn kafka_single_broker_refuses_batches_outside_the_transaction() {
    single_broker(System::Kafka);
}

/// One transaction whose coordinator is node `coordinator`: the partition
/// led by the other node is added first, so that leader's verification
/// (with a coordinator of the other system) passes and the coordinator's
/// own partition, not yet added, is refused by its local verification.
fn transaction_across(
    c: &ReplCluster,
    topic: &str,
    txn_id: &str,
    coordinator: i32,
    leaders: &[i32; 2],
) {
    let co = address(c, coordinator);
    let ids = init_producer(&co, txn_id);
    let remote = leaders.iter().position(|l| *l != coordinator).unwrap() as i32;
    let local = 1 - remote;
    let at = |p: i32| address(c, leaders[p as usize]);
    assert_eq!(add_partitions(&co, txn_id, ids, topic, &[remote]), vec![0]);
    let r = produce(
        &at(remote),
        txn_id,
        topic,
        remote,
        batch(ids.0, ids.1, 0, "remote"),
    );
    assert_eq!(
        r.error_code, 0,
        "verified with the other system's coordinator: {r:?}"
    );
    let r = produce(
        &at(local),
        txn_id,
        topic,
        local,
        batch(ids.0, ids.1, 0, "stray"),
    );
    assert_eq!(
        r.error_code, INVALID_TXN_STATE,
        "not in the transaction: {r:?}"
    );
    assert_eq!(add_partitions(&co, txn_id, ids, topic, &[local]), vec![0]);
    let r = produce(
        &at(local),
        txn_id,
        topic,
        local,
        batch(ids.0, ids.1, 0, "local"),
    );
    assert_eq!(r.error_code, 0, "{r:?}");
    assert_eq!(end_txn(&co, txn_id, ids, true), 0);
    // Once the markers are written (EndTxn answers before), a late batch
    // of the ended transaction is refused.
    for p in 0..2 {
        wait_stable(&at(p), topic, p);
    }
    let late = produce(
        &at(remote),
        txn_id,
        topic,
        remote,
        batch(ids.0, ids.1, 3, "late"),
    );
    assert_eq!(
        late.error_code, INVALID_TXN_STATE,
        "after the commit: {late:?}"
    );
    for p in 0..2 {
        let tag = if p == remote { "remote" } else { "local" };
        let values = wait_stable(&at(p), topic, p);
        assert!(
            values.iter().filter(|v| v.starts_with(tag)).count() == 3
                && values
                    .iter()
                    .all(|v| !v.starts_with("stray") && !v.starts_with("late")),
            "{topic}-{p} ({txn_id}): {values:?}"
        );
    }
}

#[test]
fn mixed_cluster_leaders_verify_with_the_other_systems_coordinator() {
    let c = ReplCluster::start_mixed(
        &[System::Shardlog, System::Kafka],
        &[
            "transaction.state.log.num.partitions=2",
            "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1",
        ],
    );
    let topic = "verified-mixed";
    c.create_topic(topic, 2, 1, &[]);
    let leaders = [c.state(topic, 0).leader, c.state(topic, 1).leader];
    assert_ne!(leaders[0], leaders[1], "one data partition on each broker");
    let first = address(&c, c.nodes[0].id);
    find_coordinator(&first, "mixed-probe", 1);
    let state = c.wait_state(60, "led transaction log", "__transaction_state", 1, |s| {
        s.leader >= 0
    });
    let coordinators = [c.state("__transaction_state", 0).leader, state.leader];
    assert_ne!(
        coordinators[0], coordinators[1],
        "one coordinator partition on each broker"
    );
    for cp in 0..2 {
        let txn_id = (0..)
            .map(|i| format!("mixed-{i}"))
            .find(|id| coordinator_partition(id, 2) == cp)
            .unwrap();
        let coordinator = coordinators[cp as usize];
        let system = c.nodes.iter().find(|n| n.id == coordinator).unwrap().system;
        eprintln!("[{txn_id}: coordinator {coordinator} ({system:?}), data leaders {leaders:?}]");
        find_coordinator(&first, &txn_id, 1);
        transaction_across(&c, topic, &txn_id, coordinator, &leaders);
    }
}

/// Produce requests pipelined on one connection keep their order on a
/// partition through their KIP-890 verifications: three transactional
/// batches of one producer to a partition just added to the transaction,
/// sent back to back, with the 1st and 3rd request's verification answer
/// held back (`shardlog.txn.verify.delay.ms`) so the 2nd finishes its
/// verification first. Kafka handles a connection's requests one at a time;
/// the appends must land in that order too (a later batch first would
/// be OUT_OF_ORDER_SEQUENCE_NUMBER for the earlier one, as the Go
/// client's transactional ETL test saw).
#[test]
fn pipelined_produces_keep_their_order_through_a_slow_verification() {
    let c = ReplCluster::start(
        System::Shardlog,
        1,
        &[
            "transaction.state.log.num.partitions=1",
            "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1",
            "shardlog.txn.verify.delay.ms=1500",
        ],
    );
    let (topic, txn_id) = ("pipelined", "pipelined-1");
    c.create_topic(topic, 1, 1, &[]);
    let addr = address(&c, c.nodes[0].id);
    find_coordinator(&addr, txn_id, 1);
    let ids = init_producer(&addr, txn_id);
    let (pid, epoch) = ids;
    assert_eq!(add_partitions(&addr, txn_id, ids, topic, &[0]), vec![0]);
    // Each request's batch on one connection, sent before any answer.
    let mut conn = Conn::open_addr(&addr);
    let sent: Vec<i32> = (0..3)
        .map(|i| {
            let records = batch(pid, epoch, 3 * i, &format!("b{i}"));
            let req = common::produce_request(topic, 0, records, -1).with_transactional_id(Some(
                kafka_protocol::messages::TransactionalId(
                    kafka_protocol::protocol::StrBytes::from_string(txn_id.into()),
                ),
            ));
            conn.send(common::PRODUCE_VERSION, &req)
        })
        .collect();
    let answers: Vec<(i16, i64)> = sent
        .into_iter()
        .map(|id| {
            let r =
                conn.recv::<kafka_protocol::messages::ProduceRequest>(common::PRODUCE_VERSION, id);
            let p = &r.responses[0].partition_responses[0];
            (p.error_code, p.base_offset)
        })
        .collect();
    assert_eq!(
        answers,
        [(0, 0), (0, 3), (0, 6)],
        "(error, base offset) of each request, in the order sent"
    );
    assert_eq!(end_txn(&addr, txn_id, ids, true), 0);
    let values = wait_stable(&addr, topic, 0);
    let expected: Vec<String> = (0..3)
        .flat_map(|b| (0..3).map(move |r| format!("b{b}-{r}")))
        .collect();
    assert_eq!(values, expected);
}

/// The stress form of the test above with a real client: the Java
/// client's transactional producer (max.in.flight.requests.per.connection
/// 5, small batches: a partition just added to a transaction has batches
/// in several requests in flight on one connection) runs transaction
/// after transaction over 2 shards, every other verification held back
/// 20 ms, while its connections are reset now and then (a link in front
/// of the broker, as the Go client's chaos mode kills connections). No
/// OutOfOrderSequenceException, and a read_committed consumer reads each
/// committed transaction's records exactly once, in order, none of the
/// aborted ones. Short by default; `SHARDLOG_TXN_STRESS=N` runs N
/// transactions (the long form).
#[test]
fn java_transactions_with_pipelined_produces_and_connection_resets() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    let txns: u32 = std::env::var("SHARDLOG_TXN_STRESS").map_or(40, |n| n.parse().unwrap());
    let link = Arc::new(common::link::Link::start("127.0.0.1:9"));
    let advertised = format!("advertised.listeners=PLAINTEXT://{}", link.address());
    let broker = common::Broker::start_with(&[
        &advertised,
        "transaction.state.log.num.partitions=4",
        "shardlog.txn.verify.delay.ms=20",
    ]);
    link.set_target(&broker.bootstrap());
    // The client's every connection goes through the link.
    let brokers = Conn::open_addr(&link.address()).metadata(None).brokers;
    assert_eq!(
        brokers.iter().map(|b| b.port).collect::<Vec<_>>(),
        [i32::from(link.port)]
    );
    let topic = common::unique_topic("txn-stress");
    let stop = Arc::new(AtomicBool::new(false));
    let chaos = {
        let (link, stop) = (link.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut resets = 0u32;
            // Not the first seconds: the client's start (InitProducerId)
            // is not what this exercises.
            std::thread::sleep(Duration::from_secs(3));
            while !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(700 + u64::from(resets % 5) * 150));
                link.close_all();
                resets += 1;
            }
            resets
        })
    };
    let report = common::java::run_program(
        "TxnStress",
        &[&link.address(), &topic, "6", &txns.to_string(), "120"],
    );
    stop.store(true, Ordering::SeqCst);
    let resets = chaos.join().unwrap();
    eprintln!("[{txns} transactions, {resets} connection resets] {report}");
    assert!(report["fatal"].is_null(), "{report}");
    assert!(
        report["errors"]
            .get("OutOfOrderSequenceException")
            .is_none(),
        "{report}"
    );
    assert!(report["committed"].as_u64().unwrap() > 0, "{report}");
    let read = &report["read"];
    for key in ["missing", "duplicated", "out_of_order", "aborted_read"] {
        assert_eq!(read[key], 0, "{key}: {report}");
    }
    broker.stop();
}
