//! `[drv]` ApiVersions (key 18), v0–v4: the same answer on every shard.
//!
//! A request above our maximum gets a v0 response with UNSUPPORTED_VERSION
//! listing our ranges (KIP-511); the client then retries with a version we
//! speak.

use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::ApiKey;

use super::{HandlerError, Request, Response};
use crate::metadata::answers::api_versions_response;
use crate::protocol::encode::encode;
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::ApiVersions, 0, 4);

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        // The body (client software name/version, v3+) is informational;
        // the answer does not depend on it.
        let body = cached_body(&ctx, version)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

pub fn handle_unsupported_version(
    ctx: Rc<ShardContext>,
    _req: Request,
) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let resp = api_versions_response(&ctx.api_table, ErrorCode::UNSUPPORTED_VERSION);
        let body = encode(&resp, 0).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

fn cached_body(ctx: &ShardContext, version: i16) -> Result<bytes::Bytes, HandlerError> {
    let slot =
        usize::try_from(version).map_err(|_| HandlerError::Malformed("negative version".into()))?;
    if let Some(Some(body)) = ctx.api_versions_cache.borrow().get(slot) {
        return Ok(body.clone());
    }
    let resp = api_versions_response(&ctx.api_table, ErrorCode::NONE);
    let body = encode(&resp, version).map_err(HandlerError::Encode)?;
    let mut cache = ctx.api_versions_cache.borrow_mut();
    if cache.len() <= slot {
        cache.resize(slot + 1, None);
    }
    cache[slot] = Some(body.clone());
    Ok(body)
}
