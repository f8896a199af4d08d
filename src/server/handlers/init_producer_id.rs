//! `[drv]` InitProducerId (key 22), v0–v5 (every version the codec knows),
//! for idempotent producers.
//!
//! Producer ids come from blocks the control shard reserves in the
//! metadata store (`/latest_producer_id_block`, Kafka's
//! `ZkProducerIdManager`). Every request gets a new id at epoch 0, even
//! one carrying an existing producer id and epoch (v3+, KIP-360): Kafka's
//! coordinator answers a request without a transactional id that way.
//!
//! shardlog has no transaction coordinator. A transactional id is answered
//! with COORDINATOR_NOT_AVAILABLE (15): what a Kafka broker answers while
//! it cannot host `__transaction_state` (KafkaApis' FindCoordinator and
//! the coordinator's lookup both report it when the state topic has no
//! available partitions); clients treat it as retriable.

use std::rc::Rc;

use bytes::Bytes;
use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::init_producer_id_request::InitProducerIdRequest;
use kafka_protocol::messages::init_producer_id_response::InitProducerIdResponse;
use kafka_protocol::messages::{ApiKey, ProducerId};

use super::admin_common::call_control;
use super::{HandlerError, Request, Response};
use crate::controller::requests::{AdminRequest, AdminResponse};
use crate::protocol::decode::{decode_body, DecodeError};
use crate::protocol::encode::encode;
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::InitProducerId, 0, 5);

/// Decode an InitProducerId request. It has no arrays: nothing for the
/// crate to pre-allocate from the wire.
pub fn decode_request(mut body: Bytes, version: i16) -> Result<InitProducerIdRequest, DecodeError> {
    decode_body(&mut body, version)
}

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let request = decode_request(req.body, version)?;
        let outcome = if request.transactional_id.is_some() {
            Err(ErrorCode::COORDINATOR_NOT_AVAILABLE)
        } else {
            match call_control(&ctx, AdminRequest::InitProducerId).await {
                Ok(AdminResponse::ProducerId(r)) => r,
                Ok(_) => Err(ErrorCode::UNKNOWN_SERVER_ERROR),
                Err(_) => Err(ErrorCode::COORDINATOR_NOT_AVAILABLE),
            }
        };
        let mut response = InitProducerIdResponse::default();
        match outcome {
            Ok((id, epoch)) => {
                response.producer_id = ProducerId(id);
                response.producer_epoch = epoch;
            }
            Err(code) => {
                response.error_code = code.0;
                response.producer_id = ProducerId(-1);
                response.producer_epoch = -1;
            }
        }
        let body = encode(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}
