//! `[drv]` CreateAcls (key 30), v0–3 (flexible from v2), as Kafka 3.9's
//! `AclApis.handleCreateAcls` + `AclAuthorizer.createAcls` (`kafka-acls
//! --add`): ALTER on the cluster first (every result
//! CLUSTER_AUTHORIZATION_FAILED), SECURITY_DISABLED in every result without
//! an authorizer, the per-binding refusals (`acl_common::refusal`,
//! INVALID_REQUEST), then the valid bindings written to the store by the
//! control shard, which answers once every data shard enforces them.

use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::ApiKey;
use kafka_protocol_39::messages::create_acls_request::CreateAclsRequest;
use kafka_protocol_39::messages::create_acls_response::{AclCreationResult, CreateAclsResponse};

use super::acl_common::{creation, refusal, WireCreation};
use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::protocol::schema::{decode_checked_39, encode_39, Field, INT8};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::control::control_shard::acls::{AclCall, AclReply};
use crate::shard::ShardContext;
use kafka_protocol_39::protocol::StrBytes;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::CreateAcls, 0, 3);

/// CreateAclsRequest.json: creations [resource type, name, pattern type
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

type Results = Vec<Result<(), (ErrorCode, String)>>;

/// The request, its arrays bounded by the bytes left (the schema walk)
/// before the codec allocates them.
pub fn decode_request(
    body: bytes::Bytes,
    version: i16,
) -> Result<CreateAclsRequest, crate::protocol::decode::DecodeError> {
    decode_checked_39(body, SCHEMA, version, version >= FIRST_FLEXIBLE)
}

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let r = decode_request(req.body.clone(), version)?;
        let mut bindings = Vec::with_capacity(r.creations.len());
        for c in &r.creations {
            let wire = WireCreation {
                resource_type: c.resource_type,
                resource_name: c.resource_name.as_str(),
                pattern_type: c.resource_pattern_type,
                principal: c.principal.as_str(),
                host: c.host.as_str(),
                operation: c.operation,
                permission: c.permission_type,
            };
            bindings.push(creation(&wire, version).map_err(HandlerError::Malformed)?);
        }
        let authz = Authz::new(&ctx, &req);
        let every = |code: ErrorCode, message: &str| -> Results {
            vec![Err((code, message.to_owned())); bindings.len()]
        };
        let results = if !authz.cluster(Operation::Alter) {
            every(
                ErrorCode::CLUSTER_AUTHORIZATION_FAILED,
                "Cluster authorization failed.",
            )
        } else if !authz.enabled() {
            every(ErrorCode::SECURITY_DISABLED, "No Authorizer is configured.")
        } else {
            create(&ctx, &bindings).await
        };
        Ok(Response::Body(vec![OutPart::Bytes(encode_response(
            &results, version,
        )?)]))
    })
}

/// The refused bindings answered at once, the rest sent to the control
/// shard in one call.
async fn create(ctx: &ShardContext, bindings: &[crate::acl::AclBinding]) -> Results {
    let mut results: Results = bindings
        .iter()
        .map(|b| refusal(b).map_or(Ok(()), Err))
        .collect();
    let valid: Vec<usize> = (0..bindings.len())
        .filter(|i| results[*i].is_ok())
        .collect();
    if valid.is_empty() {
        return results;
    }
    let call = AclCall::Create(valid.iter().map(|i| bindings[*i].clone()).collect());
    match ctx.control_client().acls(call).await {
        Ok(AclReply::Created(created)) if created.len() == valid.len() => {
            for (i, r) in valid.into_iter().zip(created) {
                results[i] = r;
            }
        }
        _ => {
            for i in valid {
                results[i] = Err((ErrorCode::UNKNOWN_SERVER_ERROR, String::new()));
            }
        }
    }
    results
}

fn encode_response(results: &Results, version: i16) -> Result<bytes::Bytes, HandlerError> {
    let response = CreateAclsResponse::default().with_results(
        results
            .iter()
            .map(|r| match r {
                Ok(()) => AclCreationResult::default(),
                Err((code, message)) => AclCreationResult::default()
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
    use kafka_protocol_39::messages::create_acls_request::AclCreation;
    use kafka_protocol_39::protocol::Decodable;

    #[test]
    fn the_schema_covers_every_version_exactly() {
        super::super::acl_common::assert_schema_round_trips(SCHEMA, |_| {
            CreateAclsRequest::default().with_creations(vec![AclCreation::default()
                .with_resource_type(2)
                .with_resource_name(str_bytes("t"))
                .with_resource_pattern_type(3)
                .with_principal(str_bytes("User:a"))
                .with_host(str_bytes("*"))
                .with_operation(3)
                .with_permission_type(3)])
        });
    }

    #[test]
    fn results_carry_each_bindings_error() {
        let results: Results = vec![Ok(()), Err((ErrorCode::INVALID_REQUEST, "x".into()))];
        for v in 0..=3 {
            let mut body = encode_response(&results, v).unwrap();
            let r = CreateAclsResponse::decode(&mut body, v).unwrap();
            assert_eq!(r.results[0].error_code, 0);
            assert_eq!(r.results[1].error_code, ErrorCode::INVALID_REQUEST.0);
        }
    }
}
