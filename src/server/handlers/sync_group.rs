//! `[drv]` SyncGroup (key 14), v0–v5: the leader's assignment in, each
//! member's part out (run by the group's coordinator).

use std::rc::Rc;

use bytes::Bytes;
use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::sync_group_request::SyncGroupRequest;
use kafka_protocol::messages::sync_group_response::SyncGroupResponse;
use kafka_protocol::messages::ApiKey;

use super::authz::Authz;
use super::group_common::{ask_authorized, opt_text, str_bytes, text};
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::group::coordinator::{Answer, SyncAnswer, SyncRequest};
use crate::protocol::encode::encode;
use crate::protocol::schema::{CheckedApi, Field, Schema, INT32};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::group::group_host::GroupCall;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::SyncGroup, 0, 5);

/// SyncGroupRequest.json: group_id, generation_id, member_id,
/// group_instance_id (v3+), protocol_type and protocol_name (v5+),
/// assignments [member_id, assignment].
const SCHEMA: &[Field] = &[
    Field::Str,
    INT32,
    Field::Str,
    Field::Since(3, &Field::Str),
    Field::Since(5, &Field::Str),
    Field::Since(5, &Field::Str),
    Field::Structs(&[Field::Str, Field::Bytes]),
];

pub const API: CheckedApi = CheckedApi {
    versions: VERSIONS,
    first_flexible: 4,
    schema: Schema::Fixed(SCHEMA),
};

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        // Kafka's KafkaApis: READ on the group.
        let authz = Authz::new(&ctx, &req);
        let r: SyncGroupRequest = API.decode(req.body, version)?;
        let sync = SyncRequest {
            group_id: text(&r.group_id.0),
            generation: r.generation_id,
            member_id: text(&r.member_id),
            group_instance_id: opt_text(&r.group_instance_id),
            protocol_type: opt_text(&r.protocol_type),
            protocol_name: opt_text(&r.protocol_name),
            assignments: r
                .assignments
                .iter()
                .map(|a| (text(&a.member_id), a.assignment.to_vec()))
                .collect(),
        };
        let group_id = sync.group_id.clone();
        let answer = match ask_authorized(
            &ctx,
            &authz,
            Operation::Read,
            &group_id,
            GroupCall::Sync(sync),
        )
        .await
        {
            Ok(Answer::Sync(a)) => a,
            Ok(_) => SyncAnswer::error(ErrorCode::UNKNOWN_SERVER_ERROR),
            Err(e) => SyncAnswer::error(e),
        };
        let mut response = SyncGroupResponse::default();
        response.error_code = answer.error.0;
        // SyncGroupResponse.json: protocol type and name from v5.
        if version >= 5 {
            response.protocol_type = answer.protocol_type.map(str_bytes);
            response.protocol_name = answer.protocol_name.map(str_bytes);
        }
        response.assignment = Bytes::from(answer.assignment);
        let body = encode(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::schema::schema_fuzz_test;
    use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
    use kafka_protocol::messages::GroupId;

    #[test]
    fn the_schema_covers_every_version_exactly() {
        API.assert_schema_covers_every_version(|v| {
            SyncGroupRequest::default()
                .with_group_id(GroupId(str_bytes("g")))
                .with_generation_id(3)
                .with_member_id(str_bytes("m"))
                .with_group_instance_id((v >= 3).then(|| str_bytes("i")))
                .with_protocol_type((v >= 5).then(|| str_bytes("consumer")))
                .with_protocol_name((v >= 5).then(|| str_bytes("range")))
                .with_assignments(vec![SyncGroupRequestAssignment::default()
                    .with_member_id(str_bytes("m"))
                    .with_assignment(Bytes::from_static(b"a"))])
        });
    }

    schema_fuzz_test!(API, SyncGroupRequest);
}
