//! `[drv]` ControlledShutdown (key 7), v0–v3: a ZooKeeper-mode broker about
//! to stop asks the controller to move its leaders first (Kafka 3.9
//! `KafkaApis.handleControlledShutdownRequest` →
//! `KafkaController.controlledShutdown`). Answered by the controller with
//! the replicated partitions the broker still leads (it retries until none
//! are left); NOT_CONTROLLER on any other broker. Kafka 4 removed the API,
//! so the codec is Kafka 3.9's (`kafka-protocol` 0.15.1). v0 requests carry
//! a v0 header (no client id), as `ApiKeys` says.

use std::rc::Rc;

use bytes::{Bytes, BytesMut};
use futures_lite::future::BoxedLocal;
use kafka_protocol_39::messages::controlled_shutdown_request::ControlledShutdownRequest;
use kafka_protocol_39::messages::controlled_shutdown_response::{
    ControlledShutdownResponse, RemainingPartition,
};
use kafka_protocol_39::messages::TopicName as TopicName39;
use kafka_protocol_39::protocol::{Decodable, Encodable, StrBytes as StrBytes39};

use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::protocol::api::ZkApi;
use crate::protocol::decode::DecodeError;
use crate::protocol::schema::{check_arrays, Field, INT32, INT64};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::ShardContext;
use crate::types::{BrokerId, TopicPartition};

pub const VERSIONS: ApiRange = ApiRange::zk(ZkApi::ControlledShutdown, 0, 3);

/// ControlledShutdownRequest.json: BrokerId, then BrokerEpoch from v2;
/// flexible from v3.
const SCHEMA: &[Field] = &[INT32, Field::Since(2, &INT64)];
const FIRST_FLEXIBLE: i16 = 3;

/// (broker id, broker epoch; -1 before v2, which carry none). The walk
/// checks the tagged fields first: the crate reads a varint whose fifth
/// byte says "more" as a truncated tag, which Kafka refuses
/// (`ByteUtils.readUnsignedVarint`) and the crate then cannot encode back
/// (found by the fuzz target `requests`).
pub fn decode_request(mut body: Bytes, version: i16) -> Result<(BrokerId, i64), DecodeError> {
    check_arrays(&body, SCHEMA, version, version >= FIRST_FLEXIBLE)?;
    let r = ControlledShutdownRequest::decode(&mut body, version)
        .map_err(|e| DecodeError::Malformed(e.to_string()))?;
    let epoch = if version >= 2 { r.broker_epoch } else { -1 };
    Ok((BrokerId(r.broker_id.0), epoch))
}

pub fn encode_response(
    error: ErrorCode,
    remaining: &[TopicPartition],
    version: i16,
) -> Result<Bytes, HandlerError> {
    let response = ControlledShutdownResponse::default()
        .with_error_code(error.0)
        .with_remaining_partitions(
            remaining
                .iter()
                .map(|tp| {
                    RemainingPartition::default()
                        .with_topic_name(TopicName39(StrBytes39::from_string(tp.topic.to_string())))
                        .with_partition_index(tp.partition)
                })
                .collect(),
        );
    let mut buf = BytesMut::new();
    response
        .encode(&mut buf, version)
        .map_err(|e| HandlerError::Encode(e.to_string()))?;
    Ok(buf.freeze())
}

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        // KafkaApis.handleControlledShutdownRequest: CLUSTER_ACTION on the
        // cluster first (ControlledShutdownRequest.getErrorResponse: the
        // code, no remaining partitions).
        let allowed = Authz::new(&ctx, &req).cluster(Operation::ClusterAction);
        let (broker, epoch) = decode_request(req.body, version)?;
        if !allowed {
            let body = encode_response(ErrorCode::CLUSTER_AUTHORIZATION_FAILED, &[], version)?;
            return Ok(Response::Body(vec![OutPart::Bytes(body)]));
        }
        let (error, remaining) = match ctx
            .control_client()
            .controlled_shutdown(broker, epoch)
            .await
        {
            Ok(Ok(remaining)) => (ErrorCode::NONE, remaining),
            Ok(Err(refusal)) => (refusal.code(), Vec::new()),
            Err(e) => {
                tracing::warn!(error = %e, "ControlledShutdown: control shard unavailable");
                (ErrorCode::UNKNOWN_SERVER_ERROR, Vec::new())
            }
        };
        tracing::info!(%broker, epoch, %error, remaining = remaining.len(), "ControlledShutdown answered");
        let body = encode_response(error, &remaining, version)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_version_round_trips_and_v0_v1_name_no_epoch() {
        for version in 0..=3 {
            let req = ControlledShutdownRequest::default()
                .with_broker_id(kafka_protocol_39::messages::BrokerId(4))
                .with_broker_epoch(77);
            let mut buf = BytesMut::new();
            req.encode(&mut buf, version).unwrap();
            let (b, e) = decode_request(buf.freeze(), version).unwrap();
            assert_eq!(b, BrokerId(4));
            assert_eq!(e, if version >= 2 { 77 } else { -1 }, "v{version}");
            let tp = TopicPartition::new("t", 3);
            let mut body = encode_response(ErrorCode::NONE, &[tp], version).unwrap();
            let resp = ControlledShutdownResponse::decode(&mut body, version).unwrap();
            assert_eq!(resp.remaining_partitions.len(), 1);
            assert_eq!(resp.remaining_partitions[0].partition_index, 3);
        }
        assert!(decode_request(Bytes::from_static(&[0, 0]), 3).is_err());
    }

    /// The body of the fuzz target `requests`' crash input: one tag whose
    /// varint's fifth byte says "more" (Kafka refuses it; the crate read a
    /// truncated tag it then left out of its own encoding).
    #[test]
    fn an_overlong_tag_varint_is_refused() {
        let body = [
            2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xe8, 0, 1, 0xe0, 0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0,
            0x10,
        ];
        assert!(decode_request(Bytes::copy_from_slice(&body), 3).is_err());
        let fine = [2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xe8, 1, 5, 1, 0];
        assert!(decode_request(Bytes::copy_from_slice(&fine), 3).is_ok());
    }
}
