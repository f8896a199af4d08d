//! `[drv]` Metadata (key 3), every version the codec knows (v0–v13),
//! answered from this shard's snapshot.
//!
//! Topics that do not exist are auto-created by the control shard
//! (`auto.create.topics.enable`, and the request's
//! `allow_auto_topic_creation` from v4); the answer is then rebuilt from
//! the snapshot that includes them, with Kafka's LEADER_NOT_AVAILABLE for
//! the just-created ones.

use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::metadata_request::MetadataRequest;
use kafka_protocol::messages::metadata_response::{MetadataResponse, MetadataResponseTopic};
use kafka_protocol::messages::{ApiKey, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::{Operation, ResourceType};
use crate::metadata::answers::metadata_response;
use crate::protocol::encode::encode;
use crate::protocol::schema::{CheckedApi, Field, Schema, BOOL, UUID};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::auto_create::request_auto_create;
use crate::server::out::OutPart;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::Metadata, 0, 13);

/// MetadataRequest.json: topics [topic_id (v10+), name], then
/// allow_auto_topic_creation (v4+), include_cluster_authorized_operations
/// (v8–v10), include_topic_authorized_operations (v8+).
fn schema(version: i16) -> &'static [Field] {
    const BY_NAME: Field = Field::Structs(&[Field::Str]);
    const BY_ID: Field = Field::Structs(&[UUID, Field::Str]);
    const V0: &[Field] = &[BY_NAME];
    const V4: &[Field] = &[BY_NAME, BOOL];
    const V8: &[Field] = &[BY_NAME, BOOL, BOOL, BOOL];
    const V10: &[Field] = &[BY_ID, BOOL, BOOL, BOOL];
    const V11: &[Field] = &[BY_ID, BOOL, BOOL];
    match version {
        ..=3 => V0,
        4..=7 => V4,
        8 | 9 => V8,
        10 => V10,
        _ => V11,
    }
}

/// The checked decode (array counts and tagged fields walked first).
pub const API: CheckedApi = CheckedApi {
    versions: VERSIONS,
    // KIP-482: compact arrays and tagged fields from v9.
    first_flexible: 9,
    schema: Schema::PerVersion(schema),
};

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let request = decode_request(req.body.clone(), version)?;
        let auto_create = ctx.config.auto_create_topics_enable;
        let authz = Authz::new(&ctx, &req);
        let (request, denied) = authorize_request(&ctx, &authz, request, version);
        let mut answer = metadata_response(
            &ctx.snapshot(),
            &request,
            version,
            &req.listener,
            auto_create,
        );
        if !answer.auto_create_candidates.is_empty() {
            let topics = std::mem::take(&mut answer.auto_create_candidates);
            // The control shard owns topic creation and answers once the
            // new topics are in our snapshot.
            if let Some(results) = request_auto_create(&ctx, topics).await {
                answer =
                    metadata_response(&ctx.snapshot(), &request, version, &req.listener, false);
                mark_auto_created(&mut answer.response, &results);
            }
        }
        authorize_answer(&authz, &mut answer.response, &request, version, denied);
        let body = encode(&answer.response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

/// Whether a request asks for every topic (null topics, or none at v0).
fn asks_all_topics(request: &MetadataRequest, version: i16) -> bool {
    match &request.topics {
        None => true,
        Some(t) => t.is_empty() && version == 0,
    }
}

/// The topics this request is denied, as Kafka 3.9's `getTopicMetadata`
/// answers them, and whether every named topic was denied.
struct Denied {
    topics: Vec<MetadataResponseTopic>,
    none_left: bool,
}

/// Kafka's `handleTopicMetadataRequest`: DESCRIBE on each named topic
/// (denied: TOPIC_AUTHORIZATION_FAILED with the name and the zero id, or
/// by id with a null name and the id); a topic to auto-create also needs
/// CREATE on the cluster or the topic (denied: TOPIC_AUTHORIZATION_FAILED).
/// The request keeps the other topics.
fn authorize_request(
    ctx: &ShardContext,
    authz: &Authz<'_>,
    mut request: MetadataRequest,
    version: i16,
) -> (MetadataRequest, Denied) {
    let mut denied = Denied {
        topics: Vec::new(),
        none_left: false,
    };
    if !authz.enabled() || asks_all_topics(&request, version) {
        return (request, denied);
    }
    let snapshot = ctx.snapshot();
    let auto_create =
        ctx.config.auto_create_topics_enable && (version < 4 || request.allow_auto_topic_creation);
    let may_create_any = authz.cluster(Operation::Create);
    let mut kept = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for t in request.topics.take().into_iter().flatten() {
        let by_name = t.name.as_ref().map(|n| n.0.to_string());
        let name = by_name.clone().or_else(|| {
            snapshot
                .cluster_topic_by_id(t.topic_id)
                .map(|s| s.name.to_string())
        });
        let Some(name) = name else {
            kept.push(t);
            continue;
        };
        let refused = if !authz.topic(Operation::Describe, &name) {
            true
        } else {
            auto_create
                && by_name.is_some()
                && snapshot.cluster_topic(&name).is_none()
                && !may_create_any
                && !authz.topic(Operation::Create, &name)
        };
        if !refused {
            kept.push(t);
        } else if !seen.contains(&name) {
            seen.push(name.clone());
            let mut answer = MetadataResponseTopic::default();
            answer.error_code = ErrorCode::TOPIC_AUTHORIZATION_FAILED.0;
            answer.name = by_name.map(|n| TopicName(StrBytes::from_string(n)));
            answer.topic_id = if t.name.is_none() {
                t.topic_id
            } else {
                uuid::Uuid::nil()
            };
            answer.topic_authorized_operations = i32::MIN;
            denied.topics.push(answer);
        }
    }
    denied.none_left = kept.is_empty();
    request.topics = Some(kept);
    (request, denied)
}

/// The answer as the principal may see it: for all topics only those it
/// may DESCRIBE; the denied named topics first; the KIP-430 fields
/// from the authorizer (the cluster's 0 without DESCRIBE on it).
fn authorize_answer(
    authz: &Authz<'_>,
    response: &mut MetadataResponse,
    request: &MetadataRequest,
    version: i16,
    denied: Denied,
) {
    if !authz.enabled() {
        return;
    }
    let name_of = |t: &MetadataResponseTopic| t.name.as_ref().map(|n| n.0.to_string());
    if denied.none_left {
        response.topics.clear();
    } else if asks_all_topics(request, version) {
        response
            .topics
            .retain(|t| name_of(t).is_some_and(|n| authz.topic(Operation::Describe, &n)));
    }
    if version >= 8 && request.include_topic_authorized_operations {
        for t in &mut response.topics {
            if let Some(n) = name_of(t) {
                t.topic_authorized_operations =
                    authz.authorized_operations(ResourceType::Topic, &n);
            }
        }
    }
    if (8..=10).contains(&version) && request.include_cluster_authorized_operations {
        response.cluster_authorized_operations = if authz.cluster(Operation::Describe) {
            authz.authorized_operations(ResourceType::Cluster, crate::acl::CLUSTER_NAME)
        } else {
            0
        };
    }
    let mut topics = denied.topics;
    topics.append(&mut response.topics);
    response.topics = topics;
}

/// Decode a Metadata request, refusing topic counts larger than the body
/// and tags no Kafka schema can have (see `protocol::schema`).
pub fn decode_request(body: bytes::Bytes, version: i16) -> Result<MetadataRequest, HandlerError> {
    Ok(API.decode(body, version)?)
}

/// Kafka (KafkaApis.getTopicMetadata → createTopic) answers a topic it has
/// just auto-created with LEADER_NOT_AVAILABLE and no partitions; clients
/// (librdkafka, the Java client) retry Metadata. A topic that could not be
/// created carries the creation error (e.g. INVALID_REPLICATION_FACTOR).
fn mark_auto_created(response: &mut MetadataResponse, results: &[(String, ErrorCode)]) {
    for topic in &mut response.topics {
        let Some(name) = topic.name.as_ref().map(|n| n.0.as_str()) else {
            continue;
        };
        let Some((_, code)) = results.iter().find(|(t, _)| t == name) else {
            continue;
        };
        topic.error_code = if *code == ErrorCode::NONE {
            ErrorCode::LEADER_NOT_AVAILABLE.0
        } else {
            code.0
        };
        topic.partitions.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::schema::schema_fuzz_test;
    use kafka_protocol::messages::metadata_request::MetadataRequestTopic;

    #[test]
    fn the_schema_covers_every_version_exactly() {
        API.assert_schema_covers_every_version(|v| {
            let topic = MetadataRequestTopic::default()
                .with_name(Some(TopicName(StrBytes::from_static_str("t"))));
            MetadataRequest::default()
                .with_topics(Some(vec![topic]))
                // true is the field's default, the only value v0-v3 carry.
                .with_allow_auto_topic_creation(true)
                .with_include_cluster_authorized_operations((8..=10).contains(&v))
                .with_include_topic_authorized_operations(v >= 8)
        });
    }

    #[test]
    fn a_v13_request_with_a_tag_past_i32_max_is_refused() {
        // Null topics, the two flags, then three tagged fields: tags 0 and
        // 77462653, and one whose 5-byte varint reads 0xa1_0820c1 — a
        // negative i32 tag. The crate kept it but never wrote it back, so
        // the request did not round-trip (found by fuzzing).
        let body = [
            0x00, 0x61, 0x01, 0x03, 0x00, 0x00, 0xfd, 0xf8, 0xf7, 0x24, 0x07, 0x07, 0x07, 0x5b,
            0x07, 0x07, 0x07, 0x07, 0xc1, 0xc1, 0xc1, 0xff, 0x6a, 0x07, 0xf2, 0xf2, 0xf2, 0xd2,
            0xf2, 0xf2, 0x07,
        ];
        let refused = decode_request(bytes::Bytes::copy_from_slice(&body), 13);
        assert!(
            matches!(refused, Err(HandlerError::Malformed(_))),
            "{refused:?}"
        );
        // The same without the third field decodes.
        let mut ok = body[..18].to_vec();
        ok[3] = 0x02;
        assert!(decode_request(bytes::Bytes::from(ok), 13).is_ok());
    }

    schema_fuzz_test!(API, MetadataRequest);
}
