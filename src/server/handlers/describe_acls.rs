//! `[drv]` DescribeAcls (key 29), v0–3 (flexible from v2): the ACLs a
//! filter matches, from this shard's copy of the authorizer's cache, as
//! Kafka 3.9's `AclApis.handleDescribeAcls` answers (`kafka-acls --list`):
//! DESCRIBE on the cluster first (CLUSTER_AUTHORIZATION_FAILED for the
//! whole request), SECURITY_DISABLED "No Authorizer is configured on the
//! broker" without an authorizer, else the bindings grouped by pattern
//! (`DescribeAclsResponse.aclsResources`).

use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::ApiKey;
use kafka_protocol_39::messages::describe_acls_request::DescribeAclsRequest;
use kafka_protocol_39::messages::describe_acls_response::{
    AclDescription, DescribeAclsResource, DescribeAclsResponse,
};

use super::acl_common::{binding_filter, WireFilter};
use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::filter;
use crate::acl::{AccessControlEntry, Operation, ResourcePattern};
use crate::protocol::schema::{decode_checked_39, encode_39, Field, INT8};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::ShardContext;
use kafka_protocol_39::protocol::StrBytes;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::DescribeAcls, 0, 3);

/// DescribeAclsRequest.json: resource type, name, pattern type (v1+),
/// principal, host, operation, permission type.
const SCHEMA: &[Field] = &[
    INT8,
    Field::Str,
    Field::Since(1, &INT8),
    Field::Str,
    Field::Str,
    INT8,
    INT8,
];

/// Flexible versions (compact strings, tagged fields) from v2.
const FIRST_FLEXIBLE: i16 = 2;

fn str_bytes(s: impl Into<String>) -> StrBytes {
    StrBytes::from_string(s.into())
}

type Answer = Result<Vec<(ResourcePattern, Vec<AccessControlEntry>)>, (ErrorCode, String)>;

/// The request, its arrays bounded by the bytes left (the schema walk)
/// before the codec allocates them.
pub fn decode_request(
    body: bytes::Bytes,
    version: i16,
) -> Result<DescribeAclsRequest, crate::protocol::decode::DecodeError> {
    decode_checked_39(body, SCHEMA, version, version >= FIRST_FLEXIBLE)
}

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let r = decode_request(req.body.clone(), version)?;
        let wire = WireFilter {
            resource_type: r.resource_type_filter,
            resource_name: r.resource_name_filter.as_ref().map(|s| s.as_str()),
            pattern_type: r.pattern_type_filter,
            principal: r.principal_filter.as_ref().map(|s| s.as_str()),
            host: r.host_filter.as_ref().map(|s| s.as_str()),
            operation: r.operation,
            permission: r.permission_type,
        };
        let f = binding_filter(&wire, version).map_err(HandlerError::Malformed)?;
        let authz = Authz::new(&ctx, &req);
        let answer: Answer = if !authz.cluster(Operation::Describe) {
            Err((
                ErrorCode::CLUSTER_AUTHORIZATION_FAILED,
                "Cluster authorization failed.".into(),
            ))
        } else if !authz.enabled() {
            Err((
                ErrorCode::SECURITY_DISABLED,
                "No Authorizer is configured on the broker".into(),
            ))
        } else {
            Ok(filter::describe(&ctx.snapshot().acls, &f))
        };
        Ok(Response::Body(vec![OutPart::Bytes(encode_response(
            &answer, version,
        )?)]))
    })
}

fn encode_response(answer: &Answer, version: i16) -> Result<bytes::Bytes, HandlerError> {
    let response = match answer {
        Err((code, message)) => DescribeAclsResponse::default()
            .with_error_code(code.0)
            .with_error_message(Some(str_bytes(message.clone()))),
        Ok(resources) => DescribeAclsResponse::default().with_resources(
            resources
                .iter()
                .map(|(p, entries)| {
                    DescribeAclsResource::default()
                        .with_resource_type(p.resource_type.code())
                        .with_resource_name(str_bytes(p.name.clone()))
                        .with_pattern_type(p.pattern_type.code())
                        .with_acls(
                            entries
                                .iter()
                                .map(|e| {
                                    AclDescription::default()
                                        .with_principal(str_bytes(e.principal.clone()))
                                        .with_host(str_bytes(e.host.clone()))
                                        .with_operation(e.operation.code())
                                        .with_permission_type(e.permission.code())
                                })
                                .collect(),
                        )
                })
                .collect(),
        ),
    };
    encode_39(&response, version).map_err(HandlerError::Encode)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol_39::protocol::Decodable;

    #[test]
    fn the_schema_covers_every_version_exactly() {
        super::super::acl_common::assert_schema_round_trips(SCHEMA, |_| {
            DescribeAclsRequest::default()
                .with_resource_type_filter(2)
                .with_resource_name_filter(Some(str_bytes("t")))
                .with_pattern_type_filter(3)
                .with_principal_filter(Some(str_bytes("User:a")))
                .with_host_filter(None)
                .with_operation(1)
                .with_permission_type(1)
        });
    }

    #[test]
    fn answers_group_entries_by_pattern_or_carry_the_error() {
        let p = ResourcePattern::prefixed(crate::acl::ResourceType::Group, "app-");
        let e = AccessControlEntry {
            principal: "User:alice".into(),
            host: "*".into(),
            operation: Operation::Read,
            permission: crate::acl::Permission::Allow,
        };
        for v in 0..=3 {
            // v0 filters are LITERAL only, so its answers hold no prefix.
            let p = if v == 0 {
                ResourcePattern::literal(crate::acl::ResourceType::Group, "app-")
            } else {
                p.clone()
            };
            let mut body = encode_response(&Ok(vec![(p, vec![e.clone()])]), v).unwrap();
            let r = DescribeAclsResponse::decode(&mut body, v).unwrap();
            assert_eq!(r.resources[0].resource_name.as_str(), "app-");
            assert_eq!(r.resources[0].acls[0].operation, 3);
            let mut body = encode_response(
                &Err((ErrorCode::SECURITY_DISABLED, "No Authorizer".into())),
                v,
            )
            .unwrap();
            let r = DescribeAclsResponse::decode(&mut body, v).unwrap();
            assert_eq!(r.error_code, ErrorCode::SECURITY_DISABLED.0);
        }
    }
}
