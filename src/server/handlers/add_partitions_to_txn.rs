//! `[drv]` AddPartitionsToTxn (key 24), v0–v5 (Kafka 3.9).
//! - v0–v3, from clients: a transactional producer adds the partitions it
//!   is about to write to its transaction (KIP-98).
//! - v4–v5, from brokers (KIP-890 part 1): a batch of transactions, each
//!   either added or, with `verify_only`, checked: a partition leader asks
//!   whether a partition is in the running transaction before it appends
//!   the producer's first transactional batch there (`shard::txn::txn_verify`).
//!   v5 only adds TRANSACTION_ABORTABLE to the codes.
//!
//! Kafka's `handleAddPartitionsToTxnRequest`: partitions Metadata does not
//! know answer UNKNOWN_TOPIC_OR_PARTITION and the others
//! OPERATION_NOT_ATTEMPTED, without asking the coordinator; otherwise an
//! add answers every partition with the coordinator's one code, and a
//! verification with a code per partition.

use std::rc::Rc;

use bytes::Bytes;
use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::ApiKey;
use kafka_protocol_39::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnTopic,
};
use kafka_protocol_39::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResponse, AddPartitionsToTxnResult,
    AddPartitionsToTxnTopicResult,
};
use kafka_protocol_39::messages::TransactionalId;

use super::authz::Authz;
use super::txn_common::ask_code;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::protocol::decode::DecodeError;
use crate::protocol::schema::{decode_checked_39, encode_39, Field, BOOL, INT16, INT64};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::txn::txn_host::TxnCall;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::AddPartitionsToTxn, 0, 5);

/// The topics array: [name, partitions]; shared by every version.
const TOPICS: Field = Field::Structs(&[Field::Str, Field::FixedArray(4)]);

/// AddPartitionsToTxnRequest.json v0–v3: transactional_id, producer_id,
/// producer_epoch, topics; flexible from v3.
const SCHEMA_V0: &[Field] = &[Field::Str, INT64, INT16, TOPICS];

/// v4+: transactions [transactional_id, producer_id, producer_epoch,
/// verify_only, topics].
const SCHEMA_V4: &[Field] = &[Field::Structs(&[Field::Str, INT64, INT16, BOOL, TOPICS])];

pub fn decode_request(body: Bytes, version: i16) -> Result<AddPartitionsToTxnRequest, DecodeError> {
    let schema = if version >= 4 { SCHEMA_V4 } else { SCHEMA_V0 };
    decode_checked_39(body, schema, version, version >= 3)
}

/// One transaction of the request, whatever its version.
struct Txn<'a> {
    id: &'a TransactionalId,
    producer_id: i64,
    epoch: i16,
    verify_only: bool,
    topics: &'a [AddPartitionsToTxnTopic],
}

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let authz = Authz::new(&ctx, &req);
        let r = decode_request(req.body, version)?;
        // Kafka: v4+ (brokers' verification) needs CLUSTER_ACTION on the
        // cluster (thrown: the top-level CLUSTER_AUTHORIZATION_FAILED).
        if version >= 4 && !authz.cluster(Operation::ClusterAction) {
            let response = AddPartitionsToTxnResponse::default()
                .with_error_code(ErrorCode::CLUSTER_AUTHORIZATION_FAILED.0);
            let body = encode_39(&response, version).map_err(HandlerError::Encode)?;
            return Ok(Response::Body(vec![OutPart::Bytes(body)]));
        }
        let txns: Vec<Txn<'_>> = if version >= 4 {
            r.transactions
                .iter()
                .map(|t| Txn {
                    id: &t.transactional_id,
                    producer_id: t.producer_id.0,
                    epoch: t.producer_epoch,
                    verify_only: t.verify_only,
                    topics: &t.topics,
                })
                .collect()
        } else {
            vec![Txn {
                id: &r.v3_and_below_transactional_id,
                producer_id: r.v3_and_below_producer_id.0,
                epoch: r.v3_and_below_producer_epoch,
                verify_only: false,
                topics: &r.v3_and_below_topics,
            }]
        };
        let mut results = Vec::with_capacity(txns.len());
        for t in &txns {
            results.push(one_transaction(&ctx, &authz, t, version).await);
        }
        let response = if version >= 4 {
            let by_txn = txns
                .iter()
                .zip(results)
                .map(|(t, topics)| {
                    AddPartitionsToTxnResult::default()
                        .with_transactional_id(t.id.clone())
                        .with_topic_results(topics)
                })
                .collect();
            AddPartitionsToTxnResponse::default().with_results_by_transaction(by_txn)
        } else {
            let topics = results.into_iter().next().unwrap_or_default();
            AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(topics)
        };
        let body = encode_39(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

/// One transaction's per-topic results.
async fn one_transaction(
    ctx: &Rc<ShardContext>,
    authz: &Authz<'_>,
    t: &Txn<'_>,
    version: i16,
) -> Vec<AddPartitionsToTxnTopicResult> {
    let txn_id = t.id.0.as_str().to_owned();
    let snapshot = ctx.snapshot();
    let wanted: Vec<(String, i32)> = t
        .topics
        .iter()
        .flat_map(|x| {
            x.partitions
                .iter()
                .map(|&p| (x.name.0.as_str().to_owned(), p))
        })
        .collect();
    let known = |(name, p): &(String, i32)| snapshot.cluster_has_partition(name, *p);
    // Kafka's handleAddPartitionsToTxnRequest (v0-3, from clients): WRITE
    // on the transactional id (denied: every partition), then WRITE on
    // each topic, internal topics never (denied: TOPIC_AUTHORIZATION_FAILED,
    // the rest OPERATION_NOT_ATTEMPTED).
    let client = version < 4 && authz.enabled();
    let topic_denied = |(name, _): &(String, i32)| {
        client
            && (snapshot.cluster_topic(name).is_some_and(|s| s.is_internal)
                || !authz.topic(Operation::Write, name))
    };
    let codes: Vec<ErrorCode> = if client && !authz.transactional_id(Operation::Write, &txn_id) {
        vec![ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED; wanted.len()]
    } else if wanted.iter().any(topic_denied) || !wanted.iter().all(known) {
        wanted
            .iter()
            .map(|tp| {
                if topic_denied(tp) {
                    ErrorCode::TOPIC_AUTHORIZATION_FAILED
                } else if known(tp) {
                    ErrorCode::OPERATION_NOT_ATTEMPTED
                } else {
                    ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
                }
            })
            .collect()
    } else if t.verify_only {
        ctx.txn_verifier()
            .verify_on_this_broker(&txn_id, t.producer_id, t.epoch, &wanted)
            .await
    } else {
        let call = TxnCall::AddPartitions {
            txn_id: txn_id.clone(),
            producer_id: t.producer_id,
            epoch: t.epoch,
            partitions: wanted.clone(),
        };
        let code = ask_code(ctx, &txn_id, call).await;
        // v0–v1 clients do not know PRODUCER_FENCED (Kafka's handler).
        let code = if version < 2 && code == ErrorCode::PRODUCER_FENCED {
            ErrorCode::INVALID_PRODUCER_EPOCH
        } else {
            code
        };
        vec![code; wanted.len()]
    };
    let mut codes = codes.into_iter();
    t.topics
        .iter()
        .map(|x| {
            let results = x
                .partitions
                .iter()
                .map(|&p| {
                    AddPartitionsToTxnPartitionResult::default()
                        .with_partition_index(p)
                        .with_partition_error_code(codes.next().unwrap_or(ErrorCode::NONE).0)
                })
                .collect();
            AddPartitionsToTxnTopicResult::default()
                .with_name(x.name.clone())
                .with_results_by_partition(results)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol_39::messages::add_partitions_to_txn_request::AddPartitionsToTxnTransaction;
    use kafka_protocol_39::messages::{ProducerId, TopicName};
    use kafka_protocol_39::protocol::{Encodable, StrBytes};

    fn topic(name: &'static str, parts: Vec<i32>) -> AddPartitionsToTxnTopic {
        AddPartitionsToTxnTopic::default()
            .with_name(TopicName(StrBytes::from_static_str(name)))
            .with_partitions(parts)
    }

    #[test]
    fn every_version_decodes_what_the_crate_encodes() {
        for version in 0..=5 {
            let req = if version >= 4 {
                AddPartitionsToTxnRequest::default().with_transactions(vec![
                    AddPartitionsToTxnTransaction::default()
                        .with_transactional_id(TransactionalId(StrBytes::from_static_str("a")))
                        .with_producer_id(ProducerId(4))
                        .with_producer_epoch(1)
                        .with_verify_only(true)
                        .with_topics(vec![topic("t", vec![0, 2]), topic("u", vec![1])]),
                    AddPartitionsToTxnTransaction::default()
                        .with_transactional_id(TransactionalId(StrBytes::from_static_str("b")))
                        .with_topics(vec![topic("t", vec![3])]),
                ])
            } else {
                AddPartitionsToTxnRequest::default()
                    .with_v3_and_below_transactional_id(TransactionalId(StrBytes::from_static_str(
                        "a",
                    )))
                    .with_v3_and_below_producer_id(ProducerId(4))
                    .with_v3_and_below_topics(vec![topic("t", vec![0, 2])])
            };
            let mut buf = bytes::BytesMut::new();
            req.encode(&mut buf, version).unwrap();
            let back = decode_request(buf.freeze(), version).unwrap();
            assert_eq!(back, req, "v{version}");
        }
    }
}
