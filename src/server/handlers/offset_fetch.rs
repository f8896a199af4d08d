//! `[drv]` OffsetFetch (key 9), v1–v9 (the codec's range): one group
//! (v1–v7) or several (v8+, KIP-709); `topics` null asks for every
//! committed partition (v2+). `require_stable` (v7+) waits for nothing:
//! without transactions no offset is pending.

use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequest;
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponse, OffsetFetchResponseGroup, OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions, OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{ApiKey, TopicName};

use super::group_common::{ask, str_bytes, text};
use super::{HandlerError, Request, Response};
use crate::group::coordinator::{Answer, FetchAnswer, FetchRequest};
use crate::protocol::encode::encode;
use crate::protocol::schema::{CheckedApi, Field, Schema, BOOL, INT32};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::group_host::GroupCall;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::OffsetFetch, 1, 9);

const FIRST_MULTI_GROUP: i16 = 8;

/// OffsetFetchRequest.json: v1–v7 group_id, topics [name, partitions
/// [int32]], require_stable (v7+); v8+ groups [group_id, member_id (v9+),
/// member_epoch (v9+), topics [...]], require_stable.
fn schema(version: i16) -> &'static [Field] {
    const TOPICS: Field = Field::Structs(&[Field::Str, Field::FixedArray(4)]);
    const SINGLE: &[Field] = &[Field::Str, TOPICS, Field::Since(7, &BOOL)];
    const MULTI: &[Field] = &[
        Field::Structs(&[
            Field::Str,
            Field::Since(9, &Field::Str),
            Field::Since(9, &INT32),
            TOPICS,
        ]),
        BOOL,
    ];
    if version >= FIRST_MULTI_GROUP {
        MULTI
    } else {
        SINGLE
    }
}

const API: CheckedApi = CheckedApi {
    versions: VERSIONS,
    first_flexible: 6,
    schema: Schema::PerVersion(schema),
};

async fn fetch(ctx: &Rc<ShardContext>, req: FetchRequest) -> FetchAnswer {
    let group_id = req.group_id.clone();
    match ask(ctx, &group_id, GroupCall::Fetch(req)).await {
        Ok(Answer::Fetch(a)) => a,
        Ok(_) => FetchAnswer {
            error: ErrorCode::UNKNOWN_SERVER_ERROR,
            partitions: Vec::new(),
        },
        Err(e) => FetchAnswer {
            error: e,
            partitions: Vec::new(),
        },
    }
}

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let r: OffsetFetchRequest = API.decode(req.body, version)?;
        let mut response = OffsetFetchResponse::default();
        if version >= FIRST_MULTI_GROUP {
            for g in &r.groups {
                let asked = g.topics.as_ref().map(|ts| {
                    ts.iter()
                        .flat_map(|t| t.partition_indexes.iter().map(|p| (text(&t.name.0), *p)))
                        .collect()
                });
                let a = fetch(
                    &ctx,
                    FetchRequest {
                        group_id: text(&g.group_id.0),
                        partitions: asked,
                    },
                )
                .await;
                let mut out = OffsetFetchResponseGroup::default();
                out.group_id = g.group_id.clone();
                out.error_code = a.error.0;
                for p in a.partitions {
                    let mut part = OffsetFetchResponsePartitions::default();
                    part.partition_index = p.partition;
                    part.committed_offset = p.offset;
                    part.committed_leader_epoch = if version >= 5 { p.leader_epoch } else { -1 };
                    part.metadata = Some(str_bytes(p.metadata));
                    part.error_code = p.error.0;
                    match out.topics.last_mut() {
                        Some(t) if t.name.0.as_str() == p.topic => t.partitions.push(part),
                        _ => {
                            let mut t = OffsetFetchResponseTopics::default();
                            t.name = TopicName(str_bytes(p.topic));
                            t.partitions.push(part);
                            out.topics.push(t);
                        }
                    }
                }
                response.groups.push(out);
            }
        } else {
            let asked = r.topics.as_ref().map(|ts| {
                ts.iter()
                    .flat_map(|t| t.partition_indexes.iter().map(|p| (text(&t.name.0), *p)))
                    .collect()
            });
            let a = fetch(
                &ctx,
                FetchRequest {
                    group_id: text(&r.group_id.0),
                    partitions: asked,
                },
            )
            .await;
            // OffsetFetchResponse.json: the top-level error from v2.
            if version >= 2 {
                response.error_code = a.error.0;
            }
            // v1 has no top-level error: each asked partition carries it.
            let partitions = if version < 2 && a.error != ErrorCode::NONE {
                r.topics
                    .iter()
                    .flatten()
                    .flat_map(|t| {
                        t.partition_indexes.iter().map(|p| {
                            crate::group::coordinator::FetchedOffset {
                                topic: text(&t.name.0),
                                partition: *p,
                                offset: -1,
                                leader_epoch: -1,
                                metadata: String::new(),
                                error: a.error,
                            }
                        })
                    })
                    .collect()
            } else {
                a.partitions
            };
            for p in partitions {
                let mut part = OffsetFetchResponsePartition::default();
                part.partition_index = p.partition;
                part.committed_offset = p.offset;
                part.committed_leader_epoch = if version >= 5 { p.leader_epoch } else { -1 };
                part.metadata = Some(str_bytes(p.metadata));
                part.error_code = p.error.0;
                match response.topics.last_mut() {
                    Some(t) if t.name.0.as_str() == p.topic => t.partitions.push(part),
                    _ => {
                        let mut t = OffsetFetchResponseTopic::default();
                        t.name = TopicName(str_bytes(p.topic));
                        t.partitions.push(part);
                        response.topics.push(t);
                    }
                }
            }
        }
        let body = encode(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::schema::schema_fuzz_test;
    use kafka_protocol::messages::offset_fetch_request::{
        OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
    };
    use kafka_protocol::messages::GroupId;

    #[test]
    fn the_schema_covers_every_version_exactly() {
        API.assert_schema_covers_every_version(|v| {
            if v >= FIRST_MULTI_GROUP {
                OffsetFetchRequest::default()
                    .with_groups(vec![OffsetFetchRequestGroup::default()
                        .with_group_id(GroupId(str_bytes("g")))
                        .with_member_id((v >= 9).then(|| str_bytes("m")))
                        .with_member_epoch(if v >= 9 { 3 } else { -1 })
                        .with_topics(Some(vec![OffsetFetchRequestTopics::default()
                            .with_name(TopicName(str_bytes("t")))
                            .with_partition_indexes(vec![0, 1])]))])
                    .with_require_stable(true)
            } else {
                OffsetFetchRequest::default()
                    .with_group_id(GroupId(str_bytes("g")))
                    .with_topics(Some(vec![OffsetFetchRequestTopic::default()
                        .with_name(TopicName(str_bytes("t")))
                        .with_partition_indexes(vec![0, 1])]))
                    .with_require_stable(v >= 7)
            }
        });
    }

    schema_fuzz_test!(API, OffsetFetchRequest);
}
