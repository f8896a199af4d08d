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
use kafka_protocol::messages::metadata_response::MetadataResponse;
use kafka_protocol::messages::ApiKey;

use super::{HandlerError, Request, Response};
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
        let request = decode_request(req.body, version)?;
        let auto_create = ctx.config.auto_create_topics_enable;
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
        let body = encode(&answer.response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
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
    use kafka_protocol::messages::TopicName;
    use kafka_protocol::protocol::StrBytes;

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
