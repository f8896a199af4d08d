//! `[drv]` OffsetCommit (key 8), v0–v9 as Kafka 3.9 serves them.
//! Partitions of topics that do not exist get UNKNOWN_TOPIC_OR_PARTITION
//! here, as KafkaApis does; the rest go to the group's coordinator, which
//! answers once the records are in `__consumer_offsets`.
//!
//! v0 commits are not the coordinator's: Kafka 3.9 in ZooKeeper mode
//! writes them to `/consumers/<group>/offsets/<topic>/<partition>`
//! (`KafkaApis.commitOffsetsToZookeeper`), so they go to the control
//! shard's metadata store (ZooKeeper, or the embedded store). v1 adds the
//! generation and member and a per-partition `commit_timestamp`. Kafka 4.0
//! removed v0–v1 (KIP-896) and with them the `kafka-protocol` 0.18 codec,
//! so they decode and encode with the 3.9 codec (`kafka-protocol` 0.15.1).

use std::collections::HashMap;
use std::rc::Rc;

use bytes::{Bytes, BytesMut};
use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::offset_commit_request::OffsetCommitRequest;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponse, OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::ApiKey;
use kafka_protocol_39::messages::offset_commit_request::OffsetCommitRequest as OffsetCommitRequest39;
use kafka_protocol_39::messages::offset_commit_response as response_39;
use kafka_protocol_39::protocol::{Decodable as _, Encodable as _};

use super::authz::Authz;
use super::group_common::{ask, opt_text, partition_exists, text};
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::group::coordinator::{Answer, CommitPartition, CommitRequest};
use crate::protocol::decode::DecodeError;
use crate::protocol::encode::encode;
use crate::protocol::schema::{check_arrays, CheckedApi, Field, Schema, INT32, INT64};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::group::group_host::GroupCall;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::OffsetCommit, 0, 9);

/// The last version only the 3.9 codec has.
pub const LAST_OF_THE_39_CODEC: i16 = 1;

/// The version whose offsets live in the metadata store.
const STORED_IN_ZOOKEEPER: i16 = 0;

/// Kafka's `OffsetCommitRequest.DEFAULT_TIMESTAMP`.
const DEFAULT_TIMESTAMP: i64 = -1;

/// OffsetCommitRequest.json: group_id, generation_id (v1+), member_id
/// (v1+), group_instance_id (v7+), retention_time_ms (v2–v4), topics
/// [name, partitions [index, offset, leader_epoch (v6+), commit_timestamp
/// (v1 only), metadata]].
fn schema(version: i16) -> &'static [Field] {
    const PARTITION: &[Field] = &[INT32, INT64, Field::Since(6, &INT32), Field::Str];
    const V0: &[Field] = &[
        Field::Str,
        Field::Structs(&[Field::Str, Field::Structs(&[INT32, INT64, Field::Str])]),
    ];
    const V1: &[Field] = &[
        Field::Str,
        INT32,
        Field::Str,
        Field::Structs(&[
            Field::Str,
            Field::Structs(&[INT32, INT64, INT64, Field::Str]),
        ]),
    ];
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
    match version {
        0 => V0,
        1 => V1,
        2..=4 => WITH_RETENTION,
        _ => WITHOUT,
    }
}

pub const API: CheckedApi = CheckedApi {
    versions: VERSIONS,
    first_flexible: 8,
    schema: Schema::PerVersion(schema),
};

/// A request of any version, as the handler needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    group_id: String,
    /// -1 below v1 (no generation: a simple commit).
    generation: i32,
    member_id: String,
    group_instance_id: Option<String>,
    /// v2–v4; -1 otherwise (the broker's `offsets.retention.minutes`).
    retention_ms: i64,
    topics: Vec<(String, Vec<CommitPart>)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitPart {
    index: i32,
    offset: i64,
    leader_epoch: i32,
    commit_timestamp_ms: i64,
    metadata: Option<String>,
}

/// Check every array, then decode with the codec that has `version`.
pub fn decode_request(body: Bytes, version: i16) -> Result<Commit, DecodeError> {
    if version > LAST_OF_THE_39_CODEC {
        let r: OffsetCommitRequest = API.decode(body, version)?;
        return Ok(Commit {
            group_id: text(&r.group_id.0),
            generation: r.generation_id_or_member_epoch,
            member_id: text(&r.member_id),
            group_instance_id: opt_text(&r.group_instance_id),
            retention_ms: if version <= 4 {
                r.retention_time_ms
            } else {
                -1
            },
            topics: r
                .topics
                .iter()
                .map(|t| {
                    let parts = t
                        .partitions
                        .iter()
                        .map(|p| CommitPart {
                            index: p.partition_index,
                            offset: p.committed_offset,
                            leader_epoch: if version >= 6 {
                                p.committed_leader_epoch
                            } else {
                                -1
                            },
                            commit_timestamp_ms: DEFAULT_TIMESTAMP,
                            metadata: opt_text(&p.committed_metadata),
                        })
                        .collect();
                    (text(&t.name.0), parts)
                })
                .collect(),
        });
    }
    check_arrays(&body, schema(version), version, false)?;
    let mut body = body;
    let r = OffsetCommitRequest39::decode(&mut body, version)
        .map_err(|e| DecodeError::Malformed(e.to_string()))?;
    let owned = |s: &kafka_protocol_39::protocol::StrBytes| s.as_str().to_owned();
    Ok(Commit {
        group_id: owned(&r.group_id.0),
        generation: if version >= 1 {
            r.generation_id_or_member_epoch
        } else {
            -1
        },
        member_id: if version >= 1 {
            owned(&r.member_id)
        } else {
            String::new()
        },
        group_instance_id: None,
        retention_ms: -1,
        topics: r
            .topics
            .iter()
            .map(|t| {
                let parts = t
                    .partitions
                    .iter()
                    .map(|p| CommitPart {
                        index: p.partition_index,
                        offset: p.committed_offset,
                        leader_epoch: -1,
                        commit_timestamp_ms: if version == 1 {
                            p.commit_timestamp
                        } else {
                            DEFAULT_TIMESTAMP
                        },
                        metadata: p.committed_metadata.as_ref().map(owned),
                    })
                    .collect();
                (owned(&t.name.0), parts)
            })
            .collect(),
    })
}

/// The answer, per topic in request order, with the codec that has
/// `version`.
fn encode_response(
    version: i16,
    topics: Vec<(String, Vec<(i32, ErrorCode)>)>,
) -> Result<Bytes, HandlerError> {
    if version > LAST_OF_THE_39_CODEC {
        let mut response = OffsetCommitResponse::default();
        for (name, parts) in topics {
            let mut t = OffsetCommitResponseTopic::default();
            t.name = kafka_protocol::messages::TopicName(super::group_common::str_bytes(name));
            t.partitions = parts
                .into_iter()
                .map(|(p, e)| {
                    let mut part = OffsetCommitResponsePartition::default();
                    part.partition_index = p;
                    part.error_code = e.0;
                    part
                })
                .collect();
            response.topics.push(t);
        }
        return encode(&response, version).map_err(HandlerError::Encode);
    }
    let topics = topics
        .into_iter()
        .map(|(name, parts)| {
            response_39::OffsetCommitResponseTopic::default()
                .with_name(kafka_protocol_39::messages::TopicName(
                    kafka_protocol_39::protocol::StrBytes::from_string(name),
                ))
                .with_partitions(
                    parts
                        .into_iter()
                        .map(|(p, e)| {
                            response_39::OffsetCommitResponsePartition::default()
                                .with_partition_index(p)
                                .with_error_code(e.0)
                        })
                        .collect(),
                )
        })
        .collect();
    let mut body = BytesMut::new();
    response_39::OffsetCommitResponse::default()
        .with_topics(topics)
        .encode(&mut body, version)
        .map_err(|e| HandlerError::Encode(e.to_string()))?;
    Ok(body.freeze())
}

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let authz = Authz::new(&ctx, &req);
        let r = decode_request(req.body, version)?;
        // Kafka's handleOffsetCommitRequest: READ on the group (denied:
        // every partition GROUP_AUTHORIZATION_FAILED), then READ on each
        // topic (TOPIC_AUTHORIZATION_FAILED), before existence.
        let group_allowed = authz.group(Operation::Read, &r.group_id);
        // (topic, partition) in request order, with an error decided here.
        let mut order: Vec<(String, i32, Option<ErrorCode>)> = Vec::new();
        let mut partitions = Vec::new();
        for (topic, parts) in &r.topics {
            let refused = if !group_allowed {
                Some(ErrorCode::GROUP_AUTHORIZATION_FAILED)
            } else if !authz.topic(Operation::Read, topic) {
                Some(ErrorCode::TOPIC_AUTHORIZATION_FAILED)
            } else {
                None
            };
            for p in parts {
                if let Some(e) = refused {
                    order.push((topic.clone(), p.index, Some(e)));
                } else if partition_exists(&ctx, topic, p.index) {
                    order.push((topic.clone(), p.index, None));
                    partitions.push(CommitPartition {
                        topic: topic.clone(),
                        partition: p.index,
                        offset: p.offset,
                        leader_epoch: p.leader_epoch,
                        metadata: p.metadata.clone(),
                        commit_timestamp_ms: p.commit_timestamp_ms,
                    });
                } else {
                    order.push((
                        topic.clone(),
                        p.index,
                        Some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION),
                    ));
                }
            }
        }
        let mut decided: HashMap<(String, i32), ErrorCode> = Default::default();
        if !partitions.is_empty() && version == STORED_IN_ZOOKEEPER {
            commit_to_store(&ctx, &r.group_id, partitions, &mut decided).await;
        } else if !partitions.is_empty() {
            let commit = CommitRequest {
                txn: None,
                group_id: r.group_id.clone(),
                generation: r.generation,
                member_id: r.member_id.clone(),
                group_instance_id: r.group_instance_id.clone(),
                retention_ms: r.retention_ms,
                partitions,
            };
            match ask(&ctx, &r.group_id, GroupCall::Commit(commit)).await {
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
        // Kafka's order (`OffsetCommitResponse.Builder`, per topic in
        // order of first mention): the partitions refused here, then the
        // stored ones merged in.
        let (refused, stored): (Vec<_>, Vec<_>) =
            order.into_iter().partition(|(_, _, d)| d.is_some());
        let mut topics: Vec<(String, Vec<(i32, ErrorCode)>)> = Vec::new();
        for (topic, p, d) in refused.into_iter().chain(stored) {
            let error = d
                .or_else(|| decided.get(&(topic.clone(), p)).copied())
                .unwrap_or(ErrorCode::UNKNOWN_SERVER_ERROR);
            match topics.iter_mut().find(|(name, _)| *name == topic) {
                Some((_, parts)) => parts.push((p, error)),
                None => topics.push((topic, vec![(p, error)])),
            }
        }
        let body = encode_response(version, topics)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

/// v0: each offset into the metadata store, unless its metadata is over
/// `offset.metadata.max.bytes` (OFFSET_METADATA_TOO_LARGE, as
/// `commitOffsetsToZookeeper` checks; the store keeps only the offset).
async fn commit_to_store(
    ctx: &Rc<ShardContext>,
    group_id: &str,
    partitions: Vec<CommitPartition>,
    decided: &mut HashMap<(String, i32), ErrorCode>,
) {
    let max_metadata = usize::try_from(ctx.config.offset_metadata_max_bytes).unwrap_or(0);
    let mut offsets = Vec::new();
    for p in partitions {
        if p.metadata.as_ref().is_some_and(|m| m.len() > max_metadata) {
            decided.insert((p.topic, p.partition), ErrorCode::OFFSET_METADATA_TOO_LARGE);
        } else {
            offsets.push((p.topic, p.partition, p.offset));
        }
    }
    if offsets.is_empty() {
        return;
    }
    let keys: Vec<(String, i32)> = offsets.iter().map(|(t, p, _)| (t.clone(), *p)).collect();
    let answers = match ctx
        .control_client()
        .commit_offsets_to_store(group_id.to_owned(), offsets)
        .await
    {
        Ok(errors) => errors,
        Err(e) => {
            tracing::warn!(error = %e, "v0 offset commit: control shard unavailable");
            vec![ErrorCode::COORDINATOR_NOT_AVAILABLE; keys.len()]
        }
    };
    for (key, error) in keys.into_iter().zip(answers) {
        decided.insert(key, error);
    }
}

#[cfg(test)]
mod tests {
    use super::super::group_common::str_bytes;
    use super::*;
    use kafka_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    use kafka_protocol::messages::{GroupId, TopicName};
    use kafka_protocol_39::messages::offset_commit_request as request_39;
    use kafka_protocol_39::protocol::StrBytes as StrBytes39;
    use proptest::prelude::*;

    fn request(v: i16) -> OffsetCommitRequest {
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
    }

    /// What a v0 or v1 client sends (kafka-python's `api_version=(0, 8, 1)`
    /// and `(0, 8, 2)` consumers), with the 3.9 codec.
    fn old_request(v: i16) -> Bytes {
        let s = StrBytes39::from_static_str;
        let r = request_39::OffsetCommitRequest::default()
            .with_group_id(kafka_protocol_39::messages::GroupId(s("g")))
            .with_generation_id_or_member_epoch(if v >= 1 { 4 } else { -1 })
            .with_member_id(if v >= 1 { s("m") } else { s("") })
            .with_topics(vec![request_39::OffsetCommitRequestTopic::default()
                .with_name(kafka_protocol_39::messages::TopicName(s("t")))
                .with_partitions(vec![
                    request_39::OffsetCommitRequestPartition::default()
                        .with_partition_index(1)
                        .with_committed_offset(5)
                        .with_commit_timestamp(if v == 1 { 1234 } else { -1 })
                        .with_committed_metadata(Some(s("x"))),
                    request_39::OffsetCommitRequestPartition::default()
                        .with_partition_index(2)
                        .with_committed_offset(7)
                        .with_committed_metadata(None),
                ])]);
        let mut buf = BytesMut::new();
        r.encode(&mut buf, v).unwrap();
        buf.freeze()
    }

    #[test]
    fn the_schema_covers_every_version_exactly() {
        for v in VERSIONS.min..=VERSIONS.max {
            let body = if v > LAST_OF_THE_39_CODEC {
                encode(&request(v), v).unwrap()
            } else {
                old_request(v)
            };
            assert_eq!(
                check_arrays(&body, schema(v), v, v >= API.first_flexible).unwrap(),
                body.len(),
                "v{v}"
            );
        }
    }

    #[test]
    fn every_version_decodes_to_the_same_commit() {
        for v in VERSIONS.min..=VERSIONS.max {
            let body = if v > LAST_OF_THE_39_CODEC {
                encode(&request(v), v).unwrap()
            } else {
                old_request(v)
            };
            let c = decode_request(body, v).unwrap();
            assert_eq!(c.group_id, "g", "v{v}");
            let (generation, member) = if v == 0 {
                (-1, "")
            } else {
                (if v == 1 { 4 } else { 2 }, "m")
            };
            assert_eq!(
                (c.generation, c.member_id.as_str()),
                (generation, member),
                "v{v}"
            );
            assert_eq!(
                c.group_instance_id.as_deref(),
                (v >= 7).then_some("i"),
                "v{v}"
            );
            let retention = if (2..=4).contains(&v) { 1000 } else { -1 };
            assert_eq!(c.retention_ms, retention, "v{v}");
            assert_eq!(c.topics[0].0, "t");
            let p = &c.topics[0].1[0];
            assert_eq!(
                (p.index, p.offset, p.metadata.as_deref()),
                (1, 5, Some("x")),
                "v{v}"
            );
            let timestamp = if v == 1 { 1234 } else { DEFAULT_TIMESTAMP };
            assert_eq!(p.commit_timestamp_ms, timestamp, "v{v}");
            assert_eq!(p.leader_epoch, if v >= 6 { 2 } else { -1 }, "v{v}");
        }
    }

    #[test]
    fn old_answers_are_kafkas_v0_shape() {
        // v0–v2: [topics [name, [partition, error]]], no throttle time.
        let topics = vec![(
            "t".to_owned(),
            vec![
                (1, ErrorCode::NONE),
                (2, ErrorCode::OFFSET_METADATA_TOO_LARGE),
            ],
        )];
        let body = encode_response(0, topics.clone()).unwrap();
        let want: &[u8] = &[
            0, 0, 0, 1, 0, 1, b't', 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0, 12,
        ];
        assert_eq!(&body[..], want);
        assert_eq!(encode_response(1, topics.clone()).unwrap(), body);
        assert_eq!(
            encode_response(2, topics).unwrap(),
            body,
            "the 0.18 codec agrees at v2"
        );
    }

    proptest! {
        #[test]
        fn arbitrary_bodies_never_panic(
            body in proptest::collection::vec(any::<u8>(), 0..128),
            v in VERSIONS.min..=VERSIONS.max,
        ) {
            let _ = decode_request(Bytes::from(body), v);
        }
    }
}
