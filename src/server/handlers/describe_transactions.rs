//! `[drv]` DescribeTransactions (key 65), v0 (KIP-664; Kafka 3.9): the
//! state of transactional ids, each from the shard coordinating it.
//! An id this broker does not coordinate answers NOT_COORDINATOR, an
//! unknown one TRANSACTIONAL_ID_NOT_FOUND (Kafka's
//! `TransactionCoordinator.handleDescribeTransactions`).

use std::rc::Rc;

use bytes::Bytes;
use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::ApiKey;
use kafka_protocol_39::messages::describe_transactions_request::DescribeTransactionsRequest;
use kafka_protocol_39::messages::describe_transactions_response::{
    DescribeTransactionsResponse, TopicData, TransactionState,
};
use kafka_protocol_39::messages::{ProducerId, TopicName, TransactionalId};
use kafka_protocol_39::protocol::StrBytes;

use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::protocol::decode::DecodeError;
use crate::protocol::schema::{decode_checked_39, encode_39, Field};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::txn::txn_host::{DescribedTxn, TxnCall, TxnReply};
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::DescribeTransactions, 0, 0);

/// DescribeTransactionsRequest.json: transactional_ids (flexible, v0).
const SCHEMA: &[Field] = &[Field::StrArray];

pub fn decode_request(
    body: Bytes,
    version: i16,
) -> Result<DescribeTransactionsRequest, DecodeError> {
    decode_checked_39(body, SCHEMA, version, true)
}

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        // Kafka's handleDescribeTransactionsRequest: DESCRIBE on each
        // transactional id (denied: TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
        // topics without DESCRIBE are left out of the answer.
        let authz = Authz::new(&ctx, &req);
        let r = decode_request(req.body, version)?;
        let mut states = Vec::with_capacity(r.transactional_ids.len());
        for id in &r.transactional_ids {
            let id = id.0.as_str().to_owned();
            if !authz.transactional_id(Operation::Describe, &id) {
                states.push(
                    TransactionState::default()
                        .with_error_code(ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED.0)
                        .with_transactional_id(TransactionalId(StrBytes::from_string(id))),
                );
                continue;
            }
            let mut d = match ctx
                .txn_driver()
                .ask_txn(&id, TxnCall::Describe(vec![id.clone()]))
                .await
            {
                TxnReply::Described(mut list) if list.len() == 1 => list.remove(0),
                _ => DescribedTxn {
                    txn_id: id.clone(),
                    error: ErrorCode::NOT_COORDINATOR,
                    state: String::new(),
                    timeout_ms: 0,
                    start_ms: -1,
                    producer_id: -1,
                    producer_epoch: -1,
                    partitions: Vec::new(),
                },
            };
            d.partitions
                .retain(|(topic, _)| authz.topic(Operation::Describe, topic));
            states.push(to_state(d));
        }
        let response = DescribeTransactionsResponse::default().with_transaction_states(states);
        let body = encode_39(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

fn to_state(d: DescribedTxn) -> TransactionState {
    let mut topics: Vec<TopicData> = Vec::new();
    for (t, p) in d.partitions {
        match topics.iter_mut().find(|x| x.topic.0.as_str() == t) {
            Some(x) => x.partitions.push(p),
            None => topics.push(
                TopicData::default()
                    .with_topic(TopicName(StrBytes::from_string(t)))
                    .with_partitions(vec![p]),
            ),
        }
    }
    TransactionState::default()
        .with_error_code(d.error.0)
        .with_transactional_id(TransactionalId(StrBytes::from_string(d.txn_id)))
        .with_transaction_state(StrBytes::from_string(d.state))
        .with_transaction_timeout_ms(d.timeout_ms)
        .with_transaction_start_time_ms(d.start_ms)
        .with_producer_id(ProducerId(d.producer_id))
        .with_producer_epoch(d.producer_epoch)
        .with_topics(topics)
}
