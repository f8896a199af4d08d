//! `[drv]` InitProducerId (key 22), v0–v5 (every version the codec knows),
//! for idempotent and transactional producers.
//!
//! Producer ids come from blocks the control shard reserves in the
//! metadata store (`/latest_producer_id_block`, Kafka's
//! `ZkProducerIdManager`). Every request gets a new id at epoch 0, even
//! one carrying an existing producer id and epoch (v3+, KIP-360): Kafka's
//! coordinator answers a request without a transactional id that way.
//!
//! A transactional id goes to the transaction coordinator of its
//! `__transaction_state` partition (`shard::txn::txn_driver`), which answers
//! NOT_COORDINATOR when this broker does not lead that partition (the
//! client looks the coordinator up again), CONCURRENT_TRANSACTIONS while
//! an earlier transaction of the id is being ended. An empty id
//! (INVALID_REQUEST) and a timeout past `transaction.max.timeout.ms`
//! (INVALID_TRANSACTION_TIMEOUT) are refused first, on any broker, as
//! Kafka's coordinator does.

use std::rc::Rc;

use bytes::Bytes;
use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::init_producer_id_request::InitProducerIdRequest;
use kafka_protocol::messages::init_producer_id_response::InitProducerIdResponse;
use kafka_protocol::messages::{ApiKey, ProducerId};

use super::admin_common::call_control;
use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::{Operation, ResourceType};
use crate::controller::admin_requests::{AdminRequest, AdminResponse};
use crate::protocol::decode::DecodeError;
use crate::protocol::encode::encode;
use crate::protocol::schema::{CheckedApi, Field, Schema, INT16, INT32, INT64};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::txn::txn_host::{TxnCall, TxnReply};
use crate::shard::ShardContext;
use crate::txn::coordinator::Answer;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::InitProducerId, 0, 5);

/// InitProducerIdRequest.json: TransactionalId, TransactionTimeoutMs,
/// then ProducerId and ProducerEpoch from v3; flexible from v2. No arrays:
/// the walk checks the tagged fields (see
/// `controlled_shutdown::decode_request`).
pub const API: CheckedApi = CheckedApi {
    versions: VERSIONS,
    first_flexible: 2,
    schema: Schema::Fixed(&[
        Field::Str,
        INT32,
        Field::Since(3, &INT64),
        Field::Since(3, &INT16),
    ]),
};

/// Decode an InitProducerId request.
pub fn decode_request(body: Bytes, version: i16) -> Result<InitProducerIdRequest, DecodeError> {
    API.decode(body, version)
}

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let authz = Authz::new(&ctx, &req);
        let request = decode_request(req.body, version)?;
        // Kafka's handleInitProducerIdRequest: WRITE on the transactional
        // id; without one IDEMPOTENT_WRITE on the cluster or (KIP-679)
        // WRITE on any topic.
        let refused = match request.transactional_id.as_deref() {
            Some(txn_id) if !authz.transactional_id(Operation::Write, txn_id) => {
                Some(ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
            }
            None if !authz.cluster(Operation::IdempotentWrite)
                && !authz.any_of_type(Operation::Write, ResourceType::Topic) =>
            {
                Some(ErrorCode::CLUSTER_AUTHORIZATION_FAILED)
            }
            _ => None,
        };
        let outcome = match (refused, request.transactional_id.as_deref()) {
            (Some(code), _) => Err(code),
            // Kafka: a transactional id goes to its transaction coordinator.
            (None, Some(txn_id)) => transactional(&ctx, txn_id, &request).await,
            (None, None) => match call_control(&ctx, AdminRequest::InitProducerId).await {
                Ok(AdminResponse::ProducerId(r)) => r,
                Ok(_) => Err(ErrorCode::UNKNOWN_SERVER_ERROR),
                Err(_) => Err(ErrorCode::COORDINATOR_NOT_AVAILABLE),
            },
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

/// InitProducerId of a transactional producer, on the coordinator of its
/// id (KIP-360: v3+ may name its current producer id and epoch).
async fn transactional(
    ctx: &Rc<ShardContext>,
    txn_id: &str,
    request: &InitProducerIdRequest,
) -> Result<(i64, i16), ErrorCode> {
    // Kafka's `TransactionCoordinator.handleInitProducerId` refuses an
    // empty id and a `transaction.timeout.ms` outside (0,
    // `transaction.max.timeout.ms`] before it looks the id's coordinator
    // state up: any broker answers them, coordinator or not, loaded or
    // not, and the client fails at once (fatally) instead of looking for
    // a coordinator again.
    if txn_id.is_empty() {
        return Err(ErrorCode::INVALID_REQUEST);
    }
    let timeout_ms = request.transaction_timeout_ms;
    if timeout_ms <= 0 || timeout_ms > ctx.config.transaction_max_timeout_ms {
        return Err(ErrorCode::INVALID_TRANSACTION_TIMEOUT);
    }
    let expected =
        (request.producer_id.0 >= 0).then_some((request.producer_id.0, request.producer_epoch));
    let call = TxnCall::InitProducerId {
        txn_id: txn_id.to_owned(),
        timeout_ms,
        expected,
    };
    match ctx.txn_driver().ask_txn(txn_id, call).await {
        TxnReply::Answer(Answer::InitProducerId {
            error,
            producer_id,
            producer_epoch,
        }) if error == ErrorCode::NONE => Ok((producer_id, producer_epoch)),
        TxnReply::Answer(Answer::InitProducerId { error, .. }) => Err(error),
        _ => Err(ErrorCode::NOT_COORDINATOR),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::schema::schema_fuzz_test;
    use kafka_protocol::messages::TransactionalId;
    use kafka_protocol::protocol::StrBytes;

    #[test]
    fn the_schema_covers_every_version_exactly() {
        API.assert_schema_covers_every_version(|v| {
            let req = InitProducerIdRequest::default()
                .with_transactional_id(Some(TransactionalId(StrBytes::from_static_str("t"))))
                .with_transaction_timeout_ms(60_000);
            if v >= 3 {
                req.with_producer_id(ProducerId(7)).with_producer_epoch(2)
            } else {
                req
            }
        });
    }

    /// The fuzz target `requests` found a tag whose varint's fifth byte
    /// says "more": Kafka refuses it, the crate read it as a tag it could
    /// not encode back.
    #[test]
    fn an_overlong_tag_varint_is_refused() {
        // v2: null transactional id, timeout 0, then one tagged field.
        let body = [0, 0, 0, 0, 0, 1, 0xe0, 0xff, 0xff, 0xff, 0xff, 0x01, 0x00];
        assert!(decode_request(Bytes::copy_from_slice(&body), 2).is_err());
        let fine = [0, 0, 0, 0, 0, 1, 0x05, 0x01, 0x00];
        assert!(decode_request(Bytes::copy_from_slice(&fine), 2).is_ok());
    }

    schema_fuzz_test!(API, InitProducerIdRequest);
}
