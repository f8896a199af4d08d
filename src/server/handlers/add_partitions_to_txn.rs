//! `[drv]` AddPartitionsToTxn (key 24), v0–v3: a transactional producer
//! adds the partitions it is about to write to its transaction (KIP-98).
//! Kafka's `handleAddPartitionsToTxnRequest`: partitions Metadata does not
//! know answer UNKNOWN_TOPIC_OR_PARTITION and the others
//! OPERATION_NOT_ATTEMPTED, without asking the coordinator; otherwise
//! every partition gets the coordinator's one code. (v4, Kafka 3.9's
//! broker-to-coordinator batched verification of KIP-890, is not served:
//! shardlog's leaders do not verify transactional produces with the
//! coordinator.)

use std::rc::Rc;

use bytes::Bytes;
use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::ApiKey;
use kafka_protocol_39::messages::add_partitions_to_txn_request::AddPartitionsToTxnRequest;
use kafka_protocol_39::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResponse, AddPartitionsToTxnTopicResult,
};

use super::txn_common::ask_code;
use super::{HandlerError, Request, Response};
use crate::protocol::decode::DecodeError;
use crate::protocol::schema::{decode_checked_39, encode_39, Field, INT16, INT64};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::txn_host::TxnCall;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::AddPartitionsToTxn, 0, 3);

/// AddPartitionsToTxnRequest.json (v0–v3): transactional_id, producer_id,
/// producer_epoch, topics [name, partitions]; flexible from v3.
const SCHEMA: &[Field] = &[
    Field::Str,
    INT64,
    INT16,
    Field::Structs(&[Field::Str, Field::FixedArray(4)]),
];

pub fn decode_request(body: Bytes, version: i16) -> Result<AddPartitionsToTxnRequest, DecodeError> {
    decode_checked_39(body, SCHEMA, version, version >= 3)
}

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let r = decode_request(req.body, version)?;
        let txn_id = r.v3_and_below_transactional_id.0.as_str().to_owned();
        let snapshot = ctx.snapshot();
        let mut wanted = Vec::new();
        let mut unknown = false;
        for t in &r.v3_and_below_topics {
            for &p in &t.partitions {
                let name = t.name.0.as_str();
                unknown |= !snapshot.serves_partition(name, p);
                wanted.push((name.to_owned(), p));
            }
        }
        let code = if unknown {
            None
        } else {
            let call = TxnCall::AddPartitions {
                txn_id: txn_id.clone(),
                producer_id: r.v3_and_below_producer_id.0,
                epoch: r.v3_and_below_producer_epoch,
                partitions: wanted,
            };
            Some(ask_code(&ctx, &txn_id, call).await)
        };
        let topics = r
            .v3_and_below_topics
            .iter()
            .map(|t| {
                let results = t
                    .partitions
                    .iter()
                    .map(|&p| {
                        let e =
                            code.unwrap_or(if snapshot.serves_partition(t.name.0.as_str(), p) {
                                ErrorCode::OPERATION_NOT_ATTEMPTED
                            } else {
                                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
                            });
                        AddPartitionsToTxnPartitionResult::default()
                            .with_partition_index(p)
                            .with_partition_error_code(e.0)
                    })
                    .collect();
                AddPartitionsToTxnTopicResult::default()
                    .with_name(t.name.clone())
                    .with_results_by_partition(results)
            })
            .collect();
        let response =
            AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(topics);
        let body = encode_39(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}
