//! `[drv]` OffsetForLeaderEpoch (key 23), v0–v4: for each partition, the
//! end offset of the largest leader epoch ≤ the requested one, from the
//! leader's epoch cache (Kafka's `KafkaApis.handleOffsetForLeaderEpochRequest`
//! → `Partition.lastOffsetForLeaderEpoch`; the lookup is
//! `replication::leader_epoch::end_offset_for`), answered by each
//! partition's owner shard like ListOffsets.
//!
//! `current_leader_epoch` (v2+) fences (older → FENCED_LEADER_EPOCH, newer
//! → UNKNOWN_LEADER_EPOCH); only the leader answers except for the
//! debugging replica id -2 (v3+). Codec: `kafka-protocol` 0.15.1, the Kafka
//! 3.9 schemas, which still have v0–v1 (the newer crate dropped them with
//! Kafka 4.0); v0 answers carry no leader epoch.

use std::rc::Rc;

use bytes::{Bytes, BytesMut};
use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::ApiKey;
use kafka_protocol_39::messages::offset_for_leader_epoch_request::OffsetForLeaderEpochRequest;
use kafka_protocol_39::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderEpochResponse, OffsetForLeaderTopicResult,
};
use kafka_protocol_39::protocol::{Decodable, Encodable};

use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::protocol::decode::DecodeError;
use crate::protocol::schema::{check_arrays, Field, INT32};
use crate::protocol::{ApiRange, ErrorCode};
use crate::replication::leader_epoch;
use crate::server::out::OutPart;
use crate::shard::ShardContext;
use crate::types::TopicPartition;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::OffsetForLeaderEpoch, 0, 4);

const FIRST_FLEXIBLE: i16 = 4;

/// Kafka's `OffsetsForLeaderEpochRequest.DEBUGGING_REPLICA_ID`.
const DEBUGGING_REPLICA_ID: i32 = -2;

/// OffsetForLeaderEpochRequest.json (Kafka 3.9), for the array check:
/// replica_id (v3+), topics [topic, partitions [partition,
/// current_leader_epoch (v2+), leader_epoch]].
const SCHEMA: &[Field] = &[
    Field::Since(3, &INT32),
    Field::Structs(&[
        Field::Str,
        Field::Structs(&[INT32, Field::Since(2, &INT32), INT32]),
    ]),
];

/// Check every array, then decode with the Kafka 3.9 codec.
pub fn decode_request(
    mut body: Bytes,
    version: i16,
) -> Result<OffsetForLeaderEpochRequest, DecodeError> {
    check_arrays(&body, SCHEMA, version, version >= FIRST_FLEXIBLE)?;
    OffsetForLeaderEpochRequest::decode(&mut body, version)
        .map_err(|e| DecodeError::Malformed(e.to_string()))
}

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let request = decode_request(req.body.clone(), version)?;
        let replica_id = if version >= 3 {
            request.replica_id.0
        } else {
            -1
        };
        let fetch_only_from_leader = replica_id != DEBUGGING_REPLICA_ID;
        let snapshot = ctx.snapshot();
        // Kafka's handleOffsetForLeaderEpochRequest: CLUSTER_ACTION on the
        // cluster, else DESCRIBE on each topic (TOPIC_AUTHORIZATION_FAILED).
        let authz = Authz::new(&ctx, &req);
        let cluster_action = authz.cluster(Operation::ClusterAction);
        // Each partition: its lookup slot, or the error it answers with.
        let mut lookups = Vec::new();
        let mut layout = Vec::new();
        for topic in &request.topics {
            let name = topic.topic.as_str();
            let described = cluster_action || authz.topic(Operation::Describe, name);
            let mut parts = Vec::new();
            for p in &topic.partitions {
                if !described {
                    parts.push((p.partition, Err(ErrorCode::TOPIC_AUTHORIZATION_FAILED)));
                } else if snapshot.hosts_partition(name, p.partition) {
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
            .datapath()
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
        let mut body = BytesMut::new();
        response
            .encode(&mut body, version)
            .map_err(|e| HandlerError::Encode(e.to_string()))?;
        let body = body.freeze();
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol_39::messages::offset_for_leader_epoch_request::{
        OffsetForLeaderPartition, OffsetForLeaderTopic,
    };
    use kafka_protocol_39::messages::{BrokerId, TopicName};
    use kafka_protocol_39::protocol::StrBytes;
    use proptest::prelude::*;

    fn request(version: i16) -> OffsetForLeaderEpochRequest {
        let current = if version >= 2 { 4 } else { -1 };
        let partition = OffsetForLeaderPartition::default()
            .with_partition(2)
            .with_current_leader_epoch(current)
            .with_leader_epoch(3);
        let r = OffsetForLeaderEpochRequest::default().with_topics(vec![
            OffsetForLeaderTopic::default()
                .with_topic(TopicName(StrBytes::from_static_str("t")))
                .with_partitions(vec![partition.clone(), partition]),
            OffsetForLeaderTopic::default().with_topic(TopicName(StrBytes::from_static_str("u"))),
        ]);
        if version >= 3 {
            r.with_replica_id(BrokerId(1))
        } else {
            r
        }
    }

    #[test]
    fn the_schema_covers_every_version_and_decodes_what_kafka_encodes() {
        for v in VERSIONS.min..=VERSIONS.max {
            let want = request(v);
            let mut buf = BytesMut::new();
            want.encode(&mut buf, v).unwrap();
            let body = buf.freeze();
            assert_eq!(
                check_arrays(&body, SCHEMA, v, v >= FIRST_FLEXIBLE).unwrap(),
                body.len(),
                "v{v}"
            );
            assert_eq!(decode_request(body, v).unwrap(), want, "v{v}");
        }
    }

    #[test]
    fn a_v0_answer_has_no_leader_epoch_and_a_v1_answer_has_one() {
        let answer = |v: i16| {
            let r = OffsetForLeaderEpochResponse::default().with_topics(vec![
                OffsetForLeaderTopicResult::default()
                    .with_topic(TopicName(StrBytes::from_static_str("t")))
                    .with_partitions(vec![EpochEndOffset::default()
                        .with_partition(0)
                        .with_leader_epoch(7)
                        .with_end_offset(42)]),
            ]);
            let mut buf = BytesMut::new();
            r.encode(&mut buf, v).unwrap();
            buf.len()
        };
        assert_eq!(answer(1) - answer(0), 4, "the INT32 leader_epoch from v1");
    }

    proptest! {
        #[test]
        fn arbitrary_bodies_never_panic(
            body in proptest::collection::vec(any::<u8>(), 0..128),
            v in VERSIONS.min..=VERSIONS.max,
        ) {
            let _ = decode_request(Bytes::from(body), v);
        }
    }
}
