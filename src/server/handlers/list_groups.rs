//! `[drv]` ListGroups (key 16), v0–v5: every data shard's coordinator is
//! asked (a broker lists the groups of the offsets partitions it leads);
//! `states_filter` (v4+, KIP-518) and `types_filter` (v5+, KIP-848: every
//! group here is "classic").

use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::list_groups_request::ListGroupsRequest;
use kafka_protocol::messages::list_groups_response::{ListGroupsResponse, ListedGroup};
use kafka_protocol::messages::{ApiKey, GroupId};

use super::authz::Authz;
use super::group_common::{str_bytes, text};
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::protocol::encode::encode;
use crate::protocol::schema::{CheckedApi, Field, Schema};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::group::group_host::{GroupCall, GroupReply};
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::ListGroups, 0, 5);

/// ListGroupsRequest.json: states_filter [string] (v4+), types_filter
/// [string] (v5+).
const SCHEMA: &[Field] = &[
    Field::Since(4, &Field::StrArray),
    Field::Since(5, &Field::StrArray),
];

pub const API: CheckedApi = CheckedApi {
    versions: VERSIONS,
    first_flexible: 3,
    schema: Schema::Fixed(SCHEMA),
};

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        // Kafka's handleListGroupsRequest: DESCRIBE on the cluster lists
        // every group, else only those the principal may DESCRIBE.
        let authz = Authz::new(&ctx, &req);
        let every_group = authz.cluster(Operation::Describe);
        let r: ListGroupsRequest = API.decode(req.body, version)?;
        let states: Vec<String> = r.states_filter.iter().map(text).collect();
        let classic = r.types_filter.is_empty()
            || r.types_filter
                .iter()
                .any(|t| t.as_str().eq_ignore_ascii_case("classic"));
        let mut response = ListGroupsResponse::default();
        if classic {
            for shard in 0..ctx.n_shards {
                match ctx
                    .group_driver()
                    .ask_shard_group(shard, GroupCall::List(states.clone()))
                    .await
                {
                    GroupReply::List(error, groups) => {
                        if error != ErrorCode::NONE && response.error_code == 0 {
                            response.error_code = error.0;
                        }
                        for g in groups {
                            if !every_group && !authz.group(Operation::Describe, &g.group_id) {
                                continue;
                            }
                            let mut out = ListedGroup::default();
                            out.group_id = GroupId(str_bytes(g.group_id));
                            out.protocol_type = str_bytes(g.protocol_type);
                            out.group_state = str_bytes(g.state);
                            if version >= 5 {
                                out.group_type = str_bytes("classic");
                            }
                            response.groups.push(out);
                        }
                    }
                    _ => response.error_code = ErrorCode::COORDINATOR_NOT_AVAILABLE.0,
                }
            }
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
        API.assert_schema_covers_every_version(|v| {
            ListGroupsRequest::default()
                .with_states_filter(if v >= 4 {
                    vec![str_bytes("Stable")]
                } else {
                    vec![]
                })
                .with_types_filter(if v >= 5 {
                    vec![str_bytes("classic")]
                } else {
                    vec![]
                })
        });
    }

    schema_fuzz_test!(API, ListGroupsRequest);
}
