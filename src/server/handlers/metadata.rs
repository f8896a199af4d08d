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
use crate::protocol::decode::{check_array_len, decode_body};
use crate::protocol::encode::encode;
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::auto_create::request_auto_create;
use crate::server::out::OutPart;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::Metadata, 0, 13);

/// First version with flexible (compact) encoding.
const FIRST_FLEXIBLE: i16 = 9;

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let request = decode_request(req.body, version)?;
        let auto_create = ctx.config.auto_create_topics_enable;
        let mut answer = metadata_response(&ctx.snapshot(), &request, version, auto_create);
        if !answer.auto_create_candidates.is_empty() {
            let topics = std::mem::take(&mut answer.auto_create_candidates);
            // The control shard owns topic creation and answers once the
            // new topics are in our snapshot.
            if let Some(results) = request_auto_create(&ctx, topics).await {
                answer = metadata_response(&ctx.snapshot(), &request, version, false);
                mark_auto_created(&mut answer.response, &results);
            }
        }
        let body = encode(&answer.response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

/// Decode a Metadata request, refusing topic counts larger than the body
/// (see `protocol::decode`).
pub fn decode_request(
    mut body: bytes::Bytes,
    version: i16,
) -> Result<MetadataRequest, HandlerError> {
    check_array_len(&body, 0, version >= FIRST_FLEXIBLE)
        .map_err(|e| HandlerError::Malformed(e.to_string()))?;
    decode_body(&mut body, version).map_err(|e| HandlerError::Malformed(e.to_string()))
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
