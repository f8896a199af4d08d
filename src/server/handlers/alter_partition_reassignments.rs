//! `[drv]` AlterPartitionReassignments (key 45), v0 (KIP-455): move
//! partitions to new replicas, or cancel a move (null replicas), as
//! `kafka-reassign-partitions.sh --execute / --cancel` and
//! `Admin.alterPartitionReassignments` ask. Kafka 3.9 in ZooKeeper mode
//! (`KafkaApis.handleAlterPartitionReassignmentsRequest` →
//! `KafkaController.alterPartitionReassignments`): the controller answers
//! per partition once each move has started (`timeout_ms` is not used);
//! on a broker that is not the controller the whole request answers
//! NOT_CONTROLLER, and the client retries on the controller. Without
//! ALTER on the cluster the top level and every asked partition answer
//! CLUSTER_AUTHORIZATION_FAILED, with a message. v1 (KIP-860's
//! `allow_replication_factor_change`) is Kafka 4.1's, not offered.

use std::collections::BTreeMap;
use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::alter_partition_reassignments_request::AlterPartitionReassignmentsRequest;
use kafka_protocol::messages::alter_partition_reassignments_response::{
    AlterPartitionReassignmentsResponse, ReassignablePartitionResponse, ReassignableTopicResponse,
};
use kafka_protocol::messages::{ApiKey, TopicName};

use super::admin_common::str_bytes;
use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::controller::reassignment::Refusal;
use crate::controller::zk_mode::ReassignAsk;
use crate::protocol::encode::encode;
use crate::protocol::schema::{CheckedApi, Field, Schema, INT32};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::control::control_shard::{ReassignmentCall, ReassignmentReply};
use crate::shard::ShardContext;
use crate::types::{BrokerId, TopicPartition};

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::AlterPartitionReassignments, 0, 0);

/// AlterPartitionReassignmentsRequest.json v0 (flexible): timeout_ms,
/// topics [name, partitions [partition_index, replicas (nullable) []int32]].
const SCHEMA: &[Field] = &[
    INT32,
    Field::Structs(&[Field::Str, Field::Structs(&[INT32, Field::FixedArray(4)])]),
];

pub const API: CheckedApi = CheckedApi {
    versions: VERSIONS,
    first_flexible: 0,
    schema: Schema::Fixed(SCHEMA),
};

/// Errors.NOT_CONTROLLER's message, which Kafka puts beside the code.
const NOT_CONTROLLER_MESSAGE: &str = "This is not the correct controller for this cluster.";

/// The message of `AuthHelper.authorizeClusterOperation`'s exception
/// (Kafka adds the request's description).
const DENIED_MESSAGE: &str = "Request AlterPartitionReassignments is not authorized.";

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let authz = Authz::new(&ctx, &req);
        let request: AlterPartitionReassignmentsRequest = API.decode(req.body, version)?;
        let mut asked: ReassignAsk = BTreeMap::new();
        for t in &request.topics {
            for p in &t.partitions {
                let tp = TopicPartition::new(t.name.0.as_str(), p.partition_index);
                let target = p
                    .replicas
                    .as_ref()
                    .map(|rs| rs.iter().map(|r| BrokerId(r.0)).collect());
                asked.insert(tp, target);
            }
        }
        // Kafka: ALTER on the cluster, thrown (`authorizeClusterOperation`).
        if !authz.cluster(Operation::Alter) {
            let body = encode(&refused(&request), version).map_err(HandlerError::Encode)?;
            return Ok(Response::Body(vec![OutPart::Bytes(body)]));
        }
        let answer = match ctx
            .control_client()
            .reassignments(ReassignmentCall::Alter(asked))
            .await
        {
            Ok(ReassignmentReply::Altered(a)) => a,
            _ => Err(ErrorCode::NOT_CONTROLLER),
        };
        let body = encode_response(&answer, version)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

/// The answer to a principal without ALTER on the cluster: the thrown
/// `ClusterAuthorizationException` through
/// `AlterPartitionReassignmentsRequest.getErrorResponse`, its code and
/// message at the top level and on every asked partition, in request order.
fn refused(request: &AlterPartitionReassignmentsRequest) -> AlterPartitionReassignmentsResponse {
    let code = ErrorCode::CLUSTER_AUTHORIZATION_FAILED.0;
    let message = || Some(str_bytes(DENIED_MESSAGE));
    AlterPartitionReassignmentsResponse::default()
        .with_error_code(code)
        .with_error_message(message())
        .with_responses(
            request
                .topics
                .iter()
                .map(|t| {
                    ReassignableTopicResponse::default()
                        .with_name(t.name.clone())
                        .with_partitions(
                            t.partitions
                                .iter()
                                .map(|p| {
                                    ReassignablePartitionResponse::default()
                                        .with_partition_index(p.partition_index)
                                        .with_error_code(code)
                                        .with_error_message(message())
                                })
                                .collect(),
                        )
                })
                .collect(),
        )
}

/// Per topic (name order) its partitions' codes and messages; or only the
/// top-level error.
fn encode_response(
    answer: &Result<BTreeMap<TopicPartition, Result<(), Refusal>>, ErrorCode>,
    version: i16,
) -> Result<bytes::Bytes, HandlerError> {
    let response = match answer {
        Err(code) => AlterPartitionReassignmentsResponse::default()
            .with_error_code(code.0)
            .with_error_message(
                (*code == ErrorCode::NOT_CONTROLLER).then(|| str_bytes(NOT_CONTROLLER_MESSAGE)),
            ),
        Ok(results) => {
            let mut by_topic: BTreeMap<&str, Vec<ReassignablePartitionResponse>> = BTreeMap::new();
            for (tp, r) in results {
                let (code, message) = match r {
                    Ok(()) => (ErrorCode::NONE, None),
                    Err((code, m)) => (*code, Some(str_bytes(m.clone()))),
                };
                by_topic.entry(&tp.topic).or_default().push(
                    ReassignablePartitionResponse::default()
                        .with_partition_index(tp.partition)
                        .with_error_code(code.0)
                        .with_error_message(message),
                );
            }
            AlterPartitionReassignmentsResponse::default().with_responses(
                by_topic
                    .into_iter()
                    .map(|(topic, partitions)| {
                        ReassignableTopicResponse::default()
                            .with_name(TopicName(str_bytes(topic)))
                            .with_partitions(partitions)
                    })
                    .collect(),
            )
        }
    };
    encode(&response, version).map_err(HandlerError::Encode)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::schema::schema_fuzz_test;
    use kafka_protocol::messages::alter_partition_reassignments_request::{
        ReassignablePartition, ReassignableTopic,
    };
    use kafka_protocol::protocol::Decodable;

    #[test]
    fn the_schema_covers_every_version_exactly() {
        API.assert_schema_covers_every_version(|_| {
            AlterPartitionReassignmentsRequest::default()
                .with_timeout_ms(30000)
                .with_topics(vec![ReassignableTopic::default()
                    .with_name(TopicName(str_bytes("t")))
                    .with_partitions(vec![
                        ReassignablePartition::default()
                            .with_partition_index(0)
                            .with_replicas(Some(vec![
                                kafka_protocol::messages::BrokerId(1),
                                kafka_protocol::messages::BrokerId(2),
                            ])),
                        ReassignablePartition::default().with_partition_index(1),
                    ])])
        });
    }

    #[test]
    fn answers_group_by_topic_or_carry_the_top_level_error() {
        let results = BTreeMap::from([
            (TopicPartition::new("b", 0), Ok(())),
            (
                TopicPartition::new("a", 3),
                Err((ErrorCode::INVALID_REPLICA_ASSIGNMENT, "dup".to_owned())),
            ),
        ]);
        let mut body = encode_response(&Ok(results), 0).unwrap();
        let r = AlterPartitionReassignmentsResponse::decode(&mut body, 0).unwrap();
        assert_eq!(r.error_code, 0);
        let got: Vec<(&str, i32, i16, Option<&str>)> = r
            .responses
            .iter()
            .flat_map(|t| {
                t.partitions.iter().map(move |p| {
                    (
                        t.name.0.as_str(),
                        p.partition_index,
                        p.error_code,
                        p.error_message.as_ref().map(|m| m.as_str()),
                    )
                })
            })
            .collect();
        assert_eq!(
            got,
            [
                ("a", 3, ErrorCode::INVALID_REPLICA_ASSIGNMENT.0, Some("dup")),
                ("b", 0, 0, None)
            ]
        );
        let mut body = encode_response(&Err(ErrorCode::NOT_CONTROLLER), 0).unwrap();
        let r = AlterPartitionReassignmentsResponse::decode(&mut body, 0).unwrap();
        assert_eq!(r.error_code, ErrorCode::NOT_CONTROLLER.0);
        assert!(r.responses.is_empty());
    }

    #[test]
    fn a_refusal_names_every_asked_partition_in_request_order() {
        let request = AlterPartitionReassignmentsRequest::default().with_topics(vec![
            ReassignableTopic::default()
                .with_name(TopicName(str_bytes("b")))
                .with_partitions(vec![
                    ReassignablePartition::default().with_partition_index(1),
                    ReassignablePartition::default().with_partition_index(0),
                ]),
            ReassignableTopic::default()
                .with_name(TopicName(str_bytes("a")))
                .with_partitions(vec![
                    ReassignablePartition::default().with_partition_index(0)
                ]),
        ]);
        let r = refused(&request);
        let denied = ErrorCode::CLUSTER_AUTHORIZATION_FAILED.0;
        assert_eq!(r.error_code, denied);
        assert!(r.error_message.is_some());
        let got: Vec<(&str, i32, i16, bool)> = r
            .responses
            .iter()
            .flat_map(|t| {
                t.partitions.iter().map(move |p| {
                    (
                        t.name.0.as_str(),
                        p.partition_index,
                        p.error_code,
                        p.error_message.is_some(),
                    )
                })
            })
            .collect();
        assert_eq!(
            got,
            [
                ("b", 1, denied, true),
                ("b", 0, denied, true),
                ("a", 0, denied, true)
            ]
        );
    }

    schema_fuzz_test!(API, AlterPartitionReassignmentsRequest);
}
