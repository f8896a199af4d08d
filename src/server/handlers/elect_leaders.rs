//! `[drv]` ElectLeaders (key 43), v0–v2 (KIP-183, KIP-460): elect the
//! preferred replica (PREFERRED) or any live replica (UNCLEAN) as leader of
//! partitions, as `kafka-leader-election.sh` and `Admin.electLeaders` ask.
//! Kafka 3.9 in ZooKeeper mode (`KafkaApis.handleElectLeaders` →
//! `ReplicaManager.electLeaders` → `KafkaController.electLeaders`): the
//! controller answers per partition; elected partitions then wait, up to
//! `timeout_ms`, until this broker's metadata shows the new leader
//! (`DelayedElectLeader`; REQUEST_TIMED_OUT for those that do not). v0 has
//! no election type (PREFERRED); a null partition list means every
//! partition, and then partitions whose election was not needed are left
//! out of the answer. On a broker that is not the controller every
//! partition answers NOT_CONTROLLER.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::time::Duration;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::elect_leaders_request::ElectLeadersRequest;
use kafka_protocol::messages::elect_leaders_response::{
    ElectLeadersResponse, PartitionResult, ReplicaElectionResult,
};
use kafka_protocol::messages::{ApiKey, TopicName};

use super::admin_common::str_bytes;
use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::controller::rebalance::{ElectionResult, ElectionType};
use crate::protocol::encode::encode;
use crate::protocol::schema::{CheckedApi, Field, Schema, INT32, INT8};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::ShardContext;
use crate::types::{BrokerId, TopicPartition};

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::ElectLeaders, 0, 2);

/// ElectLeadersRequest.json: election_type (v1+), topic_partitions
/// (nullable) [topic, partitions []int32], timeout_ms.
const SCHEMA: &[Field] = &[
    Field::Since(1, &INT8),
    Field::Structs(&[Field::Str, Field::FixedArray(4)]),
    INT32,
];

pub const API: CheckedApi = CheckedApi {
    versions: VERSIONS,
    first_flexible: 2,
    schema: Schema::Fixed(SCHEMA),
};

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let request: ElectLeadersRequest = API.decode(req.body.clone(), version)?;
        let kind = if version == 0 {
            Some(ElectionType::Preferred)
        } else {
            ElectionType::from_wire(request.election_type)
        };
        let asked: Option<BTreeSet<TopicPartition>> = request.topic_partitions.as_ref().map(|ts| {
            ts.iter()
                .flat_map(|t| {
                    t.partitions
                        .iter()
                        .map(|p| TopicPartition::new(t.topic.0.as_str(), *p))
                })
                .collect()
        });
        let Some(kind) = kind else {
            // Not a type Kafka defines: the whole request is invalid.
            let results = asked
                .unwrap_or_default()
                .into_iter()
                .map(|tp| {
                    (
                        tp,
                        Err((ErrorCode::INVALID_REQUEST, "Unknown election type".into())),
                    )
                })
                .collect();
            return respond(ErrorCode::INVALID_REQUEST, &results, version);
        };
        // Kafka's handleElectLeaders: ALTER on the cluster, else the
        // top-level and every asked partition CLUSTER_AUTHORIZATION_FAILED.
        if !Authz::new(&ctx, &req).cluster(Operation::Alter) {
            let code = ErrorCode::CLUSTER_AUTHORIZATION_FAILED;
            let results = asked
                .unwrap_or_default()
                .into_iter()
                .map(|tp| (tp, Err((code, String::new()))))
                .collect();
            return respond(code, &results, version);
        }
        let every_partition = asked.is_none();
        let mut results: BTreeMap<TopicPartition, ElectionResult> = match ctx
            .control_client()
            .elect_leaders(kind, asked.clone())
            .await
        {
            Ok(Ok(results)) => results,
            failed => {
                // Not the controller (or its part unreachable): every
                // partition asked, or every one this broker knows.
                let code = match failed {
                    Ok(Err(code)) => code,
                    _ => ErrorCode::NOT_CONTROLLER,
                };
                asked
                    .unwrap_or_else(|| ctx.snapshot().cluster_partitions().collect())
                    .into_iter()
                    .map(|tp| (tp, Err((code, String::new()))))
                    .collect()
            }
        };
        if every_partition {
            results.retain(|_, r| !matches!(r, Err((ErrorCode::ELECTION_NOT_NEEDED, _))));
        }
        await_leaders(&ctx, &mut results, request.timeout_ms).await;
        respond(ErrorCode::NONE, &results, version)
    })
}

/// `DelayedElectLeader`: wait until the metadata shows every elected
/// partition led by its new leader; the late ones answer REQUEST_TIMED_OUT.
async fn await_leaders(
    ctx: &ShardContext,
    results: &mut BTreeMap<TopicPartition, ElectionResult>,
    timeout_ms: i32,
) {
    let expected: Vec<(TopicPartition, BrokerId)> = results
        .iter()
        .filter_map(|(tp, r)| r.as_ref().ok().map(|l| (tp.clone(), *l)))
        .collect();
    if expected.is_empty() {
        return;
    }
    let shows = |s: &crate::metadata::Snapshot, tp: &TopicPartition, leader: BrokerId| {
        s.cluster_topic(&tp.topic).is_some_and(|t| {
            t.partitions
                .iter()
                .any(|p| p.partition == tp.partition && p.leader == leader)
        })
    };
    let timeout = Duration::from_millis(u64::try_from(timeout_ms).unwrap_or(0));
    let all = ctx
        .wait_for_snapshot(timeout, |s| expected.iter().all(|(tp, l)| shows(s, tp, *l)))
        .await;
    if all {
        return;
    }
    let now = ctx.snapshot();
    for (tp, leader) in expected {
        if !shows(&now, &tp, leader) {
            results.insert(
                tp,
                Err((
                    ErrorCode::REQUEST_TIMED_OUT,
                    "Timed out waiting for the new leader to be known".to_owned(),
                )),
            );
        }
    }
}

fn respond(
    error: ErrorCode,
    results: &BTreeMap<TopicPartition, ElectionResult>,
    version: i16,
) -> Result<Response, HandlerError> {
    let response = encode_response(error, results, version)?;
    Ok(Response::Body(vec![OutPart::Bytes(response)]))
}

/// The response, one entry per topic in name order.
fn encode_response(
    error: ErrorCode,
    results: &BTreeMap<TopicPartition, ElectionResult>,
    version: i16,
) -> Result<bytes::Bytes, HandlerError> {
    let mut by_topic: BTreeMap<&str, Vec<PartitionResult>> = BTreeMap::new();
    for (tp, r) in results {
        let (code, message) = match r {
            Ok(_) => (ErrorCode::NONE, None),
            Err((code, m)) if m.is_empty() => (*code, None),
            Err((code, m)) => (*code, Some(str_bytes(m.clone()))),
        };
        by_topic.entry(&tp.topic).or_default().push(
            PartitionResult::default()
                .with_partition_id(tp.partition)
                .with_error_code(code.0)
                .with_error_message(message),
        );
    }
    let response = ElectLeadersResponse::default()
        .with_error_code(error.0)
        .with_replica_election_results(
            by_topic
                .into_iter()
                .map(|(topic, partitions)| {
                    ReplicaElectionResult::default()
                        .with_topic(TopicName(str_bytes(topic)))
                        .with_partition_result(partitions)
                })
                .collect(),
        );
    encode(&response, version).map_err(HandlerError::Encode)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::schema::schema_fuzz_test;
    use kafka_protocol::messages::elect_leaders_request::TopicPartitions;
    use kafka_protocol::protocol::Decodable;

    #[test]
    fn the_schema_covers_every_version_exactly() {
        API.assert_schema_covers_every_version(|v| {
            ElectLeadersRequest::default()
                .with_election_type(if v >= 1 { 1 } else { 0 })
                .with_topic_partitions(Some(vec![
                    TopicPartitions::default()
                        .with_topic(TopicName(str_bytes("t")))
                        .with_partitions(vec![0, 2]),
                    TopicPartitions::default().with_topic(TopicName(str_bytes("u"))),
                ]))
                .with_timeout_ms(3000)
        });
    }

    #[test]
    fn results_group_by_topic_with_codes_and_messages_in_every_version() {
        let mut results = BTreeMap::new();
        results.insert(TopicPartition::new("b", 1), Ok(BrokerId(2)));
        results.insert(
            TopicPartition::new("a", 0),
            Err((ErrorCode::ELECTION_NOT_NEEDED, "not needed".to_owned())),
        );
        results.insert(
            TopicPartition::new("b", 0),
            Err((ErrorCode::NOT_CONTROLLER, String::new())),
        );
        for version in 0..=2 {
            let mut body = encode_response(ErrorCode::NONE, &results, version).unwrap();
            let r = ElectLeadersResponse::decode(&mut body, version).unwrap();
            let topics: Vec<&str> = r
                .replica_election_results
                .iter()
                .map(|t| t.topic.0.as_str())
                .collect();
            assert_eq!(topics, ["a", "b"], "v{version}");
            let a = &r.replica_election_results[0].partition_result[0];
            assert_eq!(a.error_code, ErrorCode::ELECTION_NOT_NEEDED.0);
            assert_eq!(
                a.error_message.as_ref().map(|m| m.as_str()),
                Some("not needed")
            );
            let b: Vec<(i32, i16, bool)> = r.replica_election_results[1]
                .partition_result
                .iter()
                .map(|p| (p.partition_id, p.error_code, p.error_message.is_none()))
                .collect();
            assert_eq!(b, [(0, ErrorCode::NOT_CONTROLLER.0, true), (1, 0, true)]);
        }
    }

    schema_fuzz_test!(API, ElectLeadersRequest);
}
