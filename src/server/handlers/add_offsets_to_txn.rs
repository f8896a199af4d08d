//! `[drv]` AddOffsetsToTxn (key 25), v0–v4 (Kafka 3.9): a producer about
//! to commit a group's offsets in its transaction (TxnOffsetCommit) adds
//! the group's `__consumer_offsets` partition to the transaction, so the
//! coordinator's markers commit or abort those offsets too (Kafka's
//! `handleAddOffsetsToTransaction`: the partition is
//! `partitionFor(group_id)`).

use std::rc::Rc;

use bytes::Bytes;
use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::ApiKey;
use kafka_protocol_39::messages::add_offsets_to_txn_request::AddOffsetsToTxnRequest;
use kafka_protocol_39::messages::add_offsets_to_txn_response::AddOffsetsToTxnResponse;

use super::authz::Authz;
use super::group_common::offsets_partition;
use super::txn_common::ask_code;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::controller::image::OFFSETS_TOPIC;
use crate::protocol::decode::DecodeError;
use crate::protocol::schema::{decode_checked_39, encode_39, Field, INT16, INT64};
use crate::protocol::ApiRange;
use crate::protocol::ErrorCode;
use crate::server::out::OutPart;
use crate::shard::txn::txn_host::TxnCall;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::AddOffsetsToTxn, 0, 4);

/// AddOffsetsToTxnRequest.json: transactional_id, producer_id,
/// producer_epoch, group_id; flexible from v3.
const SCHEMA: &[Field] = &[Field::Str, INT64, INT16, Field::Str];

pub fn decode_request(body: Bytes, version: i16) -> Result<AddOffsetsToTxnRequest, DecodeError> {
    decode_checked_39(body, SCHEMA, version, version >= 3)
}

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let authz = Authz::new(&ctx, &req);
        let r = decode_request(req.body, version)?;
        let txn_id = r.transactional_id.0.as_str().to_owned();
        let partition = offsets_partition(&ctx, r.group_id.0.as_str());
        let call = TxnCall::AddPartitions {
            txn_id: txn_id.clone(),
            producer_id: r.producer_id.0,
            epoch: r.producer_epoch,
            partitions: vec![(OFFSETS_TOPIC.to_owned(), partition)],
        };
        // Kafka's handleAddOffsetsToTxnRequest: WRITE on the transactional
        // id, then READ on the group.
        let code = if !authz.transactional_id(Operation::Write, &txn_id) {
            ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        } else if !authz.group(Operation::Read, r.group_id.0.as_str()) {
            ErrorCode::GROUP_AUTHORIZATION_FAILED
        } else {
            ask_code(&ctx, &txn_id, call).await
        };
        let response = AddOffsetsToTxnResponse::default().with_error_code(code.0);
        let body = encode_39(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}
