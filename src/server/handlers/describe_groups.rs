//! `[drv]` DescribeGroups (key 15), v0–v5 (Kafka 3.9's range): each group
//! asked of its coordinator. An unknown group is `Dead` with no error, as
//! Kafka describes it.

use std::rc::Rc;

use bytes::Bytes;
use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::describe_groups_request::DescribeGroupsRequest;
use kafka_protocol::messages::describe_groups_response::{
    DescribeGroupsResponse, DescribedGroup, DescribedGroupMember,
};
use kafka_protocol::messages::ApiKey;

use super::authz::Authz;
use super::group_common::{ask, str_bytes, text};
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::group::coordinator::Answer;
use crate::protocol::encode::encode;
use crate::protocol::schema::{CheckedApi, Field, Schema, BOOL};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::group::group_host::GroupCall;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::DescribeGroups, 0, 5);

/// DescribeGroupsRequest.json: groups [string],
/// include_authorized_operations (v3+).
const SCHEMA: &[Field] = &[Field::StrArray, Field::Since(3, &BOOL)];

pub const API: CheckedApi = CheckedApi {
    versions: VERSIONS,
    first_flexible: 5,
    schema: Schema::Fixed(SCHEMA),
};

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let authz = Authz::new(&ctx, &req);
        let r: DescribeGroupsRequest = API.decode(req.body, version)?;
        let mut response = DescribeGroupsResponse::default();
        // Kafka 3.9's handleDescribeGroupsRequest (KafkaApis.scala) answers
        // the unauthorized groups first, then the coordinator's results.
        let mut described = Vec::new();
        for g in &r.groups {
            let group_id = text(&g.0);
            let mut out = DescribedGroup::default();
            out.group_id = g.clone();
            // Kafka's handleDescribeGroupsRequest: DESCRIBE on each group.
            if !authz.group(Operation::Describe, &group_id) {
                out.error_code = ErrorCode::GROUP_AUTHORIZATION_FAILED.0;
                out.authorized_operations = i32::MIN;
                response.groups.push(out);
                continue;
            }
            out.authorized_operations = if r.include_authorized_operations && version >= 3 {
                authz.authorized_operations(crate::acl::ResourceType::Group, &group_id)
            } else {
                i32::MIN
            };
            match ask(&ctx, &group_id, GroupCall::Describe(group_id.clone())).await {
                Ok(Answer::Describe(d)) => {
                    out.error_code = d.error.0;
                    out.group_state = str_bytes(d.state);
                    out.protocol_type = str_bytes(d.protocol_type);
                    out.protocol_data = str_bytes(d.protocol);
                    out.members = d
                        .members
                        .into_iter()
                        .map(|m| {
                            let mut x = DescribedGroupMember::default();
                            x.member_id = str_bytes(m.member_id);
                            // DescribeGroupsResponse.json: v4+.
                            x.group_instance_id =
                                m.group_instance_id.map(str_bytes).filter(|_| version >= 4);
                            x.client_id = str_bytes(m.client_id);
                            x.client_host = str_bytes(m.client_host);
                            x.member_metadata = Bytes::from(m.metadata);
                            x.member_assignment = Bytes::from(m.assignment);
                            x
                        })
                        .collect();
                }
                Ok(_) => out.error_code = ErrorCode::UNKNOWN_SERVER_ERROR.0,
                Err(e) => out.error_code = e.0,
            }
            described.push(out);
        }
        response.groups.extend(described);
        let body = encode(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::schema::schema_fuzz_test;
    use kafka_protocol::messages::GroupId;

    #[test]
    fn the_schema_covers_every_version_exactly() {
        API.assert_schema_covers_every_version(|v| {
            DescribeGroupsRequest::default()
                .with_groups(vec![GroupId(str_bytes("a")), GroupId(str_bytes("b"))])
                .with_include_authorized_operations(v >= 3)
        });
    }

    schema_fuzz_test!(API, DescribeGroupsRequest);
}
