//! `[drv]` StopReplica (key 5), v0–v4: a ZooKeeper-mode controller tells
//! this broker to stop hosting partitions, deleting their logs when asked
//! (Kafka 3.9 `KafkaApis.handleStopReplicaRequest`,
//! `ReplicaManager.stopReplicas`). Codec: `kafka-protocol` 0.15.1 (Kafka
//! 3.9 schemas); request header v1 up to v1, v2 (flexible) from v2. A 3.9
//! controller sends v4.
//!
//! Forwarded to the control shard like LeaderAndIsr: fenced, applied to
//! the hosted partitions, published (owners close the stopped partitions,
//! keeping their files), then the logs of partitions stopped with delete
//! are deleted on their owners, and only then the answer goes back.

use std::rc::Rc;

use bytes::{Bytes, BytesMut};
use futures_lite::future::BoxedLocal;
use kafka_protocol_39::messages::stop_replica_request::StopReplicaRequest;
use kafka_protocol_39::protocol::{Decodable, Encodable};

use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::metadata::leader_and_isr::{stop_replica_response, PartitionErrors, StopReplica};
use crate::protocol::api::ZkApi;
use crate::protocol::decode::DecodeError;
use crate::protocol::schema::{check_arrays, Field, BOOL, INT32, INT64};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::zk(ZkApi::StopReplica, 0, 4);

const FIRST_FLEXIBLE: i16 = 2;

// StopReplicaRequest.json (Kafka 3.9), for the array check.
const P_V0: &[Field] = &[Field::Str, INT32];
const T_V1: &[Field] = &[Field::Str, Field::FixedArray(4)];
const PS_V3: &[Field] = &[INT32, INT32, BOOL];
const TS_V3: &[Field] = &[Field::Str, Field::Structs(PS_V3)];

fn schema(version: i16) -> &'static [Field] {
    const V0: &[Field] = &[INT32, INT32, BOOL, Field::Structs(P_V0)];
    const V1: &[Field] = &[INT32, INT32, INT64, BOOL, Field::Structs(T_V1)];
    const V3: &[Field] = &[INT32, INT32, INT64, Field::Structs(TS_V3)];
    const V4: &[Field] = &[INT32, BOOL, INT32, INT64, Field::Structs(TS_V3)];
    match version {
        0 => V0,
        1 | 2 => V1,
        3 => V3,
        _ => V4,
    }
}

/// Check every array, then decode with the Kafka 3.9 codec.
pub fn decode_request(mut body: Bytes, version: i16) -> Result<StopReplica, DecodeError> {
    check_arrays(&body, schema(version), version, version >= FIRST_FLEXIBLE)?;
    let request = StopReplicaRequest::decode(&mut body, version)
        .map_err(|e| DecodeError::Malformed(e.to_string()))?;
    Ok(StopReplica::from_request(&request, version))
}

/// The response body at `version` (one shape for all).
pub fn encode_response(errors: &PartitionErrors, version: i16) -> Result<Bytes, HandlerError> {
    let mut buf = BytesMut::new();
    stop_replica_response(errors)
        .encode(&mut buf, version)
        .map_err(|e| HandlerError::Encode(e.to_string()))?;
    Ok(buf.freeze())
}

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        // KafkaApis.handleStopReplicaRequest: CLUSTER_ACTION on the cluster
        // first; denied, the top level and every partition answer
        // CLUSTER_AUTHORIZATION_FAILED (StopReplicaRequest.getErrorResponse).
        let allowed = Authz::new(&ctx, &req).cluster(Operation::ClusterAction);
        let request = decode_request(req.body, version)?;
        if !allowed {
            let error = ErrorCode::CLUSTER_AUTHORIZATION_FAILED;
            let errors = PartitionErrors {
                error,
                partitions: request
                    .partitions
                    .iter()
                    .map(|p| (p.topic.clone(), p.partition, error))
                    .collect(),
            };
            let body = encode_response(&errors, version)?;
            return Ok(Response::Body(vec![OutPart::Bytes(body)]));
        }
        let errors = match ctx.control_client().stop_replica(request).await {
            Ok(errors) => errors,
            Err(e) => {
                tracing::warn!(error = %e, "StopReplica not applied: control shard unavailable");
                PartitionErrors::top_level(ErrorCode::UNKNOWN_SERVER_ERROR)
            }
        };
        if errors.error != ErrorCode::NONE {
            tracing::info!(
                correlation_id = req.header.correlation_id,
                error = %errors.error,
                "StopReplica refused"
            );
        }
        let body = encode_response(&errors, version)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::leader_and_isr::{StopReplicaPartition, EPOCH_DURING_DELETE};
    use crate::types::{BrokerId, ControllerEpoch, LeaderEpoch};
    use kafka_protocol_39::messages::stop_replica_request::{
        StopReplicaPartitionV0, StopReplicaTopicV1,
    };
    use kafka_protocol_39::messages::TopicName;
    use kafka_protocol_39::protocol::StrBytes;
    use proptest::prelude::*;

    fn wire(version: i16) -> Bytes {
        let ours = StopReplica {
            controller_id: BrokerId(1),
            controller_epoch: ControllerEpoch(2),
            broker_epoch: 5,
            partitions: vec![
                StopReplicaPartition {
                    topic: "t".into(),
                    partition: 0,
                    leader_epoch: LeaderEpoch(3),
                    delete: true,
                },
                StopReplicaPartition {
                    topic: "t".into(),
                    partition: 1,
                    leader_epoch: EPOCH_DURING_DELETE,
                    delete: true,
                },
            ],
        };
        let mut req = ours.to_request();
        let name = TopicName(StrBytes::from_static_str("t"));
        if version < 3 {
            req.topic_states.clear();
            req.delete_partitions = true;
            if version == 0 {
                req.broker_epoch = -1;
                req.ungrouped_partitions = (0..2)
                    .map(|p| {
                        StopReplicaPartitionV0::default()
                            .with_topic_name(name.clone())
                            .with_partition_index(p)
                    })
                    .collect();
            } else {
                req.topics = vec![StopReplicaTopicV1::default()
                    .with_name(name)
                    .with_partition_indexes(vec![0, 1])];
            }
        }
        let mut buf = BytesMut::new();
        req.encode(&mut buf, version).unwrap();
        buf.freeze()
    }

    #[test]
    fn the_schema_covers_every_version_exactly() {
        for version in VERSIONS.min..=VERSIONS.max {
            let body = wire(version);
            assert_eq!(
                check_arrays(&body, schema(version), version, version >= FIRST_FLEXIBLE),
                Ok(body.len()),
                "v{version}"
            );
            let decoded = decode_request(body, version).unwrap();
            assert_eq!(decoded.partitions.len(), 2, "v{version}");
            assert!(decoded.partitions.iter().all(|p| p.delete));
        }
    }

    #[test]
    fn a_hostile_array_count_is_refused_before_decoding() {
        // v4: controller id, kraft flag, epoch, broker epoch, then a
        // compact topic count of 2^28.
        let mut body = vec![0, 0, 0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 5];
        body.extend([0x80, 0x80, 0x80, 0x80, 0x01]);
        assert!(matches!(
            decode_request(Bytes::from(body), 4),
            Err(DecodeError::ImplausibleArray { .. })
        ));
    }

    #[test]
    fn responses_encode_at_every_version() {
        let errors = PartitionErrors {
            error: ErrorCode::NONE,
            partitions: vec![("t".into(), 0, ErrorCode::FENCED_LEADER_EPOCH)],
        };
        for version in VERSIONS.min..=VERSIONS.max {
            let body = encode_response(&errors, version).unwrap();
            assert_eq!(&body[..2], &[0, 0]);
        }
    }

    proptest! {
        #[test]
        fn arbitrary_bodies_never_panic(
            body in proptest::collection::vec(proptest::num::u8::ANY, 0..128),
            v in 0i16..=4,
        ) {
            let _ = decode_request(Bytes::from(body), v);
        }
    }
}
