//! Raw transactional requests for the transaction tests: a producer's
//! record batch, WriteTxnMarkers as a transaction coordinator sends it,
//! and the FindCoordinator / InitProducerId steps of a producer's start.

use std::net::TcpStream;

use bytes::{Bytes, BytesMut};
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use kafka_protocol_39::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic, WriteTxnMarkersRequest,
};
use kafka_protocol_39::messages::write_txn_markers_response::WriteTxnMarkersResponse;
use kafka_protocol_39::messages::{ProducerId, TopicName};
use kafka_protocol_39::protocol::StrBytes;

/// One v2 batch of `(key, value)` records of producer `pid` at `epoch`,
/// sequences from `first_seq`, transactional or not.
pub fn producer_batch(
    pid: i64,
    epoch: i16,
    first_seq: i32,
    records: &[(Option<&str>, String)],
    transactional: bool,
) -> Bytes {
    let records: Vec<Record> = records
        .iter()
        .enumerate()
        .map(|(i, (key, value))| Record {
            transactional,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: pid,
            producer_epoch: epoch,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: first_seq + i as i32,
            timestamp: super::now_ms(),
            key: key.map(|k| Bytes::from(k.to_owned())),
            value: Some(Bytes::from(value.clone())),
            headers: Default::default(),
        })
        .collect();
    let mut buf = BytesMut::new();
    let opts = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut buf, records.iter(), &opts).expect("encode batch");
    buf.freeze()
}

/// WriteTxnMarkers v1 of one marker for `partitions` of `topic`; each
/// partition's error code, in order.
pub fn write_marker(
    stream: &mut TcpStream,
    topic: &str,
    partitions: &[i32],
    (pid, epoch): (i64, i16),
    coordinator_epoch: i32,
    commit: bool,
) -> Vec<i16> {
    let req = WriteTxnMarkersRequest::default().with_markers(vec![WritableTxnMarker::default()
        .with_producer_id(ProducerId(pid))
        .with_producer_epoch(epoch)
        .with_transaction_result(commit)
        .with_coordinator_epoch(coordinator_epoch)
        .with_topics(vec![WritableTxnMarkerTopic::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_owned())))
            .with_partition_indexes(partitions.to_vec())])]);
    let resp: WriteTxnMarkersResponse = super::call39(stream, 27, 1, &req);
    let m = &resp.markers[0];
    assert_eq!(m.producer_id.0, pid);
    m.topics[0]
        .partitions
        .iter()
        .map(|p| p.error_code)
        .collect()
}

/// FindCoordinator (key type 0 group, 1 transaction) at `addr` until a
/// coordinator answers (the first lookup creates the internal topic);
/// the coordinator's node id.
pub fn find_coordinator(addr: &str, key: &str, key_type: i8) -> i32 {
    let mut conn = super::Conn::open_addr(addr);
    let find =
        kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest::default()
            .with_key(kafka_protocol::protocol::StrBytes::from_string(
                key.to_owned(),
            ))
            .with_key_type(key_type);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let r = conn.call(3, &find);
        if r.error_code == 0 {
            return r.node_id.0;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no coordinator for {key}: {r:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// InitProducerId for `txn_id` with `timeout_ms`, retried (for up to 60 s)
/// while its code is one of `retriable`; (producer id, epoch).
pub fn init_producer(
    co: &mut super::Conn,
    txn_id: &str,
    timeout_ms: i32,
    retriable: &[i16],
) -> (i64, i16) {
    use kafka_protocol::messages::{ProducerId as Pid, TransactionalId};
    let req = kafka_protocol::messages::init_producer_id_request::InitProducerIdRequest::default()
        .with_transactional_id(Some(TransactionalId(
            kafka_protocol::protocol::StrBytes::from_string(txn_id.to_owned()),
        )))
        .with_transaction_timeout_ms(timeout_ms)
        .with_producer_id(Pid(-1))
        .with_producer_epoch(-1);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let init = co.call(4, &req);
        match init.error_code {
            0 => return (init.producer_id.0, init.producer_epoch),
            c if retriable.contains(&c) && std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(200))
            }
            _ => panic!("{init:?}"),
        }
    }
}
