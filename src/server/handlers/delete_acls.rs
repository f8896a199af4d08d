//! `[drv]` DeleteAcls (key 31), v0–3 (flexible from v2), as Kafka 3.9's
//! `AclApis.handleDeleteAcls` + `AclAuthorizer.deleteAcls` (`kafka-acls
//! --remove`): ALTER on the cluster first (every filter result
//! CLUSTER_AUTHORIZATION_FAILED), SECURITY_DISABLED in every filter result
//! without an authorizer, else the control shard removes every matching
//! binding from the store and answers, per filter, the bindings removed.

use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::ApiKey;
use kafka_protocol_39::messages::delete_acls_request::DeleteAclsRequest;
use kafka_protocol_39::messages::delete_acls_response::{
    DeleteAclsFilterResult, DeleteAclsMatchingAcl, DeleteAclsResponse,
};

use super::acl_common::{binding_filter, WireFilter};
use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::{AclBinding, Operation};
use crate::protocol::schema::{decode_checked_39, encode_39, Field, INT8};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::control::control_shard::acls::{AclCall, AclReply, Removed};
use crate::shard::ShardContext;
use kafka_protocol_39::protocol::StrBytes;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::DeleteAcls, 0, 3);

/// DeleteAclsRequest.json: filters [resource type, name, pattern type
/// (v1+), principal, host, operation, permission type].
const SCHEMA: &[Field] = &[Field::Structs(&[
    INT8,
    Field::Str,
    Field::Since(1, &INT8),
    Field::Str,
    Field::Str,
    INT8,
    INT8,
])];

/// Flexible versions (compact strings, tagged fields) from v2.
const FIRST_FLEXIBLE: i16 = 2;

fn str_bytes(s: impl Into<String>) -> StrBytes {
    StrBytes::from_string(s.into())
}

/// Per filter: its error, or the bindings it removed.
type Results = Vec<Result<Removed, (ErrorCode, String)>>;

/// The request, its arrays bounded by the bytes left (the schema walk)
/// before the codec allocates them.
pub fn decode_request(
    body: bytes::Bytes,
    version: i16,
) -> Result<DeleteAclsRequest, crate::protocol::decode::DecodeError> {
    decode_checked_39(body, SCHEMA, version, version >= FIRST_FLEXIBLE)
}

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let r = decode_request(req.body.clone(), version)?;
        let mut filters = Vec::with_capacity(r.filters.len());
        for f in &r.filters {
            let wire = WireFilter {
                resource_type: f.resource_type_filter,
                resource_name: f.resource_name_filter.as_ref().map(|s| s.as_str()),
                pattern_type: f.pattern_type_filter,
                principal: f.principal_filter.as_ref().map(|s| s.as_str()),
                host: f.host_filter.as_ref().map(|s| s.as_str()),
                operation: f.operation,
                permission: f.permission_type,
            };
            filters.push(binding_filter(&wire, version).map_err(HandlerError::Malformed)?);
        }
        let authz = Authz::new(&ctx, &req);
        let every = |code: ErrorCode, message: &str| -> Results {
            vec![Err((code, message.to_owned())); filters.len()]
        };
        let results = if !authz.cluster(Operation::Alter) {
            every(
                ErrorCode::CLUSTER_AUTHORIZATION_FAILED,
                "Cluster authorization failed.",
            )
        } else if !authz.enabled() {
            every(ErrorCode::SECURITY_DISABLED, "No Authorizer is configured.")
        } else if filters.is_empty() {
            Vec::new()
        } else {
            let n = filters.len();
            match ctx.control_client().acls(AclCall::Delete(filters)).await {
                Ok(AclReply::Deleted(per_filter)) if per_filter.len() == n => {
                    per_filter.into_iter().map(Ok).collect()
                }
                _ => vec![Err((ErrorCode::UNKNOWN_SERVER_ERROR, String::new())); n],
            }
        };
        Ok(Response::Body(vec![OutPart::Bytes(encode_response(
            &results, version,
        )?)]))
    })
}

fn matching_acl(b: &AclBinding, error: &Option<(ErrorCode, String)>) -> DeleteAclsMatchingAcl {
    let m = DeleteAclsMatchingAcl::default()
        .with_resource_type(b.pattern.resource_type.code())
        .with_resource_name(str_bytes(b.pattern.name.clone()))
        .with_pattern_type(b.pattern.pattern_type.code())
        .with_principal(str_bytes(b.entry.principal.clone()))
        .with_host(str_bytes(b.entry.host.clone()))
        .with_operation(b.entry.operation.code())
        .with_permission_type(b.entry.permission.code());
    match error {
        Some((code, message)) => m
            .with_error_code(code.0)
            .with_error_message(Some(str_bytes(message.clone()))),
        None => m,
    }
}

fn encode_response(results: &Results, version: i16) -> Result<bytes::Bytes, HandlerError> {
    let response = DeleteAclsResponse::default().with_filter_results(
        results
            .iter()
            .map(|r| match r {
                Ok(removed) => DeleteAclsFilterResult::default()
                    .with_matching_acls(removed.iter().map(|(b, e)| matching_acl(b, e)).collect()),
                Err((code, message)) => DeleteAclsFilterResult::default()
                    .with_error_code(code.0)
                    .with_error_message(Some(str_bytes(message.clone()))),
            })
            .collect(),
    );
    encode_39(&response, version).map_err(HandlerError::Encode)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::{AccessControlEntry, Permission, ResourcePattern, ResourceType};
    use kafka_protocol_39::messages::delete_acls_request::DeleteAclsFilter;
    use kafka_protocol_39::protocol::Decodable;

    #[test]
    fn the_schema_covers_every_version_exactly() {
        super::super::acl_common::assert_schema_round_trips(SCHEMA, |_| {
            DeleteAclsRequest::default().with_filters(vec![DeleteAclsFilter::default()
                .with_resource_type_filter(2)
                .with_resource_name_filter(Some(str_bytes("t")))
                .with_pattern_type_filter(3)
                .with_principal_filter(None)
                .with_host_filter(Some(str_bytes("*")))
                .with_operation(1)
                .with_permission_type(1)])
        });
    }

    #[test]
    fn filter_results_list_the_removed_bindings() {
        let b = AclBinding {
            pattern: ResourcePattern::literal(ResourceType::Topic, "t"),
            entry: AccessControlEntry {
                principal: "User:a".into(),
                host: "*".into(),
                operation: Operation::Write,
                permission: Permission::Allow,
            },
        };
        let results: Results = vec![
            Ok(vec![(b, None)]),
            Err((ErrorCode::CLUSTER_AUTHORIZATION_FAILED, "no".into())),
        ];
        for v in 0..=3 {
            let mut body = encode_response(&results, v).unwrap();
            let r = DeleteAclsResponse::decode(&mut body, v).unwrap();
            assert_eq!(r.filter_results[0].matching_acls[0].operation, 4);
            assert_eq!(
                r.filter_results[1].error_code,
                ErrorCode::CLUSTER_AUTHORIZATION_FAILED.0
            );
        }
    }
}
