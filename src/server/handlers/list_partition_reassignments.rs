//! `[drv]` ListPartitionReassignments (key 46), v0 (KIP-455): the
//! partitions being moved with their replicas, adding and removing
//! replicas, as `kafka-reassign-partitions.sh --list / --verify` and
//! `Admin.listPartitionReassignments` ask. Kafka 3.9 in ZooKeeper mode
//! (`KafkaApis.handleListPartitionReassignmentsRequest` →
//! `KafkaController.listPartitionReassignments`): a null topic list means
//! every moving partition; partitions asked that are not moving are left
//! out; a broker that is not the controller answers NOT_CONTROLLER.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::list_partition_reassignments_request::ListPartitionReassignmentsRequest;
use kafka_protocol::messages::list_partition_reassignments_response::{
    ListPartitionReassignmentsResponse, OngoingPartitionReassignment, OngoingTopicReassignment,
};
use kafka_protocol::messages::{ApiKey, TopicName};

use super::admin_common::str_bytes;
use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::controller::reassignment::ReplicaAssignment;
use crate::protocol::encode::encode;
use crate::protocol::schema::{CheckedApi, Field, Schema, INT32};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::control::control_shard::{ReassignmentCall, ReassignmentReply};
use crate::shard::ShardContext;
use crate::types::{BrokerId, TopicPartition};

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::ListPartitionReassignments, 0, 0);

/// ListPartitionReassignmentsRequest.json v0 (flexible): timeout_ms,
/// topics (nullable) [name, partition_indexes []int32].
const SCHEMA: &[Field] = &[INT32, Field::Structs(&[Field::Str, Field::FixedArray(4)])];

pub const API: CheckedApi = CheckedApi {
    versions: VERSIONS,
    first_flexible: 0,
    schema: Schema::Fixed(SCHEMA),
};

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let authz = Authz::new(&ctx, &req);
        let request: ListPartitionReassignmentsRequest = API.decode(req.body, version)?;
        let asked: Option<BTreeSet<TopicPartition>> = request.topics.as_ref().map(|ts| {
            ts.iter()
                .flat_map(|t| {
                    t.partition_indexes
                        .iter()
                        .map(|p| TopicPartition::new(t.name.0.as_str(), *p))
                })
                .collect()
        });
        // Kafka: DESCRIBE on the cluster (thrown: the whole request
        // CLUSTER_AUTHORIZATION_FAILED).
        let answer = if !authz.cluster(Operation::Describe) {
            Err(ErrorCode::CLUSTER_AUTHORIZATION_FAILED)
        } else {
            match ctx
                .control_client()
                .reassignments(ReassignmentCall::List(asked))
                .await
            {
                Ok(ReassignmentReply::Listed(a)) => a,
                _ => Err(ErrorCode::NOT_CONTROLLER),
            }
        };
        let body = encode_response(&answer, version)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

fn ids(v: &[BrokerId]) -> Vec<kafka_protocol::messages::BrokerId> {
    v.iter()
        .map(|b| kafka_protocol::messages::BrokerId(b.0))
        .collect()
}

fn encode_response(
    answer: &Result<BTreeMap<TopicPartition, ReplicaAssignment>, ErrorCode>,
    version: i16,
) -> Result<bytes::Bytes, HandlerError> {
    let response = match answer {
        Err(code) => ListPartitionReassignmentsResponse::default()
            .with_error_code(code.0)
            .with_error_message(Some(str_bytes(code.to_string()))),
        Ok(moving) => {
            let mut by_topic: BTreeMap<&str, Vec<OngoingPartitionReassignment>> = BTreeMap::new();
            for (tp, a) in moving {
                by_topic.entry(&tp.topic).or_default().push(
                    OngoingPartitionReassignment::default()
                        .with_partition_index(tp.partition)
                        .with_replicas(ids(&a.replicas))
                        .with_adding_replicas(ids(&a.adding))
                        .with_removing_replicas(ids(&a.removing)),
                );
            }
            ListPartitionReassignmentsResponse::default().with_topics(
                by_topic
                    .into_iter()
                    .map(|(topic, partitions)| {
                        OngoingTopicReassignment::default()
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
    use kafka_protocol::messages::list_partition_reassignments_request::ListPartitionReassignmentsTopics;
    use kafka_protocol::protocol::Decodable;

    #[test]
    fn the_schema_covers_every_version_exactly() {
        API.assert_schema_covers_every_version(|_| {
            ListPartitionReassignmentsRequest::default()
                .with_timeout_ms(30000)
                .with_topics(Some(vec![ListPartitionReassignmentsTopics::default()
                    .with_name(TopicName(str_bytes("t")))
                    .with_partition_indexes(vec![0, 4])]))
        });
    }

    #[test]
    fn moving_partitions_are_listed_with_their_replica_sets() {
        let a = ReplicaAssignment::settled(vec![BrokerId(0), BrokerId(1), BrokerId(2)])
            .reassign_to(&[BrokerId(1), BrokerId(2), BrokerId(3)]);
        let moving = BTreeMap::from([(TopicPartition::new("t", 2), a)]);
        let mut body = encode_response(&Ok(moving), 0).unwrap();
        let r = ListPartitionReassignmentsResponse::decode(&mut body, 0).unwrap();
        assert_eq!(r.error_code, 0);
        let p = &r.topics[0].partitions[0];
        assert_eq!(r.topics[0].name.0.as_str(), "t");
        assert_eq!(p.partition_index, 2);
        let n =
            |v: &[kafka_protocol::messages::BrokerId]| v.iter().map(|b| b.0).collect::<Vec<_>>();
        assert_eq!(n(&p.replicas), [1, 2, 3, 0]);
        assert_eq!(n(&p.adding_replicas), [3]);
        assert_eq!(n(&p.removing_replicas), [0]);
        let mut body = encode_response(&Err(ErrorCode::NOT_CONTROLLER), 0).unwrap();
        let r = ListPartitionReassignmentsResponse::decode(&mut body, 0).unwrap();
        assert_eq!(r.error_code, ErrorCode::NOT_CONTROLLER.0);
    }

    schema_fuzz_test!(API, ListPartitionReassignmentsRequest);
}
