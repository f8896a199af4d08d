//! `[drv]` DeleteTopics (key 20), v0–v6 (Kafka 3.9's range): by name, and
//! from v6 by topic id (KIP-516). v0 is v1 without the response's
//! throttle time (DeleteTopicsRequest.json): the current codec, which
//! starts at v1, decodes its request as v1 and its answer is v1's without
//! that first field.
//!
//! Forwarded to the control shard; it answers after the snapshot without
//! the topics reached every data shard (their owners then drop the logs).

use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::delete_topics_request::DeleteTopicsRequest;
use kafka_protocol::messages::delete_topics_response::{
    DeletableTopicResult, DeleteTopicsResponse,
};
use kafka_protocol::messages::{ApiKey, TopicName};
use uuid::Uuid;

use super::admin_common::{call_control_each, failure, str_bytes};
use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::controller::admin_requests::{AdminFailure, AdminRequest, AdminResponse, TopicRef};
use crate::protocol::encode::encode;
use crate::protocol::schema::{CheckedApi, Field, Schema, INT32, UUID};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::DeleteTopics, 0, 6);

/// The versions the current codec has (v1–v6).
const CODEC_VERSIONS: ApiRange = ApiRange::new(ApiKey::DeleteTopics, 1, 6);

const FIRST_FLEXIBLE: i16 = 4;
const FIRST_WITH_IDS: i16 = 6;

/// DeleteTopicsRequest.json v0–5: topic_names [string], timeout_ms.
const SCHEMA_BY_NAME: &[Field] = &[Field::StrArray, INT32];
/// v6+: topics [name (nullable), topic_id], timeout_ms.
const SCHEMA_BY_ID: &[Field] = &[Field::Structs(&[Field::Str, UUID]), INT32];

fn schema_for(version: i16) -> &'static [Field] {
    if version >= FIRST_WITH_IDS {
        SCHEMA_BY_ID
    } else {
        SCHEMA_BY_NAME
    }
}

/// What the shared admin preamble needs to decode this API.
pub const API: CheckedApi = CheckedApi {
    versions: CODEC_VERSIONS,
    first_flexible: FIRST_FLEXIBLE,
    schema: Schema::PerVersion(schema_for),
};

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let authz = Authz::new(&ctx, &req);
        let request = decode_request(req.body, version)?;
        let refs = topic_refs(&request, version);
        let checked = authorize(&ctx, &authz, &refs);
        let mut results: Vec<Result<(String, Uuid), AdminFailure>> = Vec::new();
        let valid: Vec<TopicRef> = checked.iter().filter_map(|r| r.clone().ok()).collect();
        let mut deleted = if valid.is_empty() {
            Vec::new()
        } else {
            let req = AdminRequest::DeleteTopics { topics: valid };
            call_control_each(&ctx, req, refs.len(), |r| match r {
                AdminResponse::DeletedTopics(d) => Some(d),
                _ => None,
            })
            .await
        }
        .into_iter();
        for r in &checked {
            results.push(match r {
                Ok(_) => deleted
                    .next()
                    .unwrap_or_else(|| Err(failure(ErrorCode::UNKNOWN_SERVER_ERROR, ""))),
                Err(e) => Err(e.clone()),
            });
        }
        if ctx.config.zookeeper_connect.is_some() {
            await_gone(&ctx, &mut results, request.timeout_ms).await;
        }
        let mut response = DeleteTopicsResponse::default();
        response.responses = refs
            .iter()
            .zip(results)
            .map(|(asked, r)| topic_result(asked, r, version))
            .collect();
        let mut body = encode(&response, version.max(1)).map_err(HandlerError::Encode)?;
        if version == 0 {
            // v1's answer leads with throttle_time_ms, which v0 lacks.
            body = body.slice(4..);
        }
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

/// The request at any version (v0's is v1's).
pub fn decode_request(
    body: bytes::Bytes,
    version: i16,
) -> Result<DeleteTopicsRequest, crate::protocol::decode::DecodeError> {
    API.decode(body, version.max(1))
}

/// ZooKeeper mode: the markers are written, the controller deletes; answer
/// once this broker's metadata no longer shows the topics, or after
/// `timeout_ms` with REQUEST_TIMED_OUT for those still shown (Kafka 3.9
/// `ZkAdminManager.deleteTopics` + `DelayedDeleteTopics`; 0 or less
/// answers at once).
async fn await_gone(
    ctx: &ShardContext,
    results: &mut [Result<(String, Uuid), AdminFailure>],
    timeout_ms: i32,
) {
    let names: Vec<String> = results
        .iter()
        .filter_map(|r| r.as_ref().ok().map(|(n, _)| n.clone()))
        .collect();
    if names.is_empty() || timeout_ms <= 0 {
        return;
    }
    let timeout = std::time::Duration::from_millis(u64::try_from(timeout_ms).unwrap_or(0));
    let gone = ctx
        .wait_for_snapshot(timeout, |s| {
            names.iter().all(|n| s.cluster_topic(n).is_none())
        })
        .await;
    if gone {
        return;
    }
    let now = ctx.snapshot();
    for r in results.iter_mut() {
        if matches!(r, Ok((n, _)) if now.cluster_topic(n).is_some()) {
            *r = Err(failure(
                ErrorCode::REQUEST_TIMED_OUT,
                "Timed out waiting for the topic to be deleted.",
            ));
        }
    }
}

/// The topics asked for; an entry naming both or neither name and id is
/// INVALID_REQUEST (Kafka's DeleteTopics validation).
/// Kafka's handleDeleteTopicsRequest: a topic named by id needs DESCRIBE
/// (denied: TOPIC_AUTHORIZATION_FAILED, the name not shown), then DELETE
/// on each topic (denied: TOPIC_AUTHORIZATION_FAILED). An unknown id is
/// left to the controller (UNKNOWN_TOPIC_ID).
fn authorize(
    ctx: &ShardContext,
    authz: &Authz<'_>,
    refs: &[Result<TopicRef, AdminFailure>],
) -> Vec<Result<TopicRef, AdminFailure>> {
    let snapshot = ctx.snapshot();
    let denied = || {
        Err(failure(
            ErrorCode::TOPIC_AUTHORIZATION_FAILED,
            "Topic authorization failed.",
        ))
    };
    refs.iter()
        .map(|r| match r {
            Ok(TopicRef::Name(n)) if !authz.topic(Operation::Delete, n) => denied(),
            Ok(TopicRef::Id(id)) => match snapshot.cluster_topic_by_id(*id) {
                Some(t)
                    if !authz.topic(Operation::Describe, &t.name)
                        || !authz.topic(Operation::Delete, &t.name) =>
                {
                    denied()
                }
                _ => r.clone(),
            },
            other => other.clone(),
        })
        .collect()
}

fn topic_refs(request: &DeleteTopicsRequest, version: i16) -> Vec<Result<TopicRef, AdminFailure>> {
    if version < FIRST_WITH_IDS {
        return request
            .topic_names
            .iter()
            .map(|n| Ok(TopicRef::Name(n.0.to_string())))
            .collect();
    }
    request
        .topics
        .iter()
        .map(|t| match (&t.name, t.topic_id.is_nil()) {
            (Some(name), true) => Ok(TopicRef::Name(name.0.to_string())),
            (None, false) => Ok(TopicRef::Id(t.topic_id)),
            _ => Err(failure(
                ErrorCode::INVALID_REQUEST,
                "Topic name and topic id are both set or both unset.",
            )),
        })
        .collect()
}

fn topic_result(
    asked: &Result<TopicRef, AdminFailure>,
    outcome: Result<(String, Uuid), AdminFailure>,
    version: i16,
) -> DeletableTopicResult {
    let mut r = DeletableTopicResult::default();
    let (name, id) = match asked {
        Ok(TopicRef::Name(n)) => (Some(n.clone()), Uuid::nil()),
        Ok(TopicRef::Id(id)) => (None, *id),
        Err(_) => (None, Uuid::nil()),
    };
    match outcome {
        Ok((deleted, topic_id)) => {
            r.name = Some(TopicName(str_bytes(deleted)));
            r.topic_id = topic_id;
        }
        Err(e) => {
            r.name = name.map(|n| TopicName(str_bytes(n)));
            r.topic_id = id;
            // Kafka's handleDeleteTopicsRequest with delete.topic.enable
            // false: INVALID_REQUEST below v3 (TOPIC_DELETION_DISABLED is v3+).
            r.error_code = if version < 3 && e.code == ErrorCode::TOPIC_DELETION_DISABLED {
                ErrorCode::INVALID_REQUEST.0
            } else {
                e.code.0
            };
            if version >= 5 && !e.message.is_empty() {
                r.error_message = Some(str_bytes(e.message));
            }
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::schema::schema_fuzz_test;
    use kafka_protocol::messages::delete_topics_request::DeleteTopicState;

    #[test]
    fn the_schema_covers_every_version_exactly() {
        API.assert_schema_covers_every_version(|v| {
            DeleteTopicsRequest::default()
                .with_topics(if v >= FIRST_WITH_IDS {
                    vec![
                        DeleteTopicState::default().with_name(Some(TopicName(str_bytes("a")))),
                        DeleteTopicState::default().with_topic_id(uuid::Uuid::from_u128(3)),
                    ]
                } else {
                    vec![]
                })
                .with_topic_names(if v < FIRST_WITH_IDS {
                    vec![TopicName(str_bytes("a")), TopicName(str_bytes("bb"))]
                } else {
                    vec![]
                })
                .with_timeout_ms(5)
        });
    }

    schema_fuzz_test!(API, DeleteTopicsRequest);
}
