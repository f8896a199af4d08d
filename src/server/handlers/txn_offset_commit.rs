//! `[drv]` TxnOffsetCommit (key 28), v0–v4 (Kafka 3.9): a transactional
//! producer commits a consumer group's offsets inside its transaction
//! (KIP-98, exactly-once consume-transform-produce). Kafka's
//! `handleTxnOffsetCommitRequest`: partitions Metadata does not know answer
//! UNKNOWN_TOPIC_OR_PARTITION; the rest go to the group's coordinator,
//! which writes them in a transactional batch of the producer and makes
//! them the group's offsets only when the transaction's COMMIT marker
//! reaches `__consumer_offsets` (an ABORT drops them;
//! `group::coordinator::txn_offsets`).

use std::rc::Rc;

use bytes::Bytes;
use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::ApiKey;
use kafka_protocol_39::messages::txn_offset_commit_request::TxnOffsetCommitRequest;
use kafka_protocol_39::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponse, TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};

use super::authz::Authz;
use super::group_common::{ask, offsets_partition, partition_exists};
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::group::coordinator::{Answer, CommitPartition, CommitRequest};
use crate::protocol::decode::DecodeError;
use crate::protocol::schema::{decode_checked_39, encode_39, Field, INT16, INT32, INT64};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::group::group_host::GroupCall;
use crate::shard::ShardContext;
use crate::types::{TopicPartition, TxnWriter};

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::TxnOffsetCommit, 0, 4);

/// TxnOffsetCommitRequest.json: transactional_id, group_id, producer_id,
/// producer_epoch, generation_id / member_id / group_instance_id (v3+),
/// topics [name, partitions [index, offset, leader_epoch (v2+),
/// metadata]]; flexible from v3.
fn schema(version: i16) -> &'static [Field] {
    const PART_V0: &[Field] = &[INT32, INT64, Field::Str];
    const PART_V2: &[Field] = &[INT32, INT64, INT32, Field::Str];
    const V0: &[Field] = &[
        Field::Str,
        Field::Str,
        INT64,
        INT16,
        Field::Structs(&[Field::Str, Field::Structs(PART_V0)]),
    ];
    const V2: &[Field] = &[
        Field::Str,
        Field::Str,
        INT64,
        INT16,
        Field::Structs(&[Field::Str, Field::Structs(PART_V2)]),
    ];
    const V3: &[Field] = &[
        Field::Str,
        Field::Str,
        INT64,
        INT16,
        INT32,
        Field::Str,
        Field::Str,
        Field::Structs(&[Field::Str, Field::Structs(PART_V2)]),
    ];
    match version {
        0 | 1 => V0,
        2 => V2,
        _ => V3,
    }
}

pub fn decode_request(body: Bytes, version: i16) -> Result<TxnOffsetCommitRequest, DecodeError> {
    decode_checked_39(body, schema(version), version, version >= 3)
}

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let authz = Authz::new(&ctx, &req);
        let r = decode_request(req.body, version)?;
        let group_id = r.group_id.0.as_str().to_owned();
        // Kafka's handleTxnOffsetCommitRequest: WRITE on the transactional
        // id, then READ on the group (denied: every partition), then READ
        // on each topic (denied: TOPIC_AUTHORIZATION_FAILED).
        let refused_all = refused_all(&authz, r.transactional_id.0.as_str(), &group_id);
        let mut refused: Vec<(String, i32, ErrorCode)> = Vec::new();
        let mut partitions = Vec::new();
        for t in &r.topics {
            let topic_refused = refused_all.or_else(|| {
                (!authz.topic(Operation::Read, t.name.0.as_str()))
                    .then_some(ErrorCode::TOPIC_AUTHORIZATION_FAILED)
            });
            for p in &t.partitions {
                let topic = t.name.0.as_str();
                if let Some(code) = topic_refused {
                    refused.push((topic.to_owned(), p.partition_index, code));
                } else if partition_exists(&ctx, topic, p.partition_index) {
                    partitions.push(CommitPartition {
                        topic: topic.to_owned(),
                        partition: p.partition_index,
                        offset: p.committed_offset,
                        leader_epoch: p.committed_leader_epoch,
                        metadata: p.committed_metadata.as_ref().map(|m| m.as_str().to_owned()),
                        commit_timestamp_ms: -1,
                    });
                }
            }
        }
        let mut decided: Vec<(String, i32, ErrorCode)> = Vec::new();
        let txn_id = r.transactional_id.0.as_str();
        let (producer_id, epoch) = (r.producer_id.0, r.producer_epoch);
        let verified = if partitions.is_empty() {
            Ok(None)
        } else {
            verify(&ctx, txn_id, &group_id, producer_id, epoch, version).await
        };
        if let Err(code) = verified {
            decided = partitions
                .iter()
                .map(|p| (p.topic.clone(), p.partition, code))
                .collect();
        }
        if let (false, Ok(guard)) = (partitions.is_empty(), verified) {
            let commit = CommitRequest {
                group_id: group_id.clone(),
                // Below v3 the request names no generation: Kafka commits
                // it as a simple (generation -1) commit.
                generation: if version >= 3 { r.generation_id } else { -1 },
                member_id: r.member_id.as_str().to_owned(),
                group_instance_id: r.group_instance_id.as_ref().map(|s| s.as_str().to_owned()),
                retention_ms: -1,
                partitions: partitions.clone(),
                txn: Some(TxnWriter {
                    producer_id,
                    epoch,
                    guard,
                }),
            };
            decided = match ask(&ctx, &group_id, GroupCall::Commit(commit)).await {
                Ok(Answer::Commit(list)) => list,
                Ok(_) => Vec::new(),
                Err(e) => partitions
                    .iter()
                    .map(|p| (p.topic.clone(), p.partition, e))
                    .collect(),
            };
        }
        let topics = r
            .topics
            .iter()
            .map(|t| {
                let name = t.name.0.as_str();
                let results = t
                    .partitions
                    .iter()
                    .map(|p| {
                        let e = refused
                            .iter()
                            .chain(decided.iter())
                            .find(|(tn, pn, _)| tn == name && *pn == p.partition_index)
                            .map_or(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, |d| d.2);
                        TxnOffsetCommitResponsePartition::default()
                            .with_partition_index(p.partition_index)
                            .with_error_code(e.0)
                    })
                    .collect();
                TxnOffsetCommitResponseTopic::default()
                    .with_name(t.name.clone())
                    .with_partitions(results)
            })
            .collect();
        let response = TxnOffsetCommitResponse::default().with_topics(topics);
        let body = encode_39(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

/// What every partition answers when the transactional id (WRITE) or
/// the group (READ) is denied.
fn refused_all(authz: &Authz<'_>, txn_id: &str, group_id: &str) -> Option<ErrorCode> {
    if !authz.transactional_id(Operation::Write, txn_id) {
        Some(ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    } else if !authz.group(Operation::Read, group_id) {
        Some(ErrorCode::GROUP_AUTHORIZATION_FAILED)
    } else {
        None
    }
}

/// KIP-890 for the offsets' transactional batch (Kafka 3.9's
/// `GroupCoordinator.handleTxnCommitOffsets`): the group's
/// `__consumer_offsets` partition must be in the producer's transaction
/// (AddOffsetsToTxn put it there) before the coordinator writes to it.
/// Failures as `GroupMetadataManager.maybeConvertOffsetCommitError` maps
/// them; TRANSACTION_ABORTABLE only from v4 (INVALID_TXN_STATE before).
async fn verify(
    ctx: &Rc<ShardContext>,
    txn_id: &str,
    group_id: &str,
    producer_id: i64,
    epoch: i16,
    version: i16,
) -> Result<Option<u64>, ErrorCode> {
    let tp = TopicPartition::new(
        crate::controller::image::OFFSETS_TOPIC,
        offsets_partition(ctx, group_id),
    );
    // Kafka passes RecordBatch.NO_SEQUENCE: the coordinator's batch has none.
    let verified = ctx
        .txn_verifier()
        .verify_txn_appends(txn_id, producer_id, epoch, vec![(tp, -1)])
        .await;
    match verified.into_iter().next() {
        Some(Ok(guard)) => Ok(guard),
        Some(Err(code)) => Err(match code {
            ErrorCode::NETWORK_EXCEPTION => ErrorCode::COORDINATOR_LOAD_IN_PROGRESS,
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
            | ErrorCode::NOT_ENOUGH_REPLICAS
            | ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND => ErrorCode::COORDINATOR_NOT_AVAILABLE,
            ErrorCode::NOT_LEADER_OR_FOLLOWER | ErrorCode::KAFKA_STORAGE_ERROR => {
                ErrorCode::NOT_COORDINATOR
            }
            ErrorCode::TRANSACTION_ABORTABLE if version < 4 => ErrorCode::INVALID_TXN_STATE,
            other => other,
        }),
        None => Err(ErrorCode::NOT_COORDINATOR),
    }
}
