//! `[drv]` AlterPartition (key 56), v0–v3: a partition leader asks the
//! controller to change an ISR (Kafka 3.9 `KafkaApis.handleAlterPartitionRequest`
//! → `KafkaController.alterPartitions` in ZooKeeper mode). Answered by this
//! broker's controller part (`controller::zk_mode`); NOT_CONTROLLER on
//! any other broker.
//!
//! v0–v1 (brokers below IBP 3.3) name topics; v2+ by topic id. The
//! controller works by id: names are resolved through this broker's
//! metadata, and one it does not know answers UNKNOWN_TOPIC_OR_PARTITION
//! per partition, as Kafka's controller does for a partition it has no
//! leadership of. v1 adds `leader_recovery_state` (KIP-704; RECOVERED
//! before it). Kafka 4.0 removed v0–v1 (KIP-896) and `kafka-protocol` 0.18
//! with it: this handler uses the 3.9 codec for every version.

use std::rc::Rc;

use bytes::BytesMut;
use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::ApiKey;
use kafka_protocol_39::messages::alter_partition_request::AlterPartitionRequest;
use kafka_protocol_39::messages::alter_partition_response::{
    AlterPartitionResponse, PartitionData, TopicData,
};
use kafka_protocol_39::messages::{BrokerId as WireBrokerId, TopicName};
use kafka_protocol_39::protocol::{Decodable, Encodable, StrBytes};

use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::controller::alter_partition::Proposal;
use crate::controller::leader_election::LeaderRecoveryState;
use crate::controller::zk_mode::{AlterAnswer, AlterAsk, AlterItem};
use crate::protocol::decode::DecodeError;
use crate::protocol::schema::{check_arrays, Field, INT32, INT64, INT8, UUID};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::ShardContext;
use crate::types::{BrokerId, LeaderEpoch, PartitionEpoch};

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::AlterPartition, 0, 3);

/// The first version naming topics by id.
const FIRST_WITH_TOPIC_IDS: i16 = 2;

/// A request as the controller reads it, and what the answer needs back.
#[derive(Debug)]
pub struct Decoded {
    pub ask: AlterAsk,
    /// v0–v1: the names the request used, by the id they resolved to.
    pub names: Vec<(uuid::Uuid, String)>,
    /// v0–v1: partitions of names this broker does not know.
    pub unknown: Vec<(String, i32)>,
}

/// AlterPartitionRequest.json (Kafka 3.9; flexible from v0), for the array
/// check: broker_id, broker_epoch, topics [topic_name (v0–v1) | topic_id
/// (v2+), partitions [partition_index, leader_epoch, new_isr (v0–v2) |
/// new_isr_with_epochs [broker_id, broker_epoch] (v3+),
/// leader_recovery_state (v1+), partition_epoch]].
fn schema(version: i16) -> &'static [Field] {
    const ISR: Field = Field::FixedArray(4);
    const ISR_WITH_EPOCHS: Field = Field::Structs(&[INT32, INT64]);
    const V0: &[Field] = &[
        INT32,
        INT64,
        Field::Structs(&[Field::Str, Field::Structs(&[INT32, INT32, ISR, INT32])]),
    ];
    const V1: &[Field] = &[
        INT32,
        INT64,
        Field::Structs(&[
            Field::Str,
            Field::Structs(&[INT32, INT32, ISR, INT8, INT32]),
        ]),
    ];
    const V2: &[Field] = &[
        INT32,
        INT64,
        Field::Structs(&[UUID, Field::Structs(&[INT32, INT32, ISR, INT8, INT32])]),
    ];
    const V3: &[Field] = &[
        INT32,
        INT64,
        Field::Structs(&[
            UUID,
            Field::Structs(&[INT32, INT32, ISR_WITH_EPOCHS, INT8, INT32]),
        ]),
    ];
    match version {
        0 => V0,
        1 => V1,
        2 => V2,
        _ => V3,
    }
}

/// The request as the controller reads it (v3 names ISR members with
/// their broker epochs; ZooKeeper mode checks only the ids); `topic_id`
/// resolves the names of v0–v1. Every array count is checked against the
/// bytes left before the crate decodes: it pre-sizes each from the wire.
pub fn decode_request(
    mut body: bytes::Bytes,
    version: i16,
    topic_id: impl Fn(&str) -> Option<uuid::Uuid>,
) -> Result<Decoded, HandlerError> {
    // Every version is flexible (compact arrays, tagged fields).
    check_arrays(&body, schema(version), version, true)?;
    let r = AlterPartitionRequest::decode(&mut body, version)
        .map_err(|e| DecodeError::Malformed(e.to_string()))?;
    let mut items = Vec::new();
    let mut names = Vec::new();
    let mut unknown = Vec::new();
    for t in &r.topics {
        let id = if version >= FIRST_WITH_TOPIC_IDS {
            t.topic_id
        } else {
            let name = t.topic_name.0.as_str();
            match topic_id(name) {
                Some(id) => {
                    names.push((id, name.to_owned()));
                    id
                }
                None => {
                    unknown.extend(
                        t.partitions
                            .iter()
                            .map(|p| (name.to_owned(), p.partition_index)),
                    );
                    continue;
                }
            }
        };
        for p in &t.partitions {
            let isr: Vec<BrokerId> = if version >= 3 {
                p.new_isr_with_epochs
                    .iter()
                    .map(|b| BrokerId(b.broker_id.0))
                    .collect()
            } else {
                p.new_isr.iter().map(|b| BrokerId(b.0)).collect()
            };
            let Some(leader_recovery_state) =
                LeaderRecoveryState::from_value(p.leader_recovery_state)
            else {
                return Err(DecodeError::Malformed(format!(
                    "leader_recovery_state {}",
                    p.leader_recovery_state
                ))
                .into());
            };
            items.push(AlterItem {
                topic_id: id,
                partition: p.partition_index,
                proposal: Proposal {
                    leader: BrokerId(r.broker_id.0),
                    leader_epoch: LeaderEpoch(p.leader_epoch),
                    isr,
                    leader_recovery_state,
                    partition_epoch: PartitionEpoch(p.partition_epoch),
                },
            });
        }
    }
    Ok(Decoded {
        ask: AlterAsk {
            broker: BrokerId(r.broker_id.0),
            broker_epoch: r.broker_epoch,
            items,
        },
        names,
        unknown,
    })
}

/// The response body: per topic (its id, or for v0–v1 its name from
/// `decoded`), per partition its state or error.
pub fn encode_response(
    answer: &AlterAnswer,
    version: i16,
    names: &[(uuid::Uuid, String)],
    unknown: &[(String, i32)],
) -> Result<bytes::Bytes, HandlerError> {
    let mut resp = AlterPartitionResponse::default();
    let by_name = version < FIRST_WITH_TOPIC_IDS;
    let name_of = |id: &uuid::Uuid| {
        names
            .iter()
            .find(|(i, _)| i == id)
            .map(|(_, n)| n.clone())
            .unwrap_or_default()
    };
    match answer {
        Err(e) => resp.error_code = e.0,
        Ok(parts) => {
            for (topic_id, partition, r) in parts {
                let mut p = PartitionData::default().with_partition_index(*partition);
                match r {
                    Err(e) => p.error_code = e.0,
                    Ok(l) => {
                        p = p
                            .with_leader_id(WireBrokerId(l.leader.0))
                            .with_leader_epoch(l.leader_epoch.0)
                            .with_isr(l.isr.iter().map(|b| WireBrokerId(b.0)).collect())
                            .with_leader_recovery_state(l.leader_recovery_state.value())
                            .with_partition_epoch(l.partition_epoch.0);
                    }
                }
                let found = if by_name {
                    let name = name_of(topic_id);
                    resp.topics
                        .iter_mut()
                        .find(|t| t.topic_name.0.as_str() == name)
                } else {
                    resp.topics.iter_mut().find(|t| t.topic_id == *topic_id)
                };
                match found {
                    Some(t) => t.partitions.push(p),
                    None if by_name => resp.topics.push(
                        TopicData::default()
                            .with_topic_name(TopicName(StrBytes::from_string(name_of(topic_id))))
                            .with_partitions(vec![p]),
                    ),
                    None => resp.topics.push(
                        TopicData::default()
                            .with_topic_id(*topic_id)
                            .with_partitions(vec![p]),
                    ),
                }
            }
            for (name, partition) in unknown {
                let p = PartitionData::default()
                    .with_partition_index(*partition)
                    .with_error_code(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0);
                match resp
                    .topics
                    .iter_mut()
                    .find(|t| t.topic_name.0.as_str() == name)
                {
                    Some(t) => t.partitions.push(p),
                    None => resp.topics.push(
                        TopicData::default()
                            .with_topic_name(TopicName(StrBytes::from_string(name.clone())))
                            .with_partitions(vec![p]),
                    ),
                }
            }
        }
    }
    let mut buf = BytesMut::new();
    resp.encode(&mut buf, version)
        .map_err(|e| HandlerError::Encode(e.to_string()))?;
    Ok(buf.freeze())
}

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        // KafkaApis.handleAlterPartitionRequest: CLUSTER_ACTION on the
        // cluster first (AlterPartitionRequest.getErrorResponse: the
        // top-level code).
        let allowed = Authz::new(&ctx, &req).cluster(Operation::ClusterAction);
        let snapshot = ctx.snapshot();
        let decoded = decode_request(req.body, version, |name| {
            snapshot.cluster_topic(name).map(|t| t.topic_id)
        })?;
        let Decoded {
            ask,
            names,
            unknown,
        } = decoded;
        let broker = ask.broker;
        if !allowed {
            let answer = Err(ErrorCode::CLUSTER_AUTHORIZATION_FAILED);
            let body = encode_response(&answer, version, &names, &unknown)?;
            return Ok(Response::Body(vec![OutPart::Bytes(body)]));
        }
        let answer = match ctx.control_client().alter_partition_received(ask).await {
            Ok(answer) => answer,
            Err(e) => {
                tracing::warn!(error = %e, "AlterPartition: control shard unavailable");
                Err(ErrorCode::UNKNOWN_SERVER_ERROR)
            }
        };
        tracing::debug!(%broker, ?answer, "AlterPartition answered");
        let body = encode_response(&answer, version, &names, &unknown)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::leader_election::LeaderIsr;
    use kafka_protocol_39::messages::alter_partition_request::TopicData as AskedTopic;
    use kafka_protocol_39::messages::alter_partition_request::{
        BrokerState, PartitionData as Asked,
    };

    const ID: uuid::Uuid = uuid::Uuid::from_u128(3);

    fn request(version: i16) -> bytes::Bytes {
        let mut p = Asked::default()
            .with_partition_index(4)
            .with_leader_epoch(7)
            .with_partition_epoch(12);
        if version >= 3 {
            p.new_isr_with_epochs = [1, 2]
                .iter()
                .map(|b| {
                    BrokerState::default()
                        .with_broker_id(WireBrokerId(*b))
                        .with_broker_epoch(100)
                })
                .collect();
        } else {
            p.new_isr = vec![WireBrokerId(1), WireBrokerId(2)];
        }
        let topic = if version >= FIRST_WITH_TOPIC_IDS {
            AskedTopic::default().with_topic_id(ID)
        } else {
            AskedTopic::default().with_topic_name(TopicName(StrBytes::from_static_str("t")))
        };
        let mut topics = vec![topic.with_partitions(vec![p.clone()])];
        if version < FIRST_WITH_TOPIC_IDS {
            topics.push(
                AskedTopic::default()
                    .with_topic_name(TopicName(StrBytes::from_static_str("gone")))
                    .with_partitions(vec![p.with_partition_index(9)]),
            );
        }
        let r = AlterPartitionRequest::default()
            .with_broker_id(WireBrokerId(1))
            .with_broker_epoch(55)
            .with_topics(topics);
        let mut buf = BytesMut::new();
        r.encode(&mut buf, version).unwrap();
        buf.freeze()
    }

    fn resolve(name: &str) -> Option<uuid::Uuid> {
        (name == "t").then_some(ID)
    }

    #[test]
    fn every_version_reads_the_same_ask_and_answers_round_trip() {
        for version in VERSIONS.min..=VERSIONS.max {
            let decoded = decode_request(request(version), version, resolve).unwrap();
            let ask = &decoded.ask;
            assert_eq!(ask.broker, BrokerId(1));
            assert_eq!(ask.broker_epoch, 55);
            assert_eq!(ask.items.len(), 1, "v{version}");
            let item = &ask.items[0];
            assert_eq!(item.topic_id, ID, "v{version}");
            assert_eq!(item.partition, 4);
            assert_eq!(item.proposal.isr, vec![BrokerId(1), BrokerId(2)]);
            assert_eq!(item.proposal.partition_epoch, PartitionEpoch(12));
            assert_eq!(
                item.proposal.leader_recovery_state,
                LeaderRecoveryState::Recovered
            );
            let unknown = if version < FIRST_WITH_TOPIC_IDS {
                vec![("gone".to_owned(), 9)]
            } else {
                vec![]
            };
            assert_eq!(decoded.unknown, unknown, "v{version}");
            let written = LeaderIsr {
                leader: BrokerId(1),
                leader_epoch: LeaderEpoch(7),
                isr: vec![BrokerId(1), BrokerId(2)],
                leader_recovery_state: LeaderRecoveryState::Recovered,
                partition_epoch: PartitionEpoch(13),
            };
            let answer: AlterAnswer = Ok(vec![
                (item.topic_id, 4, Ok(written)),
                (item.topic_id, 5, Err(ErrorCode::FENCED_LEADER_EPOCH)),
            ]);
            let mut body =
                encode_response(&answer, version, &decoded.names, &decoded.unknown).unwrap();
            let resp = AlterPartitionResponse::decode(&mut body, version).unwrap();
            assert_eq!(resp.error_code, 0);
            let parts = &resp.topics[0].partitions;
            if version >= FIRST_WITH_TOPIC_IDS {
                assert_eq!(resp.topics.len(), 1);
                assert_eq!(resp.topics[0].topic_id, ID);
            } else {
                assert_eq!(resp.topics.len(), 2, "v{version}");
                assert_eq!(resp.topics[0].topic_name.0.as_str(), "t");
                assert_eq!(resp.topics[1].topic_name.0.as_str(), "gone");
                assert_eq!(
                    resp.topics[1].partitions[0].error_code,
                    ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0
                );
            }
            assert_eq!(parts[0].partition_epoch, 13);
            assert_eq!(parts[0].isr, vec![WireBrokerId(1), WireBrokerId(2)]);
            assert_eq!(parts[1].error_code, ErrorCode::FENCED_LEADER_EPOCH.0);
            let mut body =
                encode_response(&Err(ErrorCode::NOT_CONTROLLER), version, &[], &[]).unwrap();
            let resp = AlterPartitionResponse::decode(&mut body, version).unwrap();
            assert_eq!(resp.error_code, ErrorCode::NOT_CONTROLLER.0);
        }
        assert!(decode_request(bytes::Bytes::from_static(&[0, 1]), 3, resolve).is_err());
    }

    #[test]
    fn the_schema_covers_every_version_exactly() {
        for version in VERSIONS.min..=VERSIONS.max {
            let body = request(version);
            assert_eq!(
                check_arrays(&body, schema(version), version, true),
                Ok(body.len()),
                "v{version}"
            );
        }
    }

    #[test]
    fn a_17_byte_request_claiming_4_billion_topics_is_refused_before_allocating() {
        // broker_id, broker_epoch, then a compact topic count of 2^32 - 2:
        // the crate pre-sized a Vec of that many topics (24 GiB) from 17
        // bytes (found by fuzzing).
        let mut body = vec![0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 55];
        body.extend([0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert_eq!(body.len(), 17);
        for version in VERSIONS.min..=VERSIONS.max {
            let refused = decode_request(bytes::Bytes::from(body.clone()), version, resolve);
            assert!(
                matches!(refused, Err(HandlerError::Malformed(ref m)) if m.contains("array claims")),
                "v{version}: {refused:?}"
            );
        }
    }

    #[test]
    fn a_nested_isr_count_beyond_the_body_is_refused_before_allocating() {
        // v3, one topic (id), one partition: index, epoch, then an ISR
        // count of 2^28 with nothing after it.
        let mut body = vec![0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 55, 2];
        body.extend(ID.as_bytes());
        body.extend([2, 0, 0, 0, 4, 0, 0, 0, 7]);
        body.extend([0x80, 0x80, 0x80, 0x80, 0x01]);
        let refused = decode_request(bytes::Bytes::from(body), 3, resolve);
        assert!(
            matches!(refused, Err(HandlerError::Malformed(_))),
            "{refused:?}"
        );
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bodies_never_panic(
            body in proptest::collection::vec(proptest::num::u8::ANY, 0..128),
            v in 0i16..=3,
        ) {
            let _ = decode_request(bytes::Bytes::from(body), v, resolve);
        }
    }

    #[test]
    fn a_v1_leader_recovery_state_is_read() {
        use kafka_protocol_39::messages::alter_partition_request::PartitionData as P;
        let r = AlterPartitionRequest::default()
            .with_broker_id(WireBrokerId(1))
            .with_topics(vec![AskedTopic::default()
                .with_topic_name(TopicName(StrBytes::from_static_str("t")))
                .with_partitions(vec![P::default().with_leader_recovery_state(1)])]);
        let mut buf = BytesMut::new();
        r.encode(&mut buf, 1).unwrap();
        let d = decode_request(buf.freeze(), 1, resolve).unwrap();
        assert_eq!(
            d.ask.items[0].proposal.leader_recovery_state,
            LeaderRecoveryState::Recovering
        );
    }
}
