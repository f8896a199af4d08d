//! `[drv]` AlterPartition (key 56), v2–v3: a partition leader asks the
//! controller to change an ISR (Kafka 3.9 `KafkaApis.handleAlterPartitionRequest`
//! → `KafkaController.alterPartitions` in ZooKeeper mode). Answered by this
//! broker's controller part (`controller::zk_mode`); NOT_CONTROLLER on
//! any other broker. v0–1 (topic names, IBP below 3.3) are not served:
//! `kafka-protocol` 0.18 has no codec for them, and a 3.9 broker sends v3.

use std::rc::Rc;

use bytes::BytesMut;
use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::alter_partition_request::AlterPartitionRequest;
use kafka_protocol::messages::alter_partition_response::{
    AlterPartitionResponse, PartitionData, TopicData,
};
use kafka_protocol::messages::{ApiKey, BrokerId as WireBrokerId};
use kafka_protocol::protocol::{Decodable, Encodable};

use super::{HandlerError, Request, Response};
use crate::controller::alter_partition::Proposal;
use crate::controller::leader_election::LeaderRecoveryState;
use crate::controller::zk_mode::{AlterAnswer, AlterAsk, AlterItem};
use crate::protocol::decode::DecodeError;
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::ShardContext;
use crate::types::{BrokerId, LeaderEpoch, PartitionEpoch};

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::AlterPartition, 2, 3);

/// The request as the controller reads it (v3 names ISR members with
/// their broker epochs; ZooKeeper mode checks only the ids).
pub fn decode_request(mut body: bytes::Bytes, version: i16) -> Result<AlterAsk, HandlerError> {
    let r = AlterPartitionRequest::decode(&mut body, version)
        .map_err(|e| DecodeError::Malformed(e.to_string()))?;
    let mut items = Vec::new();
    for t in &r.topics {
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
                topic_id: t.topic_id,
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
    Ok(AlterAsk {
        broker: BrokerId(r.broker_id.0),
        broker_epoch: r.broker_epoch,
        items,
    })
}

/// The response body: per topic id, per partition its state or error.
pub fn encode_response(answer: &AlterAnswer, version: i16) -> Result<bytes::Bytes, HandlerError> {
    let mut resp = AlterPartitionResponse::default();
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
                match resp.topics.iter_mut().find(|t| t.topic_id == *topic_id) {
                    Some(t) => t.partitions.push(p),
                    None => resp.topics.push(
                        TopicData::default()
                            .with_topic_id(*topic_id)
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
        let ask = decode_request(req.body, version)?;
        let broker = ask.broker;
        let answer = match ctx.alter_partition_received(ask).await {
            Ok(answer) => answer,
            Err(e) => {
                tracing::warn!(error = %e, "AlterPartition: control shard unavailable");
                Err(ErrorCode::UNKNOWN_SERVER_ERROR)
            }
        };
        tracing::debug!(%broker, ?answer, "AlterPartition answered");
        let body = encode_response(&answer, version)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::leader_election::LeaderIsr;
    use kafka_protocol::messages::alter_partition_request::TopicData as AskedTopic;
    use kafka_protocol::messages::alter_partition_request::{BrokerState, PartitionData as Asked};

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
        let r = AlterPartitionRequest::default()
            .with_broker_id(WireBrokerId(1))
            .with_broker_epoch(55)
            .with_topics(vec![AskedTopic::default()
                .with_topic_id(uuid::Uuid::from_u128(3))
                .with_partitions(vec![p])]);
        let mut buf = BytesMut::new();
        r.encode(&mut buf, version).unwrap();
        buf.freeze()
    }

    #[test]
    fn v2_and_v3_read_the_same_ask_and_answers_round_trip() {
        for version in 2..=3 {
            let ask = decode_request(request(version), version).unwrap();
            assert_eq!(ask.broker, BrokerId(1));
            assert_eq!(ask.broker_epoch, 55);
            assert_eq!(ask.items.len(), 1);
            let item = &ask.items[0];
            assert_eq!(item.topic_id, uuid::Uuid::from_u128(3));
            assert_eq!(item.partition, 4);
            assert_eq!(item.proposal.isr, vec![BrokerId(1), BrokerId(2)]);
            assert_eq!(item.proposal.partition_epoch, PartitionEpoch(12));
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
            let mut body = encode_response(&answer, version).unwrap();
            let resp = AlterPartitionResponse::decode(&mut body, version).unwrap();
            assert_eq!(resp.error_code, 0);
            assert_eq!(resp.topics.len(), 1);
            let parts = &resp.topics[0].partitions;
            assert_eq!(parts[0].partition_epoch, 13);
            assert_eq!(parts[0].isr, vec![WireBrokerId(1), WireBrokerId(2)]);
            assert_eq!(parts[1].error_code, ErrorCode::FENCED_LEADER_EPOCH.0);
            let mut body = encode_response(&Err(ErrorCode::NOT_CONTROLLER), version).unwrap();
            let resp = AlterPartitionResponse::decode(&mut body, version).unwrap();
            assert_eq!(resp.error_code, ErrorCode::NOT_CONTROLLER.0);
        }
        assert!(decode_request(bytes::Bytes::from_static(&[0, 1]), 3).is_err());
    }
}
