//! `[drv]` OffsetCommit (key 8), v2–v9 (the codec's range; v0–v1, which
//! Kafka 4 removed and no current client sends, are not offered).
//! Partitions of topics that do not exist get UNKNOWN_TOPIC_OR_PARTITION
//! here, as KafkaApis does; the rest go to the group's coordinator, which
//! answers once the records are in `__consumer_offsets`.

use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::offset_commit_request::OffsetCommitRequest;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponse, OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::ApiKey;

use super::group_common::{ask, opt_text, partition_exists, text};
use super::{HandlerError, Request, Response};
use crate::group::coordinator::{Answer, CommitPartition, CommitRequest};
use crate::protocol::encode::encode;
use crate::protocol::schema::{CheckedApi, Field, Schema, INT32, INT64};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::group_host::GroupCall;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::OffsetCommit, 2, 9);

/// OffsetCommitRequest.json: group_id, generation_id, member_id,
/// group_instance_id (v7+), retention_time_ms (v2–v4), topics [name,
/// partitions [index, offset, leader_epoch (v6+), metadata]].
fn schema(version: i16) -> &'static [Field] {
    const PARTITION: &[Field] = &[INT32, INT64, Field::Since(6, &INT32), Field::Str];
    const WITH_RETENTION: &[Field] = &[
        Field::Str,
        INT32,
        Field::Str,
        INT64,
        Field::Structs(&[Field::Str, Field::Structs(PARTITION)]),
    ];
    const WITHOUT: &[Field] = &[
        Field::Str,
        INT32,
        Field::Str,
        Field::Since(7, &Field::Str),
        Field::Structs(&[Field::Str, Field::Structs(PARTITION)]),
    ];
    if version <= 4 {
        WITH_RETENTION
    } else {
        WITHOUT
    }
}

const API: CheckedApi = CheckedApi {
    versions: VERSIONS,
    first_flexible: 8,
    schema: Schema::PerVersion(schema),
};

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let r: OffsetCommitRequest = API.decode(req.body, version)?;
        let group_id = text(&r.group_id.0);
        // (topic, partition) in request order, with an error decided here.
        let mut order: Vec<(String, i32, Option<ErrorCode>)> = Vec::new();
        let mut partitions = Vec::new();
        for t in &r.topics {
            let topic = text(&t.name.0);
            for p in &t.partitions {
                if partition_exists(&ctx, &topic, p.partition_index) {
                    order.push((topic.clone(), p.partition_index, None));
                    partitions.push(CommitPartition {
                        topic: topic.clone(),
                        partition: p.partition_index,
                        offset: p.committed_offset,
                        leader_epoch: if version >= 6 {
                            p.committed_leader_epoch
                        } else {
                            -1
                        },
                        metadata: opt_text(&p.committed_metadata),
                    });
                } else {
                    order.push((
                        topic.clone(),
                        p.partition_index,
                        Some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION),
                    ));
                }
            }
        }
        let mut decided: std::collections::HashMap<(String, i32), ErrorCode> = Default::default();
        if !partitions.is_empty() {
            let commit = CommitRequest {
                group_id: group_id.clone(),
                generation: r.generation_id_or_member_epoch,
                member_id: text(&r.member_id),
                group_instance_id: opt_text(&r.group_instance_id),
                retention_ms: if version <= 4 {
                    r.retention_time_ms
                } else {
                    -1
                },
                partitions,
            };
            match ask(&ctx, &group_id, GroupCall::Commit(commit)).await {
                Ok(Answer::Commit(list)) => {
                    decided.extend(list.into_iter().map(|(t, p, e)| ((t, p), e)));
                }
                Ok(_) => {}
                Err(e) => {
                    for (t, p, d) in &order {
                        if d.is_none() {
                            decided.insert((t.clone(), *p), e);
                        }
                    }
                }
            }
        }
        let mut response = OffsetCommitResponse::default();
        for (topic, p, d) in order {
            let error = d
                .or_else(|| decided.get(&(topic.clone(), p)).copied())
                .unwrap_or(ErrorCode::UNKNOWN_SERVER_ERROR);
            let mut part = OffsetCommitResponsePartition::default();
            part.partition_index = p;
            part.error_code = error.0;
            match response.topics.last_mut() {
                Some(t) if t.name.0.as_str() == topic => t.partitions.push(part),
                _ => {
                    let mut t = OffsetCommitResponseTopic::default();
                    t.name =
                        kafka_protocol::messages::TopicName(super::group_common::str_bytes(topic));
                    t.partitions.push(part);
                    response.topics.push(t);
                }
            }
        }
        let body = encode(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

#[cfg(test)]
mod tests {
    use super::super::group_common::str_bytes;
    use super::*;
    use crate::protocol::schema::schema_fuzz_test;
    use kafka_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    use kafka_protocol::messages::{GroupId, TopicName};

    #[test]
    fn the_schema_covers_every_version_exactly() {
        API.assert_schema_covers_every_version(|v| {
            OffsetCommitRequest::default()
                .with_group_id(GroupId(str_bytes("g")))
                .with_generation_id_or_member_epoch(2)
                .with_member_id(str_bytes("m"))
                .with_group_instance_id((v >= 7).then(|| str_bytes("i")))
                .with_retention_time_ms(if v <= 4 { 1000 } else { -1 })
                .with_topics(vec![OffsetCommitRequestTopic::default()
                    .with_name(TopicName(str_bytes("t")))
                    .with_partitions(vec![OffsetCommitRequestPartition::default()
                        .with_partition_index(1)
                        .with_committed_offset(5)
                        .with_committed_leader_epoch(if v >= 6 { 2 } else { -1 })
                        .with_committed_metadata(Some(str_bytes("x")))])])
        });
    }

    schema_fuzz_test!(API, OffsetCommitRequest);
}
