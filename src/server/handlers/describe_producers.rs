//! `[drv]` DescribeProducers (key 61), v0 (KIP-664; what
//! `kafka-transactions describe-producers` and `find-hanging` send): each
//! partition's active producers from its producer state, on leaders and
//! followers alike.
//!
//! As Kafka 3.9's `KafkaApis.handleDescribeProducersRequest`: per topic an
//! invalid name (INVALID_TOPIC_EXCEPTION), then READ on the topic
//! (TOPIC_AUTHORIZATION_FAILED), then an unknown topic
//! (UNKNOWN_TOPIC_OR_PARTITION) fail every asked partition with the
//! error's message; otherwise `ReplicaManager.activeProducerState` per
//! partition (NOT_LEADER_OR_FOLLOWER for a partition of the cluster this
//! broker has no replica of, UNKNOWN_TOPIC_OR_PARTITION for one the topic
//! does not have; no message).

use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::describe_producers_request::DescribeProducersRequest;
use kafka_protocol::messages::describe_producers_response::{
    DescribeProducersResponse, PartitionResponse, ProducerState, TopicResponse,
};
use kafka_protocol::messages::{ApiKey, ProducerId};
use kafka_protocol::protocol::StrBytes;

use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::protocol::encode::encode;
use crate::protocol::schema::{CheckedApi, Field, Schema};
use crate::protocol::topic_name::validate_topic_name;
use crate::protocol::{ApiRange, ErrorCode};
use crate::replication::producer_state::ActiveProducer;
use crate::server::out::OutPart;
use crate::shard::ShardContext;
use crate::types::TopicPartition;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::DescribeProducers, 0, 0);

/// DescribeProducersRequest.json, flexible from v0: topics [name,
/// partition_indexes [int32]].
const SCHEMA: &[Field] = &[Field::Structs(&[Field::Str, Field::FixedArray(4)])];

pub const API: CheckedApi = CheckedApi {
    versions: VERSIONS,
    first_flexible: 0,
    schema: Schema::Fixed(SCHEMA),
};

/// `Errors.TOPIC_AUTHORIZATION_FAILED.message()`.
const TOPIC_AUTHORIZATION_FAILED_MESSAGE: &str = "Topic authorization failed.";
/// `Errors.UNKNOWN_TOPIC_OR_PARTITION.message()`.
const UNKNOWN_TOPIC_MESSAGE: &str = "This server does not host this topic-partition.";

/// A partition's place in the answer: its lookup slot, or its error.
enum Planned {
    Lookup(usize),
    Failed(i16, Option<String>),
}

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let request: DescribeProducersRequest = API.decode(req.body.clone(), version)?;
        let snapshot = ctx.snapshot();
        let authz = Authz::new(&ctx, &req);
        let mut lookups = Vec::new();
        let mut layout = Vec::new();
        for topic in &request.topics {
            let name = topic.name.as_str();
            let topic_error = if let Err(e) = validate_topic_name(name) {
                Some((ErrorCode::INVALID_TOPIC_EXCEPTION, e.to_string()))
            } else if !authz.topic(Operation::Read, name) {
                Some((
                    ErrorCode::TOPIC_AUTHORIZATION_FAILED,
                    TOPIC_AUTHORIZATION_FAILED_MESSAGE.to_owned(),
                ))
            } else if snapshot.cluster_topic(name).is_none() {
                Some((
                    ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                    UNKNOWN_TOPIC_MESSAGE.to_owned(),
                ))
            } else {
                None
            };
            let parts: Vec<(i32, Planned)> = topic
                .partition_indexes
                .iter()
                .map(|&index| {
                    let plan = match &topic_error {
                        Some((code, message)) => Planned::Failed(code.0, Some(message.clone())),
                        None if snapshot.hosts_partition(name, index) => {
                            lookups.push(TopicPartition::new(name, index));
                            Planned::Lookup(lookups.len() - 1)
                        }
                        None => Planned::Failed(snapshot.not_hosted_error(name, index).0, None),
                    };
                    (index, plan)
                })
                .collect();
            layout.push((topic.name.clone(), parts));
        }
        let mut answers = ctx.datapath().describe_producers_on_owners(lookups).await;
        let topics = layout
            .into_iter()
            .map(|(name, parts)| {
                let partitions = parts
                    .into_iter()
                    .map(|(index, plan)| {
                        let answer = match plan {
                            Planned::Lookup(i) => answers
                                .get_mut(i)
                                .map(|a| {
                                    std::mem::replace(a, Err(ErrorCode::NOT_LEADER_OR_FOLLOWER))
                                })
                                .unwrap_or(Err(ErrorCode::NOT_LEADER_OR_FOLLOWER))
                                .map_err(|code| (code.0, None)),
                            Planned::Failed(code, message) => Err((code, message)),
                        };
                        partition_response(index, answer)
                    })
                    .collect();
                TopicResponse::default()
                    .with_name(name)
                    .with_partitions(partitions)
            })
            .collect();
        let response = DescribeProducersResponse::default().with_topics(topics);
        let body = encode(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

/// One partition of the answer.
pub fn partition_response(
    index: i32,
    answer: Result<Vec<ActiveProducer>, (i16, Option<String>)>,
) -> PartitionResponse {
    let r = PartitionResponse::default().with_partition_index(index);
    match answer {
        Ok(producers) => r.with_active_producers(
            producers
                .into_iter()
                .map(|p| {
                    ProducerState::default()
                        .with_producer_id(ProducerId(p.producer_id))
                        .with_producer_epoch(i32::from(p.producer_epoch))
                        .with_last_sequence(p.last_sequence)
                        .with_last_timestamp(p.last_timestamp)
                        .with_coordinator_epoch(p.coordinator_epoch)
                        .with_current_txn_start_offset(p.current_txn_start_offset)
                })
                .collect(),
        ),
        Err((code, message)) => r
            .with_error_code(code)
            .with_error_message(message.map(StrBytes::from_string)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::schema::schema_fuzz_test;
    use kafka_protocol::messages::describe_producers_request::TopicRequest;
    use kafka_protocol::messages::TopicName;

    #[test]
    fn the_schema_covers_every_version_exactly() {
        API.assert_schema_covers_every_version(|_| {
            DescribeProducersRequest::default().with_topics(vec![TopicRequest::default()
                .with_name(TopicName(StrBytes::from_static_str("t")))
                .with_partition_indexes(vec![0, 3])])
        });
    }

    #[test]
    fn a_partition_answer_carries_the_producers_or_the_error() {
        let p = ActiveProducer {
            producer_id: 7,
            producer_epoch: 2,
            last_sequence: 4,
            last_timestamp: 1000,
            coordinator_epoch: -1,
            current_txn_start_offset: -1,
        };
        let ok = partition_response(1, Ok(vec![p]));
        assert_eq!(ok.error_code, 0);
        assert_eq!(ok.active_producers[0].producer_id.0, 7);
        assert_eq!(ok.active_producers[0].producer_epoch, 2);
        let failed = partition_response(2, Err((29, Some("Topic authorization failed.".into()))));
        assert_eq!(failed.error_code, 29);
        assert!(failed.active_producers.is_empty());
        assert_eq!(
            failed.error_message.as_deref(),
            Some("Topic authorization failed.")
        );
    }

    schema_fuzz_test!(API, DescribeProducersRequest);
}
