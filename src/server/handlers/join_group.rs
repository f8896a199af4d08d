//! `[drv]` JoinGroup (key 11), v0–v9: decoded here, run by the group's
//! coordinator (`group::coordinator`), which answers when the rebalance
//! completes.

use std::rc::Rc;

use bytes::Bytes;
use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::join_group_request::JoinGroupRequest;
use kafka_protocol::messages::join_group_response::{JoinGroupResponse, JoinGroupResponseMember};
use kafka_protocol::messages::ApiKey;

use super::authz::Authz;
use super::group_common::{ask_authorized, new_member_id, opt_text, str_bytes, text};
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::group::coordinator::{Answer, JoinAnswer, JoinRequest};
use crate::protocol::encode::encode;
use crate::protocol::schema::{CheckedApi, Field, Schema, INT32};
use crate::protocol::ApiRange;
use crate::server::out::OutPart;
use crate::shard::group::group_host::GroupCall;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::JoinGroup, 0, 9);

/// JoinGroupRequest.json: group_id, session_timeout_ms, rebalance_timeout_ms
/// (v1+), member_id, group_instance_id (v5+), protocol_type, protocols
/// [name, metadata], reason (v8+).
const SCHEMA: &[Field] = &[
    Field::Str,
    INT32,
    Field::Since(1, &INT32),
    Field::Str,
    Field::Since(5, &Field::Str),
    Field::Str,
    Field::Structs(&[Field::Str, Field::Bytes]),
    Field::Since(8, &Field::Str),
];

pub const API: CheckedApi = CheckedApi {
    versions: VERSIONS,
    first_flexible: 6,
    schema: Schema::Fixed(SCHEMA),
};

/// First version with MEMBER_ID_REQUIRED (KIP-394).
const FIRST_KNOWN_MEMBER_ID: i16 = 4;

/// First version with `skip_assignment` (KIP-814).
const FIRST_SKIP_ASSIGNMENT: i16 = 9;

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        // Kafka's KafkaApis: READ on the group.
        let authz = Authz::new(&ctx, &req);
        let r: JoinGroupRequest = API.decode(req.body, version)?;
        let client_id = req.header.client_id.clone().unwrap_or_default();
        let instance = opt_text(&r.group_instance_id);
        let join = JoinRequest {
            group_id: text(&r.group_id.0),
            member_id: text(&r.member_id),
            new_member_id: new_member_id(&client_id, instance.as_deref()),
            group_instance_id: instance,
            client_id,
            client_host: req.client_host.to_string(),
            session_timeout_ms: r.session_timeout_ms,
            // v0 has no rebalance timeout: the session timeout stands in.
            rebalance_timeout_ms: if version >= 1 {
                r.rebalance_timeout_ms
            } else {
                r.session_timeout_ms
            },
            protocol_type: text(&r.protocol_type),
            protocols: r
                .protocols
                .iter()
                .map(|p| (text(&p.name), p.metadata.to_vec()))
                .collect(),
            require_known_member_id: version >= FIRST_KNOWN_MEMBER_ID,
            supports_skip_assignment: version >= FIRST_SKIP_ASSIGNMENT,
        };
        let group_id = join.group_id.clone();
        let member_id = join.member_id.clone();
        let answer = match ask_authorized(
            &ctx,
            &authz,
            Operation::Read,
            &group_id,
            GroupCall::Join(join),
        )
        .await
        {
            Ok(Answer::Join(a)) => a,
            Ok(_) => {
                JoinAnswer::error(&member_id, crate::protocol::ErrorCode::UNKNOWN_SERVER_ERROR)
            }
            // JoinGroupRequest.getErrorResponse: the unknown member id.
            Err(e) if e == crate::protocol::ErrorCode::GROUP_AUTHORIZATION_FAILED => {
                JoinAnswer::error("", e)
            }
            Err(e) => JoinAnswer::error(&member_id, e),
        };
        let mut response = JoinGroupResponse::default();
        response.error_code = answer.error.0;
        response.generation_id = answer.generation;
        // Fields by version (JoinGroupResponse.json): protocol_type v7+.
        response.protocol_type = answer.protocol_type.map(str_bytes).filter(|_| version >= 7);
        // Before v7 the name is not nullable: "" stands for none.
        response.protocol_name = Some(str_bytes(answer.protocol_name.unwrap_or_default()))
            .filter(|n| version < 7 || !n.is_empty());
        response.leader = str_bytes(answer.leader);
        response.skip_assignment = answer.skip_assignment && version >= FIRST_SKIP_ASSIGNMENT;
        response.member_id = str_bytes(answer.member_id);
        response.members = answer
            .members
            .into_iter()
            .map(|m| {
                let mut out = JoinGroupResponseMember::default();
                out.member_id = str_bytes(m.member_id);
                out.group_instance_id = m.group_instance_id.map(str_bytes).filter(|_| version >= 5);
                out.metadata = Bytes::from(m.metadata);
                out
            })
            .collect();
        let body = encode(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::schema::schema_fuzz_test;
    use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
    use kafka_protocol::messages::GroupId;

    #[test]
    fn the_schema_covers_every_version_exactly() {
        API.assert_schema_covers_every_version(|v| {
            JoinGroupRequest::default()
                .with_group_id(GroupId(str_bytes("g")))
                .with_session_timeout_ms(10_000)
                .with_rebalance_timeout_ms(30_000)
                .with_member_id(str_bytes("m"))
                .with_group_instance_id((v >= 5).then(|| str_bytes("i")))
                .with_protocol_type(str_bytes("consumer"))
                .with_protocols(vec![JoinGroupRequestProtocol::default()
                    .with_name(str_bytes("range"))
                    .with_metadata(Bytes::from_static(b"meta"))])
                .with_reason((v >= 8).then(|| str_bytes("r")))
        });
    }

    schema_fuzz_test!(API, JoinGroupRequest);
}
