//! `[drv]` OffsetForLeaderEpoch (key 23), v2–v4: for each partition, the
//! end offset of the largest leader epoch ≤ the requested one, from the
//! leader's epoch cache (Kafka's `KafkaApis.handleOffsetForLeaderEpochRequest`
//! → `Partition.lastOffsetForLeaderEpoch`; the lookup is
//! `replication::leader_epoch::end_offset_for`), answered by each
//! partition's owner shard like ListOffsets.
//!
//! `current_leader_epoch` fences (older → FENCED_LEADER_EPOCH, newer →
//! UNKNOWN_LEADER_EPOCH); only the leader answers except for the
//! debugging replica id -2 (v3+). v0–v1 are not served: the
//! `kafka-protocol` codec has no tables for them (Kafka 4.0 dropped them).

use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::offset_for_leader_epoch_request::OffsetForLeaderEpochRequest;
use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderEpochResponse, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::ApiKey;

use super::{HandlerError, Request, Response};
use crate::protocol::encode::encode;
use crate::protocol::schema::{CheckedApi, Field, Schema, INT32};
use crate::protocol::{ApiRange, ErrorCode};
use crate::replication::leader_epoch;
use crate::server::out::OutPart;
use crate::shard::ShardContext;
use crate::types::TopicPartition;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::OffsetForLeaderEpoch, 2, 4);

const FIRST_FLEXIBLE: i16 = 4;

/// Kafka's `OffsetsForLeaderEpochRequest.DEBUGGING_REPLICA_ID`.
const DEBUGGING_REPLICA_ID: i32 = -2;

/// OffsetForLeaderEpochRequest.json (v2–v4): replica_id (v3+), topics
/// [topic, partitions [partition, current_leader_epoch, leader_epoch]].
const SCHEMA: &[Field] = &[
    Field::Since(3, &INT32),
    Field::Structs(&[Field::Str, Field::Structs(&[INT32, INT32, INT32])]),
];

pub const API: CheckedApi = CheckedApi {
    versions: VERSIONS,
    first_flexible: FIRST_FLEXIBLE,
    schema: Schema::Fixed(SCHEMA),
};

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let request: OffsetForLeaderEpochRequest = API.decode(req.body.clone(), version)?;
        let replica_id = if version >= 3 {
            request.replica_id.0
        } else {
            -1
        };
        let fetch_only_from_leader = replica_id != DEBUGGING_REPLICA_ID;
        let snapshot = ctx.snapshot();
        // Each partition: its lookup slot, or the error it answers with.
        let mut lookups = Vec::new();
        let mut layout = Vec::new();
        for topic in &request.topics {
            let name = topic.topic.as_str();
            let mut parts = Vec::new();
            for p in &topic.partitions {
                if snapshot.hosts_partition(name, p.partition) {
                    parts.push((p.partition, Ok(lookups.len())));
                    lookups.push((
                        TopicPartition::new(name, p.partition),
                        p.current_leader_epoch,
                        p.leader_epoch,
                    ));
                } else {
                    parts.push((
                        p.partition,
                        Err(snapshot.not_hosted_error(name, p.partition)),
                    ));
                }
            }
            layout.push((topic.topic.clone(), parts));
        }
        let answers = ctx
            .offset_for_leader_epoch_on_owners(lookups, fetch_only_from_leader)
            .await;
        let topics = layout
            .into_iter()
            .map(|(topic, parts)| {
                let partitions = parts
                    .into_iter()
                    .map(|(partition, slot)| {
                        let (error, found) = match slot {
                            Ok(i) => answers.get(i).copied().unwrap_or((
                                ErrorCode::NOT_LEADER_OR_FOLLOWER,
                                leader_epoch::EpochEndOffset::UNDEFINED,
                            )),
                            Err(e) => (e, leader_epoch::EpochEndOffset::UNDEFINED),
                        };
                        EpochEndOffset::default()
                            .with_partition(partition)
                            .with_error_code(error.0)
                            .with_leader_epoch(found.leader_epoch)
                            .with_end_offset(found.end_offset)
                    })
                    .collect();
                OffsetForLeaderTopicResult::default()
                    .with_topic(topic)
                    .with_partitions(partitions)
            })
            .collect();
        let response = OffsetForLeaderEpochResponse::default().with_topics(topics);
        let body = encode(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

#[cfg(test)]
mod tests {
    use super::super::admin_common::str_bytes;
    use super::*;
    use crate::protocol::schema::schema_fuzz_test;
    use kafka_protocol::messages::offset_for_leader_epoch_request::{
        OffsetForLeaderPartition, OffsetForLeaderTopic,
    };
    use kafka_protocol::messages::{BrokerId, TopicName};

    #[test]
    fn the_schema_covers_every_version_of_the_request() {
        API.assert_schema_covers_every_version(|v| {
            let partition = OffsetForLeaderPartition::default()
                .with_partition(2)
                .with_current_leader_epoch(4)
                .with_leader_epoch(3);
            let r = OffsetForLeaderEpochRequest::default().with_topics(vec![
                OffsetForLeaderTopic::default()
                    .with_topic(TopicName(str_bytes("t")))
                    .with_partitions(vec![partition.clone(), partition]),
                OffsetForLeaderTopic::default().with_topic(TopicName(str_bytes("u"))),
            ]);
            if v >= 3 {
                r.with_replica_id(BrokerId(1))
            } else {
                r
            }
        });
    }

    schema_fuzz_test!(API, OffsetForLeaderEpochRequest);
}
