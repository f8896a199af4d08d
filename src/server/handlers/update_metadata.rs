//! `[drv]` UpdateMetadata (key 6), v0–v8: a ZooKeeper-mode controller tells
//! this broker the live brokers, the controller id and partition states
//! (Kafka 3.9 `KafkaApis.handleUpdateMetadataRequest`). Kafka 4 removed the
//! API, so its codec is `kafka-protocol` 0.15.1 (Kafka 3.9 schemas,
//! CLUSTER.md §1); request header v1 up to v5, v2 (flexible) from v6.
//!
//! The request arrives on whichever shard accepted the controller's
//! connection; it is forwarded to the control shard, which fences it
//! (broker and controller epochs), applies it to its metadata cache and
//! publishes the new snapshot to every shard before answering, so the next
//! Metadata on any shard sees it.

use std::rc::Rc;

use bytes::{Bytes, BytesMut};
use futures_lite::future::BoxedLocal;
use kafka_protocol_39::messages::update_metadata_request::UpdateMetadataRequest;
use kafka_protocol_39::messages::update_metadata_response::UpdateMetadataResponse;
use kafka_protocol_39::protocol::{Decodable, Encodable};

use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::metadata::update_metadata::UpdateMetadata;
use crate::protocol::api::ZkApi;
use crate::protocol::decode::DecodeError;
use crate::protocol::schema::{check_arrays, Field, BOOL, INT16, INT32, INT64, UUID};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::zk(ZkApi::UpdateMetadata, 0, 8);

const FIRST_FLEXIBLE: i16 = 6;

// UpdateMetadataRequest.json (Kafka 3.9), per version, for the array check
// before the crate decodes (every nested count is bounded by the body).
const ISR: Field = Field::FixedArray(4);
/// Ungrouped partition state (v0–4): topic name first.
const PS_V0: &[Field] = &[Field::Str, INT32, INT32, INT32, INT32, ISR, INT32, ISR];
const PS_V4: &[Field] = &[Field::Str, INT32, INT32, INT32, INT32, ISR, INT32, ISR, ISR];
/// Partition state inside a topic state (v5+).
const PS_V5: &[Field] = &[INT32, INT32, INT32, INT32, ISR, INT32, ISR, ISR];
const TS_V5: &[Field] = &[Field::Str, Field::Structs(PS_V5)];
const TS_V7: &[Field] = &[Field::Str, UUID, Field::Structs(PS_V5)];
const EP_V1: &[Field] = &[INT32, Field::Str, INT16];
const EP_V3: &[Field] = &[INT32, Field::Str, Field::Str, INT16];
const BROKER_V0: &[Field] = &[INT32, Field::Str, INT32];
const BROKER_V1: &[Field] = &[INT32, Field::Structs(EP_V1)];
const BROKER_V2: &[Field] = &[INT32, Field::Structs(EP_V1), Field::Str];
const BROKER_V3: &[Field] = &[INT32, Field::Structs(EP_V3), Field::Str];

fn schema(version: i16) -> &'static [Field] {
    const V0: &[Field] = &[
        INT32,
        INT32,
        Field::Structs(PS_V0),
        Field::Structs(BROKER_V0),
    ];
    const V1: &[Field] = &[
        INT32,
        INT32,
        Field::Structs(PS_V0),
        Field::Structs(BROKER_V1),
    ];
    const V2: &[Field] = &[
        INT32,
        INT32,
        Field::Structs(PS_V0),
        Field::Structs(BROKER_V2),
    ];
    const V3: &[Field] = &[
        INT32,
        INT32,
        Field::Structs(PS_V0),
        Field::Structs(BROKER_V3),
    ];
    const V4: &[Field] = &[
        INT32,
        INT32,
        Field::Structs(PS_V4),
        Field::Structs(BROKER_V3),
    ];
    const V5: &[Field] = &[
        INT32,
        INT32,
        INT64,
        Field::Structs(TS_V5),
        Field::Structs(BROKER_V3),
    ];
    const V7: &[Field] = &[
        INT32,
        INT32,
        INT64,
        Field::Structs(TS_V7),
        Field::Structs(BROKER_V3),
    ];
    const V8: &[Field] = &[
        INT32,
        BOOL,
        INT32,
        INT64,
        Field::Structs(TS_V7),
        Field::Structs(BROKER_V3),
    ];
    match version {
        0 => V0,
        1 => V1,
        2 => V2,
        3 => V3,
        4 => V4,
        5 | 6 => V5,
        7 => V7,
        _ => V8,
    }
}

/// Check every array, then decode with the Kafka 3.9 codec.
pub fn decode_request(mut body: Bytes, version: i16) -> Result<UpdateMetadata, DecodeError> {
    check_arrays(&body, schema(version), version, version >= FIRST_FLEXIBLE)?;
    let request = UpdateMetadataRequest::decode(&mut body, version)
        .map_err(|e| DecodeError::Malformed(e.to_string()))?;
    Ok(UpdateMetadata::from_request(&request, version))
}

/// The response body (error code only) at `version`.
pub fn encode_response(error: ErrorCode, version: i16) -> Result<Bytes, HandlerError> {
    let response = UpdateMetadataResponse::default().with_error_code(error.0);
    let mut buf = BytesMut::new();
    response
        .encode(&mut buf, version)
        .map_err(|e| HandlerError::Encode(e.to_string()))?;
    Ok(buf.freeze())
}

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        // KafkaApis.handleUpdateMetadataRequest: CLUSTER_ACTION on the
        // cluster first (UpdateMetadataRequest.getErrorResponse: the code).
        let allowed = Authz::new(&ctx, &req).cluster(Operation::ClusterAction);
        let request = decode_request(req.body, version)?;
        if !allowed {
            let body = encode_response(ErrorCode::CLUSTER_AUTHORIZATION_FAILED, version)?;
            return Ok(Response::Body(vec![OutPart::Bytes(body)]));
        }
        let error = match ctx.control_client().update_metadata(request).await {
            Ok(error) => error,
            Err(e) => {
                tracing::warn!(error = %e, "UpdateMetadata not applied: control shard unavailable");
                ErrorCode::UNKNOWN_SERVER_ERROR
            }
        };
        if error != ErrorCode::NONE {
            tracing::info!(
                correlation_id = req.header.correlation_id,
                %error,
                "UpdateMetadata refused"
            );
        }
        let body = encode_response(error, version)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::update_metadata::{BrokerListener, LiveBroker, PLAINTEXT};
    use crate::types::{BrokerId, ControllerEpoch};
    use proptest::prelude::*;

    fn wire(version: i16) -> Bytes {
        let ours = UpdateMetadata {
            controller_id: BrokerId(1),
            is_kraft_controller: false,
            controller_epoch: ControllerEpoch(2),
            broker_epoch: 5,
            partition_states: vec![],
            topic_ids: vec![],
            live_brokers: vec![LiveBroker {
                id: BrokerId(1),
                endpoints: vec![BrokerListener {
                    listener: "PLAINTEXT".into(),
                    host: "h".into(),
                    port: 1,
                    security_protocol: PLAINTEXT,
                }],
                rack: Some("r".into()),
            }],
        };
        let mut req = ours.to_request();
        req.topic_states.push(
            kafka_protocol_39::messages::update_metadata_request::UpdateMetadataTopicState::default()
                .with_partition_states(vec![Default::default()]),
        );
        if version <= 4 {
            req.ungrouped_partition_states = vec![Default::default(), Default::default()];
            req.topic_states.clear();
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
            assert_eq!(decoded.controller_epoch, ControllerEpoch(2));
        }
    }

    #[test]
    fn a_hostile_array_count_is_refused_before_decoding() {
        // v8: controller id, kraft flag, epoch, broker epoch, then a
        // compact topic-state count of 2^28.
        let mut body = vec![0, 0, 0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 5];
        body.extend([0x80, 0x80, 0x80, 0x80, 0x01]);
        assert!(matches!(
            decode_request(Bytes::from(body), 8),
            Err(DecodeError::ImplausibleArray { .. })
        ));
    }

    #[test]
    fn responses_encode_at_every_version() {
        for version in VERSIONS.min..=VERSIONS.max {
            let body = encode_response(ErrorCode::STALE_CONTROLLER_EPOCH, version).unwrap();
            assert_eq!(&body[..2], &[0, 11]);
        }
    }

    proptest! {
        #[test]
        fn arbitrary_bodies_never_panic(
            body in proptest::collection::vec(proptest::num::u8::ANY, 0..128),
            v in 0i16..=8,
        ) {
            let _ = decode_request(Bytes::from(body), v);
        }
    }
}
