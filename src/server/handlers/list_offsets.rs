//! `[drv]` ListOffsets (key 2), v1–v8: earliest (-2), latest (-1), max
//! timestamp (-3, KIP-734, v7+) and by timestamp (time index), answered by
//! each partition's owner shard.
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
use crate::protocol::schema::{CheckedApi, Field, Schema, INT32, INT64, INT8};
use crate::protocol::{ApiRange, ErrorCode};
use crate::purgatory::delayed_fetch::FetchIsolation;
use crate::replication::partition::MAX_TIMESTAMP;
use crate::server::out::OutPart;
use crate::shard::ShardContext;
use crate::types::TopicPartition;

/// A partition's place in the answer: index, lookup slot, early error.
type Planned = (i32, Option<usize>, i16);

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::ListOffsets, 1, 8);

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
    versions: VERSIONS,
    first_flexible: FIRST_FLEXIBLE,
    schema: Schema::Fixed(SCHEMA),
};

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
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
