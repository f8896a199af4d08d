//! `[drv]` Heartbeat (key 12), v0–v4 (run by the group's coordinator).

use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::heartbeat_request::HeartbeatRequest;
use kafka_protocol::messages::heartbeat_response::HeartbeatResponse;
use kafka_protocol::messages::ApiKey;

use super::authz::Authz;
use super::group_common::{ask_authorized, opt_text, text};
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::group::coordinator::{self, Answer};
use crate::protocol::encode::encode;
use crate::protocol::schema::{CheckedApi, Field, Schema, INT32};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::group::group_host::GroupCall;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::Heartbeat, 0, 4);

/// HeartbeatRequest.json: group_id, generation_id, member_id,
/// group_instance_id (v3+).
const SCHEMA: &[Field] = &[Field::Str, INT32, Field::Str, Field::Since(3, &Field::Str)];

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
        let r: HeartbeatRequest = API.decode(req.body, version)?;
        let beat = coordinator::HeartbeatRequest {
            group_id: text(&r.group_id.0),
            generation: r.generation_id,
            member_id: text(&r.member_id),
            group_instance_id: opt_text(&r.group_instance_id),
        };
        let group_id = beat.group_id.clone();
        let error = match ask_authorized(
            &ctx,
            &authz,
            Operation::Read,
            &group_id,
            GroupCall::Heartbeat(beat),
        )
        .await
        {
            Ok(Answer::Heartbeat(e)) => e,
            Ok(_) => ErrorCode::UNKNOWN_SERVER_ERROR,
            Err(e) => e,
        };
        let mut response = HeartbeatResponse::default();
        response.error_code = error.0;
        let body = encode(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

#[cfg(test)]
mod tests {
    use super::super::group_common::str_bytes;
    use super::*;
    use crate::protocol::schema::schema_fuzz_test;
    use kafka_protocol::messages::GroupId;

    #[test]
    fn the_schema_covers_every_version_exactly() {
        API.assert_schema_covers_every_version(|v| {
            HeartbeatRequest::default()
                .with_group_id(GroupId(str_bytes("g")))
                .with_generation_id(1)
                .with_member_id(str_bytes("m"))
                .with_group_instance_id((v >= 3).then(|| str_bytes("i")))
        });
    }

    schema_fuzz_test!(API, HeartbeatRequest);
}
