//! `[drv]` CreatePartitions (key 37), v0–v3 (every version the codec
//! knows): grow a topic's partition count (never shrink: INVALID_PARTITIONS).
//!
//! Forwarded to the control shard, which answers after the new partitions
//! are in the snapshot of every data shard.

use std::collections::HashMap;
use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::create_partitions_request::CreatePartitionsRequest;
use kafka_protocol::messages::create_partitions_response::{
    CreatePartitionsResponse, CreatePartitionsTopicResult,
};
use kafka_protocol::messages::ApiKey;

use super::admin_common::{call_control_into, failure, str_bytes};
use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::controller::admin_requests::{AdminRequest, AdminResponse, AdminResult, NewPartitions};
use crate::protocol::encode::encode;
use crate::protocol::schema::{CheckedApi, Field, Schema, BOOL, INT32};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::CreatePartitions, 0, 3);

const FIRST_FLEXIBLE: i16 = 2;

/// CreatePartitionsRequest.json: topics [name, count, assignments
/// (nullable) [broker_ids]], timeout_ms, validate_only.
const SCHEMA: &[Field] = &[
    Field::Structs(&[Field::Str, INT32, Field::Structs(&[Field::FixedArray(4)])]),
    INT32,
    BOOL,
];

/// What the shared admin preamble needs to decode this API.
pub const API: CheckedApi = CheckedApi {
    versions: VERSIONS,
    first_flexible: FIRST_FLEXIBLE,
    schema: Schema::Fixed(SCHEMA),
};

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let authz = Authz::new(&ctx, &req);
        let request: CreatePartitionsRequest = API.decode(req.body, version)?;
        let mut listed: HashMap<&str, usize> = HashMap::new();
        for t in &request.topics {
            *listed.entry(t.name.0.as_str()).or_default() += 1;
        }
        let mut results: Vec<Option<AdminResult<()>>> = vec![None; request.topics.len()];
        let mut slots = Vec::new();
        let mut topics = Vec::new();
        for (i, t) in request.topics.iter().enumerate() {
            if listed.get(t.name.0.as_str()).copied().unwrap_or(0) > 1 {
                // Kafka: "Duplicate topic in request."
                results[i] = Some(Err(failure(
                    ErrorCode::INVALID_REQUEST,
                    "Duplicate topic in request.",
                )));
                continue;
            }
            // Kafka's handleCreatePartitionsRequest: ALTER on the topic.
            if !authz.topic(Operation::Alter, t.name.0.as_str()) {
                results[i] = Some(Err(failure(
                    ErrorCode::TOPIC_AUTHORIZATION_FAILED,
                    "The topic authorization is failed.",
                )));
                continue;
            }
            slots.push(i);
            topics.push(NewPartitions {
                topic: t.name.0.to_string(),
                count: t.count,
                assignments: t.assignments.as_ref().map(|a| {
                    a.iter()
                        .map(|x| {
                            x.broker_ids
                                .iter()
                                .map(|b| crate::types::BrokerId(b.0))
                                .collect()
                        })
                        .collect()
                }),
            });
        }
        if !topics.is_empty() {
            let req = AdminRequest::CreatePartitions {
                topics,
                validate_only: request.validate_only,
            };
            call_control_into(&ctx, req, slots, &mut results, |r| match r {
                AdminResponse::CreatedPartitions(r) => Some(r),
                _ => None,
            })
            .await;
        }
        let mut response = CreatePartitionsResponse::default();
        response.results = request
            .topics
            .iter()
            .zip(results)
            .map(|(t, r)| {
                let mut out = CreatePartitionsTopicResult::default();
                out.name = t.name.clone();
                let r = r.unwrap_or_else(|| Err(failure(ErrorCode::UNKNOWN_SERVER_ERROR, "")));
                if let Err(e) = r {
                    out.error_code = e.code.0;
                    out.error_message = Some(str_bytes(e.message));
                }
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
    use kafka_protocol::messages::create_partitions_request::{
        CreatePartitionsAssignment, CreatePartitionsTopic,
    };
    use kafka_protocol::messages::{BrokerId, TopicName};

    #[test]
    fn the_schema_covers_every_version_exactly() {
        API.assert_schema_covers_every_version(|_| {
            CreatePartitionsRequest::default()
                .with_topics(vec![
                    CreatePartitionsTopic::default()
                        .with_name(TopicName(str_bytes("t")))
                        .with_count(3)
                        .with_assignments(Some(vec![CreatePartitionsAssignment::default()
                            .with_broker_ids(vec![BrokerId(1)])])),
                    CreatePartitionsTopic::default()
                        .with_name(TopicName(str_bytes("u")))
                        .with_assignments(None),
                ])
                .with_timeout_ms(5)
                .with_validate_only(true)
        });
    }

    schema_fuzz_test!(API, CreatePartitionsRequest);
}
