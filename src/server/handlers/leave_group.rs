//! `[drv]` LeaveGroup (key 13), v0–v5: one member (v0–v2) or a batch of
//! members by id or `group.instance.id` (v3+, KIP-345).

use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::leave_group_request::LeaveGroupRequest;
use kafka_protocol::messages::leave_group_response::{LeaveGroupResponse, MemberResponse};
use kafka_protocol::messages::ApiKey;

use super::authz::Authz;
use super::group_common::{ask_authorized, opt_text, str_bytes, text};
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::group::coordinator::{Answer, LeaveRequest};
use crate::protocol::encode::encode;
use crate::protocol::schema::{CheckedApi, Field, Schema};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::group::group_host::GroupCall;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::LeaveGroup, 0, 5);

/// First version with a batch of members (KIP-345).
const FIRST_BATCH: i16 = 3;

/// LeaveGroupRequest.json: group_id, then member_id (v0–v2) or members
/// [member_id, group_instance_id, reason (v5+)] (v3+).
fn schema(version: i16) -> &'static [Field] {
    const SINGLE: &[Field] = &[Field::Str, Field::Str];
    const BATCH: &[Field] = &[
        Field::Str,
        Field::Structs(&[Field::Str, Field::Str, Field::Since(5, &Field::Str)]),
    ];
    if version >= FIRST_BATCH {
        BATCH
    } else {
        SINGLE
    }
}

pub const API: CheckedApi = CheckedApi {
    versions: VERSIONS,
    first_flexible: 4,
    schema: Schema::PerVersion(schema),
};

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        // Kafka's KafkaApis: READ on the group.
        let authz = Authz::new(&ctx, &req);
        let r: LeaveGroupRequest = API.decode(req.body, version)?;
        let members = if version >= FIRST_BATCH {
            r.members
                .iter()
                .map(|m| (text(&m.member_id), opt_text(&m.group_instance_id)))
                .collect()
        } else {
            vec![(text(&r.member_id), None)]
        };
        let leave = LeaveRequest {
            group_id: text(&r.group_id.0),
            members,
        };
        let group_id = leave.group_id.clone();
        let mut response = LeaveGroupResponse::default();
        match ask_authorized(
            &ctx,
            &authz,
            Operation::Read,
            &group_id,
            GroupCall::Leave(leave),
        )
        .await
        {
            Ok(Answer::Leave(a)) => {
                response.error_code = a.error.0;
                if version >= FIRST_BATCH {
                    response.members = a
                        .members
                        .into_iter()
                        .map(|(m, i, e)| {
                            let mut out = MemberResponse::default();
                            out.member_id = str_bytes(m);
                            out.group_instance_id = i.map(str_bytes);
                            out.error_code = e.0;
                            out
                        })
                        .collect();
                } else if a.error == ErrorCode::NONE {
                    // One member: its error is the answer's.
                    if let Some((_, _, e)) = a.members.first() {
                        response.error_code = e.0;
                    }
                }
            }
            Ok(_) => response.error_code = ErrorCode::UNKNOWN_SERVER_ERROR.0,
            Err(e) => response.error_code = e.0,
        }
        let body = encode(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::schema::schema_fuzz_test;
    use kafka_protocol::messages::leave_group_request::MemberIdentity;
    use kafka_protocol::messages::GroupId;

    #[test]
    fn the_schema_covers_every_version_exactly() {
        API.assert_schema_covers_every_version(|v| {
            let r = LeaveGroupRequest::default().with_group_id(GroupId(str_bytes("g")));
            if v >= FIRST_BATCH {
                r.with_members(vec![MemberIdentity::default()
                    .with_member_id(str_bytes("m"))
                    .with_group_instance_id(Some(str_bytes("i")))
                    .with_reason((v >= 5).then(|| str_bytes("bye")))])
            } else {
                r.with_member_id(str_bytes("m"))
            }
        });
    }

    schema_fuzz_test!(API, LeaveGroupRequest);
}
