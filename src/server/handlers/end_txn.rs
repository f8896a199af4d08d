//! `[drv]` EndTxn (key 26), v0–v4 (Kafka 3.9): commit or abort the
//! producer's running transaction (KIP-98). The coordinator writes
//! PrepareCommit / PrepareAbort, answers, then writes the markers and
//! CompleteCommit / CompleteAbort (`shard::txn::txn_driver`).

use std::rc::Rc;

use bytes::Bytes;
use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::ApiKey;
use kafka_protocol_39::messages::end_txn_request::EndTxnRequest;
use kafka_protocol_39::messages::end_txn_response::EndTxnResponse;

use super::authz::Authz;
use super::txn_common::ask_code;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::protocol::decode::DecodeError;
use crate::protocol::schema::{decode_checked_39, encode_39, Field, BOOL, INT16, INT64};
use crate::protocol::ApiRange;
use crate::protocol::ErrorCode;
use crate::server::out::OutPart;
use crate::shard::txn::txn_host::TxnCall;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::EndTxn, 0, 4);

/// EndTxnRequest.json: transactional_id, producer_id, producer_epoch,
/// committed; flexible from v3.
const SCHEMA: &[Field] = &[Field::Str, INT64, INT16, BOOL];

pub fn decode_request(body: Bytes, version: i16) -> Result<EndTxnRequest, DecodeError> {
    decode_checked_39(body, SCHEMA, version, version >= 3)
}

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let authz = Authz::new(&ctx, &req);
        let r = decode_request(req.body, version)?;
        let txn_id = r.transactional_id.0.as_str().to_owned();
        let call = TxnCall::EndTxn {
            txn_id: txn_id.clone(),
            producer_id: r.producer_id.0,
            epoch: r.producer_epoch,
            commit: r.committed,
        };
        // Kafka's handleEndTxnRequest: WRITE on the transactional id.
        let code = if authz.transactional_id(Operation::Write, &txn_id) {
            ask_code(&ctx, &txn_id, call).await
        } else {
            ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        };
        let response = EndTxnResponse::default().with_error_code(code.0);
        let body = encode_39(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}
