//! Raw transactional requests for the transaction tests: a producer's
//! record batch, and WriteTxnMarkers as a transaction coordinator sends it.

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
