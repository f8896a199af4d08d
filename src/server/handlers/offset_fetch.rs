//! `[drv]` OffsetFetch (key 9), v0–v9 as Kafka 3.9 serves them: one group
//! (v0–v7) or several (v8+, KIP-709); `topics` null asks for every
//! committed partition (v2+). `require_stable` (v7+, KIP-447): a
//! partition with offsets of an open transaction (TxnOffsetCommit before
//! its marker) answers UNSTABLE_OFFSET_COMMIT, which the client retries.
//!
//! v0 reads what OffsetCommit v0 wrote to the metadata store
//! (`KafkaApis.handleOffsetFetchRequestFromZookeeper`): an unknown
//! partition or one without a stored offset answers offset -1 with
//! UNKNOWN_TOPIC_OR_PARTITION, as Kafka's `OffsetFetchResponse.UNKNOWN_PARTITION`.
//! Kafka 4.0 removed v0 (KIP-896) and the `kafka-protocol` 0.18 codec with
//! it, so v0 decodes and encodes with the 3.9 codec.

use std::rc::Rc;

use bytes::{Bytes, BytesMut};
use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequest;
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponse, OffsetFetchResponseGroup, OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions, OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{ApiKey, TopicName};
use kafka_protocol_39::messages::offset_fetch_request::OffsetFetchRequest as OffsetFetchRequest39;
use kafka_protocol_39::messages::offset_fetch_response as response_39;
use kafka_protocol_39::protocol::{Decodable as _, Encodable as _, StrBytes as StrBytes39};

use super::authz::Authz;
use super::group_common::{ask, partition_exists, str_bytes, text};
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::group::coordinator::{Answer, FetchAnswer, FetchRequest};
use crate::protocol::decode::DecodeError;
use crate::protocol::encode::encode;
use crate::protocol::schema::{check_arrays, CheckedApi, Field, Schema, BOOL, INT32};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::group::group_host::GroupCall;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::OffsetFetch, 0, 9);

/// The version read from the metadata store, with the 3.9 codec.
pub const STORED_IN_ZOOKEEPER: i16 = 0;

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

pub const API: CheckedApi = CheckedApi {
    versions: VERSIONS,
    first_flexible: 6,
    schema: Schema::PerVersion(schema),
};

/// Kafka's handleOffsetFetchRequest: DESCRIBE on the group (denied:
/// GROUP_AUTHORIZATION_FAILED for the group), then DESCRIBE on each
/// topic: a requested partition of a denied topic answers
/// TOPIC_AUTHORIZATION_FAILED (offset -1, after the others); with all
/// partitions asked, denied topics are silently left out.
async fn fetch(ctx: &Rc<ShardContext>, authz: &Authz<'_>, mut req: FetchRequest) -> FetchAnswer {
    if !authz.group(Operation::Describe, &req.group_id) {
        return FetchAnswer {
            error: ErrorCode::GROUP_AUTHORIZATION_FAILED,
            partitions: Vec::new(),
        };
    }
    let mut denied = Vec::new();
    if let Some(asked) = req.partitions.take() {
        let (allowed, refused): (Vec<_>, Vec<_>) = asked
            .into_iter()
            .partition(|(t, _)| authz.topic(Operation::Describe, t));
        denied = refused;
        req.partitions = Some(allowed);
        if req.partitions.as_ref().is_some_and(Vec::is_empty) && !denied.is_empty() {
            return FetchAnswer {
                error: ErrorCode::NONE,
                partitions: denied_offsets(denied),
            };
        }
    }
    let mut answer = fetch_authorized(ctx, req).await;
    if authz.enabled() {
        answer
            .partitions
            .retain(|p| authz.topic(Operation::Describe, &p.topic));
    }
    if answer.error == ErrorCode::NONE {
        answer.partitions.extend(denied_offsets(denied));
    }
    answer
}

fn denied_offsets(denied: Vec<(String, i32)>) -> Vec<crate::group::coordinator::FetchedOffset> {
    denied
        .into_iter()
        .map(
            |(topic, partition)| crate::group::coordinator::FetchedOffset {
                topic,
                partition,
                offset: -1,
                leader_epoch: -1,
                metadata: String::new(),
                error: ErrorCode::TOPIC_AUTHORIZATION_FAILED,
            },
        )
        .collect()
}

async fn fetch_authorized(ctx: &Rc<ShardContext>, req: FetchRequest) -> FetchAnswer {
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
        let authz = Authz::new(&ctx, &req);
        if version == STORED_IN_ZOOKEEPER {
            let body = fetch_from_store(&ctx, &authz, req.body).await?;
            return Ok(Response::Body(vec![OutPart::Bytes(body)]));
        }
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
                    &authz,
                    FetchRequest {
                        group_id: text(&g.group_id.0),
                        partitions: asked,
                        require_stable: r.require_stable,
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
            answer_single_group(&ctx, &authz, &r, version, &mut response).await;
        }
        let body = encode(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

/// v1–v7: one group, its partitions at the top level.
async fn answer_single_group(
    ctx: &Rc<ShardContext>,
    authz: &Authz<'_>,
    r: &OffsetFetchRequest,
    version: i16,
    response: &mut OffsetFetchResponse,
) {
    let asked = r.topics.as_ref().map(|ts| {
        ts.iter()
            .flat_map(|t| t.partition_indexes.iter().map(|p| (text(&t.name.0), *p)))
            .collect()
    });
    let a = fetch(
        ctx,
        authz,
        FetchRequest {
            group_id: text(&r.group_id.0),
            partitions: asked,
            require_stable: version >= 7 && r.require_stable,
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
                t.partition_indexes
                    .iter()
                    .map(|p| crate::group::coordinator::FetchedOffset {
                        topic: text(&t.name.0),
                        partition: *p,
                        offset: -1,
                        leader_epoch: -1,
                        metadata: String::new(),
                        error: a.error,
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

/// A v0 request: group id and `(topic, partition)`s in request order.
pub fn decode_v0(mut body: Bytes) -> Result<(String, Vec<(String, i32)>), DecodeError> {
    check_arrays(
        &body,
        schema(STORED_IN_ZOOKEEPER),
        STORED_IN_ZOOKEEPER,
        false,
    )?;
    let r = OffsetFetchRequest39::decode(&mut body, STORED_IN_ZOOKEEPER)
        .map_err(|e| DecodeError::Malformed(e.to_string()))?;
    let asked = r
        .topics
        .iter()
        .flatten()
        .flat_map(|t| {
            let name = t.name.0.as_str().to_owned();
            t.partition_indexes.iter().map(move |p| (name.clone(), *p))
        })
        .collect();
    Ok((r.group_id.0.as_str().to_owned(), asked))
}

/// A v0 answer: per partition (offset, error), grouped by topic in order.
fn encode_v0(answers: Vec<((String, i32), (i64, ErrorCode))>) -> Result<Bytes, HandlerError> {
    let mut topics: Vec<response_39::OffsetFetchResponseTopic> = Vec::new();
    for ((topic, partition), (offset, error)) in answers {
        let part = response_39::OffsetFetchResponsePartition::default()
            .with_partition_index(partition)
            .with_committed_offset(offset)
            .with_metadata(Some(StrBytes39::from_static_str("")))
            .with_error_code(error.0);
        match topics.last_mut() {
            Some(t) if t.name.0.as_str() == topic => t.partitions.push(part),
            _ => topics.push(
                response_39::OffsetFetchResponseTopic::default()
                    .with_name(kafka_protocol_39::messages::TopicName(
                        StrBytes39::from_string(topic),
                    ))
                    .with_partitions(vec![part]),
            ),
        }
    }
    let mut body = BytesMut::new();
    response_39::OffsetFetchResponse::default()
        .with_topics(topics)
        .encode(&mut body, STORED_IN_ZOOKEEPER)
        .map_err(|e| HandlerError::Encode(e.to_string()))?;
    Ok(body.freeze())
}

/// v0: the offsets OffsetCommit v0 stored, read on the control shard.
async fn fetch_from_store(
    ctx: &Rc<ShardContext>,
    authz: &Authz<'_>,
    body: Bytes,
) -> Result<Bytes, HandlerError> {
    let (group_id, asked) = decode_v0(body)?;
    let unknown = (-1, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
    let mut found = std::collections::HashMap::new();
    // As v1+: DESCRIBE on the group, copied to every partition at v0;
    // DESCRIBE on each topic.
    let group_allowed = authz.group(Operation::Describe, &group_id);
    for (t, p) in &asked {
        if !group_allowed {
            found.insert((t.clone(), *p), (-1, ErrorCode::GROUP_AUTHORIZATION_FAILED));
        } else if !authz.topic(Operation::Describe, t) {
            found.insert((t.clone(), *p), (-1, ErrorCode::TOPIC_AUTHORIZATION_FAILED));
        }
    }
    let known: Vec<(String, i32)> = asked
        .iter()
        .filter(|key| !found.contains_key(*key))
        .filter(|(t, p)| partition_exists(ctx, t, *p))
        .cloned()
        .collect();
    if !known.is_empty() {
        let answers = match ctx
            .control_client()
            .fetch_offsets_from_store(group_id, known.clone())
            .await
        {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(error = %e, "v0 offset fetch: control shard unavailable");
                vec![Err(ErrorCode::COORDINATOR_NOT_AVAILABLE); known.len()]
            }
        };
        for (key, answer) in known.into_iter().zip(answers) {
            let value = match answer {
                Ok(Some(offset)) => (offset, ErrorCode::NONE),
                Ok(None) => unknown,
                Err(e) => (-1, e),
            };
            found.insert(key, value);
        }
    }
    let answers = asked
        .into_iter()
        .map(|key| {
            let value = found.get(&key).copied().unwrap_or(unknown);
            (key, value)
        })
        .collect();
    encode_v0(answers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::schema::schema_fuzz_test;
    use kafka_protocol::messages::offset_fetch_request::{
        OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
    };
    use kafka_protocol::messages::GroupId;

    /// The versions the 0.18 codec has.
    const API_18: CheckedApi = CheckedApi {
        versions: ApiRange::new(ApiKey::OffsetFetch, 1, 9),
        ..API
    };

    fn v0_request() -> Bytes {
        use kafka_protocol_39::messages::offset_fetch_request::OffsetFetchRequestTopic as Topic39;
        let r = OffsetFetchRequest39::default()
            .with_group_id(kafka_protocol_39::messages::GroupId(
                StrBytes39::from_static_str("g"),
            ))
            .with_topics(Some(vec![
                Topic39::default()
                    .with_name(kafka_protocol_39::messages::TopicName(
                        StrBytes39::from_static_str("t"),
                    ))
                    .with_partition_indexes(vec![0, 1]),
                Topic39::default()
                    .with_name(kafka_protocol_39::messages::TopicName(
                        StrBytes39::from_static_str("u"),
                    ))
                    .with_partition_indexes(vec![5]),
            ]));
        let mut buf = BytesMut::new();
        r.encode(&mut buf, 0).unwrap();
        buf.freeze()
    }

    #[test]
    fn v0_is_covered_by_the_schema_and_decodes_in_request_order() {
        let body = v0_request();
        assert_eq!(
            check_arrays(&body, schema(0), 0, false).unwrap(),
            body.len()
        );
        let (group, asked) = decode_v0(body).unwrap();
        assert_eq!(group, "g");
        assert_eq!(
            asked,
            vec![
                ("t".to_owned(), 0),
                ("t".to_owned(), 1),
                ("u".to_owned(), 5)
            ]
        );
    }

    #[test]
    fn a_v0_answer_has_offset_metadata_and_error_per_partition_and_nothing_else() {
        let body = encode_v0(vec![
            (("t".to_owned(), 0), (42, ErrorCode::NONE)),
            (
                ("t".to_owned(), 1),
                (-1, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION),
            ),
        ])
        .unwrap();
        // [topics: 1 ["t", [0, 42, "", 0], [1, -1, "", 3]]]: no throttle
        // time (v3+), no top-level error (v2+), no leader epoch (v5+).
        let mut want = vec![0, 0, 0, 1, 0, 1, b't', 0, 0, 0, 2];
        want.extend_from_slice(&[0, 0, 0, 0]);
        want.extend_from_slice(&42i64.to_be_bytes());
        want.extend_from_slice(&[0, 0, 0, 0]);
        want.extend_from_slice(&[0, 0, 0, 1]);
        want.extend_from_slice(&(-1i64).to_be_bytes());
        want.extend_from_slice(&[0, 0, 0, 3]);
        assert_eq!(&body[..], &want[..]);
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_v0_bodies_never_panic(
            body in proptest::collection::vec(proptest::num::u8::ANY, 0..128),
        ) {
            let _ = decode_v0(Bytes::from(body));
        }
    }

    #[test]
    fn the_schema_covers_every_version_exactly() {
        API_18.assert_schema_covers_every_version(|v| {
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

    schema_fuzz_test!(API_18, OffsetFetchRequest);
}
