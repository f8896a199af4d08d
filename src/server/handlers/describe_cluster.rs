//! `[drv]` DescribeCluster (key 60), v0–v1 (Kafka 3.9's range; v2 is
//! KRaft's fenced-broker listing, KIP-1073): the brokers, controller id and
//! cluster id of this shard's snapshot (`metadata::answers`).

use std::rc::Rc;

use bytes::Bytes;
use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::describe_cluster_request::DescribeClusterRequest;
use kafka_protocol::messages::ApiKey;

use super::{HandlerError, Request, Response};
use crate::metadata::answers::describe_cluster_response;
use crate::protocol::decode::{decode_body, DecodeError};
use crate::protocol::encode::encode;
use crate::protocol::ApiRange;
use crate::server::out::OutPart;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::DescribeCluster, 0, 1);

/// Decode a DescribeCluster request. It has no arrays: the crate's decode
/// allocates nothing from the wire.
pub fn decode_request(
    mut body: Bytes,
    version: i16,
) -> Result<DescribeClusterRequest, DecodeError> {
    decode_body(&mut body, version)
}

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let request = decode_request(req.body, version)?;
        let response = describe_cluster_response(&ctx.snapshot(), &request, version);
        let body = encode(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}
