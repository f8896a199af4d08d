//! `[drv]` WriteTxnMarkers (key 27), v0–v1 (Kafka 3.9; v1 flexible): a
//! transaction coordinator asks the leaders of a transaction's partitions
//! to append its COMMIT or ABORT marker (KIP-98; Kafka's
//! `KafkaApis.handleWriteTxnMarkersRequest`).
//!
//! Each marker goes to its partition's owner shard, which checks the
//! producer and coordinator epochs and appends the control batch; the
//! answer waits, like an acks=all produce, until the HW covers every
//! marker (Kafka appends markers with `requiredAcks = -1` and
//! `request.timeout.ms`, 30 s by default). Partitions this broker does not
//! host answer UNKNOWN_TOPIC_OR_PARTITION / NOT_LEADER_OR_FOLLOWER as a
//! produce would.

use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::ApiKey;
use kafka_protocol_39::messages::write_txn_markers_request::WriteTxnMarkersRequest;
use kafka_protocol_39::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
    WriteTxnMarkersResponse,
};

use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::controller::image::OFFSETS_TOPIC;
use crate::protocol::decode::DecodeError;
use crate::protocol::schema::{decode_checked_39, encode_39, Field, BOOL, INT16, INT32, INT64};
use crate::protocol::{ApiRange, ErrorCode};
use crate::replication::partition::MarkerSpec;
use crate::server::out::OutPart;
use crate::shard::group::group_host::GroupCall;
use crate::shard::ShardContext;
use crate::types::TopicPartition;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::WriteTxnMarkers, 0, 1);
const FIRST_FLEXIBLE: i16 = 1;

/// Kafka's `request.timeout.ms` default: how long markers wait for the HW.
pub const MARKER_TIMEOUT_MS: i64 = 30_000;

/// WriteTxnMarkersRequest.json: markers [producer_id, producer_epoch,
/// transaction_result, topics [name, partition_indexes], coordinator_epoch].
const SCHEMA: &[Field] = &[Field::Structs(&[
    INT64,
    INT16,
    BOOL,
    Field::Structs(&[Field::Str, Field::FixedArray(4)]),
    INT32,
])];

pub fn decode_request(
    body: bytes::Bytes,
    version: i16,
) -> Result<WriteTxnMarkersRequest, DecodeError> {
    decode_checked_39(body, SCHEMA, version, version >= FIRST_FLEXIBLE)
}

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        // KafkaApis.handleWriteTxnMarkersRequest: ALTER on the cluster, else
        // CLUSTER_ACTION; denied, every partition answers
        // CLUSTER_AUTHORIZATION_FAILED (WriteTxnMarkersRequest.getErrorResponse).
        let authz = Authz::new(&ctx, &req);
        let allowed = authz.cluster(Operation::Alter) || authz.cluster(Operation::ClusterAction);
        let request = decode_request(req.body, version)?;
        let response = if allowed {
            write_markers(&ctx, &request).await
        } else {
            denied(&request)
        };
        let body = encode_39(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

/// One partition of the request: where its answer goes, and the error
/// decided before any append.
struct Slot {
    marker: usize,
    topic: String,
    partition: i32,
    error: ErrorCode,
}

async fn write_markers(
    ctx: &Rc<ShardContext>,
    request: &WriteTxnMarkersRequest,
) -> WriteTxnMarkersResponse {
    let snapshot = ctx.snapshot();
    let mut slots = Vec::new();
    let mut asks: Vec<(usize, TopicPartition, MarkerSpec)> = Vec::new();
    for (mi, m) in request.markers.iter().enumerate() {
        let spec = MarkerSpec {
            producer_id: m.producer_id.0,
            producer_epoch: m.producer_epoch,
            coordinator_epoch: m.coordinator_epoch,
            commit: m.transaction_result,
        };
        for t in &m.topics {
            let topic = t.name.0.as_str();
            for &p in &t.partition_indexes {
                let error = if snapshot.hosts_partition(topic, p) {
                    asks.push((slots.len(), TopicPartition::new(topic, p), spec));
                    ErrorCode::NONE
                } else {
                    snapshot.not_hosted_error(topic, p)
                };
                slots.push(Slot {
                    marker: mi,
                    topic: topic.to_owned(),
                    partition: p,
                    error,
                });
            }
        }
    }
    if !asks.is_empty() {
        let now_ms = ctx.clock.wall_ms();
        let idx: Vec<usize> = asks.iter().map(|a| a.0).collect();
        let keys: Vec<TopicPartition> = asks.iter().map(|a| a.1.clone()).collect();
        let parts = asks.into_iter().map(|(_, tp, m)| (tp, m)).collect();
        let results = ctx.datapath().markers_on_owners(parts, now_ms).await;
        let codes = ctx
            .datapath()
            .wait_replicated(MARKER_TIMEOUT_MS, &keys, &results)
            .await
            .unwrap_or_else(|| results.iter().map(|r| r.error_code).collect());
        for (i, code) in idx.into_iter().zip(codes) {
            slots[i].error = code;
        }
        complete_txn_offsets(ctx, request, &slots).await;
    }
    to_response(request, slots)
}

/// Markers written to `__consumer_offsets` commit or drop the producer's
/// pending TxnOffsetCommit offsets on the group coordinator (Kafka's
/// `GroupCoordinator.scheduleHandleTxnCompletion` after the append).
async fn complete_txn_offsets(
    ctx: &Rc<ShardContext>,
    request: &WriteTxnMarkersRequest,
    slots: &[Slot],
) {
    for s in slots {
        if s.topic != OFFSETS_TOPIC || s.error != ErrorCode::NONE {
            continue;
        }
        let m = &request.markers[s.marker];
        let call = GroupCall::TxnMarker {
            partition: s.partition,
            producer_id: m.producer_id.0,
            commit: m.transaction_result,
        };
        let owner = ctx.owner_of(OFFSETS_TOPIC, s.partition);
        let _ = ctx.group_driver().ask_shard_group(owner, call).await;
    }
}

/// Every partition of the request CLUSTER_AUTHORIZATION_FAILED.
fn denied(request: &WriteTxnMarkersRequest) -> WriteTxnMarkersResponse {
    let mut slots = Vec::new();
    for (marker, m) in request.markers.iter().enumerate() {
        for t in &m.topics {
            for &partition in &t.partition_indexes {
                slots.push(Slot {
                    marker,
                    topic: t.name.0.to_string(),
                    partition,
                    error: ErrorCode::CLUSTER_AUTHORIZATION_FAILED,
                });
            }
        }
    }
    to_response(request, slots)
}

fn to_response(request: &WriteTxnMarkersRequest, slots: Vec<Slot>) -> WriteTxnMarkersResponse {
    use kafka_protocol_39::messages::TopicName;
    use kafka_protocol_39::protocol::StrBytes;
    let mut markers: Vec<WritableTxnMarkerResult> = request
        .markers
        .iter()
        .map(|m| WritableTxnMarkerResult::default().with_producer_id(m.producer_id))
        .collect();
    for s in slots {
        let topics = &mut markers[s.marker].topics;
        if topics.last().map(|t| t.name.0.as_str()) != Some(s.topic.as_str()) {
            topics.push(
                WritableTxnMarkerTopicResult::default()
                    .with_name(TopicName(StrBytes::from_string(s.topic.clone()))),
            );
        }
        if let Some(t) = topics.last_mut() {
            t.partitions.push(
                WritableTxnMarkerPartitionResult::default()
                    .with_partition_index(s.partition)
                    .with_error_code(s.error.0),
            );
        }
    }
    WriteTxnMarkersResponse::default().with_markers(markers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol_39::messages::write_txn_markers_request::{
        WritableTxnMarker, WritableTxnMarkerTopic,
    };
    use kafka_protocol_39::messages::{ProducerId, TopicName};
    use kafka_protocol_39::protocol::{Encodable, StrBytes};

    #[test]
    fn every_version_decodes_through_the_checked_schema() {
        for version in 0..=1 {
            let req =
                WriteTxnMarkersRequest::default().with_markers(vec![WritableTxnMarker::default()
                    .with_producer_id(ProducerId(7))
                    .with_producer_epoch(2)
                    .with_transaction_result(true)
                    .with_coordinator_epoch(5)
                    .with_topics(vec![WritableTxnMarkerTopic::default()
                        .with_name(TopicName(StrBytes::from_static_str("t")))
                        .with_partition_indexes(vec![0, 3])])]);
            let mut buf = bytes::BytesMut::new();
            req.encode(&mut buf, version).unwrap();
            let back = decode_request(buf.freeze(), version).unwrap();
            assert_eq!(back, req, "v{version}");
        }
    }
}
