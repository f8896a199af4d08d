//! `[drv]` DescribeCluster (key 60), v0–v1 (Kafka 3.9's range; v2 is
//! KRaft's fenced-broker listing, KIP-1073): the brokers, controller id and
//! cluster id of this shard's snapshot (`metadata::answers`).

use std::rc::Rc;

use bytes::Bytes;
use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::describe_cluster_request::DescribeClusterRequest;
use kafka_protocol::messages::ApiKey;

use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::metadata::answers::describe_cluster_response;
use crate::protocol::decode::DecodeError;
use crate::protocol::encode::encode;
use crate::protocol::schema::{CheckedApi, Field, Schema, BOOL, INT8};
use crate::protocol::ApiRange;
use crate::server::out::OutPart;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::DescribeCluster, 0, 1);

/// DescribeClusterRequest.json: IncludeClusterAuthorizedOperations, then
/// EndpointType from v1; flexible from v0. No arrays: the walk checks the
/// tagged fields (see `controlled_shutdown::decode_request`).
pub const API: CheckedApi = CheckedApi {
    versions: VERSIONS,
    first_flexible: 0,
    schema: Schema::Fixed(&[BOOL, Field::Since(1, &INT8)]),
};

/// Decode a DescribeCluster request.
pub fn decode_request(body: Bytes, version: i16) -> Result<DescribeClusterRequest, DecodeError> {
    API.decode(body, version)
}

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let request = decode_request(req.body.clone(), version)?;
        let mut response =
            describe_cluster_response(&ctx.snapshot(), &request, version, &req.listener);
        // Kafka's handleDescribeCluster: no authorization; the cluster's
        // authorized operations (if asked) are 0 without DESCRIBE on it.
        let authz = Authz::new(&ctx, &req);
        if authz.enabled() && request.include_cluster_authorized_operations {
            response.cluster_authorized_operations = if authz.cluster(Operation::Describe) {
                authz.authorized_operations(
                    crate::acl::ResourceType::Cluster,
                    crate::acl::CLUSTER_NAME,
                )
            } else {
                0
            };
        }
        let body = encode(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::schema::schema_fuzz_test;

    #[test]
    fn the_schema_covers_every_version_exactly() {
        API.assert_schema_covers_every_version(|_| {
            DescribeClusterRequest::default()
                .with_include_cluster_authorized_operations(true)
                .with_endpoint_type(1)
        });
    }

    /// See `init_producer_id`'s test of the same name.
    #[test]
    fn an_overlong_tag_varint_is_refused() {
        let body = [1, 1, 0xe0, 0xff, 0xff, 0xff, 0xff, 0x01, 0x00];
        assert!(decode_request(Bytes::copy_from_slice(&body), 0).is_err());
        assert!(decode_request(Bytes::copy_from_slice(&[1, 0]), 0).is_ok());
    }

    schema_fuzz_test!(API, DescribeClusterRequest);
}
