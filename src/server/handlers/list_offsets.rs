//! `[drv]` ListOffsets (key 2), v0–v8: earliest (-2), latest (-1), max
//! timestamp (-3, KIP-734, v7+) and by timestamp (time index), answered by
//! each partition's owner shard. v9 (Kafka 3.9's tiered-storage
//! timestamps, KIP-1005: earliest-local -4 and latest-tiered -5) is left
//! out: shardlog has no tiered storage.
//!
//! v0 (`max_num_offsets` in, `old_style_offsets` out) is Kafka 3.9's
//! `handleListOffsetRequestV0`: offsets by segment file time
//! (`replication::partition::legacy_offsets`), decoded and encoded with
//! the Kafka 3.9 codec.
//!
//! Like Kafka, `latest` for consumers is the HW (read_uncommitted) or the
//! LSO (read_committed, v2+); a timestamp with no later record answers
//! offset -1.

use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::list_offsets_request::ListOffsetsRequest;
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{ApiKey, TopicName};

use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::protocol::encode::encode;
use crate::protocol::schema::{
    decode_checked_39, encode_39, CheckedApi, Field, Schema, INT32, INT64, INT8,
};
use crate::protocol::{ApiRange, ErrorCode};
use crate::purgatory::delayed_fetch::FetchIsolation;
use crate::replication::partition::{LegacyOffsetsQuery, MAX_TIMESTAMP};
use crate::server::out::OutPart;
use crate::shard::ShardContext;
use crate::types::TopicPartition;

/// A partition's place in the answer: index, lookup slot, early error.
type Planned = (i32, Option<usize>, i16);

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::ListOffsets, 0, 8);

const FIRST_FLEXIBLE: i16 = 6;

/// ListOffsetsRequest.json (v1–v8): replica_id, isolation_level (v2+),
/// topics [name, partitions [partition_index, current_leader_epoch (v4+),
/// timestamp]].
const SCHEMA: &[Field] = &[
    INT32,
    Field::Since(2, &INT8),
    Field::Structs(&[
        Field::Str,
        Field::Structs(&[INT32, Field::Since(4, &INT32), INT64]),
    ]),
];

pub const API: CheckedApi = CheckedApi {
    versions: ApiRange::new(ApiKey::ListOffsets, 1, 8),
    first_flexible: FIRST_FLEXIBLE,
    schema: Schema::Fixed(SCHEMA),
};

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        if version == 0 {
            let body = handle_v0(&ctx, &req).await?;
            return Ok(Response::Body(vec![OutPart::Bytes(body)]));
        }
        let request: ListOffsetsRequest = API.decode(req.body.clone(), version)?;
        let bound = if request.replica_id.0 >= 0 {
            FetchIsolation::LogEnd
        } else if request.isolation_level == 1 {
            FetchIsolation::TxnCommitted
        } else {
            FetchIsolation::HighWatermark
        };
        let snapshot = ctx.snapshot();
        let authz = Authz::new(&ctx, &req);
        let mut lookups = Vec::new();
        let mut layout: Vec<(TopicName, Vec<Planned>)> = Vec::new();
        for topic in &request.topics {
            let name = topic.name.as_str();
            // Kafka's `handleListOffsetRequest`: DESCRIBE on the topic.
            let described = authz.topic(Operation::Describe, name);
            let mut parts = Vec::new();
            for p in &topic.partitions {
                if !described {
                    parts.push((
                        p.partition_index,
                        None,
                        ErrorCode::TOPIC_AUTHORIZATION_FAILED.0,
                    ));
                } else if !snapshot.hosts_partition(name, p.partition_index) {
                    let error = snapshot.not_hosted_error(name, p.partition_index);
                    parts.push((p.partition_index, None, error.0));
                } else if p.timestamp == MAX_TIMESTAMP && version < 7 {
                    parts.push((p.partition_index, None, ErrorCode::UNSUPPORTED_VERSION.0));
                } else {
                    parts.push((p.partition_index, Some(lookups.len()), 0));
                    lookups.push((
                        TopicPartition::new(topic.name.as_str(), p.partition_index),
                        p.timestamp,
                    ));
                }
            }
            layout.push((topic.name.clone(), parts));
        }
        let answers = ctx.datapath().list_offsets_on_owners(lookups, bound).await;
        let topics = layout
            .into_iter()
            .map(|(name, parts)| {
                let partitions = parts
                    .into_iter()
                    .map(|(index, lookup, error)| {
                        let r = ListOffsetsPartitionResponse::default().with_partition_index(index);
                        match lookup.and_then(|i| answers.get(i)) {
                            Some(a) => r
                                .with_error_code(a.error_code.0)
                                .with_timestamp(a.timestamp)
                                .with_offset(a.offset)
                                .with_leader_epoch(if version >= 4 {
                                    a.leader_epoch.0
                                } else {
                                    -1
                                }),
                            None => r
                                .with_error_code(if error != 0 {
                                    error
                                } else {
                                    ErrorCode::NOT_LEADER_OR_FOLLOWER.0
                                })
                                .with_timestamp(-1)
                                .with_offset(-1),
                        }
                    })
                    .collect();
                ListOffsetsTopicResponse::default()
                    .with_name(name)
                    .with_partitions(partitions)
            })
            .collect();
        let response = ListOffsetsResponse::default().with_topics(topics);
        let body = encode(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

/// ListOffsetsRequest.json v0: replica_id, topics [name, partitions
/// [partition_index, timestamp, max_num_offsets]].
const SCHEMA_V0: &[Field] = &[
    INT32,
    Field::Structs(&[Field::Str, Field::Structs(&[INT32, INT64, INT32])]),
];

/// Kafka's `ListOffsetsRequest.DEBUGGING_REPLICA_ID`: may ask a follower.
const DEBUGGING_REPLICA_ID: i32 = -2;

/// A v0 request, with the Kafka 3.9 codec.
pub fn decode_v0(
    body: bytes::Bytes,
) -> Result<kafka_protocol_39::messages::ListOffsetsRequest, crate::protocol::decode::DecodeError> {
    decode_checked_39(body, SCHEMA_V0, 0, false)
}

/// Kafka 3.9's `handleListOffsetRequestV0`: DESCRIBE on each topic (the
/// denied topics answered after the others, TOPIC_AUTHORIZATION_FAILED),
/// a timestamp below -2 UNSUPPORTED_VERSION, else the partition's offsets.
async fn handle_v0(ctx: &Rc<ShardContext>, req: &Request) -> Result<bytes::Bytes, HandlerError> {
    use kafka_protocol_39::messages::list_offsets_response as old;
    let request = decode_v0(req.body.clone())?;
    let snapshot = ctx.snapshot();
    let authz = Authz::new(ctx, req);
    let replica_id = request.replica_id.0;
    let mut lookups = Vec::new();
    let mut allowed = Vec::new();
    let mut denied = Vec::new();
    for topic in &request.topics {
        let name = topic.name.as_str();
        if !authz.topic(Operation::Describe, name) {
            let parts: Vec<(i32, Result<usize, i16>)> = topic
                .partitions
                .iter()
                .map(|p| {
                    (
                        p.partition_index,
                        Err(ErrorCode::TOPIC_AUTHORIZATION_FAILED.0),
                    )
                })
                .collect();
            denied.push((topic.name.clone(), parts));
            continue;
        }
        let mut parts = Vec::new();
        for p in &topic.partitions {
            let plan = if p.timestamp < -2 {
                Err(ErrorCode::UNSUPPORTED_VERSION.0)
            } else if !snapshot.hosts_partition(name, p.partition_index) {
                Err(snapshot.not_hosted_error(name, p.partition_index).0)
            } else {
                let query = LegacyOffsetsQuery {
                    timestamp: p.timestamp,
                    max_num_offsets: p.max_num_offsets,
                    from_consumer: replica_id == -1,
                    only_from_leader: replica_id != DEBUGGING_REPLICA_ID,
                };
                lookups.push((TopicPartition::new(name, p.partition_index), query));
                Ok(lookups.len() - 1)
            };
            parts.push((p.partition_index, plan));
        }
        allowed.push((topic.name.clone(), parts));
    }
    let now_ms = ctx.clock.wall_ms();
    let answers = ctx
        .datapath()
        .legacy_list_offsets_on_owners(lookups, now_ms)
        .await;
    let topics = allowed
        .into_iter()
        .chain(denied)
        .map(|(name, parts)| {
            let partitions = parts
                .into_iter()
                .map(|(index, plan)| {
                    let r =
                        old::ListOffsetsPartitionResponse::default().with_partition_index(index);
                    let answer = match plan {
                        Ok(i) => answers
                            .get(i)
                            .cloned()
                            .unwrap_or(Err(ErrorCode::NOT_LEADER_OR_FOLLOWER))
                            .map_err(|code| code.0),
                        Err(code) => Err(code),
                    };
                    match answer {
                        Ok(offsets) => r.with_old_style_offsets(offsets),
                        Err(code) => r.with_error_code(code),
                    }
                })
                .collect();
            old::ListOffsetsTopicResponse::default()
                .with_name(name)
                .with_partitions(partitions)
        })
        .collect();
    let response = old::ListOffsetsResponse::default().with_topics(topics);
    encode_39(&response, 0).map_err(HandlerError::Encode)
}

#[cfg(test)]
mod tests {
    use super::super::admin_common::str_bytes;
    use super::*;
    use crate::protocol::schema::schema_fuzz_test;
    use bytes::Bytes;
    use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    use kafka_protocol::messages::BrokerId;

    #[test]
    fn the_schema_covers_every_version_of_the_request() {
        API.assert_schema_covers_every_version(|v| {
            let partition = ListOffsetsPartition::default()
                .with_partition_index(2)
                .with_timestamp(-3);
            let partition = if v >= 4 {
                partition.with_current_leader_epoch(7)
            } else {
                partition
            };
            ListOffsetsRequest::default()
                .with_replica_id(BrokerId(-1))
                .with_isolation_level(if v >= 2 { 1 } else { 0 })
                .with_topics(vec![
                    ListOffsetsTopic::default()
                        .with_name(TopicName(str_bytes("t")))
                        .with_partitions(vec![partition.clone(), partition]),
                    ListOffsetsTopic::default().with_name(TopicName(str_bytes("u"))),
                ])
        });
    }

    /// One topic whose partitions claim 2^31-1 entries (the audit's
    /// example): refused before the crate pre-sizes them.
    #[test]
    fn a_nested_array_longer_than_the_body_is_refused() {
        let body = [
            0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 0, 1, b'a', 0x7f, 0xff, 0xff, 0xff,
        ];
        let r = API
            .decode::<ListOffsetsRequest>(Bytes::copy_from_slice(&body), 1)
            .map_err(HandlerError::from);
        assert!(matches!(r, Err(HandlerError::Malformed(_))), "{r:?}");
    }

    schema_fuzz_test!(API, ListOffsetsRequest);
}
