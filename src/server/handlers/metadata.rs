//! `[drv]` Metadata (key 3), every version the codec knows (v0–v13),
//! answered from this shard's snapshot.
//!
//! Topics that do not exist go to the auto-create hook on the control shard
//! (`auto.create.topics.enable`); the answer is then rebuilt from whatever
//! snapshot is current.

use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::metadata_request::MetadataRequest;
use kafka_protocol::messages::ApiKey;

use crate::metadata::answers::{encode, metadata_response};
use crate::protocol::decode::{check_array_len, decode_body};
use crate::protocol::ApiRange;
use crate::server::dispatch::{HandlerError, Request, Response};
use crate::server::OutPart;
use crate::shard::{ShardContext, ShardRequest, ShardResponse};

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
            // Hook: the control shard owns topic creation. Whatever it did,
            // answer from the snapshot current now (Kafka answers
            // LEADER_NOT_AVAILABLE while a new topic's leaders are elected).
            match ctx
                .call(
                    ctx.control_peer(),
                    ShardRequest::AutoCreateTopics { topics },
                )
                .await
            {
                Ok(ShardResponse::AutoCreated { .. }) => {
                    answer = metadata_response(&ctx.snapshot(), &request, version, false);
                }
                Ok(other) => tracing::warn!(?other, "unexpected auto-create answer"),
                Err(e) => tracing::warn!(error = %e, "auto-create hook unavailable"),
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
