//! `[drv]` OffsetDelete (key 47), v0 (KIP-496): a group's offsets of
//! topics it no longer subscribes to are removed.

use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::offset_delete_request::OffsetDeleteRequest;
use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponse, OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::ApiKey;

use super::authz::Authz;
use super::group_common::{ask, partition_exists, text};
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::group::coordinator::Answer;
use crate::protocol::encode::encode;
use crate::protocol::schema::{CheckedApi, Field, Schema};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::group::group_host::GroupCall;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::OffsetDelete, 0, 0);

/// OffsetDeleteRequest.json: group_id, topics [name, partitions [int32]].
const SCHEMA: &[Field] = &[
    Field::Str,
    Field::Structs(&[Field::Str, Field::FixedArray(4)]),
];

pub const API: CheckedApi = CheckedApi {
    versions: VERSIONS,
    first_flexible: i16::MAX,
    schema: Schema::Fixed(SCHEMA),
};

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let authz = Authz::new(&ctx, &req);
        let r: OffsetDeleteRequest = API.decode(req.body, version)?;
        let group_id = text(&r.group_id.0);
        // Kafka's handleOffsetDeleteRequest: DELETE on the group (denied:
        // the top-level GROUP_AUTHORIZATION_FAILED), then READ on each
        // topic (TOPIC_AUTHORIZATION_FAILED for its partitions).
        if !authz.group(Operation::Delete, &group_id) {
            let mut response = OffsetDeleteResponse::default();
            response.error_code = ErrorCode::GROUP_AUTHORIZATION_FAILED.0;
            let body = encode(&response, version).map_err(HandlerError::Encode)?;
            return Ok(Response::Body(vec![OutPart::Bytes(body)]));
        }
        let mut asked = Vec::new();
        let mut unknown = Vec::new();
        for t in &r.topics {
            let topic = text(&t.name.0);
            let readable = authz.topic(Operation::Read, &topic);
            for p in &t.partitions {
                if !readable {
                    unknown.push((
                        topic.clone(),
                        p.partition_index,
                        ErrorCode::TOPIC_AUTHORIZATION_FAILED,
                    ));
                } else if partition_exists(&ctx, &topic, p.partition_index) {
                    asked.push((topic.clone(), p.partition_index));
                } else {
                    unknown.push((
                        topic.clone(),
                        p.partition_index,
                        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                    ));
                }
            }
        }
        let call = GroupCall::OffsetDelete {
            group_id: group_id.clone(),
            partitions: asked,
        };
        let mut response = OffsetDeleteResponse::default();
        let results = match ask(&ctx, &group_id, call).await {
            Ok(Answer::OffsetDelete(Ok(list))) => list,
            Ok(Answer::OffsetDelete(Err(e))) | Err(e) => {
                response.error_code = e.0;
                Vec::new()
            }
            Ok(_) => {
                response.error_code = ErrorCode::UNKNOWN_SERVER_ERROR.0;
                Vec::new()
            }
        };
        if response.error_code == 0 {
            let all = results.into_iter().chain(unknown);
            for (topic, p, e) in all {
                let mut part = OffsetDeleteResponsePartition::default();
                part.partition_index = p;
                part.error_code = e.0;
                match response
                    .topics
                    .iter_mut()
                    .find(|t| t.name.0.as_str() == topic)
                {
                    Some(t) => t.partitions.push(part),
                    None => {
                        let mut t = OffsetDeleteResponseTopic::default();
                        t.name = kafka_protocol::messages::TopicName(
                            super::group_common::str_bytes(topic),
                        );
                        t.partitions.push(part);
                        response.topics.push(t);
                    }
                }
            }
        }
        let body = encode(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

#[cfg(test)]
mod tests {
    use super::super::group_common::str_bytes;
    use super::*;
    use crate::protocol::schema::schema_fuzz_test;
    use kafka_protocol::messages::offset_delete_request::{
        OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
    };
    use kafka_protocol::messages::{GroupId, TopicName};

    #[test]
    fn the_schema_covers_every_version_exactly() {
        API.assert_schema_covers_every_version(|_| {
            OffsetDeleteRequest::default()
                .with_group_id(GroupId(str_bytes("g")))
                .with_topics(vec![OffsetDeleteRequestTopic::default()
                    .with_name(TopicName(str_bytes("t")))
                    .with_partitions(vec![
                        OffsetDeleteRequestPartition::default().with_partition_index(2)
                    ])])
        });
    }

    schema_fuzz_test!(API, OffsetDeleteRequest);
}
