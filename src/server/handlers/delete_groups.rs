//! `[drv]` DeleteGroups (key 42), v0–v2: each coordinator deletes its
//! empty groups (NON_EMPTY_GROUP for others, GROUP_ID_NOT_FOUND for
//! unknown ones) with tombstones in `__consumer_offsets`.

use std::collections::BTreeMap;
use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::delete_groups_request::DeleteGroupsRequest;
use kafka_protocol::messages::delete_groups_response::{
    DeletableGroupResult, DeleteGroupsResponse,
};
use kafka_protocol::messages::ApiKey;

use super::authz::Authz;
use super::group_common::text;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::group::coordinator::Answer;
use crate::protocol::encode::encode;
use crate::protocol::schema::{CheckedApi, Field, Schema};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::group::group_host::{GroupCall, GroupReply};
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::DeleteGroups, 0, 2);

/// DeleteGroupsRequest.json: groups_names [string].
const SCHEMA: &[Field] = &[Field::StrArray];

pub const API: CheckedApi = CheckedApi {
    versions: VERSIONS,
    first_flexible: 2,
    schema: Schema::Fixed(SCHEMA),
};

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let authz = Authz::new(&ctx, &req);
        let r: DeleteGroupsRequest = API.decode(req.body, version)?;
        let mut by_shard: BTreeMap<usize, Vec<String>> = BTreeMap::new();
        let mut errors: BTreeMap<String, ErrorCode> = BTreeMap::new();
        for g in &r.groups_names {
            let id = text(&g.0);
            // Kafka's handleDeleteGroupsRequest: DELETE on each group.
            if !authz.group(Operation::Delete, &id) {
                errors.insert(id, ErrorCode::GROUP_AUTHORIZATION_FAILED);
                continue;
            }
            match ctx.group_driver().group_shard(&id) {
                Some(shard) => by_shard.entry(shard).or_default().push(id),
                None => {
                    errors.insert(id, ErrorCode::NOT_COORDINATOR);
                }
            }
        }
        for (shard, ids) in by_shard {
            match ctx
                .group_driver()
                .ask_shard_group(shard, GroupCall::DeleteGroups(ids.clone()))
                .await
            {
                GroupReply::Answer(Answer::DeleteGroups(list)) => errors.extend(list),
                _ => errors.extend(ids.into_iter().map(|i| (i, ErrorCode::NOT_COORDINATOR))),
            }
        }
        let mut response = DeleteGroupsResponse::default();
        response.results = r
            .groups_names
            .iter()
            .map(|g| {
                let mut out = DeletableGroupResult::default();
                out.group_id = g.clone();
                out.error_code = errors
                    .get(g.0.as_str())
                    .copied()
                    .unwrap_or(ErrorCode::UNKNOWN_SERVER_ERROR)
                    .0;
                out
            })
            .collect();
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
        API.assert_schema_covers_every_version(|_| {
            DeleteGroupsRequest::default().with_groups_names(vec![GroupId(str_bytes("g"))])
        });
    }

    schema_fuzz_test!(API, DeleteGroupsRequest);
}
