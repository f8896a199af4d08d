//! `[drv]` LeaderAndIsr (key 4), v0–v7: a ZooKeeper-mode controller tells
//! this broker which partitions it hosts, as leader or follower (Kafka 3.9
//! `KafkaApis.handleLeaderAndIsrRequest`, `ReplicaManager.becomeLeaderOrFollower`).
//! Kafka 4 removed the API, so its codec is `kafka-protocol` 0.15.1 (Kafka
//! 3.9 schemas, CLUSTER.md §1); request header v1 up to v3, v2 (flexible)
//! from v4. A 3.9 controller sends v7 without asking ApiVersions first.
//!
//! The request arrives on whichever shard accepted the controller's
//! connection; it is forwarded to the control shard, which fences it
//! (broker and controller epochs), applies it to the hosted partitions
//! (`metadata::hosted`) and, in ZooKeeper mode, publishes them to every
//! shard, so owners open new partitions and change the role of open ones
//! before the answer goes back. The response has one error per partition:
//! named by topic before v5, grouped by topic id from v5.

use std::rc::Rc;

use bytes::{Bytes, BytesMut};
use futures_lite::future::BoxedLocal;
use kafka_protocol_39::messages::leader_and_isr_request::LeaderAndIsrRequest;
use kafka_protocol_39::protocol::{Decodable, Encodable};

use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::metadata::leader_and_isr::{LeaderAndIsr, PartitionErrors};
use crate::protocol::api::ZkApi;
use crate::protocol::decode::DecodeError;
use crate::protocol::schema::{check_arrays, Field, BOOL, INT32, INT64, INT8, UUID};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::zk(ZkApi::LeaderAndIsr, 0, 7);

const FIRST_FLEXIBLE: i16 = 4;

// LeaderAndIsrRequest.json (Kafka 3.9), for the array check before the
// crate decodes (every nested count is bounded by the body).
const IDS: Field = Field::FixedArray(4);
/// Partition state after the topic name (v0–1 carry the name inline).
const PS: &[Field] = &[
    INT32,
    INT32,
    INT32,
    INT32,
    IDS,
    INT32,
    IDS,
    Field::Since(3, &IDS),
    Field::Since(3, &IDS),
    Field::Since(1, &BOOL),
    Field::Since(6, &INT8),
];
const PS_UNGROUPED: &[Field] = &[
    Field::Str,
    INT32,
    INT32,
    INT32,
    INT32,
    IDS,
    INT32,
    IDS,
    Field::Since(1, &BOOL),
];
const TS_V2: &[Field] = &[Field::Str, Field::Structs(PS)];
const TS_V5: &[Field] = &[Field::Str, UUID, Field::Structs(PS)];
const LIVE: &[Field] = &[INT32, Field::Str, INT32];

fn schema(version: i16) -> &'static [Field] {
    const V0: &[Field] = &[
        INT32,
        INT32,
        Field::Structs(PS_UNGROUPED),
        Field::Structs(LIVE),
    ];
    const V2: &[Field] = &[
        INT32,
        INT32,
        INT64,
        Field::Structs(TS_V2),
        Field::Structs(LIVE),
    ];
    const V5: &[Field] = &[
        INT32,
        INT32,
        INT64,
        INT8,
        Field::Structs(TS_V5),
        Field::Structs(LIVE),
    ];
    const V7: &[Field] = &[
        INT32,
        BOOL,
        INT32,
        INT64,
        INT8,
        Field::Structs(TS_V5),
        Field::Structs(LIVE),
    ];
    match version {
        0 | 1 => V0,
        2..=4 => V2,
        5 | 6 => V5,
        _ => V7,
    }
}

/// Check every array, then decode with the Kafka 3.9 codec.
pub fn decode_request(mut body: Bytes, version: i16) -> Result<LeaderAndIsr, DecodeError> {
    check_arrays(&body, schema(version), version, version >= FIRST_FLEXIBLE)?;
    let request = LeaderAndIsrRequest::decode(&mut body, version)
        .map_err(|e| DecodeError::Malformed(e.to_string()))?;
    Ok(LeaderAndIsr::from_request(&request, version))
}

/// The response body for `request` at `version`.
pub fn encode_response(
    request: &LeaderAndIsr,
    errors: &PartitionErrors,
    version: i16,
) -> Result<Bytes, HandlerError> {
    let mut buf = BytesMut::new();
    request
        .response(errors, version)
        .encode(&mut buf, version)
        .map_err(|e| HandlerError::Encode(e.to_string()))?;
    Ok(buf.freeze())
}

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        // KafkaApis.handleLeaderAndIsrRequest: CLUSTER_ACTION on the
        // cluster first; denied, every partition answers
        // CLUSTER_AUTHORIZATION_FAILED (LeaderAndIsrRequest.getErrorResponse).
        let allowed = Authz::new(&ctx, &req).cluster(Operation::ClusterAction);
        let request = decode_request(req.body, version)?;
        if !allowed {
            let errors = request.error_response(ErrorCode::CLUSTER_AUTHORIZATION_FAILED);
            let body = encode_response(&request, &errors, version)?;
            return Ok(Response::Body(vec![OutPart::Bytes(body)]));
        }
        let errors = match ctx.control_client().leader_and_isr(request.clone()).await {
            Ok(errors) => errors,
            Err(e) => {
                tracing::warn!(error = %e, "LeaderAndIsr not applied: control shard unavailable");
                request.error_response(ErrorCode::UNKNOWN_SERVER_ERROR)
            }
        };
        if errors.error != ErrorCode::NONE {
            tracing::info!(
                correlation_id = req.header.correlation_id,
                error = %errors.error,
                "LeaderAndIsr refused"
            );
        }
        let body = encode_response(&request, &errors, version)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::leader_and_isr::LeaderAndIsrPartition;
    use crate::types::{BrokerId, ControllerEpoch, LeaderEpoch, PartitionEpoch};
    use kafka_protocol_39::messages::leader_and_isr_response::LeaderAndIsrResponse;
    use proptest::prelude::*;

    fn ours() -> LeaderAndIsr {
        let p = LeaderAndIsrPartition {
            topic: "t".into(),
            partition: 0,
            controller_epoch: ControllerEpoch(2),
            leader: BrokerId(1),
            leader_epoch: LeaderEpoch(3),
            isr: vec![BrokerId(1)],
            partition_epoch: PartitionEpoch(4),
            replicas: vec![BrokerId(1), BrokerId(2)],
            adding_replicas: vec![],
            removing_replicas: vec![],
            is_new: false,
            leader_recovery_state: 0,
        };
        LeaderAndIsr {
            controller_id: BrokerId(1),
            controller_epoch: ControllerEpoch(2),
            broker_epoch: 5,
            partitions: vec![p.clone(), LeaderAndIsrPartition { partition: 1, ..p }],
            topic_ids: vec![("t".into(), uuid::Uuid::from_u128(3))],
            live_leaders: vec![(BrokerId(1), "h".into(), 1)],
        }
    }

    fn wire(version: i16) -> Bytes {
        let mut req = ours().to_request();
        if version <= 1 {
            req.ungrouped_partition_states = req
                .topic_states
                .drain(..)
                .flat_map(|t| {
                    let name = t.topic_name.clone();
                    t.partition_states
                        .into_iter()
                        .map(move |p| p.with_topic_name(name.clone()))
                })
                .collect();
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
            assert_eq!(decoded.partitions.len(), 2);
            assert_eq!(decoded.controller_epoch, ControllerEpoch(2));
        }
    }

    #[test]
    fn a_hostile_array_count_is_refused_before_decoding() {
        // v7: controller id, kraft flag, epoch, broker epoch, type, then a
        // compact topic-state count of 2^28.
        let mut body = vec![0, 0, 0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 5, 0];
        body.extend([0x80, 0x80, 0x80, 0x80, 0x01]);
        assert!(matches!(
            decode_request(Bytes::from(body), 7),
            Err(DecodeError::ImplausibleArray { .. })
        ));
    }

    #[test]
    fn responses_encode_at_every_version() {
        let req = ours();
        let errors = req.error_response(ErrorCode::STALE_CONTROLLER_EPOCH);
        for version in VERSIONS.min..=VERSIONS.max {
            let mut body = encode_response(&req, &errors, version).unwrap();
            assert_eq!(&body[..2], &[0, 11]);
            let back = LeaderAndIsrResponse::decode(&mut body, version).unwrap();
            assert_eq!(
                req.errors_from_response(&back, version),
                errors,
                "v{version}"
            );
        }
    }

    proptest! {
        #[test]
        fn arbitrary_bodies_never_panic(
            body in proptest::collection::vec(proptest::num::u8::ANY, 0..128),
            v in 0i16..=7,
        ) {
            let _ = decode_request(Bytes::from(body), v);
        }
    }
}
