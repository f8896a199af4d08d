//! `[drv]` ListTransactions (key 66), v0–v1 (KIP-664, KIP-994 duration
//! filter in v1; Kafka 3.9): the transactions of every coordinator shard of
//! this broker, filtered by state, producer id and (v1) running time. A
//! state filter that names no state comes back in `unknown_state_filters`
//! (Kafka's `TransactionStateManager.listTransactionStates`).

use std::rc::Rc;

use bytes::Bytes;
use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::ApiKey;
use kafka_protocol_39::messages::list_transactions_request::ListTransactionsRequest;
use kafka_protocol_39::messages::list_transactions_response::{
    ListTransactionsResponse, TransactionState,
};
use kafka_protocol_39::messages::{ProducerId, TransactionalId};
use kafka_protocol_39::protocol::StrBytes;

use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::protocol::decode::DecodeError;
use crate::protocol::schema::{decode_checked_39, encode_39, Field, INT64};
use crate::protocol::ApiRange;
use crate::server::out::OutPart;
use crate::shard::txn::txn_host::{TxnCall, TxnReply};
use crate::shard::ShardContext;
use crate::txn::state::TxnState;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::ListTransactions, 0, 1);

/// ListTransactionsRequest.json: state_filters, producer_id_filters,
/// duration_filter (v1); flexible from v0.
const SCHEMA: &[Field] = &[
    Field::StrArray,
    Field::FixedArray(8),
    Field::Since(1, &INT64),
];

pub fn decode_request(body: Bytes, version: i16) -> Result<ListTransactionsRequest, DecodeError> {
    decode_checked_39(body, SCHEMA, version, true)
}

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        // Kafka's handleListTransactionsRequest: only the transactional
        // ids the principal may DESCRIBE are listed.
        let authz = Authz::new(&ctx, &req);
        let r = decode_request(req.body, version)?;
        let (known, unknown): (Vec<String>, Vec<String>) = r
            .state_filters
            .iter()
            .map(|s| s.as_str().to_owned())
            .partition(|s| TxnState::from_name(s).is_some());
        let mut response = ListTransactionsResponse::default().with_unknown_state_filters(
            unknown.iter().cloned().map(StrBytes::from_string).collect(),
        );
        // Only unknown states asked for: nothing can match (Kafka).
        if known.is_empty() && !unknown.is_empty() {
            let body = encode_39(&response, version).map_err(HandlerError::Encode)?;
            return Ok(Response::Body(vec![OutPart::Bytes(body)]));
        }
        let call = TxnCall::List {
            states: known,
            producer_ids: r.producer_id_filters.iter().map(|p| p.0).collect(),
            min_duration_ms: if version >= 1 { r.duration_filter } else { -1 },
        };
        for shard in 0..ctx.n_shards {
            if let TxnReply::Listed(list) =
                ctx.txn_driver().ask_shard_txn(shard, call.clone()).await
            {
                response.transaction_states.extend(
                    list.into_iter()
                        .filter(|t| authz.transactional_id(Operation::Describe, &t.txn_id))
                        .map(|t| {
                            TransactionState::default()
                                .with_transactional_id(TransactionalId(StrBytes::from_string(
                                    t.txn_id,
                                )))
                                .with_producer_id(ProducerId(t.producer_id))
                                .with_transaction_state(StrBytes::from_string(t.state))
                        }),
                );
            }
        }
        let body = encode_39(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}
